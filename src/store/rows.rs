//! Rows as they come out of the database: `FromRow` structs, read by column
//! name, and the mapping of [`Timestamp`] to its column type (milliseconds
//! since the Unix epoch in a BIGINT on both backends).

use sqlx::any::{Any, AnyTypeInfo, AnyValueRef};
use sqlx::encode::IsNull;
use sqlx::error::BoxDynError;
use sqlx::{Decode, Encode, Type};

use crate::domain::Timestamp;

impl Type<Any> for Timestamp {
    fn type_info() -> AnyTypeInfo {
        <i64 as Type<Any>>::type_info()
    }

    fn compatible(ty: &AnyTypeInfo) -> bool {
        <i64 as Type<Any>>::compatible(ty)
    }
}

impl<'q> Encode<'q, Any> for Timestamp {
    fn encode_by_ref(&self, buf: &mut <Any as sqlx::Database>::ArgumentBuffer<'q>) -> Result<IsNull, BoxDynError> {
        <i64 as Encode<'q, Any>>::encode_by_ref(&self.millis(), buf)
    }
}

impl<'r> Decode<'r, Any> for Timestamp {
    fn decode(value: AnyValueRef<'r>) -> Result<Self, BoxDynError> {
        <i64 as Decode<'r, Any>>::decode(value).map(Timestamp::from_millis)
    }
}

/// A text column that may hold more than a VARCHAR does (MySQL's
/// MEDIUMTEXT, SQLite's TEXT): sqlx hands MySQL's TEXT types back as
/// blobs, SQLite's as text; this reads either as UTF-8 text.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LongText(pub String);

impl Type<Any> for LongText {
    fn type_info() -> AnyTypeInfo {
        <String as Type<Any>>::type_info()
    }

    fn compatible(ty: &AnyTypeInfo) -> bool {
        <String as Type<Any>>::compatible(ty) || <Vec<u8> as Type<Any>>::compatible(ty)
    }
}

impl<'r> Decode<'r, Any> for LongText {
    fn decode(value: AnyValueRef<'r>) -> Result<Self, BoxDynError> {
        match <String as Decode<'r, Any>>::decode(value.clone()) {
            Ok(text) => Ok(Self(text)),
            Err(_) => Ok(Self(String::from_utf8(<Vec<u8> as Decode<'r, Any>>::decode(value)?)?)),
        }
    }
}

/// A user row as every profile view needs it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct UserRow {
    pub id: i64,
    pub login_name: String,
    pub display_name: String,
    pub best_score: i64,
    /// When `best_score` was first reached; `None` before any play.
    pub best_at: Option<Timestamp>,
    /// The score (log id) that set `best_score`.
    pub best_score_id: Option<i64>,
    pub total_score: i64,
    pub play_count: i64,
    pub created_at: Timestamp,
    /// Bumped by every change to the row (a post, a removed post, a ban or
    /// unban, a new display name): orders its copies in caches and engines.
    pub version: i64,
    /// Set while the player is banned (off every board, nothing deleted).
    pub banned_at: Option<Timestamp>,
    /// The data generation of the snapshot this row was read in (see
    /// `data_generation` in the schema): what a cached copy is labelled with.
    pub generation: i64,
}

/// The columns [`UserRow`] reads, for the statements that select it.
pub(super) const USER_COLUMNS: &str = "id, login_name, display_name, best_score, best_at, best_score_id, \
     total_score, play_count, created_at, version, banned_at, (SELECT generation FROM data_generation WHERE id = 1) AS generation";

/// One post of the `/api/scores` log.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ScoreRow {
    pub id: i64,
    pub score: i64,
    pub created_at: Timestamp,
    /// `accepted`, `held` or `rejected` (see `domain::PostStatus`).
    pub status: String,
}

/// The aggregates that place a player on both built-in boards: what the
/// rank engine is warmed from. `version` orders updates of one player;
/// a standing that is not `listed` (no score left, or banned) takes the
/// player off the boards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Standing {
    pub id: i64,
    pub best: i64,
    pub best_at: i64,
    pub total: i64,
    pub version: i64,
    pub listed: bool,
}

impl Standing {
    /// The standing a user row shows.
    pub fn of(user: &UserRow) -> Self {
        Self {
            id: user.id,
            best: user.best_score,
            best_at: user.best_at.map_or(0, Timestamp::millis),
            total: user.total_score,
            version: user.version,
            listed: user.is_listed(),
        }
    }
}

impl UserRow {
    /// Whether the player is on the built-in boards: played, not banned.
    pub fn is_listed(&self) -> bool {
        self.play_count > 0 && self.banned_at.is_none()
    }
}

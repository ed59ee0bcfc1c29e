//! The contract's JSON objects, built from store rows and ranks.
//! Password material and login names never reach `PublicUser`.

use std::collections::HashMap;
use std::sync::Arc;

use serde::Serialize;
use utoipa::ToSchema;

use crate::boards::Period;
use crate::domain::{Board, BoardKey, BoardPeriod, CursorKeys, Hundredths, PostStatus, Timestamp};
use crate::rank::{Page, UserRanks};
use crate::store::{ScoreRow, UserRow};

mod admin;
mod boards;
mod leagues;
mod rewards;

pub use self::admin::*;
pub use self::boards::*;
pub use self::leagues::*;
pub use self::rewards::*;

/// The avatar number the ranking page shows (1..=10).
fn image(id: i64) -> i64 {
    id % 10 + 1
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PublicUser {
    pub id: i64,
    pub display_name: String,
    pub image: i64,
    pub best_score: i64,
    #[schema(required = true)]
    pub best_at: Option<Timestamp>,
    pub total_score: i64,
    pub play_count: i64,
    #[schema(required = true)]
    pub best_rank: Option<i64>,
    #[schema(required = true)]
    pub total_rank: Option<i64>,
    pub created_at: Timestamp,
}

impl PublicUser {
    pub fn new(user: &UserRow, ranks: UserRanks) -> Self {
        Self {
            id: user.id,
            display_name: user.display_name.clone(),
            image: image(user.id),
            best_score: user.best_score,
            best_at: user.best_at,
            total_score: user.total_score,
            play_count: user.play_count,
            best_rank: ranks.best.map(|best| best.rank),
            total_rank: ranks.total.map(|total| total.rank),
            created_at: user.created_at,
        }
    }
}

/// A batched lookup's answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct UserList {
    pub users: Vec<PublicUser>,
}

/// PublicUser plus `login_name`: what a player sees of themselves.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Me {
    #[serde(flatten)]
    pub user: PublicUser,
    pub login_name: String,
}

impl Me {
    pub fn new(user: &UserRow, ranks: UserRanks) -> Self {
        Self { user: PublicUser::new(user, ranks), login_name: user.login_name.clone() }
    }
}

/// Registration and login answer with the player and their new token.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionCreated {
    pub user: Me,
    pub token: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ScoreView {
    pub id: i64,
    pub score: i64,
    pub created_at: Timestamp,
    /// `accepted`, `held` (for review: counts for nothing until accepted) or `rejected`.
    #[schema(example = "accepted")]
    pub status: &'static str,
}

impl From<&ScoreRow> for ScoreView {
    fn from(row: &ScoreRow) -> Self {
        let status = PostStatus::from_stored(&row.status).as_str();
        Self { id: row.id, score: row.score, created_at: row.created_at, status }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ScoreResult {
    pub score: ScoreView,
    pub new_best: bool,
    pub user: Me,
    /// What became of the post on each board `best` and `total` feed (v4).
    pub feeds: Vec<FeedResult>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ScoreHistory {
    pub scores: Vec<ScoreView>,
    #[schema(required = true)]
    pub next_before: Option<i64>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct UserRef {
    pub id: i64,
    pub display_name: String,
    pub image: i64,
}

impl UserRef {
    pub fn new(id: i64, display_name: &str) -> Self {
        Self { id, display_name: display_name.to_owned(), image: image(id) }
    }
}

/// A post's metadata: the JSON object as stored, sent as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metadata(pub Arc<str>);

impl Serialize for Metadata {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let raw = serde_json::value::RawValue::from_string(self.0.to_string()).map_err(serde::ser::Error::custom)?;
        raw.serialize(serializer)
    }
}

/// In the OpenAPI document: any JSON object.
impl utoipa::PartialSchema for Metadata {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .description(Some("The JSON object posted with the score (at most 1 KiB)"))
            .into()
    }
}

impl utoipa::ToSchema for Metadata {}

/// A period of a board (built-ins: `{"index": 0, "start": null, "end": null}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
pub struct PeriodView {
    pub index: i64,
    #[schema(required = true)]
    pub start: Option<Timestamp>,
    /// Null while the board never resets.
    #[schema(required = true)]
    pub end: Option<Timestamp>,
}

impl PeriodView {
    pub const BUILTIN: Self = Self { index: 0, start: None, end: None };
}

impl From<Period> for PeriodView {
    fn from(period: Period) -> Self {
        Self { index: period.index, start: Some(period.start), end: period.end }
    }
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RankingEntry {
    pub rank: i64,
    /// `ceil(10000 × rank ÷ players)` hundredths: the share of the
    /// population the rank is taken in (the board, period and partition;
    /// the cohort on league answers) at least as good as this entry.
    pub top_percent: Hundredths,
    pub score: i64,
    /// The entry's subscores, on a board with them (v4; absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subscores: Option<Vec<i64>>,
    /// When the entry's score was reached: `best_at` on the best board,
    /// null on the total board; on custom boards the first post that
    /// reached it (`best`) or the last post (`latest`, `total`).
    #[schema(required = true)]
    pub achieved_at: Option<Timestamp>,
    pub user: UserRef,
    /// The metadata of the post that set the score (custom boards), or null.
    #[schema(required = true)]
    pub metadata: Option<Metadata>,
}

impl RankingEntry {
    /// An entry ranked `rank` among `players`.
    pub fn new(
        board: BoardPeriod,
        (rank, players): (i64, i64),
        key: BoardKey,
        display_name: &str,
        metadata: Option<Arc<str>>,
    ) -> Self {
        Self {
            rank,
            top_percent: Hundredths::top(rank, players),
            score: key.score,
            subscores: subscores_of(board.ranking, &key.subscores),
            achieved_at: match board.board {
                Board::Total => None,
                Board::Best | Board::Custom(_) => Some(Timestamp::from_millis(key.at)),
            },
            user: UserRef::new(key.id, display_name),
            metadata: metadata.map(Metadata),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RankingPage {
    #[schema(example = "best")]
    pub board: String,
    pub period: PeriodView,
    /// The partition read (v4; null: the whole board).
    #[schema(required = true)]
    pub partition: Option<String>,
    pub entries: Vec<RankingEntry>,
    pub total_players: i64,
    #[schema(required = true)]
    pub next_offset: Option<i64>,
    #[schema(required = true)]
    pub next_cursor: Option<String>,
}

impl RankingPage {
    /// A page of the rank engine with the players' display names.
    pub fn new(
        (board_id, partition): (&str, Option<&str>),
        period: PeriodView,
        page: &Page,
        names: &HashMap<i64, Arc<str>>,
        cursor_keys: &CursorKeys,
    ) -> Self {
        let board = page.board;
        let entries = page
            .entries
            .iter()
            .map(|entry| {
                let name = names.get(&entry.key.id).map_or("", |name| name);
                RankingEntry::new(board, (entry.rank, page.total_players), entry.key, name, entry.metadata.clone())
            })
            .collect();
        Self {
            board: board_id.to_owned(),
            period,
            partition: partition.map(str::to_owned),
            entries,
            total_players: page.total_players,
            next_offset: page.next_offset,
            next_cursor: page.next_cursor.as_ref().map(|cursor| cursor.encode(cursor_keys)),
        }
    }
}

/// `GET /api/rankings/{board}/cutoffs`: where each asked percent of the
/// board's entries ends.
#[derive(Debug, Serialize, ToSchema)]
pub struct CutoffList {
    #[schema(example = "best")]
    pub board: String,
    pub period: PeriodView,
    /// The partition read (null: the whole board).
    #[schema(required = true)]
    pub partition: Option<String>,
    /// The entries of the period now.
    pub players: i64,
    /// In the order asked.
    pub cutoffs: Vec<Cutoff>,
}

/// The entry at `position` = `floor(players × percent ÷ 100)` in board
/// order: every entry at least as good has `top_percent` ≤ `percent`, every
/// worse one more. `rank`, `score` and `subscores` are null when the
/// position is 0.
#[derive(Debug, Serialize, ToSchema)]
pub struct Cutoff {
    pub percent: Hundredths,
    pub position: i64,
    #[schema(required = true)]
    pub rank: Option<i64>,
    #[schema(required = true)]
    pub score: Option<i64>,
    /// The entry's subscores on a board with them; null otherwise.
    #[schema(required = true)]
    pub subscores: Option<Vec<i64>>,
}

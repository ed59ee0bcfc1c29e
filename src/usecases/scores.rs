//! Posting a score: who may post for whom (a player's session, or a game
//! server's key for any player), the boards' writers and intervals, the
//! rate limits, then the group-committed writer.

use serde_json::{Map, Value};

use crate::boards::{Feeds, PostRules};
use crate::domain::{Board, IdempotencyKey, Metadata, Score, Subscore, Writers};
use crate::error::{ApiError, ErrorCode};
use crate::limits::Limit;
use crate::scoring::{self, Post, Posted, Poster, Target};
use crate::state::AppState;
use crate::usecases::keys::KeyId;
use crate::usecases::sessions::SessionOwner;

/// Who posts a score.
#[derive(Debug, Clone, Copy)]
pub enum Author {
    /// A player, for themselves.
    Player(SessionOwner),
    /// A game server with a live key, for the player the body names.
    Server(KeyId),
}

impl Author {
    /// The player the post is for, and who hands it over: a server key
    /// names the player as the body's `user_id`; a player's session posts
    /// for its player, and a `user_id` it sends must be theirs.
    pub fn poster(self, body: &Map<String, Value>) -> Result<(i64, Poster), ApiError> {
        let named = match body.get("user_id") {
            None | Some(Value::Null) => None,
            Some(raw) => Some(raw.as_i64().filter(|id| *id > 0).ok_or(ErrorCode::InvalidUserId)?),
        };
        match self {
            Self::Player(SessionOwner { user_id, generation }) => match named {
                Some(named) if named != user_id => Err(ApiError::with_message(
                    ErrorCode::InvalidUserId,
                    "a player's session posts for that player: leave user_id out (server keys name the player)",
                )),
                _ => Ok((user_id, Poster::Player { generation })),
            },
            Self::Server(_) => Ok((named.ok_or(ErrorCode::InvalidUserId)?, Poster::Server)),
        }
    }

    /// 403 `server_only` for a player's session on a board only servers write.
    pub fn may_write(self, rules: PostRules) -> Result<(), ApiError> {
        match (self, rules.writers) {
            (Self::Player(_), Writers::Server) => Err(ErrorCode::ServerOnly.into()),
            _ => Ok(()),
        }
    }
}

/// The built-in boards take one post together: both boards' rules hold
/// (server-only if either is, the longer interval; the score writer reads
/// their hold rules itself).
fn builtin_rules(state: &AppState) -> PostRules {
    let [best, total] = Board::BUILTIN.map(|board| state.boards.builtin_rules(board));
    PostRules {
        min_interval_ms: best.min_interval_ms.max(total.min_interval_ms),
        writers: if best.writers == Writers::Server { best.writers } else { total.writers },
        // The writer judges each board's hold rules against its own entry,
        // and reads the boards they feed.
        hold_beyond: None,
        hold_jump: None,
        feeds: Feeds::default(),
    }
}

/// `POST /api/scores`.
pub async fn post(
    state: &AppState,
    author: Author,
    body: &Map<String, Value>,
    key: Option<IdempotencyKey>,
) -> Result<Posted, ApiError> {
    let score = Score::parse(body.get("score"), state.settings.max_score)?;
    let rules = builtin_rules(state);
    author.may_write(rules)?;
    let (user_id, by) = author.poster(body)?;
    // The built-in boards have no subscores (and feed only boards without them).
    let subscores = Subscore::parse_values(body.get("subscores"), &[])?;
    let metadata = Metadata::parse(body.get("metadata"))?;
    let min_interval_ms = rules.min_interval_ms;
    let target = Target::Builtin;
    let post = Post { user_id, by, score, subscores, target, metadata, partition: None, key, min_interval_ms };
    submit(state, author, post).await
}

/// Hands a post to the writer after the rate limits. A repeated
/// `Idempotency-Key` is answered from what was stored, without the writer
/// (a retry after a lost answer, whatever the minimum interval says now),
/// and counts against the posts-per-player limit like any post: a client
/// looping on one key is held to the same pace as one posting new scores.
pub async fn submit(state: &AppState, author: Author, mut post: Post) -> Result<Posted, ApiError> {
    if let Author::Server(KeyId(id)) = author {
        state.limits.check(Limit::PostsPerKey, &id.to_string()).await?;
        post.key = post.key.map(IdempotencyKey::of_server);
    }
    let player = post.user_id.to_string();
    if let Some(answer) = scoring::replayed(&state.store, &post).await? {
        state.limits.check(Limit::PostsPerPlayer, &player).await?;
        return answer;
    }
    state.limits.check(Limit::PostsPerPlayer, &player).await?;
    state.limits.check(Limit::PostInterval, &player).await?;
    state.writer.post(post).await
}

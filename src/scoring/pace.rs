//! A board's `min_interval_ms`, exact per player under any concurrency:
//! the writer reads each paced player's previous post with the player's
//! row locked (every post locks it first, on every instance), then admits
//! the batch's posts in order, each one the previous post of the next.

use std::collections::HashMap;
use std::time::Duration;

use sqlx::AnyConnection;

use super::{BatchError, Item, Post, Target};
use crate::domain::Timestamp;
use crate::error::ApiError;
use crate::store::{PostLog, Store};

/// The players' previous posts, by log, as the batch goes.
pub(super) struct Pace {
    last: HashMap<(PostLog, i64), Timestamp>,
}

fn log_of(post: &Post) -> PostLog {
    match &post.target {
        Target::Builtin => PostLog::Builtin,
        Target::Custom { board, .. } => PostLog::Board(board.spec.number),
    }
}

impl Pace {
    /// The previous post of every player the batch posts for to a paced
    /// board: one read per such board.
    pub(super) async fn read(store: &Store, conn: &mut AnyConnection, batch: &[Item<'_>]) -> Result<Self, BatchError> {
        let mut players: HashMap<PostLog, Vec<i64>> = HashMap::new();
        for job in batch.iter().filter(|job| job.post.min_interval_ms.is_some()) {
            players.entry(log_of(job.post)).or_default().push(job.post.user_id);
        }
        let mut last = HashMap::new();
        for (log, mut ids) in players {
            ids.sort_unstable();
            ids.dedup();
            for (user_id, at) in store.last_posts(conn, log, &ids).await? {
                last.insert((log, user_id), at);
            }
        }
        Ok(Self { last })
    }

    /// Whether a post made at `now` may be taken: else 429 with how long to wait.
    pub(super) fn check(&self, post: &Post, now: Timestamp) -> Result<(), ApiError> {
        let log = log_of(post);
        if let (Some(interval), Some(previous)) = (post.min_interval_ms, self.last.get(&(log, post.user_id))) {
            let wait = previous.millis() + interval - now.millis();
            if wait > 0 {
                return Err(ApiError::too_many_requests(
                    format!("this board takes a player's posts at least {interval} ms apart"),
                    Duration::from_millis(wait.unsigned_abs()),
                    "board-interval",
                ));
            }
        }
        Ok(())
    }

    /// A taken post is the player's previous one from then on.
    pub(super) fn record(&mut self, post: &Post, now: Timestamp) {
        self.last.insert((log_of(post), post.user_id), now);
    }
}

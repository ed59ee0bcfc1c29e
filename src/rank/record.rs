//! Recording committed changes: players on the built-in boards, entries
//! on custom boards, in the local index or in Redis.

use std::sync::atomic::Ordering;

use crate::domain::{Board, BoardPeriod, Timestamp};
use crate::store::{Standing, UserRow};

use super::local::EntryChange;
use super::redis_source::{builtin_members, Record};
use super::{key, Failed, RankEngine};

impl RankEngine {
    /// Records players' states after a committed change (a post, a
    /// moderation): on the built-in boards, or off them.
    pub async fn record(&self, users: &[UserRow]) {
        match &self.shared {
            None => {
                let mut boards = self.local.boards.write().await;
                let mut changed = false;
                for user in users {
                    changed |= boards.apply(&Standing::of(user));
                }
                if changed {
                    self.version.fetch_add(1, Ordering::Release);
                }
            }
            // Recorded even while degraded: the change log feeds the rebuild.
            Some(shared) => {
                for user in users {
                    let standing = Standing::of(user);
                    let members = builtin_members(&standing);
                    let record = Record {
                        id: standing.id,
                        version: standing.version,
                        period: 0,
                        expire_at: None,
                        track: false,
                        changed: 0,
                        members: &members,
                    };
                    if let Err(error) = shared.redis.record(BoardPeriod::builtin(Board::Best), &record).await {
                        self.degrade(shared, &error, Failed::Write);
                    }
                }
            }
        }
    }

    /// Records custom board entries after a committed post; `ends` gives
    /// each change's period end (its sets in Redis expire after it).
    pub async fn record_entries(&self, changes: &[(EntryChange, Option<Timestamp>)]) {
        match &self.shared {
            None => {
                let mut boards = self.local.boards.write().await;
                let mut changed = false;
                for (change, _) in changes {
                    changed |= boards.apply_entry(change);
                }
                if changed {
                    self.version.fetch_add(1, Ordering::Release);
                }
            }
            Some(shared) => {
                for (change, end) in changes {
                    let member =
                        if change.listed { key::member_of(change.board.ranking, change.key) } else { String::new() };
                    let members = [(member, change.metadata.as_deref())];
                    let record = Record {
                        id: change.key.id,
                        version: change.version,
                        period: change.board.period,
                        expire_at: *end,
                        track: self.walks_skip_changes(change.board.board),
                        changed: change.changed,
                        members: &members,
                    };
                    if let Err(error) = shared.redis.record(change.board, &record).await {
                        self.degrade(shared, &error, Failed::Write);
                    }
                }
            }
        }
    }
}

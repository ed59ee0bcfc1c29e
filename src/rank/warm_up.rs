//! Filling the rank engine at start and after an initialize: the local
//! index from the database, or the boards in Redis rebuilt, with the posts
//! made meanwhile replayed from their change logs.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use futures_util::TryStreamExt as _;

use crate::boards::CustomBoard;
use crate::domain::{Board, BoardKey, BoardPeriod, Ranking, Timestamp};
use crate::redis::RedisError;
use crate::store::{Standing, StoreResult};

use super::local::{EntryChange, LocalBoards};
use super::redis_source::{builtin_members, LoggedChange, Numbering, RebuildEntry, Record};
use super::{key, CurrentEntries, Failed, RankEngine, Shared, WarmUp};

impl RankEngine {
    /// Loads the boards from the database: without Redis into the local
    /// index (the write lock is held across the read: a post that commits
    /// before the read is in it, and one that commits after waits here and
    /// is recorded afterwards); with Redis, rebuilds the boards there when
    /// `rebuild_shared` (after an initialize) or when they are not built
    /// (posts meanwhile are replayed from their change logs). Redis trouble
    /// never fails this: reads go to the database and recovery runs in the
    /// background.
    pub async fn warm_up(&self, rebuild_shared: bool) -> StoreResult<WarmUp> {
        let started = Instant::now();
        let Some(shared) = &self.shared else {
            let mut boards = self.local.boards.write().await;
            let rows = self.store.board_standings().await?;
            let read = started.elapsed();
            let mut local = LocalBoards::from_standings(&rows);
            let mut entries = rows.len();
            for custom in self.boards.all_ranked() {
                let current = self.current_entries(&custom).await?;
                entries += current.entries.len();
                local.load_period(current.board, current.changes, &current.entries);
            }
            *boards = local;
            self.version.fetch_add(1, Ordering::Release);
            let elapsed = started.elapsed();
            tracing::debug!(
                read_ms = read.as_millis() as u64,
                build_ms = (elapsed - read).as_millis() as u64,
                "warm-up"
            );
            return Ok(WarmUp { entries, elapsed });
        };
        let mut entries = 0;
        for group in self.groups() {
            let ready = shared.redis.ready(&[group]).await.ok().and_then(|r| r.first().copied()).unwrap_or(false);
            if ready && !rebuild_shared {
                continue;
            }
            match self.rebuild_group(shared, group).await {
                Ok(rebuilt) => entries += rebuilt,
                Err(error) => {
                    tracing::warn!(%error, %group, "rebuilding a board in Redis failed");
                    self.degrade(shared, &RedisError::NotReady, Failed::Read);
                }
            }
        }
        self.check_shared().await;
        Ok(WarmUp { entries, elapsed: started.elapsed() })
    }

    /// The built-in group and every custom board.
    pub(super) fn groups(&self) -> Vec<Board> {
        std::iter::once(Board::Best).chain(self.boards.all_ranked().iter().map(|custom| custom.spec.board())).collect()
    }

    /// The entries of a custom board's current period, from the database.
    async fn current_entries(&self, custom: &CustomBoard) -> StoreResult<CurrentEntries> {
        let board = custom.spec.period(custom.period_at(Timestamp::now()).index);
        let period = self.store.period_entries(custom.spec.number, board.period).await?;
        let entries = period
            .entries
            .into_iter()
            .map(|row| EntryChange {
                board,
                key: BoardKey {
                    score: row.score,
                    subscores: row.subscores,
                    at: row.achieved_at.millis(),
                    id: row.user_id,
                },
                version: row.version,
                listed: true,
                metadata: row.metadata.map(Arc::from),
                changed: row.changed,
            })
            .collect();
        Ok(CurrentEntries { board, changes: period.changes, entries })
    }

    /// Rebuilds one group in Redis from the database; returns its entries.
    /// The built-in boards are read and written a chunk at a time (ten
    /// million players held at once took 2.6 GB); a custom board's current
    /// period is read whole.
    pub(super) async fn rebuild_group(&self, shared: &Shared, group: Board) -> anyhow::Result<usize> {
        let since = shared.redis.begin_rebuild(group).await?;
        let track = self.walks_skip_changes(group);
        let (board, changes) = match group {
            Board::Best | Board::Total => (BoardPeriod::builtin(Board::Best), 0),
            Board::Custom(number) => {
                let Some(custom) = self.boards.by_number(number) else { return Ok(0) };
                let current = self.current_entries(&custom).await?;
                let board = current.board;
                let entries: Vec<RebuildEntry> = current
                    .entries
                    .iter()
                    .map(|change| RebuildEntry {
                        id: change.key.id,
                        version: change.version,
                        changed: change.changed,
                        members: vec![(
                            key::member_of(board.ranking, change.key),
                            change.metadata.as_deref().map(str::to_owned),
                        )],
                    })
                    .collect();
                if shared.redis.rebuild(board, &entries, Numbering { track, changes: current.changes }).await? {
                    self.replay_logged(shared, board, since, track).await?;
                }
                return Ok(entries.len());
            }
        };
        let Some(mut rebuild) = shared.redis.start_rebuild(board, Numbering { track, changes }).await? else {
            return Ok(0); // another instance is on it; `ready` will tell
        };
        let mut written = 0;
        let added: anyhow::Result<()> = async {
            let mut chunks = std::pin::pin!(self.store.board_standings_in_chunks().await?);
            while let Some(chunk) = chunks.try_next().await? {
                let entries: Vec<RebuildEntry> = chunk.iter().map(builtin_rebuild_entry).collect();
                shared.redis.add_to_rebuild(&mut rebuild, &entries).await?;
                written += entries.len();
            }
            Ok(())
        }
        .await;
        if let Err(error) = added {
            shared.redis.abandon_rebuild(rebuild).await;
            return Err(error);
        }
        shared.redis.finish_rebuild(rebuild).await?;
        self.replay_logged(shared, board, since, track).await?;
        Ok(written)
    }

    /// Brings into Redis what changed while a rebuild read the database.
    /// The log names who changed, in which period, and the version and
    /// change number each change left; what those players hold now is read
    /// from the database (a chunk of players a statement), and each logged
    /// change is recorded, in log order, with its own version and change
    /// number and that state: versioned like any change (the newest wins,
    /// and once the last is in, Redis holds what the database does), and
    /// every change number is noted, so a walk's numbers have no gap.
    pub(super) async fn replay_logged(
        &self,
        shared: &Shared,
        board: BoardPeriod,
        since: i64,
        track: bool,
    ) -> anyhow::Result<()> {
        const PLAYERS_PER_READ: usize = 500;
        let logged: Vec<LoggedChange> = shared
            .redis
            .logged_changes(board.board, since)
            .await?
            .into_iter()
            .filter(|change| change.period >= board.period)
            .collect();
        let players: BTreeSet<(i64, i64)> = logged.iter().map(|change| (change.period, change.id)).collect();
        let players: Vec<(i64, i64)> = players.into_iter().collect();
        let custom = match board.board {
            Board::Custom(number) => match self.boards.by_number(number) {
                Some(custom) => Some(custom),
                None => return Ok(()), // deleted meanwhile
            },
            Board::Best | Board::Total => None,
        };
        // What each logged player holds now: members per board of the
        // group, or none when no longer listed (banned, erased, their last
        // post removed).
        let mut now: HashMap<(i64, i64), RebuildEntry> = HashMap::new();
        let mut conn = self.store.conn().await?;
        for chunk in players.chunk_by(|a, b| a.0 == b.0).flat_map(|period| period.chunks(PLAYERS_PER_READ)) {
            let period = chunk[0].0;
            let ids: Vec<i64> = chunk.iter().map(|(_, id)| *id).collect();
            let entries: Vec<RebuildEntry> = match (board.board, &custom) {
                (Board::Custom(number), Some(custom)) => {
                    let rows = self.store.listed_entries_of(&mut conn, number, period, &ids).await?;
                    rows.iter().map(|row| custom_rebuild_entry(custom.spec.ranking(), row)).collect()
                }
                _ => self
                    .store
                    .users(&mut conn, &ids)
                    .await?
                    .iter()
                    .map(|u| builtin_rebuild_entry(&Standing::of(u)))
                    .collect(),
            };
            now.extend(entries.into_iter().map(|entry| ((period, entry.id), entry)));
        }
        drop(conn);
        let off_the_boards = vec![(String::new(), None); if custom.is_some() { 1 } else { 2 }];
        for change in logged {
            let members = now.get(&(change.period, change.id)).map_or(&off_the_boards, |entry| &entry.members);
            let members: Vec<(String, Option<&str>)> =
                members.iter().map(|(member, metadata)| (member.clone(), metadata.as_deref())).collect();
            let expire_at = custom
                .as_ref()
                .and_then(|custom| custom.recent_periods().into_iter().find(|p| p.index == change.period))
                .and_then(|period| period.end);
            let record = Record {
                id: change.id,
                version: change.version,
                period: change.period,
                expire_at,
                track,
                changed: change.changed,
                members: &members,
            };
            shared.redis.replay(BoardPeriod { period: change.period, ..board }, &record).await?;
        }
        Ok(())
    }
}

/// A player's entry on the built-in boards, as a rebuild writes it.
pub(super) fn builtin_rebuild_entry(standing: &Standing) -> RebuildEntry {
    RebuildEntry {
        id: standing.id,
        version: standing.version,
        changed: 0,
        members: builtin_members(standing).into_iter().map(|(member, _)| (member, None)).collect(),
    }
}

/// A player's entry on a custom board, as a rebuild writes it.
fn custom_rebuild_entry(ranking: Ranking, row: &crate::store::EntryRow) -> RebuildEntry {
    let key = row.key();
    RebuildEntry {
        id: row.user_id,
        version: row.version,
        changed: row.changed,
        members: vec![(key::member_of(ranking, key), row.metadata.clone())],
    }
}

//! The in-process board source: an order-statistic index per board, used
//! by a single instance without Redis.
//!
//! Each board is an `indexset::BTreeSet` (a two-level B-tree with a Fenwick
//! index over its nodes: rank and select in O(log n)) of packed keys whose
//! byte order *is* the board order, so no comparator runs. Chosen over a
//! Fenwick tree over score buckets because totals are unbounded and ties
//! need the time/id order anyway; over a hand-written tree because this one
//! is maintained and small.
//!
//! Each board also maps player ids to their current key and a version, so
//! that updates arriving out of order keep the newest. This is a cache of
//! the database, never the source of truth.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;

use indexset::BTreeSet;
use tokio::sync::RwLock;

use super::key::Packed;
use super::source::{BoardSource, Slice, SliceStart};
use crate::domain::{Board, BoardKey, Order};
use crate::store::Standing;

/// A player's place on one board.
#[derive(Debug, Clone, Copy)]
struct Slot {
    key: Packed,
    /// 0: not on the board.
    version: u32,
}

/// Ids up to this are held in a flat vector; beyond, in a map.
const DENSE_IDS: usize = 1 << 26;

/// Player id → slot: a flat vector for the dense ids that auto-increment
/// hands out, a map for the rest.
#[derive(Default)]
struct Slots {
    dense: Vec<Slot>,
    sparse: HashMap<i64, Slot>,
}

impl Slots {
    fn get(&self, id: i64) -> Option<Slot> {
        let slot = match usize::try_from(id) {
            Ok(index) if index < DENSE_IDS => self.dense.get(index).copied(),
            _ => self.sparse.get(&id).copied(),
        };
        slot.filter(|slot| slot.version > 0)
    }

    fn set(&mut self, id: i64, slot: Slot) {
        match usize::try_from(id) {
            Ok(index) if index < DENSE_IDS => {
                if self.dense.len() <= index {
                    self.dense.resize(index + 1, Slot { key: Packed::floor(Order::Desc, 0), version: 0 });
                }
                self.dense[index] = slot;
            }
            _ => {
                self.sparse.insert(id, slot);
            }
        }
    }
}

/// One board's index.
pub struct BoardIndex {
    order: Order,
    keys: BTreeSet<Packed>,
    slots: Slots,
}

fn version(plays: i64) -> u32 {
    u32::try_from(plays.max(0)).unwrap_or(u32::MAX)
}

impl BoardIndex {
    fn new(order: Order) -> Self {
        Self { order, keys: BTreeSet::new(), slots: Slots::default() }
    }

    /// Builds the index from many entries at once: keys are sorted first so
    /// that every insert appends (inserting in id order would shift node
    /// contents for each key). Later duplicates of an id are ignored.
    fn build(order: Order, entries: impl Iterator<Item = (BoardKey, i64)>) -> Self {
        let mut index = Self::new(order);
        let mut keys = Vec::new();
        for (key, plays) in entries.filter(|(_, plays)| *plays > 0) {
            if index.slots.get(key.id).is_some() {
                continue;
            }
            let packed = Packed::of(order, key);
            index.slots.set(key.id, Slot { key: packed, version: version(plays) });
            keys.push(packed);
        }
        keys.sort_unstable();
        index.keys = keys.into_iter().collect();
        index
    }

    /// Places a player, unless the index holds a newer state of them.
    /// Returns whether anything changed.
    fn apply(&mut self, key: BoardKey, plays: i64) -> bool {
        if plays <= 0 {
            return false;
        }
        if let Some(old) = self.slots.get(key.id) {
            if old.version >= version(plays) {
                return false;
            }
            self.keys.remove(&old.key);
        }
        let packed = Packed::of(self.order, key);
        self.keys.insert(packed);
        self.slots.set(key.id, Slot { key: packed, version: version(plays) });
        true
    }

    fn len(&self) -> usize {
        self.keys.len()
    }

    /// Competition rank of `score`: 1 + entries with a strictly better one.
    fn rank_of_score(&self, score: i64) -> i64 {
        self.keys.rank(&Packed::floor(self.order, score)) as i64 + 1
    }

    fn slice(&self, start: SliceStart, count: usize) -> Option<Slice> {
        let position = match start {
            SliceStart::Offset(position) => position,
            SliceStart::After(key) => self.keys.rank(&Packed::of(self.order, key).successor()),
            SliceStart::Around { id, radius } => self.keys.rank(&self.slots.get(id)?.key).saturating_sub(radius),
        };
        let total = self.len();
        let end = position.saturating_add(count).min(total);
        let keys: Vec<BoardKey> = if position < end {
            self.keys.range_idx(position..end).map(|key| key.unpack(self.order)).collect()
        } else {
            Vec::new()
        };
        let first_rank = keys.first().map_or(0, |first| self.rank_of_score(first.score));
        Some(Slice { keys, position, first_rank, total })
    }
}

/// Both built-in boards, kept together: one standing places a player on each.
pub struct LocalBoards {
    best: BoardIndex,
    total: BoardIndex,
}

impl Default for LocalBoards {
    fn default() -> Self {
        Self { best: BoardIndex::new(Board::Best.order()), total: BoardIndex::new(Board::Total.order()) }
    }
}

fn best_key(s: &Standing) -> BoardKey {
    BoardKey { score: s.best, at: s.best_at, id: s.id }
}

fn total_key(s: &Standing) -> BoardKey {
    BoardKey { score: s.total, at: 0, id: s.id }
}

impl LocalBoards {
    pub fn from_standings(rows: &[Standing]) -> Self {
        Self {
            best: BoardIndex::build(Board::Best.order(), rows.iter().map(|s| (best_key(s), s.plays))),
            total: BoardIndex::build(Board::Total.order(), rows.iter().map(|s| (total_key(s), s.plays))),
        }
    }

    /// Places a player on both boards unless a newer state is there.
    pub fn apply(&mut self, s: &Standing) -> bool {
        let best = self.best.apply(best_key(s), s.plays);
        let total = self.total.apply(total_key(s), s.plays);
        best || total
    }

    fn board(&self, board: Board) -> &BoardIndex {
        match board {
            Board::Best => &self.best,
            Board::Total => &self.total,
        }
    }

    /// Players on the boards.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.best.len()
    }
}

/// The in-process source: the boards behind an async lock (a warm-up holds
/// it across its database read, see `RankEngine::warm_up`).
#[derive(Clone, Default)]
pub struct LocalSource {
    pub(super) boards: Arc<RwLock<LocalBoards>>,
}

impl BoardSource for LocalSource {
    type Error = Infallible;

    async fn slice(&self, board: Board, start: SliceStart, count: usize) -> Result<Option<Slice>, Infallible> {
        Ok(self.boards.read().await.board(board).slice(start, count))
    }

    async fn ranks_of_scores(&self, scores: &[(Board, i64)]) -> Result<Vec<i64>, Infallible> {
        let boards = self.boards.read().await;
        Ok(scores.iter().map(|(board, score)| boards.board(*board).rank_of_score(*score)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn standing(id: i64, best: i64, best_at: i64, total: i64, plays: i64) -> Standing {
        Standing { id, best, best_at, total, plays }
    }

    fn all_keys(boards: &LocalBoards, board: Board) -> Vec<BoardKey> {
        boards.board(board).slice(SliceStart::Offset(0), usize::MAX / 2).map(|s| s.keys).unwrap_or_default()
    }

    #[test]
    fn a_bulk_build_equals_one_by_one_inserts() {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let rows: Vec<Standing> = (1..500)
            .map(|id| standing(id, rng.gen_range(0..20), rng.gen_range(0..5), rng.gen_range(0..50), 1))
            .collect();
        let bulk = LocalBoards::from_standings(&rows);
        let mut one_by_one = LocalBoards::default();
        rows.iter().for_each(|s| {
            one_by_one.apply(s);
        });
        for board in Board::ALL {
            assert_eq!(all_keys(&bulk, board), all_keys(&one_by_one, board));
        }
    }

    #[test]
    fn stale_updates_never_win() {
        let mut boards = LocalBoards::default();
        assert!(boards.apply(&standing(1, 50, 10, 80, 2)));
        assert!(!boards.apply(&standing(1, 30, 5, 30, 1)));
        assert_eq!(all_keys(&boards, Board::Total), [BoardKey { score: 80, at: 0, id: 1 }]);
        assert_eq!(boards.len(), 1);
    }

    #[test]
    fn ids_beyond_the_dense_range_are_kept_too() {
        let mut boards = LocalBoards::default();
        let far = (DENSE_IDS as i64) * 4;
        boards.apply(&standing(far, 5, 1, 5, 1));
        boards.apply(&standing(2, 9, 1, 9, 1));
        assert_eq!(all_keys(&boards, Board::Best).iter().map(|k| k.id).collect::<Vec<_>>(), [2, far]);
        let around = boards.board(Board::Best).slice(SliceStart::Around { id: far, radius: 1 }, 3).unwrap();
        assert_eq!((around.position, around.first_rank), (0, 1));
    }

    fn resident_bytes() -> usize {
        let status = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
        let pages: usize = status.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
        pages * 4096
    }

    /// A measurement, not a test: `cargo test --release --lib -- --ignored
    /// --nocapture memory_per_player` (figure in BENCHMARKS.md).
    #[test]
    #[ignore]
    fn memory_per_player() {
        const PLAYERS: i64 = 1_000_000;
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let rows: Vec<Standing> = (1..=PLAYERS)
            .map(|id| {
                let best_at = 1_767_225_600_000 + rng.gen_range(0..100_000_000);
                standing(id, rng.gen_range(0..1_000_000), best_at, rng.gen_range(0..100_000_000), 1)
            })
            .collect();
        let before = resident_bytes();
        let started = std::time::Instant::now();
        let boards = LocalBoards::from_standings(&rows);
        let built = started.elapsed();
        let after = resident_bytes();
        assert_eq!(boards.len(), PLAYERS as usize);
        println!(
            "{PLAYERS} players: built in {} ms, {} bytes per player (resident set growth)",
            built.as_millis(),
            (after - before) / PLAYERS as usize
        );
    }
}

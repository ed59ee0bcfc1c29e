//! The in-process order-statistic index of both boards.
//!
//! Each board is an `indexset::BTreeSet` (a two-level B-tree with a Fenwick
//! index over its nodes: rank and select in O(log n)) of packed `u128` keys
//! whose integer order *is* the board order, so no comparator runs and a key
//! costs 16 bytes. Chosen over a Fenwick tree over score buckets because
//! totals are unbounded and ties need the `best_at`/`id` order anyway; over
//! a hand-written tree because this one is maintained and small.
//!
//! Player aggregates live in a table indexed by id (ids are dense), with a
//! version (`play_count`) so that updates arriving out of order keep the
//! newest. This is a cache of the database, never the source of truth.

use std::collections::HashMap;

use indexset::BTreeSet;

use crate::domain::{Board, BoardKey};

/// The aggregates that place a player on both boards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Standing {
    pub id: i64,
    pub best: i64,
    pub best_at: i64,
    pub total: i64,
    pub plays: i64,
}

/// 48 bits of id and of millisecond timestamps (until the year 10889).
const FIELD_48: u128 = (1 << 48) - 1;

fn best_key(best: i64, at: i64, id: i64) -> u128 {
    let score = u128::from(u32::MAX - u32::try_from(best.clamp(0, i64::from(u32::MAX))).unwrap_or(u32::MAX));
    (score << 96) | ((at.max(0) as u128 & FIELD_48) << 48) | (id.max(0) as u128 & FIELD_48)
}

fn total_key(total: i64, id: i64) -> u128 {
    let score = u128::from(u64::MAX - total.max(0) as u64);
    (score << 64) | (id.max(0) as u128 & u128::from(u64::MAX))
}

/// The smallest key with `score`: its position is the number of players
/// with a strictly greater score.
pub(super) fn first_key_with(board: Board, score: i64) -> u128 {
    match board {
        Board::Best => best_key(score, 0, 0),
        Board::Total => total_key(score, 0),
    }
}

pub(super) fn pack(board: Board, key: BoardKey) -> u128 {
    match board {
        Board::Best => best_key(key.score, key.at, key.id),
        Board::Total => total_key(key.score, key.id),
    }
}

pub(super) fn unpack(board: Board, key: u128) -> BoardKey {
    match board {
        Board::Best => BoardKey {
            score: i64::from(u32::MAX - (key >> 96) as u32),
            at: ((key >> 48) & FIELD_48) as i64,
            id: (key & FIELD_48) as i64,
        },
        Board::Total => BoardKey { score: (u64::MAX - (key >> 64) as u64) as i64, at: 0, id: key as u64 as i64 },
    }
}

/// Per-player row of the table: 24 bytes.
#[derive(Debug, Clone, Copy, Default)]
struct Row {
    best: u32,
    plays: u32,
    best_at: i64,
    total: i64,
}

impl From<&Standing> for Row {
    fn from(s: &Standing) -> Self {
        Self {
            best: u32::try_from(s.best).unwrap_or(u32::MAX),
            plays: u32::try_from(s.plays).unwrap_or(u32::MAX),
            best_at: s.best_at,
            total: s.total,
        }
    }
}

/// Ids up to this are stored in a flat vector; beyond, in a map.
const DENSE_IDS: usize = 1 << 26;

#[derive(Default)]
pub struct Standings {
    best: BTreeSet<u128>,
    total: BTreeSet<u128>,
    dense: Vec<Row>,
    sparse: HashMap<i64, Row>,
}

impl Standings {
    pub fn new() -> Self {
        Self::default()
    }

    fn row(&self, id: i64) -> Option<Row> {
        let row = match usize::try_from(id) {
            Ok(index) if index < DENSE_IDS => self.dense.get(index).copied(),
            _ => self.sparse.get(&id).copied(),
        };
        row.filter(|r| r.plays > 0)
    }

    fn set_row(&mut self, id: i64, row: Row) {
        match usize::try_from(id) {
            Ok(index) if index < DENSE_IDS => {
                if self.dense.len() <= index {
                    self.dense.resize(index + 1, Row::default());
                }
                self.dense[index] = row;
            }
            _ => {
                self.sparse.insert(id, row);
            }
        }
    }

    /// Builds the index from many players at once: keys are sorted first so
    /// that every insert appends (inserting in id order would shift node
    /// contents for each key). Later duplicates of an id are ignored.
    pub fn from_standings(rows: &[Standing]) -> Self {
        let mut standings = Self::new();
        let mut best = Vec::with_capacity(rows.len());
        let mut total = Vec::with_capacity(rows.len());
        for s in rows.iter().filter(|s| s.plays > 0) {
            if standings.row(s.id).is_some() {
                continue;
            }
            standings.set_row(s.id, Row::from(s));
            best.push(best_key(s.best, s.best_at, s.id));
            total.push(total_key(s.total, s.id));
        }
        best.sort_unstable();
        total.sort_unstable();
        standings.best = best.into_iter().collect();
        standings.total = total.into_iter().collect();
        standings
    }

    /// Places a player with these aggregates, unless the index already holds
    /// a newer state of them (more plays). Returns whether anything changed.
    pub fn apply(&mut self, s: Standing) -> bool {
        if s.plays <= 0 {
            return false;
        }
        if let Some(old) = self.row(s.id) {
            if i64::from(old.plays) >= s.plays {
                return false;
            }
            self.best.remove(&best_key(i64::from(old.best), old.best_at, s.id));
            self.total.remove(&total_key(old.total, s.id));
        }
        self.best.insert(best_key(s.best, s.best_at, s.id));
        self.total.insert(total_key(s.total, s.id));
        self.set_row(s.id, Row::from(&s));
        true
    }

    fn set(&self, board: Board) -> &BTreeSet<u128> {
        match board {
            Board::Best => &self.best,
            Board::Total => &self.total,
        }
    }

    /// Players on the boards.
    pub fn len(&self) -> usize {
        self.best.len()
    }

    pub fn is_empty(&self) -> bool {
        self.best.is_empty()
    }

    /// Competition rank of `score`: 1 + players with a strictly greater one.
    pub fn rank_of_score(&self, board: Board, score: i64) -> i64 {
        self.set(board).rank(&first_key_with(board, score)) as i64 + 1
    }

    /// A player's current key, if they are on the board.
    pub fn key_of(&self, board: Board, id: i64) -> Option<BoardKey> {
        let row = self.row(id)?;
        Some(match board {
            Board::Best => BoardKey { score: i64::from(row.best), at: row.best_at, id },
            Board::Total => BoardKey { score: row.total, at: 0, id },
        })
    }

    /// 0-based position of `key` (players strictly before it).
    pub fn position_of(&self, board: Board, key: BoardKey) -> usize {
        self.set(board).rank(&pack(board, key))
    }

    /// Position of the first player strictly after `key`.
    pub fn position_after(&self, board: Board, key: BoardKey) -> usize {
        self.set(board).rank(&(pack(board, key) + 1))
    }

    /// Up to `count` keys from `position` on, in board order.
    pub fn slice(&self, board: Board, position: usize, count: usize) -> Vec<BoardKey> {
        let set = self.set(board);
        if position >= set.len() || count == 0 {
            return Vec::new();
        }
        let end = (position + count).min(set.len());
        set.range_idx(position..end).map(|key| unpack(board, *key)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn packed_keys_round_trip_and_sort_in_board_order() {
        let keys = [
            BoardKey { score: 1_000_000_000, at: 5, id: 9 },
            BoardKey { score: 7, at: 1_790_000_000_000, id: 2 },
            BoardKey { score: 7, at: 1_790_000_000_000, id: 3 },
            BoardKey { score: 7, at: 1_790_000_000_001, id: 1 },
            BoardKey { score: 0, at: 0, id: 1 },
        ];
        for key in keys {
            assert_eq!(unpack(Board::Best, pack(Board::Best, key)), key);
            let total = BoardKey { at: 0, ..key };
            assert_eq!(unpack(Board::Total, pack(Board::Total, total)), total);
        }
        assert!(keys.windows(2).all(|w| pack(Board::Best, w[0]) < pack(Board::Best, w[1])));
        assert!(
            pack(Board::Total, BoardKey { score: 1 << 40, at: 0, id: 5 })
                < pack(Board::Total, BoardKey { score: 3, at: 0, id: 1 })
        );
    }

    #[test]
    fn a_bulk_build_equals_one_by_one_inserts() {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let rows: Vec<Standing> = (1..500)
            .map(|id| Standing {
                id,
                best: rng.gen_range(0..20),
                best_at: rng.gen_range(0..5),
                total: rng.gen_range(0..50),
                plays: 1,
            })
            .collect();
        let bulk = Standings::from_standings(&rows);
        let mut one_by_one = Standings::new();
        rows.iter().for_each(|s| {
            one_by_one.apply(*s);
        });
        for board in Board::ALL {
            assert_eq!(bulk.slice(board, 0, 1000), one_by_one.slice(board, 0, 1000));
        }
    }

    #[test]
    fn stale_updates_never_win() {
        let mut standings = Standings::new();
        assert!(standings.apply(Standing { id: 1, best: 50, best_at: 10, total: 80, plays: 2 }));
        assert!(!standings.apply(Standing { id: 1, best: 30, best_at: 5, total: 30, plays: 1 }));
        assert_eq!(standings.key_of(Board::Total, 1).map(|k| k.score), Some(80));
        assert_eq!(standings.len(), 1);
    }

    /// The contract's board, by sorting everything (the brute force).
    fn brute_force(players: &HashMap<i64, Standing>, board: Board) -> Vec<(i64, BoardKey)> {
        let mut keys: Vec<BoardKey> = players
            .values()
            .map(|s| match board {
                Board::Best => BoardKey { score: s.best, at: s.best_at, id: s.id },
                Board::Total => BoardKey { score: s.total, at: 0, id: s.id },
            })
            .collect();
        keys.sort_by(|a, b| b.score.cmp(&a.score).then(a.at.cmp(&b.at)).then(a.id.cmp(&b.id)));
        keys.iter().map(|k| (1 + keys.iter().filter(|o| o.score > k.score).count() as i64, *k)).collect()
    }

    #[test]
    fn matches_a_brute_force_sort_after_random_posts_with_many_ties() {
        for seed in 0..40 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let mut standings = Standings::new();
            let mut truth: HashMap<i64, Standing> = HashMap::new();
            let players = rng.gen_range(1..60);
            for step in 0..rng.gen_range(1..400) {
                let id = rng.gen_range(1..=players);
                // Few distinct scores and timestamps: ties everywhere.
                let score = rng.gen_range(0..8) * 10;
                let at = 1_000 + step / 3;
                let s = truth.entry(id).or_insert(Standing { id, best: 0, best_at: 0, total: 0, plays: 0 });
                if s.plays == 0 || score > s.best {
                    s.best = score;
                    s.best_at = at;
                }
                s.total += score;
                s.plays += 1;
                standings.apply(*s);
            }
            for board in Board::ALL {
                let expected = brute_force(&truth, board);
                let keys = standings.slice(board, 0, usize::MAX / 2);
                assert_eq!(keys, expected.iter().map(|(_, k)| *k).collect::<Vec<_>>(), "seed {seed} {board}");
                for (position, (rank, key)) in expected.iter().enumerate() {
                    assert_eq!(standings.rank_of_score(board, key.score), *rank, "seed {seed}");
                    assert_eq!(standings.position_of(board, *key), position);
                    assert_eq!(standings.position_after(board, *key), position + 1);
                    assert_eq!(standings.key_of(board, key.id), Some(*key));
                }
                let from = rng.gen_range(0..=expected.len());
                let window = standings.slice(board, from, 7);
                assert_eq!(window, expected.iter().skip(from).take(7).map(|(_, k)| *k).collect::<Vec<_>>());
            }
        }
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
            .map(|id| Standing {
                id,
                best: rng.gen_range(0..1_000_000),
                best_at: 1_767_225_600_000 + rng.gen_range(0..100_000_000),
                total: rng.gen_range(0..100_000_000),
                plays: 1,
            })
            .collect();
        let before = resident_bytes();
        let started = std::time::Instant::now();
        let standings = Standings::from_standings(&rows);
        let built = started.elapsed();
        let after = resident_bytes();
        assert_eq!(standings.len(), PLAYERS as usize);
        println!(
            "{PLAYERS} players: built in {} ms, {} bytes per player (resident set growth)",
            built.as_millis(),
            (after - before) / PLAYERS as usize
        );
    }
}

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
//! Boards written together form a group that keeps one row per player
//! (what places them on each board, and a version, so that updates
//! arriving out of order keep the newest). This is a cache of the
//! database, never the source of truth.

use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::sync::Arc;

use indexset::BTreeSet;
use tokio::sync::RwLock;

use super::key::Packed;
use super::source::{rank_entries, BoardSource, Entry, Ranked, ScoreRank, Skipped, Slice, SliceStart, WALK_SCAN_LIMIT};
use crate::domain::{Board, BoardKey, BoardPeriod, Order, Ranking, Walk, MAX_SUBSCORES};
use crate::store::Standing;

/// What a group of boards (written together) keeps per player: enough to
/// derive the player's key on each board, and a version.
pub trait Row: Clone + Default {
    /// Orders updates of one player with the same change number (see
    /// `changed`); 0: no row at all.
    fn version(&self) -> u32;
    /// Whether the player is on the group's boards. A row that is not is a
    /// tombstone: it keeps the version of the change that took the player
    /// off (a removed post, a ban, an erasure), so that an older update
    /// arriving late cannot put them back.
    fn listed(&self) -> bool;
    /// The player's key on the group's board number `board`.
    fn key(&self, board: usize, id: i64) -> BoardKey;
    /// The metadata of the post that set the player's score, if the group
    /// keeps any.
    fn metadata(&self) -> Option<Arc<str>> {
        None
    }
    /// The number of the change that last wrote the row (the database's,
    /// see `board_entries.changed`; 0 where the group does not number its
    /// changes): walks leave out rows changed after they began.
    fn changed(&self) -> u64 {
        0
    }
}

/// Ids up to this may be held in a flat vector; beyond, always in a map.
const DENSE_IDS: usize = 1 << 26;

/// Rows the flat vector may hold beyond twice the rows held: it grows only
/// while ids are dense (what auto-increment hands out to the players of the
/// built-in boards), so a board period whose few players have ids spread up
/// to millions keeps them in the map and costs O(its entries).
const DENSE_SLACK: usize = 1024;

/// Player id → row: a flat vector for dense ids, a map for the rest.
#[derive(Default)]
struct Rows<R> {
    dense: Vec<R>,
    sparse: HashMap<i64, R>,
    /// Rows held (tombstones too).
    held: usize,
}

impl<R: Row> Rows<R> {
    /// The row of a player on the boards.
    fn get(&self, id: i64) -> Option<&R> {
        self.stored(id).filter(|row| row.listed())
    }

    /// The row of a player, tombstones included.
    fn stored(&self, id: i64) -> Option<&R> {
        let dense = usize::try_from(id).ok().and_then(|index| self.dense.get(index)).filter(|row| row.version() > 0);
        dense.or_else(|| self.sparse.get(&id)).filter(|row| row.version() > 0)
    }

    /// How long the flat vector may grow with `held` rows.
    fn dense_limit(held: usize) -> usize {
        held.saturating_mul(2).saturating_add(DENSE_SLACK).min(DENSE_IDS)
    }

    /// Makes room for ids up to `max_id` at once, when a warm-up of `count`
    /// rows finds them dense.
    fn reserve(&mut self, max_id: i64, count: usize) {
        let wanted = usize::try_from(max_id).unwrap_or(0).saturating_add(1);
        if wanted <= Self::dense_limit(count) && self.dense.len() < wanted {
            self.dense.resize(wanted, R::default());
        }
    }

    fn set(&mut self, id: i64, row: R) {
        if self.stored(id).is_none() {
            self.held += 1;
        }
        match usize::try_from(id) {
            Ok(index) if index < self.dense.len() || index < Self::dense_limit(self.held) => {
                if self.dense.len() <= index {
                    self.dense.resize(index + 1, R::default());
                }
                self.dense[index] = row;
                self.sparse.remove(&id);
            }
            _ => {
                self.sparse.insert(id, row);
            }
        }
    }

    /// Rows the vector and the map have room for: what the rows cost.
    #[cfg(test)]
    fn allocated(&self) -> usize {
        self.dense.capacity() + self.sparse.capacity()
    }
}

/// One board's packed keys: the five words that vary on a board without
/// subscores (20 bytes a key; most boards), all nine on one with them.
enum KeySet {
    Narrow(BTreeSet<[u32; 5]>),
    Wide(BTreeSet<Packed>),
}

impl KeySet {
    fn new(ranking: Ranking) -> Self {
        if ranking.subscores().is_empty() {
            Self::Narrow(BTreeSet::new())
        } else {
            Self::Wide(BTreeSet::new())
        }
    }

    fn insert(&mut self, key: Packed) {
        match self {
            Self::Narrow(set) => set.insert(key.narrow()),
            Self::Wide(set) => set.insert(key),
        };
    }

    fn remove(&mut self, key: &Packed) {
        match self {
            Self::Narrow(set) => set.remove(&key.narrow()),
            Self::Wide(set) => set.remove(key),
        };
    }

    /// The number of keys below `key`.
    fn rank(&self, key: &Packed) -> usize {
        match self {
            Self::Narrow(set) => set.rank(&key.narrow()),
            Self::Wide(set) => set.rank(key),
        }
    }

    /// The keys at positions `range`, in order.
    fn range(&self, range: std::ops::Range<usize>) -> Box<dyn Iterator<Item = Packed> + '_> {
        match self {
            Self::Narrow(set) => Box::new(set.range_idx(range).map(|key| Packed::widen(*key))),
            Self::Wide(set) => Box::new(set.range_idx(range).copied()),
        }
    }

    fn len(&self) -> usize {
        match self {
            Self::Narrow(set) => set.len(),
            Self::Wide(set) => set.len(),
        }
    }
}

/// Boards written together, one row per player.
pub struct Group<R> {
    rankings: Vec<Ranking>,
    /// One set of packed keys per board.
    sets: Vec<KeySet>,
    rows: Rows<R>,
    applied: Applied,
}

/// Which numbered changes a group has applied: every one up to `through`,
/// and those in `ahead` (recorded before an earlier one: two tasks, or two
/// instances, record after their commits in either order). A walk begins
/// at `through`, so its first page holds every change it does not leave out.
#[derive(Debug, Default)]
struct Applied {
    through: u64,
    ahead: HashSet<u64>,
}

impl Applied {
    fn note(&mut self, number: u64) {
        if number <= self.through {
            return;
        }
        self.ahead.insert(number);
        while self.ahead.remove(&(self.through + 1)) {
            self.through += 1;
        }
    }
}

impl<R: Row> Group<R> {
    fn new(rankings: Vec<Ranking>) -> Self {
        let sets = rankings.iter().map(|ranking| KeySet::new(*ranking)).collect();
        let rows = Rows::default();
        Self { rankings, sets, rows, applied: Applied::default() }
    }

    fn packed(&self, board: usize, row: &R, id: i64) -> Packed {
        Packed::of(self.rankings[board], row.key(board, id))
    }

    /// Builds the group from many rows at once. Later duplicates of an id
    /// are ignored.
    ///
    /// Each board's keys are sorted, then inserted in two passes: every
    /// other key, then the rest. The tree splits a full node in halves, so
    /// sorted inserts alone leave every node half full; the second pass
    /// fills what the first left (measured: 149 → 112 bytes per player
    /// before rows were shared by the boards of a group, see BENCHMARKS.md).
    fn build(rankings: Vec<Ranking>, rows: impl Iterator<Item = (i64, R)>) -> Self {
        let mut group = Self::new(rankings);
        let rows: Vec<(i64, R)> = rows.filter(|(_, row)| row.version() > 0 && row.listed()).collect();
        group.rows.reserve(rows.iter().map(|(id, _)| *id).max().unwrap_or(0), rows.len());
        let mut players = Vec::with_capacity(rows.len());
        for (id, row) in rows {
            if group.rows.get(id).is_none() {
                group.rows.set(id, row.clone());
                players.push((id, row));
            }
        }
        for board in 0..group.rankings.len() {
            let mut keys: Vec<Packed> = players.iter().map(|(id, row)| group.packed(board, row, *id)).collect();
            keys.sort_unstable();
            let set = &mut group.sets[board];
            for key in keys.iter().step_by(2).chain(keys.iter().skip(1).step_by(2)) {
                set.insert(*key);
            }
        }
        group
    }

    /// Places a player on every board of the group (or takes them off, for
    /// a row that is not listed), unless a newer state of them is there.
    /// Returns whether anything changed.
    fn apply(&mut self, id: i64, row: R) -> bool {
        if row.version() == 0 {
            return false;
        }
        if let Some(old) = self.rows.stored(id).cloned() {
            // Newer is a later change number, else a higher version: a
            // removed entry's tombstone keeps its version, and an entry
            // the player's next post makes starts again at version 1 (with
            // a later change number), which a version alone would refuse.
            if (old.changed(), old.version()) >= (row.changed(), row.version()) {
                return false;
            }
            if old.listed() {
                for board in 0..self.sets.len() {
                    let key = self.packed(board, &old, id);
                    self.sets[board].remove(&key);
                }
            }
        }
        if row.listed() {
            for board in 0..self.sets.len() {
                let key = self.packed(board, &row, id);
                self.sets[board].insert(key);
            }
        }
        self.rows.set(id, row);
        true
    }

    /// Competition rank of `key`: 1 + entries strictly better (by the
    /// score and subscores).
    fn rank_of(&self, board: usize, key: &BoardKey) -> i64 {
        self.sets[board].rank(&Packed::of(self.rankings[board], *key).floor()) as i64 + 1
    }

    fn entry(&self, key: BoardKey) -> Entry {
        let metadata = self.rows.get(key.id).and_then(Row::metadata);
        Entry { key, metadata }
    }

    fn slice(&self, board: usize, start: SliceStart, count: usize) -> Option<Slice> {
        let (ranking, set) = (self.rankings[board], &self.sets[board]);
        let position = match start {
            SliceStart::Offset(position) => position,
            SliceStart::After { key, walk: None } => set.rank(&Packed::of(ranking, key).successor()),
            SliceStart::After { key, walk: Some(walk) } => return Some(self.walk_after(board, key, walk, count)),
            SliceStart::Around { id, radius } => {
                let row = self.rows.get(id)?;
                set.rank(&self.packed(board, row, id)).saturating_sub(radius)
            }
        };
        let total = set.len();
        let end = position.saturating_add(count).min(total);
        let entries: Vec<Entry> = if position < end {
            set.range(position..end).map(|key| self.entry(key.unpack(ranking))).collect()
        } else {
            Vec::new()
        };
        let first_rank = entries.first().map_or(0, |first| self.rank_of(board, &first.key));
        // The engine counts this source's changes itself (`RankEngine::version`).
        Some(Slice { entries, position, first_rank, total, stamp: None, walk: Some(self.walk()), skipped: None })
    }

    /// Where a walk beginning now begins.
    fn walk(&self) -> Walk {
        Walk { changes: self.applied.through }
    }

    /// Up to `count` entries after `key` that did not change since `walk`
    /// began.
    fn walk_after(&self, board: usize, key: BoardKey, walk: Walk, count: usize) -> Slice {
        let (ranking, set) = (self.rankings[board], &self.sets[board]);
        let since = walk.changes;
        let start = set.rank(&Packed::of(ranking, key).successor());
        let total = set.len();
        let mut entries = Vec::new();
        let mut skipped = Skipped { positions: Vec::new(), ranks: Vec::new(), stopped_after: None };
        let end = start.saturating_add(count).saturating_add(WALK_SCAN_LIMIT).min(total);
        if start < end {
            for (position, packed) in (start..end).zip(set.range(start..end)) {
                let key = packed.unpack(ranking);
                if self.rows.get(key.id).is_some_and(|row| row.changed() <= since) {
                    let rank = match entries.last() {
                        Some(Entry { key: last, .. }) if last.ties(&key) => skipped.ranks[entries.len() - 1],
                        _ => self.rank_of(board, &key),
                    };
                    entries.push(self.entry(key));
                    skipped.positions.push(position);
                    skipped.ranks.push(rank);
                    if entries.len() == count {
                        break;
                    }
                }
                if position + 1 == end && end < total {
                    skipped.stopped_after = Some(key);
                }
            }
        }
        let first_rank = skipped.ranks.first().copied().unwrap_or(0);
        Slice {
            entries,
            position: start,
            first_rank,
            total,
            stamp: None,
            walk: Some(self.walk()),
            skipped: Some(skipped),
        }
    }

    fn ranked(&self, board: usize, target: BoardPeriod, ids: &[i64]) -> Ranked {
        let entries: Vec<Entry> =
            ids.iter().filter_map(|id| self.rows.get(*id).map(|row| self.entry(row.key(board, *id)))).collect();
        rank_entries(target, entries, |entry| self.rank_of(board, &entry.key), self.sets[board].len())
    }

    /// Players on the group's boards.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.sets.first().map_or(0, KeySet::len)
    }
}

/// A player's row of the built-in boards: 24 bytes (the best score is at
/// most 1,000,000,000, the version fits 32 bits). A tombstone (a player
/// taken off the boards) has `best_at` [`UNLISTED`].
#[derive(Debug, Clone, Copy, Default)]
pub struct StandingRow {
    best: u32,
    version: u32,
    best_at: i64,
    total: i64,
}

/// The `best_at` of a tombstone: no real time is this early.
const UNLISTED: i64 = i64::MIN;

impl From<&Standing> for StandingRow {
    fn from(s: &Standing) -> Self {
        Self {
            best: u32::try_from(s.best.max(0)).unwrap_or(u32::MAX),
            version: u32::try_from(s.version.max(0)).unwrap_or(u32::MAX),
            best_at: if s.listed { s.best_at } else { UNLISTED },
            total: s.total,
        }
    }
}

/// How both built-in boards rank.
const BUILTIN_RANKING: Ranking = Ranking::by_score(Order::Desc);

/// The built-in boards' numbers in their group.
const BEST: usize = 0;
const TOTAL: usize = 1;

impl Row for StandingRow {
    fn version(&self) -> u32 {
        self.version
    }

    fn listed(&self) -> bool {
        self.best_at != UNLISTED
    }

    fn key(&self, board: usize, id: i64) -> BoardKey {
        match board {
            BEST => BoardKey::of(i64::from(self.best), self.best_at, id),
            _ => BoardKey::of(self.total, 0, id),
        }
    }
}

/// A player's entry on a custom board in one period.
#[derive(Debug, Clone, Default)]
pub struct EntryRow {
    score: i64,
    subscores: [i64; MAX_SUBSCORES],
    at: i64,
    version: u32,
    listed: bool,
    metadata: Option<Arc<str>>,
    changed: u64,
}

impl Row for EntryRow {
    fn version(&self) -> u32 {
        self.version
    }

    fn listed(&self) -> bool {
        self.listed
    }

    fn key(&self, _: usize, id: i64) -> BoardKey {
        BoardKey { score: self.score, subscores: self.subscores, at: self.at, id }
    }

    fn metadata(&self) -> Option<Arc<str>> {
        self.metadata.clone()
    }

    fn changed(&self) -> u64 {
        self.changed
    }
}

/// An entry of a custom board as a committed post (or a warm-up, or a
/// moderation) left it; not `listed` when it left the board (its post
/// removed, its player banned or erased).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryChange {
    pub board: BoardPeriod,
    pub key: BoardKey,
    pub version: i64,
    pub listed: bool,
    pub metadata: Option<Arc<str>>,
    /// The number of the period's change that last wrote the entry (see
    /// `board_entries.changed`).
    pub changed: i64,
}

impl EntryChange {
    fn row(&self) -> EntryRow {
        EntryRow {
            score: self.key.score,
            subscores: self.key.subscores,
            at: self.key.at,
            version: u32::try_from(self.version.max(0)).unwrap_or(u32::MAX),
            listed: self.listed,
            metadata: self.metadata.clone(),
            changed: u64::try_from(self.changed).unwrap_or(0),
        }
    }
}

/// One period of a custom board.
struct PeriodGroup {
    period: i64,
    group: Group<EntryRow>,
}

/// Every board this instance holds: the two built-ins, kept together (one
/// standing places a player on both), and the current period of each
/// custom board (ended periods are read from the database).
pub struct LocalBoards {
    builtin: Group<StandingRow>,
    custom: HashMap<i64, PeriodGroup>,
}

impl Default for LocalBoards {
    fn default() -> Self {
        Self { builtin: Group::new(vec![BUILTIN_RANKING; 2]), custom: HashMap::new() }
    }
}

fn builtin_index(board: Board) -> usize {
    match board {
        Board::Total => TOTAL,
        Board::Best | Board::Custom(_) => BEST,
    }
}

/// What a read of this instance's boards finds for a board and period.
enum Held<'a> {
    Builtin(usize),
    Custom(&'a Group<EntryRow>),
    /// A custom board period this instance holds nothing of: no post
    /// reached it yet (later periods than the one held), so it is empty.
    Empty,
}

impl LocalBoards {
    pub fn from_standings(rows: &[Standing]) -> Self {
        Self {
            builtin: Group::build(vec![BUILTIN_RANKING; 2], rows.iter().map(|s| (s.id, StandingRow::from(s)))),
            custom: HashMap::new(),
        }
    }

    /// Places a player on both built-in boards unless a newer state is there.
    pub fn apply(&mut self, s: &Standing) -> bool {
        self.builtin.apply(s.id, StandingRow::from(s))
    }

    /// Loads one period of a custom board (a warm-up): it becomes the period
    /// this instance holds of that board. `changes`: every change up to this
    /// number is in `entries`.
    pub fn load_period(&mut self, board: BoardPeriod, changes: i64, entries: &[EntryChange]) {
        let Board::Custom(number) = board.board else { return };
        let rows = entries.iter().map(|entry| (entry.key.id, entry.row()));
        let mut group = Group::build(vec![board.ranking], rows);
        group.applied.through = u64::try_from(changes).unwrap_or(0);
        self.custom.insert(number, PeriodGroup { period: board.period, group });
    }

    /// Places an entry of a custom board. An entry of a later period than
    /// the one held starts that period; one of an earlier period is for
    /// the database alone (ended periods are read from there).
    pub fn apply_entry(&mut self, change: &EntryChange) -> bool {
        let Board::Custom(number) = change.board.board else { return false };
        let held = self.custom.entry(number).or_insert_with(|| PeriodGroup {
            period: change.board.period,
            group: Group::new(vec![change.board.ranking]),
        });
        if change.board.period < held.period {
            return false;
        }
        if change.board.period > held.period {
            *held = PeriodGroup { period: change.board.period, group: Group::new(vec![change.board.ranking]) };
        }
        held.group.applied.note(u64::try_from(change.changed).unwrap_or(0));
        held.group.apply(change.key.id, change.row())
    }

    /// Forgets a custom board (deleted).
    pub fn forget(&mut self, number: i64) {
        self.custom.remove(&number);
    }

    fn held(&self, board: BoardPeriod) -> Held<'_> {
        match board.board {
            Board::Best | Board::Total => Held::Builtin(builtin_index(board.board)),
            Board::Custom(number) => match self.custom.get(&number) {
                Some(held) if held.period == board.period => Held::Custom(&held.group),
                _ => Held::Empty,
            },
        }
    }

    fn slice(&self, board: BoardPeriod, start: SliceStart, count: usize) -> Option<Slice> {
        match self.held(board) {
            Held::Builtin(index) => self.builtin.slice(index, start, count),
            Held::Custom(group) => group.slice(0, start, count),
            Held::Empty => match start {
                SliceStart::Around { .. } => None,
                _ => Some(Slice {
                    entries: Vec::new(),
                    position: 0,
                    first_rank: 0,
                    total: 0,
                    stamp: None,
                    walk: None,
                    skipped: None,
                }),
            },
        }
    }

    fn players(&self, board: BoardPeriod) -> usize {
        match self.held(board) {
            Held::Builtin(index) => self.builtin.sets[index].len(),
            Held::Custom(group) => group.sets[0].len(),
            Held::Empty => 0,
        }
    }

    fn rank_of(&self, board: BoardPeriod, key: &BoardKey) -> i64 {
        match self.held(board) {
            Held::Builtin(index) => self.builtin.rank_of(index, key),
            Held::Custom(group) => group.rank_of(0, key),
            Held::Empty => 1,
        }
    }

    fn ranked(&self, board: BoardPeriod, ids: &[i64]) -> Ranked {
        match self.held(board) {
            Held::Builtin(index) => self.builtin.ranked(index, board, ids),
            Held::Custom(group) => group.ranked(0, board, ids),
            Held::Empty => Ranked { entries: Vec::new(), total: 0 },
        }
    }

    /// Players on the built-in boards.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.builtin.len()
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

    async fn slice(&self, board: BoardPeriod, start: SliceStart, count: usize) -> Result<Option<Slice>, Infallible> {
        Ok(self.boards.read().await.slice(board, start, count))
    }

    async fn ranks_of_keys(&self, keys: &[(BoardPeriod, BoardKey)]) -> Result<Vec<ScoreRank>, Infallible> {
        let boards = self.boards.read().await;
        Ok(keys
            .iter()
            .map(|(board, key)| ScoreRank { rank: boards.rank_of(*board, key), players: boards.players(*board) as i64 })
            .collect())
    }

    async fn ranked(&self, board: BoardPeriod, ids: &[i64]) -> Result<Ranked, Infallible> {
        Ok(self.boards.read().await.ranked(board, ids))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn standing(id: i64, best: i64, best_at: i64, total: i64, version: i64) -> Standing {
        Standing { id, best, best_at, total, version, listed: true }
    }

    fn all_keys(boards: &LocalBoards, board: Board) -> Vec<BoardKey> {
        let slice = boards.slice(BoardPeriod::builtin(board), SliceStart::Offset(0), usize::MAX / 2);
        slice.map(|s| s.entries.into_iter().map(|e| e.key).collect()).unwrap_or_default()
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
        for board in Board::BUILTIN {
            assert_eq!(all_keys(&bulk, board), all_keys(&one_by_one, board));
        }
    }

    #[test]
    fn stale_updates_never_win() {
        let mut boards = LocalBoards::default();
        assert!(boards.apply(&standing(1, 50, 10, 80, 2)));
        assert!(!boards.apply(&standing(1, 30, 5, 30, 1)));
        assert_eq!(all_keys(&boards, Board::Total), [BoardKey::of(80, 0, 1)]);
        assert_eq!(boards.len(), 1);
    }

    #[test]
    fn a_player_taken_off_stays_off_until_a_newer_state() {
        let mut boards = LocalBoards::default();
        boards.apply(&standing(1, 50, 10, 80, 2));
        boards.apply(&standing(2, 40, 11, 40, 1));
        let banned = Standing { listed: false, ..standing(1, 50, 10, 80, 3) };
        assert!(boards.apply(&banned));
        assert_eq!(all_keys(&boards, Board::Best).iter().map(|k| k.id).collect::<Vec<_>>(), [2]);
        // A post recorded late, from before the ban, changes nothing.
        assert!(!boards.apply(&standing(1, 90, 12, 170, 2)));
        assert_eq!(boards.len(), 1);
        let around = boards.slice(BoardPeriod::builtin(Board::Best), SliceStart::Around { id: 1, radius: 1 }, 3);
        assert_eq!(around, None, "no window around a player who is off the board");
        // Unbanned: back where the scores put them.
        assert!(boards.apply(&standing(1, 50, 10, 80, 4)));
        assert_eq!(all_keys(&boards, Board::Best).iter().map(|k| k.id).collect::<Vec<_>>(), [1, 2]);
    }

    #[test]
    fn ids_beyond_the_dense_range_are_kept_too() {
        let mut boards = LocalBoards::default();
        let far = (DENSE_IDS as i64) * 4;
        boards.apply(&standing(far, 5, 1, 5, 1));
        boards.apply(&standing(2, 9, 1, 9, 1));
        assert_eq!(all_keys(&boards, Board::Best).iter().map(|k| k.id).collect::<Vec<_>>(), [2, far]);
        let around =
            boards.slice(BoardPeriod::builtin(Board::Best), SliceStart::Around { id: far, radius: 1 }, 3).unwrap();
        assert_eq!((around.position, around.first_rank), (0, 1));
    }

    /// An entry whose last post was removed leaves a tombstone; the
    /// player's next post makes a new entry at version 1 with a later
    /// change number, which shows at once (found by the integrity model
    /// test: it showed only after the change-number gap was healed); an
    /// older change arriving late still loses to the tombstone.
    #[test]
    fn an_entry_made_again_after_its_removal_shows_at_once() {
        let board = BoardPeriod {
            board: Board::Custom(1),
            ranking: crate::domain::Ranking::by_score(crate::domain::Order::Desc),
            period: 0,
        };
        let change = |score: i64, version: i64, changed: i64, listed: bool| EntryChange {
            board,
            key: BoardKey::of(score, 1, 7),
            version,
            listed,
            metadata: None,
            changed,
        };
        let mut boards = LocalBoards::default();
        assert!(boards.apply_entry(&change(50, 1, 1, true)));
        assert!(boards.apply_entry(&change(50, 2, 1, false)), "banned");
        assert!(boards.apply_entry(&change(50, 3, 1, true)), "unbanned");
        assert!(boards.apply_entry(&change(50, 4, 1, false)), "its post removed: a tombstone");
        assert!(!boards.apply_entry(&change(50, 3, 1, true)), "an older change loses to the tombstone");
        assert!(boards.apply_entry(&change(20, 1, 5, true)), "a new entry from the next post");
        let Held::Custom(group) = boards.held(board) else { panic!("the period is held") };
        assert_eq!(group.len(), 1);
        assert!(!boards.apply_entry(&change(50, 4, 1, false)), "the old tombstone again changes nothing");
    }

    /// A board period's rows cost O(its entries), never O(the highest id):
    /// a few players with ids spread up to 10M, posting one by one or
    /// loaded at once, take a few thousand rows of room (a vector indexed
    /// by id took 10M per board period: 2 GB for 20 boards).
    #[test]
    fn a_board_of_a_few_far_apart_players_costs_its_entries() {
        let board = BoardPeriod {
            board: Board::Custom(1),
            ranking: crate::domain::Ranking::by_score(crate::domain::Order::Desc),
            period: 0,
        };
        let change = |id: i64| EntryChange {
            board,
            key: BoardKey::of(id % 97, 1, id),
            version: 1,
            listed: true,
            metadata: None,
            changed: 0,
        };
        let ids: Vec<i64> = (1..=100).map(|i| i * 99_991).collect();
        let mut boards = LocalBoards::default();
        for id in &ids {
            boards.apply_entry(&change(*id));
        }
        let loaded = {
            let mut boards = LocalBoards::default();
            boards.load_period(board, 0, &ids.iter().map(|id| change(*id)).collect::<Vec<_>>());
            boards
        };
        for boards in [&boards, &loaded] {
            let Held::Custom(group) = boards.held(board) else { panic!("the period is held") };
            assert_eq!(group.len(), 100);
            assert!(group.rows.allocated() < 4_096, "{} rows of room for 100 entries", group.rows.allocated());
            assert_eq!(group.ranked(0, board, &ids).entries.len(), 100, "every entry is found again");
        }
        // Dense ids (the built-in boards' players) still sit in the vector.
        let dense = LocalBoards::from_standings(&(1..=5_000).map(|id| standing(id, 1, 1, 1, 1)).collect::<Vec<_>>());
        assert!(dense.builtin.rows.sparse.is_empty());
        assert_eq!(dense.builtin.rows.dense.len(), 5_001);
    }

    /// A measurement, not a test: `cargo test --release --lib -- --ignored
    /// --nocapture memory_of_many_small_boards` (figure in BENCHMARKS.md).
    #[test]
    #[ignore]
    fn memory_of_many_small_boards() {
        const BOARDS: i64 = 1_000;
        const PLAYERS: i64 = 100;
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let before = resident_bytes();
        let mut boards = LocalBoards::default();
        for number in 1..=BOARDS {
            let board = BoardPeriod {
                board: Board::Custom(number),
                ranking: crate::domain::Ranking::by_score(crate::domain::Order::Desc),
                period: 0,
            };
            for _ in 0..PLAYERS {
                let id = rng.gen_range(1..10_000_000);
                let key = BoardKey::of(rng.gen_range(0..1_000_000), 1, id);
                boards.apply_entry(&EntryChange { board, key, version: 1, listed: true, metadata: None, changed: 1 });
            }
        }
        let after = resident_bytes();
        println!(
            "{BOARDS} boards x {PLAYERS} players (ids up to 10M): {} MB resident set growth",
            (after - before) / 1_000_000
        );
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

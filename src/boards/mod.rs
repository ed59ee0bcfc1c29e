//! Custom boards: their definitions, their periods, and the in-process
//! catalog of them (`Registry`), a cache of the `boards` table.
//!
//! A board's periods: period 0 starts when the board is created; period k
//! starts at the k-th firing of its reset pattern after that, and runs
//! until the next firing (exclusive). Every instance computes the same
//! firings from the same pattern, so they agree on every boundary; the
//! period of a post is decided by the writer that commits it and stored
//! with it, so reads never guess.

mod schedule;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

pub use self::schedule::{parse_timezone, Schedule};
use crate::domain::{
    Board, BoardPeriod, Operator, Order, PartitionOf, PartitionValue, Partitioning, Ranking, Rewards, Subscore,
    Timestamp, Writers,
};

/// The default score range of a custom board (the contract's).
pub const DEFAULT_MIN_SCORE: i64 = 0;
pub const DEFAULT_MAX_SCORE: i64 = 1_000_000_000;
/// How far a board's score range may reach either way: JSON-safe integers
/// with room for sums.
pub const SCORE_LIMIT: i64 = 1_000_000_000_000_000;
pub const DEFAULT_ARCHIVE_PERIODS: i64 = 10;
pub const MAX_ARCHIVE_PERIODS: i64 = 1_000;
/// The longest `min_interval_ms` a board takes: a day.
pub const MAX_MIN_INTERVAL_MS: i64 = 86_400_000;

/// What a post to a board must pass besides its score range (v3 score
/// integrity). Unlike the rest of a board's definition, these change by
/// `PATCH`, on custom and built-in boards alike.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PostRules {
    /// The least time between two posts of one player to the board.
    pub min_interval_ms: Option<i64>,
    pub writers: Writers,
    /// A post better than this (in the board's order) is held for review.
    pub hold_beyond: Option<i64>,
    /// A post better than the player's entry by more than this factor is
    /// held for review (always > 1).
    pub hold_jump: Option<f64>,
    /// The custom boards every accepted or held post is also posted to (v4).
    pub feeds: Feeds,
}

/// The most boards a board feeds; `best` and `total` together feed no more.
pub const MAX_FEEDS: usize = 10;

/// The custom boards a board feeds, by number, in the order given (a
/// fixed array, so that rules stay `Copy`). A number whose board was
/// deleted stays until the next change and is skipped when posting: a
/// number is never given to another board.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Feeds {
    numbers: [i64; MAX_FEEDS],
    len: usize,
}

impl Feeds {
    /// `None` for more than [`MAX_FEEDS`] boards.
    pub fn new(numbers: &[i64]) -> Option<Self> {
        let mut feeds = Self::default();
        feeds.numbers.get_mut(..numbers.len())?.copy_from_slice(numbers);
        feeds.len = numbers.len();
        Some(feeds)
    }

    pub fn numbers(&self) -> &[i64] {
        &self.numbers[..self.len]
    }

    pub fn contains(&self, number: i64) -> bool {
        self.numbers().contains(&number)
    }

    /// These boards, then `other`'s not among them (what `/api/scores`
    /// feeds: `best`'s and `total`'s, each once); `None` past the maximum.
    pub fn union(&self, other: &Self) -> Option<Self> {
        let mut numbers = self.numbers().to_vec();
        numbers.extend(other.numbers().iter().filter(|n| !self.contains(**n)));
        Self::new(&numbers)
    }
}

/// A tournament's limits (v3), each per period: a resetting tournament
/// starts empty every period.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Tournament {
    /// Only the period's entrants may post.
    pub join_required: bool,
    /// How many may join a period.
    pub max_entrants: Option<i64>,
    /// Posts per player per period, held ones included.
    pub max_attempts: Option<i64>,
    /// Posts and joins are taken from here on (inclusive).
    pub starts_at: Option<Timestamp>,
    /// ... and until here (exclusive); the period in force ends here.
    pub ends_at: Option<Timestamp>,
}

impl Tournament {
    /// Whether posts and joins are taken at `t`.
    pub fn open_at(&self, t: Timestamp) -> bool {
        self.starts_at.is_none_or(|start| start <= t) && self.ends_at.is_none_or(|end| t < end)
    }

    /// Whether nothing can have been posted or joined by `t`: the window
    /// opens later.
    pub fn opens_after(&self, t: Timestamp) -> bool {
        self.starts_at.is_some_and(|start| t < start)
    }
}

/// A tournament's fields over its periods: those set at creation, then
/// the changes made by `PATCH`, each in force from a period on (a change
/// applies to periods that have not started).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Terms {
    at_creation: Tournament,
    /// (first period, fields), by first period ascending.
    changes: Vec<(i64, Tournament)>,
}

impl Terms {
    pub fn new(at_creation: Tournament, mut changes: Vec<(i64, Tournament)>) -> Self {
        changes.sort_by_key(|(from, _)| *from);
        Self { at_creation, changes }
    }

    /// The fields in force in period `index`.
    pub fn at(&self, index: i64) -> Tournament {
        self.changes.iter().rev().find(|(from, _)| *from <= index).map_or(self.at_creation, |(_, fields)| *fields)
    }

    /// The newest fields: what a new change starts from.
    pub fn latest(&self) -> Tournament {
        self.changes.last().map_or(self.at_creation, |(_, fields)| *fields)
    }

    /// The first change that comes into force after period `index`.
    pub fn change_after(&self, index: i64) -> Option<(i64, Tournament)> {
        self.changes.iter().find(|(from, _)| *from > index).copied()
    }

    /// These terms with `fields` from period `from` on (replacing the
    /// changes that had not come into force by then).
    pub fn with_change(&self, from: i64, fields: Tournament) -> Self {
        let mut changes: Vec<_> = self.changes.iter().filter(|(first, _)| *first < from).copied().collect();
        changes.push((from, fields));
        Self { at_creation: self.at_creation, changes }
    }
}

/// Which rule held a post for review.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HoldRule {
    Beyond,
    Jump,
}

impl HoldRule {
    /// The board field's name, as the review queue shows it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Beyond => "hold_beyond",
            Self::Jump => "hold_jump",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "hold_beyond" => Some(Self::Beyond),
            "hold_jump" => Some(Self::Jump),
            _ => None,
        }
    }
}

impl PostRules {
    /// The rule that holds `score` for review on a board of `order`, given
    /// the player's current entry there (none yet: `hold_beyond` alone).
    /// `desc`: beyond when score > hold_beyond, a jump when score > entry ×
    /// hold_jump; `asc`: score < hold_beyond, score < entry ÷ hold_jump.
    pub fn holds(&self, order: Order, score: i64, entry: Option<i64>) -> Option<HoldRule> {
        if self.hold_beyond.is_some_and(|beyond| order.better(score, beyond)) {
            return Some(HoldRule::Beyond);
        }
        let (jump, entry) = (self.hold_jump?, entry?);
        let (score, entry) = (score as f64, entry as f64);
        let jumped = match order {
            Order::Desc => score > entry * jump,
            Order::Asc => score < entry / jump,
        };
        jumped.then_some(HoldRule::Jump)
    }
}

/// One period of a board.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Period {
    pub index: i64,
    pub start: Timestamp,
    /// `None` for a board that never resets.
    pub end: Option<Timestamp>,
}

/// A custom board's definition (everything but the name, the rules and
/// the tournament's terms is fixed at creation).
#[derive(Debug, Clone, PartialEq)]
pub struct BoardSpec {
    /// The catalog's key (never reused).
    pub number: i64,
    pub id: String,
    pub name: String,
    pub order: Order,
    pub operator: Operator,
    /// The reset pattern as given, and its time zone's name.
    pub reset: Option<String>,
    pub timezone: String,
    pub archive_periods: i64,
    pub min_score: i64,
    pub max_score: i64,
    pub created_at: Timestamp,
    pub rules: PostRules,
    pub terms: Terms,
    /// A league's own board: its periods, posts and entries are the
    /// league's; it is not listed or served as a board.
    pub league: bool,
    /// What a close pays (v4; a close reads them from the database).
    pub rewards: Rewards,
    /// The tie-breakers after the score (v4; set at creation only).
    pub subscores: Vec<Subscore>,
    /// How posts split into partitions (v4 `partition_by`; set at creation only).
    pub partitioning: Option<Partitioning>,
    /// A partition's board and value (see [`CustomBoard::partition`]).
    pub partition_of: Option<PartitionOf>,
}

impl BoardSpec {
    pub fn board(&self) -> Board {
        Board::Custom(self.number)
    }

    pub fn period(&self, index: i64) -> BoardPeriod {
        BoardPeriod { board: self.board(), ranking: self.ranking(), period: index }
    }

    /// How the board orders its entries.
    pub fn ranking(&self) -> Ranking {
        let orders: Vec<Order> = self.subscores.iter().map(|subscore| subscore.order).collect();
        Ranking::with_subscores(self.order, &orders)
    }
}

/// A board of the catalog: its definition and its clock.
pub struct CustomBoard {
    pub spec: BoardSpec,
    /// Shared with the board's partitions: they have its periods.
    clock: Arc<PeriodClock>,
}

impl CustomBoard {
    /// A board whose periods are known up to `known` (its latest stored
    /// period, or period 0 at creation).
    pub fn new(spec: BoardSpec, known: Period) -> Result<Self, crate::error::ApiError> {
        let schedule = match &spec.reset {
            Some(pattern) => Some(Schedule::parse(pattern, parse_timezone(&spec.timezone)?)?),
            None => None,
        };
        let clock = PeriodClock::new(schedule, spec.terms.clone(), known, spec.archive_periods);
        Ok(Self { spec, clock: Arc::new(clock) })
    }

    /// This board's partition numbered `number` (v4): a board inside the
    /// board, stored and ranked under its own number, with the board's id,
    /// order, subscores and periods (its very clock). It has no rules,
    /// feeds or rewards: a post is judged once, on the board, and bands
    /// apply to the whole board.
    pub fn partition(&self, number: i64, value: PartitionValue) -> Self {
        let spec = BoardSpec {
            number,
            rules: PostRules::default(),
            rewards: Rewards::default(),
            partitioning: None,
            partition_of: Some(PartitionOf { board: self.spec.number, value }),
            ..self.spec.clone()
        };
        Self { spec, clock: Arc::clone(&self.clock) }
    }

    /// A partition's value; `None` for a board.
    pub fn partition_value(&self) -> Option<&PartitionValue> {
        self.spec.partition_of.as_ref().map(|of| &of.value)
    }

    /// The tournament's fields in force in period `index`.
    pub fn tournament(&self, index: i64) -> Tournament {
        self.spec.terms.at(index)
    }

    /// The first period after the one in force at `now` that starts at
    /// `t` or later; `None` when the periods end before (an endless one).
    pub fn first_period_from(&self, now: Timestamp, t: Timestamp) -> Option<i64> {
        self.clock.first_starting_from(now, t)
    }

    /// The period in force at `t`.
    pub fn period_at(&self, t: Timestamp) -> Period {
        self.clock.at(t)
    }

    /// The periods this instance has seen begin, newest first (at most
    /// `archive_periods + 1`: the current one and the kept ones).
    pub fn recent_periods(&self) -> Vec<Period> {
        self.clock.recent(None)
    }

    /// The periods this instance has seen begin after period `index`,
    /// newest first: what a keeper that recorded up to `index` has left to
    /// record (one a tick on a board that resets every second, however many
    /// periods it keeps).
    pub fn periods_after(&self, index: i64) -> Vec<Period> {
        self.clock.recent(Some(index))
    }
}

/// The periods of one board: computed forward from a known period, one
/// boundary at a time, so that every instance walks the same chain. A
/// boundary is a firing of the reset pattern, or a tournament's `ends_at`
/// (the one in force in the period that ends there).
struct PeriodClock {
    schedule: Option<Schedule>,
    terms: Terms,
    state: Mutex<VecDeque<Period>>,
    /// Periods remembered besides the current one.
    keep: usize,
}

impl PeriodClock {
    fn new(schedule: Option<Schedule>, terms: Terms, known: Period, archive_periods: i64) -> Self {
        let keep = usize::try_from(archive_periods).unwrap_or(0);
        let clock = Self { schedule, terms, state: Mutex::new(VecDeque::new()), keep };
        let known = Period { end: clock.end_of(known.index, known.start), ..known };
        if let Ok(mut periods) = clock.state.lock() {
            periods.push_front(known);
        }
        clock
    }

    /// Where period `index`, starting at `start`, ends: the next firing,
    /// or its `ends_at` if that comes first.
    fn end_of(&self, index: i64, start: Timestamp) -> Option<Timestamp> {
        let firing = self.schedule.as_ref().and_then(|schedule| schedule.next_after(start));
        match self.terms.at(index).ends_at {
            Some(ends_at) if ends_at > start => Some(firing.map_or(ends_at, |firing| firing.min(ends_at))),
            _ => firing,
        }
    }

    fn at(&self, t: Timestamp) -> Period {
        let Ok(mut periods) = self.state.lock() else {
            // A poisoned clock cannot advance; the newest known period stands.
            return Period { index: 0, start: t, end: None };
        };
        loop {
            let Some(current) = periods.front().copied() else { return Period { index: 0, start: t, end: None } };
            match current.end {
                Some(end) if end <= t => {
                    let index = current.index + 1;
                    periods.push_front(Period { index, start: end, end: self.end_of(index, end) });
                    // One ended period more than kept: see below.
                    periods.truncate(self.keep + 2);
                }
                // Another caller with a later time may have moved the clock
                // past `t` already (a batch takes its time a moment before
                // it asks): `t` is in the period that had begun by then.
                _ => return periods.iter().find(|period| period.start <= t).copied().unwrap_or(current),
            }
        }
    }

    /// See [`CustomBoard::first_period_from`]; the clock stays where it is.
    fn first_starting_from(&self, now: Timestamp, t: Timestamp) -> Option<i64> {
        let mut period = self.at(now);
        loop {
            let start = period.end?;
            let index = period.index + 1;
            if start >= t {
                return Some(index);
            }
            period = Period { index, start, end: self.end_of(index, start) };
        }
    }

    /// The same periods under new terms: the current one's end follows
    /// them (ended ones are history).
    fn with_terms(&self, terms: Terms) -> Self {
        let mut periods = self.state.lock().map(|periods| periods.clone()).unwrap_or_default();
        let clock =
            Self { schedule: self.schedule.clone(), terms, state: Mutex::new(VecDeque::new()), keep: self.keep };
        if let Some(current) = periods.front_mut() {
            current.end = clock.end_of(current.index, current.start);
        }
        if let Ok(mut state) = clock.state.lock() {
            *state = periods;
        }
        clock
    }

    /// The remembered periods (the current and the kept ones), newest
    /// first; only those after period `after`, if given.
    fn recent(&self, after: Option<i64>) -> Vec<Period> {
        let Ok(periods) = self.state.lock() else { return Vec::new() };
        let newer = |period: &&Period| after.is_none_or(|after| period.index > after);
        periods.iter().take(self.keep + 1).take_while(newer).copied().collect()
    }
}

/// The custom boards this instance knows, by id and by number, and the
/// rules of the built-in ones.
#[derive(Default)]
pub struct Registry {
    boards: RwLock<Catalog>,
    builtin_rules: RwLock<HashMap<Board, PostRules>>,
    /// The numbers reads gave partitions no post opened (see
    /// [`Registry::unopened_partition`]).
    unopened: Mutex<HashMap<(i64, PartitionValue), i64>>,
    /// Bumped by every change to the boards and partitions, under their
    /// lock: an answer remembered by its address holds only while this is
    /// unchanged (`cache::AddressTerm`).
    changes: AtomicU64,
}

/// Unopened partitions' numbers remembered at most (beyond, they are
/// forgotten and numbered again).
const UNOPENED_KEPT: usize = 10_000;

#[derive(Default)]
struct Catalog {
    /// Boards (not their partitions, which share their board's id).
    by_id: HashMap<String, Arc<CustomBoard>>,
    /// Boards and partitions.
    by_number: HashMap<i64, Arc<CustomBoard>>,
    /// Partitions, by their board's number and their value.
    partitions: HashMap<(i64, PartitionValue), Arc<CustomBoard>>,
}

/// A partition as stored: its number, its board's and its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionEntry {
    pub number: i64,
    pub of: PartitionOf,
}

impl Catalog {
    fn put(&mut self, board: Arc<CustomBoard>) {
        match &board.spec.partition_of {
            Some(of) => {
                self.partitions.insert((of.board, of.value.clone()), Arc::clone(&board));
            }
            None => {
                if let Some(old) = self.by_id.insert(board.spec.id.clone(), Arc::clone(&board)) {
                    if old.spec.number != board.spec.number {
                        self.forget_number(old.spec.number);
                    }
                }
            }
        }
        self.by_number.insert(board.spec.number, board);
    }

    fn forget_number(&mut self, number: i64) {
        self.by_number.remove(&number);
        self.by_number.retain(|_, board| board.spec.partition_of.as_ref().is_none_or(|of| of.board != number));
        self.partitions.retain(|(board, _), _| *board != number);
    }

    /// A board's partitions again from the board as it now is (its clock,
    /// its definition).
    fn derive_partitions(&mut self, board: &CustomBoard) {
        let number = board.spec.number;
        let mine: Vec<PartitionEntry> = self
            .partitions
            .values()
            .filter_map(|p| p.spec.partition_of.clone().map(|of| PartitionEntry { number: p.spec.number, of }))
            .filter(|entry| entry.of.board == number)
            .collect();
        for entry in mine {
            self.put(Arc::new(board.partition(entry.number, entry.of.value)));
        }
    }
}

impl Registry {
    pub fn get(&self, id: &str) -> Option<Arc<CustomBoard>> {
        self.boards.read().ok()?.by_id.get(id).cloned()
    }

    pub fn by_number(&self, number: i64) -> Option<Arc<CustomBoard>> {
        self.boards.read().ok()?.by_number.get(&number).cloned()
    }

    /// A board's partition of `value`, if a post opened it.
    pub fn partition(&self, board: i64, value: &PartitionValue) -> Option<Arc<CustomBoard>> {
        self.boards.read().ok()?.partitions.get(&(board, value.clone())).cloned()
    }

    /// A partition no post opened yet, as a read names it: empty in every
    /// period. Its number is negative (no stored board has one), and given
    /// to no other (the page caches keep its answers apart from others').
    pub fn unopened_partition(&self, board: &CustomBoard, value: PartitionValue) -> CustomBoard {
        static NEXT: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(-1);
        let fresh = || NEXT.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        let number = match self.unopened.lock() {
            Ok(mut numbers) => {
                if numbers.len() >= UNOPENED_KEPT {
                    numbers.clear();
                }
                *numbers.entry((board.spec.number, value.clone())).or_insert_with(fresh)
            }
            Err(_) => fresh(),
        };
        board.partition(number, value)
    }

    /// Every board (not their partitions), ordered by id.
    pub fn all(&self) -> Vec<Arc<CustomBoard>> {
        let Ok(catalog) = self.boards.read() else { return Vec::new() };
        let mut boards: Vec<Arc<CustomBoard>> = catalog.by_id.values().cloned().collect();
        boards.sort_by(|a, b| a.spec.id.cmp(&b.spec.id));
        boards
    }

    /// Every board and partition, by number: what the rank engine holds
    /// and the keeper records periods of.
    pub fn all_ranked(&self) -> Vec<Arc<CustomBoard>> {
        let Ok(catalog) = self.boards.read() else { return Vec::new() };
        let mut boards: Vec<Arc<CustomBoard>> = catalog.by_number.values().cloned().collect();
        boards.sort_by_key(|board| board.spec.number);
        boards
    }

    /// Adds a board, or a partition (its board known already).
    pub fn insert(&self, board: CustomBoard) -> Arc<CustomBoard> {
        let board = Arc::new(board);
        if let Ok(mut catalog) = self.boards.write() {
            catalog.put(Arc::clone(&board));
            self.changed();
        }
        board
    }

    /// A board's new name, rules and terms, keeping its clock.
    pub fn amend(&self, id: &str, name: &str, rules: PostRules, terms: Terms, rewards: Rewards) {
        if let Ok(mut catalog) = self.boards.write() {
            let Some(old) = catalog.by_id.get(id).cloned() else { return };
            let renamed = Arc::new(CustomBoard {
                clock: Arc::new(old.clock.with_terms(terms.clone())),
                spec: BoardSpec { name: name.to_owned(), rules, terms, rewards, ..old.spec.clone() },
            });
            catalog.put(Arc::clone(&renamed));
            catalog.derive_partitions(&renamed);
            self.changed();
        }
    }

    /// The rules of a built-in board (the defaults until set).
    pub fn builtin_rules(&self, board: Board) -> PostRules {
        self.builtin_rules.read().ok().and_then(|rules| rules.get(&board).copied()).unwrap_or_default()
    }

    pub fn set_builtin_rules(&self, board: Board, rules: PostRules) {
        if let Ok(mut all) = self.builtin_rules.write() {
            all.insert(board, rules);
        }
    }

    /// The ids of the boards `feeds` names that still exist, in its order.
    pub fn ids_of(&self, feeds: &Feeds) -> Vec<String> {
        feeds.numbers().iter().filter_map(|number| self.by_number(*number)).map(|board| board.spec.id.clone()).collect()
    }

    /// The feeds of `/api/scores`: `best`'s, then `total`'s not among them.
    pub fn builtin_feeds(&self) -> Feeds {
        let [best, total] = Board::BUILTIN.map(|board| self.builtin_rules(board).feeds);
        best.union(&total).unwrap_or(best)
    }

    pub fn remove(&self, id: &str) {
        if let Ok(mut catalog) = self.boards.write() {
            if let Some(old) = catalog.by_id.remove(id) {
                catalog.forget_number(old.spec.number);
            }
            self.changed();
        }
    }

    /// Replaces the catalog with `boards` and their `partitions` (a reload
    /// from the database), keeping the clocks of boards that did not change.
    pub fn replace(
        &self,
        boards: Vec<CustomBoard>,
        partitions: Vec<PartitionEntry>,
        builtin_rules: HashMap<Board, PostRules>,
    ) {
        if let Ok(mut rules) = self.builtin_rules.write() {
            *rules = builtin_rules;
        }
        let Ok(mut catalog) = self.boards.write() else { return };
        let mut fresh = Catalog::default();
        for board in boards {
            let board = match catalog.by_number.get(&board.spec.number) {
                Some(old) if old.spec == board.spec => Arc::clone(old),
                _ => Arc::new(board),
            };
            fresh.put(board);
        }
        for entry in partitions {
            // (A partition whose board is gone goes with it.)
            let Some(board) = fresh.by_number.get(&entry.of.board).cloned() else { continue };
            let kept = catalog.by_number.get(&entry.number).filter(|old| Arc::ptr_eq(&old.clock, &board.clock));
            let partition = kept.cloned().unwrap_or_else(|| Arc::new(board.partition(entry.number, entry.of.value)));
            fresh.put(partition);
        }
        *catalog = fresh;
        self.changed();
    }

    /// How many changes the boards and partitions have had.
    pub fn changes(&self) -> u64 {
        self.changes.load(Ordering::Acquire)
    }

    /// Whether the catalog still holds this very board (or partition) for
    /// its id (or value): not one renamed, amended, deleted or replaced
    /// since it was looked up, nor a partition no post opened.
    pub fn still_holds(&self, board: &Arc<CustomBoard>) -> bool {
        let Ok(catalog) = self.boards.read() else { return false };
        let held = match &board.spec.partition_of {
            Some(of) => catalog.partitions.get(&(of.board, of.value.clone())),
            None => catalog.by_id.get(&board.spec.id),
        };
        held.is_some_and(|held| Arc::ptr_eq(held, board))
    }

    /// Called with the catalog's lock held.
    fn changed(&self) {
        self.changes.fetch_add(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(reset: Option<&str>, archive_periods: i64) -> BoardSpec {
        BoardSpec {
            number: 1,
            id: "b".into(),
            name: "B".into(),
            order: Order::Desc,
            operator: Operator::Best,
            reset: reset.map(str::to_owned),
            timezone: "UTC".into(),
            archive_periods,
            min_score: 0,
            max_score: 10,
            created_at: Timestamp::from_millis(1_000),
            rules: PostRules::default(),
            terms: Terms::default(),
            league: false,
            rewards: Rewards::default(),
            subscores: Vec::new(),
            partitioning: None,
            partition_of: None,
        }
    }

    #[test]
    fn a_partition_is_registered_apart_from_boards_and_goes_with_its_board() {
        let registry = Registry::default();
        let start = Period { index: 0, start: Timestamp::from_millis(1_000), end: None };
        let board = registry.insert(CustomBoard::new(spec(Some("* * * * * *"), 3), start).unwrap());
        let de = PartitionValue::parse_str("DE").unwrap();
        let partition = registry.insert(board.partition(7, de.clone()));
        assert_eq!(partition.spec.id, "b", "a partition answers with its board's id");
        assert!(Arc::ptr_eq(&partition.clock, &board.clock), "and has its very periods");
        assert!(partition.spec.rules == PostRules::default() && partition.spec.partitioning.is_none());
        assert_eq!(registry.get("b").map(|b| b.spec.number), Some(1), "the id still names the board");
        assert_eq!(registry.all().len(), 1, "listed: boards only");
        assert_eq!(registry.all_ranked().len(), 2, "ranked: partitions too");
        assert_eq!(registry.partition(1, &de).map(|p| p.spec.number), Some(7));
        assert_eq!(registry.by_number(7).and_then(|p| p.partition_value().cloned()), Some(de.clone()));

        // A change to the board is its partitions' too (their clock).
        registry.amend("b", "B2", PostRules::default(), Terms::default(), Rewards::default());
        let amended = registry.get("b").unwrap();
        assert!(Arc::ptr_eq(&registry.partition(1, &de).unwrap().clock, &amended.clock));
        assert_eq!(registry.partition(1, &de).unwrap().spec.name, "B2");

        // A reload keeps them; one whose board is gone is left out.
        let reloaded = CustomBoard::new(spec(Some("* * * * * *"), 3), start).unwrap();
        let orphan = PartitionEntry { number: 9, of: PartitionOf { board: 5, value: de.clone() } };
        let kept = PartitionEntry { number: 7, of: PartitionOf { board: 1, value: de.clone() } };
        registry.replace(vec![reloaded], vec![kept, orphan], HashMap::new());
        assert_eq!(registry.partition(1, &de).map(|p| p.spec.number), Some(7));
        assert!(registry.by_number(9).is_none());

        // Unopened ones: numbers no stored board has, one per value, kept.
        let fr = PartitionValue::parse_str("FR").unwrap();
        let board = registry.get("b").unwrap();
        let a = registry.unopened_partition(&board, fr.clone()).spec.number;
        let b = registry.unopened_partition(&board, de.clone()).spec.number;
        assert!(a < 0 && b < 0 && a != b);
        assert_eq!(registry.unopened_partition(&board, fr).spec.number, a);

        registry.remove("b");
        assert!(registry.by_number(7).is_none() && registry.partition(1, &de).is_none());
    }

    #[test]
    fn periods_start_at_creation_and_at_each_firing() {
        let created = Timestamp::from_millis(1_796_112_002_500); // 2026-12-01T08:00:02.500Z
        let start = Period { index: 0, start: created, end: None };
        let board =
            CustomBoard::new(BoardSpec { created_at: created, ..spec(Some("*/5 * * * * *"), 2) }, start).unwrap();
        let first = board.period_at(created);
        assert_eq!(
            (first.index, first.start, first.end),
            (0, created, Some(Timestamp::from_millis(1_796_112_005_000)))
        );
        // Just before the firing: still period 0; at it: period 1.
        assert_eq!(board.period_at(Timestamp::from_millis(1_796_112_004_999)).index, 0);
        let second = board.period_at(Timestamp::from_millis(1_796_112_005_000));
        assert_eq!((second.index, second.start.millis()), (1, 1_796_112_005_000));
        // Several firings at once; the clock remembers the current and two more.
        let later = board.period_at(Timestamp::from_millis(1_796_112_021_000));
        assert_eq!(
            (later.index, later.start.millis(), later.end.map(Timestamp::millis)),
            (4, 1_796_112_020_000, Some(1_796_112_025_000))
        );
        let recent: Vec<i64> = board.recent_periods().iter().map(|p| p.index).collect();
        assert_eq!(recent, [4, 3, 2]);
    }

    /// Found by a bench run: a post taken at x.996 s was counted in the
    /// period that began at x+1 s, because a reader had moved the clock on
    /// between the batch taking its time and asking for the period.
    #[test]
    fn a_time_before_the_latest_firing_stays_in_its_period() {
        let created = Timestamp::from_millis(1_796_112_002_500);
        let start = Period { index: 0, start: created, end: None };
        // No archive at all: the period just ended is still known.
        let board = CustomBoard::new(BoardSpec { created_at: created, ..spec(Some("* * * * * *"), 0) }, start).unwrap();
        assert_eq!(board.period_at(Timestamp::from_millis(1_796_112_005_001)).index, 3);
        assert_eq!(board.period_at(Timestamp::from_millis(1_796_112_004_996)).index, 2);
        assert_eq!(board.period_at(Timestamp::from_millis(1_796_112_005_000)).index, 3);
        assert_eq!(board.recent_periods().len(), 1, "only the current period is kept");
    }

    /// A board that resets every second and keeps 1,000 periods: after the
    /// first tick, each tick has one period to record, not a thousand.
    #[test]
    fn each_tick_of_a_per_second_board_has_one_new_period_to_record() {
        let created = Timestamp::from_millis(1_796_112_000_000);
        let start = Period { index: 0, start: created, end: None };
        let board =
            CustomBoard::new(BoardSpec { created_at: created, ..spec(Some("* * * * * *"), 1_000) }, start).unwrap();
        let current = board.period_at(Timestamp::from_millis(1_796_112_000_000 + 2_000_000)).index;
        assert_eq!(board.recent_periods().len(), 1_001);
        assert_eq!(board.periods_after(current - 1).len(), 1);
        board.period_at(Timestamp::from_millis(1_796_112_000_000 + 2_001_000));
        let new: Vec<i64> = board.periods_after(current).iter().map(|period| period.index).collect();
        assert_eq!(new, [current + 1]);
    }

    #[test]
    fn posts_are_held_beyond_a_bound_or_for_a_jump_in_the_boards_order() {
        let rules = PostRules { hold_beyond: Some(1_000), hold_jump: Some(2.0), ..PostRules::default() };
        assert_eq!(rules.holds(Order::Desc, 1_001, None), Some(HoldRule::Beyond));
        assert_eq!(rules.holds(Order::Desc, 1_000, None), None, "not better than the bound");
        assert_eq!(rules.holds(Order::Desc, 900, None), None, "no entry: the bound alone");
        assert_eq!(rules.holds(Order::Desc, 201, Some(100)), Some(HoldRule::Jump));
        assert_eq!(rules.holds(Order::Desc, 200, Some(100)), None, "exactly the factor is not more");
        // Lower is better: beyond is below the bound, a jump divides.
        assert_eq!(rules.holds(Order::Asc, 999, None), Some(HoldRule::Beyond));
        assert_eq!(rules.holds(Order::Asc, 49_999, Some(100_000)), Some(HoldRule::Jump));
        assert_eq!(rules.holds(Order::Asc, 50_000, Some(100_000)), None);
        assert_eq!(PostRules::default().holds(Order::Desc, i64::MAX, Some(0)), None);
    }

    #[test]
    fn a_tournament_period_ends_at_its_end_whichever_comes_first() {
        let created = Timestamp::from_millis(1_796_112_000_000); // 08:00:00
        let start = Period { index: 0, start: created, end: None };
        let end = Timestamp::from_millis(1_796_112_090_000); // 08:01:30
        let ends_at = Some(end);
        let tournament = Tournament { ends_at, ..Tournament::default() };
        // No reset: period 0 ends at ends_at; period 1 never ends.
        let board =
            CustomBoard::new(BoardSpec { terms: Terms::new(tournament, vec![]), ..spec(None, 10) }, start).unwrap();
        assert_eq!(board.period_at(created).end, ends_at);
        let after = board.period_at(Timestamp::from_millis(1_796_112_090_000));
        assert_eq!((after.index, after.start, after.end), (1, end, None));
        // A reset every minute: 08:01 as usual, then 08:01:30 ends the
        // period early, and the next one runs to the next firing.
        let terms = Terms::new(tournament, vec![]);
        let board = CustomBoard::new(BoardSpec { terms, ..spec(Some("0 * * * * *"), 10) }, start).unwrap();
        let second = board.period_at(Timestamp::from_millis(1_796_112_061_000));
        assert_eq!((second.index, second.end), (1, ends_at));
        let third = board.period_at(Timestamp::from_millis(1_796_112_095_000));
        assert_eq!((third.index, third.start, third.end.map(Timestamp::millis)), (2, end, Some(1_796_112_120_000)));
        assert!(!tournament.open_at(third.start) && tournament.open_at(created));
    }

    /// A change by `PATCH` from period 2 on: period 1 keeps the end it had,
    /// period 2 ends at the new `ends_at`, and the clock walks the same
    /// chain when it resumes from a stored period (another instance).
    #[test]
    fn changed_terms_move_only_the_periods_they_are_in_force_in() {
        let created = Timestamp::from_millis(1_796_112_000_000); // 08:00:00
        let start = Period { index: 0, start: created, end: None };
        let every_minute = BoardSpec { created_at: created, ..spec(Some("0 * * * * *"), 10) };
        let board = CustomBoard::new(every_minute.clone(), start).unwrap();
        let now = Timestamp::from_millis(1_796_112_030_000); // 08:00:30, in period 0
                                                             // The next period starting at least 5 s from now is period 1 (08:01).
        assert_eq!(board.first_period_from(now, Timestamp::from_millis(1_796_112_035_000)), Some(1));
        // ... and at least 45 s from now, period 2 (08:02).
        assert_eq!(board.first_period_from(now, Timestamp::from_millis(1_796_112_075_000)), Some(2));
        let ends_at = Timestamp::from_millis(1_796_112_150_000); // 08:02:30
        let changed = Tournament { ends_at: Some(ends_at), max_attempts: Some(3), ..Tournament::default() };
        let terms = every_minute.terms.with_change(2, changed);
        assert_eq!((terms.at(1), terms.at(2), terms.latest()), (Tournament::default(), changed, changed));
        assert_eq!(terms.change_after(0), Some((2, changed)));
        let registry = Registry::default();
        registry.insert(CustomBoard::new(every_minute.clone(), start).unwrap());
        registry.get("b").unwrap().period_at(now);
        registry.amend("b", "B", PostRules::default(), terms.clone(), Rewards::default());
        let board = registry.get("b").unwrap();
        let ends: Vec<_> = [60_500, 120_500, 150_500]
            .map(|s| board.period_at(Timestamp::from_millis(1_796_112_000_000 + s)))
            .map(|p| (p.index, p.end.map(Timestamp::millis)))
            .to_vec();
        assert_eq!(ends, [(1, Some(1_796_112_120_000)), (2, Some(1_796_112_150_000)), (3, Some(1_796_112_180_000))]);
        // Resumed from period 1 as stored: the same chain.
        let stored = Period { index: 1, start: Timestamp::from_millis(1_796_112_060_000), end: None };
        let resumed = CustomBoard::new(BoardSpec { terms, ..every_minute }, stored).unwrap();
        assert_eq!(resumed.period_at(Timestamp::from_millis(1_796_112_150_500)).start, ends_at);
        // A period that never ends has no period after it.
        let endless = CustomBoard::new(spec(None, 10), start).unwrap();
        assert_eq!(endless.first_period_from(now, now), None);
    }

    #[test]
    fn a_board_without_reset_has_one_endless_period() {
        let board =
            CustomBoard::new(spec(None, 10), Period { index: 0, start: Timestamp::from_millis(1_000), end: None })
                .unwrap();
        let period = board.period_at(Timestamp::from_millis(9_999_999_999));
        assert_eq!((period.index, period.end), (0, None));
    }
}

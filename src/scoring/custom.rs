//! A batch's posts to custom boards: the boards (locked against deletion),
//! each player's entry in the period in force, the posts' log, and the
//! period's player count.
//!
//! The period of a post is decided here, from the batch's commit time and
//! the board's clock, and stored with the post and its entry: every
//! instance reads the same answer afterwards.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use sqlx::AnyConnection;

use super::builtin::Players;
use super::holds::{self, Held};
use super::{Answer, BatchError, Item, Pending, Post, Target};
use crate::boards::{CustomBoard, HoldRule, Period};
use crate::config::PlantedFault;
use crate::domain::{Metadata, Operator, PostStatus, Timestamp, MAX_SUBSCORES};
use crate::error::ErrorCode;
use crate::rank::{EntryChange, RankEngine, ScoreRank};
use crate::store::{EntryRow, EntryWrite, NewBoardPost, NewHold, PeriodPlayers, Store};
use crate::views::{
    subscores_of, BoardScoreResult, BoardScoreView, Metadata as MetadataView, PeriodView, RankingEntry,
};

/// What the batch locked for its posts to custom boards.
pub(super) struct Locked {
    /// The boards that still exist, and the period in force for each.
    periods: HashMap<i64, Period>,
    /// Display names of the posting players, from their locked rows.
    names: HashMap<i64, String>,
    /// The entries of the posting players before the batch, by board and player.
    entries: HashMap<(i64, i64), EntryRow>,
    /// Tournaments: the posting players who joined the period in force, by board.
    entrants: HashMap<i64, HashSet<i64>>,
    /// Tournaments with `max_attempts`: each posting player's posts in the
    /// period so far, by board and player (the batch's own counted as admitted).
    attempts: HashMap<(i64, i64), i64>,
    /// Partitioned boards the batch posts to a partition of, by number.
    partitions: HashMap<i64, OpenPartitions>,
}

/// A partitioned board's partitions with entries in the period in force,
/// as the batch finds them (under the board's period lock: exact across
/// instances) and opens more.
#[derive(Default)]
struct OpenPartitions {
    /// Of the batch's partitions, those with entries (or taken by the batch).
    open: HashSet<i64>,
    /// How many the period has; read only when one of the batch's is new.
    count: Option<i64>,
}

/// The entries a committed batch changed, with their period's end.
#[derive(Default)]
pub(super) struct Changed {
    pub changes: Vec<(EntryChange, Option<Timestamp>)>,
    /// Review items the batch queued (not the fed posts held with their original).
    pub queued: u64,
}

fn custom_target(post: &Post) -> Option<&Arc<CustomBoard>> {
    match &post.target {
        Target::Custom { board } => Some(board),
        Target::Builtin => None,
    }
}

/// Locks the boards of the batch's custom posts (share: other writers
/// pass, a deletion waits), then each player's entry in the period in
/// force, board by board in player order.
pub(super) async fn lock(
    store: &Store,
    conn: &mut AnyConnection,
    batch: &[Item<'_>],
    locked: &Players,
    now: Timestamp,
    fault: Option<PlantedFault>,
) -> Result<Locked, BatchError> {
    let mut boards: HashMap<i64, &Arc<CustomBoard>> = HashMap::new();
    let mut players: HashMap<i64, Vec<i64>> = HashMap::new();
    for job in batch {
        if let Some(board) = custom_target(job.post) {
            boards.insert(board.spec.number, board);
            players.entry(board.spec.number).or_default().push(job.post.user_id);
        }
    }
    if boards.is_empty() {
        return Ok(Locked {
            periods: HashMap::new(),
            names: HashMap::new(),
            entries: HashMap::new(),
            entrants: HashMap::new(),
            attempts: HashMap::new(),
            partitions: HashMap::new(),
        });
    }
    let mut numbers: Vec<i64> = boards.keys().copied().collect();
    numbers.sort_unstable();
    let existing = store.lock_boards(conn, &numbers).await?;
    let names = players.values().flatten().map(|id| (*id, locked.display_name(*id).to_owned())).collect();
    let mut periods = HashMap::new();
    let mut entries = HashMap::new();
    let mut entrants = HashMap::new();
    let mut attempts = HashMap::new();
    // Every board's period in force, and its posting players.
    let mut locking: Vec<(i64, Period)> = Vec::new();
    let mut posting: Vec<((i64, i64), Vec<i64>)> = Vec::new();
    for number in existing {
        let Some(board) = boards.get(&number) else { continue };
        let period = match fault {
            // The bench's tests plant this bug: the period before the one in force.
            Some(PlantedFault::WrongPeriod) => board.recent_periods().get(1).copied().unwrap_or(board.period_at(now)),
            _ => board.period_at(now),
        };
        let mut ids = players.get_mut(&number).map(std::mem::take).unwrap_or_default();
        ids.sort_unstable();
        ids.dedup();
        locking.push((number, period));
        posting.push(((number, period.index), ids));
        periods.insert(number, period);
    }
    // The periods' rows in board order, then their entries: a statement
    // each for all the batch's boards (a post fed to three partitioned
    // boards touches seven).
    store.lock_periods(conn, &locking).await?;
    for entry in store.entries_for_update_in(conn, &posting).await? {
        entries.insert((entry.board, entry.user_id), entry);
    }
    for ((number, period), ids) in &posting {
        // Under the period's row, which joins take too: exact across instances.
        let tournament = boards[number].tournament(*period);
        if tournament.join_required {
            entrants.insert(*number, store.entrants_among(conn, *number, *period, ids).await?);
        }
        if tournament.max_attempts.is_some() {
            for (user_id, made) in store.attempts_among(conn, *number, *period, ids).await? {
                attempts.insert((*number, user_id), made);
            }
        }
    }
    // Each partitioned board's partitions the batch posts to, after every
    // period is locked (the board's first: its number is lower).
    let mut partitions: HashMap<i64, OpenPartitions> = HashMap::new();
    let mut numbers_of: HashMap<i64, Vec<i64>> = HashMap::new();
    for board in boards.values() {
        if let Some(of) = &board.spec.partition_of {
            numbers_of.entry(of.board).or_default().push(board.spec.number);
        }
    }
    for (board, numbers) in numbers_of {
        let Some(period) = periods.get(&board) else { continue };
        let open: HashSet<i64> =
            store.partitions_with_entries(conn, &numbers, period.index).await?.into_iter().collect();
        let count = if numbers.iter().all(|number| open.contains(number)) {
            None
        } else {
            Some(store.count_partitions_with_entries(conn, board, period.index).await?)
        };
        partitions.insert(board, OpenPartitions { open, count });
    }
    Ok(Locked { periods, names, entries, entrants, attempts, partitions })
}

/// A new post: its item's index, board, player, points and metadata.
type NewPost<'a> = (usize, &'a Arc<CustomBoard>, i64, Points, Option<&'a Metadata>);

/// What a post ranks by: its score, and its subscores (0 beyond those of
/// its board).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Points {
    pub score: i64,
    pub subscores: [i64; MAX_SUBSCORES],
}

impl Points {
    pub fn new(score: i64, subscores: &[i64]) -> Self {
        let mut points = Self { score, subscores: [0; MAX_SUBSCORES] };
        for (slot, value) in points.subscores.iter_mut().zip(subscores) {
            *slot = *value;
        }
        points
    }

    fn of(entry: &EntryRow) -> Self {
        Self { score: entry.score, subscores: entry.subscores() }
    }

    fn pair(self) -> (i64, [i64; MAX_SUBSCORES]) {
        (self.score, self.subscores)
    }
}

/// Why a post is held for review.
#[derive(Clone, Copy)]
enum Hold {
    /// Its board's rule: a review item (and a `score.held` event) of its own.
    Rule(HoldRule),
    /// Its original was held: the original's review decides it.
    WithOriginal,
}

/// A new post, after it was applied to its entry (or held for review,
/// leaving the entry as it was, if there was one).
struct Applied {
    index: usize,
    board: Arc<CustomBoard>,
    user_id: i64,
    post: BoardScoreView,
    entry: Option<EntryRow>,
    improved: bool,
    held: bool,
    /// The entry before the batch, if any.
    before: Option<EntryRow>,
}

impl Locked {
    /// Why a post to this board cannot be taken, if it cannot.
    pub(super) fn refusal(&self, number: i64) -> Option<ErrorCode> {
        (!self.periods.contains_key(&number)).then_some(ErrorCode::BoardNotFound)
    }

    /// Whether a tournament takes a new post made at `now` (the batch's
    /// time, which decides its period too): it is open (409
    /// `board_closed`), the player joined the period (403 `not_joined`) and
    /// has an attempt left (409 `attempts_exhausted`).
    pub(super) fn check_entry(&self, post: &Post, now: Timestamp) -> Result<(), ErrorCode> {
        let Some(board) = custom_target(post) else { return Ok(()) };
        let (number, user_id) = (board.spec.number, post.user_id);
        let Some(period) = self.periods.get(&number) else { return Err(ErrorCode::BoardNotFound) };
        let tournament = board.tournament(period.index);
        if !tournament.open_at(now) {
            return Err(ErrorCode::BoardClosed);
        }
        if tournament.join_required && !self.entrants.get(&number).is_some_and(|joined| joined.contains(&user_id)) {
            return Err(ErrorCode::NotJoined);
        }
        let made = self.attempts.get(&(number, user_id)).copied().unwrap_or(0);
        if tournament.max_attempts.is_some_and(|limit| made >= limit) {
            return Err(ErrorCode::AttemptsExhausted);
        }
        Ok(())
    }

    /// Whether `post`'s board takes its copy `to_partition` on a partition:
    /// one with entries in the period does; a new one while the period
    /// has fewer than `max_partitions` (409 `partition_limit`), and then
    /// counts for the batch's later posts.
    pub(super) fn take_partition(&mut self, post: &Post, to_partition: &Post) -> Result<(), ErrorCode> {
        let (Some(board), Some(partition)) = (custom_target(post), custom_target(to_partition)) else { return Ok(()) };
        let Some(rule) = &board.spec.partitioning else { return Ok(()) };
        let Some(found) = self.partitions.get_mut(&board.spec.number) else { return Ok(()) };
        if found.open.contains(&partition.spec.number) {
            return Ok(());
        }
        let count = found.count.get_or_insert(0);
        if *count >= rule.max_partitions {
            return Err(ErrorCode::PartitionLimit);
        }
        *count += 1;
        found.open.insert(partition.spec.number);
        Ok(())
    }

    /// A taken post is an attempt made (for the batch's later posts).
    pub(super) fn record_attempt(&mut self, post: &Post) {
        if let Some(board) = custom_target(post) {
            *self.attempts.entry((board.spec.number, post.user_id)).or_default() += 1;
        }
    }

    /// Appends the new posts in one INSERT, applies each to its entry in
    /// order, renders the answers (with the entry's rank), and writes
    /// every changed entry in one statement.
    pub(super) async fn apply(
        self,
        store: &Store,
        ranks: &RankEngine,
        conn: &mut AnyConnection,
        batch: &[Item<'_>],
        pending: &mut [Pending],
        now: Timestamp,
    ) -> Result<Changed, BatchError> {
        let new_posts: Vec<NewPost> = batch
            .iter()
            .enumerate()
            .filter(|(index, _)| matches!(pending[*index], Pending::New))
            .filter_map(|(index, job)| {
                let board = custom_target(job.post)?;
                let points = Points::new(job.post.score.value(), &job.post.subscores);
                Some((index, board, job.post.user_id, points, job.post.metadata.as_ref()))
            })
            .collect();
        if new_posts.is_empty() {
            return Ok(Changed::default());
        }
        // Which posts are held, judged in order against each entry as the
        // batch's earlier posts leave it (the post ids are not known yet);
        // a post fed by a held original is held with it.
        let mut running = self.entries.clone();
        let mut held_items: HashSet<usize> = (0..pending.len()).filter(|i| pending[*i].is_held()).collect();
        let held: Vec<Option<Hold>> = new_posts
            .iter()
            .map(|(index, board, user_id, points, _)| {
                let key = (board.spec.number, *user_id);
                let entry = running.get(&key).cloned();
                let rule = match batch[*index].fed_by {
                    Some(origin) if held_items.contains(&origin) => Some(Hold::WithOriginal),
                    _ => board
                        .spec
                        .rules
                        .holds(board.spec.order, points.score, entry.as_ref().map(|e| e.score))
                        .map(Hold::Rule),
                };
                if rule.is_some() {
                    held_items.insert(*index);
                } else {
                    let period = self.periods[&board.spec.number].index;
                    running.insert(key, next_entry(board, entry, *user_id, period, *points, 0, None, now).0);
                }
                rule
            })
            .collect();
        let status_of = |rule: &Option<Hold>| if rule.is_some() { PostStatus::Held } else { PostStatus::Accepted };
        let mut log: Vec<NewBoardPost> = new_posts
            .iter()
            .zip(&held)
            .map(|((_, board, user_id, points, metadata), rule)| NewBoardPost {
                board: board.spec.number,
                period: self.periods[&board.spec.number].index,
                user_id: *user_id,
                score: points.score,
                subscores: &points.subscores[..board.spec.subscores.len()],
                metadata: metadata.map(Metadata::as_str),
                status: status_of(rule),
                via: None,
            })
            .collect();
        // In waves: the originals, then the posts made with them (fed
        // posts, partitions' copies), then the partitions' copies of fed
        // posts: each names the id of the post it was made with.
        let depth_of = |mut index: usize| {
            let mut depth = 0;
            while let Some(origin) = batch[index].fed_by {
                depth += 1;
                index = origin;
            }
            depth
        };
        let mut ids: Vec<i64> = Vec::with_capacity(log.len());
        let mut known: HashMap<usize, i64> = HashMap::new();
        while ids.len() < log.len() {
            let start = ids.len();
            let depth = depth_of(new_posts[start].0);
            let end = start + new_posts[start..].iter().take_while(|(index, ..)| depth_of(*index) == depth).count();
            for ((index, ..), post) in new_posts[start..end].iter().zip(&mut log[start..end]) {
                if let Some(origin) = batch[*index].fed_by {
                    post.via = original_of(batch, pending, &known, origin);
                }
            }
            let wave = store.insert_board_posts(conn, &log[start..end], now).await?;
            known.extend(new_posts[start..end].iter().zip(&wave).map(|((index, ..), id)| (*index, *id)));
            ids.extend(wave);
        }
        let held_posts: Vec<Held> = log
            .iter()
            .zip(&new_posts)
            .zip(&held)
            .zip(&ids)
            .filter_map(|(((post, (_, board, ..)), rule), post_id)| {
                let Some(Hold::Rule(rule)) = rule else { return None };
                let rule = rule.as_str();
                let hold =
                    NewHold { board: post.board, post_id: *post_id, user_id: post.user_id, period: post.period, rule };
                Some(Held { hold, board_id: &board.spec.id, score: post.score, metadata: post.metadata })
            })
            .collect();
        let queued = holds::queue(store, conn, &held_posts, now).await?;

        let mut current = self.entries.clone();
        let mut applied = Vec::with_capacity(new_posts.len());
        for (((index, board, user_id, points, metadata), post_id), rule) in new_posts.iter().zip(ids).zip(&held) {
            let number = board.spec.number;
            let period = self.periods[&number];
            let metadata = metadata.map(|m| m.as_str().to_owned());
            let entry = current.get(&(number, *user_id)).cloned();
            let (entry, improved) = if rule.is_some() {
                (entry, false)
            } else {
                let (entry, improved) =
                    next_entry(board, entry, *user_id, period.index, *points, post_id, metadata.clone(), now);
                current.insert((number, *user_id), entry.clone());
                (Some(entry), improved)
            };
            let post = BoardScoreView {
                id: post_id,
                score: points.score,
                subscores: subscores_of(board.spec.ranking(), &points.subscores),
                created_at: now,
                metadata: metadata.map(|m| MetadataView(Arc::from(m))),
                status: status_of(rule).as_str(),
            };
            let before = self.entries.get(&(number, *user_id)).cloned();
            applied.push(Applied {
                index: *index,
                board: Arc::clone(board),
                user_id: *user_id,
                post,
                entry,
                improved,
                held: rule.is_some(),
                before,
            });
        }

        // The entries the batch opens, by board: the boards' sizes after it.
        let mut opened: HashMap<i64, i64> = HashMap::new();
        for (number, user_id) in current.keys() {
            if !self.entries.contains_key(&(*number, *user_id)) {
                *opened.entry(*number).or_default() += 1;
            }
        }

        // Ranks before the batch is recorded: a player's own entry from
        // before the batch is still there, so it is taken out where it
        // ranked strictly above the new score. The board's size is the
        // one after the batch (its entries now).
        let ranked: Vec<(&Applied, &EntryRow)> =
            applied.iter().filter_map(|a| a.entry.as_ref().map(|entry| (a, entry))).collect();
        let keys: Vec<_> = ranked.iter().map(|(a, entry)| (a.board.spec.period(entry.period), entry.key())).collect();
        let board_ranks = ranks.ranks_of_keys_on(conn, &keys).await?;
        let mut entries: HashMap<usize, RankingEntry> = HashMap::new();
        for ((a, entry), ScoreRank { rank, players }) in ranked.iter().zip(board_ranks) {
            let board = a.board.spec.period(entry.period);
            let own_above = a
                .before
                .as_ref()
                .is_some_and(|before| board.ranking.better(Points::of(before).pair(), Points::of(entry).pair()));
            let rank = rank - i64::from(own_above);
            let players = players + opened.get(&entry.board).copied().unwrap_or(0);
            let name = self.names.get(&entry.user_id).map_or("", String::as_str);
            let metadata = entry.metadata.as_deref().map(Arc::from);
            entries.insert(a.index, RankingEntry::new(board, (rank, players), entry.key(), name, metadata));
        }
        for a in &applied {
            let result = BoardScoreResult {
                score: a.post.clone(),
                entry: entries.remove(&a.index),
                improved: a.improved,
                period: PeriodView::from(self.periods[&a.board.spec.number]),
                feeds: Vec::new(),
                partition: None,
            };
            pending[a.index] = Pending::Taken { answer: Box::new(Answer::Board(result)), held: a.held };
        }

        // Each written entry takes the next change number of its period,
        // then one statement for the entries, one for the periods' player
        // counts.
        let mut finals: Vec<(EntryRow, &Arc<CustomBoard>)> = Vec::new();
        let mut seen = HashSet::new();
        for a in applied.iter().rev().filter(|a| !a.held) {
            let number = a.board.spec.number;
            if seen.insert((number, a.user_id)) {
                finals.push((current[&(number, a.user_id)].clone(), &a.board));
            }
        }
        finals.sort_by_key(|(entry, _)| entry.board);
        let counts: Vec<(i64, i64, i64)> = finals
            .chunk_by(|a, b| a.0.board == b.0.board)
            .map(|same_board| {
                let number = same_board[0].0.board;
                (number, self.periods[&number].index, same_board.len() as i64)
            })
            .collect();
        let firsts = store.number_changes_of(conn, &counts).await?;
        for (same_board, first) in finals.chunk_by_mut(|a, b| a.0.board == b.0.board).zip(firsts) {
            for (offset, (entry, _)) in same_board.iter_mut().enumerate() {
                entry.changed = first + offset as i64;
            }
        }
        let writes: Vec<EntryWrite> =
            finals.iter().map(|(entry, board)| EntryWrite { entry, ranking: board.spec.ranking() }).collect();
        store.write_entries(conn, &writes).await?;
        let counts: Vec<PeriodPlayers> = opened
            .into_iter()
            .map(|(number, added)| {
                let period = self.periods[&number];
                PeriodPlayers {
                    board: number,
                    period: period.index,
                    starts_at: period.start,
                    ends_at: period.end,
                    added,
                }
            })
            .collect();
        store.add_period_players(conn, &counts).await?;

        let changes = finals
            .iter()
            .map(|(entry, board)| (entry_change(board, entry, true), self.periods[&entry.board].end))
            .collect();
        Ok(Changed { changes, queued })
    }
}

/// A fed post's original: its board's id (`best` for `/api/scores`) and
/// post id (a custom original's from this batch's first insert).
fn original_of<'a>(
    batch: &[Item<'a>],
    pending: &[Pending],
    custom_ids: &HashMap<usize, i64>,
    origin: usize,
) -> Option<(&'a str, i64)> {
    match &batch[origin].post.target {
        Target::Custom { board } => Some((board.spec.id.as_str(), *custom_ids.get(&origin)?)),
        Target::Builtin => match &pending[origin] {
            Pending::Taken { answer, .. } => match answer.as_ref() {
                Answer::Scores(result) => Some(("best", result.score.id)),
                Answer::Board(_) => None,
            },
            _ => None,
        },
    }
}

/// An entry as the rank engine records it.
pub(crate) fn entry_change(board: &CustomBoard, entry: &EntryRow, listed: bool) -> EntryChange {
    EntryChange {
        board: board.spec.period(entry.period),
        key: entry.key(),
        version: entry.version,
        listed,
        metadata: entry.metadata.as_deref().map(Arc::from),
        changed: entry.changed,
    }
}

/// An entry after one more post, by the board's operator, and whether its
/// score or subscores changed. A recount after a removed post replays the
/// remaining posts through here too (`usecases::moderation`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn next_entry(
    board: &CustomBoard,
    entry: Option<EntryRow>,
    user_id: i64,
    period: i64,
    points: Points,
    post_id: i64,
    metadata: Option<String>,
    now: Timestamp,
) -> (EntryRow, bool) {
    let [subscore1, subscore2] = points.subscores;
    let Some(old) = entry else {
        let entry = EntryRow {
            board: board.spec.number,
            period,
            user_id,
            score: points.score,
            subscore1,
            subscore2,
            achieved_at: now,
            post_id,
            metadata,
            plays: 1,
            version: 1,
            changed: 0,
        };
        return (entry, true);
    };
    let counted = EntryRow { plays: old.plays + 1, version: old.version + 1, ..old.clone() };
    let reached = |score: i64| EntryRow {
        score,
        subscore1,
        subscore2,
        achieved_at: now,
        post_id,
        metadata: metadata.clone(),
        ..counted.clone()
    };
    let was = Points::of(&old);
    match board.spec.operator {
        Operator::Best if board.spec.ranking().better(points.pair(), was.pair()) => (reached(points.score), true),
        Operator::Best => (counted, false),
        Operator::Latest => (reached(points.score), points != was),
        // (A board with subscores is never `total`.)
        Operator::Total => {
            let sum = old.score.saturating_add(points.score);
            (reached(sum), sum != old.score)
        }
    }
}

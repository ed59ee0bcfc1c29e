//! The boards straight from their indexes, for the rank engine to answer
//! from while the boards in Redis are unusable: pages, positions, ranks
//! and walks. Built-in boards are read from `users`, custom boards from
//! `board_entries`. (What warms the engine: `packed`.)

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use sqlx::AnyConnection;

use super::{placeholders, Store, StoreResult};
use crate::domain::{Board, BoardKey, BoardPeriod, Order, MAX_SUBSCORES};

/// One board's statements. Board order is score in the board's direction,
/// then time ascending (on the best board `best_at`, on custom boards
/// `achieved_at`; the total board has none), then id ascending.
///
/// On the built-in boards, players are the users with at least one score,
/// which are exactly those with a `best_at` (the first score is always a
/// best). Testing `best_at` rather than `play_count` keeps each statement
/// inside the board's index (`users_best_board`, `users_total_board`, both
/// holding `best_at`): at a million players, a page at offset 500,000 by
/// `play_count` was a table scan and a sort (0.75 s on MariaDB), by
/// `best_at` an index walk. Custom boards walk `board_entries_order`.
struct BoardSql {
    /// Up to `?` keys from position `?`.
    keys_at: &'static str,
    /// Up to `?` keys after a key (bound by [`after_binds`]). It repeats
    /// the score as a plain range bound first: that bound alone is what
    /// lets a database start the index walk at the key rather than at the
    /// top of the board (an `OR` of conditions is not a range to either).
    keys_after: &'static str,
    /// A subquery counting the entries with a strictly better score than `?`.
    better_than: &'static str,
    /// A subquery counting the entries with a strictly better score than
    /// the first `?` and no better than the second: one index range.
    better_between: &'static str,
    /// A subquery counting the entries with a score no better than `?`:
    /// the count from the bottom of the board.
    no_better_than: &'static str,
    /// A subquery reading the board's entry count (its row of `board_stats`
    /// or `board_periods`, kept with the entries).
    players: &'static str,
    /// A subquery counting the entries with score `?` (and on custom
    /// boards subscores `?`, `?`) that come before a key (bound by
    /// [`tie_binds`]). A key's position is `better_than` plus
    /// [`CUSTOM_TIED_BETTER`] on a board with subscores plus this: index
    /// ranges, where one count of an `OR` walked the board from its top
    /// (19 ms against 1.3 ms at position 10,741 of 100,000).
    tied_before: &'static str,
    /// The key of player `?`, if on the board.
    key_of: &'static str,
    /// The keys of players `IN ({ids})` (custom boards read `{entries}`,
    /// see `Dialect::entries_by_key`).
    keys_of: &'static str,
}

/// The built-in boards' entry count (the same on both).
const BUILTIN_PLAYERS: &str = "(SELECT COALESCE(MAX(players), 0) FROM board_stats WHERE id = 1)";

const BEST_SQL: BoardSql = BoardSql {
    keys_at: "SELECT id, best_score AS score, best_at AS at, NULL AS metadata FROM users WHERE banned_at IS NULL AND best_at IS NOT NULL \
              ORDER BY best_score DESC, best_at, id LIMIT ? OFFSET ?",
    keys_after: "SELECT id, best_score AS score, best_at AS at, NULL AS metadata FROM users WHERE banned_at IS NULL AND best_at IS NOT NULL \
                 AND best_score <= ? AND (best_score < ? OR (best_score = ? AND (best_at > ? OR (best_at = ? AND id > ?)))) \
                 ORDER BY best_score DESC, best_at, id LIMIT ?",
    // A row with a strictly greater score than a given one is always a
    // player (scores are never negative): no `best_at` test needed.
    better_than: "(SELECT COUNT(*) FROM users WHERE banned_at IS NULL AND best_score > ?)",
    better_between: "(SELECT COUNT(*) FROM users WHERE banned_at IS NULL AND best_score > ? AND best_score <= ?)",
    no_better_than: "(SELECT COUNT(*) FROM users WHERE banned_at IS NULL AND best_at IS NOT NULL AND best_score <= ?)",
    players: BUILTIN_PLAYERS,
    tied_before: "(SELECT COUNT(*) FROM users WHERE banned_at IS NULL AND best_at IS NOT NULL AND best_score = ? \
                  AND (best_at < ? OR (best_at = ? AND id < ?)))",
    key_of: "SELECT id, best_score AS score, best_at AS at, NULL AS metadata FROM users \
             WHERE id = ? AND banned_at IS NULL AND best_at IS NOT NULL",
    keys_of: "SELECT id, best_score AS score, best_at AS at, NULL AS metadata FROM users \
              WHERE banned_at IS NULL AND best_at IS NOT NULL AND id IN ({ids})",
};

const TOTAL_SQL: BoardSql = BoardSql {
    keys_at: "SELECT id, total_score AS score, NULL AS at, NULL AS metadata FROM users WHERE banned_at IS NULL AND best_at IS NOT NULL \
              ORDER BY total_score DESC, id LIMIT ? OFFSET ?",
    keys_after: "SELECT id, total_score AS score, NULL AS at, NULL AS metadata FROM users WHERE banned_at IS NULL AND best_at IS NOT NULL \
                 AND total_score <= ? AND (total_score < ? OR (total_score = ? AND id > ?)) \
                 ORDER BY total_score DESC, id LIMIT ?",
    better_than: "(SELECT COUNT(*) FROM users WHERE banned_at IS NULL AND total_score > ?)",
    better_between: "(SELECT COUNT(*) FROM users WHERE banned_at IS NULL AND total_score > ? AND total_score <= ?)",
    no_better_than: "(SELECT COUNT(*) FROM users WHERE banned_at IS NULL AND best_at IS NOT NULL AND total_score <= ?)",
    players: BUILTIN_PLAYERS,
    tied_before: "(SELECT COUNT(*) FROM users WHERE banned_at IS NULL AND best_at IS NOT NULL AND total_score = ? AND id < ?)",
    key_of: "SELECT id, total_score AS score, NULL AS at, NULL AS metadata FROM users \
             WHERE id = ? AND banned_at IS NULL AND best_at IS NOT NULL",
    keys_of: "SELECT id, total_score AS score, NULL AS at, NULL AS metadata FROM users \
              WHERE banned_at IS NULL AND best_at IS NOT NULL AND id IN ({ids})",
};

/// Every statement of a custom board starts with `board = ? AND period = ?`.
///
/// Subscores (see `domain::Ranking`) are in `rank_sub1` and `rank_sub2` as
/// `rank_score` holds the score (ascending is better); 0 on a board
/// without them, where they order nothing.
const CUSTOM_SQL: BoardSql = BoardSql {
    keys_at: "SELECT user_id AS id, score, subscore1, subscore2, achieved_at AS at, metadata FROM board_entries \
              WHERE board = ? AND period = ? AND hidden = 0 \
              ORDER BY rank_score, rank_sub1, rank_sub2, achieved_at, user_id LIMIT ? OFFSET ?",
    keys_after: "SELECT user_id AS id, score, subscore1, subscore2, achieved_at AS at, metadata, changed FROM board_entries \
                 WHERE board = ? AND period = ? AND hidden = 0 AND rank_score >= ? AND (rank_score > ? OR (rank_score = ? \
                 AND (rank_sub1 > ? OR (rank_sub1 = ? AND (rank_sub2 > ? OR (rank_sub2 = ? \
                 AND (achieved_at > ? OR (achieved_at = ? AND user_id > ?)))))))) \
                 ORDER BY rank_score, rank_sub1, rank_sub2, achieved_at, user_id LIMIT ?",
    better_than: "(SELECT COUNT(*) FROM board_entries WHERE board = ? AND period = ? AND hidden = 0 AND rank_score < ?)",
    better_between: "(SELECT COUNT(*) FROM board_entries WHERE board = ? AND period = ? AND hidden = 0 \
                     AND rank_score < ? AND rank_score >= ?)",
    no_better_than: "(SELECT COUNT(*) FROM board_entries WHERE board = ? AND period = ? AND hidden = 0 AND rank_score >= ?)",
    players: "(SELECT COALESCE(MAX(players), 0) FROM board_periods WHERE board = ? AND period = ?)",
    tied_before: "(SELECT COUNT(*) FROM board_entries WHERE board = ? AND period = ? AND hidden = 0 AND rank_score = ? \
                  AND rank_sub1 = ? AND rank_sub2 = ? AND (achieved_at < ? OR (achieved_at = ? AND user_id < ?)))",
    key_of: "SELECT user_id AS id, score, subscore1, subscore2, achieved_at AS at, metadata FROM board_entries \
             WHERE board = ? AND period = ? AND hidden = 0 AND user_id = ?",
    keys_of: "SELECT user_id AS id, score, subscore1, subscore2, achieved_at AS at, metadata FROM {entries} \
              WHERE board = ? AND period = ? AND hidden = 0 AND user_id IN ({ids})",
};

/// On a board with subscores, two subqueries counting the entries with
/// score `?` and better subscores than (`?`, `?`): what a key's rank and
/// position add to the entries with a better score. Two index ranges.
const CUSTOM_TIED_BETTER: &str =
    "(SELECT COUNT(*) FROM board_entries WHERE board = ? AND period = ? AND hidden = 0 AND rank_score = ? \
     AND rank_sub1 < ?) + (SELECT COUNT(*) FROM board_entries WHERE board = ? AND period = ? AND hidden = 0 \
     AND rank_score = ? AND rank_sub1 = ? AND rank_sub2 < ?)";

fn board_sql(board: Board) -> &'static BoardSql {
    match board {
        Board::Best => &BEST_SQL,
        Board::Total => &TOTAL_SQL,
        Board::Custom(_) => &CUSTOM_SQL,
    }
}

/// The score as `board_entries.rank_score` holds it: ascending is better.
pub(super) fn rank_score(order: Order, score: i64) -> i64 {
    match order {
        Order::Desc => score.saturating_neg(),
        Order::Asc => score,
    }
}

/// The values that pick a board's rows, bound before anything else.
fn scope_binds(board: BoardPeriod) -> Vec<i64> {
    match board.board {
        Board::Custom(number) => vec![number, board.period],
        Board::Best | Board::Total => Vec::new(),
    }
}

/// A key's subscores as `rank_sub1` and `rank_sub2` hold them (0 for
/// those the board does not have).
pub(super) fn rank_subscores(board: BoardPeriod, key: &BoardKey) -> [i64; MAX_SUBSCORES] {
    let mut ranked = [0; MAX_SUBSCORES];
    for ((slot, order), subscore) in ranked.iter_mut().zip(board.ranking.subscores()).zip(key.subscores) {
        *slot = rank_score(*order, subscore);
    }
    ranked
}

/// The values `keys_after` binds after the board's scope (the total board
/// orders ties by id alone).
fn after_binds(board: BoardPeriod, key: BoardKey) -> Vec<i64> {
    let score = score_bind(board, key.score);
    match board.board {
        Board::Best => vec![score, score, score, key.at, key.at, key.id],
        Board::Total => vec![score, score, score, key.id],
        Board::Custom(_) => {
            let [first, second] = rank_subscores(board, &key);
            vec![score, score, score, first, first, second, second, key.at, key.at, key.id]
        }
    }
}

/// The values `tied_before` binds after the board's scope.
fn tie_binds(board: BoardPeriod, key: BoardKey) -> Vec<i64> {
    let score = score_bind(board, key.score);
    match board.board {
        Board::Best => vec![score, key.at, key.at, key.id],
        Board::Total => vec![score, key.id],
        Board::Custom(_) => {
            let [first, second] = rank_subscores(board, &key);
            vec![score, first, second, key.at, key.at, key.id]
        }
    }
}

/// The values [`CUSTOM_TIED_BETTER`] binds (scope included).
fn tied_better_binds(board: BoardPeriod, key: &BoardKey) -> Vec<i64> {
    let (scope, score) = (scope_binds(board), score_bind(board, key.score));
    let [first, second] = rank_subscores(board, key);
    let mut binds = scope.clone();
    binds.extend([score, first]);
    binds.extend(scope);
    binds.extend([score, first, second]);
    binds
}

/// Orders score binds the best first: `rank_score` ascending on custom
/// boards, the score descending on the built-ins.
fn better_first(board: BoardPeriod, bind: i64) -> i64 {
    match board.board {
        Board::Custom(_) => bind,
        Board::Best | Board::Total => bind.saturating_neg(),
    }
}

/// The value a "strictly better than this score" count binds.
fn score_bind(board: BoardPeriod, score: i64) -> i64 {
    match board.board {
        Board::Custom(_) => rank_score(board.ranking.score, score),
        Board::Best | Board::Total => score,
    }
}

/// A board entry as the board statements select it (`at` is NULL on the
/// total board, which does not order by time; `metadata` on built-ins).
#[derive(sqlx::FromRow)]
struct KeyRow {
    id: i64,
    score: i64,
    at: Option<i64>,
    /// A custom board's subscores (0 where it has none).
    #[sqlx(default)]
    subscore1: i64,
    #[sqlx(default)]
    subscore2: i64,
    metadata: Option<String>,
    /// The number of the change that last wrote the entry, where selected
    /// (custom boards' `keys_after`).
    #[sqlx(default)]
    changed: i64,
}

/// An entry's key and the metadata of the post that set it.
pub type KeyWithMetadata = (BoardKey, Option<String>);

/// An entry as a walk reads it: its key, metadata, and the number of the
/// change that last wrote it (see `board_entries.changed`).
pub type WalkedKey = (BoardKey, Option<String>, i64);

impl KeyRow {
    fn key(&self) -> BoardKey {
        BoardKey {
            score: self.score,
            subscores: [self.subscore1, self.subscore2],
            at: self.at.unwrap_or(0),
            id: self.id,
        }
    }
}

fn key_with_metadata(row: KeyRow) -> KeyWithMetadata {
    (row.key(), row.metadata)
}

/// Whether a count may read a board's middle when the one kept is stale.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MiddleRead {
    /// Read it (a board read, on the board-read pool).
    Allowed,
    /// Use only the one kept, else count from the top and have it read in
    /// the background: the score writer, whose transaction every post
    /// waits on, never walks half a board.
    CachedOnly,
}

/// Where the middle entry of each large board was when last read: tells
/// [`Store::board_players_above`] from which end a count walks fewer
/// entries. Only a guide: a stale middle costs time, never a wrong count.
#[derive(Default)]
pub(super) struct Middles(Mutex<HashMap<BoardPeriod, (Option<i64>, Instant)>>);

impl Middles {
    /// How long a middle read stands before it is read again.
    const FRESH_FOR: Duration = Duration::from_secs(60);
    /// The entries from which a board's middle is worth reading (in unit
    /// tests two, so that their small boards are counted from both ends).
    const LARGE: i64 = if cfg!(test) { 2 } else { 10_000 };
    /// The boards remembered at most (then forgotten all at once).
    const BOARDS: usize = 10_000;

    fn fresh(&self, board: BoardPeriod) -> Option<Option<i64>> {
        let middles = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        middles.get(&board).filter(|(_, read_at)| read_at.elapsed() < Self::FRESH_FOR).map(|(middle, _)| *middle)
    }

    fn remember(&self, board: BoardPeriod, middle: Option<i64>) {
        let mut middles = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if middles.len() >= Self::BOARDS {
            middles.clear();
        }
        middles.insert(board, (middle, Instant::now()));
    }
}

/// The boards straight from the database's indexes (see the module docs).
/// Each takes the connection of the caller's read snapshot.
impl Store {
    /// Players on the built-in boards (the same on both), from `board_stats`.
    pub async fn builtin_players(&self, conn: &mut AnyConnection) -> StoreResult<i64> {
        let players: Option<i64> =
            self.sql_scalar("SELECT players FROM board_stats WHERE id = 1").fetch_optional(&mut *conn).await?;
        Ok(players.unwrap_or(0))
    }

    /// Entries on a board in a period: `board_stats` for the built-ins,
    /// the period's row for custom boards (both kept by the score writer).
    pub async fn board_players(&self, conn: &mut AnyConnection, board: BoardPeriod) -> StoreResult<i64> {
        let Board::Custom(number) = board.board else { return self.builtin_players(conn).await };
        let players: Option<i64> = self
            .sql_scalar("SELECT players FROM board_periods WHERE board = ? AND period = ?")
            .bind(number)
            .bind(board.period)
            .fetch_optional(&mut *conn)
            .await?;
        Ok(players.unwrap_or(0))
    }

    /// Adds players who got their first score, inside the transaction that
    /// gave it to them.
    pub async fn add_board_players(&self, conn: &mut AnyConnection, added: i64) -> StoreResult<()> {
        self.sql("UPDATE board_stats SET players = players + ? WHERE id = 1").bind(added).execute(&mut *conn).await?;
        Ok(())
    }

    /// For each (board, score): how many entries have a strictly better
    /// score, i.e. the score's competition rank minus one. One statement,
    /// whose work is one walk of each board's index from one end to the
    /// farthest score asked, however many scores are asked: the first
    /// score's count is of the entries beyond it, each next score's only of
    /// those between it and the one before (where a count per score walked
    /// the index from the top each time: 100 bottom players of 780,000 took
    /// 10 s). The walk starts at the bottom when every score asked is below
    /// the board's middle (see [`Middles`]): the count above is then the
    /// board's entry count less the entries at or below, read in the same
    /// statement, so a post at the bottom of a million counts a few entries
    /// rather than all of them.
    ///
    /// On a board with subscores, the entries with the key's score and
    /// better subscores are added (one more statement, two index ranges a
    /// key): the count is of the entries strictly better by score and
    /// subscores.
    pub async fn board_players_above(
        &self,
        conn: &mut AnyConnection,
        keys: &[(BoardPeriod, BoardKey)],
        middles: MiddleRead,
    ) -> StoreResult<Vec<i64>> {
        use sqlx::Row as _;
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        // Each board's distinct score binds, in the order its walk meets them.
        let mut boards: Vec<(BoardPeriod, Vec<i64>)> = Vec::new();
        for (board, key) in keys {
            let bind = score_bind(*board, key.score);
            match boards.iter_mut().find(|(b, _)| b == board) {
                Some((_, binds)) => binds.push(bind),
                None => boards.push((*board, vec![bind])),
            }
        }
        let mut walks = Vec::with_capacity(boards.len());
        for (board, mut binds) in boards {
            binds.sort_unstable_by_key(|bind| better_first(board, *bind));
            binds.dedup();
            let from_bottom = match self.middle_of(conn, board, middles).await? {
                Some(middle) => better_first(board, binds[0]) > better_first(board, middle),
                None => false,
            };
            if from_bottom {
                binds.reverse();
            }
            walks.push((board, binds, from_bottom));
        }
        let mut columns = Vec::new();
        let mut values = Vec::new();
        let mut column = |sql: &str, board: BoardPeriod, binds: &[i64]| {
            columns.push(format!("{sql} AS n{}", columns.len()));
            values.extend(scope_binds(board));
            values.extend_from_slice(binds);
        };
        for (board, binds, from_bottom) in &walks {
            let statements = board_sql(board.board);
            if *from_bottom {
                column(statements.players, *board, &[]);
                column(statements.no_better_than, *board, &[binds[0]]);
            } else {
                column(statements.better_than, *board, &[binds[0]]);
            }
            // Between the one before (nearer the walk's start) and this one.
            for pair in binds.windows(2) {
                let (before, bind) = (pair[0], pair[1]);
                let range = if *from_bottom { [before, bind] } else { [bind, before] };
                column(statements.better_between, *board, &range);
            }
        }
        let sql = format!("SELECT {}", columns.join(", "));
        let row = values
            .into_iter()
            .fold(self.sql_once(&sql), |query, value| query.bind(value))
            .fetch_one(&mut *conn)
            .await?;
        let mut counts = (0..).map(|column| row.try_get::<i64, _>(column));
        let mut above: HashMap<(BoardPeriod, i64), i64> = HashMap::new();
        for (board, binds, from_bottom) in &walks {
            // Walking down, each range adds to the count above; walking
            // up, each takes from it.
            let (mut running, step) = if *from_bottom {
                let players = counts.next().unwrap_or(Ok(0))?;
                (players - counts.next().unwrap_or(Ok(0))?, -1)
            } else {
                (counts.next().unwrap_or(Ok(0))?, 1)
            };
            above.insert((*board, binds[0]), running);
            for bind in &binds[1..] {
                running += step * counts.next().unwrap_or(Ok(0))?;
                above.insert((*board, *bind), running);
            }
        }
        let mut counts: Vec<i64> =
            keys.iter().map(|(board, key)| above[&(*board, score_bind(*board, key.score))]).collect();
        let tied: Vec<(usize, &(BoardPeriod, BoardKey))> =
            keys.iter().enumerate().filter(|(_, (board, _))| !board.ranking.subscores().is_empty()).collect();
        if !tied.is_empty() {
            let columns: Vec<String> =
                (0..tied.len()).map(|column| format!("{CUSTOM_TIED_BETTER} AS n{column}")).collect();
            let sql = format!("SELECT {}", columns.join(", "));
            let binds = tied.iter().flat_map(|(_, (board, key))| tied_better_binds(*board, key));
            let row = binds.fold(self.sql_once(&sql), |query, value| query.bind(value)).fetch_one(&mut *conn).await?;
            for (column, (index, _)) in tied.iter().enumerate() {
                counts[*index] += row.try_get::<i64, _>(column)?;
            }
        }
        Ok(counts)
    }

    /// The score bind of a large board's middle entry, as read at most
    /// [`Middles::FRESH_FOR`] ago; none for a board under [`Middles::LARGE`]
    /// entries, where either end is near. A stale one is read again: now, on
    /// the caller's connection, if `read` allows (one walk of half the
    /// board a minute), else in the background on the board-read pool
    /// (none meanwhile).
    async fn middle_of(
        &self,
        conn: &mut AnyConnection,
        board: BoardPeriod,
        read: MiddleRead,
    ) -> StoreResult<Option<i64>> {
        if let Some(middle) = self.middles.fresh(board) {
            return Ok(middle);
        }
        match read {
            MiddleRead::Allowed => self.read_middle(conn, board).await,
            MiddleRead::CachedOnly => {
                self.read_middle_later(board);
                Ok(None)
            }
        }
    }

    async fn read_middle(&self, conn: &mut AnyConnection, board: BoardPeriod) -> StoreResult<Option<i64>> {
        let players = self.board_players(conn, board).await?;
        let middle = if players < Middles::LARGE {
            None
        } else {
            let keys = self.board_keys_at(conn, board, players / 2, 1).await?;
            keys.first().map(|(key, _)| score_bind(board, key.score))
        };
        self.middles.remember(board, middle);
        Ok(middle)
    }

    fn read_middle_later(&self, board: BoardPeriod) {
        // None until the read below lands: counts go from the top, and no
        // second read starts meanwhile.
        self.middles.remember(board, None);
        let store = self.for_board_reads();
        tokio::spawn(async move {
            let read = async {
                let mut conn = store.conn().await?;
                store.read_middle(&mut conn, board).await
            };
            if let Err(error) = read.await {
                tracing::debug!(%error, ?board, "reading a board's middle failed");
            }
        });
    }

    /// Entries before `key` in the board's order.
    pub async fn board_position_of(
        &self,
        conn: &mut AnyConnection,
        board: BoardPeriod,
        key: BoardKey,
    ) -> StoreResult<i64> {
        let statements = board_sql(board.board);
        let subscores = !board.ranking.subscores().is_empty();
        let tied_better = if subscores { format!(" + {CUSTOM_TIED_BETTER}") } else { String::new() };
        let sql = format!("SELECT {}{tied_better} + {} AS n", statements.better_than, statements.tied_before);
        let query = self.sql_scalar(&sql);
        let mut binds: Vec<i64> = scope_binds(board);
        binds.push(score_bind(board, key.score));
        if subscores {
            binds.extend(tied_better_binds(board, &key));
        }
        binds.extend(scope_binds(board));
        binds.extend(tie_binds(board, key));
        let query = binds.into_iter().fold(query, |query, value| query.bind(value));
        Ok(query.fetch_one(&mut *conn).await?)
    }

    /// Up to `count` keys from 0-based `position`.
    pub async fn board_keys_at(
        &self,
        conn: &mut AnyConnection,
        board: BoardPeriod,
        position: i64,
        count: i64,
    ) -> StoreResult<Vec<KeyWithMetadata>> {
        let query = self.sql_as::<KeyRow>(board_sql(board.board).keys_at);
        let query = scope_binds(board).into_iter().fold(query, |query, value| query.bind(value));
        let rows = query.bind(count).bind(position).fetch_all(&mut *conn).await?;
        Ok(rows.into_iter().map(key_with_metadata).collect())
    }

    /// Up to `count` keys after `key` (which need not exist any more).
    pub async fn board_keys_after(
        &self,
        conn: &mut AnyConnection,
        board: BoardPeriod,
        key: BoardKey,
        count: i64,
    ) -> StoreResult<Vec<KeyWithMetadata>> {
        let query = self.sql_as::<KeyRow>(board_sql(board.board).keys_after);
        let binds = scope_binds(board).into_iter().chain(after_binds(board, key));
        let rows = binds.fold(query, |query, value| query.bind(value)).bind(count).fetch_all(&mut *conn).await?;
        Ok(rows.into_iter().map(key_with_metadata).collect())
    }

    /// Up to `count` keys after `key` on a custom board, each with the number
    /// of the change that last wrote it (a walk leaves out the later ones).
    pub async fn board_walked_keys_after(
        &self,
        conn: &mut AnyConnection,
        board: BoardPeriod,
        key: BoardKey,
        count: i64,
    ) -> StoreResult<Vec<WalkedKey>> {
        let query = self.sql_as::<KeyRow>(CUSTOM_SQL.keys_after);
        let binds = scope_binds(board).into_iter().chain(after_binds(board, key));
        let rows = binds.fold(query, |query, value| query.bind(value)).bind(count).fetch_all(&mut *conn).await?;
        Ok(rows.into_iter().map(|row| (row.key(), row.metadata, row.changed)).collect())
    }

    /// A player's key, if they are on the board.
    pub async fn board_key_of(
        &self,
        conn: &mut AnyConnection,
        board: BoardPeriod,
        id: i64,
    ) -> StoreResult<Option<KeyWithMetadata>> {
        let query = self.sql_as::<KeyRow>(board_sql(board.board).key_of);
        let query = scope_binds(board).into_iter().fold(query, |query, value| query.bind(value));
        let row = query.bind(id).fetch_optional(&mut *conn).await?;
        Ok(row.map(key_with_metadata))
    }

    /// The keys of those of `ids` who are on the board, in no order.
    pub async fn board_keys_of(
        &self,
        conn: &mut AnyConnection,
        board: BoardPeriod,
        ids: &[i64],
    ) -> StoreResult<Vec<KeyWithMetadata>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let sql = board_sql(board.board)
            .keys_of
            .replace("{entries}", self.dialect.entries_by_key())
            .replace("{ids}", &placeholders(ids.len()));
        let query = self.sql_as::<KeyRow>(&sql).persistent(false);
        let binds = scope_binds(board).into_iter().chain(ids.iter().copied());
        let rows = binds.fold(query, |query, value| query.bind(value)).fetch_all(&mut *conn).await?;
        Ok(rows.into_iter().map(key_with_metadata).collect())
    }
}

//! The questions every board source answers, whatever holds the board:
//! the in-process index, Redis sorted sets, or the database's indexes.
//! Every page, window, friends board and rank the engine serves is built
//! from these reads, so the sources can be (and are) tested against each
//! other.

use std::sync::Arc;

use crate::domain::{BoardKey, BoardPeriod, Walk};

/// Where a slice starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SliceStart {
    /// At this 0-based position.
    Offset(usize),
    /// Just after this key (which need not be on the board any more); with
    /// a walk, leaving out the entries changed since it began (see [`Walk`]).
    After { key: BoardKey, walk: Option<Walk> },
    /// `radius` entries before the player with this id.
    Around { id: i64, radius: usize },
}

/// An entry as a source answers it: its key, and on custom boards the
/// metadata of the post that set its score.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub key: BoardKey,
    pub metadata: Option<Arc<str>>,
}

/// A run of a board read in one snapshot: its entries, the position of
/// the first, the competition rank of the first, and the board's size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slice {
    pub entries: Vec<Entry>,
    pub position: usize,
    /// 1 + entries with a strictly better score than the first (0 when empty).
    pub first_rank: i64,
    pub total: usize,
    /// Names the state of the board this was read at, where the source can
    /// (Redis: the group's rebuild epoch and change count); a copy made
    /// from the slice is exact while the source still answers this stamp.
    /// Part of a page's `ETag`.
    pub stamp: Option<Arc<str>>,
    /// Where a walk beginning at this read begins, on custom boards in
    /// sources that count their changes (the in-process index, Redis).
    pub walk: Option<Walk>,
    /// Set when a walk left entries out: the entries are then not one run
    /// of the board.
    pub skipped: Option<Skipped>,
}

/// How a slice that left changed entries out places the ones it kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// Each entry's 0-based position on the board.
    pub positions: Vec<usize>,
    /// Each entry's competition rank.
    pub ranks: Vec<i64>,
    /// The last key looked at, when the read stopped at [`WALK_SCAN_LIMIT`]
    /// before it found enough entries: the walk goes on after it.
    pub stopped_after: Option<BoardKey>,
}

/// Entries one page of a walk looks at, at most, beyond those it shows: a
/// walk that began long ago on a busy board skips many changed entries, and
/// one read (a Lua script, in Redis) must stay short.
pub const WALK_SCAN_LIMIT: usize = 2_000;

/// What a read that may be answered "unchanged" found.
pub enum SliceRead {
    /// The board is still at the stamp the caller holds.
    Unchanged,
    /// The slice (`None`: the player it was to center on is not on the board).
    Read(Option<Slice>),
}

/// A score's place on a board: its competition rank (1 + the entries with
/// a strictly better score) and the board's entries, read in one snapshot
/// (a `top_percent` needs both).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScoreRank {
    pub rank: i64,
    pub players: i64,
}

/// Some players' entries on a board, in board order, each with its
/// board-wide competition rank, read in one snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ranked {
    pub entries: Vec<(i64, Entry)>,
    pub total: usize,
}

/// A source of board reads.
pub(crate) trait BoardSource {
    type Error;

    /// Up to `count` entries from `start`, in one snapshot; `None` when the
    /// start is a player who is not on the board.
    async fn slice(&self, board: BoardPeriod, start: SliceStart, count: usize) -> Result<Option<Slice>, Self::Error>;

    /// Like `slice`, but only `Unchanged` while the board is still at
    /// `known` (a [`Slice::stamp`] from an earlier read). Sources without
    /// stamps always read.
    async fn slice_unless(
        &self,
        board: BoardPeriod,
        start: SliceStart,
        count: usize,
        known: &str,
    ) -> Result<SliceRead, Self::Error> {
        let _ = known;
        Ok(SliceRead::Read(self.slice(board, start, count).await?))
    }

    /// For each (board, key): the rank its score and subscores have there
    /// (1 + the entries strictly better), and the board's size.
    async fn ranks_of_keys(&self, keys: &[(BoardPeriod, BoardKey)]) -> Result<Vec<ScoreRank>, Self::Error>;

    /// The entries of those of `ids` who are on the board, ranked.
    async fn ranked(&self, board: BoardPeriod, ids: &[i64]) -> Result<Ranked, Self::Error>;
}

/// Sorts entries into board order and gives each its rank from `rank_of`.
pub(super) fn rank_entries(
    board: BoardPeriod,
    mut entries: Vec<Entry>,
    rank_of: impl Fn(&Entry) -> i64,
    total: usize,
) -> Ranked {
    let packed = |entry: &Entry| super::key::Packed::of(board.ranking, entry.key);
    entries.sort_by_key(packed);
    Ranked { entries: entries.into_iter().map(|entry| (rank_of(&entry), entry)).collect(), total }
}

//! The questions every board source answers, whatever holds the board:
//! the in-process index, Redis sorted sets, or the database's indexes.
//! Every page, window, friends board and rank the engine serves is built
//! from these reads, so the sources can be (and are) tested against each
//! other.

use std::sync::Arc;

use crate::domain::{BoardKey, BoardPeriod};

/// Where a slice starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SliceStart {
    /// At this 0-based position.
    Offset(usize),
    /// Just after this key (which need not be on the board any more).
    After(BoardKey),
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
}

/// What a read that may be answered "unchanged" found.
pub enum SliceRead {
    /// The board is still at the stamp the caller holds.
    Unchanged,
    /// The slice (`None`: the player it was to center on is not on the board).
    Read(Option<Slice>),
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

    /// For each (board, score): 1 + the entries with a strictly better score.
    async fn ranks_of_scores(&self, scores: &[(BoardPeriod, i64)]) -> Result<Vec<i64>, Self::Error>;

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
    let packed = |entry: &Entry| super::key::Packed::of(board.order, entry.key);
    entries.sort_by_key(packed);
    Ranked { entries: entries.into_iter().map(|entry| (rank_of(&entry), entry)).collect(), total }
}

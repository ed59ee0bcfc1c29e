//! The one question every board source answers, whatever holds the board:
//! the in-process index, Redis sorted sets, or the database's indexes.
//! Every page, window and rank the engine serves is built from these two
//! reads, so the sources can be (and are) tested against each other.

use crate::domain::{Board, BoardKey};

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

/// A run of a board read in one snapshot: its keys, the position of the
/// first, the competition rank of the first, and the board's size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slice {
    pub keys: Vec<BoardKey>,
    pub position: usize,
    /// 1 + entries with a strictly better score than the first key (0 when empty).
    pub first_rank: i64,
    pub total: usize,
}

/// A source of board reads.
pub(crate) trait BoardSource {
    type Error;

    /// Up to `count` keys from `start`, in one snapshot; `None` when the
    /// start is a player who is not on the board.
    async fn slice(&self, board: Board, start: SliceStart, count: usize) -> Result<Option<Slice>, Self::Error>;

    /// For each (board, score): 1 + the entries with a strictly better score.
    async fn ranks_of_scores(&self, scores: &[(Board, i64)]) -> Result<Vec<i64>, Self::Error>;
}

//! The rank engine: competition ranks, pages and windows for both boards.
//!
//! Every endpoint that shows a rank goes through this one interface, so the
//! way ranks are found can change here alone. Today they come from the
//! database: one count for the first rank on a page, the rest derived in
//! memory from the page's own scores ([`assign_ranks`]). It never writes.

use sqlx::AnyConnection;

use crate::domain::{Board, BoardKey, Cursor};
use crate::store::{BoardRow, Store, UserRow};

/// A player's rank on each board; `None` while they have not played.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UserRanks {
    pub best: Option<i64>,
    pub total: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankedRow {
    pub rank: i64,
    pub row: BoardRow,
}

/// A slice of a board with its ranks and where to continue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    pub board: Board,
    pub entries: Vec<RankedRow>,
    pub total_players: i64,
    /// Position after the last entry, when there is more.
    pub next_offset: Option<i64>,
    /// Keyset cursor after the last entry, when there is more.
    pub next_cursor: Option<Cursor>,
}

#[derive(Clone)]
pub struct RankEngine {
    store: Store,
}

impl RankEngine {
    pub fn new(store: Store) -> Self {
        Self { store }
    }

    /// Ranks of several users at once: one statement whatever their number.
    pub async fn ranks_of(&self, conn: &mut AnyConnection, users: &[&UserRow]) -> Result<Vec<UserRanks>, sqlx::Error> {
        let players: Vec<&&UserRow> = users.iter().filter(|u| u.play_count > 0).collect();
        let pairs: Vec<(Board, i64)> =
            players.iter().flat_map(|u| [(Board::Best, u.best_score), (Board::Total, u.total_score)]).collect();
        let counts = self.store.counts_above(conn, &pairs).await?;
        let mut counts = counts.chunks(2);
        Ok(users
            .iter()
            .map(|user| {
                if user.play_count == 0 {
                    return UserRanks::default();
                }
                let pair = counts.next().unwrap_or(&[]);
                UserRanks { best: pair.first().map(|n| n + 1), total: pair.get(1).map(|n| n + 1) }
            })
            .collect())
    }

    /// `limit` entries from position `offset`.
    pub async fn page_at_offset(
        &self,
        conn: &mut AnyConnection,
        board: Board,
        offset: i64,
        limit: i64,
    ) -> Result<Page, sqlx::Error> {
        let mut rows = self.store.board_rows_from_offset(conn, board, offset, limit + 1).await?;
        let has_more = truncate(&mut rows, limit);
        self.build_page(conn, board, rows, Some(offset), has_more).await
    }

    /// `limit` entries after the cursor's key.
    pub async fn page_after(&self, conn: &mut AnyConnection, cursor: Cursor, limit: i64) -> Result<Page, sqlx::Error> {
        let mut rows = self.store.board_rows_after(conn, cursor.board, cursor.after, limit + 1).await?;
        let has_more = truncate(&mut rows, limit);
        self.build_page(conn, cursor.board, rows, None, has_more).await
    }

    /// Up to `radius` entries either side of a player; `None` when the
    /// player is not on the board.
    pub async fn around(
        &self,
        conn: &mut AnyConnection,
        board: Board,
        user_id: i64,
        radius: i64,
    ) -> Result<Option<Page>, sqlx::Error> {
        let Some(me) = self.store.board_row(conn, board, user_id).await? else {
            return Ok(None);
        };
        let mut rows = self.store.board_rows_before(conn, board, me.key, radius).await?;
        let mut after = self.store.board_rows_after(conn, board, me.key, radius + 1).await?;
        let has_more = truncate(&mut after, radius);
        rows.push(me);
        rows.append(&mut after);
        self.build_page(conn, board, rows, None, has_more).await.map(Some)
    }

    /// Ranks `rows` (contiguous in board order) and fills in the page's
    /// totals and continuation. `first_position` is the 0-based position of
    /// the first row when the caller knows it.
    async fn build_page(
        &self,
        conn: &mut AnyConnection,
        board: Board,
        rows: Vec<BoardRow>,
        first_position: Option<i64>,
        has_more: bool,
    ) -> Result<Page, sqlx::Error> {
        let total_players = self.store.board_size(conn).await?;
        let Some(first) = rows.first() else {
            return Ok(Page { board, entries: Vec::new(), total_players, next_offset: None, next_cursor: None });
        };
        let first_key = first.key;
        let first_position = match first_position {
            Some(position) => position,
            None => self.store.count_before_key(conn, board, first_key).await?,
        };
        let above_first = self.store.counts_above(conn, &[(board, first_key.score)]).await?;
        let first_rank = above_first.first().copied().unwrap_or(0) + 1;
        let scores: Vec<i64> = rows.iter().map(|r| r.key.score).collect();
        let ranks = assign_ranks(first_rank, first_position, &scores);
        let last_key: BoardKey = rows.last().map_or(first_key, |r| r.key);
        let count = rows.len() as i64;
        let entries = rows.into_iter().zip(ranks).map(|(row, rank)| RankedRow { rank, row }).collect();
        Ok(Page {
            board,
            entries,
            total_players,
            next_offset: has_more.then_some(first_position + count),
            next_cursor: has_more.then_some(Cursor { board, after: last_key }),
        })
    }
}

/// Drops the look-ahead row; tells whether there was one.
fn truncate(rows: &mut Vec<BoardRow>, limit: i64) -> bool {
    let limit = usize::try_from(limit).unwrap_or(0);
    let has_more = rows.len() > limit;
    rows.truncate(limit);
    has_more
}

/// Competition ranks for a contiguous run of a board.
///
/// `first_rank` is the rank of the first entry (1 + players with a strictly
/// greater score) and `first_position` its 0-based position. An entry whose
/// score equals the previous one shares its rank; any other entry has only
/// strictly greater scores before it, so its rank is its position + 1.
pub fn assign_ranks(first_rank: i64, first_position: i64, scores: &[i64]) -> Vec<i64> {
    let mut ranks: Vec<i64> = Vec::with_capacity(scores.len());
    for (i, score) in scores.iter().enumerate() {
        let rank = match i {
            0 => first_rank,
            _ if scores[i - 1] == *score => ranks[i - 1],
            _ => first_position + i as i64 + 1,
        };
        ranks.push(rank);
    }
    ranks
}

#[cfg(test)]
mod tests {
    use super::assign_ranks;

    #[test]
    fn ties_share_a_rank_and_the_next_rank_skips() {
        assert_eq!(assign_ranks(1, 0, &[100, 90, 90, 80]), [1, 2, 2, 4]);
        assert_eq!(assign_ranks(1, 0, &[50, 40, 40, 40, 10]), [1, 2, 2, 2, 5]);
    }

    #[test]
    fn a_page_that_starts_inside_a_tie_keeps_the_tie_rank() {
        // Board 50, 40, 40, 40, 10 split in pages of 3: the second page
        // starts at position 3 with the last 40.
        assert_eq!(assign_ranks(2, 3, &[40, 10]), [2, 5]);
    }

    #[test]
    fn a_later_page_continues_instead_of_restarting_at_one() {
        assert_eq!(assign_ranks(11, 10, &[5, 4, 3]), [11, 12, 13]);
    }

    #[test]
    fn empty_page() {
        assert!(assign_ranks(1, 0, &[]).is_empty());
    }
}

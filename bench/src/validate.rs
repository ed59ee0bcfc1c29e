//! Pure checks of ranking pages against the contract: board order,
//! competition ranks, and continuity between consecutive pages.
//!
//! Two strengths: *exact* checks for a quiet board (nobody posts, so every
//! page is one consistent snapshot of the same board), and *live* checks
//! that hold even while other players post. The live ones rest on one fact:
//! scores only go up, so the number of players ahead of a given score never
//! shrinks, and a keyset cursor never moves back up the board.

use std::cmp::Ordering;
use std::collections::HashSet;

use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub rank: i64,
    pub score: i64,
    /// `achieved_at` (best board); compared as text, which orders RFC 3339
    /// UTC timestamps of fixed precision correctly.
    pub at: Option<String>,
    pub id: i64,
}

/// A board the bench reads, as the contract describes it (the bench
/// relies on the HTTP contract only, never on hiscore's own types).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Board {
    /// Best score desc, then `achieved_at`, then id.
    Best,
    /// Total desc, then id.
    Total,
    /// A custom board: score in its order, then `achieved_at`, then id.
    /// `monotonic`: entries only ever improve (`best` boards, and `total`
    /// ones of non-negative scores), which the live checks rely on.
    /// `latest`: a `latest` board, whose cursor walks leave out the entries
    /// changed since they began (so nobody shows twice there either).
    Custom { id: std::sync::Arc<str>, asc: bool, monotonic: bool, latest: bool },
}

impl Board {
    pub const ALL: [Board; 2] = [Board::Best, Board::Total];

    pub fn as_str(&self) -> &str {
        match self {
            Self::Best => "best",
            Self::Total => "total",
            Self::Custom { id, .. } => id,
        }
    }

    /// Whether the checks that hold while others post apply: they rest on
    /// scores only ever getting better.
    pub fn monotonic(&self) -> bool {
        match self {
            Self::Custom { monotonic, .. } => *monotonic,
            Self::Best | Self::Total => true,
        }
    }
}

impl std::fmt::Display for Board {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageView {
    pub board: Board,
    pub entries: Vec<Entry>,
    pub total_players: i64,
    pub next_offset: Option<i64>,
    pub next_cursor: Option<String>,
}

impl PageView {
    /// Reads a RankingPage, checking its shape.
    pub fn parse(board: &Board, body: &Value) -> Result<Self, String> {
        if body["board"] != board.as_str() {
            return Err(format!("page says board {} instead of {board}", body["board"]));
        }
        let entries = body["entries"].as_array().ok_or("page without an entries array")?;
        let entries = entries
            .iter()
            .map(|e| {
                let field = |name: &str| e[name].as_i64().ok_or_else(|| format!("entry without integer {name}: {e}"));
                let at = match (board, &e["achieved_at"]) {
                    (Board::Best | Board::Custom { .. }, Value::String(at)) => Some(at.clone()),
                    (Board::Total, Value::Null) => None,
                    (_, other) => return Err(format!("bad achieved_at {other} on the {board} board")),
                };
                let id = e["user"]["id"].as_i64().ok_or_else(|| format!("entry without user.id: {e}"))?;
                if e["user"]["image"].as_i64() != Some(id % 10 + 1) {
                    return Err(format!("user {id} has image {} instead of {}", e["user"]["image"], id % 10 + 1));
                }
                Ok(Entry { rank: field("rank")?, score: field("score")?, at, id })
            })
            .collect::<Result<Vec<_>, String>>()?;
        let total_players = body["total_players"].as_i64().ok_or("page without total_players")?;
        for entry in body["entries"].as_array().into_iter().flatten() {
            check_top_percent(entry, total_players)?;
        }
        Ok(Self {
            board: board.clone(),
            entries,
            total_players,
            next_offset: body["next_offset"].as_i64(),
            next_cursor: body["next_cursor"].as_str().map(str::to_owned),
        })
    }
}

/// An entry's `top_percent`: `ceil(10000 × rank ÷ players)` hundredths,
/// written with at most two decimals (`players`: the page's population).
pub fn check_top_percent(entry: &Value, players: i64) -> Result<(), String> {
    let rank = entry["rank"].as_i64().ok_or_else(|| format!("entry without integer rank: {entry}"))?;
    let written = entry["top_percent"].as_f64().ok_or_else(|| format!("entry without top_percent: {entry}"))?;
    let hundredths = written * 100.0;
    if (hundredths - hundredths.round()).abs() > 1e-6 {
        return Err(format!("top_percent {written} has more than two decimals: {entry}"));
    }
    let expected = (10_000 * rank + players - 1) / players.max(1);
    if hundredths.round() as i64 != expected {
        return Err(format!("rank {rank} of {players} has top_percent {written}, not {}", expected as f64 / 100.0));
    }
    Ok(())
}

/// Board order of two entries (the contract's order).
pub fn board_order(board: &Board, a: &Entry, b: &Entry) -> Ordering {
    let by_score = match board {
        Board::Custom { asc: true, .. } => a.score.cmp(&b.score),
        _ => b.score.cmp(&a.score),
    };
    match board {
        Board::Best | Board::Custom { .. } => by_score.then_with(|| a.at.cmp(&b.at)).then_with(|| a.id.cmp(&b.id)),
        Board::Total => by_score.then_with(|| a.id.cmp(&b.id)),
    }
}

/// Entries strictly in board order; ranks are competition ranks within this
/// one snapshot. `first_position` is the 0-based position of the first entry
/// when known (offset pages).
pub fn check_page(page: &PageView, first_position: Option<i64>) -> Result<(), String> {
    check_ranks(page, first_position, false)
}

/// `gaps`: the page may leave entries out (a walk of a `latest` board
/// leaves out those changed since it began), so a new score's rank is at
/// least, not exactly, what the entries before it give.
fn check_ranks(page: &PageView, first_position: Option<i64>, gaps: bool) -> Result<(), String> {
    let entries = &page.entries;
    for pair in entries.windows(2) {
        if board_order(&page.board, &pair[0], &pair[1]) != Ordering::Less {
            return Err(format!("entries out of board order: {:?} then {:?}", pair[0], pair[1]));
        }
    }
    let Some(first) = entries.first() else { return Ok(()) };
    if first.rank < 1 {
        return Err(format!("rank {} below 1", first.rank));
    }
    if let Some(position) = first_position {
        if first.rank > position + 1 {
            return Err(format!("first entry at position {position} has rank {} (> {})", first.rank, position + 1));
        }
    }
    // Rank of the first entry that starts a new score group, and its index.
    let mut group_start: Option<(usize, i64)> = None;
    for i in 1..entries.len() {
        let (previous, entry) = (&entries[i - 1], &entries[i]);
        if entry.score == previous.score {
            if entry.rank != previous.rank {
                return Err(format!("tied score {} has ranks {} and {}", entry.score, previous.rank, entry.rank));
            }
            continue;
        }
        let expected = match (first_position, group_start) {
            (Some(position), _) => Some(position + i as i64 + 1),
            (None, Some((index, rank))) => Some(rank + (i - index) as i64),
            (None, None) => None,
        };
        match expected {
            Some(expected) if entry.rank < expected || (entry.rank > expected && !gaps) => {
                return Err(format!(
                    "entry {i} (score {}) has rank {} where competition ranking gives {expected}",
                    entry.score, entry.rank
                ));
            }
            None if entry.rank < first.rank + i as i64 => {
                return Err(format!(
                    "entry {i} (score {}) has rank {}, below {}",
                    entry.score,
                    entry.rank,
                    first.rank + i as i64
                ));
            }
            _ => {}
        }
        group_start.get_or_insert((i, entry.rank));
    }
    Ok(())
}

/// Consecutive pages of one walk: the next page continues the previous one.
/// `keyset` walks (by cursor) must never move back up the board; `exact`
/// (a quiet board) additionally requires tied ranks to match.
/// `monotonic`: entries only get better while the walk runs (see
/// [`Board::monotonic`] and [`Walk::demotions`]).
pub fn check_continuation(
    previous: &PageView,
    next: &PageView,
    keyset: bool,
    exact: bool,
    monotonic: bool,
) -> Result<(), String> {
    let board = &next.board;
    let (Some(last), Some(first)) = (previous.entries.last(), next.entries.first()) else { return Ok(()) };
    let last_group = previous.entries.iter().rev().take_while(|e| e.score == last.score).count() as i64;
    if keyset && board_order(board, last, first) != Ordering::Less {
        return Err(format!("the page after the cursor starts with {first:?}, not after {last:?}"));
    }
    if !exact && !monotonic {
        // Entries that get worse can move ranks either way between pages.
        return Ok(());
    }
    let worse = match board {
        Board::Custom { asc: true, .. } => first.score.cmp(&last.score).reverse(),
        _ => first.score.cmp(&last.score),
    };
    match worse {
        Ordering::Less if first.rank < last.rank + last_group => Err(format!(
            "next page starts at rank {} (score {}) but the previous page ended at rank {} (score {}): \
             it should continue at rank {} or later",
            first.rank,
            first.score,
            last.rank,
            last.score,
            last.rank + last_group
        )),
        Ordering::Equal if first.rank < last.rank || (exact && first.rank != last.rank) => Err(format!(
            "tied score {} has rank {} at the end of one page and {} at the start of the next",
            first.score, last.rank, first.rank
        )),
        _ => Ok(()),
    }
}

/// The ids seen along one cursor walk; a player twice is a critical error.
#[derive(Debug, Default)]
pub struct Walk {
    pub seen: HashSet<i64>,
    pub entries: usize,
    /// Set by the caller when a moderation (a removed post, a ban) ran
    /// during the walk: it can move a player down past the cursor, so the
    /// board is checked as one whose entries can get worse.
    pub demotions: bool,
    previous: Option<PageView>,
}

impl Walk {
    pub fn add(&mut self, page: PageView, keyset: bool, exact: bool) -> Result<(), String> {
        let position = if exact { Some(self.entries as i64) } else { None };
        // A walk of a `latest` board leaves out who changed while it ran.
        let latest = matches!(page.board, Board::Custom { latest: true, .. });
        check_ranks(&page, position, latest && keyset && !exact)?;
        let monotonic = page.board.monotonic() && !self.demotions;
        if let Some(previous) = &self.previous {
            check_continuation(previous, &page, keyset, exact, monotonic)?;
        }
        // On `best` and `total` boards a moderation can move a player passed
        // by the cursor below it (shown again); on `latest` boards walks
        // leave changed entries out, moderations included.
        let once = exact || monotonic || latest;
        for entry in &page.entries {
            if keyset && !self.seen.insert(entry.id) && once {
                return Err(format!("player {} appears twice in one cursor walk", entry.id));
            }
        }
        self.entries += page.entries.len();
        self.previous = Some(page);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(rank: i64, score: i64, id: i64) -> Entry {
        Entry { rank, score, at: Some(format!("2026-01-01T00:00:{:02}.000Z", id)), id }
    }

    fn page(entries: Vec<Entry>) -> PageView {
        PageView { board: Board::Best, entries, total_players: 5, next_offset: None, next_cursor: None }
    }

    /// The board 50, 40, 40, 40, 10 in pages of three.
    fn good_pages() -> (PageView, PageView) {
        (page(vec![entry(1, 50, 1), entry(2, 40, 2), entry(2, 40, 3)]), page(vec![entry(2, 40, 4), entry(5, 10, 5)]))
    }

    #[test]
    fn accepts_correct_pages_with_ties_across_the_boundary() {
        let (first, second) = good_pages();
        for (keyset, exact) in [(true, true), (false, true), (true, false), (false, false)] {
            let mut walk = Walk::default();
            walk.add(first.clone(), keyset, exact).unwrap();
            walk.add(second.clone(), keyset, exact).unwrap();
        }
        check_page(&second, Some(3)).unwrap();
        check_page(&second, None).unwrap();
    }

    #[test]
    fn catches_load_more_restarting_at_rank_one() {
        let first = page(vec![entry(1, 50, 1), entry(2, 40, 2), entry(3, 30, 3)]);
        let restarted = page(vec![entry(1, 20, 4), entry(2, 10, 5)]);
        // As an offset page it breaks the snapshot rule…
        assert!(check_page(&restarted, Some(3)).is_err());
        // …and as a continuation it breaks even the live rule.
        assert!(check_continuation(&first, &restarted, true, false, true).is_err());
        let mut walk = Walk::default();
        walk.add(first, true, false).unwrap();
        assert!(walk.add(restarted, true, false).is_err());
    }

    #[test]
    fn catches_ties_with_different_ranks_and_wrong_skips() {
        assert!(check_page(&page(vec![entry(1, 50, 1), entry(2, 40, 2), entry(3, 40, 3)]), None).is_err());
        // 1, 2, 2, 3: after a tie of two at rank 2 the next rank is 4.
        let wrong_skip = page(vec![entry(1, 50, 1), entry(2, 40, 2), entry(2, 40, 3), entry(3, 30, 4)]);
        assert!(check_page(&wrong_skip, Some(0)).is_err());
        assert!(check_page(&wrong_skip, None).is_err());
        // Dense ranking across a page boundary: page 2 starting at 3 after 1, 2, 2.
        let (first, _) = good_pages();
        let dense = page(vec![entry(3, 10, 5)]);
        assert!(check_continuation(&first, &dense, false, false, true).is_err());
    }

    #[test]
    fn catches_out_of_order_entries() {
        assert!(check_page(&page(vec![entry(1, 40, 1), entry(1, 50, 2)]), None).is_err());
        // Ties on the best board go by achieved_at, then id.
        let mut late = entry(1, 40, 1);
        late.at = Some("2026-01-01T00:00:59.000Z".into());
        assert!(check_page(&page(vec![late, entry(1, 40, 2)]), None).is_err());
        let total = PageView { board: Board::Total, entries: vec![entry(1, 40, 9), entry(1, 40, 3)], ..page(vec![]) };
        assert!(check_page(&total, None).is_err());
    }

    #[test]
    fn catches_a_player_twice_in_a_cursor_walk() {
        let first = page(vec![entry(1, 50, 1), entry(2, 40, 2)]);
        let again = page(vec![entry(2, 40, 2), entry(4, 10, 5)]);
        let mut walk = Walk::default();
        walk.add(first.clone(), true, false).unwrap();
        assert!(walk.add(again.clone(), true, false).is_err());
        // Unless a moderation moved players down meanwhile: player 2 lost
        // a post and shows again below the cursor, at rank 2 again.
        let demoted = page(vec![entry(2, 30, 2), entry(3, 10, 5)]);
        let mut moderated = Walk { demotions: true, ..Walk::default() };
        moderated.add(first.clone(), true, false).unwrap();
        moderated.add(demoted.clone(), true, false).unwrap();
        let mut unmoderated = Walk::default();
        unmoderated.add(first.clone(), true, false).unwrap();
        assert!(unmoderated.add(demoted.clone(), true, false).is_err());
        // On a `latest` board, never: walks leave out changed entries.
        let latest = Board::Custom { id: "l".into(), asc: false, monotonic: false, latest: true };
        let on_latest = |p: &PageView| PageView { board: latest.clone(), ..p.clone() };
        let mut latest_walk = Walk { demotions: true, ..Walk::default() };
        latest_walk.add(on_latest(&first), true, false).unwrap();
        let twice = latest_walk.add(on_latest(&demoted), true, false).unwrap_err();
        assert!(twice.contains("twice"), "{twice}");
        // Its pages may skip ranks where changed players were left out, but
        // never rank too well.
        let gap = on_latest(&page(vec![entry(3, 30, 7), entry(4, 20, 8), entry(6, 10, 9)]));
        Walk::default().add(gap.clone(), true, false).unwrap();
        assert!(Walk::default().add(gap, false, false).is_err(), "an offset page has no gaps");
        let too_good = on_latest(&page(vec![entry(3, 30, 7), entry(3, 20, 8)]));
        assert!(Walk::default().add(too_good, true, false).is_err());
        // An offset walk may legitimately show someone twice under load.
        let mut offset_walk = Walk::default();
        offset_walk.add(first, false, false).unwrap();
        offset_walk.add(again, false, false).unwrap();
    }

    #[test]
    fn quiet_boards_need_exact_ranks_and_positions() {
        // Rank 1 at position 3 is impossible on a quiet board but would be
        // allowed mid-tie; rank 3 at position 1 is never allowed.
        assert!(check_page(&page(vec![entry(3, 40, 1)]), Some(1)).is_err());
        let (first, _) = good_pages();
        let tie_with_other_rank = page(vec![entry(3, 40, 4)]);
        assert!(check_continuation(&first, &tie_with_other_rank, true, true, true).is_err());
        // Live: a tie whose rank grew is fine (someone overtook meanwhile).
        check_continuation(&first, &tie_with_other_rank, true, false, true).unwrap();
    }

    #[test]
    fn parses_pages_and_rejects_bad_shapes() {
        let body = serde_json::json!({"board": "total", "entries": [
            {"rank": 1, "top_percent": 100, "score": 9, "achieved_at": null, "user": {"id": 3, "display_name": "x", "image": 4}}
        ], "total_players": 1, "next_offset": null, "next_cursor": null});
        let parsed = PageView::parse(&Board::Total, &body).unwrap();
        assert_eq!(parsed.entries, vec![Entry { rank: 1, score: 9, at: None, id: 3 }]);
        assert!(PageView::parse(&Board::Best, &body).is_err());
        let mut bad_image = body.clone();
        bad_image["entries"][0]["user"]["image"] = 1.into();
        assert!(PageView::parse(&Board::Total, &bad_image).is_err());
        let mut wider = body.clone();
        wider["total_players"] = 7.into();
        assert!(PageView::parse(&Board::Total, &wider).is_err());
        wider["entries"][0]["top_percent"] = serde_json::json!(14.29);
        PageView::parse(&Board::Total, &wider).unwrap();
        wider["entries"][0]["top_percent"] = serde_json::json!(14.285);
        assert!(PageView::parse(&Board::Total, &wider).is_err());
    }
}

//! Walks of a whole board, page by page, by cursor or offset: nobody twice,
//! nobody skipped, and on a quiet board every rank exactly right.

use std::time::Instant;

use reqwest::Method;

use super::context::Context;
use super::stats::Work;
use super::validate::{Board, Entry, PageView, Walk};

/// Boards larger than this are not walked end to end during the run.
pub const FULL_WALK_LIMIT: i64 = 20_000;

const WALK_PAGE: i64 = 100;

/// Walks a whole board by cursor (or offset) in pages of 100. On a quiet
/// board (`exact`) every rank must be exactly right and `total_players`
/// must match the walk. Returns the entries, or `None` after reporting.
pub async fn full_walk(
    ctx: &Context,
    board: Board,
    period: Option<i64>,
    keyset: bool,
    exact: bool,
    max_pages: usize,
) -> Option<Vec<Entry>> {
    walk_in_pages(ctx, board, period, keyset, exact, max_pages, WALK_PAGE).await
}

/// [`full_walk`] in pages of `page_size` entries.
pub async fn walk_in_pages(
    ctx: &Context,
    board: Board,
    period: Option<i64>,
    keyset: bool,
    exact: bool,
    max_pages: usize,
    page_size: i64,
) -> Option<Vec<Entry>> {
    let started = Instant::now();
    let mut walk = Walk::default();
    let mut entries = Vec::new();
    let period = period.map_or(String::new(), |index| format!("&period={index}"));
    let mut query = format!("limit={page_size}{period}");
    for _ in 0..max_pages {
        let path = format!("/api/rankings/{board}?{query}");
        let reply = ctx.api.send("GET /api/rankings/{board}", ctx.api.request(Method::GET, &path)).await?;
        if !ctx.expect(&format!("ranking page {path}"), &reply, 200, None) {
            return None;
        }
        let page = match PageView::parse(&board, &reply.body) {
            Ok(page) => page,
            Err(why) => {
                ctx.critical(format!("{path}: {why}"));
                return None;
            }
        };
        walk.demotions = ctx.moderated_since(started);
        // A quiet board is not quiet while a moderation runs: it moves
        // players off, on or down (every period, ended ones included).
        let exact = exact && !walk.demotions;
        if let Err(why) = walk.add(page.clone(), keyset, exact) {
            ctx.critical(format!(
                "{path} (walking the {board} board by {}): {why}",
                if keyset { "cursor" } else { "offset" }
            ));
            return None;
        }

        ctx.recorder.succeeded(Work::Read);
        let total_players = page.total_players;
        entries.extend(page.entries.iter().cloned());
        query = match (keyset, &page.next_cursor, page.next_offset) {
            (true, Some(cursor), _) => format!("limit={page_size}&cursor={cursor}{period}"),
            (false, _, Some(next)) => format!("limit={page_size}&offset={next}{period}"),
            _ => {
                if exact && !ctx.moderated_since(started) && total_players != entries.len() as i64 {
                    ctx.critical(format!(
                        "the {board} board lists {} players but says total_players = {total_players}",
                        entries.len()
                    ));
                    return None;
                }
                return Some(entries);
            }
        };
    }
    Some(entries)
}

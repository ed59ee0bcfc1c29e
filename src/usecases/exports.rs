//! Exports (v4): a board's period in board order as CSV or NDJSON,
//! streamed a page at a time, so the server's memory does not grow with
//! the board. The walk goes by cursor, like a client's "load more": every
//! entry once, even while posts move the current period.

use std::time::Duration;

use actix_web::web::{Bytes, Data};
use futures_util::stream::{self, Stream};
use tokio::sync::OwnedSemaphorePermit;

use super::boards::{resolve, resolve_partition, resolve_period};
use super::rankings::names;
use crate::domain::{BoardPeriod, PeriodSelector, PostStatus};
use crate::error::{ApiError, ErrorCode};
use crate::export_slots::{PlayerSlot, MAX_BOARD_EXPORTS};
use crate::rank::{Page, PageStart};
use crate::state::AppState;
use crate::store::{json_text, ClaimState, PostRow};
use crate::views::{RankingEntry, RewardView};

/// Entries read per step of the walk.
const CHUNK: i64 = 1_000;
/// The columns, in order (the CSV header row).
const COLUMNS: [&str; 7] = ["rank", "user_id", "display_name", "score", "subscores", "achieved_at", "metadata"];

/// How an export is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// RFC 4180, CRLF line ends, a header row.
    Csv,
    /// One JSON object per line.
    Ndjson,
}

impl Format {
    /// `format` as asked: absent is CSV; another value 422 `invalid_format`.
    pub fn parse(raw: Option<&str>) -> Result<Self, ApiError> {
        match raw {
            None | Some("csv") => Ok(Self::Csv),
            Some("ndjson") => Ok(Self::Ndjson),
            Some(_) => Err(ErrorCode::InvalidFormat.into()),
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Self::Csv => "text/csv; charset=utf-8",
            Self::Ndjson => "application/x-ndjson",
        }
    }

    fn extension(self) -> &'static str {
        match self {
            Self::Csv => "csv",
            Self::Ndjson => "ndjson",
        }
    }
}

/// An export ready to stream: its file name, and the body.
pub struct Export<S> {
    pub filename: String,
    pub body: S,
}

/// Where the walk is: the next page's start, or done.
struct Walk {
    state: Data<AppState>,
    board: BoardPeriod,
    format: Format,
    start: Option<PageStart>,
    header: bool,
    /// Held until the stream is dropped (finished or abandoned).
    _slot: OwnedSemaphorePermit,
}

/// Streams board `id`'s period as `format`: 404 for an unknown board or
/// period, 429 when [`MAX_BOARD_EXPORTS`] run already on this instance.
pub async fn board(
    state: Data<AppState>,
    id: &str,
    partition: Option<&str>,
    selector: PeriodSelector,
    format: Format,
) -> Result<Export<impl Stream<Item = Result<Bytes, ApiError>> + use<>>, ApiError> {
    let board = resolve_partition(&state, resolve(&state, id).await?, partition).await?;
    let resolved = resolve_period(&state, &board, selector).await?;
    let slot = state.exports.board().ok_or_else(|| {
        ApiError::too_many_requests(
            format!("at most {MAX_BOARD_EXPORTS} exports run at once on an instance"),
            Duration::from_secs(5),
            "exports",
        )
    })?;
    let name = match board.partition() {
        Some(partition) => format!("{}-{partition}", board.id()),
        None => board.id().to_owned(),
    };
    let filename = format!("{name}-period-{}.{}", resolved.view.index, format.extension());
    let walk = Walk {
        state,
        board: resolved.board,
        format,
        start: Some(PageStart::Offset(0)),
        header: format == Format::Csv,
        _slot: slot,
    };
    let body = stream::try_unfold(walk, |mut walk| async move {
        let mut out = String::new();
        if std::mem::take(&mut walk.header) {
            out.push_str(&COLUMNS.join(","));
            out.push_str("\r\n");
        }
        let Some(start) = walk.start.take() else { return Ok(None) };
        let page = walk.state.ranks.page(walk.board, start, CHUNK).await?;
        write_page(&walk.state, &page, walk.format, &mut out).await?;
        walk.start = page.next_cursor.map(|cursor| PageStart::After { key: cursor.after, walk: cursor.walk });
        Ok(Some((Bytes::from(out), walk)))
    });
    Ok(Export { filename, body })
}

/// Posts read per step of a player's export.
const POSTS_CHUNK: i64 = 1_000;

/// Where a player's export is: the document is written in order, the
/// posts (the one part that can be large) a chunk at a time.
enum Part {
    Account,
    Scores { after: i64, first: bool },
    BoardPosts { after: i64, first: bool },
    Rest,
    Done,
}

struct OwnWalk {
    state: Data<AppState>,
    user_id: i64,
    part: Part,
    _slot: PlayerSlot,
}

/// Streams everything hiscore holds about a player (`GET /api/me/export`)
/// as one JSON document: `account`, `posts` (every post on every board,
/// with its status), `entries`, `leagues` (memberships and history),
/// `entrants`, `rewards` and `audit` (records about them). No secret is
/// in it: no password hash, token, key or stored answer. One export at a
/// time per player (then 429).
pub fn player(
    state: Data<AppState>,
    user_id: i64,
) -> Result<impl Stream<Item = Result<Bytes, ApiError>> + use<>, ApiError> {
    let slot = state.exports.player(user_id).ok_or_else(|| {
        ApiError::too_many_requests(
            "your data is being exported already: one export at a time",
            Duration::from_secs(5),
            "exports",
        )
    })?;
    let walk = OwnWalk { state, user_id, part: Part::Account, _slot: slot };
    Ok(stream::try_unfold(walk, |mut walk| async move {
        let store = &walk.state.store;
        let (text, next) = match walk.part {
            Part::Account => {
                let (row, reason) = store.own_account(walk.user_id).await?.ok_or(ErrorCode::InvalidSession)?;
                let account = serde_json::json!({
                    "id": row.id, "login_name": row.login_name, "display_name": row.display_name,
                    "created_at": row.created_at, "best_score": row.best_score, "best_at": row.best_at,
                    "total_score": row.total_score, "play_count": row.play_count,
                    "banned_at": row.banned_at, "ban_reason": reason,
                });
                (format!("{{\"account\":{account},\"posts\":["), Part::Scores { after: 0, first: true })
            }
            Part::Scores { after, first } => {
                let rows = store.own_scores(walk.user_id, after, POSTS_CHUNK).await?;
                let next = match rows.last() {
                    Some(last) if rows.len() as i64 == POSTS_CHUNK => Part::Scores { after: last.id, first: false },
                    _ => Part::BoardPosts { after: 0, first: first && rows.is_empty() },
                };
                (posts_json(&rows, first), next)
            }
            Part::BoardPosts { after, first } => {
                let rows = store.own_board_posts(walk.user_id, after, POSTS_CHUNK).await?;
                let next = match rows.last() {
                    Some(last) if rows.len() as i64 == POSTS_CHUNK => Part::BoardPosts { after: last.id, first: false },
                    _ => Part::Rest,
                };
                (posts_json(&rows, first), next)
            }
            Part::Rest => (rest_json(&walk.state, walk.user_id).await?, Part::Done),
            Part::Done => return Ok(None),
        };
        walk.part = next;
        Ok(Some((Bytes::from(text), walk)))
    }))
}

/// Posts as the items of the `posts` list (a comma first unless they open it).
fn posts_json(rows: &[PostRow], opens_list: bool) -> String {
    let mut out = String::new();
    for (i, row) in rows.iter().enumerate() {
        if i > 0 || !opens_list {
            out.push(',');
        }
        let post = serde_json::json!({
            "board": row.board, "id": row.id, "period": row.period, "score": row.score,
            "metadata": json_text(row.metadata.as_deref()), "created_at": row.created_at,
            "status": PostStatus::from_stored(&row.status).as_str(), "via": row.via,
        });
        out.push_str(&post.to_string());
    }
    out
}

/// The document after the posts: entries, leagues, entrants, rewards, audit.
async fn rest_json(state: &AppState, user_id: i64) -> Result<String, ApiError> {
    let store = &state.store;
    let entries: Vec<_> = store
        .own_entries(user_id)
        .await?
        .into_iter()
        .map(|e| {
            serde_json::json!({"board": e.board, "partition": e.partition_value, "period": e.period, "score": e.score,
                "achieved_at": e.achieved_at,
                "plays": e.plays, "metadata": json_text(e.metadata.as_deref())})
        })
        .collect();
    let memberships: Vec<_> = store
        .own_memberships(user_id)
        .await?
        .into_iter()
        .map(|(league, tier)| serde_json::json!({"league": league, "tier": tier}))
        .collect();
    let history: Vec<_> = store
        .own_placements(user_id)
        .await?
        .into_iter()
        .map(|p| {
            serde_json::json!({"league": p.league, "period": p.period, "tier": p.tier, "cohort": p.cohort,
                "placed_at": p.placed_at, "final_rank": p.final_rank, "movement": p.movement})
        })
        .collect();
    let entrants: Vec<_> = store
        .own_entrant_places(user_id)
        .await?
        .into_iter()
        .map(|(board, period, joined_at)| serde_json::json!({"board": board, "period": period, "joined_at": joined_at}))
        .collect();
    let mut rewards = Vec::new();
    loop {
        let after = rewards.last().map_or(0, |reward: &RewardView| reward.id);
        let page = store.player_rewards(user_id, ClaimState::All, after, CHUNK).await?;
        let done = (page.len() as i64) < CHUNK;
        rewards.extend(page.into_iter().map(super::rewards::view));
        if done {
            break;
        }
    }
    let audit: Vec<_> = store
        .audit_about(user_id)
        .await?
        .into_iter()
        .map(|a| {
            serde_json::json!({"id": a.id, "at": a.at, "actor": a.actor, "action": a.action, "target": a.target,
                "detail": json_text(Some(&a.detail.0))})
        })
        .collect();
    let rest = serde_json::json!({
        "entries": entries,
        "leagues": {"memberships": memberships, "history": history},
        "entrants": entrants,
        "rewards": rewards,
        "audit": audit,
    });
    // The rest's fields follow the posts in the same object.
    let text = rest.to_string();
    Ok(format!("],{}", &text[1..]))
}

async fn write_page(state: &AppState, page: &Page, format: Format, out: &mut String) -> Result<(), ApiError> {
    let names = names(state, &page.user_ids()).await?;
    for entry in &page.entries {
        let name = names.get(&entry.key.id).map_or("", |name| name);
        let players = (entry.rank, page.total_players);
        let entry = RankingEntry::new(page.board, players, entry.key, name, entry.metadata.clone());
        let subscores = entry.subscores.clone().unwrap_or_default();
        match format {
            Format::Ndjson => {
                let line = serde_json::json!({
                    "rank": entry.rank,
                    "user_id": entry.user.id,
                    "display_name": entry.user.display_name,
                    "score": entry.score,
                    "subscores": subscores,
                    "achieved_at": entry.achieved_at,
                    "metadata": entry.metadata,
                });
                out.push_str(&line.to_string());
                out.push('\n');
            }
            Format::Csv => {
                let cells = [
                    entry.rank.to_string(),
                    entry.user.id.to_string(),
                    entry.user.display_name.clone(),
                    entry.score.to_string(),
                    serde_json::to_string(&subscores).map_err(ApiError::internal)?,
                    entry.achieved_at.map(|at| at.to_rfc3339()).unwrap_or_default(),
                    entry.metadata.map(|m| m.0.to_string()).unwrap_or_default(),
                ];
                let row: Vec<String> = cells.iter().map(|cell| csv_cell(cell)).collect();
                out.push_str(&row.join(","));
                out.push_str("\r\n");
            }
        }
    }
    Ok(())
}

/// A CSV cell (RFC 4180): quoted when it holds a comma, a quote or a line
/// break, quotes doubled; a cell a spreadsheet would run as a formula
/// (starting with `=`, `+`, `-`, `@`, tab or CR) gets a leading `'`.
fn csv_cell(text: &str) -> String {
    let text = match text.chars().next() {
        Some('=' | '+' | '-' | '@' | '\t' | '\r') => format!("'{text}"),
        _ => text.to_owned(),
    };
    if text.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_quoted_and_formulas_defused() {
        assert_eq!(csv_cell("plain"), "plain");
        assert_eq!(csv_cell("a,b"), "\"a,b\"");
        assert_eq!(csv_cell("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_cell("two\nlines"), "\"two\nlines\"");
        assert_eq!(csv_cell("=SUM(A1)"), "'=SUM(A1)");
        assert_eq!(csv_cell("-5"), "'-5");
        assert_eq!(csv_cell("@x,y"), "\"'@x,y\"");
        assert_eq!(csv_cell("\tx"), "'\tx");
        assert_eq!(csv_cell(""), "");
        assert_eq!(Format::parse(None).unwrap(), Format::Csv);
        assert_eq!(Format::parse(Some("ndjson")).unwrap(), Format::Ndjson);
        assert!(Format::parse(Some("xml")).is_err());
    }
}

//! Exports (v4): a board's period in board order as CSV or NDJSON,
//! streamed a page at a time, so the server's memory does not grow with
//! the board. The walk goes by cursor, like a client's "load more": every
//! entry once, even while posts move the current period.

use std::sync::Arc;
use std::time::Duration;

use actix_web::web::{Bytes, Data};
use futures_util::stream::{self, Stream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::boards::{resolve, resolve_period};
use super::rankings::names;
use crate::domain::{BoardPeriod, PeriodSelector};
use crate::error::{ApiError, ErrorCode};
use crate::rank::{Page, PageStart};
use crate::state::AppState;
use crate::views::RankingEntry;

/// Exports running at once on one instance, at most; one more is 429.
pub const MAX_EXPORTS: usize = 2;
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

/// The instance's export slots.
pub struct ExportSlots(Arc<Semaphore>);

impl Default for ExportSlots {
    fn default() -> Self {
        Self(Arc::new(Semaphore::new(MAX_EXPORTS)))
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
/// period, 429 when [`MAX_EXPORTS`] run already on this instance.
pub async fn board(
    state: Data<AppState>,
    id: &str,
    selector: PeriodSelector,
    format: Format,
) -> Result<Export<impl Stream<Item = Result<Bytes, ApiError>> + use<>>, ApiError> {
    let board = resolve(&state, id).await?;
    let resolved = resolve_period(&state, &board, selector).await?;
    let slot = Arc::clone(&state.exports.0).try_acquire_owned().map_err(|_| {
        ApiError::too_many_requests(
            format!("at most {MAX_EXPORTS} exports run at once on an instance"),
            Duration::from_secs(5),
            "exports",
        )
    })?;
    let filename = format!("{}-period-{}.{}", board.id(), resolved.view.index, format.extension());
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

async fn write_page(state: &AppState, page: &Page, format: Format, out: &mut String) -> Result<(), ApiError> {
    let names = names(state, &page.user_ids()).await?;
    for entry in &page.entries {
        let name = names.get(&entry.key.id).map_or("", |name| name);
        let players = (entry.rank, page.total_players);
        let entry = RankingEntry::new(page.board.board, players, entry.key, name, entry.metadata.clone());
        match format {
            Format::Ndjson => {
                let line = serde_json::json!({
                    "rank": entry.rank,
                    "user_id": entry.user.id,
                    "display_name": entry.user.display_name,
                    "score": entry.score,
                    "subscores": [],
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
                    "[]".to_owned(),
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

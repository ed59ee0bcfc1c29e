//! Live viewers: clients that hold live pages of the built-in boards open
//! for the whole load (`GET /api/rankings/{board}/live`) and check every
//! page they are sent: a valid snapshot of the board, and never older than
//! the page they already hold. Scores on `best` and `total` only go up, so
//! a page that shows a player lower than before, or leaves out a player
//! who must still be on it, or counts fewer players, was read before the
//! one the viewer holds (unless the moderator changed those players
//! meanwhile). A stream that ends is opened again with `Last-Event-ID`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::Response;
use serde_json::Value;

use super::context::Context;
use super::stats::{Answer, Severity};
use super::validate::{check_page, Board, PageView};

/// Entries per live page.
const LIMIT: usize = 20;
/// Live pages per built-in board.
const VIEWERS_PER_BOARD: usize = 2;

/// One server-sent event.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveEvent {
    pub name: String,
    pub id: Option<String>,
    pub data: Value,
}

/// Reads the events of a `text/event-stream` answer; `: ping` comments are
/// skipped.
pub struct LiveEvents {
    response: Response,
    buffer: String,
}

impl LiveEvents {
    pub fn new(response: Response) -> Self {
        Self { response, buffer: String::new() }
    }

    /// The next event, `Ok(None)` when the stream ended.
    pub async fn next(&mut self) -> Result<Option<LiveEvent>, String> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                if let Some(event) = parse_event(&block)? {
                    return Ok(Some(event));
                }
                continue;
            }
            let Some(chunk) = self.response.chunk().await.map_err(|error| format!("reading the stream: {error}"))?
            else {
                return Ok(None);
            };
            self.buffer.push_str(std::str::from_utf8(&chunk).map_err(|_| "a stream that is not UTF-8".to_owned())?);
        }
    }
}

/// An event block (`event:`, `id:`, `data:` lines); `None` for a comment.
fn parse_event(block: &str) -> Result<Option<LiveEvent>, String> {
    let (mut name, mut id, mut data) = (None, None, None);
    for line in block.lines() {
        if line.starts_with(':') {
            continue;
        } else if let Some(value) = line.strip_prefix("event: ") {
            name = Some(value.to_owned());
        } else if let Some(value) = line.strip_prefix("id: ") {
            id = Some(value.to_owned());
        } else if let Some(value) = line.strip_prefix("data: ") {
            data = Some(serde_json::from_str(value).map_err(|_| format!("event data that is not JSON: {value}"))?);
        } else if !line.is_empty() {
            return Err(format!("a line that is no part of an event: {line}"));
        }
    }
    match (name, data) {
        (Some(name), Some(data)) => Ok(Some(LiveEvent { name, id, data })),
        (None, None) if id.is_none() => Ok(None),
        _ => Err(format!("an event without a name or data: {block:?}")),
    }
}

/// The live viewers of a run, until its deadline.
pub async fn viewers(ctx: Arc<Context>) {
    let mut tasks = Vec::new();
    for board in Board::ALL {
        for _ in 0..VIEWERS_PER_BOARD {
            tasks.push(tokio::spawn(view(Arc::clone(&ctx), board.clone())));
        }
    }
    for task in tasks {
        let _ = task.await;
    }
}

/// The page a viewer holds, and when it came.
struct Held {
    page: PageView,
    id: String,
    at: Instant,
}

async fn view(ctx: Arc<Context>, board: Board) {
    const ENDPOINT: &str = "GET /api/rankings/{board}/live";
    let path = format!("/api/rankings/{board}/live?limit={LIMIT}");
    let mut held: Option<Held> = None;
    while ctx.running() {
        let mut request = ctx.api.stream(&path);
        if let Some(held) = &held {
            request = request.header("Last-Event-ID", &held.id);
        }
        let opened = Instant::now();
        let response = match request.send().await {
            Ok(response) => response,
            Err(error) => {
                ctx.recorder.record(ENDPOINT, opened.elapsed(), Answer::NONE);
                ctx.recorder.error(Severity::Application, format!("{ENDPOINT}: {error}"));
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        let status = response.status().as_u16();
        if status != 200 {
            ctx.recorder.record(ENDPOINT, opened.elapsed(), Answer { status: Some(status), body_bytes: 0 });
            // Too many streams (429, 503) is the server asking to come back later.
            let severity = if matches!(status, 429 | 503) { Severity::Trivial } else { Severity::Critical };
            ctx.recorder.error(severity, format!("{ENDPOINT}: {status}"));
            tokio::time::sleep(Duration::from_secs(1)).await;
            continue;
        }
        let mut events = LiveEvents::new(response);
        let mut first = true;
        loop {
            let next = tokio::select! {
                next = events.next() => next,
                _ = tokio::time::sleep_until(tokio::time::Instant::from_std(ctx.deadline)) => return,
            };
            let event = match next {
                Ok(Some(event)) => event,
                Ok(None) => break, // ended (a draining instance): open again
                Err(error) => {
                    ctx.recorder.error(Severity::Application, format!("{ENDPOINT}: {error}"));
                    break;
                }
            };
            if first {
                ctx.recorder.record(ENDPOINT, opened.elapsed(), Answer { status: Some(200), body_bytes: 0 });
                first = false;
            }
            match received(&ctx, &board, held.as_ref(), event) {
                Ok(page) => held = Some(page),
                Err(problem) => {
                    ctx.critical(format!("{ENDPOINT} ({board}): {problem}"));
                    return;
                }
            }
        }
    }
}

/// Checks a received event against what the viewer holds.
fn received(ctx: &Context, board: &Board, held: Option<&Held>, event: LiveEvent) -> Result<Held, String> {
    if event.name != "page" {
        return Err(format!("an event {:?} on a board that exists: {}", event.name, event.data));
    }
    let id = event.id.ok_or("a page without an id")?;
    let page = PageView::parse(board, &event.data)?;
    check_page(&page, Some(0))?;
    if let Some(held) = held {
        if held.id == id {
            return Err(format!("page {id} sent again though the viewer holds it"));
        }
        older_than(ctx, held, &page)?;
    }
    Ok(Held { page, id, at: Instant::now() })
}

/// Whether `page` could only have been read before the held one.
fn older_than(ctx: &Context, held: &Held, page: &PageView) -> Result<(), String> {
    for entry in &page.entries {
        let before = held.page.entries.iter().find(|before| before.id == entry.id);
        if let Some(before) = before.filter(|before| entry.score < before.score) {
            if !ctx.moderated_lately(entry.id) {
                return Err(format!("player {} shows {} after {}: an older page", entry.id, entry.score, before.score));
            }
        }
    }
    // A player of the held page who is gone though the new page ends below
    // their score there: they would still rank on it.
    if page.entries.len() == LIMIT {
        let last = page.entries.last().map_or(i64::MAX, |entry| entry.score);
        for before in &held.page.entries {
            let gone = !page.entries.iter().any(|entry| entry.id == before.id);
            if gone && last < before.score && !ctx.moderated_lately(before.id) {
                return Err(format!(
                    "player {} ({}) left a page that ends at {last}: an older page",
                    before.id, before.score
                ));
            }
        }
    }
    let since = held.at.checked_sub(Duration::from_secs(10)).unwrap_or(held.at);
    if page.total_players < held.page.total_players && !ctx.moderated_since(since) {
        return Err(format!("{} players after {}: an older page", page.total_players, held.page.total_players));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_comments_and_broken_blocks() {
        let event = parse_event("event: page\nid: ab\ndata: {\"a\":1}\n\n").unwrap().unwrap();
        assert_eq!(event, LiveEvent { name: "page".into(), id: Some("ab".into()), data: serde_json::json!({"a": 1}) });
        assert_eq!(parse_event(": ping\n\n").unwrap(), None);
        assert!(parse_event("event: page\n\n").is_err(), "no data");
        assert!(parse_event("event: page\ndata: {not json\n\n").is_err());
        assert!(parse_event("garbage\n\n").is_err());
    }
}

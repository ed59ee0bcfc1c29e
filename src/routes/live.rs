//! `/api/rankings/{board}/live` and `…/around/{user_id}/live`: the page or
//! the window as `text/event-stream`, pushed again whenever it changes.
//!
//! The query is checked and the first answer read before the stream opens,
//! so a bad request still gets its JSON error and status. Then: `event:
//! page` (`id`: a digest of the page, `data`: the RankingPage), again at each
//! change (see `usecases::live`), a `: ping` comment every 15 s, and the
//! end when the instance drains. When the answer goes away (the board is
//! deleted, the player banned), an `event: ended` with the error envelope
//! ends the stream (not `error`: a browser's EventSource fires an `error`
//! of its own on every lost connection).

use std::sync::Arc;
use std::time::Duration;

use actix_web::http::header::{self, HeaderValue};
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use futures_util::stream;
use serde::Deserialize;
use tokio::sync::watch;

use super::rankings::AroundQuery;
use super::schemas::BoardPath;
use super::{client_address, parse_id, paths};
use crate::domain::{parse_offset, PageLimit, PeriodSelector, Radius};
use crate::error::{ApiError, ErrorCode};
use crate::live::{LivePage, LiveQuery, Published, StreamSlot, Updates};
use crate::state::AppState;
use crate::usecases::live;

/// A comment line this often keeps proxies and clients from timing out.
const PING_EVERY: Duration = Duration::from_secs(15);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LivePageQuery {
    limit: Option<String>,
    offset: Option<String>,
    period: Option<String>,
    partition: Option<String>,
}

#[utoipa::path(get, path = paths::RANKING_LIVE, operation_id = "getRankingPageLive", summary = "A page of a board, pushed again whenever it changes (server-sent events)", tag = "rankings",
    params(
        crate::routes::schemas::BoardPath,
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 100, description = "1..100, default 10"),
        ("offset" = Option<i64>, Query, minimum = 0, description = "Position to start at, default 0"),
        ("period" = Option<String>, Query, pattern = "^(current|[0-9]{1,18})$", description = "`current` (default; the page follows the board into its next period at a reset) or a kept period's index"),
        ("partition" = Option<String>, Query, pattern = "^[A-Za-z0-9_-]{1,32}$", description = "A partition of a board with `partition_by` (v4): its own entries and ranks; one without entries reads as empty"),
        ("Last-Event-ID" = Option<String>, Header, description = "The id of the last page the client received: no page is sent until the answer differs from it"),
    ),
    responses(
        (status = 200, content_type = "text/event-stream", body = String,
            description = "`event: page` with an `id` and the RankingPage as `data`, at once and then within 1 s of any change (at most every 250 ms); `: ping` every 15 s; `event: ended` with the error envelope when the board is gone, then the end"),
    ))]
pub async fn page(
    state: web::Data<AppState>,
    request: HttpRequest,
    path: web::Path<BoardPath>,
    query: web::Query<LivePageQuery>,
) -> Result<HttpResponse, ApiError> {
    let query = LiveQuery::Page {
        board: path.into_inner().board,
        partition: query.partition.clone(),
        period: PeriodSelector::parse(query.period.as_deref())?,
        limit: PageLimit::parse(query.limit.as_deref(), 10)?.value(),
        offset: parse_offset(query.offset.as_deref())?,
    };
    open_stream(&state, &request, query).await
}

#[utoipa::path(get, path = paths::RANKING_AROUND_LIVE, operation_id = "getRankingAroundLive", summary = "The entries around a player, pushed again whenever they change (server-sent events)", tag = "rankings",
    params(
        crate::routes::schemas::BoardPath,
        ("user_id" = i64, Path, minimum = 1, description = "The player in the middle"),
        ("radius" = Option<i64>, Query, minimum = 0, maximum = 50, description = "0..50 entries on each side, default 5"),
        ("period" = Option<String>, Query, pattern = "^(current|[0-9]{1,18})$", description = "`current` (default) or a kept period's index"),
        ("partition" = Option<String>, Query, pattern = "^[A-Za-z0-9_-]{1,32}$", description = "A partition of a board with `partition_by` (v4): its own entries and ranks; one without entries reads as empty"),
        ("Last-Event-ID" = Option<String>, Header, description = "The id of the last page the client received: no page is sent until the answer differs from it"),
    ),
    responses(
        (status = 200, content_type = "text/event-stream", body = String,
            description = "As the live page: `event: page` events with the window as a RankingPage; `event: ended` (the error envelope) when the player or the board is gone"),
    ))]
pub async fn around(
    state: web::Data<AppState>,
    request: HttpRequest,
    path: web::Path<(String, String)>,
    query: web::Query<AroundQuery>,
) -> Result<HttpResponse, ApiError> {
    let (board, user_id) = path.into_inner();
    let query = LiveQuery::Around {
        user_id: parse_id(&user_id, ErrorCode::UserNotFound)?,
        board,
        partition: query.partition.clone(),
        period: PeriodSelector::parse(query.period.as_deref())?,
        radius: Radius::parse(query.radius.as_deref())?.value(),
    };
    open_stream(&state, &request, query).await
}

/// Takes a place in the limits, reads the first answer (its errors are the
/// plain GET's), and streams from there.
async fn open_stream(
    state: &web::Data<AppState>,
    request: &HttpRequest,
    query: LiveQuery,
) -> Result<HttpResponse, ApiError> {
    let slot = state.live.open(&client_address(request, state.settings.trust_forwarded_for))?;
    let first = live::answer(state, &query).await?;
    let updates = live::watch(state, query);
    let known = request.headers().get("last-event-id").and_then(|value| value.to_str().ok());
    let held = known == Some(first.id.as_str());
    let lifetime = Duration::from_secs(state.settings.live_lifetime_secs);
    let viewer = Viewer::new(updates, first, held, state.live.closing(), slot).ending_after(lifetime);
    Ok(HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        // nginx: pass each event on at once instead of buffering the body.
        .insert_header(("X-Accel-Buffering", HeaderValue::from_static("no")))
        .streaming(stream::unfold(viewer, |mut viewer| async move {
            let event = viewer.next_event().await?;
            Some((Ok::<_, actix_web::Error>(event), viewer))
        })))
}

/// One client's stream: what it was last sent, and what it waits on.
struct Viewer {
    updates: Updates,
    /// The page to send first (none when `Last-Event-ID` named it).
    first: Option<Arc<LivePage>>,
    /// The page the client holds: only a newer read that differs is sent.
    shown: Arc<LivePage>,
    ping: tokio::time::Interval,
    closing: watch::Receiver<bool>,
    /// When the stream ends at the latest (`LIVE_LIFETIME_SECS`): no
    /// stream holds its place, and its watcher, for ever.
    ends_at: tokio::time::Instant,
    ended: bool,
    _slot: StreamSlot,
}

impl Viewer {
    /// `held`: the client already holds `first` (its `Last-Event-ID`).
    fn new(updates: Updates, first: LivePage, held: bool, closing: watch::Receiver<bool>, slot: StreamSlot) -> Self {
        let first = Arc::new(first);
        let start = tokio::time::Instant::now() + PING_EVERY;
        Self {
            updates,
            first: (!held).then(|| Arc::clone(&first)),
            shown: first,
            ping: tokio::time::interval_at(start, PING_EVERY),
            closing,
            ends_at: tokio::time::Instant::now() + Duration::from_secs(86_400),
            ended: false,
            _slot: slot,
        }
    }

    /// Ends the stream `lifetime` from now.
    fn ending_after(self, lifetime: Duration) -> Self {
        Self { ends_at: tokio::time::Instant::now() + lifetime, ..self }
    }

    /// Whether `page` is news to this client: another answer, read after
    /// the one it holds (a watcher's read that began before this viewer's
    /// first read may be published after it, and must not step back).
    fn is_news(&self, page: &LivePage) -> bool {
        page.id != self.shown.id && page.read_at >= self.shown.read_at
    }

    /// The next bytes to send, or `None` when the stream ends.
    async fn next_event(&mut self) -> Option<Bytes> {
        if self.ended || *self.closing.borrow() || tokio::time::Instant::now() >= self.ends_at {
            return None;
        }
        if let Some(first) = self.first.take() {
            return Some(page_event(&first));
        }
        // What the watcher holds may be news already (a change since the first read).
        self.updates.mark_changed();
        loop {
            let wake = tokio::select! {
                changed = self.updates.changed() => if changed.is_ok() { Wake::Update } else { Wake::End },
                _ = self.ping.tick() => Wake::Ping,
                _ = self.closing.wait_for(|closing| *closing) => Wake::End,
                () = tokio::time::sleep_until(self.ends_at) => Wake::End,
            };
            match wake {
                Wake::End => return None,
                Wake::Ping => return Some(Bytes::from_static(b": ping\n\n")),
                Wake::Update => {}
            }
            let published = self.updates.borrow_and_update().clone();
            match published {
                Some(Published::Page(page)) if self.is_news(&page) => {
                    let event = page_event(&page);
                    self.shown = page;
                    return Some(event);
                }
                Some(Published::Ended(envelope)) => {
                    self.ended = true;
                    return Some(event("ended", None, &envelope));
                }
                _ => {}
            }
        }
    }
}

/// What woke a waiting viewer.
enum Wake {
    Update,
    Ping,
    /// The watcher is gone, or the instance drains.
    End,
}

fn page_event(page: &LivePage) -> Bytes {
    event("page", Some(&page.id), &page.body)
}

/// One server-sent event. The data is one line: compact JSON escapes
/// every line break inside strings.
fn event(name: &str, id: Option<&str>, data: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(data.len() + 64);
    out.extend_from_slice(b"event: ");
    out.extend_from_slice(name.as_bytes());
    if let Some(id) = id {
        out.extend_from_slice(b"\nid: ");
        out.extend_from_slice(id.as_bytes());
    }
    out.extend_from_slice(b"\ndata: ");
    out.extend_from_slice(data);
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::LiveHub;

    fn page(body: &'static [u8], read_at: std::time::Instant) -> LivePage {
        LivePage::new(Bytes::from_static(body), read_at)
    }

    /// Time stands still but for the timers: each wait ends at the next ping.
    #[tokio::test(start_paused = true)]
    async fn a_viewer_gets_news_only_and_a_ping_every_15_seconds_and_ends_at_the_drain() {
        let hub = Arc::new(LiveHub::for_tests(1, 1));
        let slot = hub.open("10.0.0.1").unwrap();
        let (sender, updates) = watch::channel(None);
        let first = page(b"{\"n\":1}", std::time::Instant::now());
        let mut viewer = Viewer::new(updates, first.clone(), false, hub.closing(), slot);
        assert!(viewer.next_event().await.unwrap().starts_with(b"event: page\nid: "));

        let quiet = tokio::time::Instant::now();
        assert_eq!(&viewer.next_event().await.unwrap()[..], b": ping\n\n");
        assert_eq!(quiet.elapsed(), PING_EVERY);
        // The page it holds again, or a page read before it: no news.
        sender.send_replace(Some(Published::Page(Arc::new(first.clone()))));
        assert_eq!(&viewer.next_event().await.unwrap()[..], b": ping\n\n");
        let older = page(b"{\"n\":0}", first.read_at - Duration::from_millis(1));
        sender.send_replace(Some(Published::Page(Arc::new(older))));
        assert_eq!(&viewer.next_event().await.unwrap()[..], b": ping\n\n");
        // A newer page is sent at once.
        let newer = page(b"{\"n\":2}", std::time::Instant::now());
        sender.send_replace(Some(Published::Page(Arc::new(newer.clone()))));
        assert_eq!(viewer.next_event().await.unwrap(), page_event(&newer));

        hub.close();
        assert_eq!(viewer.next_event().await, None, "a draining instance ends the stream");
    }

    #[tokio::test(start_paused = true)]
    async fn a_stream_ends_when_its_lifetime_is_over() {
        let hub = Arc::new(LiveHub::for_tests(1, 1));
        let (_sender, updates) = watch::channel(None);
        let first = page(b"{\"n\":1}", std::time::Instant::now());
        let lifetime = PING_EVERY * 2 + Duration::from_secs(1);
        let mut viewer =
            Viewer::new(updates, first, false, hub.closing(), hub.open("a").unwrap()).ending_after(lifetime);
        let opened = tokio::time::Instant::now();
        assert!(viewer.next_event().await.unwrap().starts_with(b"event: page"));
        assert_eq!(&viewer.next_event().await.unwrap()[..], b": ping\n\n");
        assert_eq!(&viewer.next_event().await.unwrap()[..], b": ping\n\n");
        assert_eq!(viewer.next_event().await, None, "over at its lifetime");
        assert_eq!(opened.elapsed(), lifetime);
        drop(viewer);
        assert_eq!(hub.open_streams(), 0, "its place is given back");
    }

    #[tokio::test]
    async fn a_client_holding_the_page_waits_for_the_next_one() {
        let hub = Arc::new(LiveHub::for_tests(1, 1));
        let (sender, updates) = watch::channel(None);
        let first = page(b"{\"n\":1}", std::time::Instant::now());
        let mut viewer = Viewer::new(updates, first, true, hub.closing(), hub.open("a").unwrap());
        let gone = ApiError::new(ErrorCode::BoardNotFound).envelope();
        sender.send_replace(Some(Published::Ended(gone.clone())));
        assert_eq!(viewer.next_event().await, Some(event("ended", None, &gone)), "no first page: it holds it");
        assert_eq!(viewer.next_event().await, None);
    }

    #[test]
    fn an_event_is_name_id_and_one_data_line() {
        assert_eq!(&event("page", Some("ab12"), b"{\"a\":1}")[..], b"event: page\nid: ab12\ndata: {\"a\":1}\n\n");
        assert_eq!(&event("ended", None, b"{}")[..], b"event: ended\ndata: {}\n\n");
    }
}

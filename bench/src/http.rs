//! The bench's HTTP client: one pooled keep-alive client for all virtual
//! users; every request is timed and recorded under its endpoint's route.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::{Method, Request, RequestBuilder};
use serde_json::Value;

use super::pacer::Pacer;
use super::stats::{Answer, Recorder, Severity};

/// How long a connection may wait in the pool for its next request.
/// Shorter than the server's own waits (actix: 5 s for a connection's
/// first request head, 5 s of keep-alive between requests), so that no
/// request is sent on a connection the server is closing just then. A
/// connection the client opened for a request that another connection
/// served first waits in the pool without having carried any; picked up
/// 5 s after it opened, its request met the server's 408 for a slow first
/// request (one CI run, RELIABILITY.md).
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(2);

/// A response as the scenario checks it.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub body: Value,
    pub text: String,
    pub content_type: String,
    /// `Retry-After` of a 429 or 503.
    pub retry_after: Option<Duration>,
    /// Whether the request was sent again after a 429 or 503: a repeated
    /// write may meet what its first attempt did (a replay, a 409).
    pub retried: bool,
}

impl Reply {
    /// The contract's error code, if this is an error envelope.
    pub fn error_code(&self) -> Option<&str> {
        self.body["error"]["code"].as_str()
    }
}

#[derive(Clone)]
pub struct Api {
    client: reqwest::Client,
    /// For live pages: no timeout on the whole exchange.
    streams: reqwest::Client,
    base: String,
    pub recorder: Arc<Recorder>,
    /// Responses slower than this count as trivial errors.
    slow: Duration,
    /// The open model's schedule (`--rate`), if any.
    pub pacer: Option<Arc<Pacer>>,
}

impl Api {
    pub fn new(
        base: &str,
        ca_file: Option<&Path>,
        recorder: Arc<Recorder>,
        timeout: Duration,
        slow: Duration,
        pacer: Option<Arc<Pacer>>,
    ) -> anyhow::Result<Self> {
        let mut client = reqwest::Client::builder()
            .timeout(timeout)
            .pool_max_idle_per_host(1024)
            .pool_idle_timeout(POOL_IDLE_TIMEOUT)
            .tcp_nodelay(true);
        let mut streams = reqwest::Client::builder()
            .pool_idle_timeout(POOL_IDLE_TIMEOUT)
            .connect_timeout(timeout)
            // A live page pings every 15 s: a longer silence is a dead stream.
            .read_timeout(Duration::from_secs(30))
            .tcp_nodelay(true);
        if let Some(path) = ca_file {
            let pem = std::fs::read(path).map_err(|error| anyhow::anyhow!("--ca-file {}: {error}", path.display()))?;
            let ca = reqwest::Certificate::from_pem(&pem)?;
            client = client.add_root_certificate(ca.clone());
            streams = streams.add_root_certificate(ca);
        }
        let (client, streams) = (client.build()?, streams.build()?);
        Ok(Self { client, streams, base: base.trim_end_matches('/').to_owned(), recorder, slow, pacer })
    }

    /// A request for a stream (a live page): no limit on the whole
    /// exchange, only on the silence between two reads.
    pub fn stream(&self, path: &str) -> RequestBuilder {
        self.streams.get(format!("{}{}", self.base, path))
    }

    pub fn request(&self, method: Method, path: &str) -> RequestBuilder {
        self.client.request(method, format!("{}{}", self.base, path))
    }

    /// Sends a request recorded under `endpoint` (e.g. "GET /api/users/{id}").
    ///
    /// A 429, and a 503 with `Retry-After` and an error envelope, are the
    /// server asking to come back later, not faults: the bench counts a
    /// trivial error, waits `Retry-After` (at most 2 s) and sends the request
    /// again, for up to [`RETRY_BUDGET`] in all. A score post without an
    /// `Idempotency-Key` is not sent again after a 503 (it may have been
    /// applied; the 503 goes back to the scenario, which finds out). Transport
    /// failures, timeouts, other 5xx and non-JSON bodies on JSON routes are
    /// application errors and yield `None`; every other answer is returned
    /// for the scenario to judge.
    pub async fn send(&self, endpoint: &str, request: RequestBuilder) -> Option<Reply> {
        self.send_with(endpoint, request, None).await
    }

    /// [`Api::send`] for a request that can never count, though it looks
    /// like an unkeyed score post (a deliberately invalid one): sent again
    /// after a 503 like any other, so a failover in the middle of a probe
    /// is waited out rather than taken for a wrong answer.
    pub async fn send_never_counted(&self, endpoint: &str, request: RequestBuilder) -> Option<Reply> {
        self.send_with(endpoint, request, Some(true)).await
    }

    async fn send_with(&self, endpoint: &str, request: RequestBuilder, repeatable: Option<bool>) -> Option<Reply> {
        let request = match request.build() {
            Ok(request) => request,
            Err(error) => {
                self.recorder.error(Severity::Application, format!("{endpoint}: bad request: {error}"));
                return None;
            }
        };
        let repeatable_after_503 = repeatable.unwrap_or_else(|| !is_unkeyed_score_post(&request));
        let started = Instant::now();
        let mut request = request;
        let mut retried = false;
        loop {
            let next = request.try_clone();
            let mut reply = self.send_once(endpoint, request).await?;
            reply.retried = retried;
            let wait = match (reply.status, reply.retry_after) {
                (429, after) => after.unwrap_or(Duration::from_secs(1)),
                (503, Some(after)) if repeatable_after_503 => after,
                _ => return Some(reply),
            };
            let Some(next) = next else { return Some(reply) };
            let wait = wait.clamp(Duration::from_millis(100), Duration::from_secs(2));
            if started.elapsed() + wait > RETRY_BUDGET {
                self.recorder.error(
                    Severity::Application,
                    format!("{endpoint}: still {} after {:?} of retries", reply.status, RETRY_BUDGET),
                );
                return None;
            }
            tokio::time::sleep(wait).await;
            request = next;
            retried = true;
        }
    }

    async fn send_once(&self, endpoint: &str, request: Request) -> Option<Reply> {
        // In the open model a request counts from its slot (see `bench::pacer`).
        let due = match &self.pacer {
            Some(pacer) => pacer.slot().await,
            None => None,
        };
        let started = due.unwrap_or_else(Instant::now);
        let result = self.client.execute(request).await;
        let reply = match result {
            Ok(response) => {
                let status = response.status().as_u16();
                let header = |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
                let content_type = header("content-type").unwrap_or_default();
                let retry_after = header("retry-after").and_then(|s| s.parse().ok()).map(Duration::from_secs);
                match response.text().await {
                    Ok(text) => Ok((status, content_type, text, retry_after)),
                    Err(error) => Err(format!("reading the body failed: {error}")),
                }
            }
            Err(error) if error.is_timeout() => Err("timed out".to_owned()),
            Err(error) => Err(format!("request failed: {error}")),
        };
        let latency = started.elapsed();
        let (status, content_type, text, retry_after) = match reply {
            Ok(parts) => parts,
            Err(why) => {
                self.recorder.record(endpoint, latency, Answer::NONE);
                self.recorder.error(Severity::Application, format!("{endpoint}: {why}"));
                return None;
            }
        };
        self.recorder.record(endpoint, latency, Answer { status: Some(status), body_bytes: text.len() });
        if latency > self.slow {
            self.recorder.error(Severity::Trivial, format!("{endpoint}: slow answer ({} ms)", latency.as_millis()));
        }
        let body = if content_type.starts_with("application/json") {
            match serde_json::from_str(&text) {
                Ok(body) => body,
                Err(error) => {
                    self.recorder.error(Severity::Application, format!("{endpoint}: malformed JSON ({error})"));
                    return None;
                }
            }
        } else {
            Value::Null
        };
        let reply = Reply { status, body, text, content_type, retry_after, retried: false };
        if status == 429 {
            self.recorder.error(Severity::Trivial, format!("{endpoint}: {}", super::report::RATE_LIMITED));
            return Some(reply);
        }
        if status == 503 && retry_after.is_some() && reply.error_code().is_some() {
            self.recorder.unavailable();
            self.recorder.error(Severity::Trivial, format!("{endpoint}: unavailable (503 {})", shorten(&reply.text)));
            return Some(reply);
        }
        if status >= 500 {
            self.recorder
                .error(Severity::Application, format!("{endpoint}: status {status}: {}", shorten(&reply.text)));
            return None;
        }
        Some(reply)
    }
}

/// How long the bench keeps sending a request the server answers with 429
/// or 503 + `Retry-After`: long enough to ride out a database restart.
pub const RETRY_BUDGET: Duration = Duration::from_secs(30);

/// The one request whose repetition could count twice: a score post (to
/// a built-in or a custom board) without an `Idempotency-Key`. (A repeated
/// registration meets a 409, a repeated logout a 401; the scenario
/// resolves both.)
fn is_unkeyed_score_post(request: &Request) -> bool {
    let path = request.url().path();
    let score_post = path == "/api/scores" || (path.starts_with("/api/boards/") && path.ends_with("/scores"));
    request.method() == Method::POST && score_post && !request.headers().contains_key("idempotency-key")
}

/// A body cut to a readable length for messages.
pub fn shorten(text: &str) -> String {
    const MAX: usize = 300;
    if text.len() <= MAX {
        return text.to_owned();
    }
    let mut end = MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

//! The bench's HTTP client: one pooled keep-alive client for all virtual
//! users; every request is timed and recorded under its endpoint's route.

use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::{Method, RequestBuilder};
use serde_json::Value;

use super::stats::{Recorder, Severity};

/// A response as the scenario checks it.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub body: Value,
    pub text: String,
    pub content_type: String,
    /// `Retry-After` of a 429 or 503.
    pub retry_after: Option<Duration>,
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
    base: String,
    pub recorder: Arc<Recorder>,
    /// Responses slower than this count as trivial errors.
    slow: Duration,
}

impl Api {
    pub fn new(base: &str, recorder: Arc<Recorder>, timeout: Duration, slow: Duration) -> anyhow::Result<Self> {
        let client =
            reqwest::Client::builder().timeout(timeout).pool_max_idle_per_host(1024).tcp_nodelay(true).build()?;
        Ok(Self { client, base: base.trim_end_matches('/').to_owned(), recorder, slow })
    }

    pub fn request(&self, method: Method, path: &str) -> RequestBuilder {
        self.client.request(method, format!("{}{}", self.base, path))
    }

    /// Sends a request recorded under `endpoint` (e.g. "GET /api/users/{id}").
    /// A 429 is the server's backpressure, not a fault: the bench waits its
    /// `Retry-After` (at most 2 s), counts a trivial error, and tries again,
    /// three times at most. Transport failures, timeouts, 5xx and non-JSON
    /// bodies on JSON routes are application errors and yield `None`; every
    /// other answer is returned for the scenario to judge.
    pub async fn send(&self, endpoint: &str, request: RequestBuilder) -> Option<Reply> {
        let mut request = request;
        for _ in 0..3 {
            let retry = request.try_clone();
            let reply = self.send_once(endpoint, request).await?;
            match retry {
                Some(next) if reply.status == 429 => {
                    let wait = reply.retry_after.unwrap_or(Duration::from_secs(1)).min(Duration::from_secs(2));
                    self.recorder.error(Severity::Trivial, format!("{endpoint}: rate limited (429), waited {wait:?}"));
                    tokio::time::sleep(wait).await;
                    request = next;
                }
                _ => return Some(reply),
            }
        }
        None
    }

    async fn send_once(&self, endpoint: &str, request: RequestBuilder) -> Option<Reply> {
        let started = Instant::now();
        let result = request.send().await;
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
                self.recorder.record(endpoint, latency, true);
                self.recorder.error(Severity::Application, format!("{endpoint}: {why}"));
                return None;
            }
        };
        let server_error = status >= 500;
        self.recorder.record(endpoint, latency, server_error);
        if latency > self.slow {
            self.recorder.error(Severity::Trivial, format!("{endpoint}: slow answer ({} ms)", latency.as_millis()));
        }
        if server_error {
            self.recorder.error(Severity::Application, format!("{endpoint}: status {status}: {}", shorten(&text)));
            return None;
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
        Some(Reply { status, body, text, content_type, retry_after })
    }
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

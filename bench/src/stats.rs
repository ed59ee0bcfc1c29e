//! What the run measured: per-endpoint latency histograms (HDR), a
//! per-second timeline for the report, and the error log.
//!
//! One short mutex hold per request; at tens of thousands of requests per
//! second that is microseconds of contention per second, far below what the
//! HTTP work costs (the bench's ceiling is in BENCHMARKS.md).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::Serialize;

/// Microsecond histograms up to 60 s at 2 significant figures (a few KiB each).
fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000, 2).expect("constant, valid histogram bounds")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// The server broke the contract: the run fails.
    Critical,
    /// 5xx, timeouts, malformed JSON: too many fail the run.
    Application,
    /// Slow answers: they only cost points.
    Trivial,
}

#[derive(Debug, Clone, Serialize)]
pub struct Message {
    pub severity: Severity,
    /// When it first happened.
    pub at_secs: f64,
    pub text: String,
    /// How many times it happened (identical texts are one message).
    pub count: u64,
}

/// What kind of work a successful request was, for the score.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Work {
    Read,
    Write,
    Login,
}

struct Endpoint {
    latency: Histogram<u64>,
    errors: u64,
    total_micros: u64,
    /// Answers by status class: 2xx, 3xx, 4xx, 5xx.
    classes: [u64; 4],
    body_bytes: u64,
}

/// When a phase of the run began.
#[derive(Debug, Clone, Serialize)]
pub struct Phase {
    pub at_secs: f64,
    pub name: String,
}

/// What a request came back with.
#[derive(Debug, Clone, Copy)]
pub struct Answer {
    /// `None`: no answer (a timeout, a transport failure).
    pub status: Option<u16>,
    pub body_bytes: usize,
}

impl Answer {
    pub const NONE: Self = Self { status: None, body_bytes: 0 };

    /// An error in the table's sense: no answer, or a 5xx.
    fn is_error(self) -> bool {
        self.status.is_none_or(|status| status >= 500)
    }
}

struct Second {
    requests: u64,
    errors: u64,
    latency: Histogram<u64>,
}

#[derive(Default)]
struct Tallies {
    reads: u64,
    writes: u64,
    logins: u64,
}

pub struct Recorder {
    started: Instant,
    endpoints: Mutex<BTreeMap<String, Endpoint>>,
    timeline: Mutex<Vec<Second>>,
    tallies: Mutex<Tallies>,
    messages: Mutex<Vec<Message>>,
    phases: Mutex<Vec<Phase>>,
    counts: [AtomicU64; 3],
    requests: AtomicU64,
    /// 503 answers with `Retry-After`: the server said "later".
    unavailable: AtomicU64,
    /// Set on the first critical error: workers stop early.
    failed: AtomicBool,
}

/// Keep at most this many messages of each severity (counts stay exact).
const MESSAGES_KEPT: usize = 50;

impl Recorder {
    pub fn new() -> Self {
        Self {
            started: Instant::now(),
            endpoints: Mutex::default(),
            timeline: Mutex::default(),
            tallies: Mutex::default(),
            messages: Mutex::default(),
            phases: Mutex::default(),
            counts: Default::default(),
            requests: AtomicU64::new(0),
            unavailable: AtomicU64::new(0),
            failed: AtomicBool::new(false),
        }
    }

    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Marks the start of a phase of the run (shown on the report's charts).
    pub fn phase(&self, name: impl Into<String>) {
        if let Ok(mut phases) = self.phases.lock() {
            phases.push(Phase { at_secs: self.started.elapsed().as_secs_f64(), name: name.into() });
        }
    }

    pub fn phases(&self) -> Vec<Phase> {
        self.phases.lock().map(|p| p.clone()).unwrap_or_default()
    }

    pub fn record(&self, endpoint: &str, latency: Duration, answer: Answer) {
        let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX).max(1);
        let error = answer.is_error();
        self.requests.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut endpoints) = self.endpoints.lock() {
            let stats = endpoints.entry(endpoint.to_owned()).or_insert_with(|| Endpoint {
                latency: histogram(),
                errors: 0,
                total_micros: 0,
                classes: [0; 4],
                body_bytes: 0,
            });
            stats.latency.saturating_record(micros);
            stats.errors += u64::from(error);
            stats.total_micros += micros;
            if let Some(class) = answer.status.map(|status| usize::from(status / 100)).filter(|c| (2..=5).contains(c)) {
                stats.classes[class - 2] += 1;
            }
            stats.body_bytes += answer.body_bytes as u64;
        }
        let second = self.started.elapsed().as_secs() as usize;
        if let Ok(mut timeline) = self.timeline.lock() {
            while timeline.len() <= second {
                timeline.push(Second { requests: 0, errors: 0, latency: histogram() });
            }
            let slot = &mut timeline[second];
            slot.requests += 1;
            slot.errors += u64::from(error);
            slot.latency.saturating_record(micros);
        }
    }

    pub fn succeeded(&self, work: Work) {
        if let Ok(mut tallies) = self.tallies.lock() {
            match work {
                Work::Read => tallies.reads += 1,
                Work::Write => tallies.writes += 1,
                Work::Login => tallies.logins += 1,
            }
        }
    }

    pub fn error(&self, severity: Severity, text: String) {
        let index = severity as usize;
        self.counts[index].fetch_add(1, Ordering::Relaxed);
        if severity == Severity::Critical {
            self.failed.store(true, Ordering::Relaxed);
        }
        if let Ok(mut messages) = self.messages.lock() {
            if let Some(same) = messages.iter_mut().find(|m| m.severity == severity && m.text == text) {
                same.count += 1;
            } else if messages.iter().filter(|m| m.severity == severity).count() < MESSAGES_KEPT {
                messages.push(Message { severity, at_secs: self.started.elapsed().as_secs_f64(), text, count: 1 });
            }
        }
    }

    pub fn unavailable(&self) {
        self.unavailable.fetch_add(1, Ordering::Relaxed);
    }

    pub fn unavailable_count(&self) -> u64 {
        self.unavailable.load(Ordering::Relaxed)
    }

    pub fn count(&self, severity: Severity) -> u64 {
        self.counts[severity as usize].load(Ordering::Relaxed)
    }

    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }

    pub fn messages(&self) -> Vec<Message> {
        self.messages.lock().map(|m| m.clone()).unwrap_or_default()
    }

    /// (reads, writes, logins) that succeeded.
    pub fn tallies(&self) -> (u64, u64, u64) {
        self.tallies.lock().map(|t| (t.reads, t.writes, t.logins)).unwrap_or_default()
    }

    /// Per-endpoint summary, sorted by total time (alp's default view).
    /// A latency over every request recorded, in milliseconds.
    pub fn overall_latency_ms(&self, measure: super::threshold::Measure) -> f64 {
        let Ok(endpoints) = self.endpoints.lock() else { return f64::INFINITY };
        let mut all = histogram();
        for endpoint in endpoints.values() {
            let _ = all.add(&endpoint.latency);
        }
        let micros = match measure {
            super::threshold::Measure::Quantile(q) => all.value_at_quantile(q),
            super::threshold::Measure::Max => all.max(),
        };
        micros as f64 / 1000.0
    }

    pub fn endpoints(&self) -> Vec<EndpointSummary> {
        let Ok(endpoints) = self.endpoints.lock() else { return Vec::new() };
        let ms = |micros: u64| micros as f64 / 1000.0;
        let mut rows: Vec<EndpointSummary> = endpoints
            .iter()
            .map(|(name, e)| {
                let (method, path) = name.split_once(' ').unwrap_or(("", name));
                let count = e.latency.len();
                EndpointSummary {
                    method: method.to_owned(),
                    path: path.to_owned(),
                    count,
                    errors: e.errors,
                    status_classes: e.classes,
                    min_ms: ms(e.latency.min()),
                    avg_ms: ms(e.total_micros) / count.max(1) as f64,
                    p50_ms: ms(e.latency.value_at_quantile(0.50)),
                    p90_ms: ms(e.latency.value_at_quantile(0.90)),
                    p95_ms: ms(e.latency.value_at_quantile(0.95)),
                    p99_ms: ms(e.latency.value_at_quantile(0.99)),
                    max_ms: ms(e.latency.max()),
                    total_ms: ms(e.total_micros),
                    avg_body_bytes: e.body_bytes / count.max(1),
                }
            })
            .collect();
        rows.sort_by(|a, b| b.total_ms.total_cmp(&a.total_ms));
        rows
    }

    /// Per second: requests, errors, p50 and p99 in ms.
    pub fn timeline(&self) -> Vec<SecondSummary> {
        let Ok(timeline) = self.timeline.lock() else { return Vec::new() };
        timeline
            .iter()
            .enumerate()
            .map(|(second, s)| SecondSummary {
                second: second as u64,
                requests: s.requests,
                errors: s.errors,
                p50_ms: s.latency.value_at_quantile(0.50) as f64 / 1000.0,
                p99_ms: s.latency.value_at_quantile(0.99) as f64 / 1000.0,
            })
            .collect()
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct EndpointSummary {
    pub method: String,
    pub path: String,
    pub count: u64,
    /// No answer, or a 5xx.
    pub errors: u64,
    /// Answers per status class: 2xx, 3xx, 4xx, 5xx.
    pub status_classes: [u64; 4],
    pub min_ms: f64,
    pub avg_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub total_ms: f64,
    /// Mean response body size.
    pub avg_body_bytes: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct SecondSummary {
    pub second: u64,
    pub requests: u64,
    pub errors: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summarises_endpoints_by_total_time() {
        let recorder = Recorder::new();
        for (ms, status) in [(1, 200), (2, 200), (3, 304), (4, 404), (100, 200)] {
            recorder.record("GET /a", Duration::from_millis(ms), Answer { status: Some(status), body_bytes: 100 });
        }
        recorder.record("POST /b", Duration::from_millis(500), Answer::NONE);
        let rows = recorder.endpoints();
        assert_eq!(rows[0].path, "/b");
        assert_eq!(rows[0].errors, 1);
        assert_eq!(rows[1].count, 5);
        assert_eq!(rows[1].status_classes, [3, 1, 1, 0]);
        assert_eq!(rows[1].avg_body_bytes, 100);
        assert!((rows[1].avg_ms - 22.0).abs() < 0.5, "{}", rows[1].avg_ms);
        assert!((rows[1].p50_ms - 3.0).abs() < 0.1, "{}", rows[1].p50_ms);
        assert!(rows[1].max_ms >= 99.0);
        assert_eq!(recorder.requests(), 6);
        assert_eq!(recorder.timeline()[0].requests, 6);
    }

    #[test]
    fn a_critical_error_fails_the_run_and_messages_are_capped() {
        let recorder = Recorder::new();
        for i in 0..100 {
            recorder.error(Severity::Trivial, format!("slow {i}"));
        }
        for _ in 0..82 {
            recorder.error(Severity::Application, "POST /api/sessions: rate limited (429)".into());
        }
        assert!(!recorder.failed());
        recorder.error(Severity::Critical, "wrong rank".into());
        assert!(recorder.failed());
        assert_eq!(recorder.count(Severity::Trivial), 100);
        let messages = recorder.messages();
        assert_eq!(messages.len(), MESSAGES_KEPT + 2, "repeats are one message");
        assert_eq!(messages.iter().find(|m| m.severity == Severity::Application).unwrap().count, 82);
    }
}

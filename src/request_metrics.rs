//! `hiscore_http_requests_total` and `hiscore_http_request_duration_seconds`
//! by (method, route, status), counted in shards, one per thread, and summed
//! when `/metrics` is read. Every request counts itself, and a counter both
//! worker threads write moves its cache line between the cores on every
//! write: with prometheus' own counter and histogram that was five such
//! writes a request, plus a lock to find the series (issue 43: 7 % of a
//! cached page's CPU went to the counts and the in-flight count). Here a
//! request writes two counters of its own thread's shard, found through a
//! map of its own thread.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use prometheus::core::{Collector, Desc};
use prometheus::proto;

use crate::shards::{self, Padded, SHARDS};

/// The latency buckets' upper bounds, in seconds.
const BOUNDS: [f64; 13] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0];

/// A request's labels: method, route, status (from fixed sets, see
/// `Metrics::observe`).
pub type RequestLabels = (&'static str, &'static str, u16);

/// Both families; clones count into the same series.
#[derive(Clone)]
pub struct RequestMetrics {
    inner: Arc<Inner>,
}

struct Inner {
    /// Tells this registry's series apart in the threads' maps (tests run
    /// many servers in one process, one after another on the same threads).
    id: u64,
    /// `hiscore_http_requests_total`, then the duration histogram.
    descs: [Desc; 2],
    series: RwLock<HashMap<RequestLabels, Arc<Series>>>,
}

struct Series {
    shards: [Padded<Shard>; SHARDS],
}

/// One thread's counts of a series.
#[derive(Default)]
struct Shard {
    /// Requests per latency bucket, the last above every bound: their sum
    /// is the request count, so the counter and the histogram never
    /// disagree in a scrape.
    buckets: [AtomicU64; BOUNDS.len() + 1],
    /// Their latencies' sum, in nanoseconds.
    nanos: AtomicU64,
}

/// A series as a thread finds it: the registry's id, the method's and the
/// route's address and length (every label is a `'static` string, and a
/// linker may place one text at the start of another; two copies of one
/// text only find the same shared series twice), the status.
type ThreadKey = (u64, [usize; 4], u16);

thread_local! {
    /// This thread's series, hashed with foldhash: its keys are the
    /// server's own, never a client's, and SipHash was a measurable part
    /// of a kept answer's cost.
    static KEPT: RefCell<HashMap<ThreadKey, Arc<Series>, foldhash::fast::FixedState>> =
        RefCell::new(HashMap::with_hasher(foldhash::fast::FixedState::default()));
}

impl RequestMetrics {
    pub fn new() -> prometheus::Result<Self> {
        static IDS: AtomicU64 = AtomicU64::new(0);
        let labels = || ["method", "route", "status"].map(String::from).to_vec();
        let desc = |name: &str, help: &str| Desc::new(name.into(), help.into(), labels(), HashMap::new());
        Ok(Self {
            inner: Arc::new(Inner {
                id: IDS.fetch_add(1, Ordering::Relaxed),
                descs: [
                    desc("hiscore_http_requests_total", "HTTP requests served")?,
                    desc("hiscore_http_request_duration_seconds", "HTTP request latency")?,
                ],
                series: RwLock::new(HashMap::new()),
            }),
        })
    }

    /// Counts one request that took `seconds`.
    pub fn observe(&self, labels: RequestLabels, seconds: f64) {
        let (method, route, status) = labels;
        let texts = [method.as_ptr() as usize, method.len(), route.as_ptr() as usize, route.len()];
        let key = (self.inner.id, texts, status);
        let bucket = BOUNDS.iter().position(|bound| seconds <= *bound).unwrap_or(BOUNDS.len());
        let nanos = (seconds * 1e9) as u64;
        KEPT.with(|kept| {
            let mut kept = kept.borrow_mut();
            let series = kept.entry(key).or_insert_with(|| self.inner.series(labels));
            let Padded(shard) = &series.shards[shards::this_thread()];
            shard.buckets[bucket].fetch_add(1, Ordering::Relaxed);
            shard.nanos.fetch_add(nanos, Ordering::Relaxed);
        });
    }
}

impl Inner {
    /// The shared series of `labels`, made on first use.
    fn series(&self, labels: RequestLabels) -> Arc<Series> {
        if let Some(series) = self.series.read().unwrap_or_else(PoisonError::into_inner).get(&labels) {
            return Arc::clone(series);
        }
        let mut all = self.series.write().unwrap_or_else(PoisonError::into_inner);
        let series = all.entry(labels).or_insert_with(|| Arc::new(Series { shards: Default::default() }));
        Arc::clone(series)
    }
}

impl Series {
    /// Requests per bucket and the latencies' sum in seconds, over every shard.
    fn totals(&self) -> ([u64; BOUNDS.len() + 1], f64) {
        let mut buckets = [0; BOUNDS.len() + 1];
        let mut nanos = 0u64;
        for Padded(shard) in &self.shards {
            for (total, count) in buckets.iter_mut().zip(&shard.buckets) {
                *total += count.load(Ordering::Relaxed);
            }
            nanos = nanos.wrapping_add(shard.nanos.load(Ordering::Relaxed));
        }
        (buckets, nanos as f64 / 1e9)
    }
}

impl Collector for RequestMetrics {
    fn desc(&self) -> Vec<&Desc> {
        self.inner.descs.iter().collect()
    }

    fn collect(&self) -> Vec<proto::MetricFamily> {
        let family = |desc: &Desc, kind| {
            let mut family = proto::MetricFamily::default();
            family.set_name(desc.fq_name.clone());
            family.set_help(desc.help.clone());
            family.set_field_type(kind);
            family
        };
        let mut requests = family(&self.inner.descs[0], proto::MetricType::COUNTER);
        let mut latency = family(&self.inner.descs[1], proto::MetricType::HISTOGRAM);
        let all = self.inner.series.read().unwrap_or_else(PoisonError::into_inner);
        let mut labelled: Vec<_> = all.iter().collect();
        labelled.sort_by_key(|(labels, _)| **labels);
        for ((method, route, status), series) in labelled {
            let labels: Vec<proto::LabelPair> =
                [("method", method.to_string()), ("route", route.to_string()), ("status", status.to_string())]
                    .into_iter()
                    .map(|(name, value)| {
                        let mut pair = proto::LabelPair::default();
                        pair.set_name(name.to_owned());
                        pair.set_value(value);
                        pair
                    })
                    .collect();
            let (buckets, seconds) = series.totals();
            let count: u64 = buckets.iter().sum();

            let mut counter = proto::Counter::default();
            counter.set_value(count as f64);
            let mut metric = proto::Metric::from_label(labels.clone());
            metric.set_counter(counter);
            requests.mut_metric().push(metric);

            let mut cumulative = 0;
            let bounded = BOUNDS.iter().zip(buckets).map(|(bound, in_bucket)| {
                cumulative += in_bucket;
                let mut bucket = proto::Bucket::default();
                bucket.set_upper_bound(*bound);
                bucket.set_cumulative_count(cumulative);
                bucket
            });
            let mut histogram = proto::Histogram::default();
            histogram.set_bucket(bounded.collect());
            histogram.set_sample_count(count);
            histogram.set_sample_sum(seconds);
            let mut metric = proto::Metric::from_label(labels);
            metric.set_histogram(histogram);
            latency.mut_metric().push(metric);
        }
        vec![requests, latency]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exposition(metrics: &RequestMetrics) -> String {
        let registry = prometheus::Registry::new();
        registry.register(Box::new(metrics.clone())).unwrap();
        let mut out = String::new();
        prometheus::TextEncoder::new().encode_utf8(&registry.gather(), &mut out).unwrap();
        out
    }

    /// Counts from many threads (more than there are shards) all arrive,
    /// each in its bucket, and two registries never mix their counts.
    #[test]
    fn counts_from_every_thread_sum_exactly() {
        let metrics = RequestMetrics::new().unwrap();
        let other = RequestMetrics::new().unwrap();
        let threads: Vec<_> = (0..12)
            .map(|_| {
                let metrics = metrics.clone();
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        metrics.observe(("GET", "/api/rankings/{board}", 200), 0.0002);
                    }
                    metrics.observe(("GET", "/api/rankings/{board}", 200), 0.3);
                    metrics.observe(("POST", "/api/scores", 429), 10.0);
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        other.observe(("GET", "/api/rankings/{board}", 200), 0.0002);
        let page = r#"method="GET",route="/api/rankings/{board}",status="200""#;
        let text = exposition(&metrics);
        for line in [
            format!("hiscore_http_requests_total{{{page}}} 12012"),
            format!("hiscore_http_request_duration_seconds_bucket{{{page},le=\"0.0005\"}} 12000"),
            format!("hiscore_http_request_duration_seconds_bucket{{{page},le=\"0.25\"}} 12000"),
            format!("hiscore_http_request_duration_seconds_bucket{{{page},le=\"0.5\"}} 12012"),
            format!("hiscore_http_request_duration_seconds_bucket{{{page},le=\"+Inf\"}} 12012"),
            format!("hiscore_http_request_duration_seconds_count{{{page}}} 12012"),
            r#"hiscore_http_requests_total{method="POST",route="/api/scores",status="429"} 12"#.to_owned(),
            r#"hiscore_http_request_duration_seconds_bucket{method="POST",route="/api/scores",status="429",le="5"} 0"#
                .to_owned(),
            r#"hiscore_http_request_duration_seconds_bucket{method="POST",route="/api/scores",status="429",le="+Inf"} 12"#
                .to_owned(),
        ] {
            assert!(text.lines().any(|got| got == line), "{line} missing from\n{text}");
        }
        let sum: f64 = text
            .lines()
            .find_map(|line| line.strip_prefix(&format!("hiscore_http_request_duration_seconds_sum{{{page}}} ")))
            .unwrap()
            .parse()
            .unwrap();
        assert!((sum - (12_000.0 * 0.0002 + 12.0 * 0.3)).abs() < 1e-6, "{sum}");
        assert!(exposition(&other).contains(&format!("hiscore_http_requests_total{{{page}}} 1\n")));
    }
}

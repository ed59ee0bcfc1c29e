//! Live pages' bookkeeping on one instance: the watchers (one per distinct
//! question being watched, see `usecases::live`), the boards they watch
//! (one change signal each), the limits on open streams, and the signal that ends them all
//! when the instance drains.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix_web::web::Bytes;
use prometheus::IntCounterVec;
use sha2::{Digest, Sha256};
use tokio::sync::watch;

use crate::domain::PeriodSelector;
use crate::error::{ApiError, ErrorCode};

/// What a live page answers: the parsed query of the plain GET it mirrors.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum LiveQuery {
    Page { board: String, partition: Option<String>, period: PeriodSelector, limit: i64, offset: i64 },
    Around { board: String, partition: Option<String>, period: PeriodSelector, user_id: i64, radius: i64 },
}

impl LiveQuery {
    /// The board the answer depends on, as asked.
    pub fn board_watch(&self) -> BoardWatch {
        match self {
            Self::Page { board, partition, period, .. } | Self::Around { board, partition, period, .. } => {
                (board.clone(), partition.clone(), *period)
            }
        }
    }
}

/// One answer: the RankingPage JSON and its event id (a digest of the
/// bytes, so that any instance gives the same page the same id and a
/// reconnect's `Last-Event-ID` can be checked without any state).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LivePage {
    pub id: String,
    pub body: Bytes,
    /// When the read that gave it began: of two pages, the later read is
    /// at least as new.
    pub read_at: Instant,
}

impl LivePage {
    pub fn new(body: Bytes, read_at: Instant) -> Self {
        Self { id: page_id(&body), body, read_at }
    }
}

/// What a watcher publishes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Published {
    Page(Arc<LivePage>),
    /// The question has no answer any more (the board was deleted, the
    /// player banned): the error's JSON envelope, then the stream ends.
    Ended(Bytes),
}

/// The watchers and the count of open streams, per instance.
pub struct LiveHub {
    watchers: Mutex<HashMap<LiveQuery, watch::Sender<Option<Published>>>>,
    /// One signal per board (and period selector) being watched, bumped by
    /// its ticker whenever the board changed (see `usecases::live`).
    boards: Mutex<HashMap<BoardWatch, watch::Sender<u64>>>,
    /// `hiscore_live_reads_total`: what the watchers cost.
    reads: IntCounterVec,
    streams: Mutex<Streams>,
    per_address: u32,
    max: u32,
    /// Set once when the instance drains: every stream ends.
    closing: watch::Sender<bool>,
}

/// A board as live pages watch it: its id as asked and the period selector.
/// A board (with the partition read, if any) and period, as asked.
pub type BoardWatch = (String, Option<String>, PeriodSelector);

#[derive(Default)]
struct Streams {
    by_address: HashMap<String, u32>,
    total: u32,
}

/// A stream's place in the limits, given back when the stream ends.
pub struct StreamSlot {
    hub: Arc<LiveHub>,
    address: String,
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let Ok(mut streams) = self.hub.streams.lock() else { return };
        streams.total = streams.total.saturating_sub(1);
        if let Some(count) = streams.by_address.get_mut(&self.address) {
            *count -= 1;
            if *count == 0 {
                streams.by_address.remove(&self.address);
            }
        }
    }
}

impl LiveHub {
    pub fn new(per_address: u32, max: u32, reads: IntCounterVec) -> Self {
        Self {
            watchers: Mutex::default(),
            boards: Mutex::default(),
            reads,
            streams: Mutex::default(),
            per_address,
            max,
            closing: watch::Sender::new(false),
        }
    }

    /// A place for one more stream from `address`: 429 beyond the per-address
    /// limit, 503 `too_many_streams` beyond the instance's.
    pub fn open(self: &Arc<Self>, address: &str) -> Result<StreamSlot, ApiError> {
        let mut streams = self.streams.lock().map_err(|_| anyhow::anyhow!("the live streams' lock is poisoned"))?;
        if streams.total >= self.max {
            return Err(ErrorCode::TooManyStreams.into());
        }
        let count = streams.by_address.entry(address.to_owned()).or_default();
        if *count >= self.per_address {
            return Err(ApiError::too_many_requests(
                "too many live pages from this address; close one first",
                Duration::from_secs(5),
                "live-address",
            ));
        }
        *count += 1;
        streams.total += 1;
        Ok(StreamSlot { hub: Arc::clone(self), address: address.to_owned() })
    }

    /// A receiver of `board`'s change signal, and its sender when this call
    /// created it (the caller then starts the board's ticker). `None` only
    /// when the map's lock is poisoned.
    pub fn board_changes(&self, board: &BoardWatch) -> Option<(watch::Receiver<u64>, Option<watch::Sender<u64>>)> {
        let mut boards = self.boards.lock().ok()?;
        if let Some(sender) = boards.get(board) {
            return Some((sender.subscribe(), None));
        }
        let (sender, receiver) = watch::channel(0);
        boards.insert(board.clone(), sender.clone());
        Some((receiver, Some(sender)))
    }

    /// Forgets `board`'s ticker unless a watcher subscribed meanwhile (the
    /// same lock as subscribing); true when it is forgotten.
    pub fn forget_unwatched_board(&self, board: &BoardWatch, sender: &watch::Sender<u64>) -> bool {
        let Ok(mut boards) = self.boards.lock() else { return true };
        if sender.receiver_count() > 0 {
            return false;
        }
        boards.remove(board);
        true
    }

    /// Counts a board's stamp read in Redis.
    pub fn count_stamp_read(&self) {
        self.reads.with_label_values(&["stamp"]).inc();
    }

    /// Counts a watcher's question asked again.
    pub fn count_page_read(&self) {
        self.reads.with_label_values(&["page"]).inc();
    }

    /// Live streams open on this instance (for `/metrics`).
    pub fn open_streams(&self) -> u32 {
        self.streams.lock().map_or(0, |streams| streams.total)
    }

    /// Questions being watched on this instance (for `/metrics`).
    pub fn watchers(&self) -> usize {
        self.watchers.lock().map_or(0, |watchers| watchers.len())
    }

    /// Ends every stream (the instance drains; they would hold it open).
    pub fn close(&self) {
        self.closing.send_replace(true);
    }

    /// Resolves when the instance drains.
    pub fn closing(&self) -> watch::Receiver<bool> {
        self.closing.subscribe()
    }

    /// A receiver of `query`'s watcher, and its sender when this call
    /// created it (the caller then starts the watcher). `None` only when the
    /// map's lock is poisoned.
    pub fn subscribe(&self, query: &LiveQuery) -> Option<(Updates, Option<watch::Sender<Option<Published>>>)> {
        let mut watchers = self.watchers.lock().ok()?;
        if let Some(sender) = watchers.get(query) {
            return Some((sender.subscribe(), None));
        }
        let (sender, receiver) = watch::channel(None);
        watchers.insert(query.clone(), sender.clone());
        Some((receiver, Some(sender)))
    }

    /// Forgets `query`'s watcher unless a viewer subscribed meanwhile
    /// (subscribing takes the same lock, so none can slip in after the
    /// check) or it has ended; true when it is forgotten.
    pub fn forget_unwatched(&self, query: &LiveQuery, sender: &watch::Sender<Option<Published>>) -> bool {
        let Ok(mut watchers) = self.watchers.lock() else { return true };
        if sender.receiver_count() > 0 && !matches!(*sender.borrow(), Some(Published::Ended(_))) {
            return false;
        }
        watchers.remove(query);
        true
    }
}

#[cfg(test)]
impl LiveHub {
    /// A hub whose reads count into a registry of its own.
    pub fn for_tests(per_address: u32, max: u32) -> Self {
        let reads = IntCounterVec::new(prometheus::Opts::new("live_reads", "test"), &["what"]).expect("a valid metric");
        Self::new(per_address, max, reads)
    }
}

/// What a viewer receives from its watcher.
pub type Updates = watch::Receiver<Option<Published>>;

fn page_id(body: &[u8]) -> String {
    Sha256::digest(body)[..12].iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_id_depends_on_the_bytes_only() {
        assert_eq!(page_id(b"{\"entries\":[]}"), page_id(b"{\"entries\":[]}"));
        assert_ne!(page_id(b"{\"entries\":[]}"), page_id(b"{\"entries\":[1]}"));
        assert_eq!(page_id(b"x").len(), 24);
    }

    #[test]
    fn streams_are_limited_per_address_and_per_instance() {
        let hub = Arc::new(LiveHub::for_tests(2, 3));
        let first = hub.open("10.0.0.1").unwrap();
        let _second = hub.open("10.0.0.1").unwrap();
        assert_eq!(hub.open("10.0.0.1").err().map(|error| error.code()), Some(ErrorCode::TooManyRequests));
        let _third = hub.open("10.0.0.2").unwrap();
        assert_eq!(hub.open("10.0.0.3").err().map(|error| error.code()), Some(ErrorCode::TooManyStreams));
        drop(first);
        assert_eq!(hub.open_streams(), 2);
        assert!(hub.open("10.0.0.1").is_ok(), "a closed stream gives its place back");
    }
}

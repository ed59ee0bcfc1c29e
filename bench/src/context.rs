//! What every task of a bench run shares: the target, the recorder, the
//! run's players and boards, and how an answer is checked against what the
//! contract allows.

use std::collections::HashMap;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::Instant;

use rand::rngs::StdRng;
use rand::SeedableRng;

use super::http::{shorten, Api, Reply};
use super::model::{BenchBoard, Movements, PlayerModel};
use super::stats::{Recorder, Severity};

/// What every virtual user shares.
pub struct Context {
    pub api: Api,
    pub recorder: Arc<Recorder>,
    pub deadline: Instant,
    /// Makes this run's login names unique on a target that is not wiped.
    pub run_id: String,
    pub movements: Movements,
    /// Players found on the quiet board before the load (best, total).
    /// The bench never posts for them, so they never move.
    pub resident: HashMap<i64, (i64, i64)>,
    /// Whether boards are small enough to walk end to end.
    pub full_walks: bool,
    /// Static assets of the target's page (`/` first), if it serves one.
    pub static_paths: Vec<String>,
    /// Players whose runs ended, for the final exact check (and to carry
    /// on as, once `max_players` are registered).
    pub finished: std::sync::Mutex<Vec<PlayerModel>>,
    pub max_players: Option<usize>,
    pub registered: AtomicUsize,
    /// The custom boards this run created (with an admin token).
    pub boards: Vec<Arc<BenchBoard>>,
    /// With an admin token the run also moderates (see `bench::moderation`).
    pub admin_token: Option<String>,
    /// Players being moderated (`None`) or when their last moderation
    /// ended: a page read before it may still show them as they were.
    pub moderated: std::sync::Mutex<HashMap<i64, Option<Instant>>>,
    pub randomness: Randomness,
}

/// Where each task of the scenario gets its random numbers: fresh
/// randomness, or with `--scenario-seed` one stream per task derived from
/// the seed (the n-th task started gets the n-th stream).
pub struct Randomness {
    seed: Option<u64>,
    streams: std::sync::atomic::AtomicU64,
}

impl Randomness {
    pub fn new(seed: Option<u64>) -> Self {
        Self { seed, streams: std::sync::atomic::AtomicU64::new(0) }
    }

    pub fn stream(&self) -> StdRng {
        match self.seed {
            Some(seed) => {
                let stream = self.streams.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                // Spread the streams apart (SplitMix64's increment).
                StdRng::seed_from_u64(seed.wrapping_add(stream.wrapping_mul(0x9E37_79B9_7F4A_7C15)))
            }
            None => StdRng::from_entropy(),
        }
    }
}

impl Context {
    pub fn running(&self) -> bool {
        Instant::now() < self.deadline && !self.recorder.failed()
    }

    /// Whether a player was moderated lately (or is being): what a page
    /// read a moment ago showed of them may have changed since.
    pub fn moderated_lately(&self, id: i64) -> bool {
        const LATELY: std::time::Duration = std::time::Duration::from_secs(10);
        let Ok(moderated) = self.moderated.lock() else { return false };
        moderated.get(&id).is_some_and(|ended| ended.is_none_or(|ended| ended.elapsed() < LATELY))
    }

    /// Whether a player was ever moderated in this run.
    pub fn was_moderated(&self, id: i64) -> bool {
        self.moderated.lock().map_or(true, |moderated| moderated.contains_key(&id))
    }

    /// Whether a moderation ran at some point since `since`.
    pub fn moderated_since(&self, since: Instant) -> bool {
        let Ok(moderated) = self.moderated.lock() else { return true };
        moderated.values().any(|ended| ended.is_none_or(|ended| ended >= since))
    }

    pub fn critical(&self, text: String) {
        self.recorder.error(Severity::Critical, text);
    }

    /// Checks status and (optionally) error code; a mismatch is critical.
    pub fn expect(&self, what: &str, reply: &Reply, status: u16, code: Option<&str>) -> bool {
        self.expect_one_of(what, reply, &[(status, code)])
    }

    /// Like [`Context::expect`], where the contract allows several answers
    /// (each a status and, if it names one, an error code).
    pub fn expect_one_of(&self, what: &str, reply: &Reply, allowed: &[(u16, Option<&str>)]) -> bool {
        let fits = |(status, code): &(u16, Option<&str>)| {
            reply.status == *status && code.is_none_or(|code| reply.error_code() == Some(code))
        };
        if allowed.iter().any(fits) {
            return true;
        }
        let wanted: Vec<String> = allowed
            .iter()
            .map(|(status, code)| code.map_or(status.to_string(), |code| format!("{status} {code}")))
            .collect();
        self.critical(format!(
            "{what}: expected {}, got {}: {}",
            wanted.join(" or "),
            reply.status,
            shorten(&reply.text)
        ));
        false
    }
}

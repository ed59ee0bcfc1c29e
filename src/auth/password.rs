//! Password hashing with bcrypt or argon2id, on a dedicated pool of threads
//! (one per core by default) with a bounded queue, so that a login storm
//! costs CPU but never stalls the async workers or the blocking pool, and
//! sheds load with a 503 when the queue is full instead of piling up.

use std::sync::Arc;

use anyhow::{anyhow, Context};
use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{PasswordHash, PasswordHasher as _, PasswordVerifier as _, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};

use crate::config::{HashAlgorithm, HashingSettings};
use crate::domain::Password;
use crate::error::{ApiError, ErrorCode};

/// The algorithm and parameters for new hashes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HashPolicy {
    Bcrypt { cost: u32 },
    Argon2id { memory_kib: u32, iterations: u32, parallelism: u32 },
}

impl HashPolicy {
    pub fn from_settings(settings: &HashingSettings) -> Self {
        match settings.password_hash {
            HashAlgorithm::Bcrypt => Self::Bcrypt { cost: settings.bcrypt_cost },
            HashAlgorithm::Argon2id => Self::Argon2id {
                memory_kib: settings.argon2_memory_kib,
                iterations: settings.argon2_iterations,
                parallelism: settings.argon2_parallelism,
            },
        }
    }

    fn hash(&self, password: &str) -> anyhow::Result<String> {
        match self {
            Self::Bcrypt { cost } => bcrypt::hash(password, *cost).context("bcrypt hash"),
            Self::Argon2id { .. } => {
                let salt = SaltString::generate(&mut OsRng);
                self.argon2()?
                    .hash_password(password.as_bytes(), &salt)
                    .map(|hash| hash.to_string())
                    .map_err(|e| anyhow!("argon2 hash: {e}"))
            }
        }
    }

    fn argon2(&self) -> anyhow::Result<Argon2<'static>> {
        let Self::Argon2id { memory_kib, iterations, parallelism } = *self else {
            return Err(anyhow!("not an argon2 policy"));
        };
        let params =
            Params::new(memory_kib, iterations, parallelism, None).map_err(|e| anyhow!("argon2 params: {e}"))?;
        Ok(Argon2::new(Algorithm::Argon2id, Version::V0x13, params))
    }

    /// Whether `stored` was made with exactly this policy. A hash made with
    /// another algorithm or other parameters is replaced at the next login.
    fn matches(&self, stored: &str) -> bool {
        match self {
            Self::Bcrypt { cost } => bcrypt_cost(stored) == Some(*cost),
            Self::Argon2id { memory_kib, iterations, parallelism } => {
                let Ok(hash) = PasswordHash::new(stored) else {
                    return false;
                };
                let Ok(params) = Params::try_from(&hash) else {
                    return false;
                };
                hash.algorithm.as_str() == "argon2id"
                    && params.m_cost() == *memory_kib
                    && params.t_cost() == *iterations
                    && params.p_cost() == *parallelism
            }
        }
    }
}

/// `$2b$10$…` → 10.
fn bcrypt_cost(stored: &str) -> Option<u32> {
    let mut parts = stored.split('$');
    let (Some(""), Some(version), Some(cost)) = (parts.next(), parts.next(), parts.next()) else {
        return None;
    };
    if !version.starts_with('2') {
        return None;
    }
    cost.parse().ok()
}

/// Checks `password` against a stored hash of either format.
fn verify_any(password: &str, stored: &str) -> bool {
    if stored.starts_with("$argon2") {
        PasswordHash::new(stored)
            .is_ok_and(|hash| Argon2::default().verify_password(password.as_bytes(), &hash).is_ok())
    } else {
        bcrypt::verify(password, stored).unwrap_or(false)
    }
}

/// The outcome of a password check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verification {
    Invalid,
    /// Correct; `rehash` holds a new hash when the stored one does not match
    /// the current policy (the caller stores it).
    Valid {
        rehash: Option<String>,
    },
}

/// Hashes and verifies passwords off the async workers, with bounded concurrency.
#[derive(Clone)]
pub struct PasswordHasher {
    /// Algorithm and parameters for new hashes.
    policy: Arc<HashPolicy>,
    /// The threads that hash; nothing else runs there.
    pool: Arc<HashPool>,
    /// A hash of a random password under the current policy: unknown login
    /// names are checked against it so they take as long as a wrong password.
    dummy_hash: Arc<String>,
}

impl PasswordHasher {
    pub fn new(policy: HashPolicy, threads: usize) -> anyhow::Result<Self> {
        let dummy_password: String = {
            use rand::distributions::{Alphanumeric, DistString};
            Alphanumeric.sample_string(&mut rand::thread_rng(), 32)
        };
        let dummy_hash = policy.hash(&dummy_password)?;
        let pool = Arc::new(HashPool::new(threads, threads * QUEUED_PER_THREAD)?);
        Ok(Self { policy: Arc::new(policy), pool, dummy_hash: Arc::new(dummy_hash) })
    }

    pub async fn hash(&self, password: &Password) -> Result<String, ApiError> {
        let policy = Arc::clone(&self.policy);
        let password = password.expose().to_owned();
        Ok(self.pool.run(move || policy.hash(&password)).await??)
    }

    /// Verifies against `stored`, or against the dummy hash when there is no
    /// such user (the result is then always `Invalid`).
    pub async fn verify(&self, password: &Password, stored: Option<String>) -> Result<Verification, ApiError> {
        let policy = Arc::clone(&self.policy);
        let password = password.expose().to_owned();
        let user_exists = stored.is_some();
        let stored = stored.unwrap_or_else(|| self.dummy_hash.as_str().to_owned());
        let verification = self.pool.run(move || {
            if !verify_any(&password, &stored) || !user_exists {
                return Ok(Verification::Invalid);
            }
            let rehash = if policy.matches(&stored) { None } else { Some(policy.hash(&password)?) };
            anyhow::Ok(Verification::Valid { rehash })
        });
        Ok(verification.await??)
    }

    /// Hash jobs waiting for a thread.
    pub fn waiting(&self) -> usize {
        self.pool.waiting.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Hashes waiting per hashing thread at most; beyond, logins get 503.
const QUEUED_PER_THREAD: usize = 64;

type HashJob = Box<dyn FnOnce() + Send>;

/// A hashing thread's loop: runs jobs until the pool is dropped.
fn run_hash_jobs(receiver: &std::sync::Mutex<std::sync::mpsc::Receiver<HashJob>>) {
    loop {
        let job = match receiver.lock() {
            Ok(receiver) => receiver.recv(),
            Err(_) => return,
        };
        let Ok(job) = job else { return }; // the pool is gone
                                           // A panicking hash must not take the thread with it.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
    }
}

/// Dedicated threads fed by a bounded queue.
struct HashPool {
    jobs: std::sync::mpsc::SyncSender<HashJob>,
    /// Jobs waiting for a thread (for `/metrics`).
    waiting: Arc<std::sync::atomic::AtomicUsize>,
}

impl HashPool {
    fn new(threads: usize, queue: usize) -> anyhow::Result<Self> {
        let (jobs, receiver) = std::sync::mpsc::sync_channel::<HashJob>(queue);
        let receiver = Arc::new(std::sync::Mutex::new(receiver));
        for index in 0..threads.max(1) {
            let receiver = Arc::clone(&receiver);
            std::thread::Builder::new().name(format!("hash-{index}")).spawn(move || {
                // Linux's SCHED_IDLE: a login storm then takes only the CPU
                // that requests leave over, so pages and posts keep their
                // latency (logins queue instead; a full queue answers 503).
                use thread_priority::{NormalThreadSchedulePolicy, ThreadPriority, ThreadSchedulePolicy};
                let idle = ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Idle);
                let lowered = thread_priority::set_thread_priority_and_policy(
                    thread_priority::thread_native_id(),
                    ThreadPriority::Min,
                    idle,
                );
                if let Err(error) = lowered {
                    tracing::warn!(?error, "could not lower the hashing threads' priority");
                }
                run_hash_jobs(&receiver);
            })?;
        }
        Ok(Self { jobs, waiting: Arc::default() })
    }

    /// Runs `work` on a hashing thread; a full queue is 503 `hashing_busy`.
    async fn run<T: Send + 'static>(&self, work: impl FnOnce() -> T + Send + 'static) -> Result<T, ApiError> {
        use std::sync::atomic::Ordering;
        let (reply, answer) = tokio::sync::oneshot::channel();
        let waiting = Arc::clone(&self.waiting);
        let job: HashJob = Box::new(move || {
            waiting.fetch_sub(1, Ordering::Relaxed);
            let _ = reply.send(work());
        });
        self.waiting.fetch_add(1, Ordering::Relaxed);
        if self.jobs.try_send(job).is_err() {
            self.waiting.fetch_sub(1, Ordering::Relaxed);
            return Err(ApiError::new(ErrorCode::HashingBusy));
        }
        Ok(answer.await.context("the hash job failed")?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn password(raw: &str) -> Password {
        Password::parse(Some(&json!(raw))).unwrap()
    }

    const FAST_ARGON2: HashPolicy = HashPolicy::Argon2id { memory_kib: 64, iterations: 1, parallelism: 1 };

    #[tokio::test]
    async fn bcrypt_round_trip_and_wrong_password() {
        let hasher = PasswordHasher::new(HashPolicy::Bcrypt { cost: 4 }, 2).unwrap();
        let hash = hasher.hash(&password("correct horse")).await.unwrap();
        assert!(hash.starts_with("$2b$04$"));
        assert_eq!(
            hasher.verify(&password("correct horse"), Some(hash.clone())).await.unwrap(),
            Verification::Valid { rehash: None }
        );
        assert_eq!(hasher.verify(&password("wrong horse"), Some(hash)).await.unwrap(), Verification::Invalid);
    }

    #[tokio::test]
    async fn unknown_user_is_always_invalid() {
        let hasher = PasswordHasher::new(HashPolicy::Bcrypt { cost: 4 }, 1).unwrap();
        assert_eq!(hasher.verify(&password("anything at all"), None).await.unwrap(), Verification::Invalid);
    }

    #[tokio::test]
    async fn hashes_of_another_policy_verify_and_ask_for_a_rehash() {
        let bcrypt4 = PasswordHasher::new(HashPolicy::Bcrypt { cost: 4 }, 1).unwrap();
        let bcrypt5 = PasswordHasher::new(HashPolicy::Bcrypt { cost: 5 }, 1).unwrap();
        let argon = PasswordHasher::new(FAST_ARGON2, 1).unwrap();
        let pw = password("side by side");

        let old = bcrypt4.hash(&pw).await.unwrap();
        let Verification::Valid { rehash: Some(new) } = bcrypt5.verify(&pw, Some(old.clone())).await.unwrap() else {
            panic!("expected a rehash to cost 5");
        };
        assert!(new.starts_with("$2b$05$"));

        let Verification::Valid { rehash: Some(argon_hash) } = argon.verify(&pw, Some(old)).await.unwrap() else {
            panic!("expected a rehash to argon2id");
        };
        assert!(argon_hash.starts_with("$argon2id$"));
        assert_eq!(argon.verify(&pw, Some(argon_hash.clone())).await.unwrap(), Verification::Valid { rehash: None });
        // And back: bcrypt verifies an argon2 hash and wants its own.
        assert!(matches!(
            bcrypt4.verify(&pw, Some(argon_hash)).await.unwrap(),
            Verification::Valid { rehash: Some(_) }
        ));
    }

    #[test]
    fn reads_bcrypt_cost() {
        assert_eq!(bcrypt_cost("$2b$10$abcdefghijklmnopqrstuv"), Some(10));
        assert_eq!(bcrypt_cost("$argon2id$v=19$m=64"), None);
        assert_eq!(bcrypt_cost("garbage"), None);
    }

    /// A measurement, not a test: `cargo test --release --lib -- --ignored
    /// --nocapture bcrypt_verifies_per_second` (figure in BENCHMARKS.md).
    #[test]
    #[ignore]
    fn bcrypt_verifies_per_second() {
        let hash = bcrypt::hash("correct horse", 10).unwrap();
        let started = std::time::Instant::now();
        let mut verified = 0;
        while started.elapsed() < std::time::Duration::from_secs(3) {
            assert!(verify_any("correct horse", &hash));
            verified += 1;
        }
        println!("bcrypt cost 10: {:.1} verifies/s on one core", verified as f64 / started.elapsed().as_secs_f64());
    }
}

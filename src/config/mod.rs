//! Settings for `hiscore serve`, from flags or the environment (the names the
//! contract's "Commands" section lists). Bad values stop the process at start
//! with clap's message; nothing is validated lazily at request time.

use std::convert::Infallible;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

#[cfg(test)]
mod reference;

use clap::builder::BoolishValueParser;
use clap::{Args, ValueEnum};

/// How SQLite makes a commit durable (`SQLITE_SYNC`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum SqliteSync {
    /// Every commit is on disk before it is answered: survives power loss.
    #[default]
    Full,
    /// Survives a crash of the process, not of the machine: a post answered
    /// 201 can vanish on power loss. Faster on slow disks.
    NormalUnsafeOnPowerLoss,
}

/// A setting that must never reach a log: its `Debug` (and so that of
/// [`Settings`]) shows only that it is set. Read with [`Secret::expose`].
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(..)")
    }
}

impl FromStr for Secret {
    type Err = Infallible;

    fn from_str(value: &str) -> Result<Self, Infallible> {
        Ok(Self(value.to_owned()))
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Self(value.to_owned())
    }
}

/// A deliberate bug, for the tests that prove the bench catches it: set
/// with the hidden `--planted-fault` flag, which exists only in a build
/// with the `planted-faults` feature (the tests turn it on; a release
/// build cannot be told to misbehave).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlantedFault {
    /// Posts to a resetting board are counted in the period before the
    /// one in force.
    WrongPeriod,
    /// A removed post is recounted in the database and the caches, but the
    /// rank engine is not told: the boards keep the old score.
    StaleEngineAfterDelete,
}

/// The password hashing algorithm used for new hashes. Verification accepts
/// both formats regardless.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HashAlgorithm {
    Bcrypt,
    Argon2id,
}

/// Every switch (a `bool` field) takes its value from the environment in
/// the usual spellings: `1`/`0`, `true`/`false`, `yes`/`no`, `on`/`off`
/// (clap's `BoolishValueParser`; a test checks that none is left out).
#[derive(Debug, Clone, Args)]
pub struct Settings {
    /// Address to listen on (`127.0.0.1:0` picks a free port).
    #[arg(long, env = "BIND", default_value = "127.0.0.1:8080")]
    pub bind: String,

    /// How long a request body may take to arrive, in milliseconds; then 408.
    #[arg(long, env = "BODY_TIMEOUT_MS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(100..=600_000))]
    pub body_timeout_ms: u64,

    /// Origins allowed to call the API from a browser (comma-separated, e.g.
    /// `https://game.example`). Empty (the default): no CORS headers at all,
    /// so browsers only allow the page's own origin.
    #[arg(long, env = "CORS_ALLOWED_ORIGINS", default_value = "")]
    pub cors_allowed_origins: String,

    /// Take the client address from `X-Forwarded-For` (only behind a proxy
    /// that sets it, such as the bundled nginx config).
    #[arg(long, env = "TRUST_FORWARDED_FOR", default_value_t = false, value_parser = BoolishValueParser::new())]
    pub trust_forwarded_for: bool,

    /// How long a client may leave what it was sent unread (a live page it
    /// stopped reading, a full receive window) before its connection is
    /// dropped, in seconds (TCP_USER_TIMEOUT on Linux).
    #[arg(long, env = "WRITE_TIMEOUT_SECS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub write_timeout_secs: u64,

    /// The highest score accepted (at most the contract's 1,000,000,000).
    #[arg(long, env = "MAX_SCORE", default_value_t = 1_000_000_000, value_parser = clap::value_parser!(i64).range(1..=1_000_000_000))]
    pub max_score: i64,

    /// The secret ranking cursors are signed with (any length; a forged
    /// cursor is 400 before any work). Default: one made at the database's
    /// first start and kept in it, so every instance on that database
    /// shares it.
    #[arg(long, env = "CURSOR_SECRET", hide_env_values = true)]
    pub cursor_secret: Option<Secret>,

    /// The secret before a rotation: cursors it signed still verify while
    /// it is set (a grace time of the operator's choosing); new ones are
    /// signed with `CURSOR_SECRET`.
    #[arg(long, env = "CURSOR_SECRET_PREVIOUS", hide_env_values = true)]
    pub cursor_secret_previous: Option<Secret>,

    /// Enables the `/api/admin/` routes (boards, leagues, moderation, keys,
    /// webhooks, audit, initialize) and the console at `/admin/` with the
    /// full role; at least 32 characters (`openssl rand -hex 24`), a shorter
    /// one stops the start; unset or empty: those routes are 404. Wrong
    /// tokens: `RATE_ADMIN_PER_ADDRESS` a minute per client address, then 429.
    #[arg(long, env = "ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<Secret>,

    /// Directory served at `/`: the ranking page (`index.html`), the
    /// console (`admin/index.html`) and their assets.
    #[arg(long, env = "STATIC_DIR", default_value = "./static")]
    pub static_dir: PathBuf,

    /// HTTP worker threads (default: the number of cores).
    #[arg(long, env = "WORKERS")]
    pub workers: Option<usize>,

    /// Live pages (`…/live`) one client address may hold open; one more is 429.
    #[arg(long, env = "LIVE_PER_ADDRESS", default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub live_per_address: u32,

    /// Live pages this instance holds open at most; one more is 503.
    #[arg(long, env = "LIVE_MAX", default_value_t = 10_000, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub live_max: u32,

    /// How long a live page stays open at most, in seconds; then it ends and
    /// the client reconnects (EventSource does, with `Last-Event-ID`, and
    /// gets nothing until the page changes).
    #[arg(long, env = "LIVE_LIFETIME_SECS", default_value_t = 3_600, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub live_lifetime_secs: u64,

    /// Let webhooks send to loopback, private and link-local addresses
    /// (refused by default: a webhook is a request from inside the network).
    #[arg(long, env = "WEBHOOK_ALLOW_PRIVATE", default_value_t = false, value_parser = BoolishValueParser::new())]
    pub webhook_allow_private: bool,

    /// Undelivered `score.held` deliveries one webhook may have; beyond, new
    /// ones are not queued for it (the held queue lists every held post).
    #[arg(long, env = "WEBHOOK_HELD_BACKLOG", default_value_t = 1_000, value_parser = clap::value_parser!(i64).range(1..=1_000_000))]
    pub webhook_held_backlog: i64,

    /// A deliberate bug for the bench's own tests (see `PlantedFault`).
    #[cfg(feature = "planted-faults")]
    #[arg(long, env = "HISCORE_PLANTED_FAULT", value_enum, hide = true)]
    pub planted_fault: Option<PlantedFault>,

    /// Session lifetime in seconds (default 30 days; 60 s to 1 year).
    #[arg(long, env = "SESSION_TTL_SECS", default_value_t = 30 * 24 * 3600,
          value_parser = clap::value_parser!(i64).range(60..=365 * 24 * 3600))]
    pub session_ttl_secs: i64,

    /// Mark the session cookie `Secure` (sent over HTTPS only): turn it on
    /// when TLS is terminated in front of hiscore.
    #[arg(long, env = "COOKIE_SECURE", value_parser = BoolishValueParser::new())]
    pub cookie_secure: bool,

    // The groups last: clap lists each under its own heading, and a
    // heading holds for every flag after it.
    #[command(flatten)]
    pub database: DatabaseSettings,

    #[command(flatten)]
    pub redis: RedisSettings,

    #[command(flatten)]
    pub hashing: HashingSettings,

    #[command(flatten)]
    pub writer: WriterSettings,

    #[command(flatten)]
    pub rates: RateSettings,
}

/// The database: where, how many connections, migrations, durability.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Database")]
pub struct DatabaseSettings {
    /// `sqlite://path` (embedded, the default) or `mysql://user:pass@host:port/db`
    /// (`mariadb://` works too; TLS options as sqlx takes them: docs/running.md).
    // Values hidden from --help: a URL may carry a password.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true, default_value = "sqlite://data/hiscore.db", value_parser = parse_database_url)]
    pub database_url: String,

    /// Do not apply database migrations at start; refuse to start unless
    /// they are applied (`hiscore migrate` applies them by hand).
    #[arg(long, env = "NO_MIGRATE", default_value_t = false, value_parser = BoolishValueParser::new())]
    pub no_migrate: bool,

    /// Database connections in the pool at most (requests wait up to 3 s for
    /// one, then 503). Board reads from the database (Redis down, ended
    /// periods) have a pool of their own of a quarter of this (at least 2;
    /// 1 s wait, then 503), whose statements stop after 5 s on MariaDB/MySQL;
    /// the score writer has one connection of its own beside them (its
    /// batches always on the same connection: on SQLite its page cache
    /// stays warm).
    #[arg(long, env = "DB_MAX_CONNECTIONS", default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub db_max_connections: u32,

    /// How SQLite makes a commit durable: `full` (default: a post answered
    /// 201 survives a power loss) or `normal-unsafe-on-power-loss`.
    #[arg(long, env = "SQLITE_SYNC", value_enum, default_value_t)]
    pub sqlite_sync: SqliteSync,
}

/// Redis, shared by every instance (optional).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Redis")]
pub struct RedisSettings {
    /// Redis for the shared board, sessions and cache invalidation across
    /// instances: `redis://host:6379`, `rediss://` (TLS), or a Redis Cluster,
    /// `redis+cluster://host:port,host:port,…` (any reachable nodes; the rest
    /// are discovered). Without it everything stays in process.
    #[arg(long, env = "REDIS_URL", hide_env_values = true)]
    pub redis_url: Option<String>,

    /// Prefix of every Redis key (several deployments can share one Redis).
    #[arg(long, env = "REDIS_PREFIX", default_value = "hiscore")]
    pub redis_prefix: String,

    /// How long, in microseconds, an instance serves a kept ranking page
    /// on the word of its last check that the board had not moved in
    /// Redis, without asking again; each instance, before answering a
    /// request that may have changed a board, waits this long after its
    /// last write to Redis, so a read begun after any answer still shows
    /// it. The same on every instance; 0: every page read asks Redis, and
    /// no write waits.
    #[arg(long, env = "PAGE_LEASE_US", default_value_t = 2_000, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub page_lease_us: u64,
}

/// Password hashing: algorithm, cost, and the threads that do it.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Password hashing")]
pub struct HashingSettings {
    /// Algorithm for new password hashes.
    #[arg(long, env = "PASSWORD_HASH", value_enum, default_value = "bcrypt")]
    pub password_hash: HashAlgorithm,

    /// bcrypt cost for new hashes (each step doubles the CPU per login).
    #[arg(long, env = "BCRYPT_COST", default_value_t = 10, value_parser = clap::value_parser!(u32).range(4..=31))]
    pub bcrypt_cost: u32,

    /// argon2id memory in KiB (OWASP: 19456).
    #[arg(long, env = "ARGON2_MEMORY_KIB", default_value_t = 19_456, value_parser = clap::value_parser!(u32).range(8..=4_194_304))]
    pub argon2_memory_kib: u32,

    /// argon2id iterations (OWASP: 2).
    #[arg(long, env = "ARGON2_ITERATIONS", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub argon2_iterations: u32,

    /// argon2id lanes (OWASP: 1).
    #[arg(long, env = "ARGON2_PARALLELISM", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=16))]
    pub argon2_parallelism: u32,

    /// Threads that hash passwords, and so hashes at once (default: the
    /// number of cores); 64 wait per thread at most, then 503 `hashing_busy`.
    #[arg(long, env = "HASH_CONCURRENCY")]
    pub hash_concurrency: Option<usize>,
}

/// The group-committed score writer.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Score writer")]
pub struct WriterSettings {
    /// Score posts committed together at most (group commit), 1 to 2,000.
    /// A post fed to ten partitioned boards writes 22 posts and entries;
    /// the writer cuts each statement to the 32,766 values SQLite binds at
    /// most (MySQL 65,535).
    #[arg(long, env = "WRITE_BATCH_MAX", default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..=2_000))]
    pub write_batch_max: u32,

    /// How long (µs) the writer waits for more posts once it has one.
    #[arg(long, env = "WRITE_BATCH_DELAY_US", default_value_t = 1_000, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub write_batch_delay_us: u64,

    /// Score posts waiting for the writer at most; beyond, 503 with Retry-After.
    #[arg(long, env = "WRITE_QUEUE", default_value_t = 4_096, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub write_queue: u32,
}

/// Per-client and per-player limits (0: no limit).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Rate limits")]
pub struct RateSettings {
    /// Failed logins per account per minute from addresses it never logged
    /// in from; beyond, only those addresses may try (0: no limit).
    #[arg(long, env = "RATE_LOGIN_PER_ACCOUNT", default_value_t = 20)]
    pub rate_login_per_account: u32,

    /// Failed logins per account per minute from one address (0: no limit).
    #[arg(long, env = "RATE_LOGIN_PER_ACCOUNT_ADDRESS", default_value_t = 10)]
    pub rate_login_per_account_address: u32,

    /// Login attempts per client address per minute (0: no limit).
    #[arg(long, env = "RATE_LOGIN_PER_ADDRESS", default_value_t = 300)]
    pub rate_login_per_address: u32,

    /// Registrations per client address per minute (0: no limit).
    #[arg(long, env = "RATE_REGISTER_PER_ADDRESS", default_value_t = 300)]
    pub rate_register_per_address: u32,

    /// Score posts per player per second, idempotent replays included (0: no limit).
    #[arg(long, env = "RATE_POSTS_PER_PLAYER", default_value_t = 50)]
    pub rate_posts_per_player: u32,

    /// Score posts per server key per second, for any players (0: no limit).
    #[arg(long, env = "RATE_POSTS_PER_KEY", default_value_t = 1000)]
    pub rate_posts_per_key: u32,

    /// A player's own renames per hour (0: no limit); admins' renames are
    /// not limited.
    #[arg(long, env = "RATE_RENAMES_PER_PLAYER", default_value_t = 10)]
    pub rate_renames_per_player: u32,

    /// Wrong admin tokens per client address per minute (0: no limit); the
    /// right token is never limited.
    #[arg(long, env = "RATE_ADMIN_PER_ADDRESS", default_value_t = 10)]
    pub rate_admin_per_address: u32,

    /// Least time between two score posts of one player, in ms (0: none;
    /// closer: 429).
    #[arg(long, env = "MIN_POST_INTERVAL_MS", default_value_t = 0)]
    pub min_post_interval_ms: u64,
}

impl Settings {
    /// The planted fault, if this build has them and one is set.
    pub fn planted_fault(&self) -> Option<PlantedFault> {
        #[cfg(feature = "planted-faults")]
        return self.planted_fault;
        #[cfg(not(feature = "planted-faults"))]
        None
    }

    pub fn workers(&self) -> usize {
        self.workers.unwrap_or_else(cores).max(1)
    }

    /// The origins of `CORS_ALLOWED_ORIGINS`, spaces and empty items left out.
    pub fn cors_origins(&self) -> impl Iterator<Item = &str> {
        self.cors_allowed_origins.split(',').map(str::trim).filter(|origin| !origin.is_empty())
    }
}

impl HashingSettings {
    pub fn concurrency(&self) -> usize {
        self.hash_concurrency.unwrap_or_else(cores).max(1)
    }
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

pub fn parse_database_url(raw: &str) -> Result<String, String> {
    let supported = ["sqlite:", "mysql:", "mariadb:"];
    if supported.iter().any(|scheme| raw.starts_with(scheme)) {
        // sqlx knows MariaDB as `mysql`.
        Ok(raw.replacen("mariadb:", "mysql:", 1))
    } else {
        Err("DATABASE_URL must start with sqlite:, mysql: or mariadb:".to_owned())
    }
}

/// Lets `Settings` be parsed on its own (no subcommand), from the
/// environment and defaults alone, or from a list of flags in tests.
#[derive(clap::Parser)]
#[command(name = "hiscore serve", args_override_self = true)]
struct SettingsOnly {
    #[command(flatten)]
    settings: Settings,
}

impl Settings {
    pub fn from_env_and_defaults() -> Result<Self, clap::Error> {
        Self::try_parse_from(["hiscore"])
    }

    /// Parses flags as `hiscore serve` would (environment still applies).
    pub fn try_parse_from<I, T>(args: I) -> Result<Self, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        use clap::Parser as _;
        SettingsOnly::try_parse_from(args).map(|s| s.settings)
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    use super::SettingsOnly;

    /// `TRUST_FORWARDED_FOR=1` once stopped the server at start ("possible
    /// values: true, false"): every switch must take every usual spelling.
    /// Each switch reads a variable of this test's own here (the process's
    /// environment is shared by the tests running beside it).
    #[test]
    fn every_switch_takes_the_usual_spellings_from_the_environment() {
        let command = SettingsOnly::command();
        let switches: Vec<String> = command
            .get_arguments()
            .filter(|arg| matches!(arg.get_action(), clap::ArgAction::SetTrue))
            .map(|arg| arg.get_id().to_string())
            .collect();
        assert!(switches.len() >= 3, "no_migrate, trust_forwarded_for, cookie_secure: {switches:?}");
        let spellings = [("1", true), ("yes", true), ("on", true), ("true", true), ("TRUE", true)].into_iter().chain([
            ("0", false),
            ("no", false),
            ("off", false),
            ("false", false),
        ]);
        for (text, expected) in spellings {
            for id in &switches {
                // clap keeps names as `&'static str`: a few bytes leaked, in a test.
                let variable: &'static str =
                    Box::leak(format!("HISCORE_SWITCH_TEST_{}", id.to_ascii_uppercase()).into_boxed_str());
                std::env::set_var(variable, text);
                let command = SettingsOnly::command().mut_arg(id, |arg| arg.env(variable));
                let parsed = command.try_get_matches_from(["hiscore"]);
                std::env::remove_var(variable);
                let matches = parsed.unwrap_or_else(|error| panic!("{id} refuses {text:?}: {error}"));
                assert_eq!(matches.get_flag(id), expected, "{id} {text:?}");
            }
        }
    }

    #[test]
    fn secrets_never_print() {
        use clap::Parser as _;
        let parsed = SettingsOnly::try_parse_from([
            "hiscore serve",
            "--admin-token",
            "admin-token-that-must-not-be-logged",
            "--cursor-secret",
            "cursor-secret-that-must-not-be-logged",
        ])
        .unwrap();
        let printed = format!("{:?}", parsed.settings);
        assert!(!printed.contains("must-not-be-logged"), "{printed}");
        assert!(printed.contains("admin_token: Some(Secret(..))"), "{printed}");
        assert_eq!(parsed.settings.admin_token.unwrap().expose(), "admin-token-that-must-not-be-logged");
    }
}

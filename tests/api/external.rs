//! Programs the tests run beside the service: nginx in front of one or
//! more instances (as `nginx/run-local.sh` runs it), and the process
//! helpers the browser test shares. Used by the API suite and by
//! tests/outage.rs.

use std::io::Write as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub fn tool(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?.to_str()?.split(':').map(|dir| Path::new(dir).join(name)).find(|path| path.is_file())
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A child process stopped with SIGTERM when dropped (nginx's master then
/// stops its workers; SIGKILL would orphan them).
pub struct Process(pub Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg("-TERM").arg(self.0.id().to_string()).status();
        let _ = self.0.wait();
    }
}

pub async fn wait_for_port(port: u16) {
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        // Generous: a database server starting while other tests load the machine.
        assert!(started.elapsed() < Duration::from_secs(60), "nothing listens on {port}");
        actix_web::rt::time::sleep(Duration::from_millis(50)).await;
    }
}

/// nginx in front (as run-local.sh runs it), without a browser.
pub struct Fronted {
    _nginx: Process,
    _prefix: tempfile::TempDir,
    pub site: String,
}

pub async fn nginx_in_front_of(upstream: &str) -> Option<Fronted> {
    nginx_with(upstream, &[]).await
}

/// nginx in front, with more of run-local.sh's settings (`TRUSTED_PROXIES`).
pub async fn nginx_with(upstream: &str, settings: &[(&str, &str)]) -> Option<Fronted> {
    let required = crate::helpers::switch_on("TEST_REQUIRE_BROWSER");
    if tool("nginx").is_none() {
        assert!(!required, "TEST_REQUIRE_BROWSER=1 but nginx is missing");
        let _ = writeln!(std::io::stderr(), "\nnote: nginx not installed: the nginx tests are SKIPPED\n");
        return None;
    }
    let port = free_port();
    let prefix = tempfile::tempdir().unwrap();
    let nginx = Process(
        Command::new(concat!(env!("CARGO_MANIFEST_DIR"), "/nginx/run-local.sh"))
            .env("LISTEN", format!("127.0.0.1:{port}"))
            .env("UPSTREAMS", upstream)
            .env("PREFIX", prefix.path())
            .envs(settings.iter().copied())
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_for_port(port).await;
    Some(Fronted { _nginx: nginx, _prefix: prefix, site: format!("http://127.0.0.1:{port}") })
}

/// A Redis Cluster on this machine: six `redis-server --cluster-enabled
/// yes` processes on free ports, three masters with a replica each, as
/// `redis-cli --cluster create … --cluster-replicas 1` makes it. Each node
/// runs under a shell that stops it once the test process is gone, so one
/// cluster can serve every test of a run (each test has its own key prefix).
pub struct RedisCluster {
    pub ports: Vec<u16>,
    _dir: tempfile::TempDir,
    _nodes: Vec<Process>,
}

/// A port whose cluster bus port (+10000) is free too.
fn free_cluster_port(taken: &[u16]) -> u16 {
    loop {
        let port = 20_000 + rand::random::<u16>() % 25_000;
        let free = |port: u16| TcpListener::bind(("127.0.0.1", port)).is_ok();
        if !taken.contains(&port) && free(port) && free(port + 10_000) {
            return port;
        }
    }
}

fn redis_cli(port: u16, args: &[&str]) -> String {
    let output = Command::new("redis-cli").args(["-p", &port.to_string()]).args(args).output().unwrap();
    String::from_utf8_lossy(&output.stdout).into_owned()
}

impl RedisCluster {
    pub fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut ports = Vec::new();
        for _ in 0..6 {
            ports.push(free_cluster_port(&ports));
        }
        let watched = std::process::id().to_string();
        let nodes = ports
            .iter()
            .map(|port| {
                let port = port.to_string();
                let node = format!(
                    "redis-server --port {port} --bind 127.0.0.1 --cluster-enabled yes --cluster-config-file nodes-{port}.conf \
                     --cluster-node-timeout 2000 --save '' --appendonly no --dir {} --logfile redis-{port}.log",
                    dir.path().display()
                );
                // The node stops with the test process (or when this shell is stopped).
                let watchdog = format!(
                    "{node} & node=$!; trap 'kill $node 2>/dev/null' EXIT TERM; \
                     while kill -0 {watched} 2>/dev/null && kill -0 $node 2>/dev/null; do sleep 1; done"
                );
                Process(Command::new("sh").args(["-c", &watchdog]).stdout(Stdio::null()).spawn().unwrap())
            })
            .collect();
        let started = Instant::now();
        while !ports.iter().all(|port| redis_cli(*port, &["ping"]).trim() == "PONG") {
            assert!(started.elapsed() < Duration::from_secs(10), "the cluster's nodes did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        let addresses: Vec<String> = ports.iter().map(|port| format!("127.0.0.1:{port}")).collect();
        let created = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addresses)
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .output()
            .unwrap();
        assert!(created.status.success(), "redis-cli --cluster create: {}", String::from_utf8_lossy(&created.stdout));
        let cluster = Self { ports, _dir: dir, _nodes: nodes };
        cluster.wait_until_ok();
        cluster
    }

    /// Waits until every live node says the cluster is ok.
    pub fn wait_until_ok(&self) {
        let started = Instant::now();
        loop {
            let states: Vec<String> = self.ports.iter().map(|port| redis_cli(*port, &["cluster", "info"])).collect();
            if states.iter().filter(|info| !info.is_empty()).all(|info| info.contains("cluster_state:ok")) {
                return;
            }
            assert!(started.elapsed() < Duration::from_secs(30), "the cluster is not ok: {states:?}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// `redis+cluster://` naming the first three nodes (the others are
    /// discovered).
    pub fn url(&self) -> String {
        let nodes: Vec<String> = self.ports.iter().take(3).map(|port| format!("127.0.0.1:{port}")).collect();
        format!("redis+cluster://{}", nodes.join(","))
    }

    /// The ports of the nodes that are masters now.
    pub fn masters(&self) -> Vec<u16> {
        self.ports.iter().copied().filter(|port| redis_cli(*port, &["role"]).starts_with("master")).collect()
    }
}

/// The cluster the tests of this run share, started by the first that asks.
pub fn shared_redis_cluster() -> &'static RedisCluster {
    static CLUSTER: std::sync::OnceLock<RedisCluster> = std::sync::OnceLock::new();
    CLUSTER.get_or_init(RedisCluster::start)
}

/// A MariaDB server of its own (a fresh data directory under `dir`, on
/// `port`, root without a password, a database `hiscore`), for settings
/// the machine's server does not have: TLS, Galera's auto-increment.
/// Each server, its install's too, has a temporary directory of its own:
/// a starting server deletes the `#sql*` files it finds there, so two
/// installs sharing `/tmp` (the TLS and Galera tests run side by side)
/// failed now and then with "Unknown table 'mysql.tmp_user_sys'".
pub fn start_mariadb(dir: &Path, port: u16, extra_args: &[String]) -> Process {
    let data = dir.join("mariadb");
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let install = Command::new("mariadb-install-db")
        .args(["--no-defaults", "--auth-root-authentication-method=normal", "--skip-test-db", "--user=root"])
        .arg(format!("--datadir={}", data.display()))
        .arg(format!("--tmpdir={}", tmp.display()))
        .output()
        .unwrap();
    assert!(
        install.status.success(),
        "mariadb-install-db: {}{}",
        String::from_utf8_lossy(&install.stdout),
        String::from_utf8_lossy(&install.stderr)
    );
    std::fs::write(dir.join("init.sql"), "CREATE DATABASE IF NOT EXISTS hiscore;\n").unwrap();
    let path = |name: &str| dir.join(name).display().to_string();
    Process(
        Command::new("mariadbd")
            .args(["--no-defaults", "--user=root", "--bind-address=127.0.0.1", "--skip-log-bin"])
            .arg("--innodb-buffer-pool-size=32M")
            .arg(format!("--port={port}"))
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--socket={}", path("mariadb.sock")))
            .arg(format!("--pid-file={}", path("mariadb.pid")))
            .arg(format!("--init-file={}", path("init.sql")))
            .arg(format!("--tmpdir={}", tmp.display()))
            .args(extra_args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    )
}

//! A MariaDB Galera Cluster (Debian's `galera-4`) of three nodes on this
//! machine with HAProxy in front sending every connection to one node (the
//! usual single-writer setup); hiscore connects through HAProxy and has no
//! code of its own for it. The writer node is killed (SIGKILL) during a
//! validating bench run: the run passes, nothing acknowledged is lost, and
//! the surviving nodes agree.
//!
//! Needs `galera-4`, `haproxy` and `rsync` (CI installs them;
//! `TEST_REQUIRE_GALERA=1` makes their absence a failure) and runs where
//! `TEST_MYSQL_URL` is set, i.e. where MariaDB is installed.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hiscore_bench as bench;

use crate::external::{free_port, tool, wait_for_port, Process};
use futures_util::future::join_all;
use serde_json::json;

use crate::helpers::{chaos_bench, json_of, spawn_app_on, Backend, TestApp, TestDatabase, ADMIN};

const PROVIDER: &str = "/usr/lib/galera/libgalera_smm.so";

/// Three Galera nodes and HAProxy, stopped when dropped.
struct Galera {
    dir: tempfile::TempDir,
    /// Each node's SQL port.
    sql_ports: Vec<u16>,
    haproxy_port: u16,
    nodes: Vec<Option<Process>>,
    /// Kept running until the cluster is dropped.
    _haproxy: Option<Process>,
}

fn ready() -> bool {
    let missing: Vec<&str> = [PROVIDER, "haproxy", "rsync"]
        .into_iter()
        .filter(|program| if program.starts_with('/') { !Path::new(program).exists() } else { tool(program).is_none() })
        .collect();
    if missing.is_empty() {
        return true;
    }
    assert!(!crate::helpers::switch_on("TEST_REQUIRE_GALERA"), "TEST_REQUIRE_GALERA=1 but {missing:?} missing");
    let _ = writeln!(std::io::stderr(), "\nnote: {missing:?} not installed: the Galera test is SKIPPED\n");
    false
}

impl Galera {
    fn socket(&self, node: usize) -> PathBuf {
        self.dir.path().join(format!("n{node}/sock"))
    }

    /// One node's answer to `sql` (through its socket), or "" if it does not answer.
    fn query(&self, node: usize, sql: &str) -> String {
        let output = Command::new("mariadb")
            .args(["--no-defaults", "-uroot", "-N", "-B"])
            .arg(format!("--socket={}", self.socket(node).display()))
            .args(["-e", sql])
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    }

    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        // The rsync state transfer runs as `nobody`: it must read the donor's
        // files and write the joiner's.
        let open = |path: &Path| {
            assert!(Command::new("chmod").args(["-R", "a+rwX"]).arg(path).status().unwrap().success());
        };
        open(dir.path());
        let ports: Vec<u16> = (0..12).map(|_| free_port()).collect();
        let (sql, gcomm, ist, sst) = (&ports[0..3], &ports[3..6], &ports[6..9], &ports[9..12]);
        let cluster =
            format!("gcomm://{}", gcomm.iter().map(|p| format!("127.0.0.1:{p}")).collect::<Vec<_>>().join(","));
        let mut galera =
            Self { sql_ports: sql.to_vec(), haproxy_port: free_port(), nodes: Vec::new(), _haproxy: None, dir };
        for node in 0..3 {
            let data = galera.dir.path().join(format!("n{node}/data"));
            // A temporary directory of its own, as `external::start_mariadb` explains.
            let tmp = galera.dir.path().join(format!("n{node}/tmp"));
            std::fs::create_dir_all(&tmp).unwrap();
            let installed = Command::new("mariadb-install-db")
                .args(["--no-defaults", "--auth-root-authentication-method=normal", "--skip-test-db", "--user=root"])
                .arg(format!("--datadir={}", data.display()))
                .arg(format!("--tmpdir={}", tmp.display()))
                .output()
                .unwrap();
            assert!(installed.status.success(), "mariadb-install-db: {}", String::from_utf8_lossy(&installed.stderr));
            open(&galera.dir.path().join(format!("n{node}")));
        }
        let start = |node: usize, bootstrap: bool, dir: &Path| {
            let path = |name: &str| dir.join(format!("n{node}/{name}")).display().to_string();
            let mut command = Command::new("mariadbd");
            command
                .args(["--no-defaults", "--user=root", "--bind-address=127.0.0.1", "--skip-log-bin"])
                .args(["--innodb-buffer-pool-size=64M", "--binlog-format=ROW", "--innodb-autoinc-lock-mode=2"])
                .args(["--wsrep-on=ON", &format!("--wsrep-provider={PROVIDER}"), "--wsrep-cluster-name=hiscore-test"])
                .args(["--wsrep-sst-method=rsync", &format!("--wsrep-cluster-address={cluster}")])
                // As cluster/galera.cnf: reads wait for what the cluster committed.
                .arg("--wsrep-sync-wait=1")
                .arg(format!("--port={}", sql[node]))
                .arg(format!("--datadir={}", path("data")))
                .arg(format!("--socket={}", path("sock")))
                .arg(format!("--pid-file={}", path("pid")))
                .arg(format!("--tmpdir={}", path("tmp")))
                .arg(format!("--wsrep-node-name=n{node}"))
                .arg(format!("--wsrep-node-address=127.0.0.1:{}", gcomm[node]))
                .arg(format!(
                    "--wsrep-provider-options=gmcast.listen_addr=tcp://127.0.0.1:{};ist.recv_addr=127.0.0.1:{}",
                    gcomm[node], ist[node]
                ))
                .arg(format!("--wsrep-sst-receive-address=127.0.0.1:{}", sst[node]))
                .stdout(Stdio::null())
                .stderr(Stdio::from(std::fs::File::create(path("log")).unwrap()));
            if bootstrap {
                command.arg("--wsrep-new-cluster");
            }
            Process(command.spawn().unwrap())
        };
        galera.nodes.push(Some(start(0, true, galera.dir.path())));
        galera.wait(|g| g.query(0, "SHOW STATUS LIKE 'wsrep_ready'").ends_with("ON"), "the first node");
        for node in 1..3 {
            galera.nodes.push(Some(start(node, false, galera.dir.path())));
        }
        galera.wait(|g| g.query(0, "SHOW STATUS LIKE 'wsrep_cluster_size'").ends_with('3'), "three nodes");
        galera.wait(
            |g| (1..3).all(|n| g.query(n, "SHOW STATUS LIKE 'wsrep_local_state_comment'").ends_with("Synced")),
            "the joiners synced",
        );

        // Every connection to the first node while it answers; then the next.
        let servers: String = (0..3)
            .map(|node| {
                let backup = if node == 0 { "" } else { " backup" };
                format!("    server n{node} 127.0.0.1:{} check inter 500 fall 2 rise 2{backup}\n", sql[node])
            })
            .collect();
        let config = format!(
            "global\n    maxconn 2048\ndefaults\n    mode tcp\n    timeout connect 2s\n    timeout client 1h\n    \
             timeout server 1h\nlisten galera\n    bind 127.0.0.1:{}\n    option tcp-check\n{servers}",
            galera.haproxy_port
        );
        let config_path = galera.dir.path().join("haproxy.cfg");
        std::fs::write(&config_path, config).unwrap();
        galera._haproxy = Some(Process(
            Command::new("haproxy")
                .args(["-db", "-q", "-f"])
                .arg(&config_path)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        ));
        galera
    }

    fn wait(&self, done: impl Fn(&Self) -> bool, what: &str) {
        let started = Instant::now();
        while !done(self) {
            assert!(started.elapsed() < Duration::from_secs(90), "Galera: waiting for {what} timed out");
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// SIGKILL, as a crash.
    fn kill(&mut self, node: usize) {
        if let Some(process) = self.nodes[node].take() {
            let _ = Command::new("kill").args(["-KILL", &process.0.id().to_string()]).status();
            std::mem::forget(process);
        }
    }
}

/// One cluster for both runs (starting one costs seconds and six
/// processes): two writers first, then the usual single writer, killed.
#[actix_web::test]
#[cfg_attr(not(hiscore_test_mysql), ignore = "set TEST_MYSQL_URL")]
async fn galera_behind_haproxy_loses_nothing() {
    Backend::mariadb();
    if !ready() {
        return;
    }
    let mut galera = Galera::start();
    batches_refused_at_certification_run_again_and_count_once(&galera).await;
    a_bench_run_rides_out_the_writer_being_killed(&mut galera).await;
}

/// The usual setup: one instance through HAProxy, which sends every
/// connection to the first node; the first node is killed (SIGKILL)
/// during a validating bench run.
async fn a_bench_run_rides_out_the_writer_being_killed(galera: &mut Galera) {
    wait_for_port(galera.haproxy_port).await;
    let backend = Backend::MariaDb { server_url: format!("mysql://root@127.0.0.1:{}/mysql", galera.haproxy_port) };
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &["--admin-token", ADMIN]).await;

    let out = tempfile::tempdir().unwrap();
    let run = bench::run(chaos_bench(&app.address, 12, 3, &out));
    let killer = async {
        // After the initialize and the quiet check, while the load runs.
        actix_web::rt::time::sleep(Duration::from_secs(7)).await;
        galera.kill(0);
    };
    let (outcome, ()) = futures_util::future::join(run, killer).await;
    let outcome = outcome.unwrap();
    let summary = &outcome.summary;
    eprintln!(
        "bench: {} requests, {} unavailable (503), {} posts applied",
        summary.requests, summary.unavailable, summary.posts_applied
    );
    assert!(summary.pass, "{}\n{:#?}", outcome.verdict, summary.messages);
    assert_eq!((summary.errors.critical, summary.errors.application), (0, 0), "{:#?}", summary.messages);
    assert_eq!(summary.players_uncertain, 0, "a post's outcome stayed unknown");

    // Nothing acknowledged lost: the log holds the dataset and every post
    // the bench saw applied; the user rows agree with it; the two
    // surviving nodes hold the same.
    let database = db.url.rsplit('/').next().unwrap().to_owned();
    let counts = |node: usize| {
        galera.query(
            node,
            &format!(
                "SELECT COUNT(*), COALESCE(SUM(score), 0), (SELECT COALESCE(SUM(play_count), 0) FROM {database}.users) \
                 FROM {database}.scores"
            ),
        )
    };
    let (second, third) = (counts(1), counts(2));
    assert_eq!(second, third, "the surviving nodes disagree");
    let numbers: Vec<i64> = second.split_whitespace().map(|n| n.parse().unwrap()).collect();
    assert_eq!(numbers[0], 3_000 + summary.posts_applied as i64, "acknowledged posts in the log");
    assert_eq!(numbers[2], numbers[0], "user rows agree with the log");
}

/// The conflicts the writer ran again, by `/metrics`.
async fn conflicts(app: &TestApp) -> i64 {
    let text = app.get("/metrics").await.text().await.unwrap();
    text.lines().find_map(|line| line.strip_prefix("hiscore_write_conflicts_total ")).unwrap().trim().parse().unwrap()
}

/// Two instances writing through two different nodes (not the usual
/// single-writer setup, on purpose): their batches update the same
/// players' rows, and Galera refuses the later of two conflicting commits
/// at certification (reported as a deadlock). The writer runs such a
/// batch again, with the same idempotency guarantees; every acknowledged
/// post counts exactly once.
async fn batches_refused_at_certification_run_again_and_count_once(galera: &Galera) {
    let node = |n: usize| format!("mysql://root@127.0.0.1:{}/mysql", galera.sql_ports[n]);
    let db = TestDatabase::new(&Backend::MariaDb { server_url: node(0) }).await;
    let first = spawn_app_on(&db, &[]).await;
    let second_url = db.url.replace(&galera.sql_ports[0].to_string(), &galera.sql_ports[1].to_string());
    let second = crate::helpers::spawn_app_at(&second_url, None, &[]).await;
    let mut players = Vec::new();
    for i in 0..2 {
        players.push(first.register(&format!("twin{i}")).await);
    }
    // Waves of posts to both instances at once: each wave starts a batch
    // on each node at about the same moment, on the same players' rows.
    let mut answers = Vec::new();
    for wave in 0..40 {
        let posts = (0..16).map(|n| {
            let (app, player) = (if n % 2 == 0 { &first } else { &second }, &players[(n / 2) % 2]);
            async move {
                let response = app
                    .client
                    .post(app.url("/api/scores"))
                    .bearer_auth(&player.token)
                    .json(&json!({"score": wave * 100 + n}))
                    .send()
                    .await
                    .unwrap();
                let (status, body) = json_of(response).await;
                assert!(status == 201 || body["error"]["code"] == "write_failed", "{status} {body}");
                (player.id, status == 201)
            }
        });
        answers.extend(join_all(posts).await);
    }
    let conflicts = conflicts(&first).await + conflicts(&second).await;
    let failed = answers.iter().filter(|(_, ok)| !ok).count();
    let aborts: Vec<String> = (0..2)
        .map(|n| galera.query(n, "SHOW STATUS WHERE Variable_name IN ('wsrep_local_cert_failures', 'wsrep_local_bf_aborts', 'wsrep_local_commits', 'wsrep_received')"))
        .collect();
    assert!(
        conflicts > 0,
        "no batch conflicted ({failed} posts failed, {aborts:?}): the test did not test what it is for"
    );
    let database = db.url.rsplit('/').next().unwrap().to_owned();
    for player in &players {
        let acknowledged = answers.iter().filter(|(id, ok)| *id == player.id && *ok).count();
        for node in 0..3 {
            let counted = galera.query(
                node,
                &format!(
                    "SELECT (SELECT play_count FROM {database}.users WHERE id = {id}), \
                     (SELECT COUNT(*) FROM {database}.scores WHERE user_id = {id})",
                    id = player.id
                ),
            );
            assert_eq!(counted, format!("{acknowledged}\t{acknowledged}"), "player {} on node {node}", player.id);
        }
    }
}

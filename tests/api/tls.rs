//! TLS all the way: hiscore talks to a MariaDB and a Redis that accept
//! nothing but TLS, with certificates from a test CA, and the bench drives
//! it over HTTPS through nginx. Without the CA nothing connects: the
//! certificates are checked, not merely encrypted against.
//!
//! The servers are this machine's MariaDB and Redis programs, started on
//! free ports with a self-signed CA (the tests never reconfigure the shared
//! services). Runs where `TEST_MYSQL_URL` is set, i.e. where MariaDB is
//! installed.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::external::{free_port, start_mariadb, tool, wait_for_port, Process};
use crate::helpers::{json_of, Backend, PASSWORD};

/// A CA and a certificate for `localhost` / 127.0.0.1 signed by it.
fn make_certificates(dir: &Path) {
    let openssl = |args: &[&str]| {
        let status = Command::new("openssl").args(args).current_dir(dir).stderr(Stdio::null()).status().unwrap();
        assert!(status.success(), "openssl {args:?}");
    };
    let key = ["-newkey", "rsa:2048", "-nodes"];
    openssl(
        &[
            &["req", "-x509", "-days", "2", "-subj", "/CN=hiscore test CA"][..],
            &key,
            &["-keyout", "ca.key", "-out", "ca.pem"],
        ]
        .concat(),
    );
    openssl(&[&["req", "-subj", "/CN=localhost"][..], &key, &["-keyout", "server.key", "-out", "server.csr"]].concat());
    std::fs::write(dir.join("san.cnf"), "subjectAltName=DNS:localhost,IP:127.0.0.1\n").unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        "san.cnf",
        "-out",
        "server.pem",
    ]);
}

/// A MariaDB of its own that refuses connections without TLS
/// (`require_secure_transport`), with a database `hiscore`.
fn start_tls_mariadb(dir: &Path, port: u16) -> Process {
    let path = |name: &str| dir.join(name).display().to_string();
    let tls = [
        "--require-secure-transport=ON".to_owned(),
        format!("--ssl-ca={}", path("ca.pem")),
        format!("--ssl-cert={}", path("server.pem")),
        format!("--ssl-key={}", path("server.key")),
    ];
    start_mariadb(dir, port, &tls)
}

/// A Redis with its plain port closed: TLS only.
fn start_redis(dir: &Path, port: u16) -> Process {
    let path = |name: &str| dir.join(name).display().to_string();
    Process(
        Command::new("redis-server")
            .args(["--port", "0", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args(["--tls-port", &port.to_string(), "--tls-auth-clients", "no"])
            .args(["--tls-ca-cert-file", &path("ca.pem")])
            .args(["--tls-cert-file", &path("server.pem")])
            .args(["--tls-key-file", &path("server.key")])
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    )
}

/// nginx terminating HTTPS in front of one instance.
fn start_https_nginx(dir: &Path, port: u16, upstream: u16) -> Process {
    let d = dir.display();
    let config = format!(
        "daemon off; pid {d}/nginx.pid; error_log {d}/nginx-error.log;
events {{}}
http {{
  access_log off;
  client_body_temp_path {d}/nginx-body; proxy_temp_path {d}/nginx-proxy;
  fastcgi_temp_path {d}/nginx-fastcgi; uwsgi_temp_path {d}/nginx-uwsgi; scgi_temp_path {d}/nginx-scgi;
  upstream hiscore {{ server 127.0.0.1:{upstream}; keepalive 32; }}
  server {{
    listen 127.0.0.1:{port} ssl;
    ssl_certificate {d}/server.pem;
    ssl_certificate_key {d}/server.key;
    location / {{
      proxy_pass http://hiscore;
      proxy_http_version 1.1;
      proxy_set_header Connection \"\";
      proxy_set_header X-Forwarded-For $remote_addr;
    }}
  }}
}}
"
    );
    std::fs::write(dir.join("nginx.conf"), config).unwrap();
    Process(
        Command::new("nginx")
            .args(["-p", &d.to_string(), "-c", &format!("{d}/nginx.conf"), "-e", &format!("{d}/nginx-error.log")])
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    )
}

/// `hiscore serve` with the test CA trusted through `SSL_CERT_FILE` (the
/// variable every rustls-native-certs user reads) or not at all.
fn start_hiscore(dir: &Path, port: u16, database_url: &str, redis_url: &str, trust_ca: bool) -> Process {
    let mut command = Command::new(env!("CARGO_BIN_EXE_hiscore"));
    command
        .args(["serve", "--bind", &format!("127.0.0.1:{port}"), "--database-url", database_url])
        .args(["--redis-url", redis_url, "--redis-prefix", "tls"])
        .args(["--bcrypt-cost", "4", "--static-dir", "/nonexistent", "--workers", "2"])
        .args(["--rate-posts-per-player", "0", "--rate-login-per-address", "0", "--rate-register-per-address", "0"])
        .args(["--admin-token", ADMIN_TOKEN])
        .env_remove("SSL_CERT_FILE")
        .env_remove("SSL_CERT_DIR")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::from(std::fs::File::create(dir.join(format!("hiscore-{port}.log"))).unwrap()));
    if trust_ca {
        command.env("SSL_CERT_FILE", dir.join("ca.pem"));
    }
    Process(command.spawn().unwrap())
}

const ADMIN_TOKEN: &str = "tls-admin-token-long-enough-for-the-check";

/// The redis-cli answer to one command on the TLS Redis.
fn redis_cli(dir: &Path, port: u16, args: &[&str]) -> String {
    let output = Command::new("redis-cli")
        .args(["-p", &port.to_string(), "--tls", "--cacert", &dir.join("ca.pem").display().to_string()])
        .args(args)
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// Polls `GET /metrics` until `line` is in it.
async fn wait_for_metric(client: &reqwest::Client, base: &str, line: &str) -> bool {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(20) {
        if let Ok(response) = client.get(format!("{base}/metrics")).send().await {
            if response.text().await.unwrap_or_default().lines().any(|l| l == line) {
                return true;
            }
        }
        actix_web::rt::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

#[actix_web::test]
#[cfg_attr(not(hiscore_test_mysql), ignore = "set TEST_MYSQL_URL")]
async fn hiscore_speaks_tls_to_mariadb_and_redis_and_the_bench_over_https() {
    Backend::mariadb();
    for program in ["openssl", "mariadb-install-db", "mariadbd", "redis-server", "redis-cli", "nginx"] {
        assert!(tool(program).is_some() || Path::new("/usr/sbin").join(program).is_file(), "{program} is missing");
    }
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    make_certificates(dir);
    let (mariadb_port, redis_port) = (free_port(), free_port());
    let _mariadb = start_tls_mariadb(dir, mariadb_port);
    let _redis = start_redis(dir, redis_port);
    wait_for_port(mariadb_port).await;
    wait_for_port(redis_port).await;

    let ca = dir.join("ca.pem").display().to_string();
    let database_url = format!("mysql://root@localhost:{mariadb_port}/hiscore?ssl-mode=verify_identity&ssl-ca={ca}");
    let redis_url = format!("rediss://localhost:{redis_port}");
    let client = reqwest::Client::builder().timeout(Duration::from_secs(5)).build().unwrap();

    // Without the CA: the database connection fails at start (the server
    // exits), so nothing was ever sent to an unverified peer.
    let untrusted_url = format!("mysql://root@localhost:{mariadb_port}/hiscore?ssl-mode=verify_identity");
    let untrusted_port = free_port();
    let mut untrusted = start_hiscore(dir, untrusted_port, &untrusted_url, &redis_url, false);
    let started = Instant::now();
    let exit = loop {
        if let Some(status) = untrusted.0.try_wait().unwrap() {
            break status;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "a server with an unverifiable database kept running");
        actix_web::rt::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(!exit.success());
    let log = std::fs::read_to_string(dir.join(format!("hiscore-{untrusted_port}.log"))).unwrap();
    assert!(log.to_lowercase().contains("certificate"), "not refused for its certificate: {log}");

    // The CA named for the database only: it runs on the database, and
    // Redis (verified against the system's roots) is reported degraded.
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let server = start_hiscore(dir, port, &database_url, &redis_url, false);
    wait_for_port(port).await;
    assert!(wait_for_metric(&client, &base, "hiscore_redis_state 2").await, "Redis without the CA was not refused");
    drop(server);

    // Trusted: posts land in the TLS MariaDB and the board in the TLS Redis.
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let _server = start_hiscore(dir, port, &database_url, &redis_url, true);
    wait_for_port(port).await;
    assert!(wait_for_metric(&client, &base, "hiscore_redis_state 1").await, "Redis over TLS is not in use");
    let registered = client
        .post(format!("{base}/api/users"))
        .json(&json!({"login_name": "secure", "password": PASSWORD}))
        .send()
        .await
        .unwrap();
    let (status, body) = json_of(registered).await;
    assert_eq!(status, 201, "{body}");
    let token = body["token"].as_str().unwrap().to_owned();
    let posted = client
        .post(format!("{base}/api/scores"))
        .bearer_auth(&token)
        .json(&json!({"score": 4242}))
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status(), 201);
    let (_, page) = json_of(client.get(format!("{base}/api/rankings/best")).send().await.unwrap()).await;
    assert_eq!(page["entries"][0]["score"], 4242, "{page}");
    let keys = redis_cli(dir, redis_port, &["--scan", "--pattern", "tls*"]);
    assert!(!keys.is_empty(), "the TLS Redis holds no hiscore keys");

    // The bench over HTTPS (reqwest with rustls), trusting the test CA
    // through `--ca-file`.
    let https_port = free_port();
    let _nginx = start_https_nginx(dir, https_port, port);
    wait_for_port(https_port).await;
    let target = format!("https://localhost:{https_port}");
    let outcome = hiscore_bench::run(hiscore_bench::BenchArgs {
        admin_token: Some(ADMIN_TOKEN.to_owned()),
        duration: 2,
        concurrency: 2,
        users: 60,
        scores: 300,
        step_secs: Some(1),
        ca_file: Some(dir.join("ca.pem")),
        ..hiscore_bench::BenchArgs::against(&target)
    })
    .await
    .unwrap();
    assert!(outcome.summary.pass, "{}", outcome.verdict);
}

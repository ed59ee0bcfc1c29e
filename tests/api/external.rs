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
        assert!(started.elapsed() < Duration::from_secs(10), "nothing listens on {port}");
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
    let required = std::env::var("TEST_REQUIRE_BROWSER").is_ok_and(|v| v == "1");
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
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_for_port(port).await;
    Some(Fronted { _nginx: nginx, _prefix: prefix, site: format!("http://127.0.0.1:{port}") })
}

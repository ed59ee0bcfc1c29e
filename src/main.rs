//! The `hiscore` binary: `hiscore serve` (the default) runs the service,
//! `hiscore bench` runs the load generator (the `hiscore-bench` binary
//! beside this one, built from the workspace's bench crate), `hiscore
//! migrate` prepares a
//! database, `hiscore healthcheck` asks a running service whether it is ready.

use std::ffi::OsString;
use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs as _};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use hiscore::config::{parse_database_url, Settings};
use hiscore::startup::Application;
use hiscore::store::Store;
use hiscore::telemetry::init_logging;

#[derive(Parser)]
#[command(name = "hiscore", version, about = "A game score-ranking JSON API service")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run the HTTP service (the default).
    Serve(Box<Settings>),
    /// Drive a validating load against a server and score it: runs
    /// `hiscore-bench` from this binary's directory with the same arguments
    /// (`cargo build --release -p hiscore-bench`; `hiscore bench --help`).
    #[command(disable_help_flag = true)]
    Bench {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<OsString>,
    },
    /// Apply the database migrations this version needs, then exit.
    Migrate(MigrateArgs),
    /// Exit 0 when the service at BIND is ready (`GET /readyz` answers
    /// 2xx), else 1: a container health check without curl.
    Healthcheck(HealthcheckArgs),
}

#[derive(clap::Args)]
struct HealthcheckArgs {
    /// The service's address, as it was started (0.0.0.0 is asked at 127.0.0.1).
    #[arg(long, env = "BIND", default_value = "127.0.0.1:8080")]
    bind: String,
    /// The path to ask (`/livez`: only whether the process answers).
    #[arg(long, default_value = "/readyz")]
    path: String,
}

#[derive(clap::Args)]
struct MigrateArgs {
    /// The database to migrate (as for `hiscore serve`).
    #[arg(long, env = "DATABASE_URL", default_value = "sqlite://data/hiscore.db", value_parser = parse_database_url, hide_env_values = true)]
    database_url: String,
}

fn main() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Bench { args }) => bench(&args),
        Some(Command::Serve(settings)) => serve(*settings),
        Some(Command::Migrate(args)) => migrate(&args),
        Some(Command::Healthcheck(args)) => Ok(healthcheck(&args)),
        // `cargo run --release` with no arguments serves with env/default settings.
        None => serve(Settings::from_env_and_defaults()?),
    }
}

/// Runs the bench binary that sits beside this one: the server neither
/// builds nor links the load generator's dependencies.
fn bench(args: &[OsString]) -> anyhow::Result<ExitCode> {
    let bench = std::env::current_exe()?.with_file_name("hiscore-bench");
    if !bench.is_file() {
        anyhow::bail!("{} is not built: cargo build --release -p hiscore-bench", bench.display());
    }
    let status = std::process::Command::new(&bench).args(args).status()?;
    Ok(match status.code().and_then(|code| u8::try_from(code).ok()) {
        Some(code) => ExitCode::from(code),
        None => ExitCode::FAILURE,
    })
}

fn migrate(args: &MigrateArgs) -> anyhow::Result<ExitCode> {
    init_logging();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        let statements = prometheus::IntCounter::new("statements", "statements")?;
        let store = Store::open(&args.database_url, 1, statements, Default::default()).await?;
        let applied = store.migrate().await?;
        if applied.is_empty() {
            println!("the database was up to date");
        } else {
            println!("applied migrations {applied:?}");
        }
        Ok(ExitCode::SUCCESS)
    })
}

fn healthcheck(args: &HealthcheckArgs) -> ExitCode {
    match probe(&args.bind, &args.path) {
        Ok(status) if (200..300).contains(&status) => ExitCode::SUCCESS,
        Ok(status) => {
            eprintln!("{}{} answered {status}", args.bind, args.path);
            ExitCode::FAILURE
        }
        Err(error) => {
            eprintln!("{}{}: {error}", args.bind, args.path);
            ExitCode::FAILURE
        }
    }
}

/// The status code of `GET path` at `bind`, within two seconds.
fn probe(bind: &str, path: &str) -> anyhow::Result<u16> {
    let mut address: SocketAddr =
        bind.to_socket_addrs()?.next().ok_or_else(|| anyhow::anyhow!("{bind} names no address"))?;
    if address.ip().is_unspecified() {
        address.set_ip(if address.is_ipv4() { [127, 0, 0, 1].into() } else { std::net::Ipv6Addr::LOCALHOST.into() });
    }
    let timeout = Duration::from_secs(2);
    let mut stream = TcpStream::connect_timeout(&address, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n")?;
    let mut head = [0u8; 32];
    let read = stream.read(&mut head)?;
    // "HTTP/1.1 200 OK": the code is the second word.
    let line = String::from_utf8_lossy(&head[..read]);
    let code = line.split_whitespace().nth(1).and_then(|code| code.parse().ok());
    code.ok_or_else(|| anyhow::anyhow!("not an HTTP answer: {line:?}"))
}

fn serve(settings: Settings) -> anyhow::Result<ExitCode> {
    init_logging();
    actix_web::rt::System::new().block_on(async {
        let app = Application::build(settings).await?;
        app.run_until_stopped().await?;
        Ok(ExitCode::SUCCESS)
    })
}

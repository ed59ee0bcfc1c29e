//! The `hiscore` binary: `hiscore serve` (the default) runs the service,
//! `hiscore bench` drives and checks a server.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use hiscore::bench::{self, BenchArgs};
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
    /// Drive a validating load against a server and score it.
    Bench(BenchArgs),
    /// Apply the database migrations this version needs, then exit.
    Migrate(MigrateArgs),
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
        Some(Command::Bench(args)) => {
            // The load generator wants every core, so it gets its own
            // multi-threaded runtime rather than actix's per-thread ones.
            let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
            let outcome = runtime.block_on(bench::run(args))?;
            Ok(if outcome.summary.pass { ExitCode::SUCCESS } else { ExitCode::FAILURE })
        }
        Some(Command::Serve(settings)) => serve(*settings),
        Some(Command::Migrate(args)) => migrate(&args),
        // `cargo run --release` with no arguments serves with env/default settings.
        None => serve(Settings::from_env_and_defaults()?),
    }
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

fn serve(settings: Settings) -> anyhow::Result<ExitCode> {
    init_logging();
    actix_web::rt::System::new().block_on(async {
        let app = Application::build(settings).await?;
        app.run_until_stopped().await?;
        Ok(ExitCode::SUCCESS)
    })
}

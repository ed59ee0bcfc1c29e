//! The `hiscore` binary: `hiscore serve` (the default) runs the service,
//! `hiscore bench` drives and checks a server.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use hiscore::bench::{self, BenchArgs};
use hiscore::config::Settings;
use hiscore::startup::Application;
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
        // `cargo run --release` with no arguments serves with env/default settings.
        None => serve(Settings::from_env_and_defaults()?),
    }
}

fn serve(settings: Settings) -> anyhow::Result<ExitCode> {
    init_logging();
    actix_web::rt::System::new().block_on(async {
        let app = Application::build(settings).await?;
        app.run_until_stopped().await?;
        Ok(ExitCode::SUCCESS)
    })
}

//! The `hiscore` binary: `hiscore serve` (the default) runs the service.

use clap::{Parser, Subcommand};
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
}

#[actix_web::main]
async fn main() -> anyhow::Result<()> {
    init_logging();
    let cli = Cli::parse();
    let settings = match cli.command {
        Some(Command::Serve(settings)) => *settings,
        // `cargo run --release` with no arguments serves with env/default settings.
        None => Settings::from_env_and_defaults()?,
    };
    let app = Application::build(settings).await?;
    app.run_until_stopped().await?;
    Ok(())
}

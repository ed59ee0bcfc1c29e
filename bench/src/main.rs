//! `hiscore-bench` (also run as `hiscore bench`): drives a server through
//! its HTTP contract, checks every answer, and exits non-zero when the run
//! fails.

use std::process::ExitCode;

use clap::Parser;
use hiscore_bench::BenchArgs;

#[derive(Parser)]
#[command(name = "hiscore-bench", version, about = "A validating load generator for hiscore")]
struct Cli {
    #[command(flatten)]
    args: BenchArgs,
}

fn main() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    // The load generator wants every core: a multi-threaded runtime.
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let outcome = runtime.block_on(hiscore_bench::run(cli.args))?;
    Ok(if outcome.summary.pass { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

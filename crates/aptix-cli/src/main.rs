//! The `aptix` command.

use clap::Parser;

/// Aptix drives coding agents against the OpenAI Responses API.
#[derive(Debug, Parser)]
#[command(name = "aptix", version, about)]
struct Cli {}

fn main() -> anyhow::Result<()> {
    let _cli = Cli::parse();
    Ok(())
}

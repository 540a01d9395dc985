//! `noma completions SHELL`: shell completions (clap_complete), generated
//! from the same command definitions as the parser, so they cannot drift.

use std::io::Write;

use clap::CommandFactory;

/// Arguments of `noma completions`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The shell to complete for: bash, elvish, fish, powershell or zsh.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Prints the completion script for `args.shell`.
pub fn run(args: Args) -> i32 {
    let mut cmd = super::Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "noma", &mut out);
    write_out(&out)
}

fn write_out(bytes: &[u8]) -> i32 {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Ok(()) => super::EXIT_OK,
        Err(e) => {
            eprintln!("noma: cannot write output: {e}");
            super::EXIT_USAGE
        }
    }
}

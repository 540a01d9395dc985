//! `noma completions SHELL`: shell completions (clap_complete), generated
//! from the same command definitions as the parser, so they cannot drift.

use clap::CommandFactory;

use crate::report::output::Output;

/// Arguments of `noma completions`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The shell to complete for: bash, elvish, fish, powershell or zsh.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Prints the completion script for `args.shell`.
pub fn run(args: Args) -> Output {
    let mut cmd = super::Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "noma", &mut out);
    let mut c = Output::default();
    // Generated from the command definitions' strings: UTF-8.
    c.out_text(String::from_utf8_lossy(&out).into_owned());
    c
}

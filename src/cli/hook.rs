//! `noma hook` (in progress).

/// Arguments of `noma hook`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Arguments (not yet defined).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    rest: Vec<String>,
}

/// Runs `noma hook`.
pub fn run(_args: Args) -> i32 {
    eprintln!("noma hook: not available yet");
    super::EXIT_USAGE
}

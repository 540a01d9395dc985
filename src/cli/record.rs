//! `noma record` (in progress).

/// Arguments of `noma record`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Arguments (not yet defined).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    rest: Vec<String>,
}

/// Runs `noma record`.
pub fn run(_args: Args) -> i32 {
    eprintln!("noma record: not available yet");
    super::EXIT_USAGE
}

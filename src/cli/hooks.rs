//! `noma hooks` (in progress).

/// Arguments of `noma hooks`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Arguments (not yet defined).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    rest: Vec<String>,
}

/// Runs `noma hooks`.
pub fn run(_args: Args) -> i32 {
    eprintln!("noma hooks: not available yet");
    super::EXIT_USAGE
}

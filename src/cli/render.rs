//! `noma render` (in progress).

/// Arguments of `noma render`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Arguments (not yet defined).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    rest: Vec<String>,
}

/// Runs `noma render`.
pub fn run(_args: Args) -> i32 {
    eprintln!("noma render: not available yet");
    super::EXIT_USAGE
}

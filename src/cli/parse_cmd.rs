//! `noma parse_cmd` (in progress).

/// Arguments of `noma parse_cmd`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Arguments (not yet defined).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    rest: Vec<String>,
}

/// Runs `noma parse_cmd`.
pub fn run(_args: Args) -> i32 {
    eprintln!("noma parse_cmd: not available yet");
    super::EXIT_USAGE
}

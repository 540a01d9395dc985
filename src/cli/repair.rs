//! `noma repair`: the explicit writer for what verifiers only report.

use std::path::PathBuf;

use super::Format;
use crate::engine;

/// Arguments of `noma repair`.
///
/// Takes the document's transcript lock and finishes or undoes a request
/// that was interrupted (its intent marker is the evidence): a partial
/// append is cut back, a committed request whose document lags is rolled
/// forward. Bytes after the transcript's last newline that no marker
/// explains are moved to `<transcript>.torn`. A document its transcript
/// does not explain is reported, never overwritten: `noma record` records
/// such an edit.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The .noma document.
    pub file: PathBuf,
    /// Transcript path (default: the document path plus .patches).
    #[arg(long, value_name = "PATH")]
    pub transcript: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// Runs `noma repair`.
pub fn run(args: Args) -> i32 {
    let recovery = match engine::repair_file(&args.file, args.transcript.as_deref(), engine::APPLY)
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("noma repair: {e}");
            return if e.is_check_failure() {
                super::EXIT_FAIL
            } else {
                super::EXIT_USAGE
            };
        }
    };
    match args.format {
        Format::Json => super::print_json(&recovery),
        Format::Human => {
            if recovery.messages.is_empty() {
                println!(
                    "nothing to repair: the transcript ends cleanly and explains the document"
                );
            }
            for m in &recovery.messages {
                println!("repaired: {m}");
            }
            super::EXIT_OK
        }
    }
}

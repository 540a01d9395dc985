//! `noma replay`: verify that a transcript reproduces its document.
//!
//! The base is looked up in git history and a `--rev` pair is read by
//! [`noma_git::history_replay`] (see there for where the base comes from),
//! and the report worded by [`report`]; this module parses arguments and
//! prints.
//!
//! JSON output: `{"pending": [...], "replay": {...}}` as before, plus
//! `"base_lookup": {"sha256", "found", "searched"}` when the base was
//! looked up in git, and `"rev": {"rev", "commit", "document",
//! "transcript"}` with `--rev`.

use std::path::PathBuf;

use super::Format;
use report::Request;

pub mod report;

/// Arguments of `noma replay`.
///
/// Read-only: replays every applied record from the base and checks the
/// hash chain, each op's hashes, and the document on disk. Nothing is
/// repaired here; an interrupted write that is due is reported (the next
/// `noma patch`, or `noma repair`, completes it).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The .noma document.
    pub file: PathBuf,
    /// Transcript path (default: the document path plus .patches).
    #[arg(long, value_name = "PATH")]
    pub transcript: Option<PathBuf>,
    /// The document as it was before the first applied record (default:
    /// the document itself when its sha256 is that record's pre_sha256,
    /// else the version with that sha256 in the document's git history).
    #[arg(long, value_name = "PATH", conflicts_with = "rev")]
    pub base: Option<PathBuf>,
    /// Replay the document and transcript as committed at this revision
    /// (git's `REV:path` rule: paths are relative to the repository root
    /// unless they start with `./` or `../`); reads no working-tree file.
    #[arg(long, value_name = "REV")]
    pub rev: Option<String>,
    /// Also verify each record's signature and approval in
    /// <file>.provenance, trusting the work tree's .noma/config.yml and
    /// .noma/allowed_signers (exit 1 on a forgery, or on what the policy
    /// makes an error).
    #[arg(long, conflicts_with = "rev")]
    pub signatures: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// Runs `noma replay`.
pub fn run(args: Args) -> crate::report::output::Output {
    if let Err(said) = super::noma_path("replay", &args.file, false) {
        return said;
    }
    let req = Request {
        file: &args.file,
        transcript: args.transcript.as_deref(),
        base: args.base.as_deref(),
        rev: args.rev.as_deref(),
        signatures: args.signatures,
    };
    // The report is written as it is made (a long history's signatures
    // are never held whole); stderr and the exit code come after.
    super::output::streamed(|out| report::run(&req, args.format == Format::Json, out))
}

//! `noma rm`: remove a document as a recorded, signed event.

use std::path::PathBuf;

use super::patch::remove;
use super::writer::Meta;
use super::Format;
use crate::report::output::{Exit, Output};
use noma_store::engine::{self, WriteMode};

/// Arguments of `noma rm`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Appends one x-noma/remove_document record to <file>.patches (signed into \
<file>.provenance like any write: --key, NOMA_SIGNING_KEY or git's user.signingkey), then deletes \
the document. The transcript and the sidecar stay, as the document's tombstone: `noma replay` \
replays it to the empty document, and the pre-commit hook and `noma reconcile` accept the removal \
(a removal without that record is `document-removed`). Nothing is staged: commit the deletion and \
both files (`git add -A -- <file> <file>.patches <file>.provenance`). Exit 0 removed (or already \
removed), 1 refused (an edit no record explains: `noma record` it first), 2 could not run."
)]
pub struct Args {
    /// The .noma document to remove.
    pub file: PathBuf,
    /// Record metadata (--reason, the actor, the signing key).
    #[command(flatten)]
    pub meta: Box<Meta>,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// Runs `noma rm`.
pub fn run(args: Args) -> Output {
    let opts = match args
        .meta
        .options(&args.file, WriteMode::InPlace, false, false)
    {
        Ok(o) => o,
        Err(e) => return Output::error(format!("noma rm: {e}"), Exit::NotRun),
    };
    let result = engine::remove_file(&args.file, &opts);
    remove::answer(&args.file, result, args.format == Format::Json)
}

//! `noma rm`: remove a document as a recorded, signed event.

use std::path::PathBuf;

use super::patch::{ActorKindArg, Meta};
use super::Format;
use noma_core::transcript::ActorKind;
use noma_git::patch::{options, remove};
use noma_store::engine::WriteMode;

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
pub fn run(args: Args) -> i32 {
    let meta = &args.meta;
    let req = options::Request {
        actor_kind: match meta.actor_kind {
            ActorKindArg::Human => ActorKind::Human,
            ActorKindArg::Agent => ActorKind::Agent,
            ActorKindArg::Tool => ActorKind::Tool,
        },
        actor_name: meta.actor_name.clone(),
        actor_model: meta.actor_model.clone(),
        actor_version: meta.actor_version.clone(),
        reason: meta.reason.clone(),
        expected_sha: meta.expected_sha.clone(),
        base_sha256: meta.base_sha256.clone(),
        parent_op_id: meta.parent_op_id.clone(),
        transcript: meta.transcript.clone(),
        write: WriteMode::InPlace,
        strict: false,
        force: false,
        signing: options::Signing::Configured {
            key: meta.key.clone(),
            no_sign: meta.no_sign,
        },
    };
    super::emit(remove::run(&args.file, req, args.format == Format::Json))
}

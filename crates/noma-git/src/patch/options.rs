//! The engine options of one patch request, built the same way for every
//! writer shell (`noma patch`, the MCP patch tools): the actor, reason and
//! preconditions asked for, the records' portable `doc_uri`, the
//! document's dataset directory, whether a genesis record must come first
//! ([`crate::record::first_patch_needs_genesis`]), and the signing step.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use noma_core::transcript::{Actor, ActorKind};
use noma_store::engine::{self, Options, WriteMode};

use crate::provenance::writer;
use noma_provenance::{Signer, SignerError};

/// What a shell asks of one patch request.
#[derive(Debug, Clone)]
pub struct Request {
    /// Who acts.
    pub actor_kind: ActorKind,
    /// The actor's name; `None`: the writer's git identity
    /// ([`crate::actor::default_name`]).
    pub actor_name: Option<String>,
    /// The model, for agents.
    pub actor_model: Option<String>,
    /// The agent's or tool's version.
    pub actor_version: Option<String>,
    /// Why; stored in the records.
    pub reason: Option<String>,
    /// The 8-char `pre_sha` the document must have.
    pub expected_sha: Option<String>,
    /// The sha256 the patch was prepared against (drift only warns).
    pub base_sha256: Option<String>,
    /// `op_id` of a causally prior record.
    pub parent_op_id: Option<String>,
    /// Transcript path (default: the document path plus `.patches`).
    pub transcript: Option<PathBuf>,
    /// Where the result goes.
    pub write: WriteMode,
    /// Reject the list when the document already has validation errors.
    pub strict: bool,
    /// Patch even when the document has an edit no record explains.
    pub force: bool,
    /// How records written in place are signed.
    pub signing: Signing,
}

/// How the records of an in-place request are signed.
#[derive(Debug, Clone)]
pub enum Signing {
    /// The key a command line configures: `key` (`--key`), else the
    /// environment or git when the policy asks; none with `no_sign`.
    Configured {
        /// The key file named on the command line.
        key: Option<PathBuf>,
        /// Do not sign, even when a key is configured.
        no_sign: bool,
    },
    /// A signer the shell already holds (the MCP server's `--signing-key`),
    /// or none.
    Signer(Option<Arc<Signer>>),
}

/// The work tree a document's `doc_uri` is relative to.
#[derive(Debug, Clone, Copy)]
pub enum WorkTree<'a> {
    /// The work tree of the repository holding the document, if any.
    Discover,
    /// A root the shell was given.
    Root(&'a Path),
}

/// The engine options for a request on `doc`; fails only when a
/// configured signing key cannot be used.
pub fn build(doc: &Path, tree: WorkTree<'_>, req: Request) -> Result<Options, SignerError> {
    let root = match tree {
        WorkTree::Discover => {
            let dir = doc
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            crate::git::blob::worktree_root(dir)
        }
        WorkTree::Root(r) => Some(r.to_path_buf()),
    };
    let mut opts = Options::new(Actor {
        kind: req.actor_kind,
        name: req
            .actor_name
            .unwrap_or_else(|| crate::actor::default_name(doc)),
        model: req.actor_model,
        version: req.actor_version,
    });
    opts.strict = req.strict;
    opts.reason = req.reason;
    opts.expected_sha = req.expected_sha;
    opts.base_sha256 = req.base_sha256;
    opts.parent_op_id = req.parent_op_id;
    opts.transcript = req.transcript;
    opts.force = req.force;
    opts.doc_uri = Some(noma_store::uri::portable_doc_uri(root.as_deref(), doc));
    opts.validate.datasets = doc.parent().map(noma_store::fsio::datasets_in);
    opts.write = req.write;
    if opts.write == WriteMode::InPlace {
        let tpath = opts
            .transcript
            .clone()
            .unwrap_or_else(|| engine::default_transcript_path(doc));
        opts.genesis = crate::record::first_patch_needs_genesis(doc, &tpath);
        opts.before_append = match req.signing {
            Signing::Configured { key, no_sign } => {
                writer::step_in(root.as_deref(), key.as_deref(), no_sign)?
            }
            Signing::Signer(signer) => signer.map(writer::signing_step),
        };
    }
    Ok(opts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(write: WriteMode) -> Request {
        Request {
            actor_kind: ActorKind::Agent,
            actor_name: Some("bot".into()),
            actor_model: None,
            actor_version: None,
            reason: Some("why".into()),
            expected_sha: None,
            base_sha256: None,
            parent_op_id: None,
            transcript: None,
            write,
            strict: true,
            force: false,
            signing: Signing::Configured {
                key: None,
                no_sign: true,
            },
        }
    }

    #[test]
    fn the_uri_is_relative_to_the_given_root_and_a_dry_run_is_never_signed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("docs")).unwrap();
        let doc = dir.path().join("docs/a.noma");
        std::fs::write(&doc, "# A\n").unwrap();
        let opts = build(&doc, WorkTree::Root(dir.path()), request(WriteMode::DryRun)).unwrap();
        assert_eq!(opts.doc_uri.as_deref(), Some("docs/a.noma"));
        assert_eq!(opts.actor.name, "bot");
        assert_eq!(opts.reason.as_deref(), Some("why"));
        assert!(opts.strict);
        assert!(opts.validate.datasets.is_some());
        assert!(opts.before_append.is_none());
        assert!(!opts.genesis);
    }
}

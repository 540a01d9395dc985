//! The flags of a writing command (`noma patch`, `noma rm`) and the
//! engine options they make: the writer's context gathered in one call
//! ([`noma_git::patch::context()`]), the options built here.

use std::path::{Path, PathBuf};

use noma_core::transcript::{Actor, ActorKind};
use noma_git::patch::{context, SignerError, Signing, WorkTree, Writer};

use noma_store::engine::{self, Options, WriteMode};

/// `--actor-kind`: [`ActorKind`] as a value (the core knows no argument parser).
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ActorKindArg {
    /// A person.
    Human,
    /// An AI agent.
    Agent,
    /// An automated tool.
    Tool,
}

/// The less common options, boxed to keep the subcommand enum small.
#[derive(Debug, clap::Args)]
pub struct Meta {
    /// Why the patch is made (recorded as `reason`).
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
    /// Actor kind.
    #[arg(long, value_enum, default_value = "human", value_name = "K")]
    pub actor_kind: ActorKindArg,
    /// Actor name (default: git's user.name, then $USER).
    #[arg(long, value_name = "N")]
    pub actor_name: Option<String>,
    /// Model name (agents).
    #[arg(long, value_name = "M")]
    pub actor_model: Option<String>,
    /// Actor version.
    #[arg(long, value_name = "V")]
    pub actor_version: Option<String>,
    /// Reject unless the document's 8-char pre_sha is S.
    #[arg(long, value_name = "S")]
    pub expected_sha: Option<String>,
    /// The sha256 the patch was prepared against (drift is a warning).
    #[arg(long = "base-sha256", value_name = "S")]
    pub base_sha256: Option<String>,
    /// op_id of a causally prior record.
    #[arg(long, value_name = "ID")]
    pub parent_op_id: Option<String>,
    /// Transcript path (default: the document path plus .patches).
    #[arg(long, value_name = "PATH")]
    pub transcript: Option<PathBuf>,
    /// Sign the records with this Ed25519 OpenSSH private key, into
    /// <file>.provenance (default: $NOMA_SIGNING_KEY, or git's
    /// user.signingkey with gpg.format=ssh when the policy turns
    /// provenance on).
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// Do not sign, even when a key is configured.
    #[arg(long, conflicts_with = "key")]
    pub no_sign: bool,
}

impl Meta {
    /// The engine options these flags make for a request on `file`; fails
    /// only when a configured signing key cannot be used.
    pub fn options(
        &self,
        file: &Path,
        write: WriteMode,
        strict: bool,
        force: bool,
    ) -> Result<Options, SignerError> {
        let tpath = (write == WriteMode::InPlace).then(|| {
            self.transcript
                .clone()
                .unwrap_or_else(|| engine::default_transcript_path(file))
        });
        let ctx = context(
            file,
            Writer {
                tree: WorkTree::Discover,
                actor_name: self.actor_name.clone(),
                appends_to: tpath.as_deref(),
                signing: Signing::Configured {
                    key: self.key.clone(),
                    no_sign: self.no_sign,
                },
            },
        )?;
        let actor = Actor {
            kind: match self.actor_kind {
                ActorKindArg::Human => ActorKind::Human,
                ActorKindArg::Agent => ActorKind::Agent,
                ActorKindArg::Tool => ActorKind::Tool,
            },
            name: ctx.actor_name,
            model: self.actor_model.clone(),
            version: self.actor_version.clone(),
        };
        let mut opts = Options::for_document(file, ctx.root.as_deref(), actor);
        opts.request.strict = strict;
        opts.request.reason = self.reason.clone();
        opts.request.expected_sha = self.expected_sha.clone();
        opts.request.base_sha256 = self.base_sha256.clone();
        opts.request.parent_op_id = self.parent_op_id.clone();
        opts.transcript = self.transcript.clone();
        opts.write = write;
        opts.force = force;
        opts.genesis = ctx.genesis;
        opts.before_append = ctx.before_append;
        Ok(opts)
    }
}

//! `noma patch`: apply an op-list to a document and record it.

pub mod remove;
pub mod rename;
pub mod report;
pub mod run;

use std::path::PathBuf;

use super::Format;
use noma_core::transcript::ActorKind;
use noma_git::patch::options;
use noma_store::engine::WriteMode;

/// Arguments of `noma patch`.
///
/// Without --inplace or --out the run is a dry run: nothing is written, the
/// changed lines go to stdout as a unified diff (human format; the whole
/// new document with --print-document) or the new document into the JSON
/// output (`document`), and no transcript record is appended.
#[derive(Debug, clap::Args)]
#[command(
    after_help = concat!(include_str!("patch_output.txt"), "`noma patch --help` lists the 25 ops, with an example of each."),
    after_long_help = concat!(include_str!("patch_output.txt"), "\n", include_str!("patch_ops.txt"))
)]
pub struct Args {
    /// The .noma document to patch.
    pub file: PathBuf,
    /// The op(s) as JSON: one op object or an array of ops.
    #[arg(long, conflicts_with = "ops", required_unless_present = "ops")]
    pub op: Option<String>,
    /// A JSON file with an op, an array of ops or {"ops": [...]} ("-" = stdin).
    #[arg(long)]
    pub ops: Option<PathBuf>,
    /// Write the document in place and append to its transcript.
    #[arg(long, conflicts_with = "out")]
    pub inplace: bool,
    /// Write the new document to PATH instead (no transcript).
    #[arg(long, value_name = "PATH")]
    pub out: Option<PathBuf>,
    /// Reject the list when the document already has validation errors.
    #[arg(long)]
    pub strict: bool,
    /// Record metadata and preconditions.
    #[command(flatten)]
    pub meta: Box<Meta>,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
    /// Patch even when the document has an edit no record explains.
    #[arg(long)]
    pub force: bool,
    /// On a dry run, print the whole new document instead of the diff.
    #[arg(long, conflicts_with_all = ["inplace", "out"])]
    pub print_document: bool,
}

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

/// Runs `noma patch`.
pub fn run(args: Args) -> i32 {
    if let Err(code) = super::noma_path("patch", &args.file, true) {
        return code;
    }
    let ops = match noma_store::op_list::read(args.op.as_deref(), args.ops.as_deref()) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("noma patch: {e}");
            return super::EXIT_USAGE;
        }
    };
    let view = run::View {
        json: args.format == Format::Json,
        print_document: args.print_document,
    };
    let write = match (&args.out, args.inplace) {
        (Some(p), _) => WriteMode::Out(p.clone()),
        (None, true) => WriteMode::InPlace,
        (None, false) => WriteMode::DryRun,
    };
    let req = args.meta.request(write, args.strict, args.force);
    super::emit(run::run(&args.file, &ops, req, view))
}

impl Meta {
    /// The writer's request these flags make (`noma patch`, `noma rm`).
    pub fn request(&self, write: WriteMode, strict: bool, force: bool) -> options::Request {
        options::Request {
            actor_kind: match self.actor_kind {
                ActorKindArg::Human => ActorKind::Human,
                ActorKindArg::Agent => ActorKind::Agent,
                ActorKindArg::Tool => ActorKind::Tool,
            },
            actor_name: self.actor_name.clone(),
            actor_model: self.actor_model.clone(),
            actor_version: self.actor_version.clone(),
            reason: self.reason.clone(),
            expected_sha: self.expected_sha.clone(),
            base_sha256: self.base_sha256.clone(),
            parent_op_id: self.parent_op_id.clone(),
            transcript: self.transcript.clone(),
            write,
            strict,
            force,
            signing: options::Signing::Configured {
                key: self.key.clone(),
                no_sign: self.no_sign,
            },
        }
    }
}

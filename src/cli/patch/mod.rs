//! `noma patch`: apply an op-list to a document and record it.

pub mod remove;
pub mod rename;
pub mod report;
pub mod run;

use std::path::PathBuf;

use super::writer::Meta;
use super::Format;
use crate::report::output::{Exit, Output};
use noma_store::engine::{self, WriteMode};

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

/// Runs `noma patch`.
pub fn run(args: Args) -> Output {
    if let Err(said) = super::noma_path("patch", &args.file, true) {
        return said;
    }
    let ops = match noma_store::op_list::read(args.op.as_deref(), args.ops.as_deref()) {
        Ok(o) => o,
        Err(e) => return Output::error(format!("noma patch: {e}"), Exit::NotRun),
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
    let opts = match args
        .meta
        .options(&args.file, write, args.strict, args.force)
    {
        Ok(o) => o,
        Err(e) => return Output::error(format!("noma patch: {e}"), Exit::NotRun),
    };
    let result = engine::patch_file(&args.file, &ops, &opts);
    run::answer(&args.file, result, &opts, view)
}

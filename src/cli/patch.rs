//! `noma patch`: apply an op-list to a document and record it.

use std::path::PathBuf;

use serde_json::{json, Value};

use super::Format;
use noma_core::transcript::{Actor, ActorKind, PatchResult};
use noma_store::engine::{self, Options, WriteMode};

/// Arguments of `noma patch`.
///
/// Without --inplace or --out the run is a dry run: nothing is written, the
/// changed lines go to stdout as a unified diff (human format; the whole
/// new document with --print-document) or the new document into the JSON
/// output (`document`), and no transcript record is appended.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Output: --inplace writes the document and appends one record per op to \
<file>.patches (or --transcript); --out PATH writes the new text to PATH and leaves the document \
and its transcript alone; neither = dry run that prints the changed lines as a unified diff \
(--print-document: the whole new document). Exit 0 applied, \
1 rejected (or an unrecorded edit was found), 2 could not run (an op that is not a catalogue op \
with the right fields is refused unrecorded: exit 2, with `error.code` in JSON)."
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

/// `--actor-kind`: the transcript's [`ActorKind`] as a command-line value
/// (the core crate knows no argument parser).
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ActorKindArg {
    /// A person.
    Human,
    /// An AI agent.
    Agent,
    /// An automated tool.
    Tool,
}

impl From<ActorKindArg> for ActorKind {
    fn from(k: ActorKindArg) -> Self {
        match k {
            ActorKindArg::Human => ActorKind::Human,
            ActorKindArg::Agent => ActorKind::Agent,
            ActorKindArg::Tool => ActorKind::Tool,
        }
    }
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

/// Reads the op-list from --op or --ops.
fn read_ops(args: &Args) -> Result<Vec<Value>, String> {
    let (text, from) = match (&args.op, &args.ops) {
        (Some(s), _) => (s.clone(), "--op".to_string()),
        (None, Some(p)) if p.as_os_str() == "-" => {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)
                .map_err(|e| format!("stdin: {e}"))?;
            (s, "stdin".into())
        }
        (None, Some(p)) => (
            noma_store::fsio::read_regular(p)
                .and_then(|b| {
                    String::from_utf8(b)
                        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
                })
                // One wording for a missing file across commands.
                .map_err(|e| match e.kind() {
                    std::io::ErrorKind::NotFound => format!("{}: no such file", p.display()),
                    _ => format!("{}: {e}", p.display()),
                })?,
            p.display().to_string(),
        ),
        (None, None) => return Err("give --op JSON or --ops FILE".into()),
    };
    let value: Value =
        serde_json::from_str(&text).map_err(|e| format!("{from}: invalid JSON: {e}"))?;
    let ops = match value {
        Value::Array(a) => a,
        Value::Object(mut o) if o.contains_key("ops") && !o.contains_key("op") => {
            match o.remove("ops") {
                Some(Value::Array(a)) => a,
                _ => return Err(format!("{from}: `ops` must be an array")),
            }
        }
        v @ Value::Object(_) => vec![v],
        _ => return Err(format!("{from}: expected an op object or an array of ops")),
    };
    if ops.is_empty() {
        return Err(format!("{from}: the op-list is empty"));
    }
    if let Some(i) = ops.iter().position(|o| !o.is_object()) {
        return Err(format!("{from}: op {i} is not a JSON object"));
    }
    Ok(ops)
}

/// The JSON answer to a request refused before recording.
fn refusal_json(e: &engine::InvalidOp) -> Value {
    json!({
        "accepted": false,
        "records": [],
        "error": {
            "code": e.code().as_str(),
            "message": e.to_string(),
            "op_index": e.index,
        },
    })
}

/// Runs `noma patch`.
pub fn run(args: Args) -> i32 {
    let ops = match read_ops(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("noma patch: {e}");
            return super::EXIT_USAGE;
        }
    };
    let (mut opts, root) = options(&args);
    if opts.write == WriteMode::InPlace {
        match noma_git::provenance::writer::step_in(
            root.as_deref(),
            args.meta.key.as_deref(),
            args.meta.no_sign,
        ) {
            Ok(step) => opts.before_append = step,
            Err(e) => {
                eprintln!("noma patch: {e}");
                return super::EXIT_USAGE;
            }
        }
    }
    let outcome = match engine::patch_file(&args.file, &ops, &opts) {
        Ok(o) => o,
        Err(e) => return failed(&e, &args, &opts),
    };
    let code = if outcome.accepted {
        super::EXIT_OK
    } else {
        super::EXIT_FAIL
    };
    let dry = opts.write == WriteMode::DryRun;
    match args.format {
        Format::Json => {
            let c = print_json(&outcome, dry);
            if c != super::EXIT_OK {
                return c;
            }
        }
        Format::Human => {
            // The diff is against the file as it is now: a dry run wrote nothing.
            let before = (dry && !args.print_document)
                .then(|| noma_store::fsio::read_document(&args.file).ok())
                .flatten();
            print_human(&outcome, dry, before.as_deref(), &args.file)
        }
    }
    code
}

/// The engine options the command line asks for, and the work tree the
/// document is in.
fn options(args: &Args) -> (Options, Option<PathBuf>) {
    let mut opts = Options::new(Actor {
        kind: args.meta.actor_kind.into(),
        name: args
            .meta
            .actor_name
            .clone()
            .unwrap_or_else(|| super::default_actor_name(&args.file)),
        model: args.meta.actor_model.clone(),
        version: args.meta.actor_version.clone(),
    });
    opts.strict = args.strict;
    opts.reason = args.meta.reason.clone();
    opts.expected_sha = args.meta.expected_sha.clone();
    opts.base_sha256 = args.meta.base_sha256.clone();
    opts.parent_op_id = args.meta.parent_op_id.clone();
    opts.transcript = args.meta.transcript.clone();
    opts.force = args.force;
    let dir = args
        .file
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let root = noma_git::git::blob::worktree_root(dir);
    opts.doc_uri = Some(noma_store::uri::portable_doc_uri(
        root.as_deref(),
        &args.file,
    ));
    opts.validate.datasets = args.file.parent().map(noma_store::fsio::datasets_in);
    opts.write = match (&args.out, args.inplace) {
        (Some(p), _) => WriteMode::Out(p.clone()),
        (None, true) => WriteMode::InPlace,
        (None, false) => WriteMode::DryRun,
    };
    if opts.write == WriteMode::InPlace {
        let tpath = opts
            .transcript
            .clone()
            .unwrap_or_else(|| engine::default_transcript_path(&args.file));
        opts.genesis = noma_git::record::first_patch_needs_genesis(&args.file, &tpath);
    }
    (opts, root)
}

/// Reports a request the engine could not carry out; returns the exit code.
fn failed(e: &engine::EngineError, args: &Args, opts: &Options) -> i32 {
    let format = args.format;
    let joined = match e {
        // A joined transcript (a merge without the driver) ends at neither
        // branch's document: that is the cause, and `noma repair` the fix.
        engine::EngineError::Recovery(_) if e.is_check_failure() => {
            let tpath = opts
                .transcript
                .clone()
                .unwrap_or_else(|| engine::default_transcript_path(&args.file));
            noma_git::merge::unjoin::advice_for_file(&args.file.to_string_lossy(), &tpath)
        }
        _ => None,
    };
    match joined {
        Some(advice) => eprintln!("noma patch: {}: {advice}", args.file.display()),
        None => eprintln!("noma patch: {e}"),
    }
    match e {
        // Refused before anything was recorded (exit 2, "could not run"),
        // but with its §3.5 code, so a JSON client gets `error.code`.
        engine::EngineError::InvalidOp(invalid) => {
            if format == Format::Json {
                let c = super::print_json(&refusal_json(invalid));
                if c != super::EXIT_OK {
                    return c;
                }
            }
            super::EXIT_USAGE
        }
        _ if e.is_check_failure() => super::EXIT_FAIL,
        _ => super::EXIT_USAGE,
    }
}

/// Prints the outcome as JSON (with the new document on a dry run);
/// returns the printer's exit code.
fn print_json(outcome: &engine::Outcome, dry: bool) -> i32 {
    let mut out = json!({ "accepted": outcome.accepted, "records": outcome.records });
    if let Some(r) = &outcome.recovery {
        out["recovery"] = serde_json::to_value(r).unwrap_or(Value::Null);
    }
    if let Some(t) = &outcome.transcript {
        out["transcript"] = json!(t.display().to_string());
    }
    if dry {
        out["document"] = json!(outcome.new_text);
    }
    super::print_json(&out)
}

/// Prints the outcome for people: one line per record with the
/// diagnostics worth reading, then the validation summary; a dry run
/// prints the changed lines (or, without `before`, the new document) on
/// stdout and the rest on stderr.
fn print_human(outcome: &engine::Outcome, dry: bool, before: Option<&str>, file: &std::path::Path) {
    if let Some(r) = &outcome.recovery {
        for m in &r.messages {
            eprintln!("noma patch: recovery: {m}");
        }
    }
    // A dry run prints the document on stdout, so the summary goes to stderr.
    let say = |line: String| {
        if dry {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    };
    for r in &outcome.records {
        say_record(r, &say);
    }
    if let Some(first) = outcome.records.first() {
        say(format!(
            "pre_validation: {}, post_validation: {}",
            first.pre_validation.as_str(),
            first.post_validation.as_str()
        ));
    }
    if !dry {
        return;
    }
    match before {
        Some(old) => {
            let shown = file.display().to_string();
            let diff = similar::TextDiff::from_lines(old, outcome.new_text.as_str());
            print!(
                "{}",
                diff.unified_diff()
                    .context_radius(2)
                    .header(&shown, &format!("{shown} (dry run)"))
            );
        }
        None => print!("{}", outcome.new_text),
    }
}

/// One record's line and the diagnostics a person needs from it: the
/// engine's own, and the errors of a rejected op.
fn say_record(r: &noma_core::transcript::Record, say: &impl Fn(String)) {
    let target = ["id", "from", "parent", "target"]
        .iter()
        .find_map(|k| r.op.get(*k).and_then(Value::as_str))
        .unwrap_or("");
    say(format!(
        "{:<8} {} {}  {} -> {}",
        r.patch_result.as_str(),
        r.op_name(),
        target,
        r.pre_sha,
        r.post_sha
    ));
    for d in r.diagnostics.iter().flatten() {
        // The count of standing diagnostics is for the record, not the screen.
        if d.code == engine::UNCHANGED_DIAGNOSTICS {
            continue;
        }
        let engine_code = !d.code.contains('-');
        if engine_code
            || r.patch_result == PatchResult::Rejected
                && d.severity == noma_core::diag::Severity::Error
        {
            say(format!(
                "    {}: {} {}",
                d.severity.as_str(),
                d.code,
                d.message
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_request_carries_its_code() {
        let unknown = engine::check_request(&[json!({"op": "explode", "id": "a"})]).unwrap_err();
        let v = refusal_json(&unknown);
        assert_eq!(v["error"]["code"], "unsupported_op");
        assert_eq!(v["accepted"], false);
        let missing = engine::check_request(&[
            json!({"op": "delete_block", "id": "a"}),
            json!({"op": "rename_id", "from": "a"}),
        ])
        .unwrap_err();
        let v = refusal_json(&missing);
        assert_eq!(v["error"]["code"], "invalid_content");
        assert_eq!(v["error"]["op_index"], 1);
    }
}

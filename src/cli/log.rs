//! `noma log`: the records that changed a document's blocks (or one block,
//! followed across renames), newest first, with who acted, why, when, who
//! signed and approved, and the commit that introduced each record.

use std::path::PathBuf;

use noma_core::display::escape as esc;
use noma_git::history::{self, BlockChange};

use super::Format;
use crate::report::output::{Exit, Output};

/// Arguments of `noma log`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The .noma document.
    pub file: PathBuf,
    /// Only the records that changed this block (its current id; older
    /// records under an id it was renamed from are included).
    #[arg(long, value_name = "ID")]
    pub block: Option<String>,
    /// At most this many records (the newest; at least 1).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub limit: Option<u64>,
    /// The transcript (default: FILE.patches).
    #[arg(long, value_name = "PATH")]
    pub transcript: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// Runs `noma log`.
pub fn run(args: Args) -> Output {
    if let Err(said) = super::noma_path("log", &args.file, false) {
        return said;
    }
    let transcript = args
        .transcript
        .clone()
        .unwrap_or_else(|| noma_store::engine::default_transcript_path(&args.file));
    let doc_exists = args.file.symlink_metadata().is_ok();
    let transcript_exists = transcript.symlink_metadata().is_ok();
    if !doc_exists && !transcript_exists {
        // Neither the document nor a tombstone: most likely a typo.
        let hint = match super::check_files::near_name(&args.file) {
            Some(n) => format!("; did you mean `{}`?", n.display()),
            None => "; `git ls-files '*.noma'` lists the documents".into(),
        };
        return Output::error(
            format!("noma log: {}: no such document{hint}", args.file.display()),
            Exit::NotRun,
        );
    }
    let mut c = Output::default();
    if !transcript_exists && matches!(args.format, Format::Human) {
        c.out(format!(
            "{} has no transcript, so no record changed it yet; `noma record {}` starts one",
            args.file.display(),
            args.file.display()
        ));
        return c;
    }
    let log = history::block_log(
        &super::cache::open_for_cwd(),
        &args.file,
        args.transcript.as_deref(),
        args.block.as_deref(),
        args.limit.map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
    );
    let changes = match log {
        Ok(c) => c,
        Err(e) => return Output::error(format!("noma: {e}"), Exit::NotRun),
    };
    if let Some(id) = args.block.as_deref().filter(|_| changes.is_empty()) {
        if let Some(said) = unknown_block(&args.file, id) {
            return said;
        }
    }
    match args.format {
        Format::Json => c.json(serde_json::json!({
            "document": args.file.display().to_string(),
            "block": args.block,
            "changes": changes,
        })),
        Format::Human => {
            let mut out = String::new();
            for c in &changes {
                out.push_str(&describe(c));
                for b in &c.blocks {
                    out.push_str(&format!("    {:<8} {}\n", b.change, touched(b)));
                }
            }
            if changes.is_empty() {
                out.push_str("no record changed it\n");
            }
            c.out_text(out);
        }
    }
    c
}

/// Exit 2 with a message when `id` names no block of the document (a block
/// that had records is found by them, even when removed since).
fn unknown_block(file: &std::path::Path, id: &str) -> Option<Output> {
    let src = match super::read_doc(file) {
        Ok(s) => s,
        Err(said) => return Some(said),
    };
    let reg = noma_core::doc::ids::registry(&noma_core::doc::parse(&src));
    if reg.ids.iter().any(|i| &**i == id) {
        return None;
    }
    Some(Output::error(
        format!(
            "noma: {}: no block with id {id:?} (and no record changed one by that id)",
            file.display()
        ),
        Exit::NotRun,
    ))
}

/// A block and how its id relates to the record's time.
pub(super) fn touched(b: &history::BlockTouch) -> String {
    let mut s = esc(&b.id).into_owned();
    if let Some(then) = &b.id_then {
        s.push_str(&format!(" (then {})", esc(then)));
    }
    if let Some(from) = &b.renamed_from {
        s.push_str(&format!(" (from {})", esc(from)));
    }
    s
}

/// One record's heading and reason, for people; every field the record's
/// writer chose is escaped ([`esc`]), so none reaches the terminal as a
/// control sequence.
pub(super) fn describe(c: &BlockChange) -> String {
    let mut s = format!(
        "{}  {}  {}  by {}",
        esc(&c.ts),
        esc(&c.op),
        esc(short(&c.op_id)),
        esc(&c.actor)
    );
    match &c.signed_by {
        Some(who) => s.push_str(&format!("  signed by {}", esc(who))),
        None => s.push_str("  unsigned"),
    }
    match (c.needs_approval, &c.approved_by) {
        (_, Some(who)) => s.push_str(&format!("  approved by {}", esc(who))),
        (true, None) => s.push_str("  not approved"),
        (false, None) => {}
    }
    match &c.commit {
        Some(commit) => s.push_str(&format!("  commit {}", short(commit))),
        None => s.push_str("  not committed"),
    }
    s.push('\n');
    if let Some(from) = &c.parent_op_id {
        s.push_str(&format!("    copied from {}\n", esc(short(from))));
    }
    if let Some(reason) = &c.reason {
        s.push_str(&format!("    reason: {}\n", esc(reason)));
    }
    s
}

fn short(id: &str) -> &str {
    id.char_indices().nth(8).map_or(id, |(at, _)| &id[..at])
}

//! `noma approve`: a person approves an agent's records with a signed
//! approval, over [`noma_git::provenance::approve`].

use std::io::BufRead;
use std::path::{Path, PathBuf};

use serde_json::json;

use super::Format;
use crate::report::output::{Exit, Output};
use noma_core::display::escape as esc;
use noma_git::provenance::approve;

/// Arguments of `noma approve`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Lists the agent records of DOC's transcript that no valid approval covers (up to \
--through), each with the blocks it changed, asks for confirmation unless --yes, and appends to \
DOC.provenance an approval signed with your key (noma-approval/2): approver, time, the records' \
op_ids, the sha256 of each one's canonical intent and the document's sha256 after the last of \
them. It keeps covering each approved record that stays in the transcript, in any order. Commit \
the sidecar with the document. A key whose approval could never count (an agent principal's, or \
one .noma/allowed_signers does not list for its principal) is refused before anything is \
written. Exit 0 approved (or nothing to approve), 1 declined, 2 could not run or refused."
)]
pub struct Args {
    /// The .noma document.
    pub file: PathBuf,
    /// Approve the agent records up to and including this op_id (default: all).
    #[arg(long, value_name = "OP_ID")]
    pub through: Option<String>,
    /// Your Ed25519 OpenSSH private key (default: $NOMA_SIGNING_KEY, or
    /// git's user.signingkey with gpg.format=ssh).
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// Approve without asking.
    #[arg(long)]
    pub yes: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// Runs `noma approve`.
pub fn run(args: Args) -> Output {
    let mut c = Output::default();
    if let Err(e) = approve_inner(&args, &mut c) {
        c.err(format!("noma approve: {}", esc(&e)));
        c.at_least(Exit::NotRun);
    }
    c
}

/// Adds what `noma approve` says to `c`; an error is what stops it.
fn approve_inner(args: &Args, c: &mut Output) -> Result<(), String> {
    let plan = approve::plan(&args.file, args.key.as_deref(), args.through.as_deref())
        .map_err(|e| e.to_string())?;
    if plan.pending().is_empty() {
        c.out(format!(
            "{}: no agent record waits for approval",
            args.file.display()
        ));
        return Ok(());
    }
    c.out_text(listing(&plan, &args.file));
    if !args.yes && !confirm(c)? {
        c.out("not approved");
        c.at_least(Exit::Failed);
        return Ok(());
    }
    let side = plan.approve(&args.file).map_err(|e| e.to_string())?;
    let approved: Vec<&String> = plan.pending().iter().map(|e| &e.record.op_id).collect();
    if args.format == Format::Json {
        c.json(json!({"approved": approved, "approver": plan.signer.principal, "sidecar": side}));
        return Ok(());
    }
    c.out(format!(
        "approved {} record(s); commit {} with the document",
        approved.len(),
        side.display()
    ));
    Ok(())
}

/// Asks on stderr, after printing what `c` holds so far (the listing the
/// question is about), and reads the answer from stdin.
fn confirm(c: &mut Output) -> Result<bool, String> {
    c.parts.push(crate::report::output::Part::Stderr(
        "approve? [y/N] ".into(),
    ));
    super::output::print_now(c);
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| e.to_string())?;
    Ok(matches!(line.trim(), "y" | "Y" | "yes"))
}

/// The listing a person reads before approving: one line per record
/// (op, target, actor, reason), the blocks it changed under it. What the
/// records' writers chose is escaped: a reason must not redraw the list.
fn listing(plan: &approve::Plan, doc: &Path) -> String {
    let pending = plan.pending();
    let mut out = format!(
        "{}: {} agent record(s) to approve as {}:\n",
        esc(&doc.display().to_string()),
        pending.len(),
        esc(&plan.signer.principal)
    );
    let blocks = plan.changed_blocks();
    for (i, e) in pending.iter().enumerate() {
        let r = &e.record;
        out.push_str(&format!(
            "  line {} {} {} by {}{}\n",
            e.line,
            esc(r.op_name()),
            esc(&target(&r.op)),
            esc(&r.actor.name),
            r.reason
                .as_deref()
                .map(|w| format!(": {}", esc(w)))
                .unwrap_or_default()
        ));
        match &blocks {
            Ok(per_record) => {
                for b in &per_record[i].changes {
                    let line = crate::report::changes::block_line(b);
                    out.push_str(&format!("  {}", noma_core::display::escape_text(&line)));
                }
            }
            Err(why) if i == 0 => out.push_str(&format!(
                "    (changed blocks unknown: {})\n",
                esc(&why.to_string())
            )),
            Err(_) => {}
        }
    }
    out
}

/// The op's target, for the listing.
fn target(op: &serde_json::Value) -> String {
    ["id", "target", "parent"]
        .iter()
        .find_map(|k| op.get(*k).and_then(|v| v.as_str()))
        .map_or_else(|| "(document)".to_string(), |b| format!("block {b}"))
}

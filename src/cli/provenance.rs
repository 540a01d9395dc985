//! Provenance commands: `noma approve`, `noma provenance payload|import`,
//! and the `--signatures` part of `noma replay`.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use serde_json::json;

use super::Format;
use noma_core::transcript::{self, Record};
use noma_git::provenance::check::{check_worktree, WorktreeReport};
use noma_git::provenance::{approval, canonical, sidecar, sshsig, writer, Sidecar, SidecarEntry};
use noma_store::engine::default_transcript_path;

/// `noma replay --signatures`: the statuses of every record of `doc`'s
/// transcript.
pub fn for_replay(doc: &Path, transcript: Option<&Path>) -> Result<WorktreeReport, String> {
    let tpath = transcript
        .map(Path::to_path_buf)
        .unwrap_or_else(|| default_transcript_path(doc));
    let bytes =
        noma_store::fsio::read_regular(&tpath).map_err(|e| format!("{}: {e}", tpath.display()))?;
    check_worktree(doc, &bytes)
}

/// Prints a `--signatures` report, one line per record (through one
/// buffer: a long transcript prints thousands of lines).
pub fn print_signatures(r: &WorktreeReport) {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    // Like println!, a closed stdout (a pager quit early) ends the report.
    let _ = write_signatures(&mut out, r).and_then(|()| out.flush());
}

fn write_signatures(out: &mut impl std::io::Write, r: &WorktreeReport) -> std::io::Result<()> {
    writeln!(out, "signatures (trusting {}):", r.trust)?;
    for s in &r.records {
        write!(out, "  line {} {}: ", s.line, s.op_id)?;
        match &s.signed_by {
            Some(p) => write!(out, "signed by {p}")?,
            None => write!(out, "unsigned")?,
        }
        match (&s.approved_by, s.needs_approval) {
            (Some(a), _) => writeln!(out, ", approved by {a}")?,
            (None, true) => writeln!(out, ", not approved")?,
            (None, false) => writeln!(out)?,
        }
        for p in &s.problems {
            writeln!(
                out,
                "    {} [{}] line {}: {}",
                p.level.to_uppercase(),
                p.code,
                p.line,
                p.message
            )?;
        }
    }
    if let Some(p) = &r.sidecar {
        writeln!(
            out,
            "  ERROR [{}] sidecar line {}: {}",
            p.code, p.line, p.message
        )?;
    }
    Ok(())
}

/// Arguments of `noma approve`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Lists the agent records of DOC's transcript that no valid approval covers (up to \
--through), asks for confirmation unless --yes, and appends to DOC.provenance an approval signed \
with your key: approver, time, the records' op_ids, the sha256 of their canonical intents and the \
document's sha256 after the last of them. Commit the sidecar with the document. Exit 0 approved \
(or nothing to approve), 1 declined, 2 could not run."
)]
pub struct ApproveArgs {
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

/// The op's target, for the listing.
/// The blocks each of `pending` changed, as `noma changed` diffs them:
/// the transcript is replayed up to the first of them, then each applied
/// record's op is applied in turn and each pending one's before and after
/// are diffed.
fn pending_blocks(
    t_bytes: &[u8],
    entries: &[transcript::Entry],
    pending: &[&transcript::Entry],
) -> Result<Vec<noma_git::changes::DocDiff>, String> {
    let first = pending.first().map_or(0, |e| e.offset);
    let mut text = transcript::replay::state_after(&t_bytes[..first], None)
        .map_err(|d| format!("line {}: {}", d.line, d.message))?
        .unwrap_or_default();
    let mut memo = noma_core::doc::memo::ParseMemo::new();
    let mut out = Vec::with_capacity(pending.len());
    let mut wanted = pending.iter().peekable();
    for e in entries.iter().skip_while(|e| e.offset < first) {
        let Some(next) = wanted.peek() else { break };
        let after = if e.record.patch_result == transcript::PatchResult::Applied {
            noma_core::patch::apply_ops_with(&mut memo, &text, std::slice::from_ref(&e.record.op))
                .map_err(|err| format!("line {}: {}", e.line, err.message))?
        } else {
            text.clone()
        };
        if next.line == e.line {
            out.push(noma_git::changes::diff_docs(&text, &after));
            wanted.next();
        }
        text = after;
    }
    Ok(out)
}

fn target(op: &serde_json::Value) -> String {
    ["id", "target", "parent"]
        .iter()
        .find_map(|k| op.get(*k).and_then(|v| v.as_str()))
        .map_or_else(|| "(document)".to_string(), |b| format!("block {b}"))
}

/// Runs `noma approve`.
pub fn approve(args: ApproveArgs) -> i32 {
    match approve_inner(&args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("noma approve: {e}");
            super::EXIT_USAGE
        }
    }
}

fn approve_inner(args: &ApproveArgs) -> Result<i32, String> {
    // The key is always wanted here: approving is signing.
    let signer = writer::approver_signer(&args.file, args.key.as_deref())
        .map_err(|e| e.to_string())?
        .ok_or("no signing key: pass --key FILE, set NOMA_SIGNING_KEY, or configure git's user.signingkey with gpg.format=ssh")?;
    let report = for_replay(&args.file, None)?;
    let tpath = default_transcript_path(&args.file);
    let t_bytes =
        noma_store::fsio::read_regular(&tpath).map_err(|e| format!("{}: {e}", tpath.display()))?;
    let parsed =
        transcript::parse_transcript(&t_bytes).map_err(|e| format!("{}: {e}", tpath.display()))?;
    // The work tree's policy says which principals are agents (the check
    // trusts the base's).
    let pending = approval::pending(
        &tpath,
        &parsed.entries,
        &report.records,
        args.through.as_deref(),
    )
    .map_err(|e| e.to_string())?;
    if pending.is_empty() {
        println!(
            "{}: no agent record waits for approval",
            args.file.display()
        );
        return Ok(super::EXIT_OK);
    }
    println!(
        "{}: {} agent record(s) to approve as {}:",
        args.file.display(),
        pending.len(),
        signer.principal
    );
    let blocks = pending_blocks(&t_bytes, &parsed.entries, &pending);
    for (i, e) in pending.iter().enumerate() {
        let r = &e.record;
        println!(
            "  line {} {} {} by {}{}",
            e.line,
            r.op_name(),
            target(&r.op),
            r.actor.name,
            r.reason
                .as_deref()
                .map(|w| format!(": {w}"))
                .unwrap_or_default()
        );
        match &blocks {
            Ok(per_record) => {
                for b in &per_record[i].changes {
                    print!("  {}", super::changed::block_line(b));
                }
            }
            Err(why) if i == 0 => println!("    (changed blocks unknown: {why})"),
            Err(_) => {}
        }
    }
    if !args.yes && !confirm()? {
        println!("not approved");
        return Ok(super::EXIT_FAIL);
    }
    let records: Vec<&Record> = pending.iter().map(|e| &e.record).collect();
    let side = approval::write(&signer, &args.file, &tpath, &records).map_err(|e| e.to_string())?;
    if args.format == Format::Json {
        return Ok(super::print_json(
            &json!({"approved": records.iter().map(|r| &r.op_id).collect::<Vec<_>>(), "approver": signer.principal, "sidecar": side}),
        ));
    }
    println!(
        "approved {} record(s); commit {} with the document",
        records.len(),
        side.display()
    );
    Ok(super::EXIT_OK)
}

fn confirm() -> Result<bool, String> {
    eprint!("approve? [y/N] ");
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| e.to_string())?;
    Ok(matches!(line.trim(), "y" | "Y" | "yes"))
}

/// `noma provenance`: the signed bytes, for tools outside noma.
#[derive(Debug, clap::Subcommand)]
pub enum ProvenanceCmd {
    /// Print the exact bytes a record's signature covers (RFC 8785 JSON),
    /// for `ssh-keygen -Y sign -n noma` / `-Y verify`.
    Payload {
        /// The .noma document.
        file: PathBuf,
        /// The record.
        #[arg(long, value_name = "ID")]
        op_id: String,
        /// The principal signing (bound in the payload).
        #[arg(long, value_name = "PRINCIPAL")]
        signer: String,
    },
    /// Add a signature made elsewhere (e.g. `ssh-keygen -Y sign -n noma`
    /// with a key held by ssh-agent) to the sidecar, after checking it
    /// verifies over the record's payload.
    Import {
        /// The .noma document.
        file: PathBuf,
        /// The record.
        #[arg(long, value_name = "ID")]
        op_id: String,
        /// The principal the signature is for.
        #[arg(long, value_name = "PRINCIPAL")]
        signer: String,
        /// The armored signature file (`-----BEGIN SSH SIGNATURE-----`).
        #[arg(long, value_name = "FILE")]
        sig: PathBuf,
    },
}

/// Arguments of `noma provenance`.
#[derive(Debug, clap::Args)]
pub struct ProvenanceArgs {
    #[command(subcommand)]
    cmd: ProvenanceCmd,
}

fn find_record(file: &Path, op_id: &str) -> Result<Record, String> {
    let tpath = default_transcript_path(file);
    let bytes =
        noma_store::fsio::read_regular(&tpath).map_err(|e| format!("{}: {e}", tpath.display()))?;
    let parsed =
        transcript::parse_transcript(&bytes).map_err(|e| format!("{}: {e}", tpath.display()))?;
    parsed
        .entries
        .into_iter()
        .map(|e| e.record)
        .find(|r| r.op_id == op_id)
        .ok_or_else(|| format!("{}: no record {op_id}", tpath.display()))
}

/// Runs `noma provenance`.
pub fn provenance(args: ProvenanceArgs) -> i32 {
    let result = match &args.cmd {
        ProvenanceCmd::Payload {
            file,
            op_id,
            signer,
        } => find_record(file, op_id).and_then(|r| {
            use std::io::Write;
            std::io::stdout()
                .write_all(&canonical::record_payload(&r, signer))
                .map_err(|e| e.to_string())
        }),
        ProvenanceCmd::Import {
            file,
            op_id,
            signer,
            sig,
        } => {
            find_record(file, op_id).and_then(|r| {
                let armored =
                    std::fs::read_to_string(sig).map_err(|e| format!("{}: {e}", sig.display()))?;
                sshsig::verify(&armored, &canonical::record_payload(&r, signer))
                    .map_err(|e| format!("{}: {e}", sig.display()))?;
                let entry = SidecarEntry::Signature(sidecar::RecordSignature {
                    op_id: op_id.clone(),
                    signer: signer.clone(),
                    sig: armored,
                });
                let tpath = default_transcript_path(file);
                let locked =
                    noma_store::fsio::LockedTranscript::open(&tpath).map_err(|e| e.to_string())?;
                let side = sidecar::sidecar_path(file);
                sidecar::append(&side, &[entry]).map_err(|e| format!("{}: {e}", side.display()))?;
                drop(locked);
                // Parse back: the sidecar must stay readable.
                let bytes = noma_store::fsio::read_regular(&side).map_err(|e| e.to_string())?;
                Sidecar::parse(&bytes).map_err(|e| format!("{}: {e}", side.display()))?;
                println!("{}: signature of {op_id} by {signer} added", side.display());
                Ok(())
            })
        }
    };
    match result {
        Ok(()) => super::EXIT_OK,
        Err(e) => {
            eprintln!("noma provenance: {e}");
            super::EXIT_USAGE
        }
    }
}

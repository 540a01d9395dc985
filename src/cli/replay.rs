//! `noma replay`: verify that a transcript reproduces its document.
//!
//! The base is looked up in git history and a `--rev` pair is read by
//! [`noma_git::history_replay`] (see there for where the base comes from);
//! this module parses arguments and prints.
//!
//! JSON output: `{"pending": [...], "replay": {...}}` as before, plus
//! `"base_lookup": {"sha256", "found", "searched"}` when the base was
//! looked up in git, and `"rev": {"rev", "commit", "document",
//! "transcript"}` with `--rev`.

use std::path::PathBuf;

use serde_json::json;

use super::Format;
use noma_core::transcript::{self, replay::Report};
use noma_git::history_replay::{self, BaseLookup, RevRead};

/// Arguments of `noma replay`.
///
/// Read-only: replays every applied record from the base and checks the
/// hash chain, each op's hashes, and the document on disk. Nothing is
/// repaired here; an interrupted write that is due is reported (the next
/// `noma patch`, or `noma repair`, completes it).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The .noma document.
    pub file: PathBuf,
    /// Transcript path (default: the document path plus .patches).
    #[arg(long, value_name = "PATH")]
    pub transcript: Option<PathBuf>,
    /// The document as it was before the first applied record (default:
    /// the document itself when its sha256 is that record's pre_sha256,
    /// else the version with that sha256 in the document's git history).
    #[arg(long, value_name = "PATH", conflicts_with = "rev")]
    pub base: Option<PathBuf>,
    /// Replay the document and transcript as committed at this revision
    /// (git's `REV:path` rule: paths are relative to the repository root
    /// unless they start with `./` or `../`); reads no working-tree file.
    #[arg(long, value_name = "REV")]
    pub rev: Option<String>,
    /// Also verify each record's signature and approval in
    /// <file>.provenance, trusting the work tree's .noma/config.yml and
    /// .noma/allowed_signers (exit 1 on a forgery, or on what the policy
    /// makes an error).
    #[arg(long, conflicts_with = "rev")]
    pub signatures: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// Runs `noma replay`.
pub fn run(args: Args) -> i32 {
    let (notes, report, lookup, rev) = match &args.rev {
        Some(rev) => {
            let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
            match history_replay::replay_at_rev(&cwd, rev, &args.file, args.transcript.as_deref()) {
                Ok((report, lookup, read)) => (Vec::new(), report, lookup, Some(read)),
                Err(e) => {
                    eprintln!("noma replay: {e}");
                    return super::EXIT_USAGE;
                }
            }
        }
        None => {
            let r = history_replay::replay_worktree(
                &args.file,
                args.transcript.as_deref(),
                args.base.as_deref(),
            );
            match r {
                Ok((notes, report, lookup)) => (notes, report, lookup, None),
                Err(e) => {
                    eprintln!("noma replay: {e}");
                    return if e.is_check_failure() {
                        super::EXIT_FAIL
                    } else {
                        super::EXIT_USAGE
                    };
                }
            }
        }
    };
    let code = if report.ok {
        super::EXIT_OK
    } else {
        super::EXIT_FAIL
    };
    let signatures = match args
        .signatures
        .then(|| super::provenance::for_replay(&args.file, args.transcript.as_deref()))
        .transpose()
    {
        Ok(s) => s,
        Err(e) => {
            eprintln!("noma replay: {e}");
            return super::EXIT_USAGE;
        }
    };
    let code = match &signatures {
        Some(s) if s.errors() > 0 => super::EXIT_FAIL,
        _ => code,
    };
    // A transcript two branches were joined into (a merge without the
    // driver) diverges where the second begins: say how to repair it.
    let advice = (!report.ok && args.rev.is_none())
        .then(|| history_replay::join_advice(&args.file, args.transcript.as_deref()))
        .flatten();
    match args.format {
        Format::Json => {
            let mut v = json!({ "pending": notes, "replay": report });
            if let Some(a) = &advice {
                v["advice"] = json!(a);
            }
            if let Some(l) = &lookup {
                v["base_lookup"] = json!(l);
            }
            if let Some(r) = &rev {
                v["rev"] = json!(r);
            }
            if let Some(s) = &signatures {
                v["signatures"] = json!(s);
            }
            let c = super::print_json(&v);
            if c != super::EXIT_OK {
                return c;
            }
        }
        Format::Human => {
            print_human(&notes, &report, lookup.as_ref(), rev.as_ref());
            if let Some(a) = &advice {
                println!("  fix: {a}");
            }
            if let Some(s) = &signatures {
                super::provenance::print_signatures(s);
            }
        }
    }
    code
}

fn print_human(
    notes: &[String],
    report: &Report,
    lookup: Option<&BaseLookup>,
    rev: Option<&RevRead>,
) {
    if let Some(r) = rev {
        println!("at {}: {} and {}", r.rev, r.document, r.transcript);
    }
    for m in notes {
        println!("pending: {m}");
    }
    if let Some(l) = lookup.filter(|l| l.found) {
        println!(
            "base: sha256 {} found in {}",
            transcript::short_sha(&l.sha256),
            l.searched.as_deref().unwrap_or("git")
        );
    }
    let rate = if report.elapsed_ms > 0.0 {
        format!(
            ", {:.0} records/s",
            report.records as f64 * 1000.0 / report.elapsed_ms
        )
    } else {
        String::new()
    };
    println!(
        "{} records ({} applied, {} rejected, {} noop) in {:.1} ms{rate}",
        report.records, report.applied, report.rejected, report.noop, report.elapsed_ms
    );
    match &report.divergence {
        None => println!(
            "ok: replay reproduces the document (sha256 {})",
            report.final_sha256.as_deref().unwrap_or("-")
        ),
        Some(d) => {
            let who = d
                .op_id
                .as_deref()
                .map(|o| format!(" (op_id {o})"))
                .unwrap_or_default();
            println!("DIVERGED at line {}{who}: {}", d.line, d.message);
            if let (Some(e), Some(a)) = (&d.expected_sha256, &d.actual_sha256) {
                println!("  expected sha256 {e}\n  actual   sha256 {a}");
            }
            for b in &d.blocks {
                println!("  block {} {}", b.id, b.change);
            }
            if let Some(l) = lookup.filter(|l| !l.found) {
                let short = transcript::short_sha(&l.sha256);
                match (&l.searched, &l.not_searched) {
                    (Some(s), _) => println!(
                        "  base: no version with sha256 {short} in {s}; pass --base PATH with that content"
                    ),
                    (None, r) => println!(
                        "  base: sha256 {short} not looked up in git ({}); pass --base PATH with that content",
                        r.as_deref().unwrap_or("no repository")
                    ),
                }
            }
        }
    }
}

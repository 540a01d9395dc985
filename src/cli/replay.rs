//! `noma replay`: verify that a transcript reproduces its document.
//!
//! # Where the base comes from
//!
//! Replay starts from the document as it was before the first applied
//! record (that record's `pre_sha256`):
//!
//! 1. `--base PATH` when given;
//! 2. the document itself, when its sha256 is that `pre_sha256` (a
//!    transcript that has not moved the document yet), or the empty
//!    document for a genesis record (left to the replay itself);
//! 3. otherwise the version of the document in its git history whose
//!    sha256 is that `pre_sha256`: the usual case of a transcript started
//!    after the document was first committed. The history searched is the
//!    one reachable from HEAD and every ref ([`noma_git::merge::doc_finder`]),
//!    bounded by [`noma_git::git::HISTORY_LIMIT`] commits, by content: under
//!    the document's current path first, then under any name (a document
//!    moved or copied since).
//!
//! Outside a repository, or when no version has that sha256, replay
//! reports the divergence as before and the hint names `--base`. The
//! lookup happens here, in the shell; the engine reads no repository.
//!
//! `--rev REV` replays the document and its transcript *as committed at
//! REV* (paths follow git's `REV:path` rule, as in `noma blocks --rev`),
//! with the base searched in the history reachable from REV; nothing is
//! read from the working tree, so no pending write is reported.
//!
//! JSON output: `{"pending": [...], "replay": {...}}` as before, plus
//! `"base_lookup": {"sha256", "found", "searched"}` when the base was
//! looked up in git, and `"rev": {"rev", "commit", "document",
//! "transcript"}` with `--rev`.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::json;

use super::Format;
use noma_core::doc::hash::sha256_hex;
use noma_core::transcript::{self, replay::Report};
use noma_git::git::blob::{self, BlobError};
use noma_git::git::repo::Repo;
use noma_store::engine;

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

/// A base looked up in git.
#[derive(Debug, Clone, Serialize)]
struct Lookup {
    /// The sha256 the base must have (the first applied record's pre_sha256).
    sha256: String,
    /// Whether a version with that sha256 was found.
    found: bool,
    /// What was searched.
    #[serde(skip_serializing_if = "Option::is_none")]
    searched: Option<String>,
    /// Why git could not be searched (outside a repository, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    not_searched: Option<String>,
}

impl Lookup {
    fn new(sha256: String, found: bool, searched: Result<String, String>) -> Lookup {
        let (searched, not_searched) = match searched {
            Ok(s) => (Some(s), None),
            Err(r) => (None, Some(r)),
        };
        Lookup {
            sha256,
            found,
            searched,
            not_searched,
        }
    }
}

/// What `--rev` read.
#[derive(Debug, Clone, Serialize)]
struct RevRead {
    rev: String,
    commit: Option<String>,
    document: String,
    transcript: String,
}

/// The sha256 of the base replay needs from outside, if any: the first
/// applied record's `pre_sha256`, unless the document itself is at that
/// state or it is the empty document's (a genesis record, which replay
/// starts from the empty text). None too when the records cannot be read
/// up to the first applied one (replay reports that line).
fn wanted_base(first_pre: Option<&str>, doc: &str) -> Option<String> {
    let pre = first_pre?;
    (pre != sha256_hex(doc.as_bytes()) && pre != sha256_hex(b"")).then(|| pre.to_string())
}

/// The version of the working-tree document `doc` whose sha256 is `sha`,
/// from its git history, and what was searched (Err: why nothing was).
fn find_in_worktree_history(doc: &Path, sha: &str) -> (Option<String>, Result<String, String>) {
    let dir = match doc.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let repo = match Repo::discover(dir) {
        Ok(r) => r,
        Err(_) => return (None, Err("not in a git repository".into())),
    };
    let Some(rel) = repo.relative_path(doc) else {
        return (
            None,
            Err(format!(
                "{} is not in the repository's working tree",
                doc.display()
            )),
        );
    };
    let found = noma_git::merge::doc_finder(Some(&repo), &rel, Vec::new())(sha);
    (
        found,
        Ok(format!(
            "the git history reachable from HEAD and every ref (by content, under any name){}",
            repo.shallow_note()
        )),
    )
}

/// Replays the committed document and transcript at `rev`.
fn replay_rev(args: &Args, rev: &str) -> Result<(Report, Option<Lookup>, RevRead), String> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let (dfile, doc) = blob::read_rev_text(&cwd, rev, &args.file).map_err(|e| e.to_string())?;
    let tpath = args
        .transcript
        .clone()
        .unwrap_or_else(|| engine::default_transcript_path(&args.file));
    let tfile = blob::read_rev_path(&cwd, rev, &tpath).map_err(|e| match e {
        BlobError::NotFound { spec, .. } => format!(
            "{spec}: no transcript at that revision (the document {} is there; name another with --transcript)",
            dfile.spec
        ),
        other => other.to_string(),
    })?;
    let repo = Repo::open_from(&cwd).map_err(|e| e.to_string())?;
    // A tree-ish that is no commit has no history to search.
    let commit = repo.resolve(rev).ok();
    let first_pre = transcript::replay::first_applied_pre_sha256(&tfile.bytes);
    let lookup = match wanted_base(first_pre.as_deref(), &doc) {
        None => None,
        Some(sha) => {
            let found = match commit {
                Some(c) => repo
                    .find_document(&[c], &[dfile.path.as_str()], &sha)
                    .map_err(|e| e.to_string())?
                    .and_then(|b| String::from_utf8(b).ok()),
                None => None,
            };
            Some((sha, found))
        }
    };
    let base = lookup.as_ref().and_then(|(_, f)| f.clone());
    let report = transcript::replay::replay(&tfile.bytes, base.as_deref(), &doc);
    let lookup = lookup.map(|(sha256, found)| {
        let searched = match commit {
            Some(_) => Ok(format!(
                "the git history reachable from {rev} (by content, under any name)"
            )),
            None => Err(format!("{rev} is not a commit")),
        };
        Lookup::new(sha256, found.is_some(), searched)
    });
    let read = RevRead {
        rev: rev.to_string(),
        commit: commit.map(|c| c.to_string()),
        document: dfile.spec,
        transcript: tfile.spec,
    };
    Ok((report, lookup, read))
}

/// Runs `noma replay`.
pub fn run(args: Args) -> i32 {
    let (notes, report, lookup, rev) = match &args.rev {
        Some(rev) => match replay_rev(&args, rev) {
            Ok((report, lookup, read)) => (Vec::new(), report, lookup, Some(read)),
            Err(e) => {
                eprintln!("noma replay: {e}");
                return super::EXIT_USAGE;
            }
        },
        None => {
            let mut lookup: Option<Lookup> = None;
            let mut find = |first_pre: Option<&str>, doc: &str| -> Option<String> {
                let sha = wanted_base(first_pre, doc)?;
                let (found, searched) = find_in_worktree_history(&args.file, &sha);
                lookup = Some(Lookup::new(sha, found.is_some(), searched));
                found
            };
            let r = engine::replay_file(
                &args.file,
                args.transcript.as_deref(),
                args.base.as_deref(),
                &mut find,
            );
            match r {
                Ok((notes, report)) => (notes, report, lookup, None),
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
        .then(|| {
            let tpath = args
                .transcript
                .clone()
                .unwrap_or_else(|| engine::default_transcript_path(&args.file));
            let t = noma_store::fsio::read_regular(&tpath).ok()?;
            let join = noma_git::merge::joined::find_join(&t)?;
            Some(noma_git::merge::joined::advice(
                &args.file.to_string_lossy(),
                join,
            ))
        })
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

fn print_human(notes: &[String], report: &Report, lookup: Option<&Lookup>, rev: Option<&RevRead>) {
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

//! `noma replay` in one call: the replay (of the work tree, or of a
//! revision's committed files, see [`noma_git::history_replay`]), the
//! records' signatures when asked, the repair advice for a transcript two
//! branches were joined into, and the report for people or as JSON
//! (`{"pending", "replay"}`, plus `base_lookup`, `rev`, `advice` and
//! `signatures` when they apply). The signatures of a long history are
//! written as they are judged ([`noma_git::provenance::stream`]): neither
//! the statuses nor the report are held whole.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::report::output::{Exit, Output};
use noma_core::display::escape as esc;
use noma_core::transcript::{self, replay::Report};
use noma_git::history_replay::{self, BaseLookup, RevRead};
use noma_git::provenance::check::WorktreeReport;
use noma_git::provenance::stream::{WorktreeStream, CHUNK};
use noma_provenance::signers::SIGNERS_WARNING;
use noma_provenance::verify::codes;

/// What `noma replay` is asked.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The document.
    pub file: &'a Path,
    /// Its transcript (default: the document path plus `.patches`).
    pub transcript: Option<&'a Path>,
    /// The document as it was before the first applied record.
    pub base: Option<&'a Path>,
    /// Replay the files as committed at this revision instead.
    pub rev: Option<&'a str>,
    /// Also verify each record's signature and approval.
    pub signatures: bool,
}

/// Everything a replay found.
struct Checked<'a> {
    notes: Vec<String>,
    report: Report,
    lookup: Option<BaseLookup>,
    rev: Option<RevRead>,
    signatures: Option<WorktreeStream<'a>>,
    advice: Option<String>,
}

/// Replays as asked and reports: passed when the transcript reproduces the
/// document (and no signature is at fault), failed when it does not. The
/// report goes to `out` (stdout), as it is made; the console returned
/// holds what goes to stderr, and the verdict.
pub fn run(req: &Request<'_>, json: bool, out: &mut dyn Write) -> Output {
    let mut checked = match check(req) {
        Ok(c) => c,
        Err(c) => return c,
    };
    let written = if json {
        checked.write_json(out)
    } else {
        checked.write_text(out)
    };
    let errors = match written {
        Ok(errors) => errors,
        Err(e) => return Output::error(format!("noma replay: {e}"), Exit::NotRun),
    };
    let mut c = Output::default();
    if !checked.report.ok || errors > 0 {
        c.at_least(Exit::Failed);
    }
    c
}

/// The text pieces of the report are joined into `out` a record at a
/// time; a write that fails stops the report.
fn put(out: &mut dyn Write, bytes: &[u8]) -> Result<(), String> {
    out.write_all(bytes)
        .map_err(|e| format!("cannot write output: {e}"))
}

/// Stands for the records' array in the JSON written around it.
const RECORDS_HERE: &str = "\u{0}records\u{0}";

fn check<'a>(req: &Request<'a>) -> Result<Checked<'a>, Output> {
    let fail = |e: &dyn std::fmt::Display, v| Output::error(format!("noma replay: {e}"), v);
    let (notes, report, lookup, rev) = match req.rev {
        Some(rev) => {
            let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
            match history_replay::replay_at_rev(&cwd, rev, req.file, req.transcript) {
                Ok((report, lookup, read)) => (Vec::new(), report, lookup, Some(read)),
                Err(e) => return Err(fail(&e, Exit::NotRun)),
            }
        }
        None => match history_replay::replay_worktree(req.file, req.transcript, req.base) {
            Ok((notes, report, lookup)) => (notes, report, lookup, None),
            Err(e) if e.is_check_failure() => return Err(fail(&e, Exit::Failed)),
            Err(e) => return Err(fail(&e, Exit::NotRun)),
        },
    };
    let signatures = req
        .signatures
        .then(|| WorktreeStream::open(req.file, req.transcript))
        .transpose()
        .map_err(|e| fail(&e, Exit::NotRun))?;
    // A transcript two branches were joined into (a merge without the
    // driver) diverges where the second begins: say how to repair it.
    let advice = (!report.ok && req.rev.is_none())
        .then(|| history_replay::join_advice(req.file, req.transcript))
        .flatten()
        .or_else(|| unrecorded_edit_advice(req, &report));
    Ok(Checked {
        notes,
        report,
        lookup,
        rev,
        signatures,
        advice,
    })
}

/// The fix for a work-tree document edited after its last record, or
/// put back at the state a record started from (its change undone).
fn unrecorded_edit_advice(req: &Request<'_>, report: &Report) -> Option<String> {
    let edited = report.divergence.as_ref()?.is_unrecorded_edit();
    if !edited || req.rev.is_some() {
        return None;
    }
    let file = noma_core::diag::shell_word(&req.file.display().to_string());
    if let Some(line) = undone_from(req) {
        // Recording it would record the undo as a person's edit.
        return Some(format!(
            "the document is back at the state line {line}'s record started from: that record's change (and any after it) was undone, e.g. by `git stash`, `git checkout` or `git restore`, which leave the transcript; bring the change back (`git stash pop`), or drop the transcript's lines from {line} on (restore the committed transcript, or remove it if no commit has it)"
        ));
    }
    Some(format!(
        "the document was edited after the last record: record the edit with `noma record {file}`"
    ))
}

/// The line of the last record that starts from the document's current
/// state: the document is a state the transcript already passed, that
/// record's change (and its successors') undone.
fn undone_from(req: &Request<'_>) -> Option<usize> {
    let doc = std::fs::read(req.file).ok()?;
    let tpath = req.transcript.map_or_else(
        || noma_store::engine::default_transcript_path(req.file),
        Into::into,
    );
    let bytes = std::fs::read(tpath).ok()?;
    noma_core::transcript::replay::last_record_starting_at(&bytes, &doc)
}

impl Checked<'_> {
    /// The JSON report, its records written one at a time (pretty, as
    /// the whole document would be); the number of errors.
    fn write_json(&mut self, out: &mut dyn Write) -> Result<usize, String> {
        let mut v = self.json();
        let Some(s) = self.signatures.as_mut() else {
            let text = serde_json::to_string_pretty(&v).map_err(|e| e.to_string())?;
            put(out, text.as_bytes())?;
            return put(out, b"\n").map(|()| 0);
        };
        let mut frame = json!(WorktreeReport {
            trust: s.trust_source.clone(),
            records: Vec::new(),
            sidecar: s.sidecar().cloned(),
            warnings: s.warnings(),
        });
        frame["records"] = json!(RECORDS_HERE);
        v["signatures"] = frame;
        let text = serde_json::to_string_pretty(&v).map_err(|e| e.to_string())?;
        let here = serde_json::to_string(RECORDS_HERE).map_err(|e| e.to_string())?;
        let (head, tail) = text.split_once(&here).ok_or("no place for the records")?;
        put(out, head.as_bytes())?;
        put(out, b"[")?;
        let (mut n, mut errors) = (0usize, 0usize);
        let mut buf = Vec::new();
        s.statuses(CHUNK, &mut |st| {
            errors += st.problems.iter().filter(|p| p.level == "error").count();
            buf.clear();
            buf.extend_from_slice(if n == 0 { &b"\n"[..] } else { &b",\n"[..] });
            let one = serde_json::to_vec_pretty(&st).map_err(|e| e.to_string())?;
            // The array's items sit three levels deep: every line of the
            // item is indented by six spaces, as the whole document's
            // pretty printer would (a JSON string holds no raw newline).
            for (k, line) in one.split(|&b| b == b'\n').enumerate() {
                if k > 0 {
                    buf.push(b'\n');
                }
                buf.extend_from_slice(b"      ");
                buf.extend_from_slice(line);
            }
            n += 1;
            Ok(put(out, &buf)?)
        })
        .map_err(|e| e.to_string())?;
        put(out, if n == 0 { &b"]"[..] } else { &b"\n    ]"[..] })?;
        put(out, tail.as_bytes())?;
        put(out, b"\n")?;
        Ok(errors + usize::from(s.sidecar().is_some_and(|p| p.level == "error")))
    }

    /// The text report, its records written one at a time; the number of
    /// errors.
    fn write_text(&mut self, out: &mut dyn Write) -> Result<usize, String> {
        put(out, self.human().as_bytes())?;
        let Some(s) = self.signatures.as_mut() else {
            return Ok(0);
        };
        put(out, signatures_head(&s.trust_source).as_bytes())?;
        let (mut buf, mut errors) = (String::new(), 0usize);
        s.statuses(CHUNK, &mut |st| {
            errors += st.problems.iter().filter(|p| p.level == "error").count();
            buf.clear();
            status_text(&st, &mut buf);
            Ok(put(out, buf.as_bytes())?)
        })
        .map_err(|e| e.to_string())?;
        buf.clear();
        signatures_tail(&s.warnings(), s.sidecar(), &mut buf);
        put(out, buf.as_bytes())?;
        Ok(errors + usize::from(s.sidecar().is_some_and(|p| p.level == "error")))
    }

    /// The JSON report but for its signatures.
    fn json(&self) -> Value {
        let mut v = json!({ "pending": self.notes, "replay": self.report });
        if let Some(a) = &self.advice {
            v["advice"] = json!(a);
        }
        if let Some(l) = &self.lookup {
            v["base_lookup"] = json!(l);
        }
        if let Some(r) = &self.rev {
            v["rev"] = json!(r);
        }
        v
    }

    /// The text report but for its signatures.
    fn human(&self) -> String {
        let mut out = String::new();
        if let Some(r) = &self.rev {
            out.push_str(&format!(
                "at {}: {} and {}\n",
                r.rev, r.document, r.transcript
            ));
        }
        for m in &self.notes {
            out.push_str(&format!("pending: {}\n", esc(m)));
        }
        if let Some(l) = self.lookup.as_ref().filter(|l| l.found) {
            out.push_str(&format!(
                "base: sha256 {} found in {}\n",
                transcript::short_sha(&l.sha256),
                l.searched.as_deref().unwrap_or("git")
            ));
        }
        let report = &self.report;
        let rate = if report.elapsed_ms > 0.0 {
            format!(
                ", {:.0} records/s",
                report.records as f64 * 1000.0 / report.elapsed_ms
            )
        } else {
            String::new()
        };
        out.push_str(&format!(
            "{} records ({} applied, {} rejected, {} noop) in {:.1} ms{rate}\n",
            report.records, report.applied, report.rejected, report.noop, report.elapsed_ms
        ));
        out.push_str(&self.verdict_text());
        if let Some(a) = &self.advice {
            out.push_str(&format!("  fix: {a}\n"));
        }
        out
    }

    /// Whether replay reproduced the document, or where it diverged.
    fn verdict_text(&self) -> String {
        let Some(d) = &self.report.divergence else {
            return format!(
                "ok: replay reproduces the document (sha256 {})\n",
                self.report.final_sha256.as_deref().unwrap_or("-")
            );
        };
        let who = d
            .op_id
            .as_deref()
            .map(|o| format!(" (op_id {})", esc(o)))
            .unwrap_or_default();
        let mut out = format!("DIVERGED at line {}{who}: {}\n", d.line, esc(&d.message));
        if let (Some(e), Some(a)) = (&d.expected_sha256, &d.actual_sha256) {
            out.push_str(&format!("  expected sha256 {e}\n  actual   sha256 {a}\n"));
        }
        for b in &d.blocks {
            out.push_str(&format!("  block {} {}\n", esc(&b.id), b.change));
        }
        if let Some(l) = self.lookup.as_ref().filter(|l| !l.found) {
            let short = transcript::short_sha(&l.sha256);
            out.push_str(&match (&l.searched, &l.not_searched) {
                (Some(s), _) => format!(
                    "  base: no version with sha256 {short} in {s}; pass --base PATH with that content\n"
                ),
                (None, r) => format!(
                    "  base: sha256 {short} not looked up in git ({}); pass --base PATH with that content\n",
                    r.as_deref().unwrap_or("no repository")
                ),
            });
        }
        out
    }
}

/// The first line of the signatures' report.
fn signatures_head(trust: &str) -> String {
    format!("signatures (trusting {trust}):\n")
}

/// One record's lines of the signatures' report, appended to `out`.
fn status_text(s: &noma_provenance::verify::RecordStatus, out: &mut String) {
    use std::fmt::Write;
    let _ = write!(out, "  line {} {}: ", s.line, esc(&s.op_id));
    // "unsigned" only for a record with no signature at all: one whose
    // signature does not count says so, and its problem says why.
    let unsigned = s.problems.iter().any(|p| p.code == codes::UNSIGNED);
    match &s.signed_by {
        Some(p) => {
            let _ = write!(out, "signed by {}", esc(p));
        }
        None if unsigned => out.push_str("unsigned"),
        None if s.problems.is_empty() => out.push_str("signature not checked"),
        None => out.push_str("signature not accepted"),
    }
    match (&s.approved_by, s.needs_approval) {
        (Some(a), _) => {
            let _ = writeln!(out, ", approved by {}", esc(a));
        }
        (None, true) => out.push_str(", not approved\n"),
        (None, false) => out.push('\n'),
    }
    for p in &s.problems {
        let _ = writeln!(
            out,
            "    {} [{}] line {}: {}",
            p.level.to_uppercase(),
            p.code,
            p.line,
            esc(&p.message)
        );
    }
}

/// The last lines of the signatures' report: the allowed-signers warnings and
/// the sidecar's problem, appended to `out`.
fn signatures_tail(
    warnings: &[noma_provenance::signers::SignersWarning],
    sidecar: Option<&noma_provenance::verify::Problem>,
    out: &mut String,
) {
    for w in warnings {
        out.push_str(&format!(
            "  WARNING [{SIGNERS_WARNING}] {}\n",
            esc(&w.to_string())
        ));
    }
    if let Some(p) = sidecar {
        out.push_str(&format!(
            "  ERROR [{}] sidecar line {}: {}\n",
            p.code,
            p.line,
            esc(&p.message)
        ));
    }
}

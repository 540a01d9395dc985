//! The signature report of a document's work-tree transcript: computed
//! for `noma replay --signatures` and `noma approve`, and written as
//! `--signatures` prints it, one line per record.

use std::path::Path;

use super::check::{check_worktree, WorktreeReport};
use super::signers::SIGNERS_WARNING;
use super::verify::codes;
use noma_store::engine::default_transcript_path;

/// The statuses of every record of `doc`'s transcript (`transcript`, or
/// the document path plus `.patches`), trusting the work tree's policy
/// and allowed signers.
pub fn for_doc(doc: &Path, transcript: Option<&Path>) -> Result<WorktreeReport, String> {
    let tpath = transcript
        .map(Path::to_path_buf)
        .unwrap_or_else(|| default_transcript_path(doc));
    // Verification holds the transcript; like replay, it has no size cap.
    let mut bytes = Vec::new();
    noma_store::fsio::open_lines(&tpath)
        .and_then(|mut f| std::io::Read::read_to_end(&mut f, &mut bytes))
        .map_err(|e| format!("{}: {e}", tpath.display()))?;
    check_worktree(doc, &bytes)
}

/// The signature and approval problems (notes left out) of `doc`'s
/// records when the work tree's policy asks for signatures or approvals,
/// as the hook reads it; none otherwise, or when they cannot be checked.
pub fn problems_if_asked(doc: &Path) -> Vec<super::verify::Problem> {
    let dir = doc
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let root = crate::git::blob::worktree_root(dir).unwrap_or_else(|| dir.to_path_buf());
    let asks = crate::config::Policy::load(&root).is_ok_and(|p| !p.file.provenance.is_off());
    if !asks {
        return Vec::new();
    }
    let Ok(report) = for_doc(doc, None) else {
        return Vec::new();
    };
    report
        .records
        .into_iter()
        .flat_map(|r| r.problems)
        .filter(|p| p.level != "note")
        .collect()
}

/// The report as text: who signed and approved each record, and every
/// problem found.
pub fn signatures_text(r: &WorktreeReport) -> String {
    let mut out = signatures_head(&r.trust);
    for s in &r.records {
        status_text(s, &mut out);
    }
    signatures_tail(&r.warnings, r.sidecar.as_ref(), &mut out);
    out
}

/// The first line of [`signatures_text`].
pub fn signatures_head(trust: &str) -> String {
    format!("signatures (trusting {trust}):\n")
}

/// One record's lines of [`signatures_text`], appended to `out`.
pub fn status_text(s: &super::verify::RecordStatus, out: &mut String) {
    use std::fmt::Write;
    let _ = write!(out, "  line {} {}: ", s.line, s.op_id);
    // "unsigned" only for a record with no signature at all: one whose
    // signature does not count says so, and its problem says why.
    let unsigned = s.problems.iter().any(|p| p.code == codes::UNSIGNED);
    match &s.signed_by {
        Some(p) => {
            let _ = write!(out, "signed by {p}");
        }
        None if unsigned => out.push_str("unsigned"),
        None if s.problems.is_empty() => out.push_str("signature not checked"),
        None => out.push_str("signature not accepted"),
    }
    match (&s.approved_by, s.needs_approval) {
        (Some(a), _) => {
            let _ = writeln!(out, ", approved by {a}");
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
            p.message
        );
    }
}

/// The last lines of [`signatures_text`]: the allowed-signers warnings and
/// the sidecar's problem, appended to `out`.
pub fn signatures_tail(
    warnings: &[super::signers::SignersWarning],
    sidecar: Option<&super::verify::Problem>,
    out: &mut String,
) {
    for w in warnings {
        out.push_str(&format!("  WARNING [{SIGNERS_WARNING}] {w}\n"));
    }
    if let Some(p) = sidecar {
        out.push_str(&format!(
            "  ERROR [{}] sidecar line {}: {}\n",
            p.code, p.line, p.message
        ));
    }
}

//! The signature report of a document's work-tree transcript: computed
//! for `noma replay --signatures` and `noma approve`, and written as
//! `--signatures` prints it, one line per record.

use std::path::Path;

use super::check::{check_worktree, WorktreeReport};
use noma_provenance::signers::SIGNERS_WARNING;
use noma_provenance::verify::codes;
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
pub fn problems_if_asked(doc: &Path) -> Vec<noma_provenance::verify::Problem> {
    let dir = doc
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let root = crate::git::blob::worktree_root(dir).unwrap_or_else(|| dir.to_path_buf());
    let asks =
        noma_provenance::config::Policy::load(&root).is_ok_and(|p| !p.file.provenance.is_off());
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
    let mut out = format!("signatures (trusting {}):\n", r.trust);
    for s in &r.records {
        out.push_str(&format!("  line {} {}: ", s.line, s.op_id));
        // "unsigned" only for a record with no signature at all: one whose
        // signature does not count says so, and its problem says why.
        let unsigned = s.problems.iter().any(|p| p.code == codes::UNSIGNED);
        match &s.signed_by {
            Some(p) => out.push_str(&format!("signed by {p}")),
            None if unsigned => out.push_str("unsigned"),
            None if s.problems.is_empty() => out.push_str("signature not checked"),
            None => out.push_str("signature not accepted"),
        }
        match (&s.approved_by, s.needs_approval) {
            (Some(a), _) => out.push_str(&format!(", approved by {a}\n")),
            (None, true) => out.push_str(", not approved\n"),
            (None, false) => out.push('\n'),
        }
        for p in &s.problems {
            out.push_str(&format!(
                "    {} [{}] line {}: {}\n",
                p.level.to_uppercase(),
                p.code,
                p.line,
                p.message
            ));
        }
    }
    for w in &r.warnings {
        out.push_str(&format!("  WARNING [{SIGNERS_WARNING}] {w}\n"));
    }
    if let Some(p) = &r.sidecar {
        out.push_str(&format!(
            "  ERROR [{}] sidecar line {}: {}\n",
            p.code, p.line, p.message
        ));
    }
    out
}

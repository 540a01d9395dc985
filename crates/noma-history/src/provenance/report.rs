//! The signature report of a document's work-tree transcript, computed
//! for `noma replay --signatures` and `noma approve` (the binary words it).

use std::path::Path;

use super::check::{check_worktree, WorktreeReport};
use noma_store::engine::default_transcript_path;

/// The statuses of every record of `doc`'s transcript (`transcript`, or
/// the document path plus `.patches`), trusting the work tree's policy
/// and allowed signers.
pub(crate) fn for_doc(
    doc: &Path,
    transcript: Option<&Path>,
) -> Result<WorktreeReport, super::Error> {
    let tpath = transcript
        .map(Path::to_path_buf)
        .unwrap_or_else(|| default_transcript_path(doc));
    // Verification holds the transcript; like replay, it has no size cap.
    let mut bytes = Vec::new();
    noma_store::fsio::open_lines(&tpath)
        .and_then(|mut f| std::io::Read::read_to_end(&mut f, &mut bytes))
        .map_err(super::Error::io(&tpath))?;
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

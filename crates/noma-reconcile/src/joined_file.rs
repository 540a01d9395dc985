//! `noma repair`'s file part of making a joined transcript linear
//! ([`noma_merge::joined`] does it over bytes): the transcript read and
//! rewritten under its lock, the bytes as they were kept beside it, and the
//! document versions its records start from looked up in the path's
//! history.

use std::path::{Path, PathBuf};

use serde::Serialize;

use noma_core::doc::hash::{sha256_hex, EMPTY_SHA256};
use noma_merge::joined::{advice, find_join, unjoin};
use noma_merge::transcript::Unreconcilable;
use noma_store::fsio::{self, LockedTranscript};

use crate::git::repo::Repo;

/// [`unjoin_file_with`] with the document's versions found in the history
/// of the repository holding `doc` (none outside one).
pub fn unjoin_file(doc: &Path, tpath: &Path) -> Result<Option<Unjoined>, UnjoinError> {
    let dir = doc.parent().filter(|p| !p.as_os_str().is_empty());
    let repo = Repo::discover(dir.unwrap_or(Path::new("."))).ok();
    let rel = repo.as_ref().and_then(|r| r.relative_path(doc));
    let path = rel.as_deref().unwrap_or_default();
    let mut history = |sha: &str| {
        let r = repo.as_ref()?;
        String::from_utf8(super::find_version(r, path, sha)?).ok()
    };
    unjoin_file_with(doc, tpath, &mut history)
}

/// [`advice`] for the transcript file `tpath` of the document `doc`, when
/// it is joined: the one fix to name wherever a joined transcript stops a
/// command (a patch refused as an unrecorded edit, a record, a replay).
pub fn advice_for_file(doc: &str, tpath: &Path) -> Option<String> {
    let bytes = fsio::read_regular(tpath).ok()?;
    find_join(&bytes).map(|j| advice(doc, j))
}

/// What [`unjoin_file`] did.
#[derive(Debug, Clone, Serialize)]
pub struct Unjoined {
    /// 1-based line where the second branch's records started.
    pub second_line: usize,
    /// Records of the second branch rebased onto the first's.
    pub rebased: usize,
    /// The second branch's ops that clash with the first's, left out.
    pub conflicts: Vec<String>,
    /// Where the transcript as it was is kept.
    pub kept_at: String,
    /// The document is the state the linear transcript ends at; when not,
    /// `noma record` records the difference (a hand resolution).
    pub document_matches: bool,
    /// Human-readable lines describing the repair.
    pub messages: Vec<String>,
    /// What is left to do, when anything is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_step: Option<String>,
}

/// Why [`unjoin_file`] failed.
#[derive(Debug, thiserror::Error)]
pub enum UnjoinError {
    /// Reading or writing a file.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// What failed.
        source: std::io::Error,
    },
    /// The document is unreadable.
    #[error(transparent)]
    Source(#[from] noma_core::doc::source::SourceError),
    /// The two branches' records cannot be put in one line.
    #[error("{tpath}: its records from line {line} on were joined after another branch's, and they cannot be rebased onto them: {reason}")]
    Unreconcilable {
        /// The transcript.
        tpath: String,
        /// Where the second branch's records start.
        line: usize,
        /// Why.
        reason: Unreconcilable,
    },
}

/// Where [`unjoin_file`] keeps the transcript as it was.
pub fn kept_path(tpath: &Path) -> PathBuf {
    let mut p = tpath.as_os_str().to_owned();
    p.push(".joined");
    PathBuf::from(p)
}

/// Makes the joined transcript `tpath` of `doc` linear in place (see
/// [`noma_merge::joined`]), under the transcript's lock. None when it is
/// not joined. The document versions the records start from are the empty
/// document, `doc` as it is, else what `history` finds by sha256
/// ([`unjoin_file`] looks in the repository's history).
///
/// The transcript is never renamed (writers lock its inode), so it is cut
/// back to the first branch's records and the rebased ones are appended;
/// the bytes as they were are saved to [`kept_path`] first. A run killed
/// between the two leaves a prefix of the result, which the next run
/// finishes from the kept copy.
fn unjoin_file_with(
    doc: &Path,
    tpath: &Path,
    history: &mut dyn FnMut(&str) -> Option<String>,
) -> Result<Option<Unjoined>, UnjoinError> {
    let io = |path: &Path| {
        let path = path.display().to_string();
        move |source| UnjoinError::Io { path, source }
    };
    let text = fsio::read_document(doc)?;
    let mut locked = LockedTranscript::open(tpath).map_err(io(tpath))?;
    let now = locked.read_all().map_err(io(tpath))?;
    let kept = kept_path(tpath);
    let (source, join, resumed) = match find_join(&now) {
        Some(join) => (now.clone(), join, false),
        None => match fsio::read_regular(&kept).ok().and_then(|k| {
            let join = find_join(&k)?;
            now.starts_with(&k[..join.second]).then_some((k, join))
        }) {
            Some((k, join)) => (k, join, true),
            None => return Ok(None),
        },
    };
    let text_sha256 = sha256_hex(text.as_bytes());
    let mut find = |sha: &str| match sha {
        // A genesis record's state: the empty document.
        EMPTY_SHA256 => Some(String::new()),
        _ if sha == text_sha256 => Some(text.clone()),
        _ => history(sha),
    };
    let shown = tpath.display().to_string();
    let r = unjoin(&source, join, Some(&text), &mut find).map_err(|reason| {
        UnjoinError::Unreconcilable {
            tpath: shown.clone(),
            line: join.second_line,
            reason,
        }
    })?;
    if resumed && (now == r.transcript || !r.transcript.starts_with(&now)) {
        // Finished, or grown since: not ours to touch.
        return Ok(None);
    }
    if !resumed {
        fsio::atomic_write(&kept, &source).map_err(io(&kept))?;
    }
    locked.truncate(join.second as u64).map_err(io(tpath))?;
    locked
        .append(&r.transcript[join.second..])
        .map_err(io(tpath))?;
    let conflicts: Vec<String> = r.conflicts.iter().map(|c| c.describe()).collect();
    let kept_at = kept.display().to_string();
    let mut messages = vec![format!(
        "{shown}: the records from line {} on were another branch's, joined after this one's (a merge without noma's merge driver kept both sides); {} of them rebased onto this branch's records, as the merge driver does; the transcript as it was is kept in {kept_at}",
        join.second_line,
        r.rebased.len(),
    )];
    messages.extend(
        conflicts
            .iter()
            .map(|c| format!("left out, as the merge driver would: conflict: {c}")),
    );
    let document_matches = r.doc == text;
    let next_step = (!document_matches).then(|| {
        format!(
            "the document is not the state the transcript now ends at (a conflict resolved by hand, or lines git merged differently): record it with `noma record {}`",
            noma_core::diag::shell_word(&doc.to_string_lossy())
        )
    });
    Ok(Some(Unjoined {
        second_line: join.second_line,
        rebased: r.rebased.len(),
        conflicts,
        kept_at,
        document_matches,
        messages,
        next_step,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use noma_merge::test_support::{body, extend, find, BASE};

    /// `P` (one record), then `X` and `Y` from the state `P` ends at.
    fn joined() -> (Vec<u8>, Vec<u8>) {
        let (d1, p) = extend(BASE, b"", &[body("a", "A1")]);
        let (_, px) = extend(&d1, &p, &[body("a", "A2"), body("a", "A3")]);
        let (_, py) = extend(&d1, &p, &[body("b", "B1")]);
        let mut t = px.clone();
        t.extend_from_slice(&py[p.len()..]);
        (t, px)
    }

    /// `noma repair`'s file level: made linear in place, and a run killed
    /// after the cut or inside the append is finished by the next one.
    #[test]
    fn unjoin_file_finishes_what_a_killed_run_left() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let (doc, tpath) = (d.join("plan.noma"), d.join("plan.noma.patches"));
        let (t, px) = joined();
        let join = find_join(&t).unwrap();
        let want = unjoin(&t, join, None, &mut find).unwrap();
        std::fs::write(&doc, &want.doc).unwrap();
        std::fs::write(&tpath, &t).unwrap();

        let u = unjoin_file_with(&doc, &tpath, &mut find)
            .unwrap()
            .expect("joined");
        assert!(u.document_matches && u.next_step.is_none(), "{u:?}");
        assert_eq!(u.rebased, 1);
        assert_eq!(std::fs::read(&tpath).unwrap(), want.transcript);
        assert_eq!(std::fs::read(kept_path(&tpath)).unwrap(), t);
        assert!(
            unjoin_file_with(&doc, &tpath, &mut find).unwrap().is_none(),
            "done"
        );

        // Killed after the cut, and inside the append.
        for cut in [px.len(), px.len() + 10] {
            std::fs::write(&tpath, &want.transcript[..cut]).unwrap();
            assert!(
                unjoin_file_with(&doc, &tpath, &mut find).unwrap().is_some(),
                "{cut}"
            );
            assert_eq!(std::fs::read(&tpath).unwrap(), want.transcript, "{cut}");
        }
        // Grown since: not touched again.
        let (_, grown) = extend(&want.doc, &want.transcript, &[body("b", "B2")]);
        std::fs::write(&tpath, &grown).unwrap();
        assert!(unjoin_file_with(&doc, &tpath, &mut find).unwrap().is_none());
        assert_eq!(std::fs::read(&tpath).unwrap(), grown);
    }
}

//! Resolving a transcript (and its document and provenance sidecar) that a
//! merge without noma's merge driver left with git's conflict markers: a
//! clone where the driver was never registered (git does not clone
//! `.git/config`). `noma repair` runs the driver's own algorithm on the
//! versions git kept: the index stages of the unmerged transcript (1 base,
//! 2 ours, 3 theirs), or, once the path is no longer unmerged, the two
//! sides the markers delimit (text outside the markers belongs to both).
//! The document is written as the driver writes it: the reconciled state,
//! or merged blocks with a `::conflict` block. The sidecar, a set of
//! independent lines, becomes the union of both sides' lines.

use std::path::Path;

use serde::Serialize;

use super::{FileMerge, RepairError, Versions};
use crate::git::repo::Repo;
use noma_merge::blocks::Labels;
use noma_store::fsio::{self, LockedTranscript};

const MARKERS: [&[u8]; 4] = [b"<<<<<<<", b"|||||||", b"=======", b">>>>>>>"];

/// Which marker line `line` is: 0 start, 1 base (diff3), 2 separator,
/// 3 end; None for any other line.
fn marker(line: &[u8]) -> Option<usize> {
    MARKERS.iter().position(|m| {
        line.starts_with(m) && matches!(line.get(m.len()), None | Some(b' ' | b'\n' | b'\r'))
    })
}

/// Whether `bytes` holds a git conflict marker line.
pub(crate) fn has_markers(bytes: &[u8]) -> bool {
    bytes
        .split_inclusive(|b| *b == b'\n')
        .any(|l| marker(l) == Some(0))
}

/// The sides git's markers delimit in `bytes` (the base when diff3 gave
/// one). None when the markers are not well nested.
pub(crate) fn split_markers(bytes: &[u8]) -> Option<Versions> {
    let (mut base, mut ours, mut theirs) = (Vec::new(), Vec::new(), Vec::new());
    let (mut state, mut saw_base) = (None::<usize>, false);
    for line in bytes.split_inclusive(|b| *b == b'\n') {
        match (state, marker(line)) {
            (None, Some(0)) => state = Some(0),
            (Some(0), Some(1)) => (state, saw_base) = (Some(1), true),
            (Some(0 | 1), Some(2)) => state = Some(2),
            (Some(2), Some(3)) => state = None,
            (_, Some(_)) => return None,
            (None, None) => [&mut base, &mut ours, &mut theirs]
                .into_iter()
                .for_each(|v| v.extend_from_slice(line)),
            (Some(0), None) => ours.extend_from_slice(line),
            (Some(1), None) => base.extend_from_slice(line),
            (Some(_), None) => theirs.extend_from_slice(line),
        }
    }
    state.is_none().then(|| Versions {
        base: saw_base.then_some(base),
        ours: Some(ours),
        theirs: Some(theirs),
    })
}

/// The union of the sides of a conflicted sidecar: every line once, ours
/// first, in order.
pub(crate) fn union_lines(bytes: &[u8]) -> Option<Vec<u8>> {
    let sides = split_markers(bytes)?;
    let (ours, theirs) = (
        sides.ours.unwrap_or_default(),
        sides.theirs.unwrap_or_default(),
    );
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for line in ours
        .split_inclusive(|b| *b == b'\n')
        .chain(theirs.split_inclusive(|b| *b == b'\n'))
    {
        let line: Vec<u8> = if line.ends_with(b"\n") {
            line.to_vec()
        } else {
            [line, b"\n"].concat()
        };
        if seen.insert(line.clone()) {
            out.extend_from_slice(&line);
        }
    }
    Some(out)
}

/// What [`resolve_file`] did.
#[derive(Debug, Clone, Serialize)]
pub struct Resolved {
    /// Where the versions came from: `index stages` or `conflict markers`.
    pub source: &'static str,
    /// The document merged without conflicts (else it holds `::conflict`
    /// blocks to resolve, then `noma record`).
    pub clean: bool,
    /// The sidecar's conflict markers were resolved too.
    pub sidecar: bool,
    /// Human-readable lines describing the repair.
    pub messages: Vec<String>,
    /// What is left to do.
    pub next_step: String,
}

/// Resolves the transcript `tpath` of `doc` when it holds git's conflict
/// markers (see the module docs); None when it holds none. The transcript
/// as it was is kept at `<transcript>.conflicted`.
pub fn resolve_file(doc: &Path, tpath: &Path) -> Result<Option<Resolved>, RepairError> {
    let mut locked = LockedTranscript::open(tpath).map_err(io(tpath))?;
    let now = locked.read_all().map_err(io(tpath))?;
    let markers = has_markers(&now);
    let dir = doc.parent().filter(|p| !p.as_os_str().is_empty());
    let repo = Repo::discover(dir.unwrap_or(Path::new("."))).ok();
    let rel_doc = repo.as_ref().and_then(|r| r.relative_path(doc));
    let rel_t = repo.as_ref().and_then(|r| r.relative_path(tpath));
    if !markers && !kept_edit_unwritten(repo.as_ref(), rel_doc.as_deref(), rel_t.as_deref(), doc) {
        return Ok(None);
    }
    let (source, tr) = match stages(repo.as_ref(), rel_t.as_deref()) {
        Some(v) => ("index stages", v),
        None => {
            let v = split_markers(&now).ok_or_else(|| RepairError::Unnested(tpath.into()))?;
            ("conflict markers", v)
        }
    };
    let mut known: Vec<Vec<u8>> = (1..=3)
        .filter_map(|s| stage(repo.as_ref(), rel_doc.as_deref(), s))
        .collect();
    known.extend(
        repo.as_ref()
            .zip(rel_doc.as_deref())
            .and_then(|(r, d)| r.head_blob(d).ok().flatten()),
    );
    let path = rel_doc.clone().unwrap_or_else(|| doc.display().to_string());
    let mut find = super::doc_finder(repo.as_ref(), &path, known);
    let merged = super::merge_transcript(&tr, &mut find);
    if merged.method == "unreconciled" {
        return Err(RepairError::Unreconciled {
            path: tpath.display().to_string(),
            messages: merged.messages,
        });
    }
    let base_doc = stage(repo.as_ref(), rel_doc.as_deref(), 1);
    let document =
        merge_document(&tr, base_doc, &mut find).map_err(|error| RepairError::Document {
            path: tpath.display().to_string(),
            error,
        })?;
    if !markers {
        // The driver merged the transcript already (its merge is this
        // one); only the document it could not write is left.
        fsio::atomic_write(doc, &document.content).map_err(io(doc))?;
        let mut done = report(doc, tpath, source, &merged, &document, false);
        done.messages[0] = format!(
            "{}: the merged transcript keeps this side's edit over the other side's removal; {} written as it replays to",
            tpath.display(),
            doc.display()
        );
        return Ok(Some(done));
    }
    let kept = kept_path(tpath);
    fsio::atomic_write(&kept, &now).map_err(io(&kept))?;
    locked.truncate(0).map_err(io(tpath))?;
    locked.append(&merged.content).map_err(io(tpath))?;
    fsio::atomic_write(doc, &document.content).map_err(io(doc))?;
    let sidecar = resolve_sidecar(doc)?;
    Ok(Some(report(
        doc, tpath, source, &merged, &document, sidecar,
    )))
}

/// Whether the merge driver left the transcript `rel_t` unmerged after
/// keeping our edit over the other side's removal, while the document is
/// still absent or HEAD's version: the merged transcript may also apply
/// the other side's earlier records, a state no file holds yet (a
/// document someone edited since is never overwritten).
fn kept_edit_unwritten(
    repo: Option<&Repo>,
    rel_doc: Option<&str>,
    rel_t: Option<&str>,
    doc: &Path,
) -> bool {
    let Some(tr) = stages(repo, rel_t) else {
        return false;
    };
    let (Some(ours), Some(theirs)) = (tr.ours.as_deref(), tr.theirs.as_deref()) else {
        return false;
    };
    if !super::kept_over_removal(ours, theirs) {
        return false;
    }
    match std::fs::read(doc) {
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
        Ok(now) => {
            let head = repo
                .zip(rel_doc)
                .and_then(|(r, d)| r.head_blob(d).ok().flatten());
            head.as_deref() == Some(now.as_slice())
        }
    }
}

/// An I/O error on `p`, in words.
fn io(p: &Path) -> impl FnOnce(std::io::Error) -> RepairError {
    RepairError::io(p)
}

/// Where [`resolve_file`] keeps the conflicted transcript.
pub(crate) fn kept_path(tpath: &Path) -> std::path::PathBuf {
    let mut p = tpath.as_os_str().to_owned();
    p.push(".conflicted");
    p.into()
}

/// `path` at index stage `stage`, when git left it unmerged.
fn stage(repo: Option<&Repo>, path: Option<&str>, stage: i32) -> Option<Vec<u8>> {
    repo?.index_stage_blob(path?, stage).ok().flatten()
}

/// The transcript's versions from the index, while git holds it unmerged
/// (ours and theirs both present; base absent when the sides started the
/// transcript separately).
fn stages(repo: Option<&Repo>, tpath: Option<&str>) -> Option<Versions> {
    Some(Versions {
        base: stage(repo, tpath, 1),
        ours: Some(stage(repo, tpath, 2)?),
        theirs: Some(stage(repo, tpath, 3)?),
    })
}

/// The document as the driver writes it, given the documents the two
/// sides' transcripts replay to (so a side's uncommitted document needs
/// no lookup in history). The merge base's document is where the base
/// transcript ends, else `base_doc` (git's base version of the document,
/// when the two sides started their transcripts separately), as the
/// driver is given it: a block only one side changed is then no conflict.
pub(super) fn merge_document(
    tr: &Versions,
    base_doc: Option<Vec<u8>>,
    find: &mut dyn FnMut(&str) -> Option<String>,
) -> Result<FileMerge, noma_merge::transcript::Unreconcilable> {
    let (ot, tt) = (
        tr.ours.as_deref().unwrap_or_default(),
        tr.theirs.as_deref().unwrap_or_default(),
    );
    let r = noma_merge::transcript::reconcile_transcripts(ot, tt, tr.base.as_deref(), None, find)?;
    let base = tr
        .base
        .as_deref()
        .and_then(super::final_state)
        .and_then(|sha| find(&sha))
        .map(String::into_bytes)
        .or(base_doc);
    let docs = Versions {
        base,
        ours: Some(r.ours_doc.into_bytes()),
        theirs: Some(r.theirs_doc.into_bytes()),
    };
    let labels = Labels {
        ours: "HEAD".into(),
        theirs: "theirs".into(),
    };
    Ok(super::merge_document(&docs, tr, find, &labels))
}

/// Resolves the markers in `doc`'s provenance sidecar, if it has any, to
/// the union of both sides' lines (what git's `union` driver, which
/// `.gitattributes` names for it, would have written).
fn resolve_sidecar(doc: &Path) -> Result<bool, RepairError> {
    let path = noma_provenance::sidecar::sidecar_path(doc);
    let Ok(bytes) = fsio::read_regular(&path) else {
        return Ok(false);
    };
    if !has_markers(&bytes) {
        return Ok(false);
    }
    let union = union_lines(&bytes).ok_or_else(|| RepairError::Unnested(path.clone()))?;
    fsio::atomic_write(&path, &union).map_err(io(&path))?;
    Ok(true)
}

/// What was done and what is left, in words.
fn report(
    doc: &Path,
    tpath: &Path,
    source: &'static str,
    transcript: &FileMerge,
    document: &FileMerge,
    sidecar: bool,
) -> Resolved {
    let kept = kept_path(tpath);
    let mut messages = vec![format!(
        "{}: git's conflict markers resolved from the {source}: both sides' records kept, the other side's rebased onto ours as the merge driver does; the conflicted file is kept in {}",
        tpath.display(),
        kept.display()
    )];
    messages.extend(
        transcript
            .messages
            .iter()
            .map(|m| format!("{}: {m}", tpath.display())),
    );
    messages.extend(
        document
            .messages
            .iter()
            .map(|m| format!("{}: {m}", doc.display())),
    );
    if sidecar {
        let path = noma_provenance::sidecar::sidecar_path(doc);
        messages.push(format!(
            "{}: conflict markers resolved to the union of both sides' lines",
            path.display()
        ));
    }
    let sh = |p: &Path| noma_core::diag::shell_word(&p.to_string_lossy());
    let mut add = format!("git add {} {}", sh(doc), sh(tpath));
    if sidecar {
        add.push(' ');
        add.push_str(&sh(&noma_provenance::sidecar::sidecar_path(doc)));
    }
    let clean = transcript.clean && document.clean;
    let next_step = if clean {
        format!("{add}, then commit")
    } else {
        format!(
            "resolve the ::conflict blocks in {doc}, then `noma record {doc}` and {add}",
            doc = sh(doc)
        )
    };
    Resolved {
        source,
        clean,
        sidecar,
        messages,
        next_step,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_split_into_sides_with_diff3_base() {
        let t = b"p\n<<<<<<< HEAD\no\n||||||| base\nb\n=======\nt\n>>>>>>> A\ns\n";
        assert!(has_markers(t));
        let v = split_markers(t).unwrap();
        assert_eq!(v.base.as_deref(), Some(&b"p\nb\ns\n"[..]));
        assert_eq!(v.ours.as_deref(), Some(&b"p\no\ns\n"[..]));
        assert_eq!(v.theirs.as_deref(), Some(&b"p\nt\ns\n"[..]));
        // Without diff3 there is no base; records are never markers.
        let v = split_markers(b"<<<<<<< a\no\n=======\n>>>>>>> b\n").unwrap();
        assert_eq!(v.base, None);
        assert!(!has_markers(b"{\"a\":\"<<<<<<< x\"}\n<<<<<<<<x\n"));
        // Badly nested markers are left to a person.
        assert!(split_markers(b"<<<<<<< a\no\n>>>>>>> b\n").is_none());
        assert!(split_markers(b"<<<<<<< a\no\n=======\n").is_none());
        assert_eq!(
            union_lines(b"x\n<<<<<<< a\ny\n=======\nz\nx\n>>>>>>> b\n").unwrap(),
            b"x\ny\nz\n"
        );
    }
}

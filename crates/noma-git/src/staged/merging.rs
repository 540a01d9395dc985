//! The transcript check during a merge: the staged transcript may extend
//! either parent, succeed both ([`noma_merge::lineage`]), or show a
//! fork, which is reported and never merged silently.

use super::findings::fork_finding;
use super::{Finding, Guard};
use crate::git::repo::GitError;
use crate::git::Oid;
use noma_core::diag::shell_word;
use noma_core::transcript::transcript_path;
use noma_provenance::sidecar::sidecar_rel;

/// A transcript and the document it replays to, either possibly absent.
pub(super) type Version = (Option<Vec<u8>>, Option<String>);

/// What the merge rules make of a staged transcript.
pub(super) enum Merged {
    /// Its new records are checked against this parent's version.
    Extends(Version),
    /// Decided without that check: accepted (None) or this finding.
    Settled(Option<Finding>),
}

/// The merged side's transcript and document, and the merge base's
/// transcript (empty when there is none).
struct Theirs {
    transcript: Option<Vec<u8>>,
    doc: Option<String>,
    base: Vec<u8>,
    /// The document was moved on one side (found under another name on
    /// the other), and a parent has a provenance sidecar to merge too.
    moved: Option<Move>,
}

/// A move of the merged document: whether a parent has a sidecar, and
/// its old path.
struct Move {
    sidecar: bool,
    old: String,
}

/// Which parent's version the staged transcript (`paths` = [document,
/// its path at HEAD, transcript]) extends during the merge of `theirs`
/// into `head`, starting with ours (`ours`): linear on ours, else on
/// theirs; a successor of both or a fork is settled here.
pub(super) fn merge_reference(
    g: &Guard<'_>,
    (head, theirs): (Oid, Oid),
    paths: [&str; 3],
    ours: Version,
    staged_t: &[u8],
    staged_doc: &str,
) -> Result<Merged, GitError> {
    let [path, _, tpath] = paths;
    let other = their_side(g, head, theirs, paths)?;
    let extends = |t: &Option<Vec<u8>>| {
        t.as_ref()
            .is_some_and(|t| t.len() > other.base.len() && t.starts_with(&other.base))
    };
    let forked = extends(&ours.0) && extends(&other.transcript);
    if let Some(m) = other.moved.as_ref().filter(|_| forked) {
        // A moved document's transcripts git did not pair: keeping one
        // side's (and recording the merged document on top) would
        // replay, but drop the other side's records, their actors and
        // signatures with them.
        let parents = [&ours.0, &other.transcript];
        if !succeeds_both(g, path, parents, staged_t, staged_doc) {
            let f = fork([path, tpath], &other.base, parents, staged_t);
            let fix = repair_fix(g, path, &m.old, m.sidecar);
            return Ok(Merged::Settled(Some(moved_fork(f, fix))));
        }
    }
    if let Some(m) = other.moved.as_ref().filter(|_| !forked) {
        // The same when our transcript succeeds the base's without
        // extending its bytes (an earlier merge rebased the base's
        // records after ours as copies): git staged one side's file.
        if let Some(f) = moved_apart(
            g,
            [path, tpath],
            &other.base,
            [&ours.0, &other.transcript],
            staged_t,
            staged_doc,
        ) {
            let fix = repair_fix(g, path, &m.old, m.sidecar);
            return Ok(Merged::Settled(Some(f.fix(fix))));
        }
    }
    if linear_on(g, paths, &ours, staged_t, staged_doc)? {
        return Ok(Merged::Extends(ours));
    }
    let theirs_version = (other.transcript, other.doc);
    if linear_on(g, paths, &theirs_version, staged_t, staged_doc)? {
        return Ok(Merged::Extends(theirs_version));
    }
    let parents = [&ours.0, &theirs_version.0];
    if succeeds_both(g, path, parents, staged_t, staged_doc) {
        // Not an append to either parent, but every op of both kept
        // once and the whole replays (e.g. a merge resolved with `noma
        // reconcile`): see noma_merge::lineage.
        return Ok(Merged::Settled(None));
    }
    if !forked {
        return Ok(Merged::Extends(ours));
    }
    let f = fork([path, tpath], &other.base, parents, staged_t);
    Ok(Merged::Settled(Some(f)))
}

/// When both parents changed the moved document's transcript since the
/// merge base (`base`), neither holding the other's, and the staged one
/// does not keep both sides' records: the finding whose fix is `noma
/// repair` (added by the caller). None otherwise.
fn moved_apart(
    g: &Guard<'_>,
    [path, tpath]: [&str; 2],
    base: &[u8],
    parents: [&Option<Vec<u8>>; 2],
    staged_t: &[u8],
    staged_doc: &str,
) -> Option<Finding> {
    let [Some(ours), Some(theirs)] = parents else {
        return None;
    };
    if [ours, theirs].iter().any(|t| t.as_slice() == base)
        || ours.starts_with(theirs)
        || theirs.starts_with(ours)
        || succeeds_both(g, path, parents, staged_t, staged_doc)
    {
        return None;
    }
    Some(Finding::error(
        "transcript-fork",
        tpath,
        None,
        "both parents added records to this transcript since the merge base, and the document was moved on one side: git did not pair the transcripts, so the staged one drops a side's records".to_string(),
    ))
}

/// During a cherry-pick, or a commit made while a rebase is stopped (no
/// merge commit: the picked commit's parent is the base), the fork
/// finding naming `noma repair` when one side moved the document
/// (`paths` = [document, its path at HEAD, transcript]), both sides
/// added records, git did not pair the transcripts, and the staged one
/// drops a side's records. None otherwise.
pub(super) fn picked_move(
    g: &Guard<'_>,
    [path, _, tpath]: [&str; 3],
    staged_t: &[u8],
    staged_doc: &str,
) -> Option<Finding> {
    let head = g.head?;
    let (other, base) = crate::merge::moved::operation_commits(g.repo, head)?;
    let old = crate::merge::moved::moved_from(g.repo, base, &[head, other], path)?;
    let names = [path, old.as_str()];
    let at = |c: Oid, file: fn(&str) -> String| {
        names
            .iter()
            .find_map(|p| g.repo.blob_at(c, &file(p)).ok().flatten())
    };
    let base_t = g.repo.blob_at(base, &transcript_path(&old)).ok().flatten();
    let base_t = base_t.unwrap_or_default();
    let extends = |t: &Option<Vec<u8>>| {
        t.as_ref()
            .is_some_and(|t| t.len() > base_t.len() && t.starts_with(&base_t))
    };
    let (ours, theirs) = (at(head, transcript_path), at(other, transcript_path));
    if !(extends(&ours) && extends(&theirs)) {
        return None;
    }
    let parents = [&ours, &theirs];
    if succeeds_both(g, path, parents, staged_t, staged_doc) {
        return None;
    }
    let sidecar = [head, other].iter().any(|c| at(*c, sidecar_rel).is_some());
    let mut f = fork([path, tpath], &base_t, parents, staged_t);
    // No merge commit: the other parent is the commit being picked.
    f.message = f.message.replace("MERGE_HEAD has", "the picked commit has");
    Some(moved_fork(f, repair_fix(g, path, &old, sidecar)))
}

/// The merged side's files and the merge base's transcript. A side or
/// the merge base may hold the files under the name HEAD has (the
/// other side moved them): the staged path first, then HEAD's.
fn their_side(
    g: &Guard<'_>,
    head: Oid,
    theirs: Oid,
    [path, head_path, tpath]: [&str; 3],
) -> Result<Theirs, GitError> {
    let head_tpath = transcript_path(head_path);
    let at = |commit: Oid, p: &str, old: &str| -> Result<Option<Vec<u8>>, GitError> {
        match g.repo.blob_at(commit, p)? {
            Some(b) => Ok(Some(b)),
            None => g.repo.blob_at(commit, old),
        }
    };
    let mut transcript = at(theirs, tpath, &head_tpath)?;
    let mut doc = at(theirs, path, head_path)?;
    let merge_base = g.repo.merge_base(head, theirs);
    let mut base = match merge_base {
        Some(b) => at(b, tpath, &head_tpath)?,
        None => None,
    };
    let mut moved = (path != head_path).then_some(());
    // Ours moved it and theirs patched it under the merge base's name,
    // where git did not pair the transcripts.
    let old = merge_base.filter(|_| transcript.is_none()).and_then(|mb| {
        crate::merge::moved::moved_from(g.repo, mb, &[head], head_path).map(|o| (mb, o))
    });
    if let Some((mb, old)) = &old {
        transcript = g.repo.blob_at(theirs, &transcript_path(old))?;
        doc = g.repo.blob_at(theirs, old)?;
        base = g.repo.blob_at(*mb, &transcript_path(old))?;
        moved = Some(());
    }
    let has_sidecar = |c: Oid, p: &str| {
        g.repo
            .blob_id_at(c, &sidecar_rel(p))
            .ok()
            .flatten()
            .is_some()
    };
    let names = [path, head_path];
    let old_name = old
        .as_ref()
        .map_or(head_path, |(_, o)| o.as_str())
        .to_string();
    let moved = moved.map(|_| Move {
        old: old_name,
        sidecar: names
            .iter()
            .any(|p| has_sidecar(head, p) || has_sidecar(theirs, p))
            || old.as_ref().is_some_and(|(_, o)| has_sidecar(theirs, o)),
    });
    Ok(Theirs {
        transcript,
        doc: doc.and_then(|b| String::from_utf8(b).ok()),
        base: base.unwrap_or_default(),
        moved,
    })
}

/// Linear on top of one parent: that parent's transcript is a prefix
/// of the staged one and the rest replays from that parent's document.
fn linear_on(
    g: &Guard<'_>,
    paths: [&str; 3],
    (t, d): &Version,
    staged_t: &[u8],
    staged_doc: &str,
) -> Result<bool, GitError> {
    let Some(t) = t else { return Ok(false) };
    if !staged_t.starts_with(t) {
        return Ok(false);
    }
    Ok(
        super::replay::verify_tail(g, paths, Some(t), d.as_deref(), staged_t, staged_doc)?
            .iter()
            .all(|f| !f.blocking),
    )
}

/// Whether the staged transcript is a successor of both parents'
/// transcripts under [`noma_merge::lineage`] (the one rule the
/// merge driver and `noma reconcile` use too).
fn succeeds_both(
    g: &Guard<'_>,
    path: &str,
    parents: [&Option<Vec<u8>>; 2],
    staged_t: &[u8],
    staged_doc: &str,
) -> bool {
    let mut find = crate::merge::doc_finder(Some(g.repo), path, Vec::new());
    parents.iter().all(|p| {
        noma_merge::lineage::check(
            p.as_deref().unwrap_or_default(),
            staged_t,
            staged_doc,
            &mut find,
        )
        .is_ok()
    })
}

/// The fork finding for the parents' transcripts (`[ours, theirs]`) that
/// both extend `base`. When one side's transcript is staged already (a
/// moved transcript git did not pair, resolved by keeping one side),
/// recording the merged document on top of it is the whole fix.
fn fork(
    [path, tpath]: [&str; 2],
    base: &[u8],
    parents: [&Option<Vec<u8>>; 2],
    staged_t: &[u8],
) -> Finding {
    let [ours, theirs] = parents;
    let f = fork_finding(
        tpath,
        base,
        ours.as_deref().unwrap_or_default(),
        theirs.as_deref().unwrap_or_default(),
    );
    if !parents
        .iter()
        .any(|t| t.as_deref().is_some_and(|t| copies_after(t, staged_t)))
    {
        return f;
    }
    f.fix(format!(
        "noma record {path_sh} && git add {path_sh} {tpath_sh}",
        path_sh = shell_word(path),
        tpath_sh = shell_word(tpath)
    ))
}

/// Whether `staged_t` is `parent` followed only by merge copies (none
/// included): what the driver writes for a conflicted merge, the other
/// side's ops re-applied or, where they conflicted, kept as rejected
/// copies. Recording the resolved document on top is then the fix.
fn copies_after(parent: &[u8], staged_t: &[u8]) -> bool {
    let Some(rest) = staged_t.strip_prefix(parent) else {
        return false;
    };
    let (lines, torn) = noma_core::transcript::split_lines(rest);
    torn.is_none()
        && lines.iter().all(|l| {
            noma_core::transcript::parse_record(l.number, l.raw)
                .is_ok_and(|r| noma_merge::lineage::is_copy(&r))
        })
}

/// The fork finding `f` of a moved document's transcripts, with its fix:
/// `noma repair` merges both sides' records at the new path as the driver
/// would (see [`crate::merge::moved`]), keeping the other side's actors
/// and signatures, which recording the merged document would not.
fn moved_fork(mut f: Finding, fix: String) -> Finding {
    f.message.push_str(
        "; the document was moved on one side and git did not pair its transcripts, so the staged one drops a side's records",
    );
    f.fix(fix)
}

/// The command of [`moved_fork`]'s fix: `noma repair` and the `git add`
/// of the new path's files and of the old path's (`old`) that the index
/// still holds, whose removal `noma repair` leaves to stage (what its own
/// `next:` line names; else the old transcript stays committed, an
/// orphan).
pub(super) fn repair_fix(g: &Guard<'_>, path: &str, old: &str, sidecar: bool) -> String {
    let sh = |p: &str| shell_word(p);
    let mut paths = vec![path.to_string(), transcript_path(path)];
    if sidecar {
        paths.push(sidecar_rel(path));
    }
    let indexed = |p: &str| (0..=3).any(|s| g.repo.index_stage_blob(p, s).ok().flatten().is_some());
    let mut old_files = Vec::new();
    if old != path {
        let files = [transcript_path(old), sidecar_rel(old)];
        old_files.extend(files.into_iter().filter(|p| indexed(p)));
    }
    let add: Vec<String> = paths.iter().map(|p| sh(p)).collect();
    let fix = format!(
        "noma repair {} && git add -A -- {}",
        sh(path),
        add.join(" ")
    );
    if old_files.is_empty() {
        return fix;
    }
    // Unstaged by `git rm --cached --ignore-unmatch`, which still works
    // when another finding's fix removed them first (a `git add` of a
    // path gone from the index and the work tree fails).
    let old: Vec<String> = old_files.iter().map(|p| sh(p)).collect();
    format!(
        "{fix} && git rm -q --cached --ignore-unmatch -- {}",
        old.join(" ")
    )
}

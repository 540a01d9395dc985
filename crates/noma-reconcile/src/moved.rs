//! A document one side of a merge, rebase or cherry-pick moved with its
//! transcript while the other side patched it under the old name, when git
//! did not pair the moved transcript (a short history stays less than 50%
//! alike after the move and a new record): git stops on a modify/delete
//! conflict of the old transcript (and of the sidecar), and once the old
//! path is `git rm`ed the other side's records are simply gone. `noma
//! repair NEW` runs the driver's algorithm on the versions the operation's
//! commits hold: the merge base's transcript at the old path, HEAD's and
//! the other commit's (each at the new path when it has one, else at the
//! old). The merged transcript keeps HEAD's as a byte prefix and the other
//! side's records as merge copies (their actors kept; their signatures,
//! which the sidecar carries, verify for the copies), exactly what the
//! driver writes when git pairs the files; the document and the sidecar
//! (the union of both sides' lines) are written at the new path and the
//! old path's files leave the work tree.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{RepairError, Versions};
use crate::git::repo::Repo;
use crate::git::Oid;
use noma_core::transcript::transcript_path;
use noma_provenance::sidecar::sidecar_rel;
use noma_store::fsio::{self, LockedTranscript};

/// What [`resolve_moved`] did.
#[derive(Debug, Clone, Serialize)]
pub struct MovedMerge {
    /// The document's path at the merge base (the other side's name).
    pub moved_from: String,
    /// The document merged without conflicts (else it holds `::conflict`
    /// blocks to resolve, then `noma record`).
    pub clean: bool,
    /// A provenance sidecar was written at the new path.
    pub sidecar: bool,
    /// Human-readable lines describing the repair.
    pub messages: Vec<String>,
    /// The paths to stage (`git add -A --`): the new path's files and the
    /// old path's that the index still holds.
    pub stage: Vec<String>,
    /// What is left to do.
    pub next_step: String,
}

/// The commits of the operation in progress: the other side and the base.
/// A merge's base is the merge base; a rebase's or cherry-pick's is the
/// picked commit's parent (what git merges against).
pub fn operation_commits(repo: &Repo, head: Oid) -> Option<(Oid, Oid)> {
    if let Some(other) = repo.merge_head() {
        return Some((other, repo.merge_base(head, other)?));
    }
    ["CHERRY_PICK_HEAD", "REBASE_HEAD"].iter().find_map(|r| {
        // Git leaves REBASE_HEAD behind when a rebase ends.
        if *r == "REBASE_HEAD" && !rebasing(repo) {
            return None;
        }
        let other = repo.resolve(r).ok()?;
        Some((other, repo.first_parent(other)?))
    })
}

/// Whether a rebase is in progress (its state directory exists).
fn rebasing(repo: &Repo) -> bool {
    let dir = repo.git_dir();
    ["rebase-merge", "rebase-apply"]
        .iter()
        .any(|d| dir.join(d).is_dir())
}

/// The commits of a rebase or cherry-pick whose merge is still running
/// (git writes `CHERRY_PICK_HEAD` and `REBASE_HEAD` only once it stops):
/// the picked commit named at the start of git's label for their side
/// (`%Y`, "1a2b3c4 (subject)"), and its parent as the base.
fn picked_by_label(repo: &Repo, theirs_label: &str) -> Option<(Oid, Oid)> {
    let word = theirs_label.split_whitespace().next()?;
    if word.len() < 4 || !word.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let other = repo.resolve(word).ok()?;
    Some((other, repo.first_parent(other)?))
}

/// While the merge driver runs: HEAD, the other side's commit and the
/// operation's base. A rebase or cherry-pick names the picked commit in
/// git's label for their side; a merge writes `MERGE_HEAD` only after its
/// drivers ran, but labels their side with the name it was given
/// (`origin/main`), which resolves.
pub(crate) fn driver_commits(repo: &Repo, theirs_label: Option<&str>) -> Option<[Oid; 3]> {
    let head = repo.head_commit()?;
    let (other, base) = operation_commits(repo, head)
        .or_else(|| theirs_label.and_then(|l| picked_by_label(repo, l)))
        .or_else(|| {
            let other = repo
                .resolve(theirs_label?.split_whitespace().next()?)
                .ok()?;
            Some((other, repo.merge_base(head, other)?))
        })?;
    Some([head, other, base])
}

/// The path `rel` had at `base` when one side of the operation moved it
/// there (git's rename detection between `base` and that side); None when
/// `base` holds `rel` itself or neither side moved a document to it.
pub fn moved_from(repo: &Repo, base: Oid, sides: &[Oid], rel: &str) -> Option<String> {
    if repo.blob_id_at(base, rel).ok().flatten().is_some() {
        return None;
    }
    sides.iter().find_map(|side| {
        let moved = repo.moved_documents(base, *side).ok()?;
        moved.get(rel).cloned()
    })
}

/// The name HEAD moved the merge base's `old` to, while HEAD lacks `old`
/// itself (the driver is handed a transcript under the base's name when
/// both sides moved it apart); None otherwise.
pub(crate) fn our_new_name(repo: &Repo, theirs_label: Option<&str>, old: &str) -> Option<String> {
    let [head, _, base] = driver_commits(repo, theirs_label)?;
    if repo.blob_at(head, old).ok().flatten().is_some() {
        return None;
    }
    let moved = repo.moved_documents(base, head).ok()?;
    let (ours, _) = moved.iter().find(|(_, o)| o.as_str() == old)?;
    Some(ours.clone())
}

/// The other name of a document both sides of the operation moved apart
/// (git's rename/rename conflict): `rel` is one side's new name for `old`,
/// and the result is the name the other side gave it. None when only one
/// side moved it, or both to `rel`.
fn twin_name(repo: &Repo, base: Oid, sides: [Oid; 2], rel: &str, old: &str) -> Option<String> {
    let moves: Vec<_> = sides
        .iter()
        .filter_map(|side| repo.moved_documents(base, *side).ok())
        .collect();
    let [a, b] = &moves[..] else { return None };
    let named = |m: &std::collections::HashMap<String, String>| {
        m.iter()
            .find(|(_, o)| o.as_str() == old)
            .map(|(n, _)| n.clone())
    };
    let (x, y) = (named(a)?, named(b)?);
    if x == y {
        return None;
    }
    if x == rel {
        Some(y)
    } else if y == rel {
        Some(x)
    } else {
        None
    }
}

/// While the merge driver merges the document `rel` that one side of the
/// operation moved there and both sides changed the transcript of: what to
/// run if git stops on the old transcript (it pairs a moved file only while
/// it stays 50% alike, which the driver cannot know). `theirs_label` is
/// git's label for the other side, which names the picked commit of a
/// rebase or cherry-pick. None otherwise.
pub(crate) fn unpaired_hint(repo: &Repo, rel: &str, theirs_label: Option<&str>) -> Option<String> {
    let head = repo.head_commit()?;
    let (other, base) = operation_commits(repo, head)
        .or_else(|| theirs_label.and_then(|l| picked_by_label(repo, l)))?;
    if let Some(hint) = renamed_apart_hint(repo, base, [head, other], rel) {
        return Some(hint);
    }
    let old = moved_from(repo, base, &[head, other], rel)?;
    both_changed(repo, [head, other, base], [rel, &old]).then(|| {
        // The command ends the line, so it reads as a `fix:` (and is right
        // whether or not git paired the files: the merge is the driver's).
        format!(
            "moved from {old} while both sides added records: git pairs a moved transcript only while it stays 50% alike, and a modify/delete conflict of {t} leaves the other side's records in neither file; noma repair merges both sides' records at the new path (as this driver does when git pairs them) and names the `git add` to run. fix: noma repair {rel_sh}",
            t = transcript_path(&old),
            rel_sh = noma_core::diag::shell_word(rel),
        )
    })
}

/// The fix for a document (`old`, the merge base's path) both sides moved,
/// to different names: git leaves the merged document under both, and
/// `noma repair` with HEAD's name keeps one with both sides' records.
fn renamed_apart_hint(
    repo: &Repo,
    base: Oid,
    [head, other]: [Oid; 2],
    old: &str,
) -> Option<String> {
    let moved = repo.moved_documents(base, head).ok()?;
    let (ours, _) = moved.iter().find(|(_, o)| o.as_str() == old)?;
    let theirs = twin_name(repo, base, [head, other], ours, old)?;
    let sh = noma_core::diag::shell_word;
    Some(format!(
        "moved to {ours} here and to {theirs} on the other side (git's rename/rename conflict leaves the document under both names); noma repair keeps it as {ours} with both sides' records, removes {theirs} and names the `git add` to run. fix: noma repair {}",
        sh(ours)
    ))
}

/// Whether both sides (`[head, other, base]`) changed the transcript of
/// the document at `rel` (new path) or `old` since the base.
fn both_changed(repo: &Repo, [head, other, base]: [Oid; 3], paths: [&str; 2]) -> bool {
    let base_t = repo
        .blob_at(base, &transcript_path(paths[1]))
        .ok()
        .flatten();
    let changed = |c| {
        let t = at(repo, c, &paths, transcript_path);
        t.is_some() && t != base_t
    };
    changed(head) && changed(other)
}

/// The file of `rel` (`file` maps a document path to the file's) at
/// `commit`: at the new path first, else at the old.
fn at(repo: &Repo, commit: Oid, names: &[&str], file: fn(&str) -> String) -> Option<Vec<u8>> {
    names
        .iter()
        .find_map(|p| repo.blob_at(commit, &file(p)).ok().flatten())
}

/// Resolves the move of `doc` during a merge, rebase or cherry-pick (see
/// the module docs). None when no operation is in progress, the document
/// was not moved by one of its sides, or the other side added no record
/// the moved transcript lacks.
pub fn resolve_moved(doc: &Path) -> Result<Option<MovedMerge>, RepairError> {
    let dir = doc.parent().filter(|p| !p.as_os_str().is_empty());
    let Ok(repo) = Repo::discover(dir.unwrap_or(Path::new("."))) else {
        return Ok(None);
    };
    let Some(rel) = repo.relative_path(doc) else {
        return Ok(None);
    };
    let Some(head) = repo.head_commit() else {
        return Ok(None);
    };
    let Some((other, base)) = operation_commits(&repo, head) else {
        return Ok(None);
    };
    let Some(old) = moved_from(&repo, base, &[head, other], &rel) else {
        return Ok(None);
    };
    // Both sides moved it, apart: the other name's files are merged in too.
    let twin = twin_name(&repo, base, [head, other], &rel, &old);
    let mut paths = vec![rel.as_str(), old.as_str()];
    paths.extend(twin.as_deref());
    let paths = &paths[..];
    let doc_at = |c| at(&repo, c, paths, str::to_string);
    let tr = Versions {
        base: repo.blob_at(base, &transcript_path(&old)).ok().flatten(),
        ours: at(&repo, head, paths, transcript_path),
        theirs: at(&repo, other, paths, transcript_path),
    };
    let (Some(ours), Some(theirs)) = (&tr.ours, &tr.theirs) else {
        return Ok(None);
    };
    if twin.is_none() && ours.starts_with(theirs) {
        // The other side added nothing the moved transcript lacks.
        return Ok(None);
    }
    let base_doc = repo.blob_at(base, &old).ok().flatten();
    let known = [doc_at(head), doc_at(other), base_doc.clone()];
    let mut find = super::doc_finder(Some(&repo), &rel, known.into_iter().flatten().collect());
    let merged = super::merge_transcript(&tr, &mut find);
    if merged.method == "unreconciled" {
        let (path, messages) = (rel.clone(), merged.messages);
        return Err(RepairError::Unreconciled { path, messages });
    }
    let path = rel.clone();
    let document = super::conflicted::merge_document(&tr, base_doc, &mut find)
        .map_err(|error| RepairError::Document { path, error })?;
    let root = repo.workdir().ok_or(RepairError::Bare)?;
    let sidecar = union_sidecars(&repo, [head, other], paths);
    let files = Merged {
        transcript: &merged.content,
        theirs: theirs.as_slice(),
        document: &document.content,
        sidecar: sidecar.as_deref(),
    };
    write_merge(&root, [paths[0], paths[1]], twin.as_deref(), &files)?;
    let clean = merged.clean && document.clean;
    let mut messages = vec![match &twin {
        Some(t) => format!(
            "{}: {old} was moved to {rel} on one side and to {t} on the other: both sides' records kept under {rel}, the other side's rebased as merge copies (actors and signatures kept) as the merge driver does; {t}'s files removed",
            transcript_path(&rel)
        ),
        None => format!(
            "{}: {old} was moved to {rel} on one side and patched on the other; git did not pair the transcripts: both sides' records kept, the other side's rebased as merge copies (actors and signatures kept) as the merge driver does; the old path's files removed",
            transcript_path(&rel)
        ),
    }];
    messages.extend(merged.messages.iter().chain(&document.messages).cloned());
    let stage = to_stage(&repo, paths, sidecar.is_some());
    Ok(Some(MovedMerge {
        next_step: next_step(&rel, &stage, clean, continue_command(&repo)),
        moved_from: old,
        clean,
        sidecar: sidecar.is_some(),
        messages,
        stage,
    }))
}

/// The documents (paths from the work-tree root) that `noma repair`
/// with no argument merges: during a merge, rebase or cherry-pick, each
/// document one side moved while both sides added records, which git
/// pairs only while the moved transcript stays 50% alike (what the
/// driver's hint names). Empty when no operation is in progress or no
/// such document exists.
pub fn unpaired_moves(start: &Path) -> Result<Vec<PathBuf>, RepairError> {
    let Ok(repo) = Repo::discover(start) else {
        return Ok(Vec::new());
    };
    let (Some(head), Some(root)) = (repo.head_commit(), repo.workdir()) else {
        return Ok(Vec::new());
    };
    let Some((other, base)) = operation_commits(&repo, head) else {
        return Ok(Vec::new());
    };
    let mut found = std::collections::BTreeSet::new();
    for side in [head, other] {
        let moved = repo.moved_documents(base, side)?;
        found.extend(
            moved
                .into_iter()
                .filter(|(new, old)| both_changed(&repo, [head, other, base], [new, old]))
                .map(|(new, _)| new),
        );
    }
    // A document both sides moved apart: kept under HEAD's name.
    for (new, old) in repo.moved_documents(base, head)? {
        if twin_name(&repo, base, [head, other], &new, &old).is_some() {
            found.insert(new);
        }
    }
    Ok(found.into_iter().map(|rel| root.join(rel)).collect())
}

/// The union of both sides' sidecar lines (each at the new path or the
/// old), ours first; None when neither side has a sidecar.
fn union_sidecars(repo: &Repo, sides: [Oid; 2], paths: &[&str]) -> Option<Vec<u8>> {
    let versions: Vec<Vec<u8>> = sides
        .iter()
        .filter_map(|c| at(repo, *c, paths, sidecar_rel))
        .collect();
    if versions.is_empty() {
        return None;
    }
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for line in versions
        .iter()
        .flat_map(|v| v.split_inclusive(|b| *b == b'\n'))
    {
        let line = if line.ends_with(b"\n") {
            line.to_vec()
        } else {
            [line, b"\n"].concat()
        };
        if line.iter().any(|b| !b.is_ascii_whitespace()) && seen.insert(line.clone()) {
            out.extend_from_slice(&line);
        }
    }
    Some(out)
}

/// The files [`write_merge`] writes, and their side's transcript.
struct Merged<'a> {
    transcript: &'a [u8],
    theirs: &'a [u8],
    document: &'a [u8],
    sidecar: Option<&'a [u8]>,
}

/// Writes the merged files at the new path (the transcript under its lock)
/// and removes the old path's transcript and sidecar from the work tree.
/// A transcript in the work tree that holds lines of neither side (a
/// record made since the operation stopped) is refused, never overwritten.
fn write_merge(
    root: &Path,
    [rel, old]: [&str; 2],
    twin: Option<&str>,
    files: &Merged<'_>,
) -> Result<(), RepairError> {
    let io = |p: &Path| RepairError::io(p);
    let tpath = root.join(transcript_path(rel));
    let mut locked = LockedTranscript::open(&tpath).map_err(io(&tpath))?;
    let now = locked.read_all().map_err(io(&tpath))?;
    if !(files.transcript.starts_with(&now) || now == files.theirs) {
        return Err(RepairError::Uncommitted {
            path: tpath,
            committed: transcript_path(rel),
        });
    }
    locked.truncate(0).map_err(io(&tpath))?;
    locked.append(files.transcript).map_err(io(&tpath))?;
    let doc = root.join(rel);
    fsio::atomic_write(&doc, files.document).map_err(io(&doc))?;
    if let Some(bytes) = files.sidecar {
        let s = root.join(sidecar_rel(rel));
        fsio::atomic_write(&s, bytes).map_err(io(&s))?;
    }
    let mut gone = vec![transcript_path(old), sidecar_rel(old)];
    if let Some(t) = twin {
        gone.extend([t.to_string(), transcript_path(t), sidecar_rel(t)]);
    }
    for gone in gone {
        let p = root.join(gone);
        match std::fs::remove_file(&p) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(&p)(e)),
            _ => {}
        }
    }
    Ok(())
}

/// The paths `git add -A --` must name: the new path's files, and the old
/// path's that the index still holds (a conflict git left, or a file not
/// yet removed), whose removal is then staged.
fn to_stage(repo: &Repo, names: &[&str], sidecar: bool) -> Vec<String> {
    let rel = names[0];
    let mut paths = vec![rel.to_string(), transcript_path(rel)];
    if sidecar {
        paths.push(sidecar_rel(rel));
    }
    let at_stage = |p: &str, s: i32| repo.index_stage_blob(p, s).ok().flatten().is_some();
    let indexed = |p: &str| (0..=3).any(|s| at_stage(p, s));
    // The old path's transcript and sidecar, and its document when git
    // left only the base's version (both sides moved it: rename/rename).
    let old = names[1];
    let mut gone = vec![transcript_path(old), sidecar_rel(old)];
    if at_stage(old, 1) && !(0..=3).filter(|s| *s != 1).any(|s| at_stage(old, s)) {
        gone.push(old.to_string());
    }
    // The other name of a rename/rename: all its files.
    for twin in &names[2..] {
        gone.extend([twin.to_string(), transcript_path(twin), sidecar_rel(twin)]);
    }
    paths.extend(gone.into_iter().filter(|p| indexed(p)));
    paths
}

/// How the operation in progress goes on once the paths are staged.
fn continue_command(repo: &Repo) -> &'static str {
    if repo.merge_head().is_some() {
        "commit"
    } else if repo.resolve("CHERRY_PICK_HEAD").is_ok() {
        "`git cherry-pick --continue`"
    } else if rebasing(repo) {
        "`git rebase --continue`"
    } else {
        "commit"
    }
}

/// What is left after the files are written; `then` continues the
/// operation.
fn next_step(rel: &str, stage: &[String], clean: bool, then: &str) -> String {
    let sh = noma_core::diag::shell_word;
    let own = [rel.to_string(), transcript_path(rel), sidecar_rel(rel)];
    let (new, gone): (Vec<&String>, Vec<&String>) = stage.iter().partition(|p| own.contains(p));
    let words = |ps: &[&String]| ps.iter().map(|p| sh(p)).collect::<Vec<_>>().join(" ");
    let mut add = format!("git add -A -- {}", words(&new));
    if !gone.is_empty() {
        // Unstaged with --ignore-unmatch, which still works when another
        // fix removed them first (`git add` of a path gone from the index
        // and the work tree fails), as the hook's fix does.
        add.push_str(&format!(
            " && git rm -q --cached --ignore-unmatch -- {}",
            words(&gone)
        ));
    }
    if clean {
        format!("{add}, then {then}")
    } else {
        // Worded as the driver's record fix, so it reads as one command.
        format!(
            "once no ::conflict block is left, noma record {doc} && {add}, then {then}",
            doc = sh(rel)
        )
    }
}

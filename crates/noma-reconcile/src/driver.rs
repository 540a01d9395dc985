//! `noma merge-driver %O %A %B %L %P %X %Y` end to end: the three files git
//! hands over read, the document or transcript merged (see the module
//! above for how versions are found), the result written into the ours
//! file, and the lines worth telling the person merging: each conflict,
//! and how to make the transcript record the result.

use std::ffi::OsStr;
use std::io::Write;
use std::path::Path;

use noma_core::diag::shell_word;
use noma_core::transcript::{document_path, transcript_path};

use super::{FileMerge, RepairError, Versions};
use crate::git::repo::Repo;
use noma_merge::blocks::Labels;

/// What git passes the driver.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    /// The base version (`%O`).
    pub base: &'a Path,
    /// Our version, overwritten with the result (`%A`).
    pub ours: &'a Path,
    /// Their version (`%B`).
    pub theirs: &'a Path,
    /// The path being merged, relative to the work-tree root (`%P`).
    pub path: Option<&'a str>,
    /// Git's label for our side (`%X`, git 2.44+).
    pub ours_label: Option<&'a OsStr>,
    /// Git's label for their side (`%Y`, git 2.44+).
    pub theirs_label: Option<&'a OsStr>,
}

/// What the driver did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Driven {
    /// Merged without conflicts.
    pub clean: bool,
    /// Lines for stderr, each naming the merged path first.
    pub messages: Vec<String>,
}

/// Merges the file git names and writes the result into the ours file;
/// `Err` when a file cannot be read or written.
pub fn run(call: &Call<'_>) -> Result<Driven, RepairError> {
    let path = call.path.unwrap_or_default();
    let repo = Repo::from_env().ok().filter(|_| !path.is_empty());
    // Versions are found by sha256 in history, never from the merge's
    // commits: a rebase or cherry-pick names none (see noma_git::merge).
    // A moved document: the transcripts may be left unpaired, and then
    // `noma repair NEW` is the fix (it names `noma record` itself when a
    // conflict block is left), never `noma record` alone, which would make
    // the other side's records one person's edit.
    let moved_hint = repo
        .as_ref()
        .filter(|_| document_path(path).is_none())
        .and_then(|r| {
            let theirs = call.theirs_label.and_then(OsStr::to_str);
            super::moved::unpaired_hint(r, path, theirs)
        });
    let (result, record_hint) = match document_path(path) {
        Some(doc) => (merge_transcript_file(call, repo.as_ref(), doc)?, None),
        None => {
            let (result, hint) = merge_document_file(&read(call)?, repo.as_ref(), path, call);
            write(call.ours, &result.content, false)?;
            (result, hint.filter(|_| moved_hint.is_none()))
        }
    };
    // Printed after the conflicts: how to make the transcript record the result.
    let mut messages: Vec<String> = (result.messages.iter().chain(&record_hint))
        .map(|m| format!("{path}: {m}"))
        .collect();
    if let Some(doc) = document_path(path).filter(|_| result.resolved_by_recording) {
        // The document merges on its own (block by block); recording it
        // makes the pair agree again (the hook's fix for an unrecorded edit).
        messages.push(format!(
            "{path}: fix: once {doc} is merged: noma record {doc_sh} && git add {doc_sh} {path_sh}",
            doc_sh = shell_word(doc),
            path_sh = shell_word(path),
        ));
    }
    if let Some(doc) = document_path(path) {
        messages.extend(kept_removal_fix(call, repo.as_ref(), doc, path));
    }
    messages.extend(moved_hint.map(|h| format!("{path}: {h}")));
    Ok(Driven {
        clean: result.clean,
        messages,
    })
}

/// A document removed on our side (`noma rm`) and edited on theirs: git
/// stops on modify/delete of `doc` and leaves their version in the tree,
/// while the merged transcript keeps the removal (their edits stay as
/// rejected copies, so no record is lost). The command that keeps the
/// removal; and, when the other side removed a document we edited, the
/// one that keeps the edit (`noma rm` after it removes it after all).
/// When one side moved the document (`git mv`) before the removal, git
/// leaves the edited version under the other side's name: the command
/// removes it there too, or moves the kept edit to the transcript's name.
fn kept_removal_fix(call: &Call<'_>, repo: Option<&Repo>, doc: &str, path: &str) -> Option<String> {
    use noma_core::transcript::tombstone;
    let removed = |p: &Path| {
        noma_store::fsio::open_lines(p)
            .ok()
            .and_then(|mut r| tombstone::removal_in(&mut r).ok().flatten())
            .is_some()
    };
    let base = std::fs::read(call.base).ok();
    let edited = |p: &Path| std::fs::read(p).ok() != base;
    let (doc_sh, path_sh) = (shell_word(doc), shell_word(path));
    // The document's other name when one side (0: ours, 1: theirs) moved
    // it there, and whether HEAD holds [that name, `doc`].
    let other_name = |side: usize| {
        let r = repo?;
        let [head, other, base] =
            super::moved::driver_commits(r, call.theirs_label.and_then(OsStr::to_str))?;
        let old = super::moved::moved_from(r, base, &[[head, other][side]], doc)?;
        let head_has = |p: &str| r.blob_at(head, p).ok().flatten().is_some();
        let held = [head_has(&old), head_has(doc)];
        Some((old, held))
    };
    if removed(call.ours) && !removed(call.theirs) && edited(call.theirs) {
        let mut rm = doc_sh.clone();
        if let Some((old, _)) = other_name(0).filter(|(_, [old, _])| !old) {
            rm = format!("{rm} {}", shell_word(&old));
        }
        return Some(format!(
            "{path}: {doc} was removed here and edited on the other side; the merged transcript keeps the removal and the other side's records. fix: git rm -q -f --ignore-unmatch -- {rm} && git add {path_sh}"
        ));
    }
    // The other way round the merged transcript keeps our edit and their
    // removal as a rejected copy: the document stays unless removed again.
    if !(removed(call.theirs) && !removed(call.ours) && edited(call.ours)) {
        return None;
    }
    let label = call.theirs_label.and_then(OsStr::to_str);
    let ours_moved = repo.and_then(|r| super::moved::our_new_name(r, label, doc));
    let (add, rm) = match (
        other_name(1).filter(|(_, [old, doc])| *old && !doc),
        ours_moved,
    ) {
        // They moved it before removing it: our edit is kept under the
        // transcript's (their) name.
        (Some((old, _)), _) => (
            format!(
                "git add -- {old_sh} && git mv -f -- {old_sh} {doc_sh} && git add -- {path_sh}",
                old_sh = shell_word(&old)
            ),
            doc_sh.clone(),
        ),
        // We moved it too, elsewhere (git's rename/rename of the
        // transcript, handed over under the base's name): HEAD lacks
        // `doc`, and `noma repair` of our name keeps the edit there.
        (None, Some(ours)) => {
            let ours = shell_word(&ours);
            (format!("noma repair {ours}"), ours)
        }
        // The state the merged transcript replays to (HEAD's edit, plus
        // their earlier records it applies), which `noma repair` writes
        // whether git left HEAD's version in the tree (modify/delete) or
        // deleted it cleanly (our records end where the base did).
        (None, None) => (
            format!("noma repair {doc_sh} && git add {doc_sh} {path_sh}"),
            doc_sh.clone(),
        ),
    };
    Some(format!(
        "{path}: {doc} was edited here and removed on the other side; the merged transcript keeps the edit and the other side's removal as a rejected copy (to remove it after all, commit, then noma rm {rm}). fix: {add}"
    ))
}

/// The three files git hands over, read whole.
fn read(call: &Call<'_>) -> Result<Versions, RepairError> {
    let read = |p: &Path| std::fs::read(p).map_err(RepairError::io(p));
    Ok(Versions {
        base: Some(read(call.base)?),
        ours: Some(read(call.ours)?),
        theirs: Some(read(call.theirs)?),
    })
}

/// Writes `content` into the ours file, or appends it.
fn write(ours: &Path, content: &[u8], append: bool) -> Result<(), RepairError> {
    // Created and truncated as `std::fs::write` does, unless appending; a
    // link or FIFO in its place is refused, never written through.
    use noma_store::fsio::contain::{open_write, WriteMode};
    let mode = if append {
        WriteMode::Append
    } else {
        WriteMode::Replace
    };
    let file = open_write(ours, mode);
    file.and_then(|mut f| f.write_all(content))
        .map_err(RepairError::io(ours))
}

/// A transcript (`path` is `doc`'s transcript), merged into the ours file.
/// The everyday merge appends to it without reading it whole
/// ([`super::streamed`]); every other goes the whole way.
fn merge_transcript_file(
    call: &Call<'_>,
    repo: Option<&Repo>,
    doc: &str,
) -> Result<FileMerge, RepairError> {
    let head_doc = repo
        .and_then(|r| r.head_blob(doc).ok().flatten())
        .into_iter()
        .collect();
    let mut find = super::doc_finder(repo, doc, head_doc);
    let files = [call.base, call.ours, call.theirs];
    if let Some(appended) = super::streamed::merge_transcript_files(files, &mut find) {
        write(call.ours, &appended.content, true)?;
        return Ok(appended);
    }
    let result = super::merge_transcript(&read(call)?, &mut find);
    write(call.ours, &result.content, false)?;
    Ok(result)
}

/// A document, with the advice to record it when its transcript does not
/// record the merge.
fn merge_document_file(
    mine: &Versions,
    repo: Option<&Repo>,
    path: &str,
    call: &Call<'_>,
) -> (FileMerge, Option<String>) {
    let (base, ours, theirs) = (
        mine.base.clone().unwrap_or_default(),
        mine.ours.clone().unwrap_or_default(),
        mine.theirs.clone().unwrap_or_default(),
    );
    let tpath = transcript_path(path);
    let head_t = repo.and_then(|r| r.head_blob(&tpath).ok().flatten());
    let head_has_transcript = head_t.is_some();
    let mut transcripts = match repo {
        Some(r) => Versions {
            base: None,
            ours: super::find_transcript_for(r, &tpath, &ours, head_t),
            theirs: super::find_transcript_for(r, &tpath, &theirs, None),
        },
        None => Versions::default(),
    };
    let base_sha = noma_core::doc::hash::sha256_hex(&base);
    transcripts.base = [&transcripts.ours, &transcripts.theirs]
        .into_iter()
        .flatten()
        .find_map(|t| super::prefix_ending_at(t, &base_sha))
        .map(<[u8]>::to_vec);
    // Git before 2.44 names neither side; ours is HEAD in every operation.
    let labels = Labels {
        ours: side_label(call.ours_label, "%X").unwrap_or_else(|| "HEAD".into()),
        theirs: side_label(call.theirs_label, "%Y").unwrap_or_else(|| "theirs".into()),
    };
    let mut find = super::doc_finder(repo, path, vec![base, ours, theirs]);
    let result = super::merge_document(mine, &transcripts, &mut find, &labels);
    let has_transcript =
        head_has_transcript || transcripts.ours.is_some() || transcripts.theirs.is_some();
    let hint = (has_transcript && !(result.clean && result.method == "reconciled"))
        .then(|| record_fix(path, &tpath, result.clean));
    (result, hint)
}

/// The label git gave a side, made fit for a `::conflict` block's attribute
/// and message: one line of at most 100 characters, brackets as
/// parentheses (a commit subject's `[[id]]` would be a wikilink in the
/// message, and a dangling one a `broken-reference`). `None` when git
/// passed nothing or, before 2.44, the placeholder itself (`%X`).
fn side_label(raw: Option<&OsStr>, placeholder: &str) -> Option<String> {
    let text = raw?.to_string_lossy();
    let text = text.trim();
    if text.is_empty() || text == placeholder {
        return None;
    }
    let one_line: String = text
        .chars()
        .map(|c| match c {
            '[' => '(',
            ']' => ')',
            c if c.is_control() => ' ',
            c => c,
        })
        .take(100)
        .collect();
    Some(one_line)
}

/// What to do when a merged document has a transcript that does not record
/// the merge (one side edited it without noma, or blocks conflicted):
/// record it. A rebase or cherry-pick runs no hooks, so the driver is the
/// only one who can say so before the result is committed.
fn record_fix(doc: &str, tpath: &str, clean: bool) -> String {
    let fix = format!(
        "noma record {doc_sh} && git add {doc_sh} {tpath_sh}",
        doc_sh = shell_word(doc),
        tpath_sh = shell_word(tpath)
    );
    if clean {
        format!(
            "merged block by block, but its transcript does not record the other side's changes. fix: {fix} before you commit (if git committed already, as a rebase or cherry-pick without conflicts does, running no hooks, commit the record on top)"
        )
    } else {
        format!(
            "its transcript will not record how you resolve the conflict. fix: once no ::conflict block is left, {fix}, before `git commit` or `git rebase --continue` (a rebase runs no hooks)"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::side_label;
    use std::ffi::OsStr;

    #[test]
    fn side_labels_are_one_short_line_or_none() {
        let label = |s: &str| side_label(Some(OsStr::new(s)), "%Y");
        // Git before 2.44 passes the placeholder through; nothing is none.
        assert_eq!(side_label(None, "%Y"), None);
        assert_eq!(label("%Y"), None);
        assert_eq!(label("  "), None);
        assert_eq!(label("tune").as_deref(), Some("tune"));
        assert_eq!(
            label("1a2b3c4 (fix\tthe\nthing)").as_deref(),
            Some("1a2b3c4 (fix the thing)")
        );
        assert_eq!(label(&"x".repeat(300)).map(|l| l.len()), Some(100));
        assert_eq!(label("see [[plan]]").as_deref(), Some("see ((plan))"));
    }
}

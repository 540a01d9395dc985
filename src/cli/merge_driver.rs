//! `noma merge-driver %O %A %B %L %P %X %Y`: the git merge driver for `.noma`
//! documents and their `.patches` transcripts (registered by
//! `noma hooks install`). See [`noma_git::merge`] for the design.
//!
//! Writes the merged content into the ours file (`%A`) and exits 0 when the
//! merge is clean, 1 on conflicts (the file then holds the conflicted
//! content and each conflict is printed on stderr), 2 when it could not run.

use noma_core::diag::shell_word;
use noma_core::transcript::{document_path, transcript_path};
use std::ffi::OsString;
use std::path::PathBuf;

use noma_git::git::repo::Repo;
use noma_git::merge::{self, Labels, Versions};

/// Arguments of `noma merge-driver` (what git passes for `%O %A %B %L %P %X %Y`).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The base version (`%O`).
    pub base: PathBuf,
    /// Our version, overwritten with the result (`%A`).
    pub ours: PathBuf,
    /// Their version (`%B`).
    pub theirs: PathBuf,
    /// Conflict marker size (`%L`); block-level conflicts do not use it.
    pub marker_size: Option<String>,
    /// The path being merged, relative to the work-tree root (`%P`).
    pub path: Option<String>,
    /// Git's label for our side (`%X`, git 2.44+): `HEAD` in a merge, rebase
    /// or cherry-pick, `Updated upstream` when a stash is applied.
    pub ours_label: Option<OsString>,
    /// Git's label for their side (`%Y`, git 2.44+): the merged branch, the
    /// picked commit (`1a2b3c4 (subject)`) or `Stashed changes`.
    pub theirs_label: Option<OsString>,
}

/// The label git gave a side, made fit for a `::conflict` block's attribute
/// and message: one line of at most 100 characters, brackets as
/// parentheses (a commit subject's `[[id]]` would be a wikilink in the
/// message, and a dangling one a `broken-reference`). `None` when git
/// passed nothing or, before 2.44, the placeholder itself (`%X`).
fn side_label(raw: Option<&OsString>, placeholder: &str) -> Option<String> {
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

/// Runs `noma merge-driver`.
pub fn run(args: Args) -> i32 {
    let read = |p: &PathBuf| std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()));
    let (base, ours, theirs) = match (read(&args.base), read(&args.ours), read(&args.theirs)) {
        (Ok(b), Ok(o), Ok(t)) => (b, o, t),
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => {
            eprintln!("noma merge-driver: {e}");
            return super::EXIT_USAGE;
        }
    };
    let path = args.path.clone().unwrap_or_default();
    let repo = Repo::from_env().ok().filter(|_| !path.is_empty());
    let mine = Versions {
        base: Some(base.clone()),
        ours: Some(ours.clone()),
        theirs: Some(theirs.clone()),
    };
    // Versions are found by sha256 in history, never from the merge's
    // commits: a rebase or cherry-pick names none (see noma_git::merge).
    // Printed after the conflicts: how to make the transcript record the result.
    let mut record_hint = None;
    let result = if let Some(doc) = document_path(&path) {
        let head_doc = repo
            .as_ref()
            .and_then(|r| r.head_blob(doc).ok().flatten())
            .into_iter()
            .collect();
        let mut find = merge::doc_finder(repo.as_ref(), doc, head_doc);
        merge::merge_transcript(&mine, &mut find)
    } else {
        let tpath = transcript_path(&path);
        let head_t = repo
            .as_ref()
            .and_then(|r| r.head_blob(&tpath).ok().flatten());
        let head_has_transcript = head_t.is_some();
        let mut transcripts = match repo.as_ref() {
            Some(r) => Versions {
                base: None,
                ours: merge::find_transcript_for(r, &tpath, &ours, head_t),
                theirs: merge::find_transcript_for(r, &tpath, &theirs, None),
            },
            None => Versions::default(),
        };
        let base_sha = noma_core::doc::hash::sha256_hex(&base);
        transcripts.base = [&transcripts.ours, &transcripts.theirs]
            .into_iter()
            .flatten()
            .find_map(|t| merge::prefix_ending_at(t, &base_sha))
            .map(<[u8]>::to_vec);
        // Git before 2.44 names neither side; ours is HEAD in every operation.
        let labels = Labels {
            ours: side_label(args.ours_label.as_ref(), "%X").unwrap_or_else(|| "HEAD".into()),
            theirs: side_label(args.theirs_label.as_ref(), "%Y").unwrap_or_else(|| "theirs".into()),
        };
        let known = vec![base.clone(), ours.clone(), theirs.clone()];
        let mut find = merge::doc_finder(repo.as_ref(), &path, known);
        let result = merge::merge_document(&mine, &transcripts, &mut find, &labels);
        let has_transcript =
            head_has_transcript || transcripts.ours.is_some() || transcripts.theirs.is_some();
        if has_transcript && !(result.clean && result.method == "reconciled") {
            record_hint = Some(record_fix(&path, &tpath, result.clean));
        }
        result
    };
    if let Err(e) = std::fs::write(&args.ours, &result.content) {
        eprintln!("noma merge-driver: {}: {e}", args.ours.display());
        return super::EXIT_USAGE;
    }
    for m in result.messages.iter().chain(&record_hint) {
        eprintln!("noma merge-driver: {path}: {m}");
    }
    if let Some(doc) = document_path(&path).filter(|_| result.resolved_by_recording) {
        // The document merges on its own (block by block); recording it
        // makes the pair agree again (the hook's fix for an unrecorded edit).
        eprintln!(
            "noma merge-driver: {path}: fix: once {doc} is merged: noma record {doc_sh} && git add {doc_sh} {path_sh}",
            doc_sh = shell_word(doc),
            path_sh = shell_word(&path),
        );
    }
    if result.clean {
        super::EXIT_OK
    } else {
        super::EXIT_FAIL
    }
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
    use std::ffi::OsString;

    #[test]
    fn side_labels_are_one_short_line_or_none() {
        let label = |s: &str| side_label(Some(&OsString::from(s)), "%Y");
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

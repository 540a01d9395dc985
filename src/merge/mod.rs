//! Merging `.noma` documents and transcripts across branches: the git merge
//! driver (`noma merge-driver`) and the rebase behind `noma reconcile`.
//!
//! # What git provides (git 2.47, `ort`; checked by tests/merge_git.rs)
//!
//! Git runs the driver once per conflicting path as
//! `noma merge-driver %O %A %B %L %P`: three temporary files (base, ours =
//! the result file, theirs), the marker size and the path, with the cwd at
//! the work-tree root. `MERGE_HEAD` is *not* written yet while drivers run;
//! the merged commit is announced as an environment variable
//! `GITHEAD_<oid>=<name>` (ours is HEAD). A path is only handed to the
//! driver when both sides changed it, and the document and its transcript
//! are handed over independently, in an unspecified order.
//!
//! # Design
//!
//! Both drivers compute the same reconciliation ([`transcript::reconcile`])
//! from the same six inputs: base/ours/theirs of the document and of the
//! transcript. A driver gets its own three versions from git's files and
//! reads the sibling's three from the object database at HEAD, at the merged
//! commit (`MERGE_HEAD`, else the `GITHEAD_<oid>` that is not HEAD) and at
//! their merge base — after checking that its own path holds exactly the
//! bytes git handed over at those three commits, so a rebase, cherry-pick or
//! virtual merge base never mixes versions. The reconciliation is a pure
//! function of those bytes (derived op ids, original timestamps), so the
//! document driver writes exactly what the transcript driver's result
//! replays to. When git does not hand a file over (only one side changed
//! it), git's own choice is what the reconciliation computes too: their
//! rejected-only records leave our document, our rejected-only records
//! leave theirs (their ops re-applied to the unchanged base give their bytes).
//!
//! Without transcripts (or when they do not explain the documents) the
//! document falls back to [`blocks::merge_documents`]; a transcript that
//! cannot be reconciled is left as ours and reported as a conflict.

pub mod blocks;
pub mod ci;
pub mod transcript;

pub use blocks::{merge_documents, BlockConflict, DocMerge, Labels};
pub use transcript::{reconcile, OpConflict, Reconciled, Side, Unreconcilable};

use crate::git::repo::Repo;

/// The result of merging one file.
#[derive(Debug, Clone)]
pub struct FileMerge {
    /// The merged bytes (with conflict blocks when not clean).
    pub content: Vec<u8>,
    /// Merged without conflicts.
    pub clean: bool,
    /// `reconciled` (transcripts rebased), `blocks` (block-level merge) or
    /// `unreconciled` (transcript left as ours).
    pub method: &'static str,
    /// One line per conflict or notable event.
    pub messages: Vec<String>,
}

/// The three versions of a file at the commits of a merge.
#[derive(Debug, Clone, Default)]
pub struct Versions {
    /// At the merge base.
    pub base: Option<Vec<u8>>,
    /// At HEAD.
    pub ours: Option<Vec<u8>>,
    /// At the merged commit.
    pub theirs: Option<Vec<u8>>,
}

/// The commits of the merge in progress: (ours, theirs, base, theirs' name).
pub fn merge_commits(repo: &Repo) -> Option<(git2::Oid, git2::Oid, git2::Oid, String)> {
    let head = repo.head_commit()?;
    let from_file = std::fs::read_to_string(repo.git_dir().join("MERGE_HEAD"))
        .ok()
        .and_then(|t| {
            t.lines()
                .next()
                .and_then(|l| git2::Oid::from_str(l.trim()).ok())
        })
        .map(|id| (id, String::new()));
    let (theirs, name) = from_file.or_else(|| {
        let mut heads: Vec<(git2::Oid, String)> = std::env::vars_os()
            .filter_map(|(k, v)| {
                let hex = k.to_str()?.strip_prefix("GITHEAD_")?;
                let id = repo.resolve(hex).ok()?;
                (id != head).then(|| (id, v.to_string_lossy().into_owned()))
            })
            .collect();
        heads.sort();
        // An octopus merge has several: no single "theirs" to read from.
        (heads.len() == 1).then(|| heads.pop()).flatten()
    })?;
    let base = repo.merge_base(head, theirs)?;
    let name = if name.is_empty() {
        theirs.to_string().chars().take(12).collect()
    } else {
        name
    };
    Some((head, theirs, base, name))
}

/// The versions of `sibling` at the merge's commits, provided `path` holds
/// exactly `given` (base, ours, theirs; `None` = absent) at those commits.
pub fn sibling_versions(
    repo: &Repo,
    path: &str,
    given: [Option<&[u8]>; 3],
    sibling: &str,
) -> Option<(Versions, String)> {
    let (ours, theirs, base, name) = merge_commits(repo)?;
    let commits = [base, ours, theirs];
    for (c, g) in commits.iter().zip(given) {
        let at = repo.blob_at(*c, path).ok()?;
        if at.as_deref().unwrap_or_default() != g.unwrap_or_default() {
            return None;
        }
    }
    let get = |c: git2::Oid| repo.blob_at(c, sibling).ok().flatten();
    Some((
        Versions {
            base: get(base),
            ours: get(ours),
            theirs: get(theirs),
        },
        name,
    ))
}

fn side<'a>(doc: Option<&'a str>, transcript: Option<&'a [u8]>) -> Side<'a> {
    Side { doc, transcript }
}

fn text(b: Option<&[u8]>) -> Option<&str> {
    b.and_then(|b| std::str::from_utf8(b).ok())
}

/// Merges the document `doc` given its three versions and, when known, its
/// transcript's three versions.
pub fn merge_document(doc: &Versions, transcript: Option<&Versions>, labels: &Labels) -> FileMerge {
    let (b, o, t) = (
        text(doc.base.as_deref()),
        text(doc.ours.as_deref()),
        text(doc.theirs.as_deref()),
    );
    let (Some(o), Some(t)) = (o, t) else {
        return FileMerge {
            content: doc.ours.clone().unwrap_or_default(),
            clean: false,
            method: "blocks",
            messages: vec!["a version is missing or not UTF-8 text; kept ours".into()],
        };
    };
    let b = b.unwrap_or("");
    let mut messages = Vec::new();
    if let Some(tv) = transcript.filter(|tv| tv.ours != tv.theirs) {
        match reconcile(
            side(Some(b), tv.base.as_deref()),
            side(Some(o), tv.ours.as_deref()),
            side(Some(t), tv.theirs.as_deref()),
        ) {
            Ok(r) if r.conflicts.is_empty() => {
                return FileMerge {
                    content: r.doc.into_bytes(),
                    clean: true,
                    method: "reconciled",
                    messages: vec![format!(
                        "reconciled: {} record(s) of {} rebased onto ours",
                        r.rebased.len(),
                        labels.theirs
                    )],
                };
            }
            Ok(r) => {
                let m = merge_documents(b, &r.doc, t, labels);
                let mut messages: Vec<String> = r
                    .conflicts
                    .iter()
                    .map(|c| format!("conflict: {}", c.describe()))
                    .collect();
                messages.extend(
                    m.conflicts
                        .iter()
                        .map(|c| format!("conflict block: {} ({})", c.block, c.message)),
                );
                return FileMerge {
                    content: m.text.into_bytes(),
                    clean: false,
                    method: "reconciled",
                    messages,
                };
            }
            Err(e) => messages.push(format!("transcripts not reconciled ({e}); merging blocks")),
        }
    }
    let m = merge_documents(b, o, t, labels);
    messages.extend(
        m.conflicts
            .iter()
            .map(|c| format!("conflict: block \"{}\" {}", c.block, c.message)),
    );
    FileMerge {
        clean: m.conflicts.is_empty(),
        content: m.text.into_bytes(),
        method: "blocks",
        messages,
    }
}

/// Merges a transcript given its three versions and its document's three.
pub fn merge_transcript(tr: &Versions, doc: Option<&Versions>) -> FileMerge {
    let keep_ours = |messages: Vec<String>| FileMerge {
        content: tr.ours.clone().unwrap_or_default(),
        clean: false,
        method: "unreconciled",
        messages,
    };
    let Some(doc) = doc else {
        return keep_ours(vec![
            "the document's versions at the merged commits are unknown; transcript left as ours"
                .into(),
        ]);
    };
    match reconcile(
        side(text(doc.base.as_deref()), tr.base.as_deref()),
        side(text(doc.ours.as_deref()), tr.ours.as_deref()),
        side(text(doc.theirs.as_deref()), tr.theirs.as_deref()),
    ) {
        Ok(r) => FileMerge {
            clean: r.conflicts.is_empty(),
            messages: r
                .conflicts
                .iter()
                .map(|c| format!("conflict: {}", c.describe()))
                .collect(),
            content: r.transcript,
            method: "reconciled",
        },
        Err(e) => keep_ours(vec![format!(
            "transcripts not reconciled ({e}); transcript left as ours"
        )]),
    }
}

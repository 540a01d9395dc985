//! Merging `.noma` documents and transcripts across branches: the git merge
//! driver (`noma merge-driver`) and the rebase behind `noma reconcile`.
//!
//! # What git provides (git 2.47, `ort`; checked by tests/it/merge_git.rs)
//!
//! Git runs the driver once per conflicting path as
//! `noma merge-driver %O %A %B %L %P %X %Y`: three temporary files (base,
//! ours = the result file, theirs), the marker size, the path and (git
//! 2.44+) the labels of the two sides, with the cwd at the work-tree root.
//! `MERGE_HEAD` is *not* written yet while drivers run;
//! the merged commit is announced as an environment variable
//! `GITHEAD_<oid>=<name>` (ours is HEAD). A path is only handed to the
//! driver when both sides changed it, and the document and its transcript
//! are handed over independently, in an unspecified order.
//!
//! # Design
//!
//! Both drivers compute the same reconciliation
//! ([`transcript::reconcile_transcripts`]): ours is kept as a byte prefix
//! and their records whose op we lack are re-applied onto our final state
//! (see [`noma_merge::lineage`] for op identity), unless the merge base holds the
//! record too: then our side removed it (a cherry-pick of a later commit,
//! `rebase -i` dropping one) and it stays removed. A base record only
//! theirs removed (`git revert`) is not reconcilable. Neither driver reads the merge's
//! commits: during a rebase or cherry-pick git names none. Instead the
//! versions are found by sha256 in the path's history ([`Repo::history_starts`]):
//! the transcript driver looks up the document state its common prefix
//! ends at; the document driver looks up the transcripts that end at ours
//! and at their document, and takes the base's as the prefix of one of
//! them that ends at the base document ([`prefix_ending_at`]). The result is a pure function of those bytes
//! (op ids derived from the original and the state a copy starts from,
//! original timestamps), so both drivers agree, and a merge, a rebase and
//! a cherry-pick of the same records write the same bytes. When git does
//! not hand a file over (only one side changed it), git's own choice is
//! what the reconciliation computes too.
//!
//! Without transcripts (or when they do not explain the documents) the
//! document falls back to [`noma_merge::blocks::merge_documents`]; a transcript that
//! cannot be reconciled is left as ours and reported as a conflict.
//!
//! The transcript driver's everyday merge, where the base's transcript is
//! a byte prefix of both sides', is reconciled from the appended records
//! alone ([`streamed`]) and written by appending to ours: the same bytes
//! and messages, without holding a transcript (decision
//! `merge-driver-appends`).

mod checkpoint;
pub mod conflicted;
pub mod driver;
mod error;
pub mod joined_file;
pub mod moved;
mod proved;
pub mod reconcile;
mod streamed;
pub mod summary;

use noma_merge::blocks::{merge_documents, Labels};
use noma_merge::transcript::{self, OpConflict, Reconciled, Unreconcilable};

use noma_changes as changes;
use noma_history::{history_replay, provenance};
use noma_repo::{cache, datasets, git};

use crate::git::repo::Repo;
pub use crate::history_replay::{doc_finder, find_version};
pub use error::RepairError;
use noma_core::doc::hash::sha256_hex;

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
    /// Recording the merged document (`noma record`) resolves the
    /// conflict: the transcript was kept as ours because theirs removed
    /// records (a revert) that an append cannot remove.
    pub resolved_by_recording: bool,
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

/// The state a transcript ends at: its last applied record's post_sha256.
pub fn final_state(t: &[u8]) -> Option<String> {
    let (lines, _) = noma_core::transcript::split_lines(t);
    lines.iter().rev().find_map(|l| {
        noma_core::transcript::parse_record(l.number, l.raw)
            .ok()
            .filter(|r| r.patch_result == noma_core::transcript::PatchResult::Applied)
            .map(|r| r.post_sha256)
    })
}

/// A version of the transcript at `tpath` that ends at the document state
/// `doc`: `preferred` when it does, else the newest in history that does.
pub(crate) fn find_transcript_for(
    repo: &Repo,
    tpath: &str,
    doc: &[u8],
    preferred: Option<Vec<u8>>,
) -> Option<Vec<u8>> {
    let sha = sha256_hex(doc);
    if let Some(p) = preferred.filter(|p| final_state(p).as_deref() == Some(sha.as_str())) {
        return Some(p);
    }
    let starts = repo.history_starts();
    repo.find_version(
        &starts,
        &[tpath],
        &noma_core::transcript::transcript_path(".noma"),
        crate::git::HISTORY_LIMIT,
        |b| final_state(b).as_deref() == Some(sha.as_str()),
    )
    .ok()
    .flatten()
}

/// The part of transcript `t` that ends at the document state `sha`: up
/// to its last applied record whose `post_sha256` is `sha`, or empty when
/// its first applied record starts there. Git hands the document driver no
/// transcript of the merge base; the base's is such a prefix of a side's
/// (of ours after a revert, of theirs after a cherry-pick or a dropped
/// commit), found without walking history.
pub(crate) fn prefix_ending_at<'t>(t: &'t [u8], sha: &str) -> Option<&'t [u8]> {
    let (lines, _) = noma_core::transcript::split_lines(t);
    // One record parsed at a time: only the answer's offsets are kept.
    let (mut last_end, mut first_pre_matches) = (None, None);
    for l in &lines {
        let Ok(r) = noma_core::transcript::parse_record(l.number, l.raw) else {
            continue;
        };
        if r.patch_result != noma_core::transcript::PatchResult::Applied {
            continue;
        }
        first_pre_matches.get_or_insert(r.pre_sha256 == sha);
        if r.post_sha256 == sha {
            last_end = Some(l.offset + l.raw.len());
        }
    }
    match last_end {
        Some(end) => t.get(..end),
        None => (first_pre_matches == Some(true)).then(|| &t[..0]),
    }
}

fn text(b: Option<&[u8]>) -> Option<&str> {
    b.and_then(|b| std::str::from_utf8(b).ok())
}

/// Merges the document `doc` given its three versions and, when known, its
/// transcript's versions.
///
/// `transcripts` holds the transcripts ending at the three documents (ours
/// and theirs are needed to reconcile; base, when found, tells a record
/// one side removed from one the other side added); `find_doc` returns a
/// document version by sha256.
pub(crate) fn merge_document(
    doc: &Versions,
    transcripts: &Versions,
    find_doc: &mut dyn FnMut(&str) -> Option<String>,
    labels: &Labels,
) -> FileMerge {
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
            resolved_by_recording: false,
        };
    };
    let b = b.unwrap_or("");
    let mut messages = Vec::new();
    let (bt, ot, tt) = (
        transcripts.base.as_deref(),
        transcripts.ours.as_deref(),
        transcripts.theirs.as_deref(),
    );
    if let Some((ot, tt)) = ot.zip(tt).filter(|(o, t)| o != t) {
        match reconcile_checked([bt, Some(ot), Some(tt)], o, t, find_doc) {
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
                    resolved_by_recording: false,
                };
            }
            Ok(r) if kept_over_removal(ot, tt) => return kept_edit(r),
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
                    resolved_by_recording: false,
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
        resolved_by_recording: false,
    }
}

/// The document when their side removed it and ours edited it: the
/// merged transcript keeps the edit (their removal a rejected copy, as the
/// transcript driver keeps it), so the document is the state it replays
/// to, not a block merge with the empty document, whose "theirs" would
/// empty it without recording a removal.
fn kept_edit(r: Reconciled) -> FileMerge {
    let mut messages: Vec<String> = r
        .conflicts
        .iter()
        .map(|c| format!("conflict: {}", c.describe()))
        .collect();
    messages.push(
        "the other side removed the document: the edit is kept (to remove it after all, commit, then noma rm it)".into(),
    );
    FileMerge {
        content: r.doc.into_bytes(),
        clean: true,
        method: "reconciled",
        messages,
        resolved_by_recording: false,
    }
}

/// Whether their transcript `tt` ends with a removal of the document that
/// ours `ot` does not: the merge keeps our edit over it.
fn kept_over_removal(ot: &[u8], tt: &[u8]) -> bool {
    use noma_core::transcript::tombstone::removal;
    removal(tt).is_some() && removal(ot).is_none()
}

/// Reconciles two transcripts (given as base, ours, theirs) whose
/// documents must be `o` and `t`.
fn reconcile_checked(
    [bt, ot, tt]: [Option<&[u8]>; 3],
    o: &str,
    t: &str,
    find_doc: &mut dyn FnMut(&str) -> Option<String>,
) -> Result<Reconciled, Unreconcilable> {
    let (ot, tt) = (ot.unwrap_or_default(), tt.unwrap_or_default());
    // When the base's transcript is a prefix of both (the everyday merge),
    // the history is not parsed into records and kept (decision
    // `merge-driver-appends`); anything else, or anything the stream does
    // not accept, is reconciled whole.
    let streamed = bt
        .and_then(|bt| streamed::reconcile_streams([&bt, &ot, &tt], Some(o), find_doc))
        .map(|s| s.reconciled);
    let r = match streamed {
        Some(r) => r,
        None => transcript::reconcile_transcripts(ot, tt, bt, Some(o), find_doc)?,
    };
    if r.ours_doc != o {
        return Err(Unreconcilable::new(
            "our document is not what our transcript replays to",
        ));
    }
    if r.theirs_doc != t {
        return Err(Unreconcilable::new(
            "their document is not what their transcript replays to",
        ));
    }
    Ok(r)
}

/// Merges a transcript given its versions; `find_doc` returns a version of
/// its document by sha256. The result keeps ours as a byte prefix.
pub(crate) fn merge_transcript(
    tr: &Versions,
    find_doc: &mut dyn FnMut(&str) -> Option<String>,
) -> FileMerge {
    let keep_ours = |messages: Vec<String>, resolved_by_recording| FileMerge {
        content: tr.ours.clone().unwrap_or_default(),
        clean: false,
        method: "unreconciled",
        messages,
        resolved_by_recording,
    };
    let (ot, tt) = (
        tr.ours.as_deref().unwrap_or_default(),
        tr.theirs.as_deref().unwrap_or_default(),
    );
    match transcript::reconcile_transcripts(ot, tt, tr.base.as_deref(), None, find_doc) {
        Ok(r) => reconciled_transcript(&r.conflicts, r.transcript),
        Err(e) => keep_ours(
            vec![format!(
                "transcripts not reconciled ({e}); transcript left as ours"
            )],
            e.removes_base_records,
        ),
    }
}

/// A reconciled transcript with `conflicts`; `content` is the merged
/// transcript (or, from [`streamed`], what to append to ours).
fn reconciled_transcript(conflicts: &[OpConflict], content: Vec<u8>) -> FileMerge {
    FileMerge {
        clean: conflicts.is_empty(),
        messages: (conflicts.iter())
            .map(|c| format!("conflict: {}", c.describe()))
            .collect(),
        content,
        method: "reconciled",
        resolved_by_recording: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use noma_merge::test_support::{body, extend, BASE};

    #[test]
    fn the_prefix_ending_at_a_state_is_the_base_transcript() {
        let (d1, t1) = extend(BASE, b"", &[body("a", "A1")]);
        let (d2, t2) = extend(&d1, &t1, &[body("b", "B1")]);
        let (_, t3) = extend(&d2, &t2, &[body("a", "A2")]);
        let sha = |d: &str| sha256_hex(d.as_bytes());
        assert_eq!(prefix_ending_at(&t3, &sha(&d2)), Some(t2.as_slice()));
        assert_eq!(prefix_ending_at(&t3, &sha(&d1)), Some(t1.as_slice()));
        assert_eq!(prefix_ending_at(&t3, &sha(BASE)), Some(&b""[..]));
        assert_eq!(prefix_ending_at(&t3, &sha("elsewhere")), None);
        assert_eq!(prefix_ending_at(b"", &sha(BASE)), None);
    }
}

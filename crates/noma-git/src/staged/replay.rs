//! The new records of a staged transcript replayed: they chain onto the
//! reference's last line and replay from its document (or, for a new
//! transcript, from the blob in the path's history their first state
//! names) to exactly the staged document; what they do not explain is an
//! unrecorded edit. Used by the transcript check ([`super::transcript`]),
//! the merge rules ([`super::merging`]) and the streamed check
//! ([`super::streamed`]).

use super::findings::{block_changes, describe, divergence_finding, tamper_finding};
use super::{Finding, Guard};
use crate::git::repo::GitError;
use crate::git::Oid;
use noma_core::diag::{shell_word, Severity};
use noma_core::doc::hash::sha256_hex;
use noma_core::transcript::{self, replay, split_lines, PatchResult, Record};

/// Checks that `staged_t` extends `prev_t` and that the new records
/// replay from `prev_doc` (or a base found in history) to `staged_doc`.
pub(super) fn verify_tail(
    g: &Guard<'_>,
    paths: [&str; 3],
    prev_t: Option<&[u8]>,
    prev_doc: Option<&str>,
    staged_t: &[u8],
    staged_doc: &str,
) -> Result<Vec<Finding>, GitError> {
    let [path, head_path, tpath] = paths;
    let head_t = noma_core::transcript::transcript_path(head_path);
    let at_head = |p: &str| {
        g.head
            .is_some_and(|h| g.repo.blob_id_at(h, p).ok().flatten().is_some())
    };
    // Advice restores from where HEAD has the transcript.
    let head_t = if head_t != tpath && !at_head(tpath) && at_head(&head_t) {
        head_t.as_str()
    } else {
        tpath
    };
    let tail = match new_records([path, tpath, head_t], prev_t.unwrap_or_default(), staged_t) {
        Ok(t) => t,
        Err(f) => return Ok(vec![*f]),
    };
    match verify_new(g, paths, &tail, prev_t.is_some(), prev_doc, staged_doc)? {
        Tail::Checked(findings) => Ok(findings),
        Tail::Diverged {
            finding,
            first_pre,
            base_is_first_pre,
        } => {
            let off_the_committed_doc = || {
                prev_t.and_then(crate::merge::final_state).as_deref() == Some(first_pre.as_str())
                    && !base_is_first_pre
            };
            if prev_doc.is_some() && off_the_committed_doc() {
                // The previous commit holds a document its transcript does not
                // end at (a rebase, which runs no hooks, merged it block by
                // block), and the new records go on from where the transcript
                // ends (`noma record`, as the merge driver advised): the whole
                // transcript must replay to the staged document, from its base
                // in history. Only this failure pays for the second replay.
                return verify_tail(g, paths, None, None, staged_t, staged_doc);
            }
            Ok(vec![finding])
        }
    }
}

/// Checks that the records `tail` adds (to a committed transcript when
/// `has_prev`) replay from `prev_doc` (or a base found in history) to
/// `staged_doc`.
pub(super) fn verify_new(
    g: &Guard<'_>,
    paths: [&str; 3],
    tail: &NewRecords<'_>,
    has_prev: bool,
    prev_doc: Option<&str>,
    staged_doc: &str,
) -> Result<Tail, GitError> {
    let [path, head_path, tpath] = paths;
    if let Some(f) = extension_op_finding(g, path, tpath, &tail.records) {
        return Ok(Tail::Checked(vec![f]));
    }
    let applied: Vec<&(usize, Record)> = tail
        .records
        .iter()
        .filter(|(_, r)| r.patch_result == PatchResult::Applied)
        .collect();
    let (Some((first_line, first)), Some((_, last))) = (applied.first(), applied.last()) else {
        // No new applied record: the document must be what it was.
        return Ok(Tail::Checked(match prev_doc {
            Some(before) if before != staged_doc => {
                vec![unrecorded(g, path, before, staged_doc, tpath)]
            }
            _ => Vec::new(),
        }));
    };
    let base: Option<String> = match prev_doc {
        Some(d) if has_prev => Some(d.to_string()),
        _ => find_base(g, head_path, &first.pre_sha256, prev_doc)?,
    };
    let Some(base) = base else {
        return Ok(Tail::Checked(base_unknown(
            g,
            [path, tpath],
            (*first_line, &first.pre_sha256),
            &last.post_sha256,
            !has_prev,
            staged_doc,
        )));
    };
    let after = tail
        .prev_last
        .as_deref()
        .map(|prev_line_sha256| replay::Continuation {
            prev_line_sha256,
            lines_before: tail.offset,
        });
    let rep = replay::replay_after(after, tail.bytes, Some(&base), staged_doc);
    Ok(match rep.divergence {
        None => Tail::Checked(Vec::new()),
        Some(d) => Tail::Diverged {
            finding: divergence_finding([path, tpath], d, prev_doc == Some(staged_doc)),
            first_pre: first.pre_sha256.clone(),
            base_is_first_pre: sha256_hex(base.as_bytes()) == first.pre_sha256,
        },
    })
}
/// With `record_text_edits: false`, a new record carrying the
/// extension op blocks the commit.
fn extension_op_finding(
    g: &Guard<'_>,
    path: &str,
    tpath: &str,
    records: &[(usize, Record)],
) -> Option<Finding> {
    if g.policy.file.record_text_edits {
        return None;
    }
    let (line, _) = records
        .iter()
        .find(|(_, r)| noma_core::patch::op_name(&r.op) == Some(noma_core::patch::REPLACE_LINES))?;
    Some(
        Finding::error(
            "transcript-extension-op",
            tpath,
            Some(*line),
            format!(
                "a new record uses the extension op {}, which {} forbids (record_text_edits: false)",
                noma_core::patch::REPLACE_LINES,
                noma_provenance::config::CONFIG_PATH
            ),
        )
        .fix(format!(
            "git restore --staged --worktree --source=HEAD {path_sh} {tpath_sh}, then make the edit inside directives (`noma patch --inplace`, or hand edits `noma record` can express as v1.0 block ops)",
            path_sh = shell_word(path),
            tpath_sh = shell_word(tpath),
        )),
    )
}

/// No version of the document, under any name, has the first new
/// record's pre_sha256: the transcript can never replay, so the commit
/// is blocked with the fix, except in a shallow clone, where the
/// version may lie beyond the cut (a warning there, an error under
/// `strict`); only the final hash is compared with the staged document.
fn base_unknown(
    g: &Guard<'_>,
    [path, tpath]: [&str; 2],
    (first_line, first_pre): (usize, &str),
    last_post: &str,
    new_transcript: bool,
    staged_doc: &str,
) -> Vec<Finding> {
    let mut w = Finding::error(
        "transcript-base-unknown",
        tpath,
        Some(first_line),
        format!(
            "cannot replay: no version of any document in the history has sha256 {first_pre} (the first applied record's pre_sha256){}",
            g.repo.shallow_note()
        ),
    );
    if !g.repo.shallow_note().is_empty() {
        w.severity = Severity::Warning;
        w.blocking = g.policy.file.strict;
    }
    if new_transcript {
        // A new transcript that starts at a never-committed state (made
        // by a tool that writes no genesis record, or copied in): start
        // it over with a genesis record (the old one is kept aside).
        w.message.push_str(
            "; start it over from the document as it is now (the old transcript is kept aside)",
        );
        w = w.fix(format!(
            "mv {tpath_sh} {old_sh} && noma record {path_sh} && git add {tpath_sh}",
            tpath_sh = shell_word(tpath),
            old_sh = shell_word(&format!("{tpath}.old")),
            path_sh = shell_word(path)
        ));
    }
    let mut out = vec![w];
    if last_post != sha256_hex(staged_doc.as_bytes()) {
        out.push(
            Finding::error(
                "unrecorded-edit",
                path,
                None,
                "the document differs from the state its transcript ends at".into(),
            )
            .fix(format!(
                "noma record {path_sh} && git add {path_sh} {tpath_sh}",
                path_sh = shell_word(path),
                tpath_sh = shell_word(tpath)
            )),
        );
    }
    out
}

/// The text whose sha256 is `sha`: the HEAD document, else the first
/// matching version in the path's history.
fn find_base(
    g: &Guard<'_>,
    path: &str,
    sha: &str,
    head_doc: Option<&str>,
) -> Result<Option<String>, GitError> {
    if sha == noma_core::doc::hash::EMPTY_SHA256 {
        // A genesis record: the transcript starts from no bytes.
        return Ok(Some(String::new()));
    }
    if let Some(d) = head_doc {
        // A sha256 comparison needs no parse: hash the bytes directly.
        if sha256_hex(d.as_bytes()) == sha {
            return Ok(Some(d.to_string()));
        }
    }
    // By content: the version may have lived under another name
    // (a rename, a copy) or in a merged branch.
    let starts: Vec<Oid> = [g.repo.head_commit(), g.repo.merge_head()]
        .into_iter()
        .flatten()
        .collect();
    let found = g.repo.find_document(&starts, &[path], sha)?;
    Ok(found.and_then(|b| String::from_utf8(b).ok()))
}

/// The finding for a document that differs from `before`, the state
/// its transcript ends at: the blocks that changed, or only the line
/// endings it was saved with (which are named as such: compared by its
/// lines, an editor's CRLF save changes every block).
fn unrecorded(g: &Guard<'_>, path: &str, before: &str, after: &str, tpath: &str) -> Finding {
    let path_sh = shell_word(path);
    let resaved = noma_core::doc::lines::with_line_endings_of(before, after);
    let eol_note = resaved
        .as_ref()
        .map(|(saved, _)| (saved.name(), saved.other().name()));
    if let (Some((_, back)), Some((saved, recorded))) = (&resaved, eol_note) {
        if back == before {
            // Not an edit: an editor's save, or a checkout before the
            // -text rules. `noma record` gives the recorded ones back.
            return Finding::error(
                "line-endings-converted",
                path,
                None,
                format!("the staged document is the state its transcript ends at with {saved} line endings instead of {recorded}, and nothing else changed: an editor saved it so, or a checkout converted it (core.autocrlf) before the `-text` rules kept documents byte-exact; committing it would change every line"),
            )
            .fix(format!("noma record {path_sh} && git add {path_sh}"));
        }
    }
    let edited = resaved.as_ref().map_or(after, |(_, t)| t.as_str());
    let a = g.cache.doc_info(before);
    let b = g.cache.doc_info(edited);
    let (blocks, line) = block_changes(&a.blocks, &b.blocks);
    let mut message = format!("changed outside its transcript: {}", describe(&blocks));
    if let Some((saved, recorded)) = eol_note {
        message.push_str(&format!(
            "; and saved with {saved} line endings where its transcript's state has {recorded} (every line's bytes differ; `noma record` records only the blocks named and gives the file back its {recorded})"
        ));
    }
    Finding::error("unrecorded-edit", path, line, message).fix(format!(
        "noma record {path_sh} && git add {path_sh} {tpath_sh}",
        tpath_sh = shell_word(tpath)
    ))
}

/// What [`verify_new`] found.
pub(super) enum Tail {
    /// The findings (none: the new records replay to the staged document).
    Checked(Vec<Finding>),
    /// The replay of the new records diverged.
    Diverged {
        /// Its finding.
        finding: Finding,
        /// The first new applied record's pre_sha256.
        first_pre: String,
        /// The base replay started from has that sha256.
        base_is_first_pre: bool,
    },
}

/// The records a staged transcript adds to the committed one.
pub(super) struct NewRecords<'t> {
    /// The added bytes.
    bytes: &'t [u8],
    /// Lines of the committed transcript before them.
    offset: usize,
    /// sha256 of the committed transcript's last line.
    prev_last: Option<String>,
    /// The added records with their line numbers in the file.
    records: Vec<(usize, Record)>,
}

/// Reads the records `staged_t` appends to `prev`, or the one finding that
/// stops the check: a rewritten committed line, a torn last line, an
/// unreadable record, a broken chain. Lines are the file's (the chain is
/// checked here rather than left to replay, which counts from the first
/// new record).
fn new_records<'t>(
    [path, tpath, head_tpath]: [&str; 3],
    prev: &[u8],
    staged_t: &'t [u8],
) -> Result<NewRecords<'t>, Box<Finding>> {
    let Some(bytes) = staged_t.strip_prefix(prev) else {
        return Err(Box::new(tamper_finding(
            path,
            [tpath, head_tpath],
            prev,
            staged_t,
        )));
    };
    let (prev_lines, _) = split_lines(prev);
    let prev_last = prev_lines.last().map(|l| sha256_hex(l.raw));
    tail_records(path, tpath, prev_lines.len(), prev_last, bytes)
}

/// The records in `bytes`, appended after `offset` committed lines whose
/// last line has sha256 `prev_last`, or the one finding that stops the
/// check (see [`new_records`]).
pub(super) fn tail_records<'t>(
    path: &str,
    tpath: &str,
    offset: usize,
    prev_last: Option<String>,
    bytes: &'t [u8],
) -> Result<NewRecords<'t>, Box<Finding>> {
    let (lines, torn) = split_lines(bytes);
    if torn.is_some() {
        return Err(Box::new(Finding::error(
            "transcript-torn",
            tpath,
            Some(offset + lines.len() + 1),
            "the last line has no newline (an interrupted append)".into(),
        )
        .fix(format!(
            "noma repair {path_sh} && git add {tpath_sh} (the torn bytes are moved to {tpath}.torn)",
            path_sh = shell_word(path),
            tpath_sh = shell_word(tpath),
        ))));
    }
    let mut records: Vec<(usize, Record)> = Vec::with_capacity(lines.len());
    let mut prev_sha = prev_last.clone();
    for l in &lines {
        let line = offset + l.number;
        let rec = transcript::parse_record(line, l.raw).map_err(|e| {
            Box::new(Finding::error(
                "transcript-invalid",
                tpath,
                Some(e.line()),
                e.to_string(),
            ))
        })?;
        if let (Some(claimed), Some(actual)) = (&rec.prev_entry_sha256, &prev_sha) {
            if claimed != actual {
                let what = if line == offset + 1 {
                    format!("line {offset} of the committed transcript")
                } else {
                    format!("line {}", line - 1)
                };
                return Err(Box::new(Finding::error(
                    "transcript-tampered",
                    tpath,
                    Some(line),
                    format!(
                        "prev_entry_sha256 does not chain onto {what} (a line was changed, removed or inserted)"
                    ),
                )
                .fix(format!(
                    "git restore --staged --worktree --source=HEAD {path_sh} {tpath_sh}, then redo the edits with `noma patch --inplace`",
                    path_sh = shell_word(path),
                    tpath_sh = shell_word(tpath),
                ))));
            }
        }
        prev_sha = Some(sha256_hex(l.raw));
        records.push((line, rec));
    }
    Ok(NewRecords {
        bytes,
        offset,
        prev_last,
        records,
    })
}

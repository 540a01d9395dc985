//! What the hooks report: [`Finding`], the [`Report`] of a run, and the
//! findings the checks share, built from what was found (no repository
//! read here).

use std::collections::HashMap;

use serde::Serialize;

use noma_core::diag::{shell_word, Severity};
use noma_core::transcript::{self, replay, split_lines, Record};
use noma_merge::joined;

/// One problem found by a hook.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// `error` or `warning`.
    pub severity: Severity,
    /// Whether this finding blocks the commit.
    pub blocking: bool,
    /// Machine-readable code (validator rule code or a guard code).
    pub code: String,
    /// Repository-relative path of the file concerned.
    pub path: String,
    /// 1-based line in that file, when one applies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// 1-based column on that line (validator findings; 1 when only the
    /// line is known).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Finding {
    pub(super) fn error(code: &str, path: &str, line: Option<usize>, message: String) -> Finding {
        Finding {
            severity: Severity::Error,
            blocking: true,
            code: code.to_string(),
            path: path.to_string(),
            line,
            column: None,
            message,
            fix: None,
        }
    }

    pub(super) fn fix(mut self, hint: impl Into<String>) -> Finding {
        self.fix = Some(hint.into());
        self
    }

    /// The one-line human form, `noma check`'s ([`noma_core::diag::human_line`]):
    /// `ERROR [code] path:line:col: message (fix: hint)`.
    pub fn to_line(&self) -> String {
        let clamp = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        let mut d = noma_core::diag::Diagnostic::new(self.severity, &self.code, &self.message);
        d.pos = self.line.map(|l| noma_core::diag::Pos {
            line: clamp(l),
            column: clamp(self.column.unwrap_or(1)),
        });
        let mut out = noma_core::diag::human_line(&self.path, &d);
        if let Some(f) = &self.fix {
            out.push_str(&format!(" (fix: {f})"));
        }
        out
    }
}

/// The result of one hook run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    /// Which hook ran (`pre-commit`, `pre-merge-commit`).
    pub hook: String,
    /// Documents checked.
    pub documents: usize,
    /// Transcripts verified.
    pub transcripts: usize,
    /// Every finding, in path order.
    pub findings: Vec<Finding>,
    /// True when a finding blocks the commit.
    pub blocked: bool,
}

/// The finding for a replay of new records that diverged.
/// `unstaged`: the document in the index is unchanged from HEAD.
pub(super) fn divergence_finding(
    [path, tpath]: [&str; 2],
    d: replay::Divergence,
    unstaged: bool,
) -> Finding {
    // Lines are the file's: replay_after counts the committed ones.
    let line = (d.line > 0).then_some(d.line);
    let final_state = d.op_id.is_none() && d.expected_sha256.is_some();
    if final_state && unstaged {
        // New records, yet the document in the index is unchanged: the
        // edit they made was not staged (`noma record` would find nothing
        // to record), or it was discarded (`git restore`) and its records
        // must go too. The hook reads only the index, so it names both.
        return Finding::error(
            "unrecorded-edit",
            path,
            None,
            format!(
                "{tpath} has new records but the staged document lacks their change; \
                 if you discarded that change on purpose, drop the records too: \
                 git restore --staged --worktree --source=HEAD {tpath_sh}",
                tpath_sh = shell_word(tpath)
            ),
        )
        .fix(format!("git add {path_sh}", path_sh = shell_word(path)));
    }
    if final_state {
        // The replayed final state is not the staged document.
        let blocks: Vec<String> = d
            .blocks
            .iter()
            .map(|b| format!("{} ({})", b.id, b.change))
            .collect();
        return Finding::error(
            "unrecorded-edit",
            path,
            None,
            format!(
                "changed outside its transcript (after {tpath} line {}): {}",
                line.unwrap_or(0),
                describe(&blocks)
            ),
        )
        .fix(format!(
            "noma record {path_sh} && git add {path_sh} {tpath_sh}",
            path_sh = shell_word(path),
            tpath_sh = shell_word(tpath)
        ));
    }
    if d.message.contains("pre_sha256 is not the replayed state") {
        // `noma record` only appends: it cannot explain an edit that sits
        // between two records.
        return Finding::error("unrecorded-edit", tpath, line, d.message).fix(format!(
            "git restore --staged --worktree --source=HEAD {path_sh} {tpath_sh}, then redo the edits with `noma patch --inplace` (hand edits: `noma record` before the next patch)",
            path_sh = shell_word(path),
            tpath_sh = shell_word(tpath),
        ));
    }
    Finding::error("transcript-replay", tpath, line, d.message)
}

/// A transcript the reference commit has but the index lacks, while the
/// document stays: moved without it, or deleted.
pub(super) fn removed_transcript_finding(
    [path, head_path]: [&str; 2],
    [tpath, head_tpath]: [&str; 2],
) -> Finding {
    let (msg, fix) = if head_path != path {
        (
            format!("the document moved from {head_path} but its transcript {head_tpath} did not move along"),
            format!("git mv {head_tpath_sh} {tpath_sh}",
            head_tpath_sh = shell_word(head_tpath),
            tpath_sh = shell_word(tpath),
        ),
        )
    } else {
        (
            "the transcript is deleted while the document remains (transcripts are append-only)"
                .to_string(),
            format!(
                "git restore --staged --worktree --source=HEAD {tpath_sh}",
                tpath_sh = shell_word(tpath),
            ),
        )
    };
    Finding::error("transcript-removed", tpath, None, msg).fix(fix)
}

/// A document without a transcript where the policy requires one.
pub(super) fn missing_transcript_finding(path: &str, tpath: &str) -> Finding {
    Finding::error(
        "transcript-missing",
        path,
        None,
        format!("the policy requires a transcript ({tpath}) for this document; `noma record` starts one with a genesis record"),
    )
    // A genesis record makes the transcript replay from its own content,
    // with or without a committed base.
    .fix(format!(
        "noma record {path_sh} && git add {path_sh} {tpath_sh}",
        path_sh = shell_word(path),
        tpath_sh = shell_word(tpath),
    ))
}

/// A staged file over the size cap every noma read applies
/// (`NOMA_MAX_FILE_BYTES`): committed, no patch or replay could read it.
pub(super) fn too_large(path: &str, len: usize) -> Option<Finding> {
    let cap = noma_store::fsio::max_file_bytes();
    (len as u64 > cap).then(|| {
        Finding::error(
            "file-too-large",
            path,
            None,
            format!(
                "staged at {len} bytes, over the {cap}-byte limit noma reads files up to: once committed, no patch, record or replay could read it; raise {} for every noma run, or split the document",
                noma_store::fsio::MAX_FILE_BYTES_ENV
            ),
        )
    })
}

/// The changed blocks for a message: the first ten, then how many more.
pub(super) fn describe(blocks: &[String]) -> String {
    if blocks.is_empty() {
        return "no addressable block differs (the change is outside any block with an id)".into();
    }
    let shown: Vec<&str> = blocks.iter().take(10).map(String::as_str).collect();
    let more = blocks.len().saturating_sub(shown.len());
    let mut s = format!("blocks {}", shown.join(", "));
    if more > 0 {
        s.push_str(&format!(" and {more} more"));
    }
    s
}

/// Blocks that differ between two block tables ("id (changed|added|removed)")
/// and the first line of the first one in the new text.
pub(super) fn block_changes(
    before: &[noma_core::doc::hash::BlockHash],
    after: &[noma_core::doc::hash::BlockHash],
) -> (Vec<String>, Option<usize>) {
    let old: HashMap<&str, &str> = before
        .iter()
        .map(|b| (b.id.as_str(), b.sha256.as_str()))
        .collect();
    let new: HashMap<&str, &str> = after
        .iter()
        .map(|b| (b.id.as_str(), b.sha256.as_str()))
        .collect();
    let mut out = Vec::new();
    let mut line = None;
    // Innermost blocks are the useful ones: skip a block when a later block
    // (a descendant, in pre-order) also changed under it.
    for b in after {
        let change = match old.get(b.id.as_str()) {
            Some(sha) if *sha == b.sha256 => continue,
            Some(_) => "changed",
            None => "added",
        };
        let has_changed_child = after.iter().any(|c| {
            c.parent.as_deref() == Some(b.id.as_str())
                && old.get(c.id.as_str()).is_none_or(|s| *s != c.sha256)
        });
        if has_changed_child && change == "changed" {
            continue;
        }
        line.get_or_insert(b.lines[0] as usize);
        out.push(format!("{} ({change}, line {})", b.id, b.lines[0]));
    }
    for b in before {
        if !new.contains_key(b.id.as_str()) {
            out.push(format!("{} (removed)", b.id));
        }
    }
    (out, line)
}

/// A document or transcript staged as a symlink. Refused rather than
/// followed: git stores a link as its target path, so the hooks, the
/// merge driver and every clone would see a path where the bytes the
/// transcript hashes should be (and on Windows checkouts without symlink
/// support the link becomes a small text file).
pub(super) fn symlink_finding(path: &str, target: &[u8]) -> Finding {
    let target = String::from_utf8_lossy(target);
    Finding::error(
        "symlinked-document",
        path,
        None,
        format!(
            "staged as a symlink to {target}; noma documents and transcripts must be regular files"
        ),
    )
    .fix(format!(
        "commit the file itself: git rm --cached {path_sh}, then commit {target} (or copy it over the link and git add {path_sh})",
        path_sh = shell_word(path),
    ))
}

/// Names the first line where `staged` stops repeating `committed`;
/// `head_tpath` is where HEAD holds the committed transcript (the staged
/// path, or the old one of a document moved since).
pub(super) fn tamper_finding(
    path: &str,
    [tpath, head_tpath]: [&str; 2],
    committed: &[u8],
    staged: &[u8],
) -> Finding {
    let (a, _) = split_lines(committed);
    let (b, _) = split_lines(staged);
    let mut line = a.len() + 1;
    let mut removed = true;
    for (i, l) in a.iter().enumerate() {
        match b.get(i) {
            Some(m) if m.raw == l.raw => {}
            other => {
                line = i + 1;
                removed = other.is_none();
                break;
            }
        }
    }
    if line > a.len() {
        // Every complete line matches: the committed torn tail was changed.
        removed = false;
    }
    let what = if removed {
        "was removed"
    } else {
        "was rewritten"
    };
    // Keeping the staged document (an older version, or another branch's,
    // checked out with its transcript) is an edit like any other: the
    // committed transcript comes back and the change is recorded on top.
    let restore = if head_tpath == tpath {
        format!(
            "git restore --staged --worktree --source=HEAD {}",
            shell_word(tpath)
        )
    } else {
        // HEAD has no file at the staged path to restore from.
        format!(
            "git show HEAD:{} > {}",
            shell_word(head_tpath),
            shell_word(tpath)
        )
    };
    let keep = format!(
        "{restore} && noma record {path_sh} && git add {path_sh} {tpath_sh}",
        tpath_sh = shell_word(tpath),
        path_sh = shell_word(path),
    );
    let message = format!("committed transcript line {line} {what}; transcripts are append-only");
    let finding =
        |message: String| Finding::error("transcript-tampered", tpath, Some(line), message);
    if removed {
        // No line of its own: an older transcript, as `git checkout REV --
        // <doc> <transcript>` leaves when undoing edits. Nothing is lost.
        return finding(format!(
            "{message}; to keep the staged document, record its change on top of the committed transcript"
        ))
        .fix(keep);
    }
    finding(format!(
        "{message}; if the staged document is what you want (taken from another branch or commit), record its change instead: {keep}"
    ))
    .fix(format!(
        "restore the committed lines (git show HEAD:{tpath_sh}) and append new records only",
        tpath_sh = shell_word(head_tpath),
    ))
}

/// The finding for a staged transcript whose records two branches joined
/// line by line ([`joined`]).
pub(super) fn joined_finding(path: &str, tpath: &str, join: joined::Join) -> Finding {
    Finding::error(
        "transcript-joined",
        tpath,
        Some(join.second_line),
        format!(
            "the records from line {} on are another branch's, joined after this branch's: a merge without noma's merge driver (a clone where `noma hooks install` never ran, a web conflict editor) kept both sides, and the transcript no longer replays; `noma repair` rebases them as the driver would have",
            join.second_line
        ),
    )
    .fix(format!(
        "noma repair {path_sh} && noma record {path_sh} && git add {path_sh} {tpath_sh}",
        path_sh = shell_word(path),
        tpath_sh = shell_word(tpath),
    ))
}

/// Describes a fork: the records after the common prefix on each side.
pub(super) fn fork_finding(tpath: &str, base: &[u8], ours: &[u8], theirs: &[u8]) -> Finding {
    let (base_lines, _) = split_lines(base);
    let at = base_lines.len();
    let side = |t: &[u8]| -> String {
        let (lines, _) = split_lines(t);
        let new: Vec<Record> = lines
            .iter()
            .skip(at)
            .filter_map(|l| transcript::parse_record(l.number, l.raw).ok())
            .collect();
        match new.first() {
            Some(r) => format!(
                "{} record(s) from line {} (first op_id {}, {} from pre_sha256 {})",
                new.len(),
                at + 1,
                r.op_id,
                r.op_name(),
                transcript::short_sha(&r.pre_sha256)
            ),
            None => "no readable records".into(),
        }
    };
    Finding::error(
        "transcript-fork",
        tpath,
        Some(at + 1),
        format!(
            "both parents appended records after line {at} of the common transcript, claiming the same prior state: HEAD has {}; MERGE_HEAD has {}",
            side(ours),
            side(theirs)
        ),
    )
    .fix("keep one side's transcript, re-apply the other side's ops on top with `noma patch --inplace` (or `noma record`), and stage the linear result")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::BlockCache;

    #[test]
    fn tamper_names_rewritten_and_removed_lines() {
        let f = tamper_finding("d", ["t", "t"], b"a\nb\nc\n", b"a\nX\nc\nd\n");
        assert_eq!(f.line, Some(2));
        assert!(f.message.contains("rewritten"));
        let f = tamper_finding("d", ["t", "t"], b"a\nb\nc\n", b"a\nb\n");
        assert_eq!(f.line, Some(3));
        assert!(f.message.contains("removed"));
        // A moved transcript is restored from HEAD's path, never the new one.
        let f = tamper_finding("n", ["n.patches", "o.patches"], b"a\nb\n", b"a\nX\n");
        let fix = f.fix.unwrap_or_default();
        assert!(fix.contains("HEAD:\"o.patches\""), "{fix}");
        assert!(!f.message.contains("--source=HEAD"), "{}", f.message);
        assert!(
            f.message
                .contains("git show HEAD:\"o.patches\" > \"n.patches\""),
            "{}",
            f.message
        );
    }

    #[test]
    fn finding_line_format() {
        let f = Finding::error("x-y", "d.noma", Some(3), "bad".into()).fix("do it");
        assert_eq!(f.to_line(), "ERROR [x-y] d.noma:3:1: bad (fix: do it)");
        let mut w = Finding::error("w", "d.noma", None, "meh".into());
        w.severity = Severity::Warning;
        assert_eq!(w.to_line(), "WARNING [w] d.noma: meh");
    }

    #[test]
    fn block_changes_prefer_innermost() {
        let a = "# A\n\n::note{id=\"n\"}\nold\n::\n\n::note{id=\"gone\"}\nx\n::\n";
        let b = "# A\n\n::note{id=\"n\"}\nnew\n::\n";
        let c = BlockCache::disabled();
        let (list, line) = block_changes(&c.doc_info(a).blocks, &c.doc_info(b).blocks);
        assert_eq!(line, Some(3));
        assert_eq!(list.len(), 2, "{list:?}");
        assert!(list[0].starts_with("n (changed"));
        assert_eq!(list[1], "gone (removed)");
    }
}

//! The succession rule: when one transcript is a legitimate successor of
//! another (documented for users in `.noma/branches.noma`).
//!
//! Git moves a transcript between branches in ways that are not plain
//! appends: the merge driver rebases one side's records onto the other's
//! final state as *reconciled copies*, a branch updated from main carries
//! copies of main's records, a fast-forward or a rebase replaces one
//! side's tail by the other's. All of these keep every op exactly once, so
//! the rule is stated on ops, not on bytes:
//!
//! `new` succeeds `old` when
//!
//! 1. no origin occurs twice among `new`'s records (an op applied twice is
//!    what a textual union of two forks looks like);
//! 2. every record of `old` after the two transcripts' longest common line
//!    prefix is still in `new` after it, as the same op: a record with the
//!    same *origin*, the same `patch_result` (or a copy that applied
//!    nothing on either side: an op of the other side that conflicted in
//!    a merge, kept but not applied, or that found its effect already in
//!    the state (a no-op), stands for its op whether the other line
//!    applied it or not) and the same op (its
//!    `baseHash`, and an `add_block` `position`, may be recomputed, and a
//!    copy may name a block by the id the other side renamed it to), but
//!    never the same `op_id` on different bytes (that is a committed line
//!    edited or moved). A genesis record opening `old` may be missing when
//!    `new` shares no line with `old` and starts at the state the genesis
//!    writes ([`start_state`]);
//! 3. `new` replays: it chains line to line, its op ids are unique and
//!    every record starts from the replayed state, from the state where
//!    the common prefix ends to `new`'s document (the caller provides
//!    document versions by sha256).
//!
//! The *origin* of a record is its own `op_id`, or for a reconciled copy
//! the `op_id` of the record it copies. A copy is recognised by its id:
//! [`copy_id`] derives it from the origin, the copy's `pre_sha256` and,
//! for a copy that was not applied, its result, and its `parent_op_id` is
//! the origin (a copy of a copy names the first
//! original, so identity survives any number of merges). A `parent_op_id`
//! an actor set by hand is a causal link, not a copy, and is not followed.
//! Copies written before this rule are recognised by their `reason`.
//!
//! When `old` is a byte prefix of `new` (the everyday append) only 1 and 3
//! have anything to check.
//!
//! [`check`] runs each rule as its own function, in this order: a doubled
//! op or an edited or dropped line also breaks the replay, and is reported
//! by the rule that names it rather than as a bare divergence; the replay,
//! the costly rule, runs last.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use noma_core::doc::hash::sha256_hex;
use noma_core::transcript::replay::{self, Continuation};
use noma_core::transcript::{parse_record, split_lines, PatchResult, RawLine, Record};

/// The op id of a reconciled copy of the record `origin`, re-applied onto
/// the state whose sha256 is `pre_sha256` with `result` (a UUID, v4
/// layout). Deriving it from the state rather than from the merge makes a
/// merge, a rebase and a cherry-pick of the same records write the same
/// bytes. The state alone does not decide whether the copy applies: a
/// copy is rejected when it clashes with the receiving side's own ops,
/// which two lines may reach the same state by. So a rejected copy's id
/// also names its result, and two lines that copied one op onto one state
/// with different outcomes never hold one op_id on different bytes (an
/// applied or no-op copy keeps the id it always had).
pub(crate) fn copy_id(origin: &str, pre_sha256: &str, result: PatchResult) -> String {
    match result {
        PatchResult::Rejected => derived_uuid(&["noma-reconcile", origin, pre_sha256, "rejected"]),
        _ => derived_uuid(&["noma-reconcile", origin, pre_sha256]),
    }
}

/// A UUID (v4 layout) from the sha256 of `parts` joined by newlines.
pub(crate) fn derived_uuid(parts: &[&str]) -> String {
    let digest = sha256_hex(parts.join("\n").as_bytes());
    let mut bytes = [0u8; 16];
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = digest
            .get(i * 2..i * 2 + 2)
            .and_then(|h| u8::from_str_radix(h, 16).ok())
            .unwrap_or(0);
    }
    uuid::Builder::from_random_bytes(bytes)
        .into_uuid()
        .to_string()
}

/// Whether `r` is a reconciled copy of the record its `parent_op_id` names.
pub fn is_copy(r: &Record) -> bool {
    let Some(p) = r.parent_op_id.as_deref() else {
        return false;
    };
    r.op_id == copy_id(p, &r.pre_sha256, r.patch_result)
        // A rejected copy written before its id named its result.
        || r.op_id == copy_id(p, &r.pre_sha256, PatchResult::Applied)
        || r.reason.as_deref().is_some_and(|why| {
            why.starts_with(&format!("reconciled: op {p} from the merged branch"))
        })
}

/// The op a record stands for: its own id, or the original's for a copy.
pub fn origin(r: &Record) -> &str {
    match r.parent_op_id.as_deref() {
        Some(p) if is_copy(r) => p,
        _ => &r.op_id,
    }
}

/// The state a genesis record writes, when `r` is one: an applied record
/// from the empty document (what `noma record` starts a transcript with).
pub(crate) fn genesis_state(r: &Record) -> Option<&str> {
    (r.patch_result == noma_core::transcript::PatchResult::Applied
        && r.pre_sha256 == noma_core::doc::hash::EMPTY_SHA256)
        .then_some(r.post_sha256.as_str())
}

/// The document state a transcript's records start from, a genesis record
/// counting as a start at the state it writes: a transcript that opens
/// with a genesis writing S and one whose first op applies to S (an
/// agent's first patch of a committed document) start at the same place.
pub fn start_state(records: &[Record]) -> Option<&str> {
    let first = records
        .iter()
        .find(|r| r.patch_result == noma_core::transcript::PatchResult::Applied)?;
    Some(genesis_state(first).unwrap_or(first.pre_sha256.as_str()))
}

/// Why a transcript is not a successor of another.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Violation {
    /// `rewritten`, `removed`, `duplicated`, `replay`, `base-unknown` or
    /// `unreadable`.
    pub kind: &'static str,
    /// 1-based line concerned (of `old` for rewritten/removed, else of `new`).
    pub line: usize,
    /// What is wrong, for humans.
    pub message: String,
}

/// How `new` succeeds `old`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Succession {
    /// Lines the two transcripts share from the start.
    pub common_lines: usize,
    /// `old` is a byte prefix of `new` (a plain append).
    pub appends: bool,
}

fn violation(kind: &'static str, line: usize, message: String) -> Violation {
    Violation {
        kind,
        line,
        message,
    }
}

/// The op without what a rebase may recompute: its `baseHash`, and an
/// `add_block`'s `position` (see [`crate::transcript`]).
fn op_key(op: &Value) -> Value {
    let add_block = noma_core::patch::op_name(op) == Some("add_block");
    let mut op = op.clone();
    if let Some(o) = op.as_object_mut() {
        o.remove("baseHash");
        if add_block {
            o.remove("position");
        }
    }
    op
}

/// The op fields that name a block by id: a reconciled copy may name a
/// block by the id the other side renamed it to (see [`crate::transcript`]).
pub(crate) const BLOCK_FIELDS: [&str; 4] = ["id", "parent", "target", "reply_to"];

/// [`op_key`] without the [`BLOCK_FIELDS`].
fn untargeted(op: &Value) -> Value {
    let mut op = op_key(op);
    if let Some(o) = op.as_object_mut() {
        for key in BLOCK_FIELDS {
            o.remove(key);
        }
    }
    op
}

/// Parses every line of a transcript (a torn last line is an error).
pub fn records(t: &[u8]) -> Result<Vec<Record>, Violation> {
    let (lines, torn) = split_lines(t);
    if torn.is_some() {
        return Err(violation(
            "unreadable",
            lines.len() + 1,
            "the transcript ends in a torn line".into(),
        ));
    }
    lines
        .iter()
        .map(|l| {
            parse_record(l.number, l.raw)
                .map_err(|e| violation("unreadable", l.number, e.to_string()))
        })
        .collect()
}

/// Checks that `new` (whose document is `new_doc`) succeeds `old` under
/// the rule in the module docs. `find_doc` returns the document version
/// with a given sha256 (from the repository's history, say).
pub fn check(
    old: &[u8],
    new: &[u8],
    new_doc: &str,
    find_doc: &mut dyn FnMut(&str) -> Option<String>,
) -> Result<Succession, Violation> {
    let (olines, _) = split_lines(old);
    let (nlines, _) = split_lines(new);
    let appends = new.starts_with(old);
    let common = if appends {
        olines.len()
    } else {
        common_lines(&olines, &nlines)
    };
    let orecs = records(old)?;
    let nrecs = records(new)?;
    // In the documented order (see the module docs for why the replay is
    // last).
    no_op_twice(&nrecs)?;
    keeps_every_op(&orecs, &nrecs, common)?;
    replays((new, &nlines), &nrecs, common, new_doc, find_doc)?;
    Ok(Succession {
        common_lines: common,
        appends,
    })
}

/// The lines two transcripts share from the start.
fn common_lines(olines: &[RawLine<'_>], nlines: &[RawLine<'_>]) -> usize {
    olines
        .iter()
        .zip(nlines)
        .take_while(|(a, b)| a.raw == b.raw)
        .count()
}

/// Rule 3: the part of `new` (its lines `nlines`) after the `common` prefix replays, from the
/// state the prefix ends at (or its first applied record starts from) to
/// `new_doc`.
fn replays(
    (new, nlines): (&[u8], &[RawLine<'_>]),
    nrecs: &[Record],
    common: usize,
    new_doc: &str,
    find_doc: &mut dyn FnMut(&str) -> Option<String>,
) -> Result<(), Violation> {
    let applied = |r: &&Record| r.patch_result == noma_core::transcript::PatchResult::Applied;
    let tail = nrecs.get(common..).unwrap_or_default();
    let start = nrecs
        .get(..common)
        .unwrap_or_default()
        .iter()
        .rev()
        .find(applied)
        .map(|r| r.post_sha256.clone())
        .or_else(|| tail.iter().find(applied).map(|r| r.pre_sha256.clone()));
    let base = match &start {
        Some(sha) if sha256_hex(new_doc.as_bytes()) == *sha => Some(new_doc.to_string()),
        Some(sha) => Some(
            find_doc(sha)
                .or_else(|| {
                    // A fork state no commit holds: replayed from the
                    // prefix's start.
                    replay_prefix(nrecs.get(..common).unwrap_or_default(), find_doc)
                        .filter(|d| sha256_hex(d.as_bytes()) == *sha)
                })
                .ok_or_else(|| {
                    violation(
                        "base-unknown",
                        common + 1,
                        format!("cannot replay: no known version of the document has sha256 {sha}"),
                    )
                })?,
        ),
        None => None,
    };
    let anchor = nlines
        .get(..common)
        .and_then(|l| l.last())
        .map(|l| sha256_hex(l.raw));
    let after = anchor.as_deref().map(|prev_line_sha256| Continuation {
        prev_line_sha256,
        lines_before: common,
    });
    let rest = nlines.get(common).map_or(&[][..], |l| &new[l.offset..]);
    let rep = replay::replay_after(after, rest, base.as_deref(), new_doc);
    match rep.divergence {
        Some(d) => Err(violation("replay", d.line, d.message)),
        None => Ok(()),
    }
}

/// Rule 2: every record of `old` after the `common` prefix is still in
/// `new` after it, as the same op, never as the same `op_id` on other
/// bytes; an opening genesis record may go (see [`start_state`]).
fn keeps_every_op(orecs: &[Record], nrecs: &[Record], common: usize) -> Result<(), Violation> {
    let tail = nrecs.get(common..).unwrap_or_default();
    let by_origin: HashMap<&str, &Record> = tail.iter().map(|r| (origin(r), r)).collect();
    let ids: HashSet<&str> = tail.iter().map(|r| r.op_id.as_str()).collect();
    // A genesis record that opens `old` is kept when `new`, sharing no
    // line with it, starts at the state it writes (see [`start_state`]).
    let new_start = start_state(nrecs);
    for (i, r) in orecs.iter().enumerate().skip(common) {
        let line = i + 1;
        if i == 0 && genesis_state(r).is_some() && genesis_state(r) == new_start {
            continue;
        }
        if ids.contains(r.op_id.as_str()) {
            return Err(violation(
                "rewritten",
                line,
                format!("committed transcript line {line} (op {}) was rewritten or moved; transcripts are append-only", r.op_id),
            ));
        }
        let kept = by_origin.get(origin(r)).is_some_and(|n| {
            (n.patch_result == r.patch_result || unapplied_copy(n) || unapplied_copy(r))
                && (op_key(&n.op) == op_key(&r.op)
                    // A copy follows a block the other side renamed.
                    || is_copy(n) && untargeted(&n.op) == untargeted(&r.op))
        });
        if !kept {
            return Err(violation(
                "removed",
                line,
                format!("committed transcript line {line} (op {}) was removed or changed; a successor keeps every op (copies included)", r.op_id),
            ));
        }
    }
    Ok(())
}

/// A copy that applied nothing: rejected (the merge driver's record of an
/// op of the other side that conflicted and was not applied) or a no-op
/// (the op re-applied onto a state that already held its effect, as when
/// both lines resolved a conflict to the same text). It keeps the op (rule
/// 2), whatever its original's result was: the person resolving the
/// conflict records what they keep after it, and a no-op's effect is in
/// the state it replays from. The other way round too: a line that
/// applied the op (its original, or an applied copy from an earlier merge)
/// keeps an older line's unapplied copy of it, which the driver drops as
/// the same origin when the two lines meet.
fn unapplied_copy(n: &Record) -> bool {
    matches!(
        n.patch_result,
        noma_core::transcript::PatchResult::Rejected | noma_core::transcript::PatchResult::Noop
    ) && is_copy(n)
}

/// Rule 1: no origin occurs twice among `new`'s records.
fn no_op_twice(nrecs: &[Record]) -> Result<(), Violation> {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (i, r) in nrecs.iter().enumerate() {
        if let Some(first) = seen.insert(origin(r), i + 1) {
            return Err(violation(
                "duplicated",
                i + 1,
                format!(
                    "line {} repeats op {} already recorded at line {first} (two forks joined line by line?)",
                    i + 1,
                    origin(r)
                ),
            ));
        }
    }
    Ok(())
}

/// The document the common prefix ends at, replayed from where its
/// records start (the empty document for a genesis record, else a version
/// `find_doc` knows): the state where two lines forked need not be in any
/// commit (both sides resolved a conflict in the merge commit that wrote
/// it), while the state the transcript starts from is. `None` when the
/// start is unknown or the prefix does not replay to each record's
/// `post_sha256`.
pub(crate) fn replay_prefix(
    prefix: &[Record],
    find_doc: &mut dyn FnMut(&str) -> Option<String>,
) -> Option<String> {
    let mut applied = prefix
        .iter()
        .filter(|r| r.patch_result == PatchResult::Applied)
        .peekable();
    let first = applied.peek()?;
    let mut text = if first.pre_sha256 == noma_core::doc::hash::EMPTY_SHA256 {
        String::new()
    } else {
        find_doc(&first.pre_sha256)?
    };
    let mut memo = noma_core::doc::ParseMemo::new();
    for r in applied {
        if sha256_hex(text.as_bytes()) != r.pre_sha256 {
            return None;
        }
        text = noma_core::transcript::reapply::reapply(&mut memo, &text, r)
            .ok()?
            .text;
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{body, extend, find, BASE};

    #[test]
    fn derived_ids_are_deterministic_uuids() {
        let a = derived_uuid(&["x", "y"]);
        assert_eq!(a, derived_uuid(&["x", "y"]));
        assert_ne!(a, derived_uuid(&["x", "z"]));
        assert!(uuid::Uuid::parse_str(&a).is_ok());
    }

    #[test]
    fn an_edited_removed_or_reordered_record_is_refused() {
        let (od, ot) = extend(BASE, b"", &[body("a", "A1"), body("b", "B1")]);
        // Edited: the first line's op changed (the chain is then broken too).
        let edited = String::from_utf8(ot.clone())
            .unwrap()
            .replacen("A1", "AX", 1);
        let e = check(&ot, edited.as_bytes(), &od, &mut find).unwrap_err();
        assert_eq!(e.kind, "rewritten", "{e}");
        // Removed: the last record dropped.
        let (lines, _) = split_lines(&ot);
        let first = lines[0].raw.to_vec();
        let e = check(&ot, &first, &od, &mut find).unwrap_err();
        assert_eq!((e.kind, e.line), ("removed", 2), "{e}");
        // Reordered.
        let mut swapped = lines[1].raw.to_vec();
        swapped.extend_from_slice(lines[0].raw);
        let e = check(&ot, &swapped, &od, &mut find).unwrap_err();
        assert_eq!(e.kind, "rewritten", "{e}");
    }
}

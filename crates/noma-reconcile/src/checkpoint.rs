//! `noma reconcile`'s everyday history check without holding a transcript
//! (decision `reconcile-from-a-checkpoint`): the branch appended records to
//! a transcript the base revision left as the merge base had it. The
//! branch's records are replayed from the checkpoint (the merge base's
//! document, which its transcript ends at); what is kept is the appended
//! records, never the history.
//!
//! The answer must be what the whole-file check says ("replays" means
//! what `noma replay` says), so the history before the branch
//! is proved too. The first time, HEAD's whole transcript is replayed once
//! from its first state, a line at a time from the blob, and the state
//! after the history's last line must be the merge base's document: the
//! history replays alone to it and the branch's records replay from it,
//! and every op_id is compared. The block cache
//! remembers the proof by blob id and document sha256; the next check
//! against the same base (the Action's other formats, a rerun, the next
//! push to the branch) replays only the branch's records. The pass that
//! compared the merge base's bytes also built its checkpoint row
//! ([`super::proved`]): later checks read HEAD's blob once, compare its
//! first bytes by the row's digest and look the branch's op_ids up in the
//! row's fingerprints (decision `checkpoint-remembers-a-digest`).
//! Anything this does not accept returns None and the whole-file check
//! runs, which names the cause.
//!
//! When the base revision appended records too, [`branch_replays`] proves
//! the branch's part the same way, and the caller re-applies the base's
//! records from the streams (`super::streamed`).

use crate::cache::BlockCache;
use crate::git::repo::Repo;
use crate::git::Oid;
use noma_core::doc::hash::sha256_hex;
use noma_core::transcript::{parse_record, prefix, replay, split_lines, RawLine};

use super::proved::{Builder, Proved, Tee};

/// A document's transcript blob at the merge base, at HEAD and at the
/// base revision.
#[derive(Debug, Clone, Copy)]
pub(super) struct TranscriptIds {
    pub merge_base: Oid,
    pub head: Oid,
    pub base: Oid,
}

/// The number of records the branch appended, when the base revision did
/// not touch the transcript, HEAD's extends the merge base's, the appended
/// records replay from `mb_doc` to `head_doc`, and the history replays
/// (see the module's doc; `find` finds its first state), with the trees
/// of the two documents the replay built (cold only). None: the
/// whole-file check decides.
///
/// Warm (a checkpoint row for the merge base's blob and document), HEAD's
/// transcript is read once and the merge base's not at all: its first
/// bytes must hash to the remembered digest, and the branch's op_ids must
/// be absent from the remembered fingerprints ([`super::proved`]).
pub(super) fn appended_records(
    (repo, cache): (&Repo, Option<&BlockCache>),
    ids: TranscriptIds,
    docs: [&str; 2],
    find: &mut dyn FnMut(&str) -> Option<String>,
) -> Option<(usize, replay::Trees)> {
    if ids.base != ids.merge_base {
        return None; // the base's records may need re-applying
    }
    if let Some(p) = remembered(cache, ids.merge_base, docs[0]) {
        let ext = p
            .extension_of(&mut repo.blob_stream(ids.head).ok()?)
            .ok()??;
        return branch_proved(&p, &ext, docs).map(|n| (n, replay::Trees::default()));
    }
    // Cold: the two streams side by side, the merge base's bytes also
    // building its checkpoint row.
    let mut builder = Builder::default();
    let ext = {
        let mut committed = Tee {
            inner: repo.blob_stream(ids.merge_base).ok()?,
            builder: &mut builder,
        };
        let mut head = repo.blob_stream(ids.head).ok()?;
        prefix::extension(&mut committed, &mut head).ok()??
    };
    let proved = builder.finish();
    replays_proving((repo, cache), ids, &ext, docs, find, proved.as_ref())
}

/// The branch's record count when HEAD's transcript extends the proved
/// history `p` by `ext`, its records replay from `mb_doc` to `head_doc`,
/// and none may reuse a history op_id.
pub(super) fn branch_proved(p: &Proved, ext: &prefix::Extension, docs: [&str; 2]) -> Option<usize> {
    let lines = tail_replays(ext, docs)?;
    (!reuses_any(&lines, &|op| p.may_hold(op))?).then_some(lines.len())
}

/// The checkpoint row of transcript blob `id` proved to replay to
/// `mb_doc`, when the cache has one.
pub(super) fn remembered(cache: Option<&BlockCache>, id: Oid, mb_doc: &str) -> Option<Proved> {
    let row = cache?.checkpoint_known(id.as_bytes(), &sha256_hex(mb_doc.as_bytes()))?;
    Proved::decode(&row)
}

/// [`appended_records`] once HEAD's transcript is known to extend the
/// merge base's by `ext`, whatever the base revision holds (its records
/// are re-applied by the caller): the branch's record count when they and
/// the history replay, with the trees the replay built (cold only).
pub(super) fn branch_replays(
    store: (&Repo, Option<&BlockCache>),
    ids: TranscriptIds,
    ext: &prefix::Extension,
    docs: [&str; 2],
    find: &mut dyn FnMut(&str) -> Option<String>,
) -> Option<(usize, replay::Trees)> {
    replays_proving(store, ids, ext, docs, find, None)
}

/// The branch's lines in `ext`, when they replay from the merge base's
/// document to HEAD's after the history's last line. None for an empty
/// history: that is where genesis records pair up, not this path.
pub(super) fn tail_replays<'a>(
    ext: &'a prefix::Extension,
    [mb_doc, head_doc]: [&str; 2],
) -> Option<Vec<RawLine<'a>>> {
    let last = ext.last_line_sha256.as_deref()?;
    let after = replay::Continuation {
        prev_line_sha256: last,
        lines_before: ext.lines,
    };
    let r = replay::replay_after(Some(after), &ext.tail, Some(mb_doc), head_doc);
    if r.divergence.is_some() {
        return None;
    }
    Some(split_lines(&ext.tail).0)
}

/// Whether a branch line's op_id may be a history record's (`held`); None
/// when a line is no record.
fn reuses_any(lines: &[RawLine<'_>], held: &dyn Fn(&str) -> bool) -> Option<bool> {
    for l in lines {
        if held(&parse_record(l.number, l.raw).ok()?.op_id) {
            return Some(true); // maybe a reused op_id: the whole check says which
        }
    }
    Some(false)
}

/// [`branch_replays`], remembering `proved` (the merge base's checkpoint
/// row, built as its bytes were compared) once the history is proved.
fn replays_proving(
    (repo, cache): (&Repo, Option<&BlockCache>),
    ids: TranscriptIds,
    ext: &prefix::Extension,
    [mb_doc, head_doc]: [&str; 2],
    find: &mut dyn FnMut(&str) -> Option<String>,
    proved: Option<&Proved>,
) -> Option<(usize, replay::Trees)> {
    let (key, doc_sha) = (ids.merge_base.as_bytes(), sha256_hex(mb_doc.as_bytes()));
    if let Some(c) = cache.filter(|c| c.replay_known(key, &doc_sha)) {
        let lines = tail_replays(ext, [mb_doc, head_doc])?;
        let reused = match proved {
            Some(p) => reuses_any(&lines, &|op| p.may_hold(op))?,
            None => {
                let op_ids: Vec<String> = lines
                    .iter()
                    .map(|l| parse_record(l.number, l.raw).map(|r| format!("\"{}\"", r.op_id)))
                    .collect::<Result<_, _>>()
                    .ok()?;
                mentions_any(repo, ids.merge_base, &op_ids)?
            }
        };
        if reused {
            return None;
        }
        if let Some(p) = proved {
            c.remember_checkpoint(key, &doc_sha, &p.encode());
        }
        return Some((lines.len(), replay::Trees::default()));
    }
    // Cold: HEAD's whole transcript replays from its first state (which
    // compares every op_id) through the merge base's document after the
    // history's last line, so the branch's records replay from it: what
    // the history replayed alone and the branch's records replayed from
    // the merge base's document say, with that document parsed once. An
    // empty history is where genesis records pair up, not this path.
    ext.last_line_sha256.as_ref()?;
    let via = replay::Waypoint {
        line: ext.lines,
        sha256: &doc_sha,
    };
    let (applied_in_history, trees) = replays_via(repo, ids.head, via, head_doc, find)?;
    // Not remembered when the history has no applied record: its first
    // state is then chosen by the branch's records.
    if let Some(c) = cache.filter(|_| applied_in_history > 0) {
        c.remember_replay(key, &doc_sha);
        // Without the row built on the way (the base moved on): one more
        // read of the merge base's blob, once, for the next check.
        let built = proved.cloned().or_else(|| {
            let mut b = Builder::default();
            let mut tee = Tee {
                inner: repo.blob_stream(ids.merge_base).ok()?,
                builder: &mut b,
            };
            std::io::copy(&mut tee, &mut std::io::sink()).ok()?;
            b.finish()
        });
        if let Some(p) = built {
            c.remember_checkpoint(key, &doc_sha, &p.encode());
        }
    }
    Some((split_lines(&ext.tail).0.len(), trees))
}

/// The applied records up to `via.line` when transcript blob `id`
/// replays to `doc` from the state its first applied record starts at
/// (`find` gives its text), passing through `via`, and the trees the
/// replay built of those two states; None when it does not or cannot be
/// read.
fn replays_via(
    repo: &Repo,
    id: Oid,
    via: replay::Waypoint<'_>,
    doc: &str,
    find: &mut dyn FnMut(&str) -> Option<String>,
) -> Option<(usize, replay::Trees)> {
    let mut reader = repo.blob_reader(id).ok()?;
    let (report, applied, trees) = replay::replay_reader_via_trees(&mut reader, find, via, doc);
    report.divergence.is_none().then_some((applied, trees))
}

/// Whether blob `id` holds any of `needles` (quoted op_ids) anywhere: a
/// superset of "an earlier record has this op_id", read as a stream.
/// None when the blob cannot be read.
fn mentions_any(repo: &Repo, id: Oid, needles: &[String]) -> Option<bool> {
    if needles.is_empty() {
        return Some(false);
    }
    // A few needles over one blob, once per document of a PR: the default
    // (a DFA for so few patterns) cost more to build than the search.
    let ac = aho_corasick::AhoCorasick::builder()
        .kind(Some(aho_corasick::AhoCorasickKind::ContiguousNFA))
        .build(needles)
        .ok()?;
    let stream = repo.blob_stream(id).ok()?;
    match ac.stream_find_iter(stream).next() {
        None => Some(false),
        Some(Ok(_)) => Some(true),
        Some(Err(_)) => None,
    }
}

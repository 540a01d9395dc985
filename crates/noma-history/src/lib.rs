//! Block history: which records changed a block, who made them, who signed
//! and approved them, and in which commit each record's line arrived
//! (`noma log`, `noma blame`, MCP `block_history`, and an editor's hover).
//!
//! Attribution comes from replay ([`attribute`]): a record changed the
//! blocks whose source hashes differ before and after it, followed across
//! `rename_id`; `move_block` touches the block it moves. Records the merge
//! driver copied from another branch are records of this transcript (their
//! `parent_op_id` names the original). Signers and approvers come from the
//! provenance sidecar ([`crate::provenance::check::check_worktree`]); the
//! commit is the oldest one reachable from HEAD whose transcript (under any
//! name) holds the record's op_id ([`crate::git::Repo::introducing_commits`]).
//! What replay learned is kept in the block cache as a binary row
//! ([`row`]), keyed by the BLAKE3 hashes of the transcript and the
//! document ([`BlockCache::history_known`]): a
//! repeated query replays nothing; any other transcript bytes (one that
//! extends the cached one included) are replayed whole. The finished
//! answers are kept too ([`answer`]), keyed by every input they depend on,
//! so a repeated question parses nothing. Pure data in and out: the
//! shells word it.
//!
//! Beside it, what the history reads and the merge crate shares: replay's
//! base looked up in history ([`history_replay`]) and the provenance
//! checks that need a repository ([`provenance`]).

mod answer;
pub mod attribute;
mod error;
pub mod history_replay;
pub mod provenance;
mod row;
pub mod schema;
mod stream;

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

use noma_repo::{cache, git};

use crate::cache::BlockCache;
use crate::git::repo::Repo;
use noma_core::transcript::Entry;
use noma_store::engine;

/// Why a history cannot be told.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct HistoryError(pub String);

/// One block a record changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BlockTouch {
    /// The block's id now (its last id, if it was removed).
    pub id: String,
    /// The id it had right after the record, when not `id`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id_then: Option<String>,
    /// `added`, `changed`, `moved`, `renamed` or `removed`.
    pub change: &'static str,
    /// For `renamed`: the id it was renamed from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub renamed_from: Option<String>,
}

/// One applied record and the blocks it changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockChange {
    /// 1-based transcript line.
    pub line: usize,
    /// The record's op_id.
    pub op_id: String,
    /// The op's name.
    pub op: String,
    /// Who the record says acted (`kind name`).
    pub actor: String,
    /// The record's reason.
    pub reason: Option<String>,
    /// The record's timestamp.
    pub ts: String,
    /// The record this one was copied from (a merge), if any.
    pub parent_op_id: Option<String>,
    /// The allowed principal whose signature verifies.
    pub signed_by: Option<String>,
    /// The approver whose approval covers it.
    pub approved_by: Option<String>,
    /// Whether the record needs a human approval.
    pub needs_approval: bool,
    /// The commit that introduced the record's line (None: not committed).
    pub commit: Option<String>,
    /// The blocks it changed.
    pub blocks: Vec<BlockTouch>,
}

/// A block of the document and its last change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlameLine {
    /// The block's id.
    pub id: String,
    /// `[start, end]` lines in the document.
    pub lines: [u32; 2],
    /// The newest record that changed it (None: unchanged since the
    /// transcript began).
    pub last: Option<BlockChange>,
}

/// Every applied record that changed a block of `doc` (only the block
/// `block`, followed across renames, when given), newest first, at most
/// `limit`. `transcript` defaults to the document's own.
pub fn block_log(
    cache: &BlockCache,
    doc: &Path,
    transcript: Option<&Path>,
    block: Option<&str>,
    limit: Option<usize>,
) -> Result<Vec<BlockChange>, HistoryError> {
    let inputs = Inputs::read(doc, transcript)?;
    let question = format!("log {block:?} {limit:?}");
    answer::cached(cache, inputs.key(doc, &question).as_ref(), || {
        let Some(hash) = &inputs.hash else {
            return Ok(Vec::new());
        };
        let found = stream::attributed(cache, doc, &inputs, hash)?;
        let mut picked = Vec::new();
        for (k, (index, _)) in found.records.iter().enumerate().rev() {
            if picked.len() == limit.unwrap_or(usize::MAX) {
                break;
            }
            let mut blocks = block_touches(found.touches_of(k), &found);
            if let Some(id) = block {
                blocks.retain(|b| b.id == id);
                if blocks.is_empty() {
                    continue;
                }
            }
            picked.push((*index, blocks));
        }
        shown(doc, &inputs, &found, picked)
    })
}

/// Every block of `doc`, in document order, with its last change.
pub fn blame(
    cache: &BlockCache,
    doc: &Path,
    transcript: Option<&Path>,
) -> Result<Vec<BlameLine>, HistoryError> {
    let inputs = Inputs::read(doc, transcript)?;
    answer::cached(cache, inputs.key(doc, "blame").as_ref(), || {
        let text = &inputs.text;
        let hashes = noma_core::doc::hash::block_hashes(text, &noma_core::doc::parse(text));
        let Some(hash) = &inputs.hash else {
            return Ok(blame_lines(hashes, &[]));
        };
        let found = stream::attributed(cache, doc, &inputs, hash)?;
        // The newest record that touched each id, as it is now.
        let mut last: HashMap<&str, usize> = HashMap::new();
        for at in 0..found.records.len() {
            for t in found.touches_of(at) {
                last.insert(found.final_ids[t.lineage as usize].as_str(), at);
            }
        }
        let mut wanted: Vec<usize> = (hashes.iter())
            .filter_map(|b| last.get(b.id.as_str()).copied())
            .collect();
        wanted.sort_unstable();
        wanted.dedup();
        let picked = (wanted.iter())
            .map(|&at| {
                (
                    found.records[at].0,
                    block_touches(found.touches_of(at), &found),
                )
            })
            .collect();
        Ok(blame_lines(hashes, &shown(doc, &inputs, &found, picked)?))
    })
}

/// Every block of `hashes` (the document's) with the newest of `shown`
/// that changed it.
fn blame_lines(
    hashes: Vec<noma_core::doc::hash::BlockHash>,
    shown: &[BlockChange],
) -> Vec<BlameLine> {
    let mut last: HashMap<&str, &BlockChange> = HashMap::new();
    for c in shown {
        for b in &c.blocks {
            last.insert(b.id.as_str(), c);
        }
    }
    hashes
        .into_iter()
        .map(|b| BlameLine {
            last: last.get(b.id.as_str()).map(|c| {
                let mut c = (*c).clone();
                c.blocks.retain(|t| t.id == b.id);
                c
            }),
            id: b.id,
            lines: b.lines,
        })
        .collect()
}

/// The document's text, and its transcript's path and hash (None: no
/// transcript); the transcript is read only when the answer is not
/// cached ([`stream`]).
struct Inputs {
    text: String,
    tpath: std::path::PathBuf,
    hash: Option<String>,
    /// The document's repository, opened once when first needed: the
    /// base search and the commit search read the same commits, which
    /// one handle's object cache then holds.
    repo: std::cell::OnceCell<Option<Repo>>,
}

impl Inputs {
    fn read(doc: &Path, transcript: Option<&Path>) -> Result<Inputs, HistoryError> {
        let tpath = transcript.map_or_else(|| engine::default_transcript_path(doc), Into::into);
        // A document removed with `noma rm`: its transcript stays as the
        // tombstone, whose removal record ends at the empty text.
        let tombstone = doc.symlink_metadata().is_err() && tpath.is_file();
        let text = if tombstone {
            String::new()
        } else {
            read_doc(doc)?
        };
        let hash = answer::file_hash(&tpath)
            .map_err(|e| HistoryError(format!("{}: {e}", tpath.display())))?;
        Ok(Inputs {
            text,
            tpath,
            hash,
            repo: std::cell::OnceCell::new(),
        })
    }

    /// The answer cache's key for `question` (None: not cached, as when
    /// there is no transcript: nothing to replay).
    fn key(&self, doc: &Path, question: &str) -> Option<(String, String)> {
        answer::key(doc, self.hash.as_deref()?, &self.text, question)
    }

    /// The repository the document is in (None: not in one).
    fn repo(&self, doc: &Path) -> Option<&Repo> {
        self.repo
            .get_or_init(|| {
                let dir = doc.parent().filter(|p| !p.as_os_str().is_empty());
                Repo::discover(dir.unwrap_or(Path::new("."))).ok()
            })
            .as_ref()
    }

    fn error(&self, e: impl std::fmt::Display) -> HistoryError {
        HistoryError(format!("{}: {e}", self.tpath.display()))
    }
}

fn read_doc(doc: &Path) -> Result<String, HistoryError> {
    let bytes = noma_store::fsio::read_regular(doc)
        .map_err(|e| HistoryError(format!("{}: {e}", doc.display())))?;
    String::from_utf8(bytes).map_err(|_| HistoryError(format!("{}: not UTF-8", doc.display())))
}

/// The blocks one attributed record touched, by their ids now.
fn block_touches(touches: &[attribute::Touch], found: &attribute::Attribution) -> Vec<BlockTouch> {
    touches
        .iter()
        .map(|t| {
            let id = found.final_ids[t.lineage as usize].clone();
            let then = &found.ids[t.id_then as usize];
            BlockTouch {
                id_then: (*then != id).then(|| then.clone()),
                id,
                change: t.change,
                renamed_from: t.renamed_from.map(|r| found.ids[r as usize].clone()),
            }
        })
        .collect()
}

/// The changes an answer shows: the records on the lines `picked` (0-based
/// line index, the blocks it touched), in that order, read again by
/// offset, with the signer, approver and commit of each; the transcript
/// must still hash to the answer's key afterwards (an answer is never
/// stored for other bytes).
fn shown(
    doc: &Path,
    inputs: &Inputs,
    found: &attribute::Attribution,
    picked: Vec<(usize, Vec<BlockTouch>)>,
) -> Result<Vec<BlockChange>, HistoryError> {
    if picked.is_empty() {
        return Ok(Vec::new());
    }
    let mut file = noma_store::fsio::open_lines(&inputs.tpath)
        .map_err(|e| inputs.error(e))?
        .into_inner();
    let entries = stream::read_entries(&mut file, &found.lines, picked.iter().map(|p| p.0))
        .map_err(|e| inputs.error(e))?;
    let statuses = signatures(doc, &entries, |ops| {
        stream::related(&mut file, &found.lines, ops)
    })?;
    let commits = commits(inputs.repo(doc), &inputs.tpath, &entries, &found.lines)?;
    if answer::file_hash(&inputs.tpath).ok().flatten() != inputs.hash {
        return Err(inputs.error("changed while it was read; run the query again"));
    }
    let by_line: HashMap<usize, &Entry> = entries.iter().map(|e| (e.line, e)).collect();
    Ok(picked
        .into_iter()
        .filter_map(|(index, blocks)| {
            let entry = by_line.get(&(index + 1))?;
            Some(change(entry, blocks, &statuses, &commits))
        })
        .collect())
}

/// Signer, approver and whether approval is needed, by line.
type Statuses = HashMap<usize, (Option<String>, Option<String>, bool)>;

/// The statuses of `shown`, only their signatures verified.
fn signatures(
    doc: &Path,
    shown: &[Entry],
    related: impl FnOnce(&HashSet<String>) -> Result<Vec<Entry>, error::TraceError>,
) -> Result<Statuses, HistoryError> {
    let related = |ops: &HashSet<String>| {
        related(ops).map_err(|e| crate::provenance::Error::Stopped(e.into()))
    };
    let found = crate::provenance::check::check_worktree_shown(doc, shown, related)
        .map_err(|e| HistoryError(e.to_string()))?;
    Ok(found
        .unwrap_or_default()
        .into_iter()
        .map(|s| (s.line, (s.signed_by, s.approved_by, s.needs_approval)))
        .collect())
}

/// The commit that introduced each record's line, by op_id; `entries`
/// were read from the transcript `tpath`, whose lines are `lines`, so the
/// blob that is that file holds them all without being read again, and
/// an older version shorter than a line's end does not hold it.
fn commits(
    repo: Option<&Repo>,
    tpath: &Path,
    entries: &[Entry],
    lines: &[attribute::LineRef],
) -> Result<HashMap<String, String>, HistoryError> {
    let Some(repo) = repo else {
        return Ok(HashMap::new());
    };
    let ends: HashMap<String, u64> = (entries.iter())
        .filter_map(|e| {
            let at = lines.get(e.line.checked_sub(1)?)?;
            Some((e.record.op_id.clone(), at.offset + at.len))
        })
        .collect();
    let wanted: HashSet<String> = ends.keys().cloned().collect();
    let key = memchr::memmem::Finder::new(b"\"op_id\"");
    let found = repo
        .introducing_commits(
            (".noma.patches", repo.relative_path(tpath).as_deref()),
            (&ends, repo.worktree_blob_id(tpath)),
            crate::git::HISTORY_LIMIT,
            |bytes| wanted_op_ids(bytes, &key, &wanted),
        )
        .map_err(|e| HistoryError(e.to_string()))?;
    Ok(found.into_iter().map(|(k, v)| (k, v.to_string())).collect())
}

/// The op_ids of `wanted` that the lines of a transcript version carry
/// (lines that are no record skipped). A line is parsed only when it
/// has an escape, or when a `"op_id"` in it (`key` finds them) is
/// followed by one of them or by anything but a plain string: in a
/// line without `\\`, every string is written as it reads, so its
/// op_id is one of those.
fn wanted_op_ids(
    bytes: &[u8],
    key: &memchr::memmem::Finder<'_>,
    wanted: &HashSet<String>,
) -> Vec<String> {
    #[derive(serde::Deserialize)]
    struct OpId {
        op_id: String,
    }
    let maybe = |line: &[u8]| {
        memchr::memchr(b'\\', line).is_some()
            || key.find_iter(line).any(|at| {
                let rest = &line[at + 7..];
                let skip = |r: &[u8]| {
                    r.iter()
                        .position(|b| !b.is_ascii_whitespace())
                        .unwrap_or(r.len())
                };
                let rest = &rest[skip(rest)..];
                let Some(rest) = rest.strip_prefix(b":") else {
                    return true;
                };
                let rest = &rest[skip(rest)..];
                let Some(rest) = rest.strip_prefix(b"\"") else {
                    return true;
                };
                let value = rest.split(|b| *b == b'"').next().unwrap_or_default();
                std::str::from_utf8(value).map_or(true, |v| wanted.contains(v))
            })
    };
    bytes
        .split(|b| *b == b'\n')
        .filter(|l| maybe(l))
        .filter_map(|l| serde_json::from_slice::<OpId>(l).ok())
        .map(|r| r.op_id)
        .filter(|id| wanted.contains(id))
        .collect()
}

fn change(
    entry: &Entry,
    blocks: Vec<BlockTouch>,
    statuses: &Statuses,
    commits: &HashMap<String, String>,
) -> BlockChange {
    let rec = &entry.record;
    let (signed_by, approved_by, needs_approval) =
        statuses.get(&entry.line).cloned().unwrap_or_default();
    BlockChange {
        line: entry.line,
        op_id: rec.op_id.clone(),
        op: rec.op_name().to_string(),
        actor: format!("{} {}", rec.actor.kind.as_str(), rec.actor.name),
        reason: rec.reason.clone(),
        ts: rec.ts.clone(),
        parent_op_id: rec.parent_op_id.clone(),
        signed_by,
        approved_by,
        needs_approval,
        commit: commits.get(&rec.op_id).cloned(),
        blocks,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Every line parsed, then filtered: what the prefilter must equal.
    fn parsed_all(bytes: &[u8], wanted: &HashSet<String>) -> Vec<String> {
        #[derive(serde::Deserialize)]
        struct OpId {
            op_id: String,
        }
        bytes
            .split(|b| *b == b'\n')
            .filter_map(|l| serde_json::from_slice::<OpId>(l).ok())
            .map(|r| r.op_id)
            .filter(|id| wanted.contains(id))
            .collect()
    }

    /// A line carrying op_id `id`, written plainly, escaped, with other
    /// fields naming it, or not a record.
    fn line(id: &str, how: u8) -> String {
        let escaped: String = id.chars().map(|c| format!("\\u{:04x}", c as u32)).collect();
        match how % 8 {
            6 => format!(r#"{{"op" : {{"op_id":"x"}}, "op_id" :  "{id}"}}"#),
            7 => format!(r#"{{"op_id":{{"not":"{id}"}}, "op_id":"{id}"}}"#),
            0 => format!(r#"{{"op_id":"{id}","op":{{"op":"x"}}}}"#),
            1 => format!(r#"{{"op":{{"op":"x"}},"op_id":"{escaped}"}}"#),
            2 => format!(r#"{{"op_id":"other","parent_op_id":"{id}","reason":"op {id}"}}"#),
            3 => format!(r#"{{"reason":"a \"quote\"", "op_id" : "{id}"}}"#),
            4 => format!("not json {id}"),
            _ => format!(r#"{{"op_id":"{id}x"}}"#),
        }
    }

    proptest! {
        #[test]
        fn the_op_id_prefilter_finds_what_parsing_every_line_finds(
            lines in prop::collection::vec((0..6usize, any::<u8>()), 0..40),
            wanted in prop::collection::hash_set(0..6usize, 1..4),
        ) {
            let ids = ["a1", "b2", "c/3", "d\u{e9}4", "e5", "a1x"];
            let bytes: String = lines.iter().map(|(i, how)| line(ids[*i], *how) + "\n").collect();
            let wanted: HashSet<String> = wanted.into_iter().map(|i| ids[i].to_string()).collect();
            let key = memchr::memmem::Finder::new(b"\"op_id\"");
            prop_assert_eq!(
                wanted_op_ids(bytes.as_bytes(), &key, &wanted),
                parsed_all(bytes.as_bytes(), &wanted)
            );
        }
    }
}

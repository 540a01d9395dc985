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
//! What replay learned is kept in the block cache, keyed by the sha256s
//! of the transcript and the document ([`BlockCache::history_known`]): a
//! repeated query replays nothing; any other transcript bytes (one that
//! extends the cached one included) are replayed whole. The finished
//! answers are kept too ([`answer`]), keyed by every input they depend on,
//! so a repeated question parses nothing. Pure data in and out: the
//! shells word it.

mod answer;
pub mod attribute;
pub mod schema;

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::cache::BlockCache;
use crate::git::repo::Repo;
use crate::history_replay::{find_in_worktree_history, wanted_base};
use noma_core::doc::hash::sha256_hex;
use noma_core::transcript::{parse_transcript, replay, Entry};
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
        let mut all = changes(cache, doc, &inputs)?;
        if let Some(id) = block {
            all.retain_mut(|c| {
                c.blocks.retain(|b| b.id == id);
                !c.blocks.is_empty()
            });
        }
        all.reverse();
        all.truncate(limit.unwrap_or(usize::MAX));
        Ok(all)
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
        let all = changes(cache, doc, &inputs)?;
        Ok(blame_lines(&inputs.text, &all))
    })
}

/// Every block of `text` with the newest of `all` that changed it.
fn blame_lines(text: &str, all: &[BlockChange]) -> Vec<BlameLine> {
    let mut last: HashMap<&str, &BlockChange> = HashMap::new();
    for c in all {
        for b in &c.blocks {
            last.insert(b.id.as_str(), c);
        }
    }
    let hashes = noma_core::doc::hash::block_hashes(text, &noma_core::doc::parse(text));
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
/// transcript); the transcript's bytes are read only when the answer is
/// not cached ([`Inputs::transcript`]).
struct Inputs {
    text: String,
    tpath: std::path::PathBuf,
    hash: Option<String>,
}

impl Inputs {
    fn read(doc: &Path, transcript: Option<&Path>) -> Result<Inputs, HistoryError> {
        let text = read_doc(doc)?;
        let tpath = transcript.map_or_else(|| engine::default_transcript_path(doc), Into::into);
        let hash = answer::file_hash(&tpath)
            .map_err(|e| HistoryError(format!("{}: {e}", tpath.display())))?;
        Ok(Inputs { text, tpath, hash })
    }

    /// The answer cache's key for `question` (None: not cached, as when
    /// there is no transcript: nothing to replay).
    fn key(&self, doc: &Path, question: &str) -> Option<(String, String)> {
        answer::key(doc, self.hash.as_deref()?, &self.text, question)
    }

    /// The transcript's bytes (None: there is none), the very bytes the
    /// key hashed: an answer is never stored for other bytes.
    fn transcript(&self) -> Result<Option<Vec<u8>>, HistoryError> {
        let Some(hash) = &self.hash else {
            return Ok(None);
        };
        let err = |e: String| HistoryError(format!("{}: {e}", self.tpath.display()));
        let bytes = noma_store::fsio::read_regular(&self.tpath).map_err(|e| err(e.to_string()))?;
        if blake3::hash(&bytes).to_hex().as_str() != hash {
            return Err(err("changed while it was read; run the query again".into()));
        }
        Ok(Some(bytes))
    }
}

fn read_doc(doc: &Path) -> Result<String, HistoryError> {
    let bytes = noma_store::fsio::read_regular(doc)
        .map_err(|e| HistoryError(format!("{}: {e}", doc.display())))?;
    String::from_utf8(bytes).map_err(|_| HistoryError(format!("{}: not UTF-8", doc.display())))
}

/// Every applied record, in file order, with the blocks it changed.
fn changes(
    cache: &BlockCache,
    doc: &Path,
    inputs: &Inputs,
) -> Result<Vec<BlockChange>, HistoryError> {
    let (text, tpath) = (&inputs.text, &inputs.tpath);
    let Some(bytes) = inputs.transcript()? else {
        return Ok(Vec::new());
    };
    let bytes = &bytes[..];
    let parsed =
        parse_transcript(bytes).map_err(|e| HistoryError(format!("{}: {e}", tpath.display())))?;
    let attribution = attribution(cache, doc, (bytes, &parsed.entries), text)
        .map_err(|e| HistoryError(format!("{}: {e}", tpath.display())))?;
    let statuses = signatures(doc, bytes)?;
    let commits = commits(doc, &parsed.entries)?;
    Ok(attribution
        .records
        .iter()
        .map(|(index, touches)| {
            let entry = &parsed.entries[*index];
            change(entry, touches, &attribution, &statuses, &commits)
        })
        .collect())
}

/// What replay learns about the transcript `bytes` (its `entries`) and
/// the document `text`: from the block cache when these exact contents
/// were attributed before, else by replay (then stored).
fn attribution(
    cache: &BlockCache,
    doc: &Path,
    (bytes, entries): (&[u8], &[Entry]),
    text: &str,
) -> Result<attribute::Attribution, String> {
    let key = (sha256_hex(bytes), sha256_hex(text.as_bytes()));
    let cached = cache
        .history_known(&key.0, &key.1)
        .and_then(|b| attribute::Attribution::decode(&b))
        .filter(|a| a.records.iter().all(|(i, _)| *i < entries.len()));
    if let Some(found) = cached {
        return Ok(found);
    }
    let base = base_text(doc, bytes, text).map_err(|e| e.0)?;
    let found = attribute::attribute(entries, base)?;
    cache.remember_history(&key.0, &key.1, &found.encode());
    Ok(found)
}

/// The text replay starts from, found as `noma replay` finds it.
fn base_text(doc: &Path, transcript: &[u8], text: &str) -> Result<Option<String>, HistoryError> {
    let first_pre = replay::first_applied_pre_sha256(transcript);
    match wanted_base(first_pre.as_deref(), text) {
        None if first_pre.as_deref() == Some(&sha256_hex(text.as_bytes())) => {
            Ok(Some(text.to_string()))
        }
        None => Ok(None),
        Some(sha) => match find_in_worktree_history(doc, &sha) {
            (Some(found), _) => Ok(Some(found)),
            (None, searched) => Err(HistoryError(format!(
                "no version of {} with sha256 {sha} (the state the transcript starts from) in {}",
                doc.display(),
                searched.unwrap_or_else(|e| e)
            ))),
        },
    }
}

/// Signer, approver and whether approval is needed, by op_id.
type Statuses = HashMap<String, (Option<String>, Option<String>, bool)>;

fn signatures(doc: &Path, transcript: &[u8]) -> Result<Statuses, HistoryError> {
    let report = crate::provenance::check::check_worktree(doc, transcript).map_err(HistoryError)?;
    Ok(report
        .records
        .into_iter()
        .map(|s| (s.op_id, (s.signed_by, s.approved_by, s.needs_approval)))
        .collect())
}

/// The commit that introduced each record's line, by op_id.
fn commits(doc: &Path, entries: &[Entry]) -> Result<HashMap<String, String>, HistoryError> {
    let dir = doc.parent().filter(|p| !p.as_os_str().is_empty());
    let Ok(repo) = Repo::discover(dir.unwrap_or(Path::new("."))) else {
        return Ok(HashMap::new());
    };
    let wanted: HashSet<String> = entries.iter().map(|e| e.record.op_id.clone()).collect();
    let found = repo
        .introducing_commits(
            ".noma.patches",
            &wanted,
            crate::git::HISTORY_LIMIT,
            op_ids_of,
        )
        .map_err(|e| HistoryError(e.to_string()))?;
    Ok(found.into_iter().map(|(k, v)| (k, v.to_string())).collect())
}

/// The op_ids of a transcript's lines (lines that are no record skipped).
fn op_ids_of(bytes: &[u8]) -> Vec<String> {
    #[derive(serde::Deserialize)]
    struct OpId {
        op_id: String,
    }
    bytes
        .split(|b| *b == b'\n')
        .filter_map(|l| serde_json::from_slice::<OpId>(l).ok())
        .map(|r| r.op_id)
        .collect()
}

fn change(
    entry: &Entry,
    touches: &[attribute::Touch],
    attribution: &attribute::Attribution,
    statuses: &Statuses,
    commits: &HashMap<String, String>,
) -> BlockChange {
    let rec = &entry.record;
    let (signed_by, approved_by, needs_approval) =
        statuses.get(&rec.op_id).cloned().unwrap_or_default();
    let blocks = touches
        .iter()
        .map(|t| {
            let id = attribution.final_ids[t.lineage].clone();
            BlockTouch {
                id_then: (t.id_then != id).then(|| t.id_then.clone()),
                id,
                change: t.change,
                renamed_from: t.renamed_from.clone(),
            }
        })
        .collect();
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

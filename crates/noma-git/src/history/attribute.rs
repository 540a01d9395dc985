//! Attribution from replay: each applied record is re-applied to the state
//! before it, and the record changed the blocks whose source hashes (or
//! parents) differ before and after it. Pure: texts in, touches out.
//!
//! A block keeps one identity (a *lineage*) across `rename_id`, so its
//! older records are found under its current id; a block that is removed
//! and later added again under the same id is a new lineage.

use std::collections::HashMap;

use noma_core::doc::hash::{block_digests, sha256_hex, EMPTY_SHA256};
use noma_core::doc::ParseMemo;
use noma_core::transcript::{Entry, PatchResult};
use serde_json::Value;

/// What one record did to one block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Touch {
    /// The block's lineage (index into [`Attribution::final_ids`]).
    pub lineage: usize,
    /// The block's id right after the record (before it, for a removal).
    pub id_then: String,
    /// `added`, `changed`, `moved`, `renamed` or `removed`.
    pub change: &'static str,
    /// The id a `rename_id` renamed the block from.
    pub renamed_from: Option<String>,
}

/// What replay learned: per applied record (by index into the entries),
/// the blocks it touched, and each lineage's last id.
#[derive(Debug, Clone, Default)]
pub struct Attribution {
    /// `(entry index, touches)` for every applied record, in file order.
    pub records: Vec<(usize, Vec<Touch>)>,
    /// Each lineage's id in the last state (its last id when removed).
    pub final_ids: Vec<String>,
    /// Whether the lineage's block is in the last state.
    pub alive: Vec<bool>,
}

/// The `change` words, in their stored order.
const CHANGES: [&str; 5] = ["added", "changed", "moved", "renamed", "removed"];

/// A [`super::BlockTouch`] as read back from the answer cache: its
/// `change` word owned, until matched to its `'static` form.
#[derive(serde::Deserialize)]
struct TouchRow {
    id: String,
    id_then: Option<String>,
    change: String,
    renamed_from: Option<String>,
}

impl<'de> serde::Deserialize<'de> for super::BlockTouch {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let row = TouchRow::deserialize(d)?;
        let change = CHANGES
            .iter()
            .copied()
            .find(|c| *c == row.change)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown change {:?}", row.change)))?;
        Ok(super::BlockTouch {
            id: row.id,
            id_then: row.id_then,
            change,
            renamed_from: row.renamed_from,
        })
    }
}

/// A stored [`Touch`]: (lineage, id_then, change index, renamed_from).
type StoredTouch = (usize, String, u8, Option<String>);

/// An [`Attribution`] as stored in the block cache.
#[derive(serde::Serialize, serde::Deserialize)]
struct Stored {
    /// (entry index, [(lineage, id_then, change, renamed_from)]).
    records: Vec<(usize, Vec<StoredTouch>)>,
    final_ids: Vec<String>,
    alive: Vec<bool>,
}

impl Attribution {
    /// The bytes [`Attribution::decode`] reads back.
    pub fn encode(&self) -> Vec<u8> {
        let records = self
            .records
            .iter()
            .map(|(index, touches)| {
                let t = touches.iter().map(|t| {
                    let change = CHANGES.iter().position(|c| *c == t.change).unwrap_or(1);
                    (
                        t.lineage,
                        t.id_then.clone(),
                        change as u8,
                        t.renamed_from.clone(),
                    )
                });
                (*index, t.collect())
            })
            .collect();
        let stored = Stored {
            records,
            final_ids: self.final_ids.clone(),
            alive: self.alive.clone(),
        };
        serde_json::to_vec(&stored).unwrap_or_default()
    }

    /// An attribution from stored bytes; None when they do not hold one
    /// (another encoding, a damaged row): the caller replays instead.
    pub fn decode(bytes: &[u8]) -> Option<Attribution> {
        let stored: Stored = serde_json::from_slice(bytes).ok()?;
        let lineages = stored.final_ids.len();
        if stored.alive.len() != lineages {
            return None;
        }
        let mut records = Vec::with_capacity(stored.records.len());
        for (index, touches) in stored.records {
            let mut list = Vec::with_capacity(touches.len());
            for (lineage, id_then, change, renamed_from) in touches {
                if lineage >= lineages {
                    return None;
                }
                list.push(Touch {
                    lineage,
                    id_then,
                    change: CHANGES.get(usize::from(change))?,
                    renamed_from,
                });
            }
            records.push((index, list));
        }
        Some(Attribution {
            records,
            final_ids: stored.final_ids,
            alive: stored.alive,
        })
    }
}

/// Blocks of a text: ids in document order, and by id (the BLAKE3 of its
/// source slice, parent id).
#[derive(Default)]
struct Blocks {
    order: Vec<String>,
    by_id: HashMap<String, ([u8; 32], Option<String>)>,
}

impl Blocks {
    fn get(&self, id: &str) -> Option<&([u8; 32], Option<String>)> {
        self.by_id.get(id)
    }

    fn contains_key(&self, id: &str) -> bool {
        self.by_id.contains_key(id)
    }
}

/// The blocks of `text`, an edit of `before` when given: its tree is
/// spliced from the one `memo` holds (the op just parsed `before` there),
/// re-parsing only the edited lines, and stays there for the next op.
fn blocks_of(memo: &mut ParseMemo, before: Option<&str>, text: &str) -> Blocks {
    let tree = match before {
        Some(b) => memo.parse_edited(b, text).0,
        None => memo.parse(text),
    };
    let mut out = Blocks::default();
    for (id, digest, parent) in block_digests(text, &tree) {
        out.order.push(id.clone());
        out.by_id.insert(id, (digest, parent));
    }
    out
}

/// Attributes every applied record of `entries`, replayed from `base`
/// (None: the first applied record must be a genesis record). Err: where
/// the records do not replay (`noma replay` says more).
pub fn attribute(entries: &[Entry], base: Option<String>) -> Result<Attribution, String> {
    let mut out = Attribution::default();
    let mut text = base;
    let mut alias: HashMap<String, usize> = HashMap::new();
    let mut before = Blocks::default();
    // One memo for the whole replay, as `noma replay` keeps one; and the
    // sha256 of the replayed state once checked, so it is not hashed again
    // as the next record's pre state.
    let mut memo = ParseMemo::new();
    let mut text_sha: Option<String> = None;
    if let Some(t) = &text {
        before = blocks_of(&mut memo, None, t);
        for id in &before.order {
            new_lineage(&mut out, &mut alias, id);
        }
    }
    for (index, entry) in entries.iter().enumerate() {
        let rec = &entry.record;
        if rec.patch_result != PatchResult::Applied {
            continue;
        }
        let current = match text.take() {
            Some(t) => t,
            None if rec.pre_sha256 == EMPTY_SHA256 => String::new(),
            None => {
                return Err(format!(
                    "line {}: the first applied record does not start from a known document state (no base found)",
                    entry.line
                ))
            }
        };
        let pre = text_sha
            .take()
            .unwrap_or_else(|| sha256_hex(current.as_bytes()));
        if pre != rec.pre_sha256 {
            return Err(format!("line {} (op_id {}): the record does not start from the replayed state (run `noma replay`)", entry.line, rec.op_id));
        }
        let next =
            noma_core::patch::apply_ops_with(&mut memo, &current, std::slice::from_ref(&rec.op))
                .map_err(|e| {
                    format!(
                        "line {} (op_id {}): the op does not apply again: {}",
                        entry.line, rec.op_id, e.message
                    )
                })?;
        let post = sha256_hex(next.as_bytes());
        if post != rec.post_sha256 {
            return Err(format!("line {} (op_id {}): re-applying the op does not give its post_sha256 (run `noma replay`)", entry.line, rec.op_id));
        }
        let after = blocks_of(&mut memo, Some(&current), &next);
        let touches = touches(&mut out, &mut alias, (&before, &after), &rec.op);
        out.records.push((index, touches));
        before = after;
        text = Some(next);
        text_sha = Some(post);
    }
    for (id, lineage) in alias {
        out.final_ids[lineage] = id;
        out.alive[lineage] = true;
    }
    Ok(out)
}

fn new_lineage(out: &mut Attribution, alias: &mut HashMap<String, usize>, id: &str) -> usize {
    out.final_ids.push(id.to_string());
    out.alive.push(false);
    let lineage = out.final_ids.len() - 1;
    alias.insert(id.to_string(), lineage);
    lineage
}

/// The blocks one op touched, keeping `alias` (id → lineage) current.
fn touches(
    out: &mut Attribution,
    alias: &mut HashMap<String, usize>,
    (before, after): (&Blocks, &Blocks),
    op: &Value,
) -> Vec<Touch> {
    let name = op.get("op").and_then(Value::as_str).unwrap_or("");
    let field = |k: &str| op.get(k).and_then(Value::as_str);
    let renamed = (name == "rename_id")
        .then(|| field("from").zip(field("to")))
        .flatten()
        .filter(|(from, to)| before.contains_key(from) && after.contains_key(to));
    let moved = (name == "move_block").then(|| field("id")).flatten();
    let mut list = Vec::new();
    // Document order after the op, then the blocks it removed.
    let gone = before.order.iter().filter(|id| !after.contains_key(id));
    let mut seen = std::collections::HashSet::new();
    for id in after.order.iter().chain(gone) {
        // A document with a duplicate id lists it twice; touch it once.
        if !seen.insert(id) {
            continue;
        }
        let touch = |change, lineage, renamed_from: Option<String>| Touch {
            lineage,
            id_then: id.clone(),
            change,
            renamed_from,
        };
        match (before.get(id), after.get(id)) {
            (Some((sha, parent)), Some((sha2, parent2))) => {
                let change = if moved == Some(id.as_str()) || (parent != parent2 && sha == sha2) {
                    "moved"
                } else if sha != sha2 {
                    "changed"
                } else {
                    continue;
                };
                let lineage = match alias.get(id) {
                    Some(l) => *l,
                    None => new_lineage(out, alias, id),
                };
                list.push(touch(change, lineage, None));
            }
            (None, Some(_)) => match renamed {
                Some((from, to)) if to == id => {
                    let lineage = match alias.remove(from) {
                        Some(l) => l,
                        None => new_lineage(out, alias, id),
                    };
                    alias.insert(id.clone(), lineage);
                    list.push(touch("renamed", lineage, Some(from.to_string())));
                }
                _ => {
                    let lineage = new_lineage(out, alias, id);
                    list.push(touch("added", lineage, None));
                }
            },
            (Some(_), None) if renamed.is_some_and(|(from, _)| from == id) => {}
            (Some(_), None) => {
                if let Some(lineage) = alias.remove(id) {
                    out.final_ids[lineage] = id.clone();
                    list.push(touch("removed", lineage, None));
                }
            }
            (None, None) => {}
        }
    }
    list
}

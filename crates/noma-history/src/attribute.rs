//! Attribution from replay: each applied record is re-applied to the state
//! before it, and the record changed the blocks whose source slices (or
//! parents) differ before and after it. Pure: texts in, touches out.
//!
//! A block keeps one identity (a *lineage*) across `rename_id`, so its
//! older records are found under its current id; a block that is removed
//! and later added again under the same id is a new lineage.
//!
//! Each state's tree is spliced from the one before it (as `noma replay`
//! does), and blocks are compared by where they are relative to the
//! op's edit: a block wholly before the edited bytes, or wholly after
//! them and shifted with them, has the same slice without reading it;
//! only the blocks around the edit are compared byte for byte. The tests
//! hold this to the full comparison (every block of every state hashed).

use noma_core::transcript::reapply::{reapply, ReapplyError};
use std::collections::{HashMap, HashSet};

use noma_core::doc::ast::{Document, Node, Text};
use noma_core::doc::hash::{sha256_hex, SliceDigests, EMPTY_SHA256};
use noma_core::doc::reparse::{common_prefix, common_suffix};
use noma_core::doc::ParseMemo;
use noma_core::transcript::Record;
use serde_json::Value;

/// What one record did to one block; ids are indices into
/// [`Attribution::ids`] (each id is kept once, however often touched).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Touch {
    /// The block's lineage (index into [`Attribution::final_ids`]).
    pub lineage: u32,
    /// The block's id right after the record (before it, for a removal).
    pub id_then: u32,
    /// `added`, `changed`, `moved`, `renamed` or `removed`.
    pub change: &'static str,
    /// The id a `rename_id` renamed the block from.
    pub renamed_from: Option<u32>,
}

/// Where one transcript line is, and a fingerprint of the op it stands
/// for (its original's op_id for a merge copy), so the records sharing an
/// op with a shown one are found without parsing every line again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LineRef {
    /// Byte offset of the line in the transcript.
    pub offset: u64,
    /// Its length, with its `\n`.
    pub len: u64,
    /// The first 8 bytes of the BLAKE3 of the op_id it stands for.
    pub origin: u64,
}

/// What replay learned: per applied record (by index into the lines),
/// the blocks it touched, each lineage's last id, and where every line is.
#[derive(Debug, Clone, Default)]
pub struct Attribution {
    /// `(line index, its touches' range in touches)` for every applied
    /// record, in file order.
    pub records: Vec<(usize, std::ops::Range<usize>)>,
    /// Every record's touches, one after the other.
    pub touches: Vec<Touch>,
    /// The ids touches name.
    pub ids: Vec<String>,
    /// Each lineage's id in the last state (its last id when removed).
    pub final_ids: Vec<String>,
    /// Whether the lineage's block is in the last state.
    pub alive: Vec<bool>,
    /// Every complete line of the transcript, in order.
    pub lines: Vec<LineRef>,
}

/// The `change` words, in their stored order.
pub(super) const CHANGES: [&str; 5] = ["added", "changed", "moved", "renamed", "removed"];

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

impl Attribution {
    /// The touches of the `k`th applied record.
    pub(crate) fn touches_of(&self, k: usize) -> &[Touch] {
        &self.touches[self.records[k].1.clone()]
    }
}

/// One block of a state: its id, its lines, and the position (in the
/// same list) of its nearest ancestor with an id.
#[derive(Debug, Clone)]
struct Blk {
    id: Text,
    start: u32,
    end: u32,
    parent: Option<u32>,
}

/// The blocks of `doc` into `out`, in document order (pre-order), the
/// blocks `block_digests` lists.
fn blocks_into(doc: &Document, out: &mut Vec<Blk>) {
    out.clear();
    let mut stack: Vec<(Option<u32>, std::slice::Iter<'_, Node>)> =
        vec![(None, doc.children.iter())];
    while let Some((parent, iter)) = stack.last_mut() {
        let Some(node) = iter.next() else {
            stack.pop();
            continue;
        };
        let mut here = *parent;
        if let Some(id) = &node.id {
            out.push(Blk {
                id: id.clone(),
                start: node.span.start,
                end: node.span.end,
                parent: *parent,
            });
            here = u32::try_from(out.len() - 1).ok();
        }
        let kids = node.children();
        if !kids.is_empty() {
            stack.push((here, kids.iter()));
        }
    }
}

/// Where the lines of a text start (its BOM not counted).
fn line_starts(text: &str, out: &mut Vec<usize>) {
    out.clear();
    out.push(0);
    out.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|at| at + 1));
}

/// [`line_starts`] of `new`, an edit of a text `old_len` bytes long whose
/// lines start at `old`, the two sharing `prefix` bytes at their start
/// and `suffix` (not overlapping it) at their end: the starts in either
/// are the old ones (shifted by the change of length after the edit),
/// and only the edited bytes are searched.
fn next_starts(
    old: &[usize],
    old_len: usize,
    new: &[u8],
    (prefix, suffix): (usize, usize),
    out: &mut Vec<usize>,
) {
    out.clear();
    // A line starts after each `\n`: those in the common prefix...
    let head = old.partition_point(|&s| s <= prefix);
    out.extend_from_slice(&old[..head]);
    // ...in the edited bytes...
    let to = new.len() - suffix;
    out.extend(memchr::memchr_iter(b'\n', &new[prefix..to]).map(|q| prefix + q + 1));
    // ...and in the common suffix.
    let tail = old.partition_point(|&s| s <= old_len - suffix);
    out.extend(old[tail..].iter().map(|&s| s + new.len() - old_len));
}

/// The BOM-less texts of two states and the bytes they share at their
/// start and (not overlapping those) at their end.
fn bounds<'t>(old: &'t str, new: &'t str) -> (&'t str, &'t str, (usize, usize)) {
    let strip = |t: &'t str| t.strip_prefix('\u{feff}').unwrap_or(t);
    let (o, n) = (strip(old), strip(new));
    let prefix = common_prefix(o.as_bytes(), n.as_bytes());
    let suffix = common_suffix(&o.as_bytes()[prefix..], &n.as_bytes()[prefix..]);
    (o, n, (prefix, suffix))
}

/// The bytes `block_digests` hashes for lines `start..=end` of a text
/// without `\r` whose lines start at `starts`: from the first line's
/// start to the last line's end, its `\n` left out (empty when the lines
/// are not in the text).
fn byte_range(starts: &[usize], len: usize, start: u32, end: u32) -> (usize, usize) {
    let s = (start.max(1) - 1) as usize;
    let e = (end as usize).min(starts.len());
    if s >= e {
        return (0, 0);
    }
    let to = starts.get(e).map_or(len, |next| next - 1);
    (starts[s], to)
}

/// Two consecutive states, for comparing their blocks' slices.
struct Pair<'t> {
    old: &'t str,
    new: &'t str,
    old_starts: &'t [usize],
    new_starts: &'t [usize],
    /// The common prefix and (not overlapping it) suffix, in bytes.
    prefix: usize,
    suffix: usize,
    /// For texts with `\r` (whose lines `\r` also ends): digests.
    digests: Option<(SliceDigests<'t>, SliceDigests<'t>)>,
}

impl<'t> Pair<'t> {
    /// The states `old` and `new` (with their BOMs), their lines'
    /// `starts` and their [`bounds`].
    fn new(
        (old, new): (&'t str, &'t str),
        starts: (&'t [usize], &'t [usize]),
        (prefix, suffix): (usize, usize),
    ) -> Pair<'t> {
        let cr = |t: &str| memchr::memchr(b'\r', t.as_bytes()).is_some();
        let digests =
            (cr(old) || cr(new)).then(|| (SliceDigests::new(old), SliceDigests::new(new)));
        let strip = |t: &'t str| t.strip_prefix('\u{feff}').unwrap_or(t);
        let (o, n) = (strip(old), strip(new));
        Pair {
            old: o,
            new: n,
            old_starts: starts.0,
            new_starts: starts.1,
            prefix,
            suffix,
            digests,
        }
    }

    /// Whether block `a` of the old state and `b` of the new one have the
    /// same source slice.
    fn same(&self, a: &Blk, b: &Blk) -> bool {
        if let Some((old, new)) = &self.digests {
            return old.digest(a.start, a.end) == new.digest(b.start, b.end);
        }
        let (os, oe) = byte_range(self.old_starts, self.old.len(), a.start, a.end);
        let (ns, ne) = byte_range(self.new_starts, self.new.len(), b.start, b.end);
        if oe - os != ne - ns {
            return false;
        }
        // Wholly in the common prefix at the same place, or wholly in the
        // common suffix at the same distance from the end: the same bytes.
        if (oe <= self.prefix && os == ns)
            || (os >= self.old.len() - self.suffix
                && ns >= self.new.len() - self.suffix
                && self.old.len() - os == self.new.len() - ns)
        {
            return true;
        }
        // Holding the whole edit, with the same bytes before and after it:
        // different, since the texts differ (a long block, often the
        // whole document, is then not read).
        let differ =
            self.prefix < self.old.len().min(self.new.len()) || self.old.len() != self.new.len();
        if differ
            && os == ns
            && os <= self.prefix
            && oe >= self.old.len() - self.suffix
            && self.old.len() - oe == self.new.len() - ne
        {
            return false;
        }
        self.old.as_bytes()[os..oe] == self.new.as_bytes()[ns..ne]
    }
}

/// Attribution in progress: the replayed state, its blocks, and each
/// block id's lineage.
pub struct Attributor {
    lineages: Lineages,
    memo: ParseMemo,
    text: Option<String>,
    /// The sha256 of `text` once checked, so the next record's pre state
    /// is not hashed again.
    text_sha: Option<String>,
    before: Vec<Blk>,
    after: Vec<Blk>,
    before_starts: Vec<usize>,
    after_starts: Vec<usize>,
}

impl Attributor {
    /// Attribution replayed from `base` (None: the first applied record
    /// must be a genesis record).
    pub(crate) fn new(base: Option<String>) -> Attributor {
        let mut a = Attributor {
            lineages: Lineages::default(),
            memo: ParseMemo::new(),
            text: None,
            text_sha: None,
            before: Vec::new(),
            after: Vec::new(),
            before_starts: Vec::new(),
            after_starts: Vec::new(),
        };
        if let Some(t) = base {
            blocks_into(&a.memo.parse(&t), &mut a.before);
            line_starts(
                t.strip_prefix('\u{feff}').unwrap_or(&t),
                &mut a.before_starts,
            );
            for b in &a.before {
                a.lineages.new_lineage(&b.id);
            }
            a.text = Some(t);
        }
        a
    }

    /// The line at `line` (1-based, its index `index`) holds the applied
    /// record `rec`: re-applies it and records what it touched. Err: where
    /// it does not replay (`noma replay` says more).
    pub(crate) fn applied(
        &mut self,
        index: usize,
        line: usize,
        rec: &Record,
    ) -> Result<(), super::error::TraceError> {
        use super::error::TraceError;
        let current = match self.text.take() {
            Some(t) => t,
            None if rec.pre_sha256 == EMPTY_SHA256 => {
                self.before.clear();
                line_starts("", &mut self.before_starts);
                String::new()
            }
            None => return Err(TraceError::NoStart(line)),
        };
        let pre = (self.text_sha.take()).unwrap_or_else(|| sha256_hex(current.as_bytes()));
        if pre != rec.pre_sha256 {
            return Err(TraceError::PreMismatch {
                line,
                op_id: rec.op_id.clone(),
            });
        }
        let (next, post) = match reapply(&mut self.memo, &current, rec) {
            Ok(next) => (next.text, next.sha256),
            Err(ReapplyError::Fails(e)) => {
                return Err(TraceError::OpFails {
                    line,
                    op_id: rec.op_id.clone(),
                    message: e.message,
                })
            }
            Err(ReapplyError::Differs(_)) => {
                return Err(TraceError::PostMismatch {
                    line,
                    op_id: rec.op_id.clone(),
                })
            }
        };
        let tree = self.memo.parse_edited(&current, &next).0;
        blocks_into(&tree, &mut self.after);
        drop(tree);
        let (old, new, edit) = bounds(&current, &next);
        next_starts(
            &self.before_starts,
            old.len(),
            new.as_bytes(),
            edit,
            &mut self.after_starts,
        );
        debug_assert!(
            {
                let mut all = Vec::new();
                line_starts(new, &mut all);
                all == self.after_starts
            },
            "line starts followed through the edit differ from a full search"
        );
        let starts = (&self.before_starts[..], &self.after_starts[..]);
        let pair = Pair::new((&current, &next), starts, edit);
        let from = self.lineages.out.touches.len();
        touches(
            &mut self.lineages,
            &pair,
            (&self.before, &self.after),
            &rec.op,
        );
        let to = self.lineages.out.touches.len();
        self.lineages.out.records.push((index, from..to));
        std::mem::swap(&mut self.before, &mut self.after);
        std::mem::swap(&mut self.before_starts, &mut self.after_starts);
        self.text = Some(next);
        self.text_sha = Some(post);
        Ok(())
    }

    /// The attribution, with `lines` as the transcript's lines, and the replayed state after its last applied
    /// record (None before the first), from which [`Attributor::resume`]
    /// goes on when the transcript grows.
    pub(crate) fn finish_with_state(self, lines: Vec<LineRef>) -> (Attribution, Option<String>) {
        let mut out = self.lineages.finish();
        out.lines = lines;
        (out, self.text)
    }

    /// Attribution going on from `found` (its lines taken out), the
    /// attribution of a transcript whose records replayed to `text`: the
    /// lineages alive in it are the ids of `text`'s blocks.
    pub(crate) fn resume(mut found: Attribution, text: String) -> Attributor {
        let mut lineages = Lineages::default();
        for (lineage, alive) in found.alive.iter_mut().enumerate() {
            if std::mem::take(alive) {
                (lineages.alias).insert(found.final_ids[lineage].clone(), lineage);
            }
        }
        for (at, id) in found.ids.iter().enumerate() {
            lineages.interned.insert(id.clone(), at as u32);
        }
        lineages.out = found;
        let mut a = Attributor {
            lineages,
            ..Attributor::new(None)
        };
        blocks_into(&a.memo.parse(&text), &mut a.before);
        line_starts(
            text.strip_prefix('\u{feff}').unwrap_or(&text),
            &mut a.before_starts,
        );
        a.text = Some(text);
        a
    }
}

/// The attribution being built, each id's lineage (`alias`), and where
/// each id is in its `ids`.
#[derive(Default)]
struct Lineages {
    out: Attribution,
    alias: HashMap<String, usize>,
    interned: HashMap<String, u32>,
}

impl Lineages {
    fn new_lineage(&mut self, id: &str) -> usize {
        self.out.final_ids.push(id.to_string());
        self.out.alive.push(false);
        let lineage = self.out.final_ids.len() - 1;
        self.alias.insert(id.to_string(), lineage);
        lineage
    }

    /// The lineage of the block `id` names now (a new one if none).
    fn of(&mut self, id: &str) -> usize {
        match self.alias.get(id) {
            Some(l) => *l,
            None => self.new_lineage(id),
        }
    }

    fn intern(&mut self, id: &str) -> u32 {
        if let Some(at) = self.interned.get(id) {
            return *at;
        }
        let at = self.out.ids.len() as u32;
        self.out.ids.push(id.to_string());
        self.interned.insert(id.to_string(), at);
        at
    }

    /// Records that the op `change`d the block `id_then` of `lineage`.
    fn touch(&mut self, lineage: usize, id_then: &str, change: &'static str, from: Option<&str>) {
        let id_then = self.intern(id_then);
        let renamed_from = from.map(|f| self.intern(f));
        self.out.touches.push(Touch {
            lineage: lineage as u32,
            id_then,
            change,
            renamed_from,
        });
    }

    fn finish(mut self) -> Attribution {
        for (id, lineage) in self.alias {
            self.out.final_ids[lineage] = id;
            self.out.alive[lineage] = true;
        }
        self.out
    }
}

/// The `rename_id` (from, to) and the `move_block` id an op names.
fn op_fields(op: &Value) -> (Option<(&str, &str)>, Option<&str>) {
    let name = op.get("op").and_then(Value::as_str).unwrap_or("");
    let field = |k: &str| op.get(k).and_then(Value::as_str);
    let renamed = (name == "rename_id")
        .then(|| field("from").zip(field("to")))
        .flatten();
    let moved = (name == "move_block").then(|| field("id")).flatten();
    (renamed, moved)
}

/// The blocks one op touched, pushed to `lin`, which keeps each id's
/// lineage current. When the op kept every id in its place (the common
/// case: an edit inside blocks), blocks are paired by position and only
/// those that differ are looked at; otherwise by id ([`touches_by_id`]).
fn touches<'b>(
    lin: &mut Lineages,
    pair: &Pair<'_>,
    (before, after): (&'b [Blk], &'b [Blk]),
    op: &Value,
) {
    let (_, moved) = op_fields(op);
    let same_ids =
        before.len() == after.len() && before.iter().zip(after).all(|(a, b)| a.id == b.id);
    if !same_ids {
        return touches_by_id(lin, pair, (before, after), op);
    }
    let parent_id = |list: &'b [Blk], b: &Blk| b.parent.map(|p| list[p as usize].id.as_str());
    let mut differ = Vec::new();
    for (k, (a, b)) in before.iter().zip(after).enumerate() {
        let same = pair.same(a, b);
        let reparented = parent_id(before, a) != parent_id(after, b);
        if moved == Some(b.id.as_str()) || reparented || !same {
            differ.push((k, same, reparented));
        }
    }
    // A duplicate id is compared at its last place only (as by id): leave
    // such a document to the comparison by id.
    let repeated = |k: usize| {
        after
            .iter()
            .enumerate()
            .any(|(j, b)| j != k && b.id == after[k].id)
    };
    if differ.iter().any(|&(k, _, _)| repeated(k)) {
        return touches_by_id(lin, pair, (before, after), op);
    }
    for (k, same, reparented) in differ {
        let id = after[k].id.as_str();
        let change = if moved == Some(id) || (reparented && same) {
            "moved"
        } else {
            "changed"
        };
        let lineage = lin.of(id);
        lin.touch(lineage, id, change, None);
    }
}

/// [`touches`] by id: every id of the state after the op in document
/// order, then the ids it removed.
fn touches_by_id<'b>(
    lin: &mut Lineages,
    pair: &Pair<'_>,
    (before, after): (&'b [Blk], &'b [Blk]),
    op: &Value,
) {
    // The last block with an id, as a map by id keeps it.
    let by_id = |list: &[Blk]| -> HashMap<String, usize> {
        list.iter()
            .enumerate()
            .map(|(i, b)| (b.id.to_string(), i))
            .collect()
    };
    let (b_ids, a_ids) = (by_id(before), by_id(after));
    let (renamed, moved) = op_fields(op);
    let renamed = renamed.filter(|(from, to)| b_ids.contains_key(*from) && a_ids.contains_key(*to));
    let parent_of =
        |list: &'b [Blk], i: usize| list[i].parent.map(|p| list[p as usize].id.as_str());
    let gone = before.iter().filter(|b| !a_ids.contains_key(b.id.as_str()));
    let mut seen = HashSet::new();
    for blk in after.iter().chain(gone) {
        let id = blk.id.as_str();
        // A document with a duplicate id lists it twice; touch it once.
        if !seen.insert(id) {
            continue;
        }
        match (b_ids.get(id), a_ids.get(id)) {
            (Some(&i), Some(&j)) => {
                let same = pair.same(&before[i], &after[j]);
                let reparented = parent_of(before, i) != parent_of(after, j);
                let change = if moved == Some(id) || (reparented && same) {
                    "moved"
                } else if !same {
                    "changed"
                } else {
                    continue;
                };
                let lineage = lin.of(id);
                lin.touch(lineage, id, change, None);
            }
            (None, Some(_)) => match renamed {
                Some((from, to)) if to == id => {
                    let lineage = match lin.alias.remove(from) {
                        Some(l) => l,
                        None => lin.new_lineage(id),
                    };
                    lin.alias.insert(id.to_string(), lineage);
                    lin.touch(lineage, id, "renamed", Some(from));
                }
                _ => {
                    let lineage = lin.new_lineage(id);
                    lin.touch(lineage, id, "added", None);
                }
            },
            (Some(_), None) if renamed.is_some_and(|(from, _)| from == id) => {}
            (Some(_), None) => {
                if let Some(lineage) = lin.alias.remove(id) {
                    lin.out.final_ids[lineage] = id.to_string();
                    lin.touch(lineage, id, "removed", None);
                }
            }
            (None, None) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use noma_core::doc::hash::{block_digests, block_hashes};
    use proptest::prelude::*;
    use serde_json::json;

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

    /// Every block of `text` hashed, from a full parse: the comparison
    /// the attribution made before it followed the edit.
    fn ref_blocks(text: &str) -> Blocks {
        let tree = noma_core::doc::parse(text);
        let mut out = Blocks::default();
        for (id, digest, parent) in block_digests(text, &tree) {
            out.order.push(id.clone());
            out.by_id.insert(id, (digest, parent));
        }
        out
    }

    /// The blocks one op touched, keeping `alias` (id → lineage) current.
    fn ref_touches(
        out: &mut RefOut,
        alias: &mut HashMap<String, usize>,
        (before, after): (&Blocks, &Blocks),
        op: &Value,
    ) -> Vec<RefTouch> {
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
            let touch = |change, lineage, renamed_from: Option<String>| RefTouch {
                lineage,
                id_then: id.clone(),
                change,
                renamed_from,
            };
            match (before.get(id), after.get(id)) {
                (Some((sha, parent)), Some((sha2, parent2))) => {
                    let change = if moved == Some(id.as_str()) || (parent != parent2 && sha == sha2)
                    {
                        "moved"
                    } else if sha != sha2 {
                        "changed"
                    } else {
                        continue;
                    };
                    let lineage = match alias.get(id) {
                        Some(l) => *l,
                        None => ref_new_lineage(out, alias, id),
                    };
                    list.push(touch(change, lineage, None));
                }
                (None, Some(_)) => match renamed {
                    Some((from, to)) if to == id => {
                        let lineage = match alias.remove(from) {
                            Some(l) => l,
                            None => ref_new_lineage(out, alias, id),
                        };
                        alias.insert(id.clone(), lineage);
                        list.push(touch("renamed", lineage, Some(from.to_string())));
                    }
                    _ => {
                        let lineage = ref_new_lineage(out, alias, id);
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

    /// A touch with its ids spelled out.
    #[derive(Debug, Clone, PartialEq, Eq)]
    struct RefTouch {
        lineage: usize,
        id_then: String,
        change: &'static str,
        renamed_from: Option<String>,
    }

    #[derive(Default)]
    struct RefOut {
        final_ids: Vec<String>,
        alive: Vec<bool>,
    }

    fn ref_new_lineage(out: &mut RefOut, alias: &mut HashMap<String, usize>, id: &str) -> usize {
        out.final_ids.push(id.to_string());
        out.alive.push(false);
        let lineage = out.final_ids.len() - 1;
        alias.insert(id.to_string(), lineage);
        lineage
    }

    type Spelled = (Vec<Vec<RefTouch>>, Vec<String>, Vec<bool>);

    /// The touches, final ids and liveness the full comparison gives for
    /// `ops` applied one by one from `base`.
    fn reference(base: &str, ops: &[Value]) -> Spelled {
        let mut out = RefOut::default();
        let mut alias = HashMap::new();
        let mut before = ref_blocks(base);
        for id in &before.order {
            ref_new_lineage(&mut out, &mut alias, id);
        }
        let mut text = base.to_string();
        let mut all = Vec::new();
        for op in ops {
            let next = noma_core::patch::apply_one(&text, op).expect("applies");
            let after = ref_blocks(&next);
            all.push(ref_touches(&mut out, &mut alias, (&before, &after), op));
            before = after;
            text = next;
        }
        for (id, lineage) in alias {
            out.final_ids[lineage] = id;
            out.alive[lineage] = true;
        }
        (all, out.final_ids, out.alive)
    }

    /// An applied record of `op` from `pre` to `post`.
    fn record(pre: &str, post: &str, op: &Value) -> Record {
        serde_json::from_value(json!({
            "protocol_version": "1.0", "tool_version": "test",
            "op_id": "00000000-0000-4000-8000-000000000000",
            "ts": "2026-11-27T00:00:00.000Z",
            "actor": {"kind": "agent", "name": "test"},
            "doc_uri": "file:///d.noma",
            "pre_sha256": sha256_hex(pre.as_bytes()), "post_sha256": sha256_hex(post.as_bytes()),
            "pre_sha": "", "post_sha": "", "op": op, "patch_result": "applied",
            "pre_validation": "ok", "post_validation": "ok"
        }))
        .expect("a record")
    }

    /// The same through [`Attributor`].
    fn fast(base: &str, ops: &[Value]) -> Spelled {
        fast_split(base, ops, None)
    }

    /// The same, stopped after `split` ops (if given), stored as the
    /// block cache stores it, and resumed from there.
    fn fast_split(base: &str, ops: &[Value], split: Option<usize>) -> Spelled {
        let mut a = Attributor::new(Some(base.to_string()));
        let mut text = base.to_string();
        for (i, op) in ops.iter().enumerate() {
            if split == Some(i) {
                // One line per record so far, as the stream keeps them.
                let lines = (0..i as u64)
                    .map(|k| LineRef {
                        offset: k,
                        len: 1,
                        origin: 0,
                    })
                    .collect();
                let (found, state) = a.finish_with_state(lines);
                let mut found = Attribution::decode(&found.encode()).expect("decodes");
                found.lines.clear();
                a = Attributor::resume(found, state.expect("a state"));
            }
            let next = noma_core::patch::apply_one(&text, op).expect("applies");
            a.applied(i, i + 1, &record(&text, &next, op))
                .expect("replays");
            text = next;
        }
        let out = a.finish_with_state(Vec::new()).0;
        let spell = |t: &Touch| RefTouch {
            lineage: t.lineage as usize,
            id_then: out.ids[t.id_then as usize].clone(),
            change: t.change,
            renamed_from: t.renamed_from.map(|r| out.ids[r as usize].clone()),
        };
        let touches = (0..out.records.len())
            .map(|k| out.touches_of(k).iter().map(spell).collect())
            .collect();
        (touches, out.final_ids, out.alive)
    }

    const BASES: [&str; 4] = [
        "# Plan\n\nIntro [[a]].\n\n::note{id=\"a\" k=1}\nalpha\n::\n\n::note{id=\"b\"}\nbeta\n\n- one\n- two\n::\n\n## Details\n\n::claim{id=\"c\"}\ngamma\n\n:::evidence{id=\"e\" for=\"c\"}\nrun\n:::\n::\n\nTail.\n\n## More\n\n| A | B |\n| --- | --- |\n| 1 | 2 |\n",
        "---\ntitle: T\n---\n\n# One\n\n::note{id=\"a\"}\nx\n::\n\n# Two\n\n::note{id=\"a\"}\nduplicate\n::\n\n::note{id=\"b\"}\ny\n::\n",
        "# Crlf\r\n\r\n::note{id=\"a\"}\r\nx\r\n::\r\n\r\n## Sub\r\n\r\n::note{id=\"b\"}\r\ny\r\n::\r\n",
        "\u{feff}# Bom\n\n::note{id=\"a\"}\nx\n::\n\n::note{id=\"b\"}\ny\n::\n",
    ];

    const CONTENTS: [&str; 6] = [
        "::note{id=\"n\"}\nnew\n::",
        "::note{id=\"a\"}\nagain\n::",
        "Plain text.",
        "changed body\n\nsecond paragraph",
        "- a list\n- of two",
        "## Heading inside",
    ];

    /// An op made from four numbers over the ids `text` has now.
    fn make_op(text: &str, (kind, a, b, c): (u8, usize, usize, usize)) -> Value {
        let tree = noma_core::doc::parse(text);
        let ids: Vec<String> = block_hashes(text, &tree)
            .into_iter()
            .map(|h| h.id)
            .collect();
        let id = ids.get(a % ids.len().max(1)).cloned().unwrap_or_default();
        let other = ids.get(b % ids.len().max(1)).cloned().unwrap_or_default();
        let content = CONTENTS[c % CONTENTS.len()];
        match kind % 9 {
            0 => {
                json!({"op": "update_attribute", "id": id, "key": format!("k{}", c % 3), "value": c})
            }
            1 => json!({"op": "replace_body", "id": id, "content": content}),
            2 => json!({"op": "rename_id", "from": id, "to": format!("r{}", c % 4)}),
            3 => json!({"op": "move_block", "id": id, "parent": other, "position": c % 3}),
            4 => json!({"op": "delete_block", "id": id}),
            5 => json!({"op": "add_block", "parent": other, "content": content, "position": c % 3}),
            6 => json!({"op": "replace_block", "id": id, "content": content}),
            7 => json!({"op": "update_heading", "id": id, "title": format!("Title {c}")}),
            _ => {
                let lines: Vec<&str> = text.split('\n').collect();
                let at = a % lines.len().max(1);
                let new = [
                    "",
                    "New prose.",
                    "::note{id=\"z\"}",
                    "::",
                    "# Top",
                    "- item",
                ][c % 6];
                json!({"op": "x-noma/replace_lines", "line": at + 1, "old": lines[at], "new": new})
            }
        }
    }

    /// The ops of `seeds` that apply and change the document, in turn.
    fn applied_ops(base: &str, seeds: &[(u8, usize, usize, usize)]) -> Vec<Value> {
        let mut text = base.to_string();
        let mut ops = Vec::new();
        for seed in seeds {
            let op = make_op(&text, *seed);
            if let Ok(next) = noma_core::patch::apply_one(&text, &op) {
                if next != text {
                    text = next;
                    ops.push(op);
                }
            }
        }
        ops
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Following the edit finds exactly the touches that hashing every
        /// block of every state finds.
        #[test]
        fn fast_attribution_equals_hashing_every_block(
            base in 0..BASES.len(),
            seeds in prop::collection::vec((any::<u8>(), 0..64usize, 0..64usize, 0..64usize), 1..24),
        ) {
            let ops = applied_ops(BASES[base], &seeds);
            prop_assert_eq!(fast(BASES[base], &ops), reference(BASES[base], &ops), "ops {:?}", ops);
        }

        /// Attribution stopped after any record, stored and resumed, gives
        /// what attributing every record at once gives.
        #[test]
        fn resumed_attribution_equals_attributing_at_once(
            base in 0..BASES.len(),
            seeds in prop::collection::vec((any::<u8>(), 0..64usize, 0..64usize, 0..64usize), 1..24),
            at in 0..24usize,
        ) {
            let ops = applied_ops(BASES[base], &seeds);
            let split = (!ops.is_empty()).then(|| at % ops.len());
            prop_assert_eq!(fast_split(BASES[base], &ops, split), fast(BASES[base], &ops), "ops {:?}", ops);
        }
    }

    #[test]
    fn an_attribute_edit_touches_its_block_and_the_sections_around_it() {
        let ops = vec![json!({"op": "update_attribute", "id": "c", "key": "k", "value": 2})];
        let (touches, ids, _) = fast(BASES[0], &ops);
        let named: Vec<(&str, &str)> = touches[0]
            .iter()
            .map(|t| (ids[t.lineage].as_str(), t.change))
            .collect();
        assert_eq!(
            named,
            vec![
                ("plan", "changed"),
                ("details", "changed"),
                ("c", "changed")
            ]
        );
        assert_eq!((touches, ids.clone()), {
            let (t, i, _) = reference(BASES[0], &ops);
            (t, i)
        });
    }
}

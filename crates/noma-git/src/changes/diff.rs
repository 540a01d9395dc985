//! The block diff: which addressable blocks of one document changed between
//! two versions, reported at the smallest block that explains each change.
//!
//! Inputs are the two texts and their block tables ([`BlockHash`], pre-order,
//! as [`noma_core::doc::hash::block_hashes`] and the block cache produce them).
//! The tables are enough for matching; the texts are sliced only for blocks
//! whose hash changed, and parsed again only when aliases could pair an
//! unmatched old block with an unmatched new one.
//!
//! Rules, in order:
//! 1. Match by canonical id (the k-th occurrence of a duplicated id pairs
//!    with the k-th occurrence on the other side).
//! 2. Match unmatched blocks through aliases (a new block whose alias is an
//!    old id, or an old block whose alias is a new id): `renamed`.
//! 3. Pair the remaining unmatched blocks whose kind, directive name and
//!    body (own lines after the first, blank lines ignored) are equal, in
//!    document order: `renamed` (same content, new id).
//! 4. Matched blocks whose parent block changed (parents compared through
//!    the matching, so a renamed parent does not move its children): `moved`.
//! 5. Unmatched new blocks are `added` and unmatched old ones `removed`,
//!    reported only at the outermost such block (the children of an added
//!    section are part of that addition).
//! 6. Matched blocks whose source hash changed are `modified` when their OWN
//!    lines (the slice minus the slices of id-bearing children, blank lines
//!    ignored) changed, or when no change was reported inside them (so an
//!    edit is never lost, e.g. children reordered). A section whose
//!    changes all lie inside reported children is not reported, nor is a
//!    block whose only difference is blank lines or line endings.

use std::cell::OnceCell;
use std::collections::VecDeque;

use foldhash::HashMap as FastMap;

use noma_core::doc::hash::{block_hashes, sha256_hex, BlockHash};
use noma_core::doc::lines::{self, Line};

/// What happened to a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    /// New since the base.
    Added,
    /// Same id, own content changed.
    Modified,
    /// Gone since the base.
    Removed,
    /// New id for the same block (alias or same content).
    Renamed,
    /// Same id, now under another parent block.
    Moved,
}

impl Change {
    /// The wire spelling (`added`, `modified`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Added => "added",
            Change::Modified => "modified",
            Change::Removed => "removed",
            Change::Renamed => "renamed",
            Change::Moved => "moved",
        }
    }
}

/// One changed block.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BlockChange {
    /// Canonical id now (the old id for a removed block).
    pub id: String,
    /// Node type (`section`, `directive`, …).
    pub kind: &'static str,
    /// Directive name, for directives.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What happened.
    pub change: Change,
    /// A moved block whose own content changed too (`moved+modified` in
    /// the text output): moving is not all that happened to it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub modified: bool,
    /// `[startLine, endLine]` now (absent for a removed block).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines: Option<[u32; 2]>,
    /// The block's source now, lines joined with `\n` (its sha256 is `sha256`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// sha256 of `source` (the `baseHash` a patch would send).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// sha256 of the block at the base (absent for an added block).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_sha256: Option<String>,
    /// The id at the base, for a renamed block.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_id: Option<String>,
    /// `[startLine, endLine]` at the base (absent for an added block).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_lines: Option<[u32; 2]>,
    /// The block's source at the base, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_source: Option<String>,
    /// Id of the parent block now (at the base, for a removed block).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// Id of the parent block at the base, for a moved block.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_parent: Option<String>,
}

/// The result of diffing one document.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DocDiff {
    /// The changed blocks, in new-document order (removed blocks last, in
    /// old-document order).
    pub changes: Vec<BlockChange>,
    /// Whether non-blank lines outside every block (frontmatter, text before
    /// the first heading) changed.
    pub outside_blocks_changed: bool,
}

/// One version of a document: its text and block table.
#[derive(Debug, Clone, Copy)]
pub struct Side<'a> {
    /// The text the table was computed from.
    pub text: &'a str,
    /// Its addressable blocks in pre-order.
    pub blocks: &'a [BlockHash],
}

/// Diffs two texts (parsing both); see the module docs for the rules.
pub fn diff_docs(old: &str, new: &str) -> DocDiff {
    let ob = block_hashes(old, &noma_core::doc::parse(old));
    let nb = block_hashes(new, &noma_core::doc::parse(new));
    diff_blocks(
        Side {
            text: old,
            blocks: &ob,
        },
        Side {
            text: new,
            blocks: &nb,
        },
    )
}

/// A side prepared for the diff: split lines, parent links, lazily the
/// aliases and own-content fingerprints.
struct Prepared<'a> {
    side: Side<'a>,
    lines: Vec<Line<'a>>,
    parent: Vec<Option<usize>>,
    children: Vec<Vec<usize>>,
    aliases: OnceCell<Vec<Vec<String>>>,
}

impl<'a> Prepared<'a> {
    fn new(side: Side<'a>) -> Prepared<'a> {
        let text = side.text.strip_prefix('\u{feff}').unwrap_or(side.text);
        let parent = parents(side.blocks);
        let mut children = vec![Vec::new(); side.blocks.len()];
        for (i, p) in parent.iter().enumerate() {
            if let Some(p) = *p {
                if let Some(c) = children.get_mut(p) {
                    c.push(i);
                }
            }
        }
        Prepared {
            side,
            lines: lines::split(text),
            parent,
            children,
            aliases: OnceCell::new(),
        }
    }

    fn block(&self, i: usize) -> Option<&'a BlockHash> {
        self.side.blocks.get(i)
    }

    /// The aliases of every block, by block index (parsed on first use).
    fn aliases(&self) -> &[Vec<String>] {
        self.aliases.get_or_init(|| {
            let doc = noma_core::doc::parse(self.side.text);
            let out: Vec<Vec<String>> = doc
                .walk()
                .filter(|n| n.id.is_some())
                .map(|n| n.aliases.iter().map(|a| a.to_string()).collect())
                .collect();
            // The table came from the same parser; if it somehow does not
            // line up, aliases are simply not used.
            if out.len() == self.side.blocks.len() {
                out
            } else {
                Vec::new()
            }
        })
    }

    fn slice(&self, i: usize) -> Option<String> {
        let b = self.block(i)?;
        Some(lines::slice_joined(&self.lines, b.lines[0], b.lines[1]))
    }

    /// sha256 of the non-blank lines of `start..=end` outside `holes`
    /// (sorted, disjoint line ranges), skipping the first `skip` lines.
    fn fingerprint(&self, start: u32, end: u32, holes: &[[u32; 2]], skip: u32) -> Option<String> {
        let mut buf = String::new();
        let mut holes = holes.iter().peekable();
        let mut n = start.max(1).saturating_add(skip);
        let last = end.min(u32::try_from(self.lines.len()).unwrap_or(u32::MAX));
        while n <= last {
            if let Some(h) = holes.peek() {
                if n >= h[0] {
                    if n <= h[1] {
                        n = h[1].saturating_add(1);
                    }
                    holes.next();
                    continue;
                }
            }
            if let Some(line) = self.lines.get((n - 1) as usize) {
                if !line.text.trim().is_empty() {
                    buf.push_str(line.text);
                    buf.push('\n');
                }
            }
            n += 1;
        }
        (!buf.is_empty()).then(|| sha256_hex(buf.as_bytes()))
    }

    fn holes(&self, i: usize) -> Vec<[u32; 2]> {
        let mut h: Vec<[u32; 2]> = self
            .children
            .get(i)
            .map(|c| {
                c.iter()
                    .filter_map(|&k| self.block(k).map(|b| b.lines))
                    .collect()
            })
            .unwrap_or_default();
        h.sort_unstable();
        h
    }

    /// Own content: the block minus its id-bearing children, blank lines ignored.
    fn own(&self, i: usize) -> Option<String> {
        let b = self.block(i)?;
        self.fingerprint(b.lines[0], b.lines[1], &self.holes(i), 0)
    }

    /// The whole block, blank lines ignored.
    fn full(&self, i: usize) -> Option<String> {
        let b = self.block(i)?;
        self.fingerprint(b.lines[0], b.lines[1], &[], 0)
    }

    /// Body: the own content after the first line (heading / opening fence),
    /// which is where an id is written.
    fn body(&self, i: usize) -> Option<String> {
        let b = self.block(i)?;
        self.fingerprint(b.lines[0], b.lines[1], &self.holes(i), 1)
    }

    /// Non-blank lines outside every top-level block.
    fn outside(&self) -> Option<String> {
        let mut h: Vec<[u32; 2]> = self
            .side
            .blocks
            .iter()
            .zip(&self.parent)
            .filter(|(_, p)| p.is_none())
            .map(|(b, _)| b.lines)
            .collect();
        h.sort_unstable();
        self.fingerprint(1, u32::MAX, &h, 0)
    }

    fn parent_id(&self, i: usize) -> Option<String> {
        let p = (*self.parent.get(i)?)?;
        self.block(p).map(|b| b.id.clone())
    }
}

/// Parent index of every block: the nearest earlier block whose span
/// contains it (the table is in pre-order, so a stack suffices).
fn parents(blocks: &[BlockHash]) -> Vec<Option<usize>> {
    let mut out = Vec::with_capacity(blocks.len());
    let mut stack: Vec<usize> = Vec::new();
    for (i, b) in blocks.iter().enumerate() {
        while let Some(&top) = stack.last() {
            let t = &blocks[top];
            if t.lines[0] <= b.lines[0] && b.lines[1] <= t.lines[1] {
                break;
            }
            stack.pop();
        }
        out.push(stack.last().copied());
        stack.push(i);
    }
    out
}

/// Marks `i` and its ancestors as containing a reported change; stops at
/// the first already-marked ancestor so the total work stays linear.
fn mark_up(flags: &mut [bool], parent: &[Option<usize>], i: usize) {
    let mut cur = parent.get(i).copied().flatten();
    while let Some(p) = cur {
        match flags.get_mut(p) {
            Some(f) if !*f => *f = true,
            _ => break,
        }
        cur = parent.get(p).copied().flatten();
    }
}

/// Diffs two prepared versions; see the module docs for the rules.
pub fn diff_blocks(old: Side<'_>, new: Side<'_>) -> DocDiff {
    let o = Prepared::new(old);
    let n = Prepared::new(new);
    let mut m = Matching::new(old.blocks.len(), new.blocks.len());
    m.by_id(old.blocks, new.blocks);
    // Aliases are only parsed when both sides have leftovers.
    if m.both_unmatched() {
        m.by_alias(&o, &n);
    }
    if m.both_unmatched() {
        m.by_body(&o, &n);
    }
    let reported = Reported::select(&o, &n, &m);
    let mut changes = new_side_changes(&o, &n, &m, &reported.new);
    changes.extend(removed_changes(&o, &m, &reported.old));
    DocDiff {
        changes,
        outside_blocks_changed: o.outside() != n.outside(),
    }
}

/// The pairing of old blocks with new ones that rules 1–3 build, kept in
/// both directions because the later rules look it up from either side.
struct Matching {
    /// Old block index → new block index.
    o2n: Vec<Option<usize>>,
    /// New block index → old block index.
    n2o: Vec<Option<usize>>,
}

impl Matching {
    fn new(old_len: usize, new_len: usize) -> Matching {
        Matching {
            o2n: vec![None; old_len],
            n2o: vec![None; new_len],
        }
    }

    fn pair(&mut self, i: usize, j: usize) {
        self.o2n[i] = Some(j);
        self.n2o[j] = Some(i);
    }

    /// Whether both sides still have unmatched blocks, the only case in
    /// which a later (costlier) rule can pair anything.
    fn both_unmatched(&self) -> bool {
        self.o2n.iter().any(Option::is_none) && self.n2o.iter().any(Option::is_none)
    }

    /// Rule 1: by id, the k-th occurrence to the k-th occurrence.
    fn by_id(&mut self, old: &[BlockHash], new: &[BlockHash]) {
        let mut by_id: FastMap<&str, VecDeque<usize>> = FastMap::default();
        for (i, b) in old.iter().enumerate() {
            by_id.entry(b.id.as_str()).or_default().push_back(i);
        }
        for (j, b) in new.iter().enumerate() {
            if let Some(i) = by_id.get_mut(b.id.as_str()).and_then(VecDeque::pop_front) {
                self.pair(i, j);
            }
        }
    }

    /// Rule 2: new aliases naming old ids, then old aliases naming new ids.
    fn by_alias(&mut self, o: &Prepared<'_>, n: &Prepared<'_>) {
        pair_through_aliases(n.aliases(), &mut self.n2o, o.side.blocks, &mut self.o2n);
        if self.both_unmatched() {
            pair_through_aliases(o.aliases(), &mut self.o2n, n.side.blocks, &mut self.n2o);
        }
    }

    /// Rule 3: same kind, directive name and body, in document order.
    fn by_body(&mut self, o: &Prepared<'_>, n: &Prepared<'_>) {
        type Key<'k> = (&'k str, Option<&'k str>, String);
        let mut old_left: FastMap<Key<'_>, VecDeque<usize>> = FastMap::default();
        for (i, b) in o.side.blocks.iter().enumerate() {
            if self.o2n[i].is_none() {
                if let Some(body) = o.body(i) {
                    old_left
                        .entry((b.kind, b.name.as_deref(), body))
                        .or_default()
                        .push_back(i);
                }
            }
        }
        if old_left.is_empty() {
            return;
        }
        for (j, b) in n.side.blocks.iter().enumerate() {
            if self.n2o[j].is_some() {
                continue;
            }
            let Some(body) = n.body(j) else { continue };
            if let Some(i) = old_left
                .get_mut(&(b.kind, b.name.as_deref(), body))
                .and_then(VecDeque::pop_front)
            {
                self.pair(i, j);
            }
        }
    }

    /// Whether old block `i` and new block `j` have the same parent, the
    /// parents compared through the matching (so a renamed parent does not
    /// move its children).
    fn same_parent(&self, o: &Prepared<'_>, n: &Prepared<'_>, i: usize, j: usize) -> bool {
        match (o.parent[i], n.parent[j]) {
            (None, None) => true,
            (Some(op), Some(np)) => self.o2n[op] == Some(np),
            _ => false,
        }
    }
}

/// One direction of rule 2: pairs every unmatched block of the `from` side
/// with the first unmatched block of the `to` side whose id one of its
/// aliases names. `from_map` and `to_map` are the matching seen from each
/// side, so the same code serves both directions.
fn pair_through_aliases(
    from_aliases: &[Vec<String>],
    from_map: &mut [Option<usize>],
    to_blocks: &[BlockHash],
    to_map: &mut [Option<usize>],
) {
    let mut to_left: FastMap<&str, VecDeque<usize>> = FastMap::default();
    for (t, b) in to_blocks.iter().enumerate() {
        if to_map[t].is_none() {
            to_left.entry(b.id.as_str()).or_default().push_back(t);
        }
    }
    for (f, aliases) in from_aliases.iter().enumerate() {
        if from_map[f].is_some() {
            continue;
        }
        for a in aliases {
            if let Some(t) = to_left.get_mut(a.as_str()).and_then(VecDeque::pop_front) {
                from_map[f] = Some(t);
                to_map[t] = Some(f);
                break;
            }
        }
    }
}

/// Which blocks each side reports (rules 4–6), and which contain a
/// reported block: rule 6 needs the latter to tell an edit explained by a
/// reported child from one that must be reported itself.
struct Reported {
    new: Vec<bool>,
    old: Vec<bool>,
    inside_new: Vec<bool>,
    inside_old: Vec<bool>,
}

impl Reported {
    fn select(o: &Prepared<'_>, n: &Prepared<'_>, m: &Matching) -> Reported {
        let (no, nn) = (o.side.blocks.len(), n.side.blocks.len());
        let mut r = Reported {
            new: vec![false; nn],
            old: vec![false; no],
            inside_new: vec![false; nn],
            inside_old: vec![false; no],
        };
        let candidates = r.structural(o, n, m);
        r.content(o, n, &candidates);
        r
    }

    /// Rules 4 and 5 (renamed, moved, added, removed), in new order then
    /// old order. Returns rule 6's candidates: the other matched blocks
    /// whose hash changed, as (old, new) indices in new order.
    fn structural(
        &mut self,
        o: &Prepared<'_>,
        n: &Prepared<'_>,
        m: &Matching,
    ) -> Vec<(usize, usize)> {
        let mut candidates = Vec::new();
        for (j, nb) in n.side.blocks.iter().enumerate() {
            let Some(i) = m.n2o[j] else {
                // Added; reported at the outermost added block only.
                let parent_added = n.parent[j].is_some_and(|p| m.n2o[p].is_none());
                if !parent_added {
                    self.new[j] = true;
                }
                continue;
            };
            let Some(ob) = o.block(i) else { continue };
            if ob.id != nb.id || !m.same_parent(o, n, i, j) {
                self.new[j] = true;
                self.old[i] = true;
            } else if ob.sha256 != nb.sha256 {
                candidates.push((i, j));
            }
        }
        for (i, p) in o.parent.iter().enumerate() {
            if m.o2n[i].is_none() && !p.is_some_and(|p| m.o2n[p].is_none()) {
                self.old[i] = true;
            }
        }
        for j in (0..self.new.len()).filter(|&j| self.new[j]) {
            mark_up(&mut self.inside_new, &n.parent, j);
        }
        for i in (0..self.old.len()).filter(|&i| self.old[i]) {
            mark_up(&mut self.inside_old, &o.parent, i);
        }
        candidates
    }

    /// Rule 6: the hash-changed matched blocks, innermost first.
    fn content(&mut self, o: &Prepared<'_>, n: &Prepared<'_>, candidates: &[(usize, usize)]) {
        for &(i, j) in candidates.iter().rev() {
            let own_changed = o.own(i) != n.own(j);
            let inside = self.inside_new[j] || self.inside_old[i];
            // Not explained by a reported change inside: report it unless the
            // difference is only blank lines (e.g. a separator before a new
            // sibling section moved into this block's span).
            if own_changed || (!inside && o.full(i) != n.full(j)) {
                self.new[j] = true;
                self.old[i] = true;
                mark_up(&mut self.inside_new, &n.parent, j);
                mark_up(&mut self.inside_old, &o.parent, i);
            }
        }
    }
}

/// The reported blocks that exist now (added, renamed, moved, modified),
/// in new-document order.
fn new_side_changes(
    o: &Prepared<'_>,
    n: &Prepared<'_>,
    m: &Matching,
    reported: &[bool],
) -> Vec<BlockChange> {
    let mut changes = Vec::new();
    for (j, nb) in n.side.blocks.iter().enumerate() {
        if !reported[j] {
            continue;
        }
        let old_i = m.n2o[j];
        let ob = old_i.and_then(|i| o.block(i));
        let change = match ob {
            None => Change::Added,
            Some(ob) if ob.id != nb.id => Change::Renamed,
            Some(_) if m.same_parent(o, n, old_i.unwrap_or_default(), j) => Change::Modified,
            Some(_) => Change::Moved,
        };
        changes.push(BlockChange {
            id: nb.id.clone(),
            kind: nb.kind,
            name: nb.name.clone(),
            change,
            modified: change == Change::Moved && ob.is_some_and(|b| b.sha256 != nb.sha256),
            lines: Some(nb.lines),
            source: n.slice(j),
            sha256: Some(nb.sha256.clone()),
            old_sha256: ob.map(|b| b.sha256.clone()),
            old_id: (change == Change::Renamed)
                .then(|| ob.map(|b| b.id.clone()))
                .flatten(),
            old_lines: ob.map(|b| b.lines),
            old_source: old_i.and_then(|i| o.slice(i)),
            parent: n.parent_id(j),
            old_parent: if change == Change::Moved {
                old_i.and_then(|i| o.parent_id(i))
            } else {
                None
            },
        });
    }
    changes
}

/// The reported blocks that are gone, in old-document order.
fn removed_changes(o: &Prepared<'_>, m: &Matching, reported: &[bool]) -> Vec<BlockChange> {
    let mut changes = Vec::new();
    for (i, ob) in o.side.blocks.iter().enumerate() {
        if !reported[i] || m.o2n[i].is_some() {
            continue;
        }
        changes.push(BlockChange {
            id: ob.id.clone(),
            kind: ob.kind,
            name: ob.name.clone(),
            change: Change::Removed,
            modified: false,
            lines: None,
            source: None,
            sha256: None,
            old_sha256: Some(ob.sha256.clone()),
            old_id: None,
            old_lines: Some(ob.lines),
            old_source: o.slice(i),
            parent: o.parent_id(i),
            old_parent: None,
        });
    }
    changes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn triples(d: &DocDiff) -> Vec<(String, Change)> {
        let mut v: Vec<_> = d.changes.iter().map(|c| (c.id.clone(), c.change)).collect();
        v.sort();
        v
    }

    fn t(id: &str, c: Change) -> (String, Change) {
        (id.to_string(), c)
    }

    const BASE: &str = "---\ntitle: T\n---\n\n# Top\n\nIntro.\n\n## Alpha\n\nAlpha text.\n\n::claim{id=\"c1\"}\nClaim one.\n::\n\n::claim{id=\"c2\"}\nClaim two.\n::\n\n## Beta\n\nBeta text.\n";

    #[test]
    fn identical_texts_have_no_changes() {
        let d = diff_docs(BASE, BASE);
        assert!(d.changes.is_empty());
        assert!(!d.outside_blocks_changed);
    }

    #[test]
    fn nested_child_edit_reports_only_the_child() {
        let new = BASE.replace("Claim one.", "Claim one, revised.");
        let d = diff_docs(BASE, &new);
        assert_eq!(triples(&d), [t("c1", Change::Modified)]);
        let c = &d.changes[0];
        assert_eq!(c.parent.as_deref(), Some("alpha"));
        assert_eq!(
            c.source.as_deref(),
            Some("::claim{id=\"c1\"}\nClaim one, revised.\n::")
        );
        assert_eq!(
            c.sha256.as_deref(),
            Some(sha256_hex(c.source.as_deref().unwrap_or("").as_bytes()).as_str())
        );
        assert_eq!(
            c.old_source.as_deref(),
            Some("::claim{id=\"c1\"}\nClaim one.\n::")
        );
        assert_ne!(c.sha256, c.old_sha256);
    }

    #[test]
    fn own_and_child_edit_reports_both() {
        let new = BASE
            .replace("Claim one.", "Claim one, revised.")
            .replace("Alpha text.", "Alpha text, revised.");
        let d = diff_docs(BASE, &new);
        assert_eq!(
            triples(&d),
            [t("alpha", Change::Modified), t("c1", Change::Modified)]
        );
    }

    #[test]
    fn added_and_removed_children_do_not_report_the_parent() {
        let new = BASE
            .replace("::claim{id=\"c2\"}\nClaim two.\n::\n\n", "")
            .replace(
                "Beta text.\n",
                "Beta text.\n\n::claim{id=\"c3\"}\nNew.\n::\n",
            );
        let d = diff_docs(BASE, &new);
        assert_eq!(
            triples(&d),
            [t("c2", Change::Removed), t("c3", Change::Added)]
        );
        let removed = d.changes.iter().find(|c| c.id == "c2").unwrap();
        assert_eq!(removed.parent.as_deref(), Some("alpha"));
        assert!(removed.lines.is_none() && removed.sha256.is_none());
        assert!(removed.old_sha256.is_some());
    }

    #[test]
    fn added_section_is_reported_once_not_its_children() {
        let new = format!("{BASE}\n## Gamma\n\n::claim{{id=\"g1\"}}\nG.\n::\n");
        let d = diff_docs(BASE, &new);
        assert_eq!(triples(&d), [t("gamma", Change::Added)]);
    }

    #[test]
    fn same_content_new_id_is_a_rename() {
        let new = BASE.replace("::claim{id=\"c2\"}", "::claim{id=\"c2-renamed\"}");
        let d = diff_docs(BASE, &new);
        assert_eq!(triples(&d), [t("c2-renamed", Change::Renamed)]);
        assert_eq!(d.changes[0].old_id.as_deref(), Some("c2"));
        // A renamed heading (new slug) with the same body is a rename too.
        let new = BASE.replace("## Beta", "## Bravo");
        let d = diff_docs(BASE, &new);
        assert_eq!(triples(&d), [t("bravo", Change::Renamed)]);
    }

    #[test]
    fn alias_makes_a_rename_even_with_new_content() {
        let new = BASE.replace(
            "::claim{id=\"c2\"}\nClaim two.",
            "::claim{id=\"k2\" aliases=\"c2\"}\nClaim two, reworded.",
        );
        let d = diff_docs(BASE, &new);
        assert_eq!(triples(&d), [t("k2", Change::Renamed)]);
        assert_eq!(d.changes[0].old_id.as_deref(), Some("c2"));
    }

    #[test]
    fn different_content_new_id_is_add_plus_remove() {
        let new = BASE.replace(
            "::claim{id=\"c2\"}\nClaim two.",
            "::claim{id=\"k2\"}\nOther.",
        );
        let d = diff_docs(BASE, &new);
        assert_eq!(
            triples(&d),
            [t("c2", Change::Removed), t("k2", Change::Added)]
        );
    }

    #[test]
    fn block_under_a_new_parent_is_moved_not_its_parents() {
        let new = BASE
            .replace("::claim{id=\"c2\"}\nClaim two.\n::\n\n", "")
            .replace(
                "Beta text.\n",
                "Beta text.\n\n::claim{id=\"c2\"}\nClaim two.\n::\n",
            );
        let d = diff_docs(BASE, &new);
        assert_eq!(triples(&d), [t("c2", Change::Moved)]);
        assert_eq!(d.changes[0].parent.as_deref(), Some("beta"));
        assert_eq!(d.changes[0].old_parent.as_deref(), Some("alpha"));
        assert!(!d.changes[0].modified, "moved alone is not modified");
    }

    #[test]
    fn renamed_parent_does_not_move_children() {
        let new = BASE.replace("## Alpha\n\nAlpha text.", "## Alef\n\nAlpha text.");
        let d = diff_docs(BASE, &new);
        assert_eq!(triples(&d), [t("alef", Change::Renamed)]);
    }

    #[test]
    fn reordered_children_report_the_parent() {
        let new = BASE.replace(
            "::claim{id=\"c1\"}\nClaim one.\n::\n\n::claim{id=\"c2\"}\nClaim two.\n::",
            "::claim{id=\"c2\"}\nClaim two.\n::\n\n::claim{id=\"c1\"}\nClaim one.\n::",
        );
        let d = diff_docs(BASE, &new);
        assert_eq!(triples(&d), [t("alpha", Change::Modified)]);
    }

    #[test]
    fn duplicate_ids_pair_in_order() {
        let old = "::note{id=\"d\"}\nA\n::\n\n::note{id=\"d\"}\nB\n::\n";
        let new = "::note{id=\"d\"}\nA\n::\n\n::note{id=\"d\"}\nB2\n::\n";
        let d = diff_docs(old, new);
        assert_eq!(triples(&d), [t("d", Change::Modified)]);
        assert_eq!(d.changes[0].lines, Some([5, 7]));
    }

    #[test]
    fn crlf_line_endings_alone_change_no_block() {
        let crlf = BASE.replace('\n', "\r\n");
        let d = diff_docs(BASE, &crlf);
        assert!(d.changes.is_empty(), "{:?}", d.changes);
        assert!(!d.outside_blocks_changed);
        // But a real edit under CRLF is still found, with \n-joined source.
        let edited = crlf.replace("Claim two.", "Claim 2.");
        let d = diff_docs(BASE, &edited);
        assert_eq!(triples(&d), [t("c2", Change::Modified)]);
        assert_eq!(
            d.changes[0].source.as_deref(),
            Some("::claim{id=\"c2\"}\nClaim 2.\n::")
        );
    }

    #[test]
    fn parse_recovered_documents_diff_without_panicking() {
        let broken = BASE.replace("Claim two.\n::\n", "Claim two.\n");
        let d = diff_docs(BASE, &broken);
        assert!(!d.changes.is_empty());
        let d = diff_docs(&broken, BASE);
        assert!(!d.changes.is_empty());
        for junk in ["::", ":::x{id=\"a\"}\n::\n::\n", "# \n#\n", "\u{feff}", ""] {
            let _ = diff_docs(BASE, junk);
            let _ = diff_docs(junk, BASE);
        }
    }

    #[test]
    fn blank_line_only_edits_are_not_reported() {
        let new = BASE.replace("Alpha text.\n\n", "Alpha text.\n\n\n\n");
        assert_ne!(new, BASE);
        assert!(diff_docs(BASE, &new).changes.is_empty());
        // ...but a trailing space is content.
        let new = BASE.replace("Alpha text.", "Alpha text. ");
        assert_eq!(
            triples(&diff_docs(BASE, &new)),
            [t("alpha", Change::Modified)]
        );
    }

    #[test]
    fn old_alias_naming_the_new_id_is_a_rename() {
        let old = "::claim{id=\"a\" aliases=\"b\"}\nOld text.\n::\n";
        let new = "::claim{id=\"b\"}\nNew text.\n::\n";
        let d = diff_docs(old, new);
        assert_eq!(triples(&d), [t("b", Change::Renamed)]);
        assert_eq!(d.changes[0].old_id.as_deref(), Some("a"));
    }

    #[test]
    fn moved_and_edited_is_moved_with_both_hashes() {
        let new = BASE
            .replace("::claim{id=\"c2\"}\nClaim two.\n::\n\n", "")
            .replace(
                "Beta text.\n",
                "Beta text.\n\n::claim{id=\"c2\"}\nClaim 2.\n::\n",
            );
        let d = diff_docs(BASE, &new);
        assert_eq!(triples(&d), [t("c2", Change::Moved)]);
        assert_ne!(d.changes[0].sha256, d.changes[0].old_sha256);
        assert!(
            d.changes[0].modified,
            "moved and edited is reported as both"
        );
        let json = serde_json::to_value(&d.changes[0]).unwrap();
        assert_eq!(json["modified"], true);
    }

    #[test]
    fn frontmatter_edit_is_outside_blocks() {
        let new = BASE.replace("title: T", "title: U");
        let d = diff_docs(BASE, &new);
        assert!(d.changes.is_empty());
        assert!(d.outside_blocks_changed);
    }

    #[test]
    fn whole_document_added_or_removed_lists_top_level_blocks() {
        let d = diff_docs("", BASE);
        assert_eq!(triples(&d), [t("top", Change::Added)]);
        let d = diff_docs(BASE, "");
        assert_eq!(triples(&d), [t("top", Change::Removed)]);
    }
}

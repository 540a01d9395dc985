//! Three-way merge of `.noma` documents at block granularity, for documents
//! without transcripts (and for marking the blocks a transcript
//! reconciliation could not merge).
//!
//! Each version is cut into a tree of containers (the document, sections,
//! directives with children). A container is its *header* (lines before
//! the first child: the heading or opener, frontmatter at the top level),
//! its children (each with the blank "lead" lines before it) and its
//! *footer* (lines after the last child: a directive's closing fence).
//! Children with an id are matched by canonical id. Anonymous ones
//! (paragraphs, lists, tables) are matched by aligning each side's
//! sequence of children with the base's (a line diff over the blocks): an
//! unchanged paragraph matches wherever blocks were inserted or removed
//! around it, and an edited one matches the base paragraph the diff pairs
//! it with, so one side's insertion never turns the other side's edit
//! into a conflict.
//! Per child: a side equal to the base loses to the other; equal sides
//! agree; when both changed it and both versions are containers, the merge
//! recurses into it; otherwise it is a conflict.
//!
//! Order: ours, with the blocks only theirs added placed after their
//! nearest preceding block that survived (deletions win over an unchanged
//! block; deleting a block the other side changed is a conflict).
//!
//! A conflict replaces the block with a `::conflict{id="merge-conflict-…"
//! block="…"}` directive (one colon deeper inside a directive) holding both
//! versions in fenced `noma` code blocks (ours first), so the result still
//! parses without issues and no version is lost; the validator and the
//! hooks then stop it from being committed as is.

use std::collections::{HashMap, HashSet};

use noma_core::doc::ast::{Node, NodeKind};
use noma_core::doc::lines;

/// Deepest container nesting the merge recurses into; deeper blocks are
/// merged as opaque units (the parser's own nesting is far shallower).
const MAX_DEPTH: usize = 64;

/// One block both sides changed differently (or one changed, one deleted).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BlockConflict {
    /// Canonical id of the block (`(document)` for the top-level header).
    pub block: String,
    /// What happened on each side.
    pub message: String,
}

/// The result of [`merge_documents`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocMerge {
    /// The merged text (with conflict blocks when `conflicts` is not empty).
    pub text: String,
    /// Blocks that could not be merged.
    pub conflicts: Vec<BlockConflict>,
}

/// Labels shown in conflict blocks.
#[derive(Debug, Clone)]
pub struct Labels {
    /// Our side (e.g. `HEAD`).
    pub ours: String,
    /// Their side (e.g. the merged branch).
    pub theirs: String,
}

impl Default for Labels {
    fn default() -> Self {
        Labels {
            ours: "ours".into(),
            theirs: "theirs".into(),
        }
    }
}

/// A parsed version: its lines (without terminators) and tree.
struct Version<'a> {
    lines: Vec<&'a str>,
    doc: noma_core::doc::Document,
}

impl<'a> Version<'a> {
    fn new(text: &'a str) -> Version<'a> {
        let body = text.strip_prefix('\u{feff}').unwrap_or(text);
        let all = lines::split(body);
        let n = lines::last_line(&all) as usize;
        let lines = all.iter().take(n).map(|l| l.text).collect();
        Version {
            lines,
            doc: noma_core::doc::parse(body),
        }
    }
}

/// A child of a container with the blank lines before it.
struct Item<'v, 'a> {
    key: String,
    lead: &'v [&'a str],
    body: &'v [&'a str],
    node: &'v Node,
}

impl Item<'_, '_> {
    fn same(&self, other: &Item<'_, '_>) -> bool {
        self.lead == other.lead && self.body == other.body
    }
}

struct Container<'v, 'a> {
    header: &'v [&'a str],
    items: Vec<Item<'v, 'a>>,
    footer: &'v [&'a str],
}

fn root<'v, 'a>(v: &'v Version<'a>) -> Container<'v, 'a> {
    container(&v.lines, 1, &v.doc.children).unwrap_or(Container {
        header: &v.lines,
        items: Vec::new(),
        footer: &[],
    })
}

/// Colons of a conflict block inside `node` (one deeper than a directive).
fn inner_fence(node: &Node, outer: u32) -> u32 {
    match &node.kind {
        NodeKind::Directive { colons, .. } => colons.saturating_add(1),
        _ => outer,
    }
}

struct Merger<'l> {
    /// Ids of the containers being merged (innermost last), to name the
    /// block of a conflict on an anonymous node.
    names: Vec<String>,
    out: Vec<String>,
    conflicts: Vec<BlockConflict>,
    labels: &'l Labels,
}

/// Three-way merges `ours` and `theirs` against `base` block by block.
/// Line endings, BOM and the final newline follow `ours`.
pub fn merge_documents(base: &str, ours: &str, theirs: &str, labels: &Labels) -> DocMerge {
    let (b, o, t) = (Version::new(base), Version::new(ours), Version::new(theirs));
    let mut m = Merger {
        names: Vec::new(),
        out: Vec::new(),
        conflicts: Vec::new(),
        labels,
    };
    let (rb, ro, rt) = (root(&b), root(&o), root(&t));
    m.merge_container(Some(&rb), &ro, &rt, 2, 0, "(document)");
    let body = ours.strip_prefix('\u{feff}').unwrap_or(ours);
    let eol = if body.contains("\r\n") { "\r\n" } else { "\n" };
    let mut text = String::with_capacity(ours.len() + theirs.len() / 4);
    if ours.starts_with('\u{feff}') {
        text.push('\u{feff}');
    }
    text.push_str(&m.out.join(eol));
    let trailing = body.ends_with('\n') || body.ends_with('\r') || body.is_empty();
    if trailing && !m.out.is_empty() {
        text.push_str(eol);
    }
    DocMerge {
        text,
        conflicts: m.conflicts,
    }
}

/// Three-way choice of equal-or-unchanged values; `None` on a real conflict.
fn pick<'x, T: PartialEq + ?Sized>(b: Option<&'x T>, o: &'x T, t: &'x T) -> Option<&'x T> {
    if o == t || b == Some(t) {
        Some(o)
    } else if b == Some(o) {
        Some(t)
    } else {
        None
    }
}

/// The items' keys: the base's own; each side's aligned with the base
/// (with ours when there is no base, as for a block both sides added).
fn item_keys(
    b: Option<&Container<'_, '_>>,
    o: &Container<'_, '_>,
    t: &Container<'_, '_>,
) -> [Vec<String>; 3] {
    let bk: Vec<String> = b.map(own_keys).unwrap_or_default();
    let ok = match b {
        Some(b) => aligned_keys(b, &bk, o, "ours"),
        None => own_keys(o),
    };
    let tk = match b {
        Some(b) => aligned_keys(b, &bk, t, "theirs"),
        None => aligned_keys(o, &ok, t, "theirs"),
    };
    [bk, ok, tk]
}

/// Where each key is.
fn index(keys: &[String]) -> HashMap<String, usize> {
    keys.iter()
        .enumerate()
        .map(|(i, k)| (k.clone(), i))
        .collect()
}

/// An item in output order.
enum Slot {
    /// Ours, by index.
    Ours(usize),
    /// A theirs-only item, by index.
    Theirs(usize),
}

/// One item of theirs, as [`slots`] sees it.
enum Theirs {
    /// Ours has it, at this index.
    AlsoOurs(usize),
    /// Only theirs has it; `keep` when added by them, or deleted by us but
    /// changed by them.
    Only { keep: bool },
}

/// The slots of `ours` items and `theirs` in output order: kept
/// theirs-only items go after their nearest preceding surviving neighbour.
fn slots(ours: usize, theirs: impl Iterator<Item = Theirs>) -> Vec<Slot> {
    let mut slots: Vec<Slot> = (0..ours).map(Slot::Ours).collect();
    let mut last_pos: Option<usize> = None;
    for (j, it) in theirs.enumerate() {
        match it {
            Theirs::AlsoOurs(oidx) => {
                last_pos = slots
                    .iter()
                    .position(|s| matches!(s, Slot::Ours(i) if *i == oidx));
            }
            Theirs::Only { keep: true } => {
                let at = last_pos.map_or(0, |p| p + 1);
                slots.insert(at, Slot::Theirs(j));
                last_pos = Some(at);
            }
            Theirs::Only { keep: false } => {}
        }
    }
    slots
}

impl Merger<'_> {
    fn push(&mut self, lines: &[&str]) {
        self.out.extend(lines.iter().map(|l| l.to_string()));
    }

    #[allow(clippy::too_many_arguments)]
    fn merge_container(
        &mut self,
        b: Option<&Container<'_, '_>>,
        o: &Container<'_, '_>,
        t: &Container<'_, '_>,
        fence: u32,
        depth: usize,
        name: &str,
    ) {
        match pick(b.map(|c| c.header), o.header, t.header) {
            Some(h) => self.push(h),
            None => {
                // Only reachable at the top level (frontmatter / preamble):
                // nested containers with differing headers are not recursed into.
                self.push(o.header);
                self.conflict(
                    name,
                    fence,
                    Some(t.header),
                    "both sides changed the text before the first block",
                );
            }
        }
        self.names.push(name.to_string());
        self.merge_items(b, o, t, fence, depth);
        self.names.pop();
        match pick(b.map(|c| c.footer), o.footer, t.footer) {
            Some(f) => self.push(f),
            None => {
                self.push(o.footer);
                self.conflict(
                    name,
                    fence,
                    Some(t.footer),
                    "both sides changed the text after the last block",
                );
            }
        }
    }

    fn merge_items(
        &mut self,
        b: Option<&Container<'_, '_>>,
        o: &Container<'_, '_>,
        t: &Container<'_, '_>,
        fence: u32,
        depth: usize,
    ) {
        let [bk, ok, tk] = item_keys(b, o, t);
        let (bi, oi, ti) = (index(&bk), index(&ok), index(&tk));
        let b_item = |k: &str| bi.get(k).and_then(|&i| b.and_then(|c| c.items.get(i)));
        let slots = slots(
            o.items.len(),
            t.items
                .iter()
                .enumerate()
                .map(|(j, it)| match oi.get(&tk[j]) {
                    Some(&i) => Theirs::AlsoOurs(i),
                    None => Theirs::Only {
                        keep: match b_item(&tk[j]) {
                            None => true,               // added by them
                            Some(bit) => !bit.same(it), // deleted by us, changed by them
                        },
                    },
                }),
        );
        for slot in slots {
            match slot {
                Slot::Ours(i) => {
                    let Some(oit) = o.items.get(i) else { continue };
                    let tit = ti.get(&ok[i]).and_then(|&j| t.items.get(j));
                    self.merge_ours(b_item(&ok[i]), oit, tit, fence, depth);
                }
                Slot::Theirs(j) => {
                    let Some(tit) = t.items.get(j) else { continue };
                    match b_item(&tk[j]) {
                        None => self.emit(tit),
                        Some(_) => self.conflict_items(
                            tit,
                            None,
                            Some(tit),
                            fence,
                            "deleted on our side, changed on theirs",
                        ),
                    }
                }
            }
        }
    }

    /// Merges our item `oit` with its base and theirs (`tit`, None when
    /// theirs lacks it).
    fn merge_ours(
        &mut self,
        bit: Option<&Item<'_, '_>>,
        oit: &Item<'_, '_>,
        tit: Option<&Item<'_, '_>>,
        fence: u32,
        depth: usize,
    ) {
        match (tit, bit) {
            (Some(tit), _) => self.merge_item(bit, oit, tit, fence, depth),
            // Added by us only.
            (None, None) => self.emit(oit),
            // Deleted by them, unchanged by us: gone.
            (None, Some(bit)) if bit.same(oit) => {}
            (None, Some(_)) => self.conflict_items(
                oit,
                Some(oit),
                None,
                fence,
                "changed on our side, deleted on theirs",
            ),
        }
    }

    fn emit(&mut self, it: &Item<'_, '_>) {
        self.push(it.lead);
        self.push(it.body);
    }

    fn merge_item(
        &mut self,
        b: Option<&Item<'_, '_>>,
        o: &Item<'_, '_>,
        t: &Item<'_, '_>,
        fence: u32,
        depth: usize,
    ) {
        if o.same(t) || b.is_some_and(|b| b.same(t)) {
            return self.emit(o);
        }
        if b.is_some_and(|b| b.same(o)) {
            return self.emit(t);
        }
        // Both changed: recurse when all versions are containers whose
        // header and footer merge; the blank lead lines follow ours.
        if depth < MAX_DEPTH {
            if let (Some(oc), Some(tc)) = (node_container_of(o), node_container_of(t)) {
                let bc = b.and_then(node_container_of);
                let hb = bc.as_ref().map(|c| c.header);
                let fb = bc.as_ref().map(|c| c.footer);
                if pick(hb, oc.header, tc.header).is_some()
                    && pick(fb, oc.footer, tc.footer).is_some()
                {
                    self.push(o.lead);
                    let inner = inner_fence(o.node, fence);
                    let name = o.node.id.clone().unwrap_or_default();
                    self.merge_container(bc.as_ref(), &oc, &tc, inner, depth + 1, &name);
                    return;
                }
            }
        }
        self.conflict_items(
            o,
            Some(o),
            Some(t),
            fence,
            "changed differently on both sides",
        );
    }

    fn conflict_items(
        &mut self,
        at: &Item<'_, '_>,
        o: Option<&Item<'_, '_>>,
        t: Option<&Item<'_, '_>>,
        fence: u32,
        why: &str,
    ) {
        self.push(at.lead);
        let id = at
            .node
            .id
            .as_ref()
            .map(|id| id.to_string())
            .or_else(|| self.names.last().cloned())
            .unwrap_or_else(|| "(document)".into());
        self.conflict_block(&id, fence, o.map(|i| i.body), t.map(|i| i.body), why);
    }

    /// A conflict on a container's own header or footer: ours is already
    /// written, theirs goes into the conflict block.
    fn conflict(&mut self, name: &str, fence: u32, theirs: Option<&[&str]>, why: &str) {
        self.conflict_block(name, fence, None, theirs, why);
    }

    fn conflict_block(
        &mut self,
        id: &str,
        fence: u32,
        ours: Option<&[&str]>,
        theirs: Option<&[&str]>,
        why: &str,
    ) {
        self.conflicts.push(BlockConflict {
            block: id.to_string(),
            message: why.to_string(),
        });
        let colons = ":".repeat(fence.clamp(2, 64) as usize);
        let slug: String = id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '-'
                }
            })
            .collect();
        let n = self.conflicts.len();
        let attr = |s: &str| s.replace(['"', '\\', '\n', '\r'], "'");
        self.out.push(format!(
            "{colons}conflict{{id=\"merge-conflict-{n}-{slug}\" block=\"{}\" ours=\"{}\" theirs=\"{}\"}}",
            attr(id),
            attr(&self.labels.ours),
            attr(&self.labels.theirs)
        ));
        self.out.push(format!(
            "Merge conflict on block `{id}`: {why}. The first fenced version is {} ({}), the second {} ({}); keep one and delete this block.",
            "ours",
            self.labels.ours,
            "theirs",
            self.labels.theirs
        ));
        for side in [ours, theirs] {
            self.out.push(String::new());
            let lines = side.unwrap_or(&[]);
            let longest = lines
                .iter()
                .map(|l| {
                    l.trim_start()
                        .chars()
                        .take_while(|&c| c == '`' || c == '~')
                        .count()
                })
                .max()
                .unwrap_or(0);
            let fence_str = "`".repeat(longest.max(2) + 1);
            self.out.push(format!("{fence_str}noma"));
            match side {
                Some(l) => self.push(l),
                None => self.out.push("(deleted)".into()),
            }
            self.out.push(fence_str);
        }
        self.out.push(colons);
    }
}

fn node_container_of<'v, 'a>(it: &Item<'v, 'a>) -> Option<Container<'v, 'a>> {
    container(it.body, it.node.span.start, it.node.children())
}

/// Cuts `lines` (whose first line is line `lo` of the version) holding
/// `children` into a container; `None` without children or when their
/// spans are not ordered inside the range (never expected from the parser;
/// the block is then merged as one unit).
fn container<'v, 'a>(
    lines: &'v [&'a str],
    lo: u32,
    children: &'v [Node],
) -> Option<Container<'v, 'a>> {
    let rel = |line: u32| line.checked_sub(lo).map(|x| x as usize);
    let first = children.first()?;
    let head_end = rel(first.span.start)?;
    let header = lines.get(..head_end)?;
    let mut items = Vec::with_capacity(children.len());
    let mut cursor = head_end;
    let mut seen: HashSet<String> = HashSet::new();
    let mut anon = 0usize;
    for (i, c) in children.iter().enumerate() {
        let s = rel(c.span.start)?;
        let e = rel(c.span.end)? + 1;
        if s < cursor || e <= s || e > lines.len() {
            return None;
        }
        let body = lines.get(s..e)?;
        // Anonymous nodes get their rank; a side's are re-keyed by
        // aligning it with the base ([`aligned_keys`]).
        let mut key = match &c.id {
            Some(id) => format!("id:{id}"),
            None => {
                anon += 1;
                format!("anon:{anon}")
            }
        };
        if !seen.insert(key.clone()) {
            // Duplicate ids (invalid, but possible): keep them apart by rank.
            key = format!("{key}#{i}");
            seen.insert(key.clone());
        }
        items.push(Item {
            key,
            lead: lines.get(cursor..s)?,
            body,
            node: c,
        });
        cursor = e;
    }
    Some(Container {
        header,
        items,
        footer: lines.get(cursor..)?,
    })
}

/// The keys a container's children carry on their own.
fn own_keys(c: &Container<'_, '_>) -> Vec<String> {
    c.items.iter().map(|it| it.key.clone()).collect()
}

/// Keys for `side`'s children, matched against `reference`'s (whose keys
/// are `ref_keys`): children with an id keep theirs; an anonymous child
/// takes the key of the reference child the diff of the two sequences
/// aligns it with (equal, or paired in order within a changed run), and a
/// fresh key (`new:{tag}:n`) when it has none.
fn aligned_keys(
    reference: &Container<'_, '_>,
    ref_keys: &[String],
    side: &Container<'_, '_>,
    tag: &str,
) -> Vec<String> {
    let token = |it: &Item<'_, '_>| match it.node.id {
        Some(_) => it.key.clone(),
        None => format!("text:{}", it.body.join("\n")),
    };
    let old: Vec<String> = reference.items.iter().map(token).collect();
    let new: Vec<String> = side.items.iter().map(token).collect();
    let mut keys = own_keys(side);
    let anonymous = |c: &Container<'_, '_>, i: usize| c.items[i].node.id.is_none();
    // The anonymous children of one changed run (between equal runs), on
    // each side, paired in order when the run ends.
    let (mut removed, mut inserted) = (Vec::new(), Vec::new());
    let mut fresh = 0usize;
    let mut flush = |removed: &mut Vec<usize>, inserted: &mut Vec<usize>, keys: &mut [String]| {
        for (n, &j) in inserted.iter().enumerate() {
            keys[j] = match removed.get(n) {
                Some(&i) => ref_keys[i].clone(),
                None => {
                    fresh += 1;
                    format!("new:{tag}:{fresh}")
                }
            };
        }
        removed.clear();
        inserted.clear();
    };
    for op in similar::capture_diff_slices(similar::Algorithm::Myers, &old, &new) {
        let (o, n) = (op.old_range(), op.new_range());
        if let similar::DiffOp::Equal { .. } = op {
            flush(&mut removed, &mut inserted, &mut keys);
            for (i, j) in o.zip(n) {
                keys[j] = ref_keys[i].clone();
            }
            continue;
        }
        removed.extend(o.filter(|&i| anonymous(reference, i)));
        inserted.extend(n.filter(|&j| anonymous(side, j)));
    }
    flush(&mut removed, &mut inserted, &mut keys);
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "# T\n\n::note{id=\"a\"}\nalpha\n::\n\n::note{id=\"b\"}\nbeta\n::\n";

    fn merge(o: &str, t: &str) -> DocMerge {
        merge_documents(BASE, o, t, &Labels::default())
    }

    fn validate_text(text: &str) -> Vec<noma_core::diag::Diagnostic> {
        noma_core::validate::validate(
            &noma_core::doc::parse(text),
            &noma_core::validate::Options::default(),
        )
    }

    fn codes(text: &str) -> Vec<String> {
        validate_text(text).into_iter().map(|d| d.code).collect()
    }

    #[test]
    fn merge_driver_conflict_blocks_are_errors_naming_block_and_sides() {
        let base = "# Plan\n\n::note{id=\"a\"}\nbase\n::\n\n::decision{id=\"d\" status=\"open\"}\n::::note{id=\"inner\"}\nx\n::::\n::\n";
        let ours = base.replace("base", "ours").replace("\nx\n", "\nmine\n");
        let theirs = base.replace("base", "theirs").replace("\nx\n", "\nyours\n");
        let labels = Labels {
            ours: "HEAD".into(),
            theirs: "feature".into(),
        };
        let m = merge_documents(base, &ours, &theirs, &labels);
        assert_eq!(m.conflicts.len(), 2, "{}", m.text);
        let d = validate_text(&m.text);
        let found: Vec<&noma_core::diag::Diagnostic> = d
            .iter()
            .filter(|d| d.code == "unresolved-conflict")
            .collect();
        assert_eq!(found.len(), 2, "{d:?}\n{}", m.text);
        for (diag, block) in found.iter().zip(["a", "inner"]) {
            assert_eq!(diag.severity, noma_core::diag::Severity::Error);
            assert!(
                diag.message.contains(&format!("block `{block}`")),
                "{diag:?}"
            );
            assert!(
                diag.message.contains("HEAD") && diag.message.contains("feature"),
                "{diag:?}"
            );
            let line = diag.pos.unwrap().line as usize;
            assert!(
                m.text.lines().nth(line - 1).unwrap().contains("conflict{"),
                "{diag:?}"
            );
        }
        // noverify does not hide it; a user's own ::conflict directive is not one.
        let hidden = "::conflict{id=\"merge-conflict-1-a\" block=\"a\" noverify}\nx\n::\n";
        assert_eq!(codes(hidden), ["unresolved-conflict"]);
        assert!(codes("::conflict{id=\"c\"}\nx\n::\n").is_empty());
        // Resolved: no finding.
        assert!(codes(&ours).is_empty(), "{:?}", codes(&ours));
    }

    fn clean_parse(text: &str) {
        let d = noma_core::doc::parse(text);
        assert!(d.issues.is_empty(), "{:?}\n{text}", d.issues);
    }

    #[test]
    fn added_blocks_follow_their_predecessor_and_deletions_apply() {
        let o = BASE.replace("::note{id=\"a\"}\nalpha\n::\n\n", "");
        let t = format!("{BASE}\n::note{{id=\"c\"}}\ngamma\n::\n").replace("beta", "BETA");
        let m = merge(&o, &t);
        assert!(m.conflicts.is_empty(), "{:?}", m.conflicts);
        assert_eq!(
            m.text,
            "# T\n\n::note{id=\"b\"}\nBETA\n::\n\n::note{id=\"c\"}\ngamma\n::\n"
        );
    }

    /// Paragraphs are matched by aligning the sides with the base: a block
    /// or paragraph inserted on one side never turns the other side's
    /// edit of a later paragraph into a conflict; the same paragraph
    /// edited differently on both sides still is one.
    #[test]
    fn prose_edits_merge_around_insertions_on_the_other_side() {
        let base = "# T\n\nOne.\n\nTwo.\n\n::note{id=\"a\"}\nalpha\n::\n\nThree.\n";
        let ours = base.replace("Two.", "Two, edited.");
        let with_block = base.replace("One.\n", "One.\n\n::note{id=\"x\"}\nx\n::\n");
        let with_paragraph = base.replace("One.\n", "One.\n\nOne and a half.\n");
        for theirs in [&with_block, &with_paragraph] {
            let m = merge_documents(base, &ours, theirs, &Labels::default());
            assert!(m.conflicts.is_empty(), "{:?}", m.conflicts);
            assert_eq!(m.text, theirs.replace("Two.", "Two, edited."));
        }
        let theirs = with_block.replace("Two.", "Two, theirs.");
        let m = merge_documents(base, &ours, &theirs, &Labels::default());
        assert_eq!(m.conflicts.len(), 1, "{:?}", m.conflicts);
        assert!(m.text.contains("Two, edited.") && m.text.contains("Two, theirs."));
        // One id added by both sides in different places: that block
        // conflicts, nothing else does.
        let ours = base.replace("Two.\n", "Two.\n\n::note{id=\"x\"}\nmine\n::\n");
        let m = merge_documents(base, &ours, &with_block, &Labels::default());
        assert_eq!(m.conflicts.len(), 1, "{:?}", m.conflicts);
        assert_eq!(m.conflicts[0].block, "x");
    }

    #[test]
    fn delete_versus_change_conflicts_and_keeps_the_change() {
        let o = BASE.replace("::note{id=\"a\"}\nalpha\n::\n\n", "");
        let t = BASE.replace("alpha", "ALPHA");
        let m = merge(&o, &t);
        assert_eq!(m.conflicts.len(), 1);
        assert_eq!(m.conflicts[0].block, "a");
        assert!(
            m.text.contains("ALPHA") && m.text.contains("(deleted)"),
            "{}",
            m.text
        );
        clean_parse(&m.text);
    }

    #[test]
    fn nested_conflict_is_one_colon_deeper_and_fences_outgrow_the_content() {
        let base = "::card{id=\"k\"}\n:::note{id=\"n\"}\nx\n:::\n::\n";
        let o = base.replace("x\n", "````\ncode\n````\n");
        let t = base.replace("x\n", "y\n");
        let m = merge_documents(base, &o, &t, &Labels::default());
        assert_eq!(m.conflicts.len(), 1, "{}", m.text);
        assert!(m.text.contains("::::conflict{"), "{}", m.text);
        assert!(m.text.contains("`````noma"), "{}", m.text);
        clean_parse(&m.text);
    }

    #[test]
    fn crlf_bom_and_missing_final_newline_follow_ours() {
        let o = format!(
            "\u{feff}{}",
            BASE.replace('\n', "\r\n").replace("alpha", "A")
        );
        let t = BASE.replace("beta", "B");
        let t = t.trim_end_matches('\n');
        let m = merge(&o, t);
        assert!(m.conflicts.is_empty());
        assert!(m.text.starts_with('\u{feff}'));
        assert!(
            m.text.contains("A\r\n") && m.text.contains("B\r\n"),
            "{:?}",
            m.text
        );
        assert!(m.text.ends_with("::\r\n"));
    }
}

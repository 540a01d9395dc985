//! Incremental re-parse: the tree of an edited text, from the tree of the
//! text before it, re-parsing only the lines the edit touched.
//!
//! A patch op changes a few lines of a document that may be megabytes
//! long; parsing the result from scratch costs as much as the first parse
//! (about 20 ms on 3 MB), and a patch needs that tree to post-validate.
//! Here we find the lines that differ, the sibling nodes they touch (the
//! *run*), parse just those lines on their own (the *fragment*), and splice
//! the fragment's nodes in place of the run, shifting the spans after it.
//!
//! The parser reads forwards, line by line, with a stack of open
//! containers, so the fragment parses alone exactly as it does in context
//! when its parse cannot see or change anything outside it. [`plan`]
//! checks each condition below and gives up (the caller parses in full)
//! when one fails, so a refusal costs little and a result is always the
//! tree [`super::parse()`] would build:
//!
//! - the old tree is Tier 1 (no parse issues) and the fragment parses
//!   without issues: every fence and directive in it closes inside it, so
//!   no scan runs past its end, and the parser's report-once state is
//!   untouched;
//! - neither the run nor the fragment holds a section: headings decide
//!   where sections around them end, and implicit slugs are suffixed in
//!   document order, so a heading anywhere in the edit re-parses in full;
//! - no section precedes the run among its siblings: a
//!   section ends at its last child, so lines after it (up to the next
//!   heading) are its children in a full parse, not its siblings; sections
//!   on the path get their ends recomputed from their new children;
//! - the fragment starts after a line that ends every block (a blank line,
//!   its container's heading or opening fence, or the last line of a
//!   closed directive or code block) or with a blank line, and ends before
//!   one (a blank line, a heading or fence of a directive, the end of the
//!   text) or with a blank line or a closed directive or code block: no
//!   paragraph, list, quote or table can run across either edge;
//! - directives at the fragment's top level open with more colons than the
//!   directive around them, and no top-level line is a closing fence (in
//!   context it could close an enclosing directive);
//! - frontmatter, line 1, the last line and CR line ends are left alone:
//!   edits there re-parse in full; but an edit strictly between the
//!   frontmatter's fences reads the frontmatter alone and moves the body
//!   ([`plan_frontmatter`]), when it still closes on the same fence, reads
//!   without an issue and keeps its `aliases:`.
//!
//! A property test compares the result with a full parse for random
//! documents and random edits.

use std::ops::Range;

use serde_json::{Map, Value};

use super::ast::{Document, Frontmatter, Node, NodeKind, Span};
use super::line_match::{
    is_blank, is_frontmatter_fence, is_table_row, is_table_separator, match_directive_close,
    match_directive_open, match_heading,
};
use super::parse::{parse_fragment, parse_frontmatter, section_end};

/// How to turn the old tree into the new one.
#[derive(Debug)]
pub struct Splice {
    /// Child indices from the root down to the container of the run.
    path: Vec<usize>,
    /// The run's index range among the container's children.
    run: Range<usize>,
    /// The fragment's nodes, with the document's line numbers.
    nodes: Vec<Node>,
    /// Lines after the edit move by this much.
    delta: i64,
}

/// The lines an edit changed: old lines `first..first + old_lines` became
/// new lines `first..first + new_lines`; everything else is byte-identical.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct LineEdit {
    /// First changed line (1-based).
    first: u32,
    old_lines: u32,
    new_lines: u32,
    /// Byte offset of line `first` (the same in both texts).
    start: usize,
    /// Byte offset of the first unchanged line after the edit, in the new text.
    new_end: usize,
}

fn count_newlines(bytes: &[u8]) -> usize {
    memchr::memchr_iter(b'\n', bytes).count()
}

/// Compared a page at a time (one `memcmp` each), then byte by byte.
const COMPARE_CHUNK: usize = 4096;

/// The length of the longest common prefix of `a` and `b`: a page at a
/// time, then a word at a time.
pub fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + COMPARE_CHUNK <= n && a[i..i + COMPARE_CHUNK] == b[i..i + COMPARE_CHUNK] {
        i += COMPARE_CHUNK;
    }
    while i + 8 <= n {
        let x = word(&a[i..i + 8]) ^ word(&b[i..i + 8]);
        if x != 0 {
            return i + (x.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    i + a[i..n]
        .iter()
        .zip(&b[i..n])
        .take_while(|(x, y)| x == y)
        .count()
}

/// The length of the longest common suffix of `a` and `b`, as
/// [`common_prefix`] counts it from the other end.
pub fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let (a, b) = (&a[a.len() - n..], &b[b.len() - n..]);
    let mut k = 0;
    while k + COMPARE_CHUNK <= n
        && a[n - k - COMPARE_CHUNK..n - k] == b[n - k - COMPARE_CHUNK..n - k]
    {
        k += COMPARE_CHUNK;
    }
    while k + 8 <= n {
        let x = word(&a[n - k - 8..n - k]) ^ word(&b[n - k - 8..n - k]);
        if x != 0 {
            return k + (x.leading_zeros() / 8) as usize;
        }
        k += 8;
    }
    k + a[..n - k]
        .iter()
        .rev()
        .zip(b[..n - k].iter().rev())
        .take_while(|(x, y)| x == y)
        .count()
}

/// Eight bytes as a little-endian word (the first byte lowest).
fn word(bytes: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(bytes);
    u64::from_le_bytes(w)
}

/// The changed lines between two LF texts, or `None` when they are equal
/// or the edit reaches the last line.
fn line_edit(old: &[u8], new: &[u8]) -> Option<LineEdit> {
    let prefix = common_prefix(old, new);
    if prefix == old.len() && prefix == new.len() {
        return None;
    }
    let start = memchr::memrchr(b'\n', &old[..prefix]).map_or(0, |i| i + 1);
    let (old_rest, new_rest) = (&old[start..], &new[start..]);
    let suffix = common_suffix(old_rest, new_rest);
    let (mut old_end, mut new_end) = (old.len() - suffix, new.len() - suffix);
    let at_line_start = |text: &[u8], at: usize| at == start || text[at - 1] == b'\n';
    if !(at_line_start(old, old_end) && at_line_start(new, new_end)) {
        // Start the common tail after its first newline, which is a line
        // end in both texts.
        let skip = memchr::memchr(b'\n', &old[old_end..])? + 1;
        old_end += skip;
        new_end += skip;
    }
    if old_end >= old.len() {
        return None;
    }
    Some(LineEdit {
        first: u32::try_from(count_newlines(&old[..start]) + 1).ok()?,
        old_lines: u32::try_from(count_newlines(&old[start..old_end])).ok()?,
        new_lines: u32::try_from(count_newlines(&new[start..new_end])).ok()?,
        start,
        new_end,
    })
}

/// Byte offset of the line `lines` lines before the one starting at `at`.
fn lines_back(text: &[u8], mut at: usize, lines: u32) -> usize {
    for _ in 0..lines {
        at = memchr::memrchr(b'\n', &text[..at.saturating_sub(1)]).map_or(0, |i| i + 1);
    }
    at
}

/// Byte offset after `lines` whole lines from `at` (`None` past the end).
fn lines_forward(text: &[u8], mut at: usize, lines: u32) -> Option<usize> {
    for _ in 0..lines {
        at += memchr::memchr(b'\n', &text[at..])? + 1;
    }
    Some(at)
}

/// The line starting at `at`, without its newline.
fn line_at(text: &str, at: usize) -> &str {
    let rest = &text[at..];
    &rest[..rest.find('\n').unwrap_or(rest.len())]
}

/// Whether the parser starts afresh after this node's last line.
fn ends_every_block(node: &Node) -> bool {
    matches!(
        node.kind,
        NodeKind::Directive { closed: true, .. }
            | NodeKind::Code { closed: true, .. }
            | NodeKind::ThematicBreak
    )
}

/// Whether a line after the fragment ends whatever block precedes it.
fn ends_preceding_block(line: &str) -> bool {
    is_blank(line)
        || ((match_directive_close(line).is_some()
            || match_directive_open(line).is_some()
            || match_heading(line).is_some())
            && !is_table_row(line)
            && !is_table_separator(line))
}

fn holds_a_section(nodes: &[Node]) -> bool {
    let mut stack: Vec<&Node> = nodes.iter().collect();
    while let Some(n) = stack.pop() {
        if matches!(n.kind, NodeKind::Section { .. }) {
            return true;
        }
        stack.extend(n.children());
    }
    false
}

fn shifted(line: u32, delta: i64) -> u32 {
    u32::try_from(i64::from(line) + delta).unwrap_or(line)
}

/// Recomputes, bottom-up, the end of every section on `path` (child
/// indices from `kids` down): a section ends where its last child ends, which
/// a shift by the edit's line delta does not give when the edit changed the
/// trailing blank lines of its last child's run.
fn fix_section_ends(kids: &mut [Node], path: &[usize]) {
    let Some((&at, rest)) = path.split_first() else {
        return;
    };
    let Some(node) = kids.get_mut(at) else {
        return;
    };
    if let Some(children) = node.children_mut() {
        fix_section_ends(children, rest);
    }
    if let NodeKind::Section { children, .. } = &node.kind {
        node.span.end = section_end(node.span.start, children);
    }
}

/// Moves every span in `nodes` and their subtrees by `delta` lines.
fn shift_all(nodes: &mut [Node], delta: i64) {
    let mut stack: Vec<&mut Node> = nodes.iter_mut().collect();
    while let Some(n) = stack.pop() {
        n.span = Span::new(shifted(n.span.start, delta), shifted(n.span.end, delta));
        match &mut n.kind {
            NodeKind::List { items, .. } => {
                for item in items {
                    item.span = Span::new(
                        shifted(item.span.start, delta),
                        shifted(item.span.end, delta),
                    );
                }
            }
            NodeKind::Section { children, .. } | NodeKind::Directive { children, .. } => {
                stack.extend(children.iter_mut());
            }
            _ => {}
        }
    }
}

/// Plans the splice that turns `old` (the tree of `old_src`) into the tree
/// of `new_src`, or `None` when the edit must be re-parsed in full.
pub fn plan(old_src: &str, old: &Document, new_src: &str) -> Option<Splice> {
    let (old_src, new_src) = splice_inputs(old_src, old, new_src)?;
    let edit = line_edit(old_src.as_bytes(), new_src.as_bytes())?;
    let a = edit.first;
    // Last changed old line; `a - 1` for a pure insertion before line `a`.
    let b = a.checked_add(edit.old_lines)? - 1;
    let delta = i64::from(edit.new_lines) - i64::from(edit.old_lines);
    let container = Container::of(old, a, b);
    let run = container.run(old_src, old, a, b)?;
    let nodes = run.fragment(new_src, old, &container, &edit, b, delta)?;
    let too_wide_or_closing = nodes.iter().any(|n| match &n.kind {
        NodeKind::Directive { colons: c, .. } => container.colons.is_some_and(|p| *c <= p),
        NodeKind::Paragraph { content } => match_directive_close(content).is_some(),
        _ => false,
    });
    if too_wide_or_closing {
        return None;
    }
    Some(Splice {
        path: container.path,
        run: run.lo..run.hi,
        nodes,
        delta,
    })
}

/// The two texts without a byte-order mark, when a splice may apply at
/// all: both or neither start with one, the old tree is Tier 1 and
/// neither text has CR line ends.
fn splice_inputs<'s>(
    old_src: &'s str,
    old: &Document,
    new_src: &'s str,
) -> Option<(&'s str, &'s str)> {
    const BOM: char = '\u{feff}';
    let (old_src, new_src) = match (old_src.strip_prefix(BOM), new_src.strip_prefix(BOM)) {
        (Some(o), Some(n)) => (o, n),
        (None, None) => (old_src, new_src),
        _ => return None,
    };
    if !old.issues.is_empty()
        || memchr::memchr(b'\r', old_src.as_bytes()).is_some()
        || memchr::memchr(b'\r', new_src.as_bytes()).is_some()
    {
        return None;
    }
    Some((old_src, new_src))
}

/// The innermost container (section or closed directive) whose interior
/// holds the whole edit of old lines `a..=b`, or the root.
struct Container<'d> {
    /// Child indices from the root down to it.
    path: Vec<usize>,
    /// Its children.
    kids: &'d [Node],
    /// Its heading or opening-fence line (`None` for the root).
    header: Option<u32>,
    /// The colons of the innermost directive on the path.
    colons: Option<u32>,
}

impl<'d> Container<'d> {
    /// Walks down from the root of `old` to the container of lines `a..=b`.
    fn of(old: &'d Document, a: u32, b: u32) -> Self {
        let mut path = Vec::new();
        let mut kids: &[Node] = &old.children;
        let mut header: Option<u32> = None;
        let mut colons: Option<u32> = None;
        loop {
            let at = kids.partition_point(|c| c.span.end < b);
            let Some(c) = kids.get(at) else { break };
            // Inside a directive a section is its heading line and holds
            // nothing (`parse`): lines after it belong to the directive.
            let inside = c.span.start < a
                && match &c.kind {
                    NodeKind::Section { .. } => colons.is_none() && b <= c.span.end,
                    NodeKind::Directive { closed: true, .. } => b < c.span.end,
                    _ => false,
                };
            if !inside {
                break;
            }
            if let NodeKind::Directive { colons: n, .. } = c.kind {
                colons = Some(n);
            }
            header = Some(c.span.start);
            path.push(at);
            kids = c.children();
        }
        Container {
            path,
            kids,
            header,
            colons,
        }
    }

    /// The run: the children that share a line with the edit, when no
    /// section is in it or precedes it and it stays clear of line 1 and
    /// the frontmatter.
    fn run(&self, old_src: &str, old: &Document, a: u32, b: u32) -> Option<Run> {
        let kids = self.kids;
        let lo = kids.partition_point(|c| c.span.end < a);
        let hi = kids.partition_point(|c| c.span.start <= b).max(lo);
        let run = &kids[lo..hi];
        let fs = run.first().map_or(a, |n| n.span.start.min(a));
        let fe = run.last().map_or(b, |n| n.span.end.max(b));
        if fs < 2 || holds_a_section(run) {
            return None;
        }
        let after_section = lo
            .checked_sub(1)
            .is_some_and(|p| matches!(kids[p].kind, NodeKind::Section { .. }));
        if after_section {
            return None;
        }
        if is_frontmatter_fence(line_at(old_src, 0)) {
            match &old.frontmatter {
                Some(fm) if fs > fm.span.end => {}
                _ => return None,
            }
        }
        Some(Run { lo, hi, fs, fe })
    }
}

/// The children a splice replaces, and the old lines they cover with the edit.
struct Run {
    /// The run's index range among the container's children.
    lo: usize,
    hi: usize,
    /// First and last old line of the run and the edit together.
    fs: u32,
    fe: u32,
}

impl Run {
    /// The fragment's nodes: its lines of `new_src` parsed on their own,
    /// when no block can run across either of its edges and the parse is
    /// clean and holds no section.
    fn fragment(
        &self,
        new_src: &str,
        old: &Document,
        container: &Container<'_>,
        edit: &LineEdit,
        b: u32,
        delta: i64,
    ) -> Option<Vec<Node>> {
        let (kids, lo, fs, fe) = (container.kids, self.lo, self.fs, self.fe);
        let a = edit.first;
        // The fragment's bytes in the new text.
        let new = new_src.as_bytes();
        let frag_start = lines_back(new, edit.start, a - fs);
        let frag_end = lines_forward(new, edit.new_end, fe - b)?;
        let frag_lines = i64::from(fe) - i64::from(fs) + 1 + delta;

        // Edges: no block may run across either one.
        let before = line_at(new_src, lines_back(new, frag_start, 1));
        let edge_before = is_blank(before)
            || (frag_lines > 0 && is_blank(line_at(new_src, frag_start)))
            || container.header == Some(fs - 1)
            || old
                .frontmatter
                .as_ref()
                .is_some_and(|fm| fm.span.end == fs - 1)
            || (lo > 0 && kids[lo - 1].span.end == fs - 1 && ends_every_block(&kids[lo - 1]));
        if !edge_before {
            return None;
        }
        let mut nodes = Vec::new();
        if frag_lines > 0 {
            // Parsed with the document's line numbers: line `fs` is index `fs - 1`.
            let fragment = parse_fragment(&new_src[frag_start..frag_end], fs as usize - 1);
            if !fragment.issues.is_empty() {
                return None;
            }
            nodes = fragment.nodes;
        }
        if holds_a_section(&nodes) {
            return None;
        }
        let last_is_closed = nodes.last().is_some_and(|n| {
            i64::from(n.span.end) == i64::from(fs) - 1 + frag_lines && ends_every_block(n)
        });
        let last_is_blank =
            frag_lines > 0 && is_blank(line_at(new_src, lines_back(new, frag_end, 1)));
        let edge_after = frag_lines <= 0
            || frag_end >= new.len()
            || last_is_closed
            || last_is_blank
            || ends_preceding_block(line_at(new_src, frag_end));
        if !edge_after {
            return None;
        }
        Some(nodes)
    }
}

impl Splice {
    /// Applies the splice to (a copy of) the tree it was planned on. Returns
    /// false, with `doc` unusable, if the tree is not that tree.
    pub fn apply(self, doc: &mut Document) -> Option<Replaced> {
        let delta = self.delta;
        let mut kids = &mut doc.children;
        for &at in &self.path {
            if at >= kids.len() {
                return None;
            }
            shift_all(&mut kids[at + 1..], delta);
            let node = &mut kids[at];
            node.span.end = shifted(node.span.end, delta);
            kids = node.children_mut()?;
        }
        if self.run.end > kids.len() {
            return None;
        }
        shift_all(&mut kids[self.run.end..], delta);
        let run = self.run.start..self.run.start + self.nodes.len();
        let old_nodes = kids.splice(self.run, self.nodes).collect();
        fix_section_ends(&mut doc.children, &self.path);
        doc.end_line = shifted(doc.end_line, delta);
        Some(Replaced {
            path: self.path,
            run,
            old_nodes,
            delta,
        })
    }
}

/// What an applied [`Splice`] replaced, for work that can follow the edit
/// instead of redoing the whole document (see `validate::revalidate`).
#[derive(Debug)]
pub struct Replaced {
    /// Child indices from the root down to the container of the run.
    pub path: Vec<usize>,
    /// The new nodes' index range among the container's children.
    pub run: Range<usize>,
    /// The nodes they replaced, with their old spans.
    pub old_nodes: Vec<Node>,
    /// Lines after the run moved by this much.
    pub delta: i64,
}

impl Replaced {
    /// The container's children in `doc` (the tree the splice produced).
    pub fn container<'d>(&self, doc: &'d Document) -> Option<&'d [Node]> {
        let mut kids = doc.children.as_slice();
        for &at in &self.path {
            kids = kids.get(at)?.children();
        }
        Some(kids)
    }
}

/// The tree of `new_src` from `old`, the tree of `old_src`: spliced when
/// [`plan`] allows it, `None` otherwise.
pub fn reparse(old_src: &str, old: &Document, new_src: &str) -> Option<Document> {
    let splice = plan(old_src, old, new_src)?;
    let mut doc = old.clone();
    splice.apply(&mut doc).map(|_| doc)
}

/// An edit strictly between the frontmatter's fences: the new frontmatter,
/// read alone; the body's nodes stay and move by the edit's line delta.
///
/// The body's parse never reads the frontmatter but for `aliases:`, which
/// attach to the first H1, so the splice is refused when they change; it
/// is refused too when the new frontmatter has a parse issue, closes on
/// another line (a `---` typed inside it) or the edit touches a fence.
#[derive(Debug)]
pub struct FrontmatterSplice {
    meta: Map<String, Value>,
    frontmatter: Frontmatter,
    delta: i64,
}

/// What an applied [`FrontmatterSplice`] replaced.
#[derive(Debug)]
pub struct FrontmatterReplaced {
    /// The frontmatter's data before the edit.
    pub old_meta: Map<String, Value>,
    /// Lines after the frontmatter moved by this much.
    pub delta: i64,
}

/// Plans the [`FrontmatterSplice`] that turns `old` (the tree of
/// `old_src`) into the tree of `new_src`, or `None` when the edit is not
/// one (the conditions of [`plan`] on the texts hold here too: Tier 1, no
/// CR, the same byte-order mark, the last line untouched).
pub fn plan_frontmatter(old_src: &str, old: &Document, new_src: &str) -> Option<FrontmatterSplice> {
    let (old_src, new_src) = splice_inputs(old_src, old, new_src)?;
    let fm = old.frontmatter.as_ref()?;
    let edit = line_edit(old_src.as_bytes(), new_src.as_bytes())?;
    let a = edit.first;
    let b = a.checked_add(edit.old_lines)? - 1;
    // Line 1 is the opening fence, line `fm.span.end` the closing one.
    if a < 2 || b >= fm.span.end {
        return None;
    }
    let delta = i64::from(edit.new_lines) - i64::from(edit.old_lines);
    let close = u32::try_from(i64::from(fm.span.end) + delta).ok()?;
    let end = lines_forward(new_src.as_bytes(), 0, close)?;
    let (meta, frontmatter, body_start) = parse_frontmatter(&new_src[..end])?;
    if frontmatter.span.end != close || body_start != close as usize {
        return None;
    }
    if meta.get("aliases") != old.meta.get("aliases") {
        return None;
    }
    Some(FrontmatterSplice {
        meta,
        frontmatter,
        delta,
    })
}

impl FrontmatterSplice {
    /// Applies the splice to the tree it was planned on.
    pub fn apply(self, doc: &mut Document) -> FrontmatterReplaced {
        if self.delta != 0 {
            shift_all(&mut doc.children, self.delta);
            doc.end_line = shifted(doc.end_line, self.delta);
        }
        doc.frontmatter = Some(self.frontmatter);
        FrontmatterReplaced {
            old_meta: std::mem::replace(&mut doc.meta, self.meta),
            delta: self.delta,
        }
    }
}

/// The first directive on `path` (child indices from the root) and its
/// depth on it.
fn outermost_directive<'d>(doc: &'d Document, path: &[usize]) -> Option<(usize, &'d Node)> {
    let mut kids = doc.children.as_slice();
    for (depth, &at) in path.iter().enumerate() {
        let node = kids.get(at)?;
        if matches!(node.kind, NodeKind::Directive { .. }) {
            return Some((depth, node));
        }
        kids = node.children();
    }
    None
}

/// What [`reparse_in_place`] did to the tree.
#[derive(Debug)]
pub enum Reparsed {
    /// Body nodes were spliced ([`plan`]).
    Body(Replaced),
    /// The frontmatter was read again ([`plan_frontmatter`]).
    Frontmatter(FrontmatterReplaced),
}

/// Turns `doc`, the tree of `old_src`, into the tree of `new_src` in
/// place (no copy of a large tree): a body splice or a frontmatter splice
/// when one applies. `None` means the caller parses `new_src` in full; the
/// tree may then have been changed and is to be dropped.
///
/// A body splice inside a directive is reported as the replacement of the
/// outermost directive around it (a copy of it is kept from before the
/// splice): a directive's rules read its body, so that directive is the
/// least a re-validation must look at (`validate::revalidate`).
pub fn reparse_in_place(old_src: &str, doc: &mut Document, new_src: &str) -> Option<Reparsed> {
    if let Some(splice) = plan(old_src, doc, new_src) {
        let widened = outermost_directive(doc, &splice.path);
        let before = widened.map(|(depth, node)| (depth, node.clone()));
        let mut replaced = splice.apply(doc)?;
        if let Some((depth, node)) = before {
            let at = replaced.path[depth];
            replaced.path.truncate(depth);
            replaced.run = at..at + 1;
            replaced.old_nodes = vec![node];
        }
        return Some(Reparsed::Body(replaced));
    }
    let splice = plan_frontmatter(old_src, doc, new_src)?;
    Some(Reparsed::Frontmatter(splice.apply(doc)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::parse;
    use proptest::prelude::*;

    const DOC: &str = "---\ntitle: T\n---\n\n# Top\n\nIntro text.\n\n## A\n\n::claim{id=\"c1\" confidence=0.8}\nBody one.\n::\n\n::evidence{id=\"e1\" for=\"c1\"}\nSeen.\n::\n\n- x\n- y\n\n## B\n\n::claim{id=\"c2\"}\nBody two.\n::\n\nTail.\n";

    fn spliced(old: &str, new: &str) -> Option<Document> {
        reparse(old, &parse(old), new)
    }

    #[test]
    fn typical_patch_edits_take_the_incremental_path_and_match_a_full_parse() {
        let edits = [
            // update_attribute: the opening fence of a directive.
            DOC.replace("confidence=0.8", "confidence=0.9"),
            // replace_body: a directive's interior.
            DOC.replace("Body one.\n", "New body\non two lines.\n"),
            // delete_block with its blank line.
            DOC.replace("::evidence{id=\"e1\" for=\"c1\"}\nSeen.\n::\n\n", ""),
            // add_block into a section.
            DOC.replace("Tail.\n", "::note{id=\"n1\"}\nAdded.\n::\n\nTail.\n"),
            // a child directive inside a directive.
            DOC.replace(
                "Body two.\n",
                "Body two.\n\n:::note{id=\"n2\"}\nInner.\n:::\n",
            ),
        ];
        for (i, new) in edits.iter().enumerate() {
            let got = spliced(DOC, new).unwrap_or_else(|| panic!("no splice for edit {i}"));
            assert_eq!(got, parse(new), "{new}");
        }
    }

    #[test]
    fn edits_that_can_change_the_structure_outside_them_parse_in_full() {
        let refused = [
            // A heading: sections and slugs around it change.
            DOC.replace("Tail.\n", "## C\n\nTail.\n"),
            // An unclosed directive swallows what follows.
            DOC.replace("::claim{id=\"c2\"}", "::claim{id=\"c2\"}\n\n::open"),
            // Prose glued to a paragraph before it.
            DOC.replace("Intro text.\n", "Intro text.\nglued\n"),
            // Frontmatter and the first line.
            DOC.replace("title: T", "title: U"),
            // The last line.
            DOC.replace("Tail.\n", "Tail!\n"),
            // CRLF.
            DOC.replace("Body one.\n", "Body one.\r\n"),
            // A closing fence at the top level of the fragment.
            DOC.replace("Body two.\n::\n", "Body two.\n::\n:::\n"),
        ];
        for (i, new) in refused.iter().enumerate() {
            assert!(spliced(DOC, new).is_none(), "spliced edit {i}");
        }
    }

    /// Sections end at their last child: removing the last child splices
    /// and moves the section's end back to the child before; text added in
    /// the blank lines after a section's last child belongs to the section,
    /// so it is parsed in full instead of spliced in as a sibling.
    #[test]
    fn section_ends_follow_their_last_child() {
        let old = "# Top\n\nIntro.\n\n## A\n\nOne.\n\nTwo.\n\n\n## B\n\nEnd.\n";
        let new = old.replace("Two.\n", "");
        let got = spliced(old, &new).expect("a splice");
        assert_eq!(got, parse(&new));
        assert_eq!(got.children[0].children()[1].span, Span::new(5, 7));
        let new = old.replace("Two.\n\n\n", "Two.\n\nThree.\n\n");
        assert!(spliced(old, &new).is_none());
        let full = parse(&new);
        let a = &full.children[0].children()[1];
        assert_eq!((a.children().len(), a.span), (3, Span::new(5, 11)));
    }

    /// Inside a directive a heading holds nothing: lines inserted after
    /// it are spliced into the directive, as a full parse places them.
    #[test]
    fn an_insertion_after_a_heading_inside_a_directive_joins_the_directive() {
        let old = "# Top\n\n::note{id=\"s\"}\n## Inside\nText.\n::\n\nEnd.\n";
        let new = old.replace("## Inside\n", "## Inside\nMore.\n\n");
        let full = parse(&new);
        // A splice (or a refusal, then the full parse) equals the full parse.
        if let Some(got) = spliced(old, &new) {
            assert_eq!(got, full);
        }
        let note = full.find("s").expect("note");
        assert_eq!(note.children().len(), 3, "{:?}", note.children());
        assert!(note.children()[0].children().is_empty());
    }

    fn in_place(old: &str, new: &str) -> Option<Document> {
        let mut doc = parse(old);
        reparse_in_place(old, &mut doc, new).map(|_| doc)
    }

    #[test]
    fn frontmatter_edits_read_the_frontmatter_alone() {
        let edits = [
            DOC.replace("title: T", "title: U"),
            DOC.replace("title: T", "xtitle: T"),
            DOC.replace("title: T\n", "title: T\nprofile: research\n"),
            DOC.replace("title: T\n", ""),
        ];
        for (i, new) in edits.iter().enumerate() {
            assert!(spliced(DOC, new).is_none(), "a body splice for edit {i}");
            let got = in_place(DOC, new).unwrap_or_else(|| panic!("no splice for edit {i}"));
            assert_eq!(got, parse(new), "{new}");
        }
        let refused = [
            // Broken YAML: an issue.
            DOC.replace("title: T", "title: [T"),
            // A fence typed inside closes the frontmatter earlier.
            DOC.replace("title: T\n", "---\ntitle: T\n"),
            // Aliases attach to the H1.
            DOC.replace("title: T\n", "title: T\naliases: [top2]\n"),
            // The fences themselves.
            DOC.replacen("---\n", "--- \n", 1),
            DOC.replace("T\n---\n", "T\n--\n"),
        ];
        for (i, new) in refused.iter().enumerate() {
            assert!(in_place(DOC, new).is_none(), "spliced edit {i}");
        }
    }

    /// A splice inside a directive is reported as the replacement of the
    /// outermost directive around it, as it was before.
    #[test]
    fn a_splice_inside_a_directive_replaces_that_directive() {
        let new = DOC.replace("Body two.\n", "Body 2.\n");
        let old = parse(DOC);
        let mut doc = old.clone();
        let Some(Reparsed::Body(r)) = reparse_in_place(DOC, &mut doc, &new) else {
            panic!("no body splice");
        };
        assert_eq!(doc, parse(&new));
        let section = &old.children[0].children()[2];
        assert_eq!(r.path, [0, 2]);
        assert!(section.children()[0].is_directive("claim"));
        assert_eq!(r.old_nodes, [section.children()[0].clone()]);
        assert_eq!(r.run, 0..1);
        assert_eq!(
            r.container(&doc).unwrap()[r.run.clone()],
            [doc.children[0].children()[2].children()[0].clone()]
        );
    }

    #[test]
    fn identical_texts_and_issue_trees_are_not_spliced() {
        assert!(spliced(DOC, DOC).is_none());
        let broken = "# A\n\n::claim{id=\"x\"}\nno close\n\nText.\n";
        assert!(spliced(broken, &broken.replace("no close", "still none")).is_none());
    }

    #[test]
    fn chunked_comparisons_find_the_first_and_last_difference() {
        let a = vec![b'x'; 3 * COMPARE_CHUNK + 17];
        for at in [0, 5, COMPARE_CHUNK, 2 * COMPARE_CHUNK + 3, a.len() - 1] {
            let mut b = a.clone();
            b[at] = b'y';
            assert_eq!(common_prefix(&a, &b), at);
            assert_eq!(common_suffix(&a, &b), a.len() - 1 - at);
        }
        assert_eq!(common_prefix(&a, &a[..100]), 100);
        assert_eq!(common_suffix(&a, &a[..100]), 100);
    }

    proptest! {
        /// Word-at-a-time comparisons end where byte-at-a-time ones do.
        #[test]
        fn word_comparisons_equal_byte_comparisons(
            a in prop::collection::vec(0u8..3, 0..80),
            b in prop::collection::vec(0u8..3, 0..80),
        ) {
            let same = |x: &mut dyn Iterator<Item = (&u8, &u8)>| x.take_while(|(p, q)| p == q).count();
            prop_assert_eq!(common_prefix(&a, &b), same(&mut a.iter().zip(&b)));
            prop_assert_eq!(common_suffix(&a, &b), same(&mut a.iter().rev().zip(b.iter().rev())));
            let long: Vec<u8> = a.iter().chain(&b).copied().collect();
            prop_assert_eq!(common_suffix(&long, &b), b.len());
        }
    }

    #[test]
    fn line_edits_are_whole_lines() {
        let e = line_edit(b"a\nbc\nd\n", b"a\nbx\nd\n").unwrap();
        assert_eq!((e.first, e.old_lines, e.new_lines), (2, 1, 1));
        // Inserting a line that looks like its neighbour is still whole lines.
        let e = line_edit(b"a\nb\nb\nc\n", b"a\nb\nb\nb\nc\n").unwrap();
        assert_eq!((e.first, e.old_lines, e.new_lines), (4, 0, 1));
        assert_eq!(line_edit(b"a\nb\n", b"a\nc\n"), None, "last line");
        let e = line_edit(b"a\nb\nc\n", b"a\nc\n").unwrap();
        assert_eq!((e.first, e.old_lines, e.new_lines), (2, 1, 0));
    }

    /// Lines that exercise every block rule and every edge condition.
    fn line() -> impl Strategy<Value = String> {
        prop::sample::select(vec![
            "",
            "   ",
            "Prose line.",
            "More prose with [[c1]].",
            "# Heading",
            "## Sub heading",
            "### Deep {id=\"h\"}",
            "::claim{id=\"c1\"}",
            "::note{id=\"n1\"}",
            ":::note{id=\"n2\"}",
            "::",
            ":::",
            "```",
            "~~~",
            "- item",
            "1. first",
            "  indented continuation",
            "> quoted",
            "| a | b |",
            "| --- | --- |",
            "---",
        ])
        .prop_map(str::to_string)
    }

    /// Well-formed blocks, so that most documents are Tier 1 and most edits
    /// are candidates for a splice.
    fn block() -> impl Strategy<Value = String> {
        prop::sample::select(vec![
            "Prose line.\nSecond line.",
            "::claim{id=\"c1\" confidence=0.5}\nBody.\n::",
            "::note{id=\"n1\"}\nText.\n\n:::aside\nInner.\n:::\n::",
            "::evidence{for=\"c1\"}\n- item\n::",
            "```\n::not a directive\n```",
            "- a\n- b\n  continued",
            "1. one\n2. two",
            "| a | b |\n| --- | --- |\n| 1 | 2 |",
            "> quote\n> more",
            "## Heading",
            "# Top {id=\"top\"}",
            "### Deep",
            "::note{id=\"s\"}\n## Inside\n\nText.\n::",
            "::::wide\n::\n::::",
            "***",
        ])
        .prop_map(str::to_string)
    }

    /// A block, glued to what follows or not.
    fn piece() -> impl Strategy<Value = String> {
        (block(), any::<bool>())
            .prop_map(|(text, gap)| if gap { format!("{text}\n") } else { text })
    }

    /// What an edit inserts: mostly blocks, sometimes a stray line.
    fn insert() -> impl Strategy<Value = String> {
        prop_oneof![3 => piece(), 1 => line()]
    }

    fn lines_of(pieces: Vec<String>) -> Vec<String> {
        pieces.join("\n").split('\n').map(str::to_string).collect()
    }

    fn text(lines: &[String]) -> String {
        let mut s = lines.join("\n");
        s.push('\n');
        s
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]
        #[test]
        fn an_in_place_reparse_always_equals_the_full_parse(
            front in prop::collection::vec(prop::sample::select(vec![
                "title: T", "profile: research", "aliases: [a1]", "x: [1, 2]", "", "---", "key: é",
            ]), 0..5),
            base in prop::collection::vec(piece(), 1..20),
            at in 0usize..200,
            removed in 0usize..4,
            inserted in prop::collection::vec(prop_oneof![
                3 => insert(),
                2 => prop::sample::select(vec!["title: U", "profile: technical", "aliases: [a2]", "- x", "---", "bad: [", ""]).prop_map(str::to_string),
            ], 0..3),
        ) {
            let mut lines = vec!["---".to_string()];
            lines.extend(front.iter().map(|s| s.to_string()));
            lines.push("---".to_string());
            lines.push("# Top".to_string());
            lines.push(String::new());
            lines.extend(lines_of(base));
            lines.push(String::new());
            lines.push("End.".to_string());
            let old = text(&lines);
            let at = at % lines.len();
            let end = (at + removed).min(lines.len());
            let mut edited = lines.clone();
            edited.splice(at..end, lines_of(inserted));
            let new = text(&edited);
            if let Some(got) = in_place(&old, &new) {
                prop_assert_eq!(got, parse(&new));
            }
        }

        #[test]
        fn a_splice_always_equals_the_full_parse(
            base in prop::collection::vec(piece(), 1..30),
            at in 0usize..200,
            removed in 0usize..8,
            inserted in prop::collection::vec(insert(), 0..4),
        ) {
            let mut lines = vec!["Title line.".to_string(), String::new()];
            lines.extend(lines_of(base));
            lines.push(String::new());
            lines.push("End.".to_string());
            let old = text(&lines);
            let at = (at % lines.len()).max(1);
            let end = (at + removed).min(lines.len());
            let mut edited = lines.clone();
            edited.splice(at..end, lines_of(inserted));
            let new = text(&edited);
            let old_doc = parse(&old);
            if let Some(got) = reparse(&old, &old_doc, &new) {
                prop_assert_eq!(got, parse(&new));
            }
        }
    }
}

//! The parser: one linear pass over the lines with an explicit stack, so no
//! input — unclosed fences, 10,000-deep nesting, a 10 MB line — can recurse,
//! loop or panic. Line classification mirrors the reference's regular
//! expressions (documented on each matcher in `line_match.rs`) without
//! using a regex engine.
//!
//! Differences from the reference that the protocol requires:
//! - code fences suppress `::` recognition inside directive bodies too (§6.4);
//! - duplicate heading slugs get `-2`, `-3`, … in document order (§6.5);
//! - directive names may be namespaced (`::finance::position`);
//! - list items take indented continuation lines (§6.3 list spans);
//! - `aliases=` on a directive registers aliases (§2.2).
//!
//! Where the protocol is silent or ambiguous we agree with the reference
//! (decision `spans-match-the-reference`), so that block hashes and
//! `baseHash` preconditions match:
//! - an implicit section ends on the last line of its last child (its heading
//!   line when it has none): blank lines before the next heading are outside
//!   it. §6.3's wording ("the line before the next heading") would include
//!   them; the reference's spans are what agents send hashes of;
//! - not (yet) followed: inside a directive (a `:::tab`) the reference does
//!   not fold a heading's following blocks into its section (the section
//!   spans its heading line); here sections fold inside directives too, which
//!   the patch ops' structure rules (notes and moves into such a section)
//!   are built on.

use foldhash::{HashMap as FastMap, HashSet as FastSet};
use serde_json::{Map, Value};

use super::ast::*;
use super::attrs::{parse_attrs, parse_heading_attrs, split_aliases};
use super::inline::split_pipe_row;
use super::line_match::{
    breaks_paragraph, is_blank, is_fence_close, is_frontmatter_fence, is_table_row,
    is_table_separator, is_thematic_break, match_directive_close, match_directive_open,
    match_fence_open, match_heading, match_list_item, match_quote, DirectiveOpen, Fence, Heading,
};
use super::lines::{self, Line};
use super::slug::{heading_slug, is_js_space};
use super::yaml::{looks_like_yaml_mapping, yaml_to_json_value};

/// Openers with more colons than this, or nested deeper than this many
/// directives, are read as text (and reported), which bounds every walk.
/// The reference implementation caps the fence width alike; real documents
/// use 2–4.
pub const MAX_FENCE_COLONS: u32 = 64;

/// Parses a document. Never fails: problems become [`ParseIssue`]s.
pub fn parse(src: &str) -> Document {
    let src = src.strip_prefix('\u{feff}').unwrap_or(src);
    Parser::new(lines::split(src)).run()
}

/// Body lines parsed on their own: the edited lines of a splice, which
/// the incremental re-parse builds on this module.
pub(super) struct Fragment {
    /// Top-level nodes.
    pub nodes: Vec<Node>,
    /// Parse issues.
    pub issues: Vec<ParseIssue>,
}

/// Parses `src` as a document of its own without frontmatter, whose first
/// line is line index `base` of the whole (so every line number it reports
/// is the document's). Callers decide when this equals the lines' parse in
/// context.
pub(super) fn parse_fragment(src: &str, base: usize) -> Fragment {
    let mut parser = Parser::with_base(lines::split(src), base);
    let nodes = parser.body(base);
    Fragment {
        nodes,
        issues: parser.issues,
    }
}

/// The frontmatter of `src`, a document's first lines up to and including
/// its closing fence: its data, the block and the index of the first body
/// line, when it closes and reads without a parse issue (a splice of the
/// frontmatter alone needs exactly this, and nothing of the body).
pub(super) fn parse_frontmatter(src: &str) -> Option<(Map<String, Value>, Frontmatter, usize)> {
    let mut parser = Parser::new(lines::split(src));
    let (meta, frontmatter, body_start) = parser.frontmatter();
    if !parser.issues.is_empty() {
        return None;
    }
    Some((meta, frontmatter?, body_start))
}

struct OpenSection {
    id: Option<Text>,
    aliases: Vec<Text>,
    level: u8,
    title: Text,
    explicit_id: bool,
    heading_attrs: Option<Text>,
    start: u32,
    /// Index in `Parser::scratch` of the section's first child.
    first: usize,
}

struct OpenDirective {
    name: Text,
    attrs: Attrs,
    colons: u32,
    start: u32,
}

/// A container: the document root or an open directive. Each has its own
/// stack of open heading sections (sections never cross a directive fence).
struct Container {
    directive: Option<OpenDirective>,
    /// Index in `Parser::scratch` of the container's first child.
    first: usize,
    sections: Vec<OpenSection>,
}

/// Takes the children of a closing container off the scratch stack into a
/// vector of exactly their number (no growth slack is kept in the tree).
fn take_children(scratch: &mut Vec<Node>, first: usize) -> Vec<Node> {
    scratch.split_off(first.min(scratch.len()))
}

/// The last line of a section that starts on `start` and holds `children`:
/// the latest end among them, else the heading line.
pub(super) fn section_end(start: u32, children: &[Node]) -> u32 {
    children
        .iter()
        .map(|c| c.span.end)
        .max()
        .unwrap_or(start)
        .max(start)
}

impl Container {
    /// Closes every open section whose level is `>= level`. A section ends
    /// where its last child ends, or on its heading line without children.
    fn close_sections(&mut self, scratch: &mut Vec<Node>, level: u8) {
        while self.sections.last().is_some_and(|s| s.level >= level) {
            let s = self.sections.pop().expect("checked non-empty");
            let children = take_children(scratch, s.first);
            let end = section_end(s.start, &children);
            let node = Node {
                id: s.id,
                aliases: s.aliases.into_boxed_slice(),
                span: Span::new(s.start, end),
                kind: NodeKind::Section {
                    level: s.level,
                    title: s.title,
                    explicit_id: s.explicit_id,
                    heading_attrs: s.heading_attrs,
                    children,
                },
            };
            scratch.push(node);
        }
    }
}

struct Parser<'a> {
    lines: Vec<Line<'a>>,
    /// Index (in the whole document) of `lines[0]`: 0 except for a
    /// fragment of a splice, whose line numbers are the document's.
    base: usize,
    /// Lines to parse: `base + lines.len()` including the trailing-newline artifact.
    to: usize,
    last_line: u32,
    stack: Vec<Container>,
    /// Nodes of every open container and section, innermost last: a node is
    /// always emitted into the innermost open one, so one stack serves all
    /// and each closes by draining its tail (see `take_children`).
    scratch: Vec<Node>,
    implicit_ids: FastSet<Text>,
    /// Per repeated slug, the first `-n` suffix not yet tried.
    next_suffix: FastMap<Text, u32>,
    issues: Vec<ParseIssue>,
    depth_reported: bool,
}

impl<'a> Parser<'a> {
    fn new(lines: Vec<Line<'a>>) -> Self {
        Self::with_base(lines, 0)
    }

    /// A parser of `lines`, which start at line index `base` of a document.
    fn with_base(lines: Vec<Line<'a>>, base: usize) -> Self {
        Parser {
            base,
            to: base + lines.len(),
            last_line: base as u32 + lines::last_line(&lines),
            lines,
            stack: vec![Container {
                directive: None,
                first: 0,
                sections: Vec::new(),
            }],
            scratch: Vec::new(),
            implicit_ids: FastSet::default(),
            next_suffix: FastMap::default(),
            issues: Vec::new(),
            depth_reported: false,
        }
    }

    fn text(&self, i: usize) -> &'a str {
        i.checked_sub(self.base)
            .and_then(|i| self.lines.get(i))
            .map_or("", |l| l.text)
    }

    /// Lines `start..=end` (1-based, document numbering) joined with `\n`.
    fn joined(&self, start: u32, end: u32) -> Text {
        let base = self.base as u32;
        lines::slice_joined_text(&self.lines, start - base, end - base)
    }

    /// Adds a finished node to the innermost open container or section.
    fn emit(&mut self, node: Node) {
        self.scratch.push(node);
    }

    fn issue(&mut self, code: &'static str, line: usize, message: String) {
        self.issues.push(ParseIssue {
            code,
            message,
            line: line as u32 + 1,
        });
    }

    fn run(mut self) -> Document {
        let (meta, frontmatter, body_start) = self.frontmatter();
        self.advance(body_start);
        self.into_document(meta, frontmatter)
    }

    /// Closes what is still open and assembles the document.
    fn into_document(
        mut self,
        meta: Map<String, Value>,
        frontmatter: Option<Frontmatter>,
    ) -> Document {
        let mut children = self.finish();
        attach_frontmatter_aliases(&mut children, &meta);
        Document {
            meta,
            frontmatter,
            children,
            end_line: self.last_line,
            issues: self.issues,
        }
    }

    /// Parses the lines from index `start` to the end; returns the top-level nodes.
    fn body(&mut self, start: usize) -> Vec<Node> {
        self.advance(start);
        self.finish()
    }

    /// Parses the lines from index `i` up to `self.to`; returns where it stopped.
    fn advance(&mut self, mut i: usize) -> usize {
        while i < self.to {
            i = self.step(i);
        }
        i
    }

    /// End of input: closes whatever is still open; returns the top-level nodes.
    fn finish(&mut self) -> Vec<Node> {
        let eof = self.last_line;
        while self.stack.len() > 1 {
            let line = self
                .stack
                .last()
                .and_then(|c| c.directive.as_ref())
                .map_or(0, |d| d.start);
            let name = self
                .stack
                .last()
                .and_then(|c| c.directive.as_ref())
                .map_or(Text::default(), |d| d.name.clone());
            self.issue(
                "unclosed-directive",
                line as usize - 1,
                format!("directive `::{name}` opened on line {line} is never closed"),
            );
            self.close_directive(eof, false);
        }
        if let Some(root) = self.stack.last_mut() {
            root.close_sections(&mut self.scratch, 1);
        }
        take_children(&mut self.scratch, 0)
    }

    /// Reads `---` … `---` on the first lines; returns (meta, node, first body line).
    ///
    /// As in the reference: a blank block or a YAML mapping is frontmatter;
    /// broken YAML that still looks like `key: value` lines is frontmatter
    /// with an `invalid-frontmatter` issue; anything else (a comment-only or
    /// list block) is a thematic break followed by body text.
    fn frontmatter(&mut self) -> (Map<String, Value>, Option<Frontmatter>, usize) {
        if !is_frontmatter_fence(self.text(0)) {
            return (Map::new(), None, 0);
        }
        let Some(close) = (1..self.to).find(|&i| is_frontmatter_fence(self.text(i))) else {
            let rest = lines::slice_joined(&self.lines, 2, self.last_line);
            if looks_like_yaml_mapping(&rest) {
                self.issue(
                    "unclosed-frontmatter",
                    0,
                    "frontmatter opened on line 1 has no closing `---`; it is read as body text"
                        .into(),
                );
            }
            return (Map::new(), None, 0);
        };
        let raw = if close == 1 {
            String::new()
        } else {
            lines::slice_joined(&self.lines, 2, close as u32)
        };
        let meta = match yaml_to_json_value(&raw) {
            Ok(Value::Object(m)) => m,
            Ok(Value::Null) if raw.trim().is_empty() => Map::new(),
            Ok(_) => return (Map::new(), None, 0),
            Err(e) => {
                if !looks_like_yaml_mapping(&raw) {
                    return (Map::new(), None, 0);
                }
                self.issue(
                    "invalid-frontmatter",
                    0,
                    format!("frontmatter is not valid YAML: {e}"),
                );
                Map::new()
            }
        };
        let fm = Frontmatter {
            raw,
            span: Span::new(1, close as u32 + 1),
        };
        (meta, Some(fm), close + 1)
    }

    /// Parses the block starting at line index `i`; returns the next index.
    fn step(&mut self, i: usize) -> usize {
        let line = self.text(i);
        if is_blank(line) {
            return i + 1;
        }
        if let Some(open) = match_directive_open(line) {
            return self.directive_open(i, line, open);
        }
        if let Some(colons) = match_directive_close(line) {
            return self.directive_close(i, line, colons);
        }
        if let Some(h) = match_heading(line) {
            self.open_section(h, i);
            return i + 1;
        }
        if let Some(fence) = match_fence_open(line) {
            return self.code_block(i, fence);
        }
        if is_table_row(line) && i + 1 < self.to && is_table_separator(self.text(i + 1)) {
            if let Some(next) = self.table(i) {
                return next;
            }
        }
        if is_thematic_break(line) {
            self.emit(leaf(i, i, NodeKind::ThematicBreak));
            return i + 1;
        }
        if match_quote(line).is_some() {
            return self.quote(i);
        }
        if let Some((ordered, _)) = match_list_item(line) {
            return self.list(i, ordered);
        }
        self.paragraph(i)
    }

    /// An opening fence on line `i`: opens a directive when it nests
    /// (at least as many colons as its parent's) and is not too wide or too
    /// deep; otherwise reports why and reads the line as text.
    ///
    /// An opener with as many colons as its parent is a child, reported as
    /// `directive-depth-mismatch` (§1 asks children for strictly more
    /// colons): its closer closes it, and the parent's closer the parent,
    /// so the tree is the one its author meant (the Annex C fixture
    /// `patch/add_block` nests a `::risk` in a `::section` so). The
    /// reference reads such an opener, and the parent's then-unmatched
    /// closer, as paragraph text. Fewer colons than the parent stay text.
    #[inline]
    fn directive_open(&mut self, i: usize, line: &'a str, open: DirectiveOpen<'a>) -> usize {
        let parent_colons = self
            .stack
            .last()
            .and_then(|c| c.directive.as_ref())
            .map(|d| d.colons);
        let nested_ok = parent_colons.is_none_or(|p| open.colons >= p);
        // Equal-colon children no longer bound the depth by the fence
        // width, so the open directives are counted too.
        let too_deep =
            open.colons > MAX_FENCE_COLONS || self.stack.len() > MAX_FENCE_COLONS as usize;
        if nested_ok && !too_deep {
            if parent_colons == Some(open.colons) {
                self.issue(
                    "directive-depth-mismatch",
                    i,
                    format!(
                        "`{}` opens a directive with {} colons inside a parent with as many; it is read as the parent's child, but children should have strictly more colons",
                        line.trim(),
                        open.colons,
                    ),
                );
            }
            let start = i as u32 + 1;
            self.stack.push(Container {
                directive: Some(OpenDirective {
                    name: Text::from(open.name),
                    attrs: open.attrs.map(parse_attrs).unwrap_or_default(),
                    colons: open.colons,
                    start,
                }),
                first: self.scratch.len(),
                sections: Vec::new(),
            });
            return i + 1;
        }
        if !nested_ok {
            self.issue(
                "directive-depth-mismatch",
                i,
                format!(
                    "`{}` opens a directive with {} colons inside a parent with {}; children need strictly more colons, so it is read as text",
                    line.trim(),
                    open.colons,
                    parent_colons.unwrap_or(0)
                ),
            );
        } else if !self.depth_reported {
            self.depth_reported = true;
            self.issue(
                "nesting-too-deep",
                i,
                format!("directives nested deeper than {MAX_FENCE_COLONS} levels, or fences wider than {MAX_FENCE_COLONS} colons, are read as text"),
            );
        }
        self.push_paragraph(Text::from(line), i, i);
        i + 1
    }

    /// A closing fence of `colons` colons on line `i`: closes the innermost
    /// open directive of that width (and, unclosed, those inside it), or
    /// reads the line as text when none is open.
    #[inline]
    fn directive_close(&mut self, i: usize, line: &'a str, colons: u32) -> usize {
        if let Some(depth) = self
            .stack
            .iter()
            .rposition(|c| c.directive.as_ref().is_some_and(|d| d.colons == colons))
        {
            // Inner directives that never closed end just before this line.
            while self.stack.len() > depth + 1 {
                let d = self
                    .stack
                    .last()
                    .and_then(|c| c.directive.as_ref())
                    .expect("non-root");
                let (start, name) = (d.start, d.name.clone());
                self.issue(
                    "unclosed-directive",
                    start as usize - 1,
                    format!("directive `::{name}` opened on line {start} is never closed (its parent closes on line {})", i + 1),
                );
                self.close_directive(i as u32, false);
            }
            self.close_directive(i as u32 + 1, true);
            return i + 1;
        }
        if self.stack.len() > 1 || colons == 2 {
            self.issue(
                "stray-directive-close",
                i,
                format!("`{}` closes no open directive", line.trim()),
            );
        }
        self.push_paragraph(Text::from(line), i, i);
        i + 1
    }

    /// A code block whose fence opens on line `i`, up to its closing fence
    /// or, unclosed, the end of the input.
    #[inline]
    fn code_block(&mut self, i: usize, fence: Fence<'a>) -> usize {
        let mut end = i + 1;
        while end < self.to && !is_fence_close(self.text(end), fence) {
            end += 1;
        }
        let closed = end < self.to;
        let content = if end > i + 1 {
            self.joined(i as u32 + 2, end as u32)
        } else {
            Text::default()
        };
        if !closed {
            self.issue(
                "unclosed-code-fence",
                i,
                format!("code fence opened on line {} is never closed", i + 1),
            );
        }
        let end_line = if closed {
            end as u32 + 1
        } else {
            self.last_line.max(i as u32 + 1)
        };
        self.emit(Node {
            id: None,
            aliases: Box::default(),
            span: Span::new(i as u32 + 1, end_line),
            kind: NodeKind::Code {
                lang: (!fence.lang.is_empty()).then(|| Text::from(fence.lang)),
                content,
                closed,
            },
        });
        if closed {
            end + 1
        } else {
            end
        }
    }

    /// A block quote: the run of `>` lines from line `i`.
    #[inline]
    fn quote(&mut self, i: usize) -> usize {
        let mut buf: Vec<&str> = Vec::new();
        let mut j = i;
        while j < self.to {
            match match_quote(self.text(j)) {
                Some(q) => buf.push(q),
                None => break,
            }
            j += 1;
        }
        self.emit(leaf(
            i,
            j - 1,
            NodeKind::Quote {
                content: buf.join("\n").into(),
            },
        ));
        j
    }

    /// Paragraph: prose from line `i` up to a blank line or any other block start.
    #[inline]
    fn paragraph(&mut self, i: usize) -> usize {
        let mut j = i;
        while j < self.to {
            let cur = self.text(j);
            if j > i && breaks_paragraph(cur, self.text(j + 1)) {
                break;
            }
            if is_blank(cur) {
                break;
            }
            j += 1;
        }
        let content = self.joined(i as u32 + 1, j as u32);
        self.push_paragraph(content, i, j - 1);
        j
    }

    fn push_paragraph(&mut self, mut content: Text, first: usize, last: usize) {
        let kept = content.trim_end_matches('\n').len();
        content.truncate(kept);
        self.emit(leaf(first, last, NodeKind::Paragraph { content }));
    }

    fn open_section(&mut self, h: Heading<'a>, i: usize) {
        let attrs = h.attrs.and_then(parse_heading_attrs);
        let (title, attrs, raw_attrs) = match attrs {
            Some(a) => (h.title, a, h.attrs),
            None => (h.text, Attrs::default(), None),
        };
        let title = Text::from(title.trim_matches(is_js_space));
        let explicit = attrs
            .get_str("id")
            .filter(|id| !id.is_empty())
            .map(Text::from);
        let explicit_id = explicit.is_some();
        let id = match explicit {
            Some(id) => id,
            None => self.suffixed_slug(heading_slug(&title)),
        };
        let aliases = attrs
            .get_str("aliases")
            .map(split_aliases)
            .unwrap_or_default();
        let line = i as u32 + 1;
        let Parser { stack, scratch, .. } = self;
        let Some(top) = stack.last_mut() else {
            return;
        };
        if top.directive.is_some() {
            // Inside a directive a heading is a section of its own line: the
            // blocks after it stay the directive's children, as in the
            // reference engine, so block spans and hashes agree with it.
            scratch.push(Node {
                id: Some(id),
                aliases: aliases.into_boxed_slice(),
                span: Span::new(line, line),
                kind: NodeKind::Section {
                    level: h.level,
                    title,
                    explicit_id,
                    heading_attrs: raw_attrs.map(Text::from),
                    children: Vec::new(),
                },
            });
            return;
        }
        top.close_sections(scratch, h.level);
        // After closing: the closed sections are now nodes on the scratch.
        let first = scratch.len();
        top.sections.push(OpenSection {
            id: Some(id),
            aliases,
            level: h.level,
            title,
            explicit_id,
            heading_attrs: raw_attrs.map(Text::from),
            start: line,
            first,
        });
    }

    /// §6.5: among heading-derived ids, a repeated slug gets the first free
    /// `-n` suffix (n ≥ 2) in document order; explicit ids never take part.
    ///
    /// The set only grows, so every suffix below the last one a slug took
    /// is still taken: probing resumes there (`next_suffix`), which keeps
    /// 10,000 identical headings linear instead of quadratic.
    fn suffixed_slug(&mut self, slug: Text) -> Text {
        if self.implicit_ids.insert(slug.clone()) {
            return slug;
        }
        let mut n = self.next_suffix.get(&slug).copied().unwrap_or(2);
        loop {
            let candidate = compact_str::format_compact!("{slug}-{n}");
            if self.implicit_ids.insert(candidate.clone()) {
                self.next_suffix.insert(slug, n + 1);
                return candidate;
            }
            n += 1;
        }
    }

    /// Pops the innermost directive, ending it on line `end` (1-based).
    fn close_directive(&mut self, end: u32, closed: bool) {
        let mut c = self
            .stack
            .pop()
            .expect("caller checked a directive is open");
        let d = c
            .directive
            .take()
            .expect("non-root container has a directive");
        // Sections inside end with their last child, before the closing fence.
        c.close_sections(&mut self.scratch, 1);
        let children = take_children(&mut self.scratch, c.first);
        let id = d.attrs.get_str("id").map(Text::from);
        let aliases = d
            .attrs
            .get_str("aliases")
            .map(split_aliases)
            .unwrap_or_default();
        let node = Node {
            id,
            aliases: aliases.into_boxed_slice(),
            span: Span::new(d.start, end.max(d.start)),
            kind: NodeKind::Directive {
                name: d.name,
                attrs: d.attrs,
                children,
                colons: d.colons,
                closed,
            },
        };
        self.emit(node);
    }

    fn table(&mut self, i: usize) -> Option<usize> {
        let header: Vec<Text> = split_pipe_row(self.text(i))
            .into_iter()
            .map(Text::from)
            .collect();
        let sep = split_pipe_row(self.text(i + 1));
        if sep.len() != header.len() {
            return None;
        }
        let align = sep
            .iter()
            .map(|c| match (c.starts_with(':'), c.ends_with(':')) {
                (true, true) => Some(Align::Center),
                (false, true) => Some(Align::Right),
                (true, false) => Some(Align::Left),
                (false, false) => None,
            })
            .collect();
        let mut rows = Vec::new();
        let mut j = i + 2;
        while j < self.to && is_table_row(self.text(j)) {
            let mut cells: Vec<Text> = split_pipe_row(self.text(j))
                .into_iter()
                .take(header.len())
                .map(Text::from)
                .collect();
            cells.resize(header.len(), Text::default());
            rows.push(cells);
            j += 1;
        }
        self.emit(leaf(
            i,
            j - 1,
            NodeKind::Table {
                header,
                align,
                rows,
            },
        ));
        Some(j)
    }

    fn list(&mut self, i: usize, ordered: bool) -> usize {
        let mut items = Vec::new();
        let mut j = i;
        while j < self.to {
            let Some((o, content)) = match_list_item(self.text(j)) else {
                break;
            };
            if o != ordered {
                break;
            }
            let first = j;
            let mut content = Text::from(content);
            j += 1;
            // Indented, non-blank lines continue the item.
            while j < self.to {
                let cur = self.text(j);
                let indented = cur.starts_with([' ', '\t']);
                if !indented || is_blank(cur) {
                    break;
                }
                if is_table_row(cur) && is_table_separator(self.text(j + 1)) {
                    break;
                }
                content.push('\n');
                content.push_str(cur);
                j += 1;
            }
            items.push(ListItem {
                content,
                span: Span::new(first as u32 + 1, j as u32),
            });
        }
        self.emit(leaf(i, j - 1, NodeKind::List { ordered, items }));
        j
    }
}

fn leaf(first: usize, last: usize, kind: NodeKind) -> Node {
    Node {
        id: None,
        aliases: Box::default(),
        span: Span::new(first as u32 + 1, last as u32 + 1),
        kind,
    }
}

/// Frontmatter `aliases:` attach to the first top-level level-1 section.
fn attach_frontmatter_aliases(children: &mut [Node], meta: &Map<String, Value>) {
    let Some(Value::Array(list)) = meta.get("aliases") else {
        return;
    };
    let Some(root) = children
        .iter_mut()
        .find(|n| matches!(n.kind, NodeKind::Section { level: 1, .. }))
    else {
        return;
    };
    let mut aliases = std::mem::take(&mut root.aliases).into_vec();
    for a in list {
        if let Value::String(s) = a {
            let s = s.trim();
            if !s.is_empty() && !aliases.iter().any(|x| x == s) {
                aliases.push(Text::from(s));
            }
        }
    }
    root.aliases = aliases.into_boxed_slice();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(doc: &Document) -> Vec<String> {
        doc.walk()
            .filter_map(|n| n.id.as_ref().map(|s| s.to_string()))
            .collect()
    }

    #[test]
    fn basic_section_spans() {
        let d = parse("# Risks\n\nA paragraph about risks.\n");
        assert_eq!(d.children.len(), 1);
        assert_eq!(d.children[0].span, Span::new(1, 3));
        assert_eq!(d.children[0].children()[0].span, Span::new(3, 3));
        assert!(d.issues.is_empty());
    }

    /// A section ends on its last child's last line, as in the reference:
    /// the blank lines before the next heading (or the end) are outside it.
    #[test]
    fn section_ends_at_its_last_non_blank_line() {
        let d = parse("# A\ntext\n\n## B\nx\n\n# C\ny\n\n\n");
        let a = &d.children[0];
        assert_eq!(a.span, Span::new(1, 5));
        assert_eq!(a.children()[1].span, Span::new(4, 5));
        assert_eq!(d.children[1].span, Span::new(7, 8));
        // Without children: the heading line alone.
        let d = parse("# A\n\n\n## B\n\n# C\n");
        assert_eq!(d.children[0].span, Span::new(1, 4));
        assert_eq!(d.children[0].children()[0].span, Span::new(4, 4));
        assert_eq!(d.children[1].span, Span::new(6, 6));
        // An unclosed directive runs to the end, and its section with it.
        let d = parse("# A\n\n::note{id=\"n\"}\nx\n");
        assert_eq!(d.children[0].span, Span::new(1, 4));
    }

    /// Inside a directive a heading is a section of its own line, without
    /// children: the blocks after it stay the directive's (the reference
    /// engine's spans, so a `baseHash` taken from its tools is accepted).
    #[test]
    fn sections_inside_directives_are_their_heading_line() {
        let src = "# Top\n\n::tabs\n:::tab{title=\"a\"}\n### Inner\n\nText.\n\n::::claim{id=\"c\"}\nx\n::::\n\n:::\n::\n\nAfter.\n";
        let d = parse(src);
        assert!(d.issues.is_empty(), "{:?}", d.issues);
        let top = &d.children[0];
        assert_eq!(top.span, Span::new(1, 16));
        let tab = &top.children()[0].children()[0];
        assert_eq!(tab.span, Span::new(4, 13));
        assert_eq!(tab.children().len(), 3, "heading, paragraph, claim");
        let inner = &tab.children()[0];
        assert_eq!(inner.id.as_deref(), Some("inner"));
        assert_eq!(inner.span, Span::new(5, 5));
        assert!(inner.children().is_empty());
        assert_eq!(ids(&d), ["top", "inner", "c"]);
    }

    #[test]
    fn collision_suffixing_in_document_order() {
        let d = parse("## Overview\n\n## Overview\n\n## Overview\n");
        assert_eq!(ids(&d), ["overview", "overview-2", "overview-3"]);
    }

    #[test]
    fn explicit_heading_ids_and_aliases() {
        let d = parse("## Risks {id=\"rp3-risks\" aliases=\"risks,rp3-risk-list\"}\n");
        let n = &d.children[0];
        assert_eq!(n.id.as_deref(), Some("rp3-risks"));
        assert_eq!(&*n.aliases, ["risks", "rp3-risk-list"]);
        assert!(matches!(&n.kind, NodeKind::Section { title, .. } if title == "Risks"));
    }

    #[test]
    fn directives_nest_by_colon_count() {
        let src = "::grid{columns=2}\n:::card{title=\"Bull\"}\ntext\n:::\n\n:::card{title=\"Bear\"}\ntext\n:::\n::\n";
        let d = parse(src);
        assert!(d.issues.is_empty(), "{:?}", d.issues);
        let grid = &d.children[0];
        assert_eq!(grid.span, Span::new(1, 9));
        assert_eq!(grid.children().len(), 2);
        assert_eq!(grid.children()[1].span, Span::new(6, 8));
    }

    #[test]
    fn code_fence_suppresses_directives_inside_directive_bodies() {
        let src = "::example{id=\"e\"}\n```\n::claim{id=\"x\"}\n::\n```\n::\n";
        let d = parse(src);
        assert!(d.issues.is_empty(), "{:?}", d.issues);
        assert_eq!(ids(&d), ["e"]);
        assert_eq!(d.children[0].span, Span::new(1, 6));
    }

    #[test]
    fn namespaced_directive_names() {
        let d = parse("::finance::position{id=\"holding-asml\"}\nx\n::\n");
        assert_eq!(d.children[0].directive_name(), Some("finance::position"));
        assert_eq!(d.children[0].id.as_deref(), Some("holding-asml"));
    }

    #[test]
    fn list_items_take_continuation_lines() {
        let d = parse("- one\n  more\n- two\n\npara\n");
        let NodeKind::List { items, .. } = &d.children[0].kind else {
            panic!()
        };
        assert_eq!(items[0].span, Span::new(1, 2));
        assert_eq!(items[0].content, "one\n  more");
        assert_eq!(d.children[0].span, Span::new(1, 3));
    }

    #[test]
    fn frontmatter_only_and_crlf() {
        let d = parse("---\r\ntitle: Only\r\n---\r\n");
        assert_eq!(
            d.frontmatter.as_ref().map(|f| f.span),
            Some(Span::new(1, 3))
        );
        assert_eq!(d.meta.get("title").and_then(Value::as_str), Some("Only"));
        assert!(d.children.is_empty());
        assert_eq!(d.end_line, 3);
    }

    #[test]
    fn frontmatter_aliases_attach_to_root_section() {
        let d = parse("---\naliases: [demo, intro]\n---\n\n# Aliases\n\nParagraph.\n");
        assert_eq!(&*d.children[0].aliases, ["demo", "intro"]);
    }

    #[test]
    fn recovery_reports_issues() {
        let d = parse("::a\n:::b\ntext\n::\n```\nopen");
        let codes: Vec<&str> = d.issues.iter().map(|i| i.code).collect();
        assert_eq!(codes, ["unclosed-directive", "unclosed-code-fence"]);
        assert_eq!(d.children[0].span, Span::new(1, 4));
        assert_eq!(d.children[0].children()[0].span, Span::new(2, 3));
    }

    /// The Annex C `patch/add_block` input: a `::risk` inside a
    /// `::section` is the section's child, reported once, and the two
    /// closers close the risk and then the section.
    #[test]
    fn equal_colon_nesting_is_a_child() {
        let d = parse(
            "::section{id=\"risks\"}\n::risk{id=\"r1\" severity=\"low\"}\nFirst risk.\n::\n::\n",
        );
        let codes: Vec<&str> = d.issues.iter().map(|i| i.code).collect();
        assert_eq!(codes, ["directive-depth-mismatch"]);
        assert_eq!(d.issues[0].line, 2);
        assert_eq!(d.children.len(), 1);
        assert_eq!(d.children[0].span, Span::new(1, 5));
        let kids = d.children[0].children();
        assert_eq!(kids.len(), 1);
        assert_eq!(kids[0].id.as_deref(), Some("r1"));
        assert_eq!(kids[0].span, Span::new(2, 4));
        // A lost closer is still unclosed, a doubled one still stray.
        let d = parse("::a\n::b\nx\n::\n");
        let codes: Vec<&str> = d.issues.iter().map(|i| i.code).collect();
        assert_eq!(codes, ["directive-depth-mismatch", "unclosed-directive"]);
        let d = parse("::a\nx\n::\n::\n");
        let codes: Vec<&str> = d.issues.iter().map(|i| i.code).collect();
        assert_eq!(codes, ["stray-directive-close"]);
        // Fewer colons than the parent: text, as before.
        let d = parse(":::a\n::b\n:::\n");
        let codes: Vec<&str> = d.issues.iter().map(|i| i.code).collect();
        assert_eq!(codes, ["directive-depth-mismatch"]);
        assert_eq!(d.children[0].children()[0].type_name(), "paragraph");
    }

    /// Equal-colon openers nest without widening the fence: the number of
    /// open directives is capped too, so 100,000 `::d` lines neither
    /// recurse nor build a 100,000-deep tree.
    #[test]
    fn equal_colon_nesting_depth_is_bounded() {
        let n = 100_000;
        let src = "::d\n".repeat(n) + &"::\n".repeat(n);
        let d = parse(&src);
        assert!(d.issues.iter().any(|i| i.code == "nesting-too-deep"));
        let mut depth = 0;
        let mut kids = &d.children;
        while let Some(first) = kids.iter().find(|k| !k.children().is_empty()) {
            depth += 1;
            kids = match &first.kind {
                NodeKind::Directive { children, .. } => children,
                _ => break,
            };
        }
        assert!(depth <= MAX_FENCE_COLONS as usize, "{depth}");
    }

    #[test]
    fn deep_nesting_is_bounded() {
        let depth = 2000;
        let mut src = String::new();
        for k in 0..depth {
            src.push_str(&":".repeat(k + 2));
            src.push_str("d\n");
        }
        for k in (0..depth).rev() {
            src.push_str(&":".repeat(k + 2));
            src.push('\n');
        }
        let d = parse(&src);
        assert!(d.issues.iter().any(|i| i.code == "nesting-too-deep"));
    }

    #[test]
    fn heading_regex_edge_cases() {
        assert!(match_heading("#nospace").is_none());
        assert!(match_heading("####### seven").is_none());
        assert!(match_heading("# ").is_none());
        let h = match_heading("# A {x} {y}").unwrap();
        assert_eq!((h.title, h.attrs), ("A {x}", Some("y")));
        let h = match_heading("# A {x {id=b}").unwrap();
        assert_eq!((h.title, h.attrs), ("A", Some("x {id=b")));
        let d = parse("# Set {a, b}\n# Title {}\n");
        let titles: Vec<&str> = d
            .children
            .iter()
            .map(|n| match &n.kind {
                NodeKind::Section { title, .. } => title.as_str(),
                _ => "",
            })
            .collect();
        assert_eq!(titles, ["Set {a, b}", "Title {}"]);
    }
    #[test]
    fn paragraph_directive_body() {
        let d = parse("::claim{id=\"c\" confidence=0.9}\nClaim text\nmore.\n::\n");
        assert!(matches!(d.children[0].kind, NodeKind::Directive { .. }));
        assert_eq!(d.children[0].body(), Some("Claim text\nmore."));
    }

    #[test]
    fn frontmatter_acceptance_rules() {
        // Blank block: frontmatter.
        assert!(parse("---\n---\n# A\n").frontmatter.is_some());
        // Comment-only block: two thematic breaks around a heading.
        let d = parse("---\n# Heading\n---\n");
        assert!(d.frontmatter.is_none());
        assert_eq!(d.children[0].type_name(), "thematic_break");
        // Broken YAML that looks like a mapping: kept, reported.
        let d = parse("---\ntitle: [unclosed\n---\n");
        assert!(d.frontmatter.is_some());
        assert_eq!(d.issues[0].code, "invalid-frontmatter");
        // Truncated frontmatter.
        let d = parse("---\ntitle: x\n\n# Body\n");
        assert_eq!(d.issues[0].code, "unclosed-frontmatter");
        // A document that merely starts with a rule.
        assert!(parse("---\nJust prose.\n").issues.is_empty());
    }

    #[test]
    fn fences_tilde_long_and_info_strings() {
        let d = parse("~~~~ js title=x\n```\n~~~\n~~~~\nafter\n");
        let NodeKind::Code {
            lang,
            content,
            closed,
        } = &d.children[0].kind
        else {
            panic!()
        };
        assert_eq!(lang.as_deref(), Some("js"));
        assert_eq!(content, "```\n~~~");
        assert!(closed);
        assert_eq!(d.children[0].span, Span::new(1, 4));
    }

    #[test]
    fn implicit_suffixing_ignores_explicit_ids_and_empty_slugs_become_section() {
        let d = parse("## Intro {id=\"intro\"}\n## Intro\n## !!!\n## ???\n");
        assert_eq!(ids(&d), ["intro", "intro", "section", "section-2"]);
    }

    /// The bench generator (noma-testutil, which cannot depend on this
    /// crate) makes documents that parse without issues.
    #[test]
    fn the_synthetic_bench_document_parses_cleanly() {
        let d = parse(&noma_testutil::synth::document(100));
        assert!(d.issues.is_empty(), "{:?}", d.issues);
        assert_eq!(d.children[0].children().len(), 100);
    }
}

//! The Noma AST: one tree of [`Node`]s per document, every node carrying its
//! exact 1-based inclusive line span (§6.3 of the protocol).
//!
//! The shape follows the reference implementation's `src/ast.ts` so that
//! `noma parse` emits the same JSON, while the Rust types keep the union closed:
//! adding a node kind fails to compile every `match` that must learn about it.

use serde_json::{Map, Value};

/// The AST's string type. Ids, names, attribute keys and values, table cells
/// and most titles are short: up to 24 bytes live inline, without a heap
/// allocation, which is most of the parser's allocation count and memory.
pub type Text = compact_str::CompactString;

/// A 1-based inclusive line range `[start, end]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Span {
    /// First line of the node (1-based).
    pub start: u32,
    /// Last line of the node (1-based, inclusive).
    pub end: u32,
}

impl Span {
    /// A span from `start` to `end`, both 1-based and inclusive.
    pub fn new(start: u32, end: u32) -> Self {
        Span { start, end }
    }
    /// Whether `line` lies inside the span.
    pub fn contains(&self, line: u32) -> bool {
        self.start <= line && line <= self.end
    }
}

/// A directive attribute value: the attribute grammar yields strings, numbers
/// and booleans only (`key="text"`, `key=42`, `key=0.8`, `flag`, `key=true`).
#[derive(Debug, Clone, PartialEq)]
pub enum AttrValue {
    /// A string value (quoted or bare).
    Str(Text),
    /// A numeric value (`-?\d+` or `-?\d+\.\d+`).
    Num(f64),
    /// A boolean value (`true`, `false`, or a bare flag).
    Bool(bool),
}

impl AttrValue {
    /// The value as a string slice, if it is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            AttrValue::Str(s) => Some(s),
            _ => None,
        }
    }
    /// The value as a number, if it is numeric.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            AttrValue::Num(n) => Some(*n),
            _ => None,
        }
    }
    /// The value as JSON (numbers that are whole print without a fraction,
    /// the way JavaScript prints them).
    pub fn to_json(&self) -> Value {
        match self {
            AttrValue::Str(s) => Value::String(s.to_string()),
            AttrValue::Bool(b) => Value::Bool(*b),
            AttrValue::Num(n) => number_to_json(*n),
        }
    }
    /// The value as the reference implementation's `String(value)` prints it.
    pub fn to_display_string(&self) -> String {
        match self {
            AttrValue::Str(s) => s.to_string(),
            AttrValue::Bool(b) => b.to_string(),
            AttrValue::Num(n) => format_number(*n),
        }
    }
}

/// Formats a number the way JavaScript's `String(n)` does for the values the
/// attribute grammar can produce (integers print without `.0`).
pub fn format_number(n: f64) -> String {
    if n.is_finite() && n.fract() == 0.0 && n.abs() < 1e21 {
        format!("{}", n as i128)
    } else {
        format!("{n}")
    }
}

/// A JSON number for `n`, integral when `n` is whole.
pub fn number_to_json(n: f64) -> Value {
    if n.is_finite() && n.fract() == 0.0 && n.abs() < 9.007_199_254_740_992e15 {
        Value::from(n as i64)
    } else {
        serde_json::Number::from_f64(n)
            .map(Value::Number)
            .unwrap_or(Value::Null)
    }
}

/// Ordered attribute list. Insertion order is kept (it is the source order),
/// and setting an existing key replaces its value in place, like a JS object.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Attrs(pub Vec<(Text, AttrValue)>);

impl Attrs {
    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&AttrValue> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
    /// The string value of `key`, if present and a string.
    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(AttrValue::as_str)
    }
    /// Whether `key` is present (any value).
    pub fn has(&self, key: &str) -> bool {
        self.0.iter().any(|(k, _)| k == key)
    }
    /// Sets `key`, keeping its position when it already exists.
    pub fn set(&mut self, key: &str, value: AttrValue) {
        if let Some(slot) = self.0.iter_mut().find(|(k, _)| k == key) {
            slot.1 = value;
        } else {
            self.0.push((key.into(), value));
        }
    }
    /// Removes `key`, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<AttrValue> {
        let idx = self.0.iter().position(|(k, _)| k == key)?;
        Some(self.0.remove(idx).1)
    }
    /// Iterates over `(key, value)` pairs in source order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &AttrValue)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v))
    }
    /// Number of attributes.
    pub fn len(&self) -> usize {
        self.0.len()
    }
    /// Whether there are no attributes.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// The attributes as a JSON object.
    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        for (k, v) in &self.0 {
            map.insert(k.to_string(), v.to_json());
        }
        Value::Object(map)
    }
}

/// Column alignment of a pipe table, from its separator row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// `:---`
    Left,
    /// `:---:`
    Center,
    /// `---:`
    Right,
}

/// One entry of a list.
#[derive(Debug, Clone, PartialEq)]
pub struct ListItem {
    /// Item text after the marker; continuation lines follow after `\n`,
    /// verbatim (indentation kept) so the source can be rebuilt exactly.
    pub content: Text,
    /// The item's lines: its marker line through its last continuation line.
    pub span: Span,
}

/// The kinds of block node, with their kind-specific data.
#[derive(Debug, Clone, PartialEq)]
pub enum NodeKind {
    /// A heading-derived section; it owns everything up to the next heading
    /// of the same or a shallower level in the same container.
    Section {
        /// Heading depth, 1..=6.
        level: u8,
        /// Heading text, without the `#` marker and the `{...}` attributes.
        title: Text,
        /// Whether the heading carried an explicit `{id="..."}`.
        explicit_id: bool,
        /// The heading's `{...}` attribute block as written (without braces).
        heading_attrs: Option<Text>,
        /// Nested nodes.
        children: Vec<Node>,
    },
    /// A run of prose lines.
    Paragraph {
        /// The lines joined with `\n`.
        content: Text,
    },
    /// A fenced code block (```` ``` ````); its interior is never parsed.
    Code {
        /// The info string after the opening fence, if any.
        lang: Option<Text>,
        /// The lines between the fences, joined with `\n`.
        content: Text,
        /// Whether the closing fence was found.
        closed: bool,
    },
    /// A `-`/`*` or `1.` list.
    List {
        /// Whether the list is numbered.
        ordered: bool,
        /// The items in order.
        items: Vec<ListItem>,
    },
    /// A `>` block quote.
    Quote {
        /// The quoted lines without their `>` prefix, joined with `\n`.
        content: Text,
    },
    /// A `---`, `***` or `___` line.
    ThematicBreak,
    /// A GitHub pipe table.
    Table {
        /// Header cells.
        header: Vec<Text>,
        /// Per-column alignment (`None` = default).
        align: Vec<Option<Align>>,
        /// Body rows, each padded or cut to the header's width.
        rows: Vec<Vec<Text>>,
    },
    /// A `::name{attrs}` … `::` directive block.
    Directive {
        /// Directive name, possibly namespaced (`finance::position`).
        name: Text,
        /// Attributes in source order.
        attrs: Attrs,
        /// Nested nodes.
        children: Vec<Node>,
        /// Number of colons in the opening (and closing) fence.
        colons: u32,
        /// Whether the closing fence was found.
        closed: bool,
    },
}

/// A block node: identity, span and kind.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// Canonical id (explicit `id=` or heading slug, collision-suffixed).
    pub id: Option<Text>,
    /// Aliases that resolve to this node (never patch identity).
    pub aliases: Box<[Text]>,
    /// Exact line span (Tier 1) or best effort (Tier 2).
    pub span: Span,
    /// What the node is.
    pub kind: NodeKind,
}

impl Node {
    /// The node's type name as it appears on the wire (`section`, `directive`, ...).
    pub fn type_name(&self) -> &'static str {
        match &self.kind {
            NodeKind::Section { .. } => "section",
            NodeKind::Paragraph { .. } => "paragraph",
            NodeKind::Code { .. } => "code",
            NodeKind::List { .. } => "list",
            NodeKind::Quote { .. } => "quote",
            NodeKind::ThematicBreak => "thematic_break",
            NodeKind::Table { .. } => "table",
            NodeKind::Directive { .. } => "directive",
        }
    }
    /// Child nodes (sections and directives only).
    pub fn children(&self) -> &[Node] {
        match &self.kind {
            NodeKind::Section { children, .. } | NodeKind::Directive { children, .. } => children,
            _ => &[],
        }
    }
    /// Mutable child nodes (sections and directives only).
    pub fn children_mut(&mut self) -> Option<&mut Vec<Node>> {
        match &mut self.kind {
            NodeKind::Section { children, .. } | NodeKind::Directive { children, .. } => {
                Some(children)
            }
            _ => None,
        }
    }
    /// The directive name, if this is a directive.
    pub fn directive_name(&self) -> Option<&str> {
        match &self.kind {
            NodeKind::Directive { name, .. } => Some(name),
            _ => None,
        }
    }
    /// A directive's body text: the content of its only child when that
    /// child is one paragraph (derived, so the text is stored once).
    pub fn body(&self) -> Option<&str> {
        match &self.kind {
            NodeKind::Directive { children, .. } => match children.as_slice() {
                [only] => match &only.kind {
                    NodeKind::Paragraph { content } => Some(content.as_str()),
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        }
    }
    /// The directive attributes, if this is a directive.
    pub fn attrs(&self) -> Option<&Attrs> {
        match &self.kind {
            NodeKind::Directive { attrs, .. } => Some(attrs),
            _ => None,
        }
    }
    /// Whether this is a directive named `name`.
    pub fn is_directive(&self, name: &str) -> bool {
        self.directive_name() == Some(name)
    }
    /// The id as `&str`, if any.
    pub fn id_str(&self) -> Option<&str> {
        self.id.as_deref()
    }
}

/// The frontmatter block (`---` … `---` at the top of the file).
#[derive(Debug, Clone, PartialEq)]
pub struct Frontmatter {
    /// The YAML text between the fences.
    pub raw: String,
    /// Line 1 through the closing fence.
    pub span: Span,
}

/// A parse problem (Tier-2 input): the tree is still built, best effort.
#[derive(Debug, Clone, PartialEq)]
pub struct ParseIssue {
    /// Kebab-case code, e.g. `unclosed-directive`.
    pub code: &'static str,
    /// Human-readable explanation.
    pub message: String,
    /// 1-based line.
    pub line: u32,
}

/// A parsed document.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Document {
    /// Frontmatter as data (`{}` when absent or not a mapping).
    pub meta: Map<String, Value>,
    /// The frontmatter block, when present.
    pub frontmatter: Option<Frontmatter>,
    /// Top-level nodes.
    pub children: Vec<Node>,
    /// The document's last line (0 for an empty file).
    pub end_line: u32,
    /// Problems the parser recovered from; empty for Tier-1 documents.
    pub issues: Vec<ParseIssue>,
}

impl Document {
    /// Every node in document order (pre-order), without list items.
    pub fn walk(&self) -> Walk<'_> {
        walk_nodes(&self.children)
    }
    /// Every node in pre-order together with its depth (top level = 0) and
    /// the index path is not needed by most callers; see [`Document::walk`].
    pub fn walk_with_parent(&self) -> Vec<(Option<&Node>, &Node)> {
        let mut out = Vec::new();
        let mut stack: Vec<(Option<&Node>, std::slice::Iter<'_, Node>)> =
            vec![(None, self.children.iter())];
        while let Some((parent, iter)) = stack.last_mut() {
            match iter.next() {
                Some(node) => {
                    let p = *parent;
                    out.push((p, node));
                    let kids = node.children();
                    if !kids.is_empty() {
                        stack.push((Some(node), kids.iter()));
                    }
                }
                None => {
                    stack.pop();
                }
            }
        }
        out
    }
    /// The first node whose canonical id is `id`.
    pub fn find(&self, id: &str) -> Option<&Node> {
        self.walk().find(|n| n.id.as_deref() == Some(id))
    }
}

/// Every node of `nodes` and below, in pre-order (without list items).
pub fn walk_nodes(nodes: &[Node]) -> Walk<'_> {
    Walk {
        stack: vec![nodes.iter()],
    }
}

/// Pre-order iterator over a document's nodes (iterative: deep trees are fine).
pub struct Walk<'a> {
    stack: Vec<std::slice::Iter<'a, Node>>,
}

impl<'a> Iterator for Walk<'a> {
    type Item = &'a Node;
    fn next(&mut self) -> Option<&'a Node> {
        loop {
            let top = self.stack.last_mut()?;
            match top.next() {
                Some(node) => {
                    let kids = node.children();
                    if !kids.is_empty() {
                        self.stack.push(kids.iter());
                    }
                    return Some(node);
                }
                None => {
                    self.stack.pop();
                }
            }
        }
    }
}

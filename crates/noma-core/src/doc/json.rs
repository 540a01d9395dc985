//! The AST as JSON, in the shape of the reference's `noma parse` /
//! `noma render --to json` (schemas/ast.schema.json): every node has `type`,
//! optional `id` and `aliases`, `pos {line, column}` and `endLine`, then its
//! kind fields. The document adds `meta`, `children` and — our addition —
//! a `frontmatter` node `{type, data, raw, pos, endLine}` when present.
//!
//! Recursion follows the tree; the parser caps directive nesting at 256 and
//! sections add at most six levels per container, so depth stays bounded.

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;

use super::ast::{Align, Document, ListItem, Node, NodeKind, Span};

/// The whole document as JSON, with positions.
pub fn document_to_json(doc: &Document) -> Value {
    to_value(&DocumentJson::new(doc))
}

/// One node as JSON, with positions.
pub fn node_to_json(node: &Node) -> Value {
    to_value(&NodeJson {
        node,
        positions: true,
    })
}

/// Annex C structural equality: the two documents serialise to the same JSON
/// once positions (`pos`, `endLine`) are left out. This is the reference
/// harness's `JSON.stringify` comparison minus positions, so the roundtrip
/// property survives the renderer's blank-line normalisation. Parser-internal
/// flags that are not part of the wire AST (fence colon counts, `closed`,
/// recovered issues) are not compared.
pub fn structurally_equal(a: &Document, b: &Document) -> bool {
    let plain = |doc| DocumentJson {
        doc,
        positions: false,
    };
    to_value(&plain(a)) == to_value(&plain(b))
}

/// Serialising these never fails: every map key is a string and every
/// value plain data.
fn to_value(v: &impl Serialize) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// The document's JSON as a [`Serialize`] value: written straight to an
/// output (`noma parse`, `noma render --to json`) it never builds the JSON
/// tree, whose values weigh many times the document (a 100 MB
/// document's tree of JSON values took 6 GB).
pub struct DocumentJson<'a> {
    doc: &'a Document,
    positions: bool,
}

impl<'a> DocumentJson<'a> {
    /// The document with positions.
    pub fn new(doc: &'a Document) -> Self {
        DocumentJson {
            doc,
            positions: true,
        }
    }
}

impl Serialize for DocumentJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (doc, positions) = (self.doc, self.positions);
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("type", "document")?;
        if positions && doc.end_line > 0 {
            m.serialize_entry("pos", &Pos(1))?;
            m.serialize_entry("endLine", &doc.end_line)?;
        }
        m.serialize_entry("meta", &doc.meta)?;
        if let Some(fm) = &doc.frontmatter {
            m.serialize_entry(
                "frontmatter",
                &Frontmatter {
                    span: positions.then_some(fm.span),
                    data: &doc.meta,
                    raw: &fm.raw,
                },
            )?;
        }
        m.serialize_entry("children", &Children(&doc.children, positions))?;
        m.end()
    }
}

struct Pos(u32);

impl Serialize for Pos {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("line", &self.0)?;
        m.serialize_entry("column", &1)?;
        m.end()
    }
}

fn put_span<M: SerializeMap>(m: &mut M, span: Span) -> Result<(), M::Error> {
    m.serialize_entry("pos", &Pos(span.start))?;
    m.serialize_entry("endLine", &span.end)
}

struct Frontmatter<'a> {
    span: Option<Span>,
    data: &'a serde_json::Map<String, Value>,
    raw: &'a str,
}

impl Serialize for Frontmatter<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("type", "frontmatter")?;
        if let Some(span) = self.span {
            put_span(&mut m, span)?;
        }
        m.serialize_entry("data", self.data)?;
        m.serialize_entry("raw", self.raw)?;
        m.end()
    }
}

struct Children<'a>(&'a [Node], bool);

impl Serialize for Children<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for node in self.0 {
            seq.serialize_element(&NodeJson {
                node,
                positions: self.1,
            })?;
        }
        seq.end()
    }
}

struct NodeJson<'a> {
    node: &'a Node,
    positions: bool,
}

impl Serialize for NodeJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (node, positions) = (self.node, self.positions);
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("type", node.type_name())?;
        if let Some(id) = &node.id {
            m.serialize_entry("id", id.as_str())?;
        }
        if !node.aliases.is_empty() {
            m.serialize_entry("aliases", &Strs(&node.aliases))?;
        }
        if positions {
            put_span(&mut m, node.span)?;
        }
        match &node.kind {
            NodeKind::Section {
                level,
                title,
                children,
                ..
            } => {
                m.serialize_entry("level", level)?;
                m.serialize_entry("title", title.as_str())?;
                m.serialize_entry("children", &Children(children, positions))?;
            }
            NodeKind::Paragraph { content } | NodeKind::Quote { content } => {
                m.serialize_entry("content", content.as_str())?;
            }
            NodeKind::Code { lang, content, .. } => {
                if let Some(lang) = lang {
                    m.serialize_entry("lang", lang.as_str())?;
                }
                m.serialize_entry("content", content.as_str())?;
            }
            NodeKind::List { ordered, items } => {
                m.serialize_entry("ordered", ordered)?;
                m.serialize_entry("items", &Items(items, positions))?;
            }
            NodeKind::ThematicBreak => {}
            NodeKind::Table {
                header,
                align,
                rows,
            } => {
                m.serialize_entry("header", &Strs(header))?;
                let align: Vec<Option<&str>> = align
                    .iter()
                    .map(|a| match a {
                        Some(Align::Left) => Some("left"),
                        Some(Align::Center) => Some("center"),
                        Some(Align::Right) => Some("right"),
                        None => None,
                    })
                    .collect();
                m.serialize_entry("align", &align)?;
                let rows: Vec<Strs<'_>> = rows.iter().map(|r| Strs(r)).collect();
                m.serialize_entry("rows", &rows)?;
            }
            NodeKind::Directive {
                name,
                attrs,
                children,
                ..
            } => {
                m.serialize_entry("name", name.as_str())?;
                m.serialize_entry("attrs", &attrs.to_json())?;
                if let Some(body) = node.body() {
                    m.serialize_entry("body", body)?;
                }
                m.serialize_entry("children", &Children(children, positions))?;
            }
        }
        m.end()
    }
}

struct Items<'a>(&'a [ListItem], bool);

impl Serialize for Items<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for item in self.0 {
            seq.serialize_element(&Item(item, self.1))?;
        }
        seq.end()
    }
}

struct Item<'a>(&'a ListItem, bool);

impl Serialize for Item<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("type", "list_item")?;
        if self.1 {
            put_span(&mut m, self.0.span)?;
        }
        m.serialize_entry("content", self.0.content.as_str())?;
        m.end()
    }
}

/// A JSON array of strings.
struct Strs<'a>(&'a [super::ast::Text]);

impl Serialize for Strs<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|t| t.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::parse;
    use serde_json::json;

    #[test]
    fn document_shape() {
        let doc = parse("---\ntitle: T\n---\n# Risks {aliases=\"r\"}\n\n- a\n  b\n\n| x | y |\n|---|---:|\n| 1 |\n");
        let v = document_to_json(&doc);
        assert_eq!(v["type"], "document");
        assert_eq!(v["endLine"], 11);
        assert_eq!(v["meta"]["title"], "T");
        assert_eq!(v["frontmatter"]["raw"], "title: T");
        assert_eq!(v["frontmatter"]["endLine"], 3);
        assert_eq!(v["frontmatter"]["data"]["title"], "T");
        let s = &v["children"][0];
        assert_eq!(s["type"], "section");
        assert_eq!(s["id"], "risks");
        assert_eq!(s["aliases"], json!(["r"]));
        assert_eq!(s["pos"], json!({"line": 4, "column": 1}));
        assert_eq!(s["endLine"], 11);
        let list = &s["children"][0];
        assert_eq!(list["items"][0]["content"], "a\n  b");
        assert_eq!(list["items"][0]["endLine"], 7);
        let table = &s["children"][1];
        assert_eq!(table["align"], json!([null, "right"]));
        assert_eq!(table["rows"], json!([["1", ""]]));
        // Keys come in a fixed order: identity, position, then kind fields.
        let keys: Vec<&String> = s
            .as_object()
            .map(|o| o.keys().collect())
            .unwrap_or_default();
        assert_eq!(
            keys,
            ["type", "id", "aliases", "pos", "endLine", "level", "title", "children"]
        );
    }

    #[test]
    fn directive_fields_and_numbers() {
        let doc = parse("::claim{id=\"c\" confidence=0.8 n=3 flag}\nText.\n::\n");
        let d = &document_to_json(&doc)["children"][0];
        assert_eq!(d["name"], "claim");
        assert_eq!(
            d["attrs"],
            json!({"id": "c", "confidence": 0.8, "n": 3, "flag": true})
        );
        assert_eq!(d["body"], "Text.");
        assert_eq!(d["children"][0]["type"], "paragraph");
        assert_eq!(
            serde_json::to_string(&d["attrs"]["n"]).ok().as_deref(),
            Some("3")
        );
    }

    #[test]
    fn structural_equality_ignores_positions_only() {
        let a = parse("# A\n\n\n\ntext\n");
        let b = parse("# A\n\ntext\n");
        assert!(structurally_equal(&a, &b));
        let c = parse("# A\n\ntext!\n");
        assert!(!structurally_equal(&a, &c));
        let d = parse("# A {id=\"x\"}\n\ntext\n");
        assert!(!structurally_equal(&a, &d));
    }

    #[test]
    fn empty_document() {
        let v = document_to_json(&parse(""));
        assert_eq!(v["children"], json!([]));
        assert_eq!(v["meta"], json!({}));
        assert!(v.get("frontmatter").is_none());
    }
}

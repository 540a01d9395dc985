//! The AST as JSON, in the shape of the reference's `noma parse` /
//! `noma render --to json` (schemas/ast.schema.json): every node has `type`,
//! optional `id` and `aliases`, `pos {line, column}` and `endLine`, then its
//! kind fields. The document adds `meta`, `children` and — our addition —
//! a `frontmatter` node `{type, data, raw, pos, endLine}` when present.
//!
//! Recursion follows the tree; the parser caps directive nesting at 256 and
//! sections add at most six levels per container, so depth stays bounded.

use serde_json::{json, Map, Value};

use super::ast::{Align, Document, ListItem, Node, NodeKind, Span};

/// The whole document as JSON, with positions.
pub fn document_to_json(doc: &Document) -> Value {
    document_value(doc, true)
}

/// One node as JSON, with positions.
pub fn node_to_json(node: &Node) -> Value {
    node_value(node, true)
}

/// Annex C structural equality: the two documents serialise to the same JSON
/// once positions (`pos`, `endLine`) are left out. This is the reference
/// harness's `JSON.stringify` comparison minus positions, so the roundtrip
/// property survives the renderer's blank-line normalisation. Parser-internal
/// flags that are not part of the wire AST (fence colon counts, `closed`,
/// recovered issues) are not compared.
pub fn structurally_equal(a: &Document, b: &Document) -> bool {
    document_value(a, false) == document_value(b, false)
}

fn document_value(doc: &Document, positions: bool) -> Value {
    let mut m = Map::new();
    m.insert("type".into(), Value::from("document"));
    if positions && doc.end_line > 0 {
        m.insert("pos".into(), pos(1));
        m.insert("endLine".into(), Value::from(doc.end_line));
    }
    m.insert("meta".into(), Value::Object(doc.meta.clone()));
    if let Some(fm) = &doc.frontmatter {
        let mut f = Map::new();
        f.insert("type".into(), Value::from("frontmatter"));
        if positions {
            put_span(&mut f, fm.span);
        }
        f.insert("data".into(), Value::Object(doc.meta.clone()));
        f.insert("raw".into(), Value::from(fm.raw.as_str()));
        m.insert("frontmatter".into(), Value::Object(f));
    }
    m.insert("children".into(), children_value(&doc.children, positions));
    Value::Object(m)
}

fn children_value(children: &[Node], positions: bool) -> Value {
    Value::Array(children.iter().map(|c| node_value(c, positions)).collect())
}

fn pos(line: u32) -> Value {
    json!({ "line": line, "column": 1 })
}

fn put_span(m: &mut Map<String, Value>, span: Span) {
    m.insert("pos".into(), pos(span.start));
    m.insert("endLine".into(), Value::from(span.end));
}

fn node_value(node: &Node, positions: bool) -> Value {
    let mut m = Map::new();
    m.insert("type".into(), Value::from(node.type_name()));
    if let Some(id) = &node.id {
        m.insert("id".into(), Value::from(id.as_str()));
    }
    if !node.aliases.is_empty() {
        m.insert("aliases".into(), str_array(&node.aliases));
    }
    if positions {
        put_span(&mut m, node.span);
    }
    match &node.kind {
        NodeKind::Section {
            level,
            title,
            children,
            ..
        } => {
            m.insert("level".into(), Value::from(*level));
            m.insert("title".into(), Value::from(title.as_str()));
            m.insert("children".into(), children_value(children, positions));
        }
        NodeKind::Paragraph { content } | NodeKind::Quote { content } => {
            m.insert("content".into(), Value::from(content.as_str()));
        }
        NodeKind::Code { lang, content, .. } => {
            if let Some(lang) = lang {
                m.insert("lang".into(), Value::from(lang.as_str()));
            }
            m.insert("content".into(), Value::from(content.as_str()));
        }
        NodeKind::List { ordered, items } => {
            m.insert("ordered".into(), Value::from(*ordered));
            let items = items.iter().map(|it| item_value(it, positions)).collect();
            m.insert("items".into(), Value::Array(items));
        }
        NodeKind::ThematicBreak => {}
        NodeKind::Table {
            header,
            align,
            rows,
        } => {
            m.insert("header".into(), str_array(header));
            let align = align
                .iter()
                .map(|a| match a {
                    Some(Align::Left) => Value::from("left"),
                    Some(Align::Center) => Value::from("center"),
                    Some(Align::Right) => Value::from("right"),
                    None => Value::Null,
                })
                .collect();
            m.insert("align".into(), Value::Array(align));
            let rows = rows.iter().map(|r| str_array(r)).collect();
            m.insert("rows".into(), Value::Array(rows));
        }
        NodeKind::Directive {
            name,
            attrs,
            children,
            ..
        } => {
            m.insert("name".into(), Value::from(name.as_str()));
            m.insert("attrs".into(), attrs.to_json());
            if let Some(body) = node.body() {
                m.insert("body".into(), Value::from(body));
            }
            m.insert("children".into(), children_value(children, positions));
        }
    }
    Value::Object(m)
}

fn item_value(item: &ListItem, positions: bool) -> Value {
    let mut m = Map::new();
    m.insert("type".into(), Value::from("list_item"));
    if positions {
        put_span(&mut m, item.span);
    }
    m.insert("content".into(), Value::from(item.content.as_str()));
    Value::Object(m)
}

/// A JSON array of strings.
fn str_array(items: &[super::ast::Text]) -> Value {
    Value::Array(items.iter().map(|s| Value::from(s.as_str())).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::parse;

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

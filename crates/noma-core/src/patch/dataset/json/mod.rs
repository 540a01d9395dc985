//! The five `::dataset` ops on `format=json` bodies, edited in place like the
//! reference's source patcher. Three body shapes are understood:
//!
//! - record arrays (`[` / `{ "k": v, ... },` / `]`), one record per line or
//!   pretty-printed over several lines: a cell update rewrites only that
//!   property's value; row inserts copy the neighbouring record's layout;
//!   column edits re-serialize each record in its own layout;
//! - row arrays (`[` / `["a", 1],` / `]`, columns from the `columns`
//!   attribute): rows are rewritten as compact JSON lines;
//! - objects with a one-line `"columns": [...]` and a `"rows": [` block (or
//!   `"rows": []`): like row arrays, and column edits also rewrite the
//!   columns line.
//!
//! Values are written the way `JSON.stringify` writes them (compact, keys in
//! JavaScript property order, numbers in JavaScript notation). Anything else
//! (nested multi-line rows, rows on the `[` line, ...) is `invalid_content`.

mod js_value;
mod records;
mod row_arrays;

use serde_json::Value;

use super::Data;
use crate::doc::slug::is_js_space;
use crate::doc::Node;
use crate::patch::line_buf::LineBuf;
use crate::patch::op::Op;
use crate::patch::{fail, OpResult, PatchErrorCode as E};
use js_value::{js_keys, js_string};
use records::records;
use row_arrays::arrays;

/// Byte budget per body byte for scanning candidate record blocks and
/// property keys, so crafted bodies cannot make an edit quadratic.
const WORK_PER_BYTE: usize = 16;

#[derive(Clone, Copy, PartialEq)]
enum Shape {
    Records,
    Arrays,
    Object,
}

/// Applies `op` to the JSON dataset `node` in `lines`.
pub(super) fn apply(lines: &mut LineBuf<'_>, node: &Node, op: &Op) -> OpResult<()> {
    let start = node.span.start as usize;
    let body_end = (node.span.end as usize).saturating_sub(1).max(start);
    let body = (start..body_end)
        .map(|i| lines.get(i))
        .collect::<Vec<_>>()
        .join("\n");
    let (mut d, shape) = parse_body(&body, node)?;
    let scope = Scope {
        start,
        end: body_end,
        budget: body.len().saturating_mul(WORK_PER_BYTE).max(1 << 20),
    };
    match shape {
        Shape::Records => records(lines, scope, &mut d, op),
        Shape::Arrays | Shape::Object => arrays(lines, scope, &mut d, shape, op),
    }
}

/// The body's line range (`start..end`, 0-based) and the scan budget.
#[derive(Clone, Copy)]
struct Scope {
    start: usize,
    end: usize,
    budget: usize,
}

fn parse_body(body: &str, node: &Node) -> OpResult<(Data, Shape)> {
    let id = node.id.as_deref().unwrap_or("?");
    let Ok(parsed) = serde_json::from_str::<Value>(body) else {
        return fail(
            E::InvalidContent,
            format!("dataset \"{id}\" is not valid JSON"),
        );
    };
    match parsed {
        Value::Array(items) => match items.first() {
            Some(Value::Object(first)) => {
                let columns: Vec<String> = js_keys(first).into_iter().cloned().collect();
                let rows = items
                    .iter()
                    .map(|item| {
                        columns
                            .iter()
                            .map(|c| {
                                item.as_object()
                                    .and_then(|m| m.get(c))
                                    .cloned()
                                    .unwrap_or(Value::Null)
                            })
                            .collect()
                    })
                    .collect();
                Ok((Data::table(columns, rows), Shape::Records))
            }
            _ => {
                let rows = items
                    .into_iter()
                    .filter_map(|v| match v {
                        Value::Array(cells) => Some(cells),
                        _ => None,
                    })
                    .collect();
                Ok((Data::table(super::columns_attr(node), rows), Shape::Arrays))
            }
        },
        Value::Object(mut record) => {
            let Some(Value::Array(all)) = record.remove("rows") else {
                return fail(
                    E::InvalidContent,
                    format!("dataset \"{id}\" has no JSON rows array"),
                );
            };
            let columns = match record.get("columns") {
                Some(Value::Array(names)) => names.iter().map(js_string).collect(),
                _ => super::columns_attr(node),
            };
            let rows = all
                .into_iter()
                .filter_map(|v| match v {
                    Value::Array(cells) => Some(cells),
                    _ => None,
                })
                .collect();
            Ok((Data::table(columns, rows), Shape::Object))
        }
        _ => fail(
            E::InvalidContent,
            format!("dataset \"{id}\" has no JSON rows array"),
        ),
    }
}

fn skip_space(s: &str) -> &str {
    s.trim_start_matches(is_js_space)
}

fn trim_end(s: &str) -> &str {
    s.trim_end_matches(is_js_space)
}

/// `line` with a trailing comma (trailing whitespace replaced by it).
fn ensure_comma(line: &str) -> String {
    let t = trim_end(line);
    if t.ends_with(',') {
        line.to_string()
    } else {
        format!("{t},")
    }
}

/// `text` without a final comma and the whitespace after it.
fn remove_comma(text: &str) -> &str {
    let t = trim_end(text);
    t.strip_suffix(',').unwrap_or(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(src: &str, op: Value) -> String {
        crate::patch::apply_one(src, &op).unwrap()
    }

    #[test]
    fn single_line_records() {
        let src = "::dataset{id=\"s\" format=\"json\"}\n[\n  { \"v\": \"legal\", \"n\": 18 },\n  { \"v\": \"finance\", \"n\": 24 }\n]\n::\n";
        assert_eq!(
            run(src, json!({"op": "insert_dataset_row", "id": "s", "row": 1, "cells": ["energy", "21"]})),
            "::dataset{id=\"s\" format=\"json\"}\n[\n  { \"v\": \"legal\", \"n\": 18 },\n  { \"v\": \"energy\", \"n\": 21 },\n  { \"v\": \"finance\", \"n\": 24 }\n]\n::\n"
        );
        assert_eq!(
            run(
                src,
                json!({"op": "delete_dataset_row", "id": "s", "row": 1})
            ),
            "::dataset{id=\"s\" format=\"json\"}\n[\n  { \"v\": \"legal\", \"n\": 18 }\n]\n::\n"
        );
        assert_eq!(
            run(src, json!({"op": "update_dataset_cell", "id": "s", "row": 0, "column": 1, "value": "x y"})),
            "::dataset{id=\"s\" format=\"json\"}\n[\n  { \"v\": \"legal\", \"n\": \"x y\" },\n  { \"v\": \"finance\", \"n\": 24 }\n]\n::\n"
        );
        let err = crate::patch::apply_one(
            src,
            &json!({"op": "update_dataset_cell", "id": "s", "row": 0, "column": "n", "value": "18"}),
        )
        .unwrap_err();
        assert_eq!(err.code, E::InvalidContent);
    }

    #[test]
    fn object_rows_delete_column_and_crlf() {
        let src = "::dataset{id=\"s\" format=\"json\"}\r\n{\r\n  \"columns\": [\"v\", \"o\", \"n\"],\r\n  \"rows\": [\r\n    [\"legal\", \"R\", 18],\r\n    [\"finance\", \"F\", 24]\r\n  ]\r\n}\r\n::\r\n";
        assert_eq!(
            run(src, json!({"op": "delete_dataset_column", "id": "s", "column": "o"})),
            "::dataset{id=\"s\" format=\"json\"}\r\n{\r\n  \"columns\": [\"v\",\"n\"],\r\n  \"rows\": [\r\n    [\"legal\",18],\r\n    [\"finance\",24]\r\n  ]\r\n}\r\n::\r\n"
        );
    }

    #[test]
    fn commas() {
        assert_eq!(ensure_comma("  [1] "), "  [1],");
        assert_eq!(ensure_comma("  [1], "), "  [1], ");
        assert_eq!(remove_comma("  [1],  "), "  [1]");
        assert_eq!(remove_comma("  [1]"), "  [1]");
    }
}

//! The patch-op schema as the MCP tools show it: the catalog of
//! [`noma_core::transcript::schema::patch_op`] (op names, required fields,
//! field types) with a one-line description on every op and every field,
//! written compactly enough that `tools/list` stays small.
//!
//! Every field is declared once with one line saying what it means (in
//! the ops where the meaning differs, the line names them); `op` lists the
//! 25 variants, each a name and a line naming its required fields.
//! Fields outside the catalog are refused by the schema
//! (`additionalProperties: false`) as by the engine. Per-variant
//! `required` lists would cost 1.2 KB of `tools/list`, in every agent's
//! context; a missing field is refused by the engine with a message
//! naming it. The descriptions paraphrase §3.1 (core ops) and §1.5
//! (extended ops).

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

/// One line per op: what it does, naming each of its required fields in
/// backticks (the unit test holds every line to that).
const OP_DOCS: &[(&str, &str)] = &[
    (
        "replace_block",
        "Replace directive `id` whole by `content`.",
    ),
    (
        "replace_body",
        "Replace `id`'s body by `content`, keeping its fence.",
    ),
    (
        "update_heading",
        "Retitle section `id` to `title`; its id stays.",
    ),
    (
        "add_comment",
        "Add ::comment `id` with `content` after `target`.",
    ),
    ("resolve_comment", "Mark ::comment `id` resolved."),
    (
        "add_footnote",
        "Add ::footnote `id` with `content` after `target`.",
    ),
    (
        "add_endnote",
        "Add ::endnote `id` with `content` after `target`.",
    ),
    (
        "add_change_request",
        "Add ::change_request `id` after `target`, proposing an `action`.",
    ),
    (
        "update_table_cell",
        "Set cell `row`, `column` of table `id` to `value`.",
    ),
    (
        "update_table_header_cell",
        "Set header `column` of table `id` to `value`.",
    ),
    (
        "insert_table_row",
        "Insert `cells` as body `row` of table `id`.",
    ),
    ("delete_table_row", "Delete body `row` of table `id`."),
    (
        "insert_table_column",
        "Insert `cells` as `column` of table `id`.",
    ),
    ("delete_table_column", "Delete `column` of table `id`."),
    (
        "update_dataset_cell",
        "Set cell `row`, `column` of dataset `id` to `value`.",
    ),
    (
        "insert_dataset_row",
        "Insert `cells` as `row` of dataset `id`.",
    ),
    ("delete_dataset_row", "Delete `row` of dataset `id`."),
    (
        "insert_dataset_column",
        "Insert `header` and `cells` as `column` of dataset `id`.",
    ),
    ("delete_dataset_column", "Delete `column` of dataset `id`."),
    ("move_block", "Move directive `id` under `parent`."),
    ("add_block", "Add `content` as a child of `parent`."),
    ("delete_block", "Delete block `id` and its children."),
    (
        "update_attribute",
        "Set attribute `key` of `id` to `value`.",
    ),
    ("remove_attribute", "Remove attribute `key` from `id`."),
    ("rename_id", "Rename `from` to `to`; references follow."),
];

/// One line per field: what it means.
const FIELD_DOCS: &[(&str, &str)] = &[
    (
        "id",
        "Block id (read_doc); for add_comment, add_footnote, add_endnote, add_change_request \
         the new one's.",
    ),
    (
        "content",
        "A directive's source (replace_block, add_block), new body (replace_body), note text \
         (others).",
    ),
    ("target", "Id of the block to follow."),
    ("parent", "Id of the new parent."),
    (
        "position",
        "0-based index among its children; default last.",
    ),
    ("title", "New heading text."),
    ("key", "Attribute name (never id)."),
    (
        "value",
        "The attribute value (update_attribute), cell text (others).",
    ),
    (
        "from",
        "The current id (rename_id), old text (add_change_request).",
    ),
    (
        "to",
        "The new id (rename_id), new text (add_change_request).",
    ),
    ("row", "0-based body row."),
    (
        "column",
        "0-based column, or header label (not for inserts).",
    ),
    ("cells", "The new row's or column's cells."),
    ("header", "The new column's header."),
    ("action", "The proposed edit."),
    ("text", "Revision text, instead of from/to."),
    ("author", "Author's name."),
    ("initials", "Author's initials."),
    ("date", "Date (ISO 8601)."),
    ("reply_to", "Id of the comment answered."),
    ("resolved_by", "Who resolved it."),
    ("resolved_at", "When it was resolved."),
    ("label", "The note's marker label."),
];

fn doc(table: &[(&str, &'static str)], key: &str) -> Option<&'static str> {
    table.iter().find(|(k, _)| *k == key).map(|(_, d)| *d)
}

/// The one schema that accepts every catalog schema of a field: the
/// schema itself when all ops agree, else the widest (a field that is an
/// id in one op and free text in another is a string).
fn widest(schemas: &[Value]) -> Value {
    let first = &schemas[0];
    if schemas.iter().all(|s| s == first) {
        return first.clone();
    }
    let has = |needle: &str| schemas.iter().any(|s| s.to_string().contains(needle));
    if has("attrValue") {
        json!({ "$ref": "#/$defs/attrValue" })
    } else if has("oneOf") {
        // A column: an index everywhere, a header label where allowed.
        schemas
            .iter()
            .find(|s| s.get("oneOf").is_some())
            .cloned()
            .unwrap_or_default()
    } else {
        json!({ "type": "string" })
    }
}

/// The op schema for a tool's input, and the definitions it refers to
/// (`#/$defs/...`), to be placed in that tool schema's `$defs`.
pub(crate) fn op_schema() -> (Value, Map<String, Value>) {
    let catalog = noma_core::transcript::schema::patch_op();
    let base_defs = catalog["$defs"].as_object().cloned().unwrap_or_default();
    let mut defs = Map::new();
    for k in ["id", "attrValue"] {
        if let Some(v) = base_defs.get(k) {
            defs.insert(k.into(), v.clone());
        }
    }
    // Each field's schemas across the ops, in first-seen order.
    let mut order: Vec<String> = Vec::new();
    let mut seen: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    let mut variants = Vec::new();
    for variant in catalog["oneOf"].as_array().into_iter().flatten() {
        let name = variant["properties"]["op"]["const"]
            .as_str()
            .unwrap_or_default();
        for (field, schema) in variant["properties"].as_object().into_iter().flatten() {
            if field == "op" || field == "baseHash" {
                continue;
            }
            if !seen.contains_key(field) {
                order.push(field.clone());
            }
            seen.entry(field.clone()).or_default().push(schema.clone());
        }
        variants.push(json!({
            "const": name,
            "description": doc(OP_DOCS, name).unwrap_or(""),
        }));
    }
    let mut props = Map::new();
    props.insert(
        "op".into(),
        json!({
            "description": "The op; required fields are in `backticks`.",
            "oneOf": variants,
        }),
    );
    for field in &order {
        let mut schema = widest(&seen[field]);
        // Emptiness is the engine's to refuse (invalid_content names the
        // field); in tools/list the bound costs more than it tells.
        if let Some(o) = schema.as_object_mut() {
            o.remove("minLength");
        }
        schema["description"] = json!(doc(FIELD_DOCS, field).unwrap_or(""));
        props.insert(field.clone(), schema);
    }
    let mut base_hash = base_defs.get("baseHash").cloned().unwrap_or(json!({}));
    base_hash["description"] =
        json!("The target's read_doc `hash`: refused (sha_mismatch) if it changed.");
    props.insert("baseHash".into(), base_hash);
    let schema = json!({
        "type": "object",
        "required": ["op"],
        "additionalProperties": false,
        "properties": props,
    });
    (schema, defs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_op_and_every_field_has_a_one_line_description() {
        let (schema, defs) = op_schema();
        let props = schema["properties"].as_object().unwrap();
        let variants = props["op"]["oneOf"].as_array().unwrap();
        let catalog = noma_core::transcript::schema::patch_op();
        let full = catalog["oneOf"].as_array().unwrap();
        assert_eq!(variants.len(), 25);
        for (variant, full) in variants.iter().zip(full) {
            let name = variant["const"].as_str().unwrap();
            assert_eq!(full["properties"]["op"]["const"], name);
            let d = variant["description"].as_str().unwrap();
            assert!(d.len() > 15 && !d.contains('\n'), "{name}: {d:?}");
            // The line names every field the catalog requires of the op.
            for f in full["required"].as_array().unwrap() {
                let f = f.as_str().unwrap();
                if f != "op" {
                    assert!(d.contains(&format!("`{f}`")), "{name}: {f} not in {d:?}");
                }
            }
            // Every field of the op is declared, and described.
            for field in full["properties"].as_object().unwrap().keys() {
                let d = props
                    .get(field)
                    .and_then(|p| p["description"].as_str())
                    .unwrap_or_default();
                assert!(d.len() > 8 && !d.contains('\n'), "{name}.{field}: {d:?}");
            }
        }
        // No field outside the catalog, and no definition unused.
        let catalog_fields: std::collections::BTreeSet<&String> = full
            .iter()
            .flat_map(|v| v["properties"].as_object().unwrap().keys())
            .collect();
        for field in props.keys() {
            assert!(catalog_fields.contains(field), "{field}");
        }
        let text = schema.to_string();
        for k in defs.keys() {
            assert!(text.contains(&format!("\"#/$defs/{k}\"")), "unused def {k}");
        }
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(schema["required"], json!(["op"]));
    }

    #[test]
    fn a_field_typed_differently_by_two_ops_takes_the_wider_type() {
        let (schema, _) = op_schema();
        let p = &schema["properties"];
        // An attribute value is a string, number or boolean; a cell a string.
        assert_eq!(p["value"]["$ref"], "#/$defs/attrValue");
        // rename_id's ids and add_change_request's texts.
        assert_eq!(p["from"]["type"], "string");
        // A column to delete may be a header label; one to insert is an index.
        assert!(p["column"]["oneOf"].is_array());
        assert_eq!(p["id"]["$ref"], "#/$defs/id");
    }
}

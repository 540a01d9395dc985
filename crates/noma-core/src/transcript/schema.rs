//! JSON Schemas of the wire shapes (`noma schema`). The transcript record
//! and capability descriptor schemas are derived from the Rust types that
//! read them; the patch-op schema is built from a table of the 25 ops'
//! fields (the ops themselves are plain JSON on the wire).

use serde_json::{json, Map, Value};

use super::capability_descriptor::CapabilityFile;
use super::Record;

/// The kinds of op fields.
#[derive(Clone, Copy)]
enum F {
    /// A canonical id.
    Id,
    /// Any string.
    Str,
    /// A non-empty string.
    NonEmpty,
    /// A non-negative integer.
    Index,
    /// A column index or header name.
    Column,
    /// An array of cell strings.
    Cells,
    /// An attribute value.
    Attr,
    /// add_change_request action.
    Action,
}

/// Op name, required fields, optional fields (every op also takes `baseHash`).
type OpRow = (
    &'static str,
    &'static [(&'static str, F)],
    &'static [(&'static str, F)],
);

const OPS: &[OpRow] = &[
    (
        "replace_block",
        &[("id", F::Id), ("content", F::NonEmpty)],
        &[],
    ),
    ("replace_body", &[("id", F::Id), ("content", F::Str)], &[]),
    (
        "update_heading",
        &[("id", F::Id), ("title", F::NonEmpty)],
        &[],
    ),
    (
        "add_comment",
        &[("id", F::Id), ("target", F::Id), ("content", F::NonEmpty)],
        &[
            ("author", F::NonEmpty),
            ("initials", F::NonEmpty),
            ("date", F::NonEmpty),
            ("reply_to", F::Id),
        ],
    ),
    (
        "resolve_comment",
        &[("id", F::Id)],
        &[("resolved_by", F::NonEmpty), ("resolved_at", F::NonEmpty)],
    ),
    (
        "add_footnote",
        &[("id", F::Id), ("target", F::Id), ("content", F::NonEmpty)],
        &[("label", F::NonEmpty)],
    ),
    (
        "add_endnote",
        &[("id", F::Id), ("target", F::Id), ("content", F::NonEmpty)],
        &[("label", F::NonEmpty)],
    ),
    (
        "add_change_request",
        &[("id", F::Id), ("target", F::Id), ("action", F::Action)],
        &[
            ("from", F::Str),
            ("to", F::Str),
            ("text", F::Str),
            ("content", F::Str),
            ("author", F::NonEmpty),
            ("date", F::NonEmpty),
        ],
    ),
    (
        "update_table_cell",
        &[
            ("id", F::Id),
            ("row", F::Index),
            ("column", F::Column),
            ("value", F::Str),
        ],
        &[],
    ),
    (
        "update_table_header_cell",
        &[("id", F::Id), ("column", F::Column), ("value", F::Str)],
        &[],
    ),
    (
        "insert_table_row",
        &[("id", F::Id), ("row", F::Index), ("cells", F::Cells)],
        &[],
    ),
    ("delete_table_row", &[("id", F::Id), ("row", F::Index)], &[]),
    (
        "insert_table_column",
        &[("id", F::Id), ("column", F::Index), ("cells", F::Cells)],
        &[("header", F::Str)],
    ),
    (
        "delete_table_column",
        &[("id", F::Id), ("column", F::Column)],
        &[],
    ),
    (
        "update_dataset_cell",
        &[
            ("id", F::Id),
            ("row", F::Index),
            ("column", F::Column),
            ("value", F::Str),
        ],
        &[],
    ),
    (
        "insert_dataset_row",
        &[("id", F::Id), ("row", F::Index), ("cells", F::Cells)],
        &[],
    ),
    (
        "delete_dataset_row",
        &[("id", F::Id), ("row", F::Index)],
        &[],
    ),
    (
        "insert_dataset_column",
        &[
            ("id", F::Id),
            ("column", F::Index),
            ("header", F::Str),
            ("cells", F::Cells),
        ],
        &[],
    ),
    (
        "delete_dataset_column",
        &[("id", F::Id), ("column", F::Column)],
        &[],
    ),
    (
        "move_block",
        &[("id", F::Id), ("parent", F::Id)],
        &[("position", F::Index)],
    ),
    (
        "add_block",
        &[("parent", F::Id), ("content", F::NonEmpty)],
        &[("position", F::Index)],
    ),
    ("delete_block", &[("id", F::Id)], &[]),
    (
        "update_attribute",
        &[("id", F::Id), ("key", F::NonEmpty), ("value", F::Attr)],
        &[],
    ),
    (
        "remove_attribute",
        &[("id", F::Id), ("key", F::NonEmpty)],
        &[],
    ),
    ("rename_id", &[("from", F::Id), ("to", F::Id)], &[]),
];

fn field_schema(f: F) -> Value {
    match f {
        F::Id => json!({ "$ref": "#/$defs/id" }),
        F::Str => json!({ "type": "string" }),
        F::NonEmpty => json!({ "type": "string", "minLength": 1 }),
        F::Index => json!({ "type": "integer", "minimum": 0 }),
        F::Column => json!({ "oneOf": [
            { "type": "integer", "minimum": 0 },
            { "type": "string", "minLength": 1 }
        ] }),
        F::Cells => json!({ "type": "array", "items": { "type": "string" } }),
        F::Attr => json!({ "$ref": "#/$defs/attrValue" }),
        F::Action => json!({ "enum": ["insert", "delete", "replace"] }),
    }
}

/// The schema of one patch op (any of the 25).
pub fn patch_op() -> Value {
    let variants: Vec<Value> = OPS
        .iter()
        .map(|(name, required, optional)| {
            let mut props = Map::new();
            props.insert("op".into(), json!({ "const": name }));
            let mut req = vec![json!("op")];
            for (field, kind) in required.iter() {
                props.insert((*field).into(), field_schema(*kind));
                req.push(json!(field));
            }
            for (field, kind) in optional.iter() {
                props.insert((*field).into(), field_schema(*kind));
            }
            props.insert("baseHash".into(), json!({ "$ref": "#/$defs/baseHash" }));
            json!({
                "type": "object",
                "additionalProperties": false,
                "required": req,
                "properties": props,
            })
        })
        .collect();
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Noma Patch Operation",
        "description": "One source-preserving patch op of the v1.0 catalog (§3.1 core + §1.5 extended).",
        "oneOf": variants,
        "$defs": {
            "id": { "type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_./:-]*$" },
            "attrValue": { "type": ["string", "number", "boolean"] },
            "baseHash": {
                "type": "string",
                "pattern": "^[0-9a-fA-F]{8,64}$",
                "description": "sha256 hex (full or a prefix of at least 8) of the target block's source slice; the op is rejected with sha_mismatch when the block changed."
            }
        }
    })
}

/// The op names the patch-op schema covers, in catalog order.
pub fn op_names() -> impl Iterator<Item = &'static str> {
    OPS.iter().map(|(n, _, _)| *n)
}

/// The schema of a transcript record.
pub fn transcript() -> Value {
    let mut v = serde_json::to_value(schemars::schema_for!(Record)).unwrap_or(Value::Null);
    if let Some(obj) = v.as_object_mut() {
        obj.insert(
            "title".into(),
            json!("Noma Patch Transcript Record (protocol_version 1.0)"),
        );
        // Tighten what the Rust types cannot say.
        if let Some(props) = obj.get_mut("properties").and_then(Value::as_object_mut) {
            props.insert("protocol_version".into(), json!({ "const": "1.0" }));
            let sha = json!({ "type": "string", "pattern": "^[a-f0-9]{64}$" });
            for k in ["pre_sha256", "post_sha256"] {
                props.insert(k.into(), sha.clone());
            }
            for k in ["pre_sha", "post_sha"] {
                props.insert(
                    k.into(),
                    json!({ "type": "string", "pattern": "^[a-f0-9]{8}$" }),
                );
            }
            for k in ["base_sha256", "prev_entry_sha256"] {
                props.insert(
                    k.into(),
                    json!({ "type": ["string", "null"], "pattern": "^[a-f0-9]{64}$" }),
                );
            }
            props.insert(
                "op_id".into(),
                json!({ "type": "string", "format": "uuid" }),
            );
            props.insert(
                "ts".into(),
                json!({ "type": "string", "format": "date-time" }),
            );
            props.insert("signature".into(), json!({ "type": "null" }));
            props.insert("op".into(), patch_op_ref());
        }
        // Every diagnostic a record carries has its `phase` (§4.2); the
        // type leaves it optional because `noma check` output has none.
        let diagnostic = obj.get_mut("$defs").and_then(|d| d.get_mut("Diagnostic"));
        if let Some(d) = diagnostic.and_then(Value::as_object_mut) {
            if let Some(props) = d.get_mut("properties").and_then(Value::as_object_mut) {
                props.insert("phase".into(), json!({ "$ref": "#/$defs/Phase" }));
            }
            if let Some(req) = d.get_mut("required").and_then(Value::as_array_mut) {
                req.push(json!("phase"));
            }
        }
    }
    v
}

fn patch_op_ref() -> Value {
    json!({ "type": "object", "required": ["op"], "properties": { "op": { "enum": op_names().collect::<Vec<_>>() } } })
}

/// The schema of a capability descriptor sidecar (after YAML → JSON).
pub fn capability() -> Value {
    serde_json::to_value(schemars::schema_for!(CapabilityFile)).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A schema with its `$ref`s inlined, descriptions dropped, a `oneOf`
    /// of string constants written as the string `enum` it means, and the order
    /// of `enum` and `required` ignored: what a validator accepts.
    fn meaning(v: &Value, defs: &Value) -> Value {
        match v {
            Value::Object(o) => {
                if let Some(r) = o.get("$ref").and_then(Value::as_str) {
                    let name = r.rsplit('/').next().unwrap_or("");
                    return meaning(&defs[name], defs);
                }
                let consts: Option<Vec<Value>> = o
                    .get("oneOf")
                    .and_then(Value::as_array)
                    .and_then(|a| a.iter().map(|c| c.get("const").cloned()).collect());
                let mut out = serde_json::Map::new();
                for (k, x) in o {
                    match k.as_str() {
                        "description" | "$defs" | "$schema" | "title" => {}
                        "oneOf" if consts.is_some() => {
                            let consts = consts.clone().unwrap_or_default();
                            if consts.iter().all(Value::is_string) {
                                out.insert("type".into(), json!("string"));
                            }
                            out.insert("enum".into(), sorted(consts));
                        }
                        "enum" | "required" => {
                            out.insert(
                                k.clone(),
                                sorted(x.as_array().cloned().unwrap_or_default()),
                            );
                        }
                        _ => {
                            out.insert(k.clone(), meaning(x, defs));
                        }
                    }
                }
                Value::Object(out)
            }
            Value::Array(a) => Value::Array(a.iter().map(|x| meaning(x, defs)).collect()),
            x => x.clone(),
        }
    }

    fn sorted(mut v: Vec<Value>) -> Value {
        v.sort_by_key(|x| x.to_string());
        Value::Array(v)
    }

    #[test]
    fn the_transcript_schema_derived_from_the_real_types_means_what_the_mirrors_did() {
        // `noma schema transcript` as written from the hand-kept mirror
        // types before the schema was derived from `Diagnostic`, `Summary`,
        // `Severity`, `Phase` and `Pos` themselves.
        let before: Value =
            serde_json::from_str(include_str!("transcript.schema.before.json")).unwrap();
        let now = transcript();
        assert_eq!(
            meaning(&now, &now["$defs"]),
            meaning(&before, &before["$defs"])
        );
        assert!(now["$defs"].get("DiagnosticSchema").is_none());
        assert!(now["$defs"]["Diagnostic"]["properties"]
            .get("range")
            .is_none());
    }

    #[test]
    fn schemas_cover_the_catalog_and_required_fields() {
        let p = patch_op();
        assert_eq!(p["oneOf"].as_array().unwrap().len(), 25);
        let names: Vec<_> = op_names().collect();
        for n in crate::transcript::capability_descriptor::OpName::ALL {
            assert!(names.contains(&n.as_str()), "{}", n.as_str());
        }
        let t = transcript();
        let req: Vec<&str> = t["required"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        for f in super::super::REQUIRED_FIELDS {
            assert!(req.contains(&f), "{f} not required in {req:?}");
        }
        let c = capability();
        assert!(c.to_string().contains("nomaAgent"));
        assert!(c.to_string().contains("rename_id"));
    }
}

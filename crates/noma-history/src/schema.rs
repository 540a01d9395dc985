//! JSON Schemas of `noma log --format json` and `noma blame --format json`
//! (printed by `noma schema log|blame`; MCP `block_history` reuses
//! [`change`]).

use serde_json::{json, Value};

fn opt_string() -> Value {
    json!({"type": ["string", "null"]})
}

/// One [`super::BlockChange`].
pub(crate) fn change() -> Value {
    let touch = json!({
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "id_then": {"type": "string"},
            "change": {"enum": ["added", "changed", "moved", "renamed", "removed"]},
            "renamed_from": {"type": "string"}
        },
        "required": ["id", "change"],
        "additionalProperties": false
    });
    json!({
        "type": "object",
        "properties": {
            "line": {"type": "integer", "minimum": 1},
            "op_id": {"type": "string"},
            "op": {"type": "string"},
            "actor": {"type": "string"},
            "reason": opt_string(),
            "ts": {"type": "string"},
            "parent_op_id": opt_string(),
            "signed_by": opt_string(),
            "approved_by": opt_string(),
            "needs_approval": {"type": "boolean"},
            "commit": opt_string(),
            "blocks": {"type": "array", "items": touch}
        },
        "required": ["line", "op_id", "op", "actor", "reason", "ts", "parent_op_id",
                     "signed_by", "approved_by", "needs_approval", "commit", "blocks"],
        "additionalProperties": false
    })
}

/// `noma log --format json`.
pub fn log() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "noma log",
        "type": "object",
        "properties": {
            "document": {"type": "string"},
            "block": opt_string(),
            "changes": {"type": "array", "items": change()}
        },
        "required": ["document", "block", "changes"],
        "additionalProperties": false
    })
}

/// `noma blame --format json`.
pub fn blame() -> Value {
    let line = json!({
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "lines": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2},
            "last": {"anyOf": [change(), {"type": "null"}]}
        },
        "required": ["id", "lines", "last"],
        "additionalProperties": false
    });
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "noma blame",
        "type": "object",
        "properties": {
            "document": {"type": "string"},
            "blocks": {"type": "array", "items": line}
        },
        "required": ["document", "blocks"],
        "additionalProperties": false
    })
}

//! The tools' output schemas: what each tool's `structuredContent` holds,
//! typed member by member, and the failure body every tool shares
//! (`{ok: false, error, code?, op_index?, line?}`; every result carries
//! `structuredContent`, the failures too).
//!
//! Each schema types every top-level member an answer can carry and the
//! members of the objects an agent reads (blocks, changed blocks,
//! provenance statuses); a transcript record is the protocol's §5.2
//! record, named by its required members. The schemas stay open (no
//! `additionalProperties: false`) so that a newer server's extra member
//! does not break an older client; the Python SDK test closes them to
//! check that they name everything the tools send. No descriptions:
//! `tools/list` is in every agent's context and the tool descriptions say
//! what the members mean.

use serde_json::{json, Map, Value};

const S: &str = "string";
const I: &str = "integer";
const B: &str = "boolean";

/// `{"type": t}`.
fn t(ty: &str) -> Value {
    json!({ "type": ty })
}

/// An array of `items`.
fn arr(items: Value) -> Value {
    json!({"type": "array", "items": items})
}

/// An object with typed `props` (pairs of name and schema).
fn obj(props: &[(&str, Value)]) -> Value {
    let props: Map<String, Value> = props
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    json!({"type": "object", "properties": props})
}

/// `[start, end]` line numbers.
fn lines() -> Value {
    json!({"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2})
}

fn nullable(ty: &[&str]) -> Value {
    json!({ "type": ty })
}

/// A §4.2 diagnostic.
fn diagnostic() -> Value {
    let mut d = obj(&[
        ("severity", json!({"enum": ["info", "warning", "error"]})),
        ("code", t(S)),
        ("message", t(S)),
        ("pos", t("object")),
        ("nodeId", t(S)),
        ("phase", t(S)),
    ]);
    d["required"] = json!(["severity", "code", "message"]);
    d
}

/// A §5.2 transcript record, by its required members.
fn record() -> Value {
    json!({"type": "object", "required": ["op_id", "ts", "actor", "op", "patch_result", "pre_sha256", "post_sha256"]})
}

/// The answer's `props`, `required` of a success, and the failure body
/// (`op_index`, `line` and `notices` are declared by the tools that send
/// them).
fn answer(mut props: Vec<(&str, Value)>, required: &[&str]) -> Value {
    props.extend([("ok", t(B)), ("error", t(S)), ("code", t(S))]);
    let mut schema = obj(&props);
    schema["anyOf"] = json!([{"required": required}, {"required": ["error"]}]);
    schema
}

pub(super) fn list_ids() -> Value {
    let aliases = json!({"type": "object", "additionalProperties": {"type": "string"}});
    answer(
        vec![("ids", arr(t(S))), ("aliases", aliases)],
        &["ids", "aliases"],
    )
}

/// `noma_git::history::schema::change`, typed member by member as the
/// other answers are (without its `required` lists: bytes of every
/// agent's context).
pub(super) fn block_history() -> Value {
    let opt = || nullable(&[S, "null"]);
    let touch = obj(&[
        ("id", t(S)),
        ("id_then", t(S)),
        ("change", t(S)),
        ("renamed_from", t(S)),
    ]);
    let change = obj(&[
        ("line", t(I)),
        ("op_id", t(S)),
        ("op", t(S)),
        ("actor", t(S)),
        ("reason", opt()),
        ("ts", t(S)),
        ("parent_op_id", opt()),
        ("signed_by", opt()),
        ("approved_by", opt()),
        ("needs_approval", t(B)),
        ("commit", opt()),
        ("blocks", arr(touch)),
    ]);
    answer(
        vec![("id", t(S)), ("changes", arr(change)), ("truncated", t(B))],
        &["id", "changes", "truncated"],
    )
}

pub(super) fn validate_doc() -> Value {
    answer(
        vec![("diagnostics", arr(diagnostic()))],
        &["ok", "diagnostics"],
    )
}

pub(super) fn patch(list: bool) -> Value {
    let (entry, schema) = if list {
        ("transcript_entries", arr(record()))
    } else {
        ("transcript_entry", record())
    };
    answer(
        vec![
            ("post_validation", json!({"enum": ["ok", "warn", "error"]})),
            (entry, schema),
            ("diagnostics", arr(diagnostic())),
            ("op_index", t(I)),
        ],
        &["ok", "post_validation", entry, "diagnostics"],
    )
}

/// A record's provenance status (who signed and approved it).
fn provenance() -> Value {
    let status = obj(&[
        ("line", t(I)),
        ("op_id", t(S)),
        ("actor", t(S)),
        ("signed_by", t(S)),
        ("needs_approval", t(B)),
        ("approved_by", t(S)),
        ("problems", arr(t("object"))),
    ]);
    obj(&[("records", arr(status)), ("sidecar", t(S)), ("error", t(S))])
}

pub(super) fn transcript_read() -> Value {
    answer(
        vec![
            ("transcript", t(S)),
            ("exists", t(B)),
            ("total", t(I)),
            ("records", arr(record())),
            ("truncated", t(B)),
            ("torn_tail", t(B)),
            ("provenance", provenance()),
            ("line", t(I)),
        ],
        &["transcript", "exists", "records"],
    )
}

pub(super) fn describe_capabilities() -> Value {
    let grants = json!({"type": "object", "additionalProperties": arr(t(S))});
    let ext = obj(&[
        ("op", t(S)),
        ("fields", t("object")),
        ("accepted_in_patch_requests", t(B)),
        ("written_by", t(S)),
        ("allowed_by_policy", nullable(&[B, "null"])),
        ("policy_error", nullable(&[S, "null"])),
    ]);
    answer(
        vec![
            ("extension_ops", arr(ext)),
            ("sidecar", t(S)),
            ("exists", t(B)),
            ("descriptor", nullable(&["object", "null"])),
            ("grants", grants),
            ("rename_ids", t(B)),
            ("enforcement", t(S)),
            ("note", t(S)),
        ],
        &["sidecar", "exists", "grants"],
    )
}

/// A block of `get_changed_blocks`.
fn block_change() -> Value {
    obj(&[
        ("id", t(S)),
        ("kind", t(S)),
        ("name", t(S)),
        (
            "change",
            json!({"enum": ["added", "modified", "removed", "renamed", "moved"]}),
        ),
        ("modified", t(B)),
        ("lines", lines()),
        ("source", t(S)),
        ("sha256", t(S)),
        ("old_sha256", t(S)),
        ("old_id", t(S)),
        ("old_lines", lines()),
        ("old_source", t(S)),
        ("parent", t(S)),
        ("old_parent", t(S)),
    ])
}

pub(super) fn changed(blocks: bool) -> Value {
    let counts = [
        "added", "modified", "removed", "renamed", "moved", "skipped",
    ];
    let counts: Vec<(&str, Value)> = counts.iter().map(|c| (*c, t(I))).collect();
    let mut doc = vec![
        ("path", t(S)),
        ("old_path", t(S)),
        ("change", t(S)),
        ("counts", obj(&counts)),
        ("outside_blocks_changed", t(B)),
        ("error", t(S)),
    ];
    let mut props = vec![("base", t(S)), ("merge_base", t(S)), ("notices", arr(t(S)))];
    if blocks {
        doc.extend([
            ("sha256", t(S)),
            ("old_sha256", t(S)),
            ("blocks", arr(block_change())),
            ("skipped", arr(t(S))),
        ]);
        props.push(("excluded", arr(t(S))));
    }
    props.push(("docs", arr(obj(&doc))));
    let required: &[&str] = if blocks {
        &["base", "merge_base", "docs", "excluded"]
    } else {
        &["base", "merge_base", "docs"]
    };
    answer(props, required)
}

pub(super) fn mark_reconciled() -> Value {
    answer(
        vec![("updated", t(I)), ("docs", t(I)), ("notices", arr(t(S)))],
        &["updated", "docs"],
    )
}

pub(super) fn clear_cache() -> Value {
    answer(vec![("cleared", t(B))], &["cleared"])
}

pub(super) fn snapshot_state() -> Value {
    answer(
        vec![
            ("state_path", t(S)),
            ("docs", t(I)),
            ("blocks", t(I)),
            ("git_hash", t(S)),
            ("notices", arr(t(S))),
        ],
        &["state_path", "docs", "blocks", "git_hash"],
    )
}

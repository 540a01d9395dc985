//! The tools: Annex B's four (`read_doc`, `list_ids`, `validate_doc`,
//! `patch_block`, shapes as §B.3–§B.7) and the v1.1 directions of §B.8
//! (`patch_block_list`, `transcript_read`, `describe_capabilities`),
//! `block_history` ([`super::history_tool`]), plus the changed-block tools
//! of [`super::changes`].
//!
//! Every `file` argument goes through [`super::Context::doc_path`]: containment in
//! the repository root ([`super::paths`]) and the book-manifest refusal
//! (§B.7: `isError: true`).
//!
//! This module is the list: each tool's name, description, title, hints
//! and output schema (`read_doc` answers in JSON text only, without one). The tools live in [`super::read_tools`],
//! [`super::patch_tools`], [`super::transcript_tools`] and
//! [`super::changes`]. Adding a tool = an args struct deriving
//! `Deserialize + JsonSchema`, a function `fn(&Context, Args) ->
//! ToolResult` (or, for a body it writes as text, `Result<JsonText,
//! ToolError>`), and one [`tool`] line in [`registry`] (see
//! [`super::registry`] for how its outcomes become MCP results).

use super::changes as ch;
use super::history_tool::{block_history, BLOCK_HISTORY};
use super::out_schema as out;
use super::patch_tools::{patch_block, patch_block_list};
use super::read_tools::{list_ids, read_doc, validate_doc};
use super::registry::{tool, Registry};
use super::transcript_tools::{describe_capabilities, transcript_read};
use rmcp::model::ToolAnnotations;

/// Every tool this server offers, with its title, behaviour hints and
/// output schema. Read-only tools only read the work tree (the block cache
/// they warm is content-addressed, never a visible change); the patch tools
/// rewrite blocks in place; `clear_cache` deletes the reconciliation marks.
pub(crate) fn registry() -> Registry {
    changed_tools(document_tools(Registry::new()))
}

/// Hints of a tool that only reads.
fn read_only() -> ToolAnnotations {
    ToolAnnotations::new().read_only(true).open_world(false)
}

/// Hints of a tool that writes. readOnlyHint and idempotentHint default
/// to false: only `true` is sent.
fn writes(destructive: bool, idempotent: bool) -> ToolAnnotations {
    let hints = ToolAnnotations::new()
        .destructive(destructive)
        .open_world(false);
    if idempotent {
        hints.idempotent(true)
    } else {
        hints
    }
}

/// The Annex B tools and the §B.8 directions, on one document each.
fn document_tools(registry: Registry) -> Registry {
    registry
        .with(
            tool("read_doc", READ_DOC, read_doc)
                .titled("Read document", read_only())
                .text_only(),
        )
        .with(
            tool("list_ids", LIST_IDS, list_ids)
                .titled("List ids", read_only())
                .output(out::list_ids()),
        )
        .with(
            tool("validate_doc", VALIDATE_DOC, validate_doc)
                .titled("Validate document", read_only())
                .output(out::validate_doc()),
        )
        .with(
            tool("patch_block", PATCH_BLOCK, patch_block)
                .titled("Patch block", writes(true, false))
                .output(out::patch(false))
                .refusals_as_results(),
        )
        .with(
            tool("patch_block_list", PATCH_BLOCK_LIST, patch_block_list)
                .titled("Patch blocks", writes(true, false))
                .output(out::patch(true))
                .refusals_as_results(),
        )
        .with(
            tool("transcript_read", TRANSCRIPT_READ, transcript_read)
                .titled("Read transcript", read_only())
                .output(out::transcript_read()),
        )
        .with(
            tool(
                "describe_capabilities",
                DESCRIBE_CAPABILITIES,
                describe_capabilities,
            )
            .titled("Describe capabilities", read_only())
            .output(out::describe_capabilities()),
        )
        .with(
            tool("block_history", BLOCK_HISTORY, block_history)
                .titled("Block history", read_only())
                .output(out::block_history()),
        )
}

/// The changed-block tools of [`super::changes`].
fn changed_tools(registry: Registry) -> Registry {
    registry
        .with(
            tool(
                "list_changed_docs",
                ch::LIST_CHANGED_DOCS,
                ch::list_changed_docs,
            )
            .titled("List changed docs", read_only())
            .output(out::changed(false)),
        )
        .with(
            tool(
                "get_changed_blocks",
                ch::GET_CHANGED_BLOCKS,
                ch::get_changed_blocks,
            )
            .titled("Get changed blocks", read_only())
            .output(out::changed(true)),
        )
        .with(
            tool("mark_reconciled", ch::MARK_RECONCILED, ch::mark_reconciled)
                .titled("Mark reconciled", writes(false, true))
                .output(out::mark_reconciled()),
        )
        .with(
            tool("clear_cache", ch::CLEAR_CACHE, ch::clear_cache)
                .titled("Clear marks", writes(true, true))
                .output(out::clear_cache()),
        )
        .with(
            tool("snapshot_state", ch::SNAPSHOT_STATE, ch::snapshot_state)
                .titled("Snapshot state", writes(true, false))
                .output(out::snapshot_state()),
        )
}

const READ_DOC: &str = "A .noma document's blocks (id, type, lines, patchable, `hash` for \
baseHash) and `sha256`. If `unrecorded_edit` is set, patches are refused until a person runs its \
record_command.";

const LIST_IDS: &str =
    "Block ids in order and the alias map (alias -> id): turn [[alias]] into the id an op needs.";

const VALIDATE_DOC: &str = "Validate a .noma document as `noma check` does: {ok, diagnostics}.";

const PATCH_BLOCK: &str = "Apply one op to a .noma document, recorded in <file>.patches. A \
refusal is a result {ok: false, code, error}, code as in §3.5 (target_missing, sha_mismatch, \
unrecorded_edit, ...): fix and retry.";

const PATCH_BLOCK_LIST: &str = "Apply ops to a .noma document all or nothing; a refusal names \
its op_index. Each op as patch_block's `op`, with its own baseHash.";

const TRANSCRIPT_READ: &str =
    "A document's newest transcript records (<file>.patches); page with after_op_id and limit.";

const DESCRIBE_CAPABILITIES: &str = "Ops granted per directive by <file>.capabilities.yml \
(advisory: others apply with a warning).";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{ToolError, ToolResult};
    use serde_json::{json, Value};

    #[test]
    fn every_tool_has_an_object_schema_and_a_description() {
        let reg = registry();
        let tools = reg.tools();
        assert_eq!(tools.len(), 13);
        let changed = [
            "list_changed_docs",
            "get_changed_blocks",
            "mark_reconciled",
            "clear_cache",
            "snapshot_state",
        ];
        for t in &tools {
            assert_eq!(
                t.input_schema.get("type"),
                Some(&json!("object")),
                "{}",
                t.name
            );
            assert!(t.description.as_deref().is_some_and(|d| d.len() > 40));
            if changed.contains(&t.name.as_ref()) {
                continue;
            }
            let req = t.input_schema.get("required").and_then(Value::as_array);
            assert!(
                req.is_some_and(|r| r.contains(&json!("file"))),
                "{} must require file",
                t.name
            );
        }
    }

    #[test]
    fn the_op_schema_is_written_once_and_its_refs_resolve() {
        let reg = registry();
        let pb = &reg.get("patch_block").unwrap().tool.input_schema;
        let text = serde_json::to_string(pb.as_ref()).unwrap();
        for def in ["id", "attrValue"] {
            assert!(text.contains(&format!("#/$defs/{def}")), "{def}");
            assert!(pb["$defs"].get(def).is_some(), "$defs.{def}");
        }
        let ops = pb["properties"]["op"]["properties"]["op"]["oneOf"]
            .as_array()
            .unwrap();
        assert_eq!(ops.len(), 25);
        let req = pb["required"].as_array().unwrap();
        assert!(req.contains(&json!("op")));
        // Flattened metadata is optional.
        assert!(!req.contains(&json!("reason")));
        assert!(pb["properties"].get("expected_sha").is_some());
        // patch_block_list names patch_block's op shape instead of a copy.
        let pbl = &reg.get("patch_block_list").unwrap().tool.input_schema;
        let text = serde_json::to_string(pbl.as_ref()).unwrap();
        assert!(!text.contains("replace_block"), "{text}");
        assert_eq!(pbl["properties"]["ops"]["items"]["required"], json!(["op"]));
        let desc = reg
            .get("patch_block_list")
            .unwrap()
            .tool
            .description
            .clone();
        assert!(desc.unwrap().contains("as patch_block's"));
    }

    #[test]
    fn every_tool_has_a_title_hints_and_an_object_output_schema() {
        let reg = registry();
        let read_only = [
            "read_doc",
            "list_ids",
            "validate_doc",
            "transcript_read",
            "describe_capabilities",
            "block_history",
            "list_changed_docs",
            "get_changed_blocks",
        ];
        for t in reg.tools() {
            let name = t.name.as_ref();
            assert!(t.title.as_deref().is_some_and(|s| s.len() > 4), "{name}");
            let a = t.annotations.as_ref().expect(name);
            assert_eq!(
                a.read_only_hint == Some(true),
                read_only.contains(&name),
                "{name}"
            );
            assert_eq!(a.open_world_hint, Some(false), "{name}");
            if !read_only.contains(&name) {
                let destructive = [
                    "patch_block",
                    "patch_block_list",
                    "clear_cache",
                    "snapshot_state",
                ];
                assert_eq!(a.is_destructive(), destructive.contains(&name), "{name}");
            }
            // read_doc answers in JSON text only, without a schema.
            if name == "read_doc" {
                assert!(t.output_schema.is_none());
                continue;
            }
            let out = t.output_schema.as_ref().expect(name);
            assert_eq!(out["type"], "object", "{name}");
            assert!(out["anyOf"][0]["required"].is_array(), "{name}");
            assert_typed(name, &Value::Object(out.as_ref().clone()));
        }
    }

    /// Every member `schema` declares, at any depth, has a type (or an enum).
    fn assert_typed(at: &str, schema: &Value) {
        let props = schema["properties"].as_object();
        if schema["type"] == "object" && at.matches('.').count() < 1 {
            assert!(props.is_some_and(|p| !p.is_empty()), "{at}: no properties");
        }
        for (k, v) in props.into_iter().flatten() {
            let at = format!("{at}.{k}");
            assert!(v.get("type").or(v.get("enum")).is_some(), "{at}: untyped");
            assert_typed(&at, v);
            if v["type"] == "array" {
                assert!(v["items"].get("type").is_some(), "{at}: untyped items");
                assert_typed(&format!("{at}[]"), &v["items"]);
            }
        }
    }

    #[test]
    fn patch_block_list_declares_the_metadata_it_accepts() {
        let reg = registry();
        let pb = &reg.get("patch_block").unwrap().tool.input_schema;
        let pbl = &reg.get("patch_block_list").unwrap().tool.input_schema;
        for key in [
            "actor",
            "reason",
            "expected_sha",
            "base_sha256",
            "parent_op_id",
        ] {
            assert_eq!(pbl["properties"][key], pb["properties"][key], "{key}");
        }
        // One hash for a whole list cannot hold: ops change blocks in turn.
        assert!(pbl["properties"].get("base_hash").is_none());
    }

    #[test]
    fn refusals_are_results_for_the_patch_tools_and_tool_errors_elsewhere() {
        let reg = registry();
        let refused: ToolResult = Err(ToolError::user("target_missing", "no block x"));
        let broken: ToolResult = Err(ToolError::system("disk on fire"));
        let fine: ToolResult = Ok(json!({"ids": [], "aliases": {}}));
        for t in reg.tools() {
            let spec = reg.get(&t.name).unwrap();
            let patch = t.name.starts_with("patch_block");
            let r = spec.to_call_result(refused.clone());
            assert_eq!(r.is_error, Some(!patch), "{}", t.name);
            // The text content is the body, for clients that parse text;
            // structuredContent is the same body where the tool has one.
            let text = serde_json::to_value(&r.content[0]).unwrap();
            let body: Value = serde_json::from_str(text["text"].as_str().unwrap()).unwrap();
            assert_eq!(body["code"], "target_missing");
            let structured = t.output_schema.is_some().then_some(body);
            assert_eq!(r.structured_content, structured, "{}", t.name);
            assert_eq!(spec.to_call_result(broken.clone()).is_error, Some(true));
        }
        let ok = reg.get("list_ids").unwrap().to_call_result(fine.clone());
        assert_eq!(ok.is_error, Some(false));
        assert_eq!(ok.structured_content, fine.ok());
    }
}

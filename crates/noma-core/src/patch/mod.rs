//! The 25 source-preserving patch ops (§3.1 core, §1.5 extended), and the
//! two extension ops: the one `noma record` writes ([`REPLACE_LINES`], see
//! `replace_lines.rs`) and a document's final record, which `noma rm`
//! writes ([`REMOVE_DOCUMENT`], see `remove_document.rs`).
//!
//! Every op re-parses the current text, locates its block by canonical id,
//! and splices only the lines it changes; every other byte (BOM, CRLF line
//! endings, trailing newline) is kept. Behaviour follows the reference
//! implementation's `patchSource`, except where the protocol is stricter (see
//! the op modules' docs): core ops on non-directive targets (rename_id on a
//! section excepted, as the reference) and aliases in id fields are
//! `target_missing`, `add_block.position` out of range is `parent_missing`,
//! `update_attribute` with `null` removes the attribute. In a CRLF document
//! every line an op writes or rewrites ends in `\r\n` (§5.4: line endings
//! are preserved as found); the reference splits on `\n`, so its inserted
//! lines end in `\n` and the lines it rewrites through a `\s*$` pattern
//! (heading ids, directive open lines) lose their `\r`.

mod body;
mod core;
mod dataset;
mod edits;
mod fence;
mod heading_id;
mod line_buf;
mod line_text;
mod move_block;
mod notes;
mod op;
mod remove_document;
mod replace_lines;
mod table;

use serde_json::Value;

use crate::doc::{self, Document, Node, ParseMemo};

pub use edits::{apply_ops_with_edits, apply_text_edits, text_edits, Patched, TextEdit};
pub use op::{
    is_catalogue_op, op_name, op_target, unknown_op_message, Column, NoteKind, Op, OpShapeError,
    OP_NAMES,
};
pub use remove_document::{removal_op, REMOVE_DOCUMENT};
pub use replace_lines::{genesis_op, relocate, REPLACE_LINES};

/// The §3.5 PatchError codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchErrorCode {
    /// Target id missing or not a directive.
    TargetMissing,
    /// Parent missing, not accepting children, or position out of range.
    ParentMissing,
    /// Id already taken.
    IdConflict,
    /// Content is not exactly one top-level directive.
    InvalidContent,
    /// `update_attribute` with key `id`.
    IdAttributeProtected,
    /// `expected_sha` or `baseHash` precondition failed.
    ShaMismatch,
    /// Strict mode and pre-validation errors.
    PreValidationBlocked,
    /// Rolled back because a later op failed.
    OpListAborted,
    /// Unknown op or book manifest target.
    UnsupportedOp,
}

impl PatchErrorCode {
    /// Every code, in §3.5's order.
    pub const ALL: [PatchErrorCode; 9] = [
        PatchErrorCode::TargetMissing,
        PatchErrorCode::ParentMissing,
        PatchErrorCode::IdConflict,
        PatchErrorCode::InvalidContent,
        PatchErrorCode::IdAttributeProtected,
        PatchErrorCode::ShaMismatch,
        PatchErrorCode::PreValidationBlocked,
        PatchErrorCode::OpListAborted,
        PatchErrorCode::UnsupportedOp,
    ];

    /// The code a wire spelling names, if it names one.
    pub fn from_wire(code: &str) -> Option<PatchErrorCode> {
        PatchErrorCode::ALL.into_iter().find(|c| c.as_str() == code)
    }

    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            PatchErrorCode::TargetMissing => "target_missing",
            PatchErrorCode::ParentMissing => "parent_missing",
            PatchErrorCode::IdConflict => "id_conflict",
            PatchErrorCode::InvalidContent => "invalid_content",
            PatchErrorCode::IdAttributeProtected => "id_attribute_protected",
            PatchErrorCode::ShaMismatch => "sha_mismatch",
            PatchErrorCode::PreValidationBlocked => "pre_validation_blocked",
            PatchErrorCode::OpListAborted => "op_list_aborted",
            PatchErrorCode::UnsupportedOp => "unsupported_op",
        }
    }
}

/// A rejected op.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("op {op_index}: {}: {message}", code.as_str())]
pub struct PatchError {
    /// §3.5 code.
    pub code: PatchErrorCode,
    /// Human-readable explanation.
    pub message: String,
    /// Index of the failing op in the list.
    pub op_index: usize,
}

/// An op failure before the list index is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OpError {
    code: PatchErrorCode,
    message: String,
}

pub(crate) type OpResult<T> = Result<T, OpError>;

pub(crate) fn fail<T>(code: PatchErrorCode, message: impl Into<String>) -> OpResult<T> {
    Err(OpError {
        code,
        message: message.into(),
    })
}

/// The current text of one op step: the BOM-less source and its parse.
pub(crate) struct Ctx<'a> {
    pub src: &'a str,
    pub doc: std::sync::Arc<Document>,
    /// What the result starts with before `src`'s lines (the BOM, if any),
    /// so ops write their output in one pass.
    pub prefix: &'static str,
}

impl Ctx<'_> {
    /// The node with canonical id `id` (first in document order).
    pub(crate) fn find(&self, id: &str) -> Option<&Node> {
        self.doc.find(id)
    }

    /// Like [`Ctx::find`], but a miss is `code`, naming the canonical id when
    /// `id` is only an alias (aliases are never patch identity, §2.2).
    pub(crate) fn require(&self, id: &str, code: PatchErrorCode, what: &str) -> OpResult<&Node> {
        if let Some(n) = self.find(id) {
            return Ok(n);
        }
        match doc::ids::resolve(&self.doc, id) {
            Some(canonical) => fail(
                code,
                format!("{what} \"{id}\" is an alias of \"{canonical}\"; patches must address canonical ids"),
            ),
            None => {
                // The shared suggester `check` uses for broken references.
                let ids = self.doc.walk().filter_map(|n| n.id.as_deref());
                match crate::suggest::near_miss(id, ids) {
                    Some(meant) => fail(
                        code,
                        format!("{what} \"{id}\" not found; did you mean \"{meant}\"?"),
                    ),
                    None => fail(code, format!("{what} \"{id}\" not found")),
                }
            }
        }
    }

    /// Whether a block with canonical id `id` exists.
    pub(crate) fn id_taken(&self, id: &str) -> bool {
        self.find(id).is_some()
    }
}

/// Applies `ops` in order to `source`, all or nothing; returns the new bytes.
/// On failure nothing is returned but the first error, with its op index.
pub fn apply_ops(source: &str, ops: &[Value]) -> Result<String, PatchError> {
    apply_ops_with(&mut ParseMemo::new(), source, ops)
}

/// [`apply_ops`], reading each op's input tree through `memo`: a caller
/// that has parsed `source` (to validate it) or spliced its tree from the
/// previous state passes that memo, and the op does not parse it again.
pub fn apply_ops_with(
    memo: &mut ParseMemo,
    source: &str,
    ops: &[Value],
) -> Result<String, PatchError> {
    #[cfg(any(test, feature = "testing"))]
    if let Some(stand_in) = testing::stand_in() {
        return stand_in(memo, source, ops);
    }
    // Each op builds its result from the previous text; the input itself is
    // only copied when there is nothing to apply.
    let mut cur: Option<String> = None;
    for (i, op) in ops.iter().enumerate() {
        let next = apply_indexed(memo, cur.as_deref().unwrap_or(source), op, i)?;
        cur = Some(next);
    }
    Ok(cur.unwrap_or_else(|| source.to_string()))
}

/// Applies one op (op index 0 in errors).
pub fn apply_one(source: &str, op: &Value) -> Result<String, PatchError> {
    apply_indexed(&mut ParseMemo::new(), source, op, 0)
}

fn apply_indexed(
    memo: &mut ParseMemo,
    source: &str,
    op: &Value,
    op_index: usize,
) -> Result<String, PatchError> {
    apply_value(memo, source, op).map_err(|e| PatchError {
        code: e.code,
        message: e.message,
        op_index,
    })
}

fn apply_value(memo: &mut ParseMemo, source: &str, value: &Value) -> OpResult<String> {
    let op = match Op::parse(value) {
        Ok(op) => op,
        // A catalogue op with a bad field is `invalid_content` (as the
        // reference); an unknown or missing `op` is `unsupported_op` (§3.1).
        Err(msg)
            if op_name(value).is_some_and(|n| {
                is_catalogue_op(n) || n == REPLACE_LINES || n == REMOVE_DOCUMENT
            }) =>
        {
            return fail(PatchErrorCode::InvalidContent, msg.to_string())
        }
        Err(msg) => return fail(PatchErrorCode::UnsupportedOp, msg.to_string()),
    };
    if let Some(field) = nul_field(value, "op") {
        // A document with a NUL byte is binary to every reader (the CLI,
        // the hooks, `read_doc`): the op would lock the document.
        return fail(
            PatchErrorCode::InvalidContent,
            format!(
                "{field} contains a NUL character (U+0000); .noma documents are text without NUL"
            ),
        );
    }
    if let Op::ReplaceLines { line, old, new } = &op {
        // Works on the file's bytes (BOM included), never on the parse.
        return replace_lines::replace_lines(source, *line, old, new);
    }
    if let Op::RemoveDocument { sha256 } = &op {
        return remove_document::remove(source, sha256.as_deref());
    }
    let (bom, body) = match source.strip_prefix('\u{feff}') {
        Some(rest) => (true, rest),
        None => (false, source),
    };
    let ctx = Ctx {
        src: body,
        doc: memo.parse(body),
        prefix: if bom { "\u{feff}" } else { "" },
    };
    check_base_hash(&ctx, value, &op)?;
    dispatch(&ctx, &op)
}

/// The path of the first string in `v` (field names and array indexes
/// after `at`) that contains a NUL character.
fn nul_field(v: &Value, at: &str) -> Option<String> {
    match v {
        Value::String(s) => s.contains('\0').then(|| at.to_string()),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, x)| nul_field(x, &format!("{at}[{i}]"))),
        Value::Object(fields) => fields
            .iter()
            .find_map(|(k, x)| nul_field(x, &format!("{at}.{k}"))),
        _ => None,
    }
}

/// §3.4 `baseHash`: the target block's source hash must start with it.
/// A missing target is left to the op, which reports its own code.
fn check_base_hash(ctx: &Ctx<'_>, value: &Value, op: &Op) -> OpResult<()> {
    let Some(base) = value.get("baseHash") else {
        return Ok(());
    };
    let Some(base) = base.as_str() else {
        return fail(
            PatchErrorCode::UnsupportedOp,
            "field `baseHash` must be a string",
        );
    };
    let valid = (8..=64).contains(&base.len()) && base.bytes().all(|b| b.is_ascii_hexdigit());
    if !valid {
        return fail(
            PatchErrorCode::ShaMismatch,
            "baseHash must be 8 to 64 hex characters (a prefix of the block's sha256)",
        );
    }
    let Some(target) = op.target() else {
        return Ok(());
    };
    let Some(node) = ctx.find(target) else {
        return Ok(());
    };
    let actual = doc::hash::slice_hash(ctx.src, node.span.start, node.span.end);
    if actual.starts_with(&base.to_ascii_lowercase()) {
        Ok(())
    } else {
        fail(
            PatchErrorCode::ShaMismatch,
            format!("block \"{target}\" changed: baseHash {base} does not match its current hash {actual}"),
        )
    }
}

fn dispatch(ctx: &Ctx<'_>, op: &Op) -> OpResult<String> {
    match op {
        Op::ReplaceBlock { id, content } => core::replace_block(ctx, id, content),
        Op::AddBlock {
            parent,
            content,
            position,
        } => core::add_block(ctx, parent, content, *position),
        Op::DeleteBlock { id } => core::delete_block(ctx, id),
        Op::UpdateAttribute { id, key, value } => {
            core::update_attribute(ctx, id, key, value.as_ref())
        }
        Op::RenameId { from, to } => core::rename_id(ctx, from, to),
        Op::ReplaceBody { id, content } => body::replace_body(ctx, id, content),
        Op::UpdateHeading { id, title } => body::update_heading(ctx, id, title),
        Op::RemoveAttribute { id, key } => body::remove_attribute(ctx, id, key),
        Op::AddComment { .. } | Op::AddNote { .. } | Op::AddChangeRequest { .. } => {
            notes::add_note_like(ctx, op)
        }
        Op::ResolveComment {
            id,
            resolved_by,
            resolved_at,
        } => notes::resolve_comment(ctx, id, resolved_by.as_deref(), resolved_at.as_deref()),
        Op::UpdateTableCell { .. }
        | Op::UpdateTableHeaderCell { .. }
        | Op::InsertTableRow { .. }
        | Op::DeleteTableRow { .. }
        | Op::InsertTableColumn { .. }
        | Op::DeleteTableColumn { .. } => table::apply(ctx, op),
        Op::UpdateDatasetCell { .. }
        | Op::InsertDatasetRow { .. }
        | Op::DeleteDatasetRow { .. }
        | Op::InsertDatasetColumn { .. }
        | Op::DeleteDatasetColumn { .. } => dataset::apply(ctx, op),
        Op::MoveBlock {
            id,
            parent,
            position,
        } => move_block::move_block(ctx, id, parent, *position),
        // Handled in `apply_value` on the whole source, before any parse.
        Op::ReplaceLines { .. } | Op::RemoveDocument { .. } => fail(
            PatchErrorCode::UnsupportedOp,
            "the extension ops apply to the whole source",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const DOC: &str = "::claim{id=\"c1\" confidence=0.5}\nBody.\n::\n";

    #[test]
    fn failing_op_reports_its_index_and_nothing_is_applied() {
        let ops = [
            json!({"op": "update_attribute", "id": "c1", "key": "a", "value": 1}),
            json!({"op": "rename_id", "from": "c1", "to": "c2"}),
            json!({"op": "delete_block", "id": "c1"}),
        ];
        let err = apply_ops(DOC, &ops).unwrap_err();
        assert_eq!((err.code, err.op_index), (PatchErrorCode::TargetMissing, 2));
    }

    /// A NUL anywhere in an op would make the document binary to every
    /// reader, locking it: refused, whatever the op and field.
    #[test]
    fn an_op_carrying_a_nul_character_is_refused() {
        for (op, field) in [
            (
                json!({"op": "replace_body", "id": "c1", "content": "a\u{0}b"}),
                "op.content",
            ),
            (
                json!({"op": "update_attribute", "id": "c1", "key": "k", "value": "\u{0}"}),
                "op.value",
            ),
            (
                json!({"op": REPLACE_LINES, "line": 2, "old": "Body.\n", "new": "B\u{0}\n"}),
                "op.new",
            ),
            (
                json!({"op": "insert_table_row", "id": "c1", "row": 0, "cells": ["x", "\u{0}"]}),
                "op.cells[1]",
            ),
        ] {
            let e = apply_one(DOC, &op).unwrap_err();
            assert_eq!(e.code, PatchErrorCode::InvalidContent, "{op}");
            assert!(e.message.starts_with(field), "{op}: {}", e.message);
        }
    }

    #[test]
    fn base_hash_prefix_is_checked_against_the_block_slice() {
        let full = doc::hash::sha256_hex(b"::claim{id=\"c1\" confidence=0.5}\nBody.\n::");
        let op = json!({"op": "delete_block", "id": "c1", "baseHash": &full[..12]});
        assert_eq!(apply_one(DOC, &op).unwrap(), "");
        let bad = json!({"op": "delete_block", "id": "c1", "baseHash": "abc"});
        assert_eq!(
            apply_one(DOC, &bad).unwrap_err().code,
            PatchErrorCode::ShaMismatch
        );
    }

    #[test]
    fn aliases_are_not_patch_identity() {
        let src = "::claim{id=\"c1\" aliases=\"old\"}\nx\n::\n";
        let err = apply_one(
            src,
            &json!({"op": "replace_body", "id": "old", "content": "y"}),
        )
        .unwrap_err();
        assert_eq!(err.code, PatchErrorCode::TargetMissing);
        assert!(err.message.contains("alias"));
    }
}

/// A stand-in for the op applier, for the engine crates' own unit tests
/// (feature `testing`, which only their dev-dependencies turn on; release
/// builds do not have it). The engine, replay and recovery always call
/// [`apply_ops_with`]; a test that wants to exercise them without real
/// ops installs a stand-in for the current thread.
#[cfg(any(test, feature = "testing"))]
pub mod testing {
    use std::cell::Cell;

    use super::{PatchError, PatchErrorCode, Value};
    use crate::doc::ParseMemo;

    /// A stand-in applier for tests of the planner, recovery and replay:
    /// `{"op":"append","text":T}` appends T; `{"op":"same"}` is a noop;
    /// any other op fails with `target_missing`.
    pub fn append_applier(
        _memo: &mut ParseMemo,
        src: &str,
        ops: &[Value],
    ) -> Result<String, PatchError> {
        let mut s = src.to_string();
        for (i, op) in ops.iter().enumerate() {
            match op.get("op").and_then(Value::as_str) {
                Some("append") => s.push_str(op.get("text").and_then(Value::as_str).unwrap_or("")),
                Some("same") => {}
                _ => {
                    return Err(PatchError {
                        code: PatchErrorCode::TargetMissing,
                        message: "no such block".into(),
                        op_index: i,
                    })
                }
            }
        }
        Ok(s)
    }

    /// The stand-in's shape: [`super::apply_ops_with`]'s.
    pub type Applier = fn(&mut ParseMemo, &str, &[Value]) -> Result<String, PatchError>;

    thread_local! {
        static STAND_IN: Cell<Option<Applier>> = const { Cell::new(None) };
    }

    /// The current thread's stand-in, if one is installed.
    pub(super) fn stand_in() -> Option<Applier> {
        STAND_IN.with(Cell::get)
    }

    /// Installs `f` as this thread's applier until the guard drops.
    pub fn use_applier(f: Applier) -> Guard {
        Guard(STAND_IN.with(|c| c.replace(Some(f))))
    }

    /// Restores the previous applier when dropped.
    pub struct Guard(Option<Applier>);

    impl Drop for Guard {
        fn drop(&mut self) {
            STAND_IN.with(|c| c.set(self.0));
        }
    }
}

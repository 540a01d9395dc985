//! The typed op model, parsed from JSON.
//!
//! Shape errors — a missing required field or a field of the wrong JSON type —
//! are reported as `unsupported_op`: such an object matches no entry of the
//! v1.0 op catalog (the reference validates ops against the `patch-op`
//! schema, whose `oneOf` fails the same way). Value errors inside a well-typed
//! field (a negative row, a non-integer column, an unknown column label) are
//! `invalid_content`, as in the reference.
//!
//! A field the op's schema does not take (every op of
//! `patch-op.schema.json` is `additionalProperties: false`) is refused
//! as `invalid_content` (as every field error of a catalogue op is, see
//! [`crate::plan::InvalidOp::code`]), naming the field and, for a near miss or a common synonym
//! (`index` for `position`), the field meant: ignoring it would apply an
//! op the agent did not send (a block appended instead of placed) and
//! record an op the transcript schema refuses.

use serde_json::Value;

use super::line_text::AttrVal;

/// The 25 op names of the v1.0 catalog (§3.1 core + §1.5 extended).
pub const OP_NAMES: [&str; 25] = [
    "replace_block",
    "add_block",
    "delete_block",
    "update_attribute",
    "rename_id",
    "replace_body",
    "update_heading",
    "add_comment",
    "resolve_comment",
    "remove_attribute",
    "add_footnote",
    "add_endnote",
    "add_change_request",
    "update_table_cell",
    "update_table_header_cell",
    "insert_table_row",
    "delete_table_row",
    "insert_table_column",
    "delete_table_column",
    "update_dataset_cell",
    "insert_dataset_row",
    "delete_dataset_row",
    "insert_dataset_column",
    "delete_dataset_column",
    "move_block",
];

/// Whether `name` is one of the v1.0 catalogue's ops (agents may send
/// only these; the extension op is written by `noma record` alone).
pub fn is_catalogue_op(name: &str) -> bool {
    OP_NAMES.contains(&name)
}

/// A row/column/position index as sent: any JSON number. Range and
/// integrality are checked by the op (`invalid_content`).
pub(super) type Index = f64;

/// A column addressed by zero-based index or by header/column label.
#[derive(Debug, Clone, PartialEq)]
pub enum Column {
    /// A number (validated as a non-negative integer by the op).
    Index(Index),
    /// A label.
    Label(String),
}

/// `add_footnote` or `add_endnote`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoteKind {
    /// `::footnote`
    Footnote,
    /// `::endnote`
    Endnote,
}

/// A parsed op: one variant per op of the v1.0 catalogue (§3.1 core, §1.5
/// extended) and the two extension ops. Fields carry the op's JSON fields
/// under the same names; an `id` names the block the op edits. Row, column
/// and position indexes are zero-based; table and dataset rows count data
/// rows only (a header is addressed by column).
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// `replace_block`: the directive `id` becomes `content`.
    ReplaceBlock {
        /// The directive to replace.
        id: String,
        /// The whole new directive, opening and closing fence included.
        content: String,
    },
    /// `add_block`: a new directive as a child of `parent`.
    AddBlock {
        /// The section or directive that receives the block.
        parent: String,
        /// The whole new directive, opening and closing fence included.
        content: String,
        /// Its index among `parent`'s children; None: after the last one
        /// that keeps it a direct child.
        position: Option<Index>,
    },
    /// `delete_block`: the block `id` and its lines are removed.
    DeleteBlock {
        /// The directive or section to delete.
        id: String,
    },
    /// `update_attribute`: sets attribute `key` of block `id`.
    /// `value: None` is JSON `null`: remove the attribute (§3.1.4).
    UpdateAttribute {
        /// The directive whose attribute changes.
        id: String,
        /// The attribute's name.
        key: String,
        /// The new value; None removes the attribute.
        value: Option<AttrVal>,
    },
    /// `rename_id`: the block `from` is called `to` from now on.
    RenameId {
        /// The current id.
        from: String,
        /// The new id.
        to: String,
    },
    /// `replace_body`: the body of directive `id` becomes `content`, its
    /// opening line and attributes kept.
    ReplaceBody {
        /// The directive whose body changes.
        id: String,
        /// The new body text (without the fences).
        content: String,
    },
    /// `update_heading`: the heading text of section `id` becomes `title`.
    UpdateHeading {
        /// The section whose heading changes.
        id: String,
        /// The new heading text.
        title: String,
    },
    /// `add_comment`: a `::comment` on `target`, or a reply in a thread.
    AddComment {
        /// The new comment's id.
        id: String,
        /// The block commented on.
        target: String,
        /// The comment's text.
        content: String,
        /// Who wrote it.
        author: Option<String>,
        /// The author's initials.
        initials: Option<String>,
        /// When it was written, as given.
        date: Option<String>,
        /// The comment this one answers: threads it under that comment.
        reply_to: Option<String>,
    },
    /// `resolve_comment`: marks comment `id` resolved.
    ResolveComment {
        /// The comment to resolve.
        id: String,
        /// Who resolved it.
        resolved_by: Option<String>,
        /// When it was resolved, as given.
        resolved_at: Option<String>,
    },
    /// `remove_attribute`: removes attribute `key` of block `id`.
    RemoveAttribute {
        /// The directive whose attribute goes.
        id: String,
        /// The attribute's name.
        key: String,
    },
    /// `add_footnote` or `add_endnote` (by `kind`): a note on `target`.
    AddNote {
        /// Footnote or endnote.
        kind: NoteKind,
        /// The new note's id.
        id: String,
        /// The block the note is for.
        target: String,
        /// The note's text (not blank).
        content: String,
        /// The note's label, one line.
        label: Option<String>,
    },
    /// `add_change_request`: a `::change_request` proposing an insertion,
    /// deletion or replacement in `target`.
    AddChangeRequest {
        /// The new change request's id.
        id: String,
        /// The block the change is proposed for.
        target: String,
        /// `insert`, `delete` or `replace`.
        action: String,
        /// The text to delete or replace (`delete`, `replace`).
        from: Option<String>,
        /// The text to insert or replace with (`insert`, `replace`).
        to: Option<String>,
        /// The text inserted or deleted, when `to`/`from` are not given.
        text: Option<String>,
        /// The change request's body: why, in prose.
        content: Option<String>,
        /// Who proposed it.
        author: Option<String>,
        /// When it was proposed, as given.
        date: Option<String>,
    },
    /// `update_table_cell`: one cell of a `::table`'s data rows.
    UpdateTableCell {
        /// The table.
        id: String,
        /// The data row.
        row: Index,
        /// The cell's column.
        column: Column,
        /// The cell's new text.
        value: String,
    },
    /// `update_table_header_cell`: one cell of a `::table`'s header row.
    UpdateTableHeaderCell {
        /// The table.
        id: String,
        /// The header cell's column.
        column: Column,
        /// The header's new text.
        value: String,
    },
    /// `insert_table_row`: a data row inserted into a `::table`.
    InsertTableRow {
        /// The table.
        id: String,
        /// The index the new row takes.
        row: Index,
        /// The new row's cells, in column order.
        cells: Vec<String>,
    },
    /// `delete_table_row`: a data row removed from a `::table`.
    DeleteTableRow {
        /// The table.
        id: String,
        /// The row to remove.
        row: Index,
    },
    /// `insert_table_column`: a column inserted into a `::table`.
    InsertTableColumn {
        /// The table.
        id: String,
        /// The index the new column takes.
        column: Column,
        /// The new column's header, for a table with a header row.
        header: Option<String>,
        /// The new column's cells, one per data row.
        cells: Vec<String>,
    },
    /// `delete_table_column`: a column removed from a `::table`.
    DeleteTableColumn {
        /// The table.
        id: String,
        /// The column to remove.
        column: Column,
    },
    /// `update_dataset_cell`: one cell of a `::dataset`'s rows.
    UpdateDatasetCell {
        /// The dataset.
        id: String,
        /// The row.
        row: Index,
        /// The cell's column.
        column: Column,
        /// The cell's new value, coerced by the column's type.
        value: String,
    },
    /// `insert_dataset_row`: a row inserted into a `::dataset`.
    InsertDatasetRow {
        /// The dataset.
        id: String,
        /// The index the new row takes.
        row: Index,
        /// The new row's cells, in column order.
        cells: Vec<String>,
    },
    /// `delete_dataset_row`: a row removed from a `::dataset`.
    DeleteDatasetRow {
        /// The dataset.
        id: String,
        /// The row to remove.
        row: Index,
    },
    /// `insert_dataset_column`: a column inserted into a `::dataset`.
    InsertDatasetColumn {
        /// The dataset.
        id: String,
        /// The index the new column takes.
        column: Column,
        /// The new column's name.
        header: String,
        /// The new column's cells, one per row.
        cells: Vec<String>,
    },
    /// `delete_dataset_column`: a column removed from a `::dataset`.
    DeleteDatasetColumn {
        /// The dataset.
        id: String,
        /// The column to remove.
        column: Column,
    },
    /// `move_block`: the block `id` becomes a child of `parent`.
    MoveBlock {
        /// The directive to move.
        id: String,
        /// Its new parent, a section or directive.
        parent: String,
        /// Its index among `parent`'s children; None: as `add_block`.
        position: Option<Index>,
    },
    /// The extension op [`super::REPLACE_LINES`] (not in the v1.0 catalogue).
    ReplaceLines {
        /// The 1-based line where `old` starts.
        line: Index,
        /// The whole lines replaced; also the op's precondition.
        old: String,
        /// The whole lines that take their place.
        new: String,
    },
    /// The extension op [`super::REMOVE_DOCUMENT`] (not in the v1.0
    /// catalogue): the document's final record.
    RemoveDocument {
        /// The sha256 of the document it removes (absent in removals
        /// written before the field existed): the op applies only to that
        /// state, so a signed removal names what it removes.
        sha256: Option<String>,
    },
}

/// The `op` field of an op object, if it is a string.
pub fn op_name(op: &Value) -> Option<&str> {
    op.get("op").and_then(Value::as_str)
}

/// The id the op's `baseHash` precondition applies to: `rename_id.from`,
/// `add_block.parent`, the `target` of the add-note/comment/change ops, else `id`.
pub fn op_target(op: &Value) -> Option<&str> {
    let field = match op_name(op)? {
        "rename_id" => "from",
        "add_block" => "parent",
        "add_comment" | "add_footnote" | "add_endnote" | "add_change_request" => "target",
        _ => "id",
    };
    op.get(field).and_then(Value::as_str)
}

/// Why a JSON value is not an op of the catalogue (its fields' shapes; what
/// an op does to a document is checked when it is applied).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpShapeError {
    /// The op is not a JSON object.
    #[error("an op must be a JSON object")]
    NotAnObject,
    /// A required field is absent.
    #[error(
        "missing required field `{0}` (`noma schema patch-op` prints every op and its fields)"
    )]
    Missing(String),
    /// A field has the wrong JSON type.
    #[error("field `{field}` must {expected}")]
    WrongType {
        /// The field.
        field: String,
        /// What it must be, as a predicate ("be a string").
        expected: &'static str,
    },
    /// The `op` names no op of the catalogue.
    #[error("{}", unknown_op_message(.0))]
    Unknown(String),
    /// A field the op's schema does not allow (`additionalProperties:
    /// false` in `patch-op.schema.json`).
    #[error("{op} has no field `{field}`{}", hint(suggestion.as_deref(), allowed))]
    UnknownField {
        /// The op name.
        op: String,
        /// The field as sent.
        field: String,
        /// The field it most likely meant.
        suggestion: Option<&'static str>,
        /// Every field the op takes.
        allowed: &'static [&'static str],
    },
}

/// The refusal of an op name outside the catalogue, naming the fix: the
/// op it most likely meant, or else the catalogue itself.
pub fn unknown_op_message(name: &str) -> String {
    match crate::suggest::near_miss(name, OP_NAMES) {
        Some(meant) => format!(
            "unknown op `{name}`; not in the v1.0 op catalog; did you mean `{meant}`? \
             (`noma schema patch-op` prints every op and its fields)"
        ),
        None => format!(
            "unknown op `{name}`; not in the v1.0 op catalog (the ops: {}; \
             `noma schema patch-op` prints their fields)",
            OP_NAMES.join(", ")
        ),
    }
}

fn hint(suggestion: Option<&str>, allowed: &[&str]) -> String {
    let fields = allowed
        .iter()
        .map(|f| format!("`{f}`"))
        .collect::<Vec<_>>()
        .join(", ");
    match suggestion {
        Some(s) => format!("; did you mean `{s}`? (its fields: {fields})"),
        None => format!(" (its fields: {fields})"),
    }
}

/// The fields each op takes besides `op` and `baseHash` (§3.4), as the
/// published `patch-op.schema.json` lists them.
fn op_fields(name: &str) -> Option<&'static [&'static str]> {
    Some(match name {
        "replace_block" | "replace_body" => &["id", "content"],
        "add_block" => &["parent", "content", "position"],
        "delete_block" => &["id"],
        "update_attribute" => &["id", "key", "value"],
        "remove_attribute" => &["id", "key"],
        "rename_id" => &["from", "to"],
        "update_heading" => &["id", "title"],
        "move_block" => &["id", "parent", "position"],
        "add_comment" => &[
            "id", "target", "content", "author", "initials", "date", "reply_to",
        ],
        "resolve_comment" => &["id", "resolved_by", "resolved_at"],
        "add_footnote" | "add_endnote" => &["id", "target", "content", "label"],
        "add_change_request" => &[
            "id", "target", "action", "from", "to", "text", "content", "author", "date",
        ],
        "update_table_cell" | "update_dataset_cell" => &["id", "row", "column", "value"],
        "update_table_header_cell" => &["id", "column", "value"],
        "insert_table_row" | "insert_dataset_row" => &["id", "row", "cells"],
        "delete_table_row" | "delete_dataset_row" => &["id", "row"],
        "insert_table_column" | "insert_dataset_column" => &["id", "column", "header", "cells"],
        "delete_table_column" | "delete_dataset_column" => &["id", "column"],
        super::replace_lines::REPLACE_LINES => &["line", "old", "new"],
        super::remove_document::REMOVE_DOCUMENT => &["sha256"],
        _ => return None,
    })
}

/// Names agents use for a field under another name (`index` for
/// `position`), tried before spelling: the edit distance cannot see them.
const SYNONYMS: &[(&str, &str)] = &[
    ("index", "position"),
    ("idx", "position"),
    ("pos", "position"),
    ("at", "position"),
    ("parent_id", "parent"),
    ("parentId", "parent"),
    ("block", "id"),
    ("block_id", "id"),
    ("blockId", "id"),
    ("target_id", "target"),
    ("body", "content"),
    ("text", "content"),
    ("markdown", "content"),
    ("attribute", "key"),
    ("attr", "key"),
    ("name", "key"),
    ("new_id", "to"),
    ("old_id", "from"),
    ("heading", "title"),
    ("hash", "baseHash"),
    ("base_sha", "baseHash"),
];

/// The first field of `map` that op `name` does not take, as an error.
fn unknown_field(name: &str, map: &serde_json::Map<String, Value>) -> Result<(), OpShapeError> {
    let Some(allowed) = op_fields(name) else {
        return Ok(());
    };
    let known = |k: &str| k == "op" || k == "baseHash" || allowed.contains(&k);
    let Some(field) = map.keys().find(|k| !known(k)) else {
        return Ok(());
    };
    let candidates = || allowed.iter().copied().chain(["baseHash"]);
    let suggestion = SYNONYMS
        .iter()
        .find(|(alias, meant)| *alias == field && candidates().any(|c| c == *meant))
        .map(|(_, meant)| *meant)
        .or_else(|| crate::suggest::near_miss(field, candidates()));
    Err(OpShapeError::UnknownField {
        op: name.to_string(),
        field: field.clone(),
        suggestion,
        allowed,
    })
}

impl OpShapeError {
    fn wrong(field: &str, expected: &'static str) -> OpShapeError {
        OpShapeError::WrongType {
            field: field.to_string(),
            expected,
        }
    }
}

struct Fields<'a>(&'a serde_json::Map<String, Value>);

impl Fields<'_> {
    fn str(&self, key: &str) -> Result<String, OpShapeError> {
        match self.0.get(key) {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(OpShapeError::wrong(key, "be a string")),
            None => Err(OpShapeError::Missing(key.to_string())),
        }
    }
    fn opt_str(&self, key: &str) -> Result<Option<String>, OpShapeError> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(OpShapeError::wrong(key, "be a string")),
        }
    }
    fn index(&self, key: &str) -> Result<Index, OpShapeError> {
        match self.0.get(key) {
            Some(Value::Number(n)) => Ok(n.as_f64().unwrap_or(f64::NAN)),
            Some(_) => Err(OpShapeError::wrong(key, "be a number")),
            None => Err(OpShapeError::Missing(key.to_string())),
        }
    }
    fn opt_index(&self, key: &str) -> Result<Option<Index>, OpShapeError> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => Ok(Some(n.as_f64().unwrap_or(f64::NAN))),
            Some(_) => Err(OpShapeError::wrong(key, "be a number")),
        }
    }
    fn column(&self, key: &str) -> Result<Column, OpShapeError> {
        match self.0.get(key) {
            Some(Value::Number(n)) => Ok(Column::Index(n.as_f64().unwrap_or(f64::NAN))),
            Some(Value::String(s)) => Ok(Column::Label(s.clone())),
            Some(_) => Err(OpShapeError::wrong(key, "be a number or a string")),
            None => Err(OpShapeError::Missing(key.to_string())),
        }
    }
    /// `cells`: an array of scalars, stringified like JavaScript's `String(x)`.
    fn cells(&self, key: &str) -> Result<Vec<String>, OpShapeError> {
        let Some(v) = self.0.get(key) else {
            return Err(OpShapeError::Missing(key.to_string()));
        };
        let Value::Array(items) = v else {
            return Err(OpShapeError::wrong(key, "be an array"));
        };
        items
            .iter()
            .map(|c| match c {
                Value::String(s) => Ok(s.clone()),
                Value::Number(n) => Ok(super::line_text::js_num(n.as_f64().unwrap_or(f64::NAN))),
                Value::Bool(b) => Ok(b.to_string()),
                Value::Null => Ok("null".to_string()),
                _ => Err(OpShapeError::wrong(key, "hold strings")),
            })
            .collect()
    }
}

impl Op {
    /// Parses one op object. `Err` carries the `unsupported_op` message.
    pub fn parse(v: &Value) -> Result<Op, OpShapeError> {
        let Value::Object(map) = v else {
            return Err(OpShapeError::NotAnObject);
        };
        let f = Fields(map);
        let name = match map.get("op") {
            Some(Value::String(s)) => s.as_str(),
            Some(_) => return Err(OpShapeError::wrong("op", "be a string")),
            None => return Err(OpShapeError::Missing("op".into())),
        };
        // A field the op does not take is refused, not ignored: an agent
        // that writes `index` for `position` must not see its block land
        // at the end, and the record must fit the schema.
        unknown_field(name, map)?;
        let families = [
            Fields::block_op,
            Fields::annotation_op,
            Fields::table_op,
            Fields::dataset_op,
        ];
        for family in families {
            if let Some(op) = family(&f, name)? {
                return Ok(op);
            }
        }
        Err(OpShapeError::Unknown(name.to_string()))
    }
}

impl Op {
    /// The op's wire name (`replace_block`, ..., the extension ops' names).
    pub fn name(&self) -> &'static str {
        match self {
            Op::ReplaceBlock { .. } => "replace_block",
            Op::AddBlock { .. } => "add_block",
            Op::DeleteBlock { .. } => "delete_block",
            Op::UpdateAttribute { .. } => "update_attribute",
            Op::RenameId { .. } => "rename_id",
            Op::ReplaceBody { .. } => "replace_body",
            Op::UpdateHeading { .. } => "update_heading",
            Op::AddComment { .. } => "add_comment",
            Op::ResolveComment { .. } => "resolve_comment",
            Op::RemoveAttribute { .. } => "remove_attribute",
            Op::AddNote {
                kind: NoteKind::Footnote,
                ..
            } => "add_footnote",
            Op::AddNote { .. } => "add_endnote",
            Op::AddChangeRequest { .. } => "add_change_request",
            Op::UpdateTableCell { .. } => "update_table_cell",
            Op::UpdateTableHeaderCell { .. } => "update_table_header_cell",
            Op::InsertTableRow { .. } => "insert_table_row",
            Op::DeleteTableRow { .. } => "delete_table_row",
            Op::InsertTableColumn { .. } => "insert_table_column",
            Op::DeleteTableColumn { .. } => "delete_table_column",
            Op::UpdateDatasetCell { .. } => "update_dataset_cell",
            Op::InsertDatasetRow { .. } => "insert_dataset_row",
            Op::DeleteDatasetRow { .. } => "delete_dataset_row",
            Op::InsertDatasetColumn { .. } => "insert_dataset_column",
            Op::DeleteDatasetColumn { .. } => "delete_dataset_column",
            Op::MoveBlock { .. } => "move_block",
            Op::ReplaceLines { .. } => super::replace_lines::REPLACE_LINES,
            Op::RemoveDocument { .. } => super::remove_document::REMOVE_DOCUMENT,
        }
    }

    /// The id the op's `baseHash` precondition applies to (as
    /// [`op_target`]): `rename_id.from`, `add_block.parent`, the `target`
    /// of the add-note/comment/change ops, else `id`; none for the
    /// extension ops.
    pub fn target(&self) -> Option<&str> {
        Some(match self {
            Op::RenameId { from, .. } => from,
            Op::AddBlock { parent, .. } => parent,
            Op::AddComment { target, .. }
            | Op::AddNote { target, .. }
            | Op::AddChangeRequest { target, .. } => target,
            Op::ReplaceLines { .. } | Op::RemoveDocument { .. } => return None,
            Op::ReplaceBlock { id, .. }
            | Op::DeleteBlock { id }
            | Op::UpdateAttribute { id, .. }
            | Op::ReplaceBody { id, .. }
            | Op::UpdateHeading { id, .. }
            | Op::ResolveComment { id, .. }
            | Op::RemoveAttribute { id, .. }
            | Op::UpdateTableCell { id, .. }
            | Op::UpdateTableHeaderCell { id, .. }
            | Op::InsertTableRow { id, .. }
            | Op::DeleteTableRow { id, .. }
            | Op::InsertTableColumn { id, .. }
            | Op::DeleteTableColumn { id, .. }
            | Op::UpdateDatasetCell { id, .. }
            | Op::InsertDatasetRow { id, .. }
            | Op::DeleteDatasetRow { id, .. }
            | Op::InsertDatasetColumn { id, .. }
            | Op::DeleteDatasetColumn { id, .. }
            | Op::MoveBlock { id, .. } => id,
        })
    }
}

impl TryFrom<&Value> for Op {
    type Error = OpShapeError;
    fn try_from(v: &Value) -> Result<Op, OpShapeError> {
        Op::parse(v)
    }
}

/// An op deserialises through [`Op::parse`], with its shape errors.
impl<'de> serde::Deserialize<'de> for Op {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Op, D::Error> {
        let v = Value::deserialize(d)?;
        Op::parse(&v).map_err(serde::de::Error::custom)
    }
}

/// One family of ops each: `Ok(None)` when `name` is not in the family, so
/// [`Op::parse`] tries the next.
impl Fields<'_> {
    /// The block ops: the five §3.1 core ops, replace_body, update_heading,
    /// remove_attribute, move_block and the extension op.
    fn block_op(&self, name: &str) -> Result<Option<Op>, OpShapeError> {
        Ok(Some(match name {
            "replace_block" => Op::ReplaceBlock {
                id: self.str("id")?,
                content: self.str("content")?,
            },
            "add_block" => Op::AddBlock {
                parent: self.str("parent")?,
                content: self.str("content")?,
                position: self.opt_index("position")?,
            },
            "delete_block" => Op::DeleteBlock {
                id: self.str("id")?,
            },
            "update_attribute" => {
                let value = match self.0.get("value") {
                    None => return Err(OpShapeError::Missing("value".into())),
                    Some(Value::Null) => None,
                    Some(Value::String(s)) => Some(AttrVal::Str(s.clone())),
                    Some(Value::Bool(b)) => Some(AttrVal::Bool(*b)),
                    Some(Value::Number(n)) => Some(AttrVal::Num(n.as_f64().unwrap_or(f64::NAN))),
                    Some(_) => {
                        return Err(OpShapeError::wrong(
                            "value",
                            "be a string, number, boolean or null",
                        ))
                    }
                };
                Op::UpdateAttribute {
                    id: self.str("id")?,
                    key: self.str("key")?,
                    value,
                }
            }
            "rename_id" => Op::RenameId {
                from: self.str("from")?,
                to: self.str("to")?,
            },
            "replace_body" => Op::ReplaceBody {
                id: self.str("id")?,
                content: self.str("content")?,
            },
            "update_heading" => Op::UpdateHeading {
                id: self.str("id")?,
                title: self.str("title")?,
            },
            "remove_attribute" => Op::RemoveAttribute {
                id: self.str("id")?,
                key: self.str("key")?,
            },
            "move_block" => Op::MoveBlock {
                id: self.str("id")?,
                parent: self.str("parent")?,
                position: self.opt_index("position")?,
            },
            super::replace_lines::REPLACE_LINES => Op::ReplaceLines {
                line: self.index("line")?,
                old: self.str("old")?,
                new: self.str("new")?,
            },
            super::remove_document::REMOVE_DOCUMENT => Op::RemoveDocument {
                sha256: self.opt_str("sha256")?,
            },
            _ => return Ok(None),
        }))
    }

    /// The ops that add or resolve annotation blocks: comments, notes and
    /// change requests.
    fn annotation_op(&self, name: &str) -> Result<Option<Op>, OpShapeError> {
        Ok(Some(match name {
            "add_comment" => Op::AddComment {
                id: self.str("id")?,
                target: self.str("target")?,
                content: self.str("content")?,
                author: self.opt_str("author")?,
                initials: self.opt_str("initials")?,
                date: self.opt_str("date")?,
                reply_to: self.opt_str("reply_to")?,
            },
            "resolve_comment" => Op::ResolveComment {
                id: self.str("id")?,
                resolved_by: self.opt_str("resolved_by")?,
                resolved_at: self.opt_str("resolved_at")?,
            },
            "add_footnote" | "add_endnote" => Op::AddNote {
                kind: if name == "add_footnote" {
                    NoteKind::Footnote
                } else {
                    NoteKind::Endnote
                },
                id: self.str("id")?,
                target: self.str("target")?,
                content: self.str("content")?,
                label: self.opt_str("label")?,
            },
            "add_change_request" => Op::AddChangeRequest {
                id: self.str("id")?,
                target: self.str("target")?,
                action: self.str("action")?,
                from: self.opt_str("from")?,
                to: self.opt_str("to")?,
                text: self.opt_str("text")?,
                content: self.opt_str("content")?,
                author: self.opt_str("author")?,
                date: self.opt_str("date")?,
            },
            _ => return Ok(None),
        }))
    }

    /// The six Markdown table ops.
    fn table_op(&self, name: &str) -> Result<Option<Op>, OpShapeError> {
        Ok(Some(match name {
            "update_table_cell" => Op::UpdateTableCell {
                id: self.str("id")?,
                row: self.index("row")?,
                column: self.column("column")?,
                value: self.str("value")?,
            },
            "update_table_header_cell" => Op::UpdateTableHeaderCell {
                id: self.str("id")?,
                column: self.column("column")?,
                value: self.str("value")?,
            },
            "insert_table_row" => Op::InsertTableRow {
                id: self.str("id")?,
                row: self.index("row")?,
                cells: self.cells("cells")?,
            },
            "delete_table_row" => Op::DeleteTableRow {
                id: self.str("id")?,
                row: self.index("row")?,
            },
            "insert_table_column" => Op::InsertTableColumn {
                id: self.str("id")?,
                column: self.column("column")?,
                header: self.opt_str("header")?,
                cells: self.cells("cells")?,
            },
            "delete_table_column" => Op::DeleteTableColumn {
                id: self.str("id")?,
                column: self.column("column")?,
            },
            _ => return Ok(None),
        }))
    }

    /// The five `::dataset` ops.
    fn dataset_op(&self, name: &str) -> Result<Option<Op>, OpShapeError> {
        Ok(Some(match name {
            "update_dataset_cell" => Op::UpdateDatasetCell {
                id: self.str("id")?,
                row: self.index("row")?,
                column: self.column("column")?,
                value: self.str("value")?,
            },
            "insert_dataset_row" => Op::InsertDatasetRow {
                id: self.str("id")?,
                row: self.index("row")?,
                cells: self.cells("cells")?,
            },
            "delete_dataset_row" => Op::DeleteDatasetRow {
                id: self.str("id")?,
                row: self.index("row")?,
            },
            "insert_dataset_column" => Op::InsertDatasetColumn {
                id: self.str("id")?,
                column: self.column("column")?,
                header: self.str("header")?,
                cells: self.cells("cells")?,
            },
            "delete_dataset_column" => Op::DeleteDatasetColumn {
                id: self.str("id")?,
                column: self.column("column")?,
            },
            _ => return Ok(None),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_and_rejects_shapes() {
        assert!(matches!(
            Op::parse(&json!({"op":"delete_block","id":"x"})),
            Ok(Op::DeleteBlock { .. })
        ));
        assert!(Op::parse(&json!({"op":"delete_block"})).is_err());
        assert!(Op::parse(&json!({"op":"explode","id":"x"})).is_err());
        assert!(
            Op::parse(&json!({"op":"insert_table_row","id":"t","row":"1","cells":[]})).is_err()
        );
        assert!(Op::parse(&json!([1])).is_err());
    }

    /// Every op's schema is `additionalProperties: false`: a field it does
    /// not take is refused, naming the field and, for a near miss or a
    /// common synonym, the field meant.
    #[test]
    fn unknown_fields_are_named_with_a_suggestion() {
        let msg = |v: Value| Op::parse(&v).unwrap_err().to_string();
        let m = msg(json!({"op":"add_block","parent":"p","content":"::a\n::","index":0}));
        assert!(
            m.contains("`index`") && m.contains("did you mean `position`"),
            "{m}"
        );
        let m = msg(json!({"op":"update_attribute","id":"c","key":"k","value":1,"bogus":1}));
        assert!(m.contains("`bogus`") && !m.contains("did you mean"), "{m}");
        let m = msg(json!({"op":"move_block","id":"a","parent":"p","postion":1}));
        assert!(m.contains("did you mean `position`"), "{m}");
        let m = msg(json!({"op":"delete_block","id":"a","basehash":"abcdef12"}));
        assert!(m.contains("did you mean `baseHash`"), "{m}");
        // A synonym for a field the op does not take suggests nothing.
        let m = msg(json!({"op":"delete_block","id":"a","index":1}));
        assert!(!m.contains("did you mean"), "{m}");
        // Every field of every op's published schema is accepted.
        let schema: Value = serde_json::from_str(
            &std::fs::read_to_string(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../../shared/reference/noma/schemas/patch-op.schema.json"
            ))
            .unwrap_or_else(|e| {
                assert!(
                    std::env::var_os("CI").is_none(),
                    "shared schema missing: {e}"
                );
                "{\"oneOf\":[]}".into()
            }),
        )
        .unwrap();
        for variant in schema["oneOf"].as_array().unwrap() {
            let name = variant["properties"]["op"]["const"].as_str().unwrap();
            let props: Vec<&str> = variant["properties"]
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .filter(|k| !matches!(*k, "op" | "baseHash"))
                .collect();
            let mut want = op_fields(name).unwrap().to_vec();
            let mut got = props.clone();
            want.sort_unstable();
            got.sort_unstable();
            assert_eq!(got, want, "{name}");
        }
        for name in OP_NAMES {
            assert!(op_fields(name).is_some(), "{name}");
        }
    }

    #[test]
    fn targets() {
        assert_eq!(
            op_target(&json!({"op":"rename_id","from":"a","to":"b"})),
            Some("a")
        );
        assert_eq!(
            op_target(&json!({"op":"add_block","parent":"p"})),
            Some("p")
        );
        assert_eq!(
            op_target(&json!({"op":"add_comment","id":"c","target":"t"})),
            Some("t")
        );
        assert_eq!(
            op_target(&json!({"op":"move_block","id":"m","parent":"p"})),
            Some("m")
        );
        assert_eq!(OP_NAMES.len(), 25);
    }

    /// The typed op answers what the JSON reads answer: every op of the
    /// catalogue and the extension ops, with every field it takes.
    #[test]
    fn typed_names_and_targets_match_the_json_reads() {
        let extensions = [super::super::REPLACE_LINES, super::super::REMOVE_DOCUMENT];
        for name in OP_NAMES.iter().chain(&extensions) {
            let mut v = json!({ "op": name });
            for field in op_fields(name).unwrap_or(&[]) {
                v[*field] = match *field {
                    "row" | "line" | "position" | "column" => json!(1),
                    "cells" => json!(["c"]),
                    _ => json!(format!("{field}-value")),
                };
            }
            let op = Op::parse(&v).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(op.name(), op_name(&v).unwrap());
            assert_eq!(op.target(), op_target(&v), "{name}");
            let back: Op = serde_json::from_value(v.clone()).unwrap();
            assert_eq!(back, op);
        }
        let err = serde_json::from_value::<Op>(json!({"op": "explode"})).unwrap_err();
        assert!(err.to_string().contains("unknown op `explode`"), "{err}");
    }
}

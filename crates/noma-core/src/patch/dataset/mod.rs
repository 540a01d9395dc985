//! The five `::dataset` ops (§1.5) on the two source shapes edited in place:
//! YAML bodies whose `rows:` are inline flow arrays (`- [legal, 3.4]`), and
//! `format=csv`/`format=tsv` bodies with one row per line (quoted cells
//! allowed). Only the touched row lines (and, for column ops, the YAML
//! `schema:` entry) change; comments and unrelated lines keep their bytes.
//! Values are coerced by the column's schema type like the reference
//! (`number` → number, `boolean` → boolean, untyped → number/boolean when it
//! looks like one); CSV/TSV cells have no types and are written as given
//! (the reference coerces `1`/`0`/`yes` and writes `true`/`false`), with a
//! first cell that would read as a fence or heading quoted. `format=json` bodies (pretty-printed record arrays, row
//! arrays, or `{columns, rows}` objects) are edited by `json`, which
//! shares the table-level edits (`table_edit`).
//!
//! Here: the table read from a body ([`Data`]), the dispatch, and the YAML
//! and CSV/TSV source edits; reading each body shape, cell values and the
//! table edits live in the files named after them.

mod cell_value;
mod delimited;
mod json;
mod table_edit;
mod yaml_flow;
mod yaml_rows;

use serde_json::{Map, Value};

use super::line_buf::LineBuf;
use super::line_text;
use super::op::{Column, Op};
use super::{fail, Ctx, OpResult, PatchErrorCode as E};
use crate::doc::Node;
use cell_value::{coerce, scalar_text};
use delimited::{read_delimited, serialize_delimited};
use table_edit::{delete_column, delete_row, insert_column, insert_row, update_cell};
use yaml_rows::{read_yaml, rows_line_as_block, rows_line_as_empty};

pub(super) struct RowLine {
    index: usize,
    indent: String,
    trailing: String,
}

/// A dataset as a table, plus (for YAML and delimited bodies) where its rows
/// live in the source.
pub(super) struct Data {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
    schema: Option<Map<String, Value>>,
    /// CSV/TSV: cells are text with no types to coerce to, so a patched
    /// value is written as given (the reference coerces `1`/`0`/`yes` to
    /// booleans and writes `true`/`false`, changing the data).
    text_cells: bool,
    lines: Vec<RowLine>,
    // YAML only:
    rows_line: usize,
    rows_key_indent: String,
    schema_line: Option<usize>,
    schema_key_indent: String,
    schema_lines: Vec<(String, usize, String)>,
}

impl Data {
    /// A schemaless table with no source mapping (JSON bodies map their own).
    pub(super) fn table(columns: Vec<String>, rows: Vec<Vec<Value>>) -> Data {
        Data {
            columns,
            rows,
            schema: None,
            text_cells: false,
            lines: Vec::new(),
            rows_line: 0,
            rows_key_indent: String::new(),
            schema_line: None,
            schema_key_indent: String::new(),
            schema_lines: Vec::new(),
        }
    }
    fn column_count(&self) -> usize {
        self.rows
            .iter()
            .map(Vec::len)
            .fold(self.columns.len(), usize::max)
    }
    fn schema_of(&self, column: usize) -> Option<&Value> {
        let name = self.columns.get(column)?;
        self.schema.as_ref()?.get(name)
    }
    /// `value` as stored in column `column`: coerced by its schema type
    /// (untyped: number/boolean when it looks like one), or kept as text in
    /// a CSV/TSV body.
    fn coerce_in(&self, value: &str, column: usize) -> Value {
        if self.text_cells {
            Value::String(value.to_string())
        } else {
            coerce(value, self.schema_of(column))
        }
    }
    fn schema_line(&self, key: &str) -> Option<&(String, usize, String)> {
        // A later duplicate key wins, like a Map.set.
        self.schema_lines.iter().rev().find(|(k, _, _)| k == key)
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Format {
    Yaml,
    Delimited(char),
    Json,
}

fn inferred_columns(width: usize) -> Vec<String> {
    (1..=width).map(|i| format!("Column {i}")).collect()
}

pub(super) fn columns_attr(node: &Node) -> Vec<String> {
    node.attrs()
        .and_then(|a| a.get_str("columns"))
        .map(|s| {
            s.split(|c: char| c == ',' || crate::doc::slug::is_js_space(c))
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// A dataset `format` the source-preserving ops do not know.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct UnknownFormat(String);

fn format_of(node: &Node) -> Result<Format, UnknownFormat> {
    let f = node
        .attrs()
        .and_then(|a| a.get_str("format"))
        .map(|s| line_text::js_trim(s).to_lowercase())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "yaml".into());
    match f.as_str() {
        "yaml" => Ok(Format::Yaml),
        "csv" => Ok(Format::Delimited(',')),
        "tsv" => Ok(Format::Delimited('\t')),
        "json" => Ok(Format::Json),
        other => Err(UnknownFormat(other.to_string())),
    }
}

fn row_text(format: Format, cells: &[Value]) -> OpResult<String> {
    Ok(match format {
        Format::Delimited(delim) => {
            let text: Vec<String> = cells.iter().map(scalar_text).collect();
            if text.iter().any(|c| line_text::has_newline(c)) {
                return fail(
                    E::InvalidContent,
                    "dataset cell value must be a single line",
                );
            }
            serialize_delimited(&text, delim)
        }
        Format::Yaml | Format::Json => format!("- {}", yaml_flow::flow_row(cells)),
    })
}

/// Line offset of body row `row` among the source row lines.
fn line_of(format: Format, row: usize) -> usize {
    match format {
        Format::Delimited(_) => row + 1,
        Format::Yaml | Format::Json => row,
    }
}

fn rewrite_all(lines: &mut LineBuf<'_>, d: &Data, format: Format) -> OpResult<()> {
    match format {
        Format::Delimited(delim) => {
            let mut all: Vec<Vec<String>> = vec![d.columns.clone()];
            all.extend(d.rows.iter().map(|r| r.iter().map(scalar_text).collect()));
            if all.iter().flatten().any(|c| line_text::has_newline(c)) {
                return fail(
                    E::InvalidContent,
                    "dataset cell value must be a single line",
                );
            }
            for (src, row) in d.lines.iter().zip(&all) {
                lines.set(
                    src.index,
                    format!("{}{}", src.indent, serialize_delimited(row, delim)),
                );
            }
        }
        Format::Yaml | Format::Json => {
            for (src, row) in d.lines.iter().zip(&d.rows) {
                lines.set(
                    src.index,
                    format!(
                        "{}- {}{}",
                        src.indent,
                        yaml_flow::flow_row(row),
                        src.trailing
                    ),
                );
            }
        }
    }
    Ok(())
}

/// Dispatches the dataset ops.
pub(crate) fn apply(ctx: &Ctx<'_>, op: &Op) -> OpResult<String> {
    let (id, name) = match op {
        Op::UpdateDatasetCell { id, .. } => (id, "update_dataset_cell"),
        Op::InsertDatasetRow { id, .. } => (id, "insert_dataset_row"),
        Op::DeleteDatasetRow { id, .. } => (id, "delete_dataset_row"),
        Op::InsertDatasetColumn { id, .. } => (id, "insert_dataset_column"),
        Op::DeleteDatasetColumn { id, .. } => (id, "delete_dataset_column"),
        _ => return fail(E::UnsupportedOp, "not a dataset op"),
    };
    let node = ctx.require(id, E::TargetMissing, "dataset")?;
    if !node.is_directive("dataset") {
        return fail(
            E::InvalidContent,
            format!("block \"{id}\" is not a dataset directive"),
        );
    }
    let format = match format_of(node) {
        Ok(f) => f,
        Err(other) => {
            return fail(
                E::InvalidContent,
                format!(
                    "source-preserving {name} does not support {other} datasets; use replace_body"
                ),
            )
        }
    };
    let mut lines = LineBuf::new(ctx.src);
    if format == Format::Json {
        json::apply(&mut lines, node, op)?;
        return Ok(lines.finish_with(ctx.prefix));
    }
    let data = match format {
        Format::Delimited(delim) => read_delimited(&lines, node, delim)?,
        Format::Yaml | Format::Json => read_yaml(&lines, node)?,
    };
    let mut edit = SourceEdit {
        lines,
        d: data,
        format,
    };
    match op {
        Op::UpdateDatasetCell {
            row, column, value, ..
        } => edit.update_dataset_cell(*row, column, value)?,
        Op::InsertDatasetRow { row, cells, .. } => {
            edit.insert_dataset_row(*row, cells, node.span.end as usize)?
        }
        Op::DeleteDatasetRow { row, .. } => edit.delete_dataset_row(*row)?,
        Op::InsertDatasetColumn {
            column,
            header,
            cells,
            ..
        } => edit.insert_dataset_column(column, header, cells)?,
        Op::DeleteDatasetColumn { column, .. } => edit.delete_dataset_column(column)?,
        _ => {}
    }
    Ok(edit.lines.finish_with(ctx.prefix))
}

/// A YAML or CSV/TSV dataset being edited: the table read from the body,
/// the source lines, and the body shape (which decides how rows are
/// written and where they sit).
struct SourceEdit<'s> {
    lines: LineBuf<'s>,
    d: Data,
    format: Format,
}

/// The five ops on the source: each edits the table, then writes only the
/// lines that change.
impl SourceEdit<'_> {
    /// Rewrites the one row line holding the updated cell.
    fn update_dataset_cell(&mut self, row: f64, column: &Column, value: &str) -> OpResult<()> {
        let (d, format) = (&mut self.d, self.format);
        let (r, _) = update_cell(d, row, column, value)?;
        let Some(src) = d.lines.get(line_of(format, r)) else {
            return fail(
                E::InvalidContent,
                format!("dataset row {r} is out of range"),
            );
        };
        let cells = d.rows.get(r).map_or(&[][..], Vec::as_slice);
        let text = row_text(format, cells)?;
        self.lines
            .set(src.index, format!("{}{}{}", src.indent, text, src.trailing));
        Ok(())
    }

    /// Writes the new row line (turning YAML `rows: []` into a block first).
    /// `end` is the line after the dataset's closing fence.
    fn insert_dataset_row(&mut self, row: f64, cells: &[String], end: usize) -> OpResult<()> {
        let r = insert_row(&mut self.d, row, cells)?;
        let (d, format) = (&self.d, self.format);
        let values = d.rows.get(r).map_or(&[][..], Vec::as_slice);
        let text = row_text(format, values)?;
        let (indent, at) = new_row_position(d, format, r, end);
        if format == Format::Yaml && d.lines.is_empty() {
            let rewritten = rows_line_as_block(self.lines.get(d.rows_line))?;
            self.lines.set(d.rows_line, rewritten);
        }
        self.lines.splice(at, 0, vec![format!("{indent}{text}")]);
        Ok(())
    }

    /// Removes the row's line (a YAML `rows:` left empty becomes `rows: []`).
    fn delete_dataset_row(&mut self, row: f64) -> OpResult<()> {
        let deleting_last = self.d.rows.len() == 1;
        let r = delete_row(&mut self.d, row)?;
        let (d, format) = (&self.d, self.format);
        let Some(src) = d.lines.get(line_of(format, r)) else {
            return fail(
                E::InvalidContent,
                format!("dataset row {r} is out of range"),
            );
        };
        let index = src.index;
        if format == Format::Yaml && deleting_last {
            let rewritten = rows_line_as_empty(self.lines.get(d.rows_line))?;
            self.lines.set(d.rows_line, rewritten);
        }
        self.lines.splice(index, 1, Vec::new());
        Ok(())
    }

    /// Rewrites every row and, for YAML, adds the column's `schema:` entry.
    fn insert_dataset_column(
        &mut self,
        column: &Column,
        header: &str,
        cells: &[String],
    ) -> OpResult<()> {
        let (c, schema_type) = insert_column(&mut self.d, column, header, cells)?;
        rewrite_all(&mut self.lines, &self.d, self.format)?;
        if self.format != Format::Yaml {
            return Ok(());
        }
        let d = &self.d;
        let Some(schema_line) = d.schema_line else {
            return fail(
                E::InvalidContent,
                "source-preserving insert_dataset_column requires a YAML schema block",
            );
        };
        let indent = d
            .schema_lines
            .first()
            .map_or_else(|| format!("{}  ", d.schema_key_indent), |l| l.2.clone());
        let at = match d.columns.get(c).and_then(|k| d.schema_line(k)) {
            Some(l) => l.1,
            None => match c
                .checked_sub(1)
                .and_then(|p| d.columns.get(p))
                .and_then(|k| d.schema_line(k))
            {
                Some(l) => l.1 + 1,
                None => schema_line + 1,
            },
        };
        self.lines
            .splice(at, 0, vec![format!("{indent}{header}: {schema_type}")]);
        Ok(())
    }

    /// Rewrites every row and, for YAML, removes the column's `schema:` entry.
    fn delete_dataset_column(&mut self, column: &Column) -> OpResult<()> {
        let header = delete_column(&mut self.d, column)?;
        rewrite_all(&mut self.lines, &self.d, self.format)?;
        if self.format == Format::Yaml {
            let Some(l) = self.d.schema_line(&header) else {
                return fail(
                    E::InvalidContent,
                    format!("source-preserving delete_dataset_column could not map YAML schema column \"{header}\""),
                );
            };
            self.lines.splice(l.1, 1, Vec::new());
        }
        Ok(())
    }
}

/// Where a new row `r` goes: (its indent, the line index to insert at).
/// It takes the indent of a neighbouring row (YAML with no rows: two
/// spaces under `rows:`), and goes before the row now at `r`, else after
/// the one before, else (CSV/TSV) before the closing fence, `end` being
/// the line after it, or (YAML) right under `rows:`.
fn new_row_position(d: &Data, format: Format, r: usize, end: usize) -> (String, usize) {
    match format {
        Format::Delimited(_) => {
            let off = line_of(format, r);
            let reference = d
                .lines
                .get(off)
                .or_else(|| d.lines.get(r))
                .or(d.lines.first());
            let indent = reference.map_or(String::new(), |l| l.indent.clone());
            let at = match d.lines.get(off) {
                Some(l) => l.index,
                None => match d.lines.get(r).or(d.lines.first()) {
                    Some(p) => p.index + 1,
                    None => end.saturating_sub(1),
                },
            };
            (indent, at)
        }
        Format::Yaml | Format::Json => {
            let reference = d
                .lines
                .get(r)
                .or_else(|| d.lines.get(r.saturating_sub(1)))
                .or(d.lines.first());
            let indent =
                reference.map_or_else(|| format!("{}  ", d.rows_key_indent), |l| l.indent.clone());
            let at = match (d.lines.get(r), d.lines.get(r.saturating_sub(1))) {
                (Some(l), _) => l.index,
                (None, Some(p)) => p.index + 1,
                (None, None) => d.rows_line + 1,
            };
            (indent, at)
        }
    }
}

/// The source lines of table row `r`, or the out-of-range refusal every
/// row op gives.
fn source_row<T>(rows: &[T], r: usize) -> OpResult<&T> {
    match rows.get(r) {
        Some(row) => Ok(row),
        None => fail(
            E::InvalidContent,
            format!("dataset row {r} is out of range"),
        ),
    }
}

#[cfg(test)]
mod tests {
    fn patch(src: &str, op: serde_json::Value) -> String {
        crate::patch::apply_one(src, &op).unwrap()
    }

    #[test]
    fn delimited_cells_stay_text() {
        let csv = "::dataset{id=\"d\" format=csv}\na,b\nx,1\ny,0\nz,yes\n::\n";
        let out = patch(
            csv,
            serde_json::json!({"op": "insert_dataset_column", "id": "d", "column": 2,
                "header": "c", "cells": ["1", "0", "yes"]}),
        );
        assert_eq!(
            out,
            "::dataset{id=\"d\" format=csv}\na,b,c\nx,1,1\ny,0,0\nz,yes,yes\n::\n"
        );
        let out = patch(
            csv,
            serde_json::json!({"op": "update_dataset_cell", "id": "d", "row": 1,
                "column": "b", "value": "no"}),
        );
        assert_eq!(
            out,
            "::dataset{id=\"d\" format=csv}\na,b\nx,1\ny,no\nz,yes\n::\n"
        );
        let tsv = "::dataset{id=\"d\" format=tsv}\na\tb\nx\t1\n::\n";
        let out = patch(
            tsv,
            serde_json::json!({"op": "insert_dataset_row", "id": "d", "row": 1, "cells": ["y", "1"]}),
        );
        assert_eq!(
            out,
            "::dataset{id=\"d\" format=tsv}\na\tb\nx\t1\ny\t1\n::\n"
        );
    }

    #[test]
    fn short_column_cells_pad_with_empty_strings() {
        let yaml = "::dataset{id=\"d\"}\nschema:\n  a: string\nrows:\n  - [x]\n  - [y]\n::\n";
        let out = patch(
            yaml,
            serde_json::json!({"op": "insert_dataset_column", "id": "d", "column": 1,
                "header": "n", "cells": ["3"]}),
        );
        assert!(out.contains("  - ['y', '']\n"), "{out}"); // `y` is a YAML 1.1 boolean
        assert!(!out.contains("null"), "{out}");
    }

    #[test]
    fn deep_and_big_yaml_cells_survive_a_row_rewrite() {
        // Rows load through doc::yaml (values nested up to the parser's 128
        // levels convert in full; integers above i64::MAX stay exact). The
        // row is written back whole: a cell nested 100 deep is kept (the
        // old 64-level limit wrote it as `null`), and 2^64-1 is printed as
        // JavaScript prints that number, as before.
        let deep = format!("{}x{}", "[".repeat(100), "]".repeat(100));
        let src = format!(
            "::dataset{{id=\"d\"}}\nschema:\n  a: string\n  b: string\nrows:\n  - [p, {deep}, 18446744073709551615]\n::\n"
        );
        let out = patch(
            &src,
            serde_json::json!({"op": "update_dataset_cell", "id": "d", "row": 0,
                "column": "a", "value": "q"}),
        );
        assert_eq!(
            out,
            format!("::dataset{{id=\"d\"}}\nschema:\n  a: string\n  b: string\nrows:\n  - [q, {deep}, 18446744073709552000]\n::\n")
        );
    }

    #[test]
    fn a_first_cell_that_looks_like_a_fence_is_quoted() {
        let csv = "::dataset{id=\"d\" format=csv}\na,b\nx,1\n::\n\n## After\n";
        for value in ["```", "~~~js", "::", "# h"] {
            let out = patch(
                csv,
                serde_json::json!({"op": "update_dataset_cell", "id": "d", "row": 0,
                    "column": 0, "value": value}),
            );
            assert!(out.contains(&format!("\n\"{value}\",1\n")), "{out}");
            let doc = crate::doc::parse(&out);
            assert!(doc.issues.is_empty(), "{out}");
            assert!(doc.find("after").is_some(), "{out}");
        }
    }
}

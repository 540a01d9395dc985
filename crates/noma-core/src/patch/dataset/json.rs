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

use memchr::memmem;
use serde_json::{Map, Value};

use super::{self as dataset, source_row, Data};
use crate::doc::slug::is_js_space;
use crate::doc::Node;
use crate::patch::line_buf::LineBuf;
use crate::patch::line_text;
use crate::patch::op::{Column, Op};
use crate::patch::{fail, OpResult, PatchErrorCode as E};

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

// ---------------------------------------------------------------------------
// Reading the body as a table
// ---------------------------------------------------------------------------

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
                Ok((
                    Data::table(dataset::columns_attr(node), rows),
                    Shape::Arrays,
                ))
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
                _ => dataset::columns_attr(node),
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

// ---------------------------------------------------------------------------
// Record arrays
// ---------------------------------------------------------------------------

/// One record's source lines.
struct RecordRow {
    /// (column, line) for each column whose `"key":` appears in the record.
    props: Vec<(String, usize)>,
    start: usize,
    end: usize,
    indent: String,
    prop_indent: String,
    multiline: bool,
}

impl RecordRow {
    fn line_of(&self, key: &str) -> Option<usize> {
        self.props.iter().find(|(k, _)| k == key).map(|(_, l)| *l)
    }
}

struct RecordRows {
    rows: Vec<RecordRow>,
    rows_end: usize,
}

/// The record-array ops that touch one record: each edits the table, then
/// rewrites only that record's lines.
impl RecordRows {
    /// `update_dataset_cell`: rewrites the one property line holding the cell.
    fn update_cell(
        &self,
        lines: &mut LineBuf<'_>,
        d: &mut Data,
        row: f64,
        column: &Column,
        value: &str,
    ) -> OpResult<()> {
        let (r, c) = dataset::update_cell(d, row, column, value)?;
        let sr = source_row(&self.rows, r)?;
        let Some(key) = d.columns.get(c) else {
            return fail(
                E::InvalidContent,
                format!("dataset column {c} is out of range"),
            );
        };
        let Some(at) = sr.line_of(key) else {
            return fail(
                E::InvalidContent,
                format!(
                    "source-preserving update_dataset_cell could not map JSON property \"{key}\""
                ),
            );
        };
        let cell = d.rows.get(r).and_then(|cells| cells.get(c));
        let next = rewrite_property_line(lines.get(at), key, cell.unwrap_or(&Value::Null))?;
        lines.set(at, next);
        Ok(())
    }

    /// `insert_dataset_row`: writes the new record in its neighbour's layout,
    /// keeping the commas right.
    fn insert_row(
        &self,
        lines: &mut LineBuf<'_>,
        d: &mut Data,
        row: f64,
        cells: &[String],
    ) -> OpResult<()> {
        let n = self.rows.len();
        let r = dataset::insert_row(d, row, cells)?;
        let at = match (self.rows.get(r), self.rows.get(r.saturating_sub(1))) {
            (Some(x), _) => x.start,
            (None, Some(p)) => p.end + 1,
            (None, None) => self.rows_end,
        };
        if r >= n {
            if let Some(last) = self.rows.last() {
                let fixed = ensure_comma(lines.get(last.end));
                lines.set(last.end, fixed);
            }
        }
        let reference = self
            .rows
            .get(r)
            .or_else(|| self.rows.get(r.saturating_sub(1)))
            .or(self.rows.first());
        let Some(reference) = reference else {
            return fail(
                E::InvalidContent,
                "source-preserving dataset row edits require mappable JSON record rows",
            );
        };
        let trailing = if r < n { "," } else { "" };
        let values = d.rows.get(r).map_or(&[][..], Vec::as_slice);
        lines.splice(
            at,
            0,
            serialize_record(&d.columns, values, reference, trailing),
        );
        Ok(())
    }
}

/// The record-array ops: maps every record to its lines, then edits.
fn records(lines: &mut LineBuf<'_>, scope: Scope, d: &mut Data, op: &Op) -> OpResult<()> {
    let src = record_rows(lines, scope, &d.columns)?;
    if src.rows.len() != d.rows.len() {
        return fail(
            E::InvalidContent,
            "source-preserving dataset edits could not map every JSON record row",
        );
    }
    let n = src.rows.len();
    match op {
        Op::UpdateDatasetCell {
            row, column, value, ..
        } => src.update_cell(lines, d, *row, column, value)?,
        Op::InsertDatasetRow { row, cells, .. } => src.insert_row(lines, d, *row, cells)?,
        Op::DeleteDatasetRow { row, .. } => {
            let deleting_last = d.rows.len().checked_sub(1).map(|l| l as f64) == Some(*row);
            let r = dataset::delete_row(d, *row)?;
            let Some(sr) = src.rows.get(r) else {
                return fail(
                    E::InvalidContent,
                    format!("dataset row {r} is out of range"),
                );
            };
            lines.splice(sr.start, sr.end - sr.start + 1, Vec::new());
            if deleting_last && n > 1 {
                if let Some(prev) = r.checked_sub(1).and_then(|p| src.rows.get(p)) {
                    let fixed = remove_comma(lines.get(prev.end)).to_string();
                    lines.set(prev.end, fixed);
                }
            }
        }
        Op::InsertDatasetColumn {
            column,
            header,
            cells,
            ..
        } => {
            dataset::insert_column(d, column, header, cells)?;
            rewrite_records(lines, &src, d);
        }
        Op::DeleteDatasetColumn { column, .. } => {
            dataset::delete_column(d, column)?;
            rewrite_records(lines, &src, d);
        }
        _ => {}
    }
    Ok(())
}

/// Re-serializes every record in its own layout, last first so earlier
/// line numbers stay valid.
fn rewrite_records(lines: &mut LineBuf<'_>, src: &RecordRows, d: &Data) {
    for (sr, row) in src.rows.iter().zip(&d.rows).rev() {
        let trailing = if trim_end(lines.get(sr.end)).ends_with("},") {
            ","
        } else {
            ""
        };
        lines.splice(
            sr.start,
            sr.end - sr.start + 1,
            serialize_record(&d.columns, row, sr, trailing),
        );
    }
}

/// A record in `reference`'s layout: `{ "k": v, ... }` on one line, or one
/// property per line at the reference's property indent.
fn serialize_record(
    columns: &[String],
    cells: &[Value],
    reference: &RecordRow,
    trailing: &str,
) -> Vec<String> {
    let pairs: Vec<String> = columns
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let mut s = json_string(k);
            s.push_str(": ");
            s.push_str(&js_json(cells.get(i).unwrap_or(&Value::Null)));
            s
        })
        .collect();
    if !reference.multiline {
        return vec![format!(
            "{}{{ {} }}{trailing}",
            reference.indent,
            pairs.join(", ")
        )];
    }
    let mut out = Vec::with_capacity(pairs.len() + 2);
    out.push(format!("{}{{", reference.indent));
    let last = pairs.len().saturating_sub(1);
    for (i, p) in pairs.iter().enumerate() {
        let comma = if i == last { "" } else { "," };
        out.push(format!("{}{p}{comma}", reference.prop_indent));
    }
    out.push(format!("{}}}{trailing}", reference.indent));
    out
}

/// The record array: the first line that is exactly `[`, closed by the
/// first later line that is exactly `]`.
fn record_bounds(lines: &LineBuf<'_>, scope: Scope) -> OpResult<(usize, usize)> {
    for i in scope.start..scope.end {
        if line_text::js_trim(lines.get(i)) != "[" {
            continue;
        }
        for close in i + 1..scope.end {
            if line_text::js_trim(lines.get(close)) == "]" {
                return Ok((i, close));
            }
        }
        break;
    }
    fail(
        E::InvalidContent,
        "source-preserving dataset row edits require a mappable JSON record array",
    )
}

fn record_rows(lines: &LineBuf<'_>, scope: Scope, columns: &[String]) -> OpResult<RecordRows> {
    let (rows_start, rows_end) = record_bounds(lines, scope)?;
    let keys: Vec<String> = columns.iter().map(|c| json_string(c)).collect();
    let mut budget = scope.budget;
    let mut spend = |n: usize| -> OpResult<()> {
        budget = budget.checked_sub(n).map_or_else(
            || {
                fail(
                    E::InvalidContent,
                    "JSON dataset body is too irregular to edit in place; use replace_body",
                )
            },
            Ok,
        )?;
        Ok(())
    };
    // next_close[j - rows_start]: the first line at or after j that starts
    // with `}` (a multi-line record's last line), computed once.
    let mut next_close = vec![None; rows_end.saturating_sub(rows_start)];
    let mut seen = None;
    for j in (rows_start..rows_end).rev() {
        if line_text::js_trim(lines.get(j)).starts_with('}') {
            seen = Some(j);
        }
        if let Some(slot) = next_close.get_mut(j - rows_start) {
            *slot = seen;
        }
    }
    let mut out = Vec::new();
    let mut i = rows_start + 1;
    while i < rows_end {
        let line = lines.get(i);
        let first = line_text::js_trim(line);
        if !first.starts_with('{') {
            i += 1;
            continue;
        }
        let block_end = if first.contains('}') && remove_comma(first).ends_with('}') {
            Some(i)
        } else {
            next_close.get(i - rows_start).copied().flatten()
        };
        let Some(block_end) = block_end else {
            i += 1;
            continue;
        };
        let block: Vec<&str> = (i..=block_end).map(|j| lines.get(j)).collect();
        let text = block.join("\n");
        spend(text.len())?;
        if !matches!(
            serde_json::from_str::<Value>(remove_comma(&text)),
            Ok(Value::Object(_))
        ) {
            i += 1;
            continue;
        }
        spend(text.len().saturating_mul(keys.len()))?;
        if let Some(row) = record_row(&block, i, columns, &keys) {
            out.push(row);
        }
        i = block_end + 1;
    }
    if out.is_empty() {
        return fail(
            E::InvalidContent,
            "source-preserving dataset edits require mappable JSON record rows",
        );
    }
    Ok(RecordRows {
        rows: out,
        rows_end,
    })
}

/// One record's source mapping: the line of each column's `"key":` (the
/// last, when a key repeats), its indents and layout; `None` when no column
/// appears in it. `block` is its lines, the first at index `start`.
fn record_row(
    block: &[&str],
    start: usize,
    columns: &[String],
    keys: &[String],
) -> Option<RecordRow> {
    let mut props: Vec<(String, usize)> = Vec::new();
    for (offset, l) in block.iter().enumerate() {
        for (column, key) in columns.iter().zip(keys) {
            if has_property(l, key) {
                match props.iter_mut().find(|(k, _)| k == column) {
                    Some(slot) => slot.1 = start + offset,
                    None => props.push((column.clone(), start + offset)),
                }
            }
        }
    }
    if props.is_empty() {
        return None;
    }
    let indent = line_text::indent_of(block[0]).to_string();
    let prop_indent = block
        .get(1..block.len().saturating_sub(1))
        .unwrap_or(&[])
        .iter()
        .find(|l| has_any_property(l))
        .map_or_else(
            || format!("{indent}  "),
            |l| line_text::indent_of(l).to_string(),
        );
    Some(RecordRow {
        props,
        start,
        end: start + block.len() - 1,
        indent,
        prop_indent,
        multiline: block.len() > 1,
    })
}

/// Whether `"key"\s*:` occurs in `line` (`quoted` is the JSON-quoted key).
fn has_property(line: &str, quoted: &str) -> bool {
    memmem::find_iter(line.as_bytes(), quoted.as_bytes())
        .any(|p| skip_space(&line[p + quoted.len()..]).starts_with(':'))
}

/// Whether any JSON string in `line` is followed by `:`.
fn has_any_property(line: &str) -> bool {
    let b = line.as_bytes();
    let mut p = 0;
    while let Some(off) = memchr::memchr(b'"', &b[p..]) {
        let open = p + off;
        if let Some(close) = string_end(line, open) {
            if skip_space(&line[close..]).starts_with(':') {
                return true;
            }
        }
        p = open + 1;
    }
    false
}

/// The end (exclusive) of the JSON string literal opening at `open`, per
/// `"(?:\\.|[^"\\])*"`.
fn string_end(line: &str, open: usize) -> Option<usize> {
    let mut chars = line.get(open + 1..)?.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some(open + 1 + i + 1),
            '\\' => match chars.next() {
                Some((_, '\u{2028}' | '\u{2029}')) | None => return None,
                Some(_) => {}
            },
            _ => {}
        }
    }
    None
}

/// Replaces the value of the first `"key": value` in `line` whose value is
/// a JSON scalar followed by `,`, `}` or the end of the line.
fn rewrite_property_line(line: &str, key: &str, value: &Value) -> OpResult<String> {
    let quoted = json_string(key);
    let literal = js_json(value);
    for p in memmem::find_iter(line.as_bytes(), quoted.as_bytes()) {
        let after_key = p + quoted.len();
        let rest = skip_space(&line[after_key..]);
        let Some(after_colon) = rest.strip_prefix(':') else {
            continue;
        };
        let value_text = skip_space(after_colon);
        let value_start = line.len() - value_text.len();
        let Some(len) = scalar_len(value_text) else {
            continue;
        };
        let tail = skip_space(&value_text[len..]);
        if !(tail.is_empty() || tail.starts_with(',') || tail.starts_with('}')) {
            continue;
        }
        let next = format!(
            "{}{literal}{}",
            &line[..value_start],
            &line[value_start + len..]
        );
        if next == line {
            // Like the reference: an edit that leaves the line unchanged is
            // reported as unmappable.
            break;
        }
        return Ok(next);
    }
    fail(
        E::InvalidContent,
        format!("source-preserving update_dataset_cell could not rewrite JSON property \"{key}\""),
    )
}

/// Length of a leading JSON scalar: a string, `true`/`false`/`null`, or
/// `-?\d+(\.\d+)?([eE][+-]?\d+)?`.
fn scalar_len(s: &str) -> Option<usize> {
    if s.starts_with('"') {
        return string_end(s, 0);
    }
    for word in ["true", "false", "null"] {
        if s.starts_with(word) {
            return Some(word.len());
        }
    }
    let b = s.as_bytes();
    let digits = |from: usize| {
        b.get(from..)
            .map_or(0, |r| r.iter().take_while(|c| c.is_ascii_digit()).count())
    };
    let mut i = usize::from(b.first() == Some(&b'-'));
    let int = digits(i);
    if int == 0 {
        return None;
    }
    i += int;
    if b.get(i) == Some(&b'.') && digits(i + 1) > 0 {
        i += 1 + digits(i + 1);
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let sign = usize::from(matches!(b.get(i + 1), Some(b'+' | b'-')));
        let exp = digits(i + 1 + sign);
        if exp > 0 {
            i += 1 + sign + exp;
        }
    }
    Some(i)
}

// ---------------------------------------------------------------------------
// Row arrays and {columns, rows} objects
// ---------------------------------------------------------------------------

/// A one-line JSON member: `indent`, `"key": ` prefix, and what follows the
/// value (`,` or nothing).
struct MemberLine {
    index: usize,
    indent: String,
    prefix: String,
    trailing: String,
}

struct ArrayBounds {
    rows_start: usize,
    rows_end: usize,
    row_indent: String,
    inline_empty: Option<MemberLine>,
    columns_line: Option<MemberLine>,
}

struct RowLine {
    index: usize,
    indent: String,
    trailing: &'static str,
}

/// The row-array ops: maps every row to its line, then edits.
fn arrays(
    lines: &mut LineBuf<'_>,
    scope: Scope,
    d: &mut Data,
    shape: Shape,
    op: &Op,
) -> OpResult<()> {
    let bounds = array_bounds(lines, scope, shape == Shape::Object)?;
    let src = array_rows(lines, &bounds);
    if src.len() != d.rows.len() {
        return fail(
            E::InvalidContent,
            "source-preserving dataset edits could not map every JSON row array",
        );
    }
    let row_indent = src
        .first()
        .map_or_else(|| bounds.row_indent.clone(), |l| l.indent.clone());
    let rows = ArrayRows {
        bounds,
        src,
        row_indent,
    };
    match op {
        Op::UpdateDatasetCell {
            row, column, value, ..
        } => rows.update_cell(lines, d, *row, column, value),
        Op::InsertDatasetRow { row, cells, .. } => rows.insert_row(lines, d, *row, cells),
        Op::DeleteDatasetRow { row, .. } => rows.delete_row(lines, d, *row),
        Op::InsertDatasetColumn { .. } | Op::DeleteDatasetColumn { .. } => {
            if shape != Shape::Object {
                return fail(
                    E::InvalidContent,
                    "source-preserving dataset column edits require JSON columns in the dataset body",
                );
            }
            rows.edit_columns(lines, d, op)
        }
        _ => Ok(()),
    }
}

/// A row array as found in the source: its bounds, each row's line, and
/// the indent a new row gets.
struct ArrayRows {
    bounds: ArrayBounds,
    src: Vec<RowLine>,
    row_indent: String,
}

/// The dataset ops on a row array: each edits the table, then rewrites
/// only the row lines (and the columns line) that change.
impl ArrayRows {
    /// `update_dataset_cell`: rewrites the row's line.
    fn update_cell(
        &self,
        lines: &mut LineBuf<'_>,
        d: &mut Data,
        row: f64,
        column: &Column,
        value: &str,
    ) -> OpResult<()> {
        let (r, _) = dataset::update_cell(d, row, column, value)?;
        let sl = source_row(&self.src, r)?;
        let cells = d.rows.get(r).map_or(&[][..], Vec::as_slice);
        lines.set(
            sl.index,
            format!("{}{}{}", sl.indent, js_json_array(cells), sl.trailing),
        );
        Ok(())
    }

    /// `insert_dataset_row`: writes the new row line (opening an inline
    /// `"rows": []` into a block first), keeping the commas right.
    fn insert_row(
        &self,
        lines: &mut LineBuf<'_>,
        d: &mut Data,
        row: f64,
        cells: &[String],
    ) -> OpResult<()> {
        let (src, row_indent, n) = (&self.src, &self.row_indent, self.src.len());
        let r = dataset::insert_row(d, row, cells)?;
        let literal = js_json_array(d.rows.get(r).map_or(&[][..], Vec::as_slice));
        if let Some(e) = &self.bounds.inline_empty {
            lines.splice(
                e.index,
                1,
                vec![
                    format!("{}{}[", e.indent, e.prefix),
                    format!("{row_indent}{literal}"),
                    format!("{}]{}", e.indent, e.trailing),
                ],
            );
            return Ok(());
        }
        let at = match (src.get(r), src.get(r.saturating_sub(1))) {
            (Some(x), _) => x.index,
            (None, Some(p)) => p.index + 1,
            (None, None) => self.bounds.rows_end,
        };
        if r >= n {
            if let Some(last) = src.last() {
                let fixed = ensure_comma(lines.get(last.index));
                lines.set(last.index, fixed);
            }
        }
        let trailing = if r < n { "," } else { "" };
        lines.splice(at, 0, vec![format!("{row_indent}{literal}{trailing}")]);
        Ok(())
    }

    /// `delete_dataset_row`: removes the row's line (and the comma a new
    /// last row no longer needs).
    fn delete_row(&self, lines: &mut LineBuf<'_>, d: &mut Data, row: f64) -> OpResult<()> {
        let (src, n) = (&self.src, self.src.len());
        let deleting_last = d.rows.len().checked_sub(1).map(|l| l as f64) == Some(row);
        let r = dataset::delete_row(d, row)?;
        let Some(sl) = src.get(r) else {
            return fail(
                E::InvalidContent,
                format!("dataset row {r} is out of range"),
            );
        };
        lines.splice(sl.index, 1, Vec::new());
        if deleting_last && n > 1 {
            if let Some(prev) = r.checked_sub(1).and_then(|p| src.get(p)) {
                let at = if prev.index > sl.index {
                    prev.index - 1
                } else {
                    prev.index
                };
                let fixed = remove_comma(lines.get(at)).to_string();
                lines.set(at, fixed);
            }
        }
        Ok(())
    }

    /// `insert_dataset_column` / `delete_dataset_column` on a
    /// `{columns, rows}` object: rewrites the columns line and every row.
    fn edit_columns(&self, lines: &mut LineBuf<'_>, d: &mut Data, op: &Op) -> OpResult<()> {
        match op {
            Op::InsertDatasetColumn {
                column,
                header,
                cells,
                ..
            } => {
                dataset::insert_column(d, column, header, cells)?;
            }
            Op::DeleteDatasetColumn { column, .. } => {
                dataset::delete_column(d, column)?;
            }
            _ => {}
        }
        let Some(cl) = &self.bounds.columns_line else {
            return fail(
                E::InvalidContent,
                "source-preserving dataset column edits require a one-line JSON columns array",
            );
        };
        let names: Vec<Value> = d.columns.iter().cloned().map(Value::String).collect();
        lines.set(
            cl.index,
            format!(
                "{}{}{}{}",
                cl.indent,
                cl.prefix,
                js_json_array(&names),
                cl.trailing
            ),
        );
        for (sl, row) in self.src.iter().zip(&d.rows) {
            lines.set(
                sl.index,
                format!("{}{}{}", sl.indent, js_json_array(row), sl.trailing),
            );
        }
        Ok(())
    }
}

/// Finds the rows array: a line that is exactly `[` (row arrays) or
/// `"rows": [` (objects; `"rows": []` is an empty inline array), closed by
/// the first later `]` / `],` line. For objects, the last one-line
/// `"columns": [...]` member before the rows is remembered.
fn array_bounds(lines: &LineBuf<'_>, scope: Scope, object: bool) -> OpResult<ArrayBounds> {
    let mut columns_line = None;
    for i in scope.start..scope.end {
        let line = lines.get(i);
        let trimmed = line_text::js_trim(line);
        let indent = line_text::indent_of(line);
        if object {
            if let Some((prefix, value, trailing)) = member_line(line, "columns") {
                if matches!(serde_json::from_str::<Value>(value), Ok(Value::Array(_))) {
                    columns_line = Some(MemberLine {
                        index: i,
                        indent: indent.to_string(),
                        prefix: prefix.to_string(),
                        trailing: trailing.to_string(),
                    });
                }
            }
            if let Some((prefix, value, trailing)) = member_line(line, "rows") {
                if value == "[]" {
                    return Ok(ArrayBounds {
                        rows_start: i,
                        rows_end: i,
                        row_indent: format!("{indent}  "),
                        inline_empty: Some(MemberLine {
                            index: i,
                            indent: indent.to_string(),
                            prefix: prefix.to_string(),
                            trailing: trailing.trim_start_matches(is_js_space).to_string(),
                        }),
                        columns_line,
                    });
                }
            }
            let opens_rows = trimmed
                .strip_prefix("\"rows\"")
                .map(skip_space)
                .and_then(|r| r.strip_prefix(':'))
                .map(skip_space)
                .and_then(|r| r.strip_prefix('['))
                .is_some_and(|r| r.trim_matches(is_js_space).is_empty());
            if !opens_rows {
                continue;
            }
        } else if trimmed != "[" {
            continue;
        }
        for close in i + 1..scope.end {
            let t = line_text::js_trim(lines.get(close));
            let closes = t
                .strip_prefix(']')
                .map(skip_space)
                .is_some_and(|r| r.is_empty() || r == ",");
            if closes {
                return Ok(ArrayBounds {
                    rows_start: i,
                    rows_end: close,
                    row_indent: format!("{indent}  "),
                    inline_empty: None,
                    columns_line,
                });
            }
        }
        break;
    }
    fail(
        E::InvalidContent,
        "source-preserving dataset row edits require a mappable JSON row array",
    )
}

/// Splits `^\s*("key"\s*:\s*)(\[.*\])(\s*,?)\s*$` into (prefix, array text,
/// trailing); the array text runs to the line's last `]`.
fn member_line<'l>(line: &'l str, key: &str) -> Option<(&'l str, &'l str, &'l str)> {
    let rest = &line[line_text::indent_of(line).len()..];
    let after_key = rest
        .strip_prefix('"')?
        .strip_prefix(key)?
        .strip_prefix('"')?;
    let value = skip_space(skip_space(after_key).strip_prefix(':')?);
    if !value.starts_with('[') {
        return None;
    }
    let close = value.rfind(']')?;
    let array = &value[..=close];
    if array.contains(['\u{2028}', '\u{2029}']) {
        return None;
    }
    let tail = &value[close + 1..];
    let t1 = skip_space(tail);
    let (comma, t2) = match t1.strip_prefix(',') {
        Some(r) => (true, r),
        None => (false, t1),
    };
    if !skip_space(t2).is_empty() {
        return None;
    }
    let trailing = if comma {
        &tail[..tail.len() - t2.len()]
    } else {
        tail
    };
    let prefix = &rest[..rest.len() - value.len()];
    Some((prefix, array, trailing))
}

/// The one-line row arrays between the bounds (`["a", 1],`).
fn array_rows(lines: &LineBuf<'_>, b: &ArrayBounds) -> Vec<RowLine> {
    let mut out = Vec::new();
    for i in b.rows_start + 1..b.rows_end {
        let line = lines.get(i);
        let trimmed = line_text::js_trim(line);
        if !trimmed.starts_with('[') || trimmed == "[" || trimmed == "]," {
            continue;
        }
        let (candidate, trailing) = match trimmed.strip_suffix(',') {
            Some(c) => (trim_end(c), ","),
            None => (trimmed, ""),
        };
        if matches!(
            serde_json::from_str::<Value>(candidate),
            Ok(Value::Array(_))
        ) {
            out.push(RowLine {
                index: i,
                indent: line_text::indent_of(line).to_string(),
                trailing,
            });
        }
    }
    out
}

// ---------------------------------------------------------------------------
// Small text helpers
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// JavaScript value semantics
// ---------------------------------------------------------------------------

/// An object's keys in JavaScript property order: array-index keys
/// ascending, then the rest in insertion order.
fn js_keys(m: &Map<String, Value>) -> Vec<&String> {
    let mut index_keys: Vec<(u32, &String)> = m
        .keys()
        .filter_map(|k| array_index(k).map(|i| (i, k)))
        .collect();
    index_keys.sort_unstable_by_key(|(i, _)| *i);
    index_keys
        .into_iter()
        .map(|(_, k)| k)
        .chain(m.keys().filter(|k| array_index(k).is_none()))
        .collect()
}

/// A canonical array index (`0` to `4294967294`).
fn array_index(k: &str) -> Option<u32> {
    if k.is_empty() || (k.len() > 1 && k.starts_with('0')) || !k.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    k.parse::<u32>().ok().filter(|&i| i < u32::MAX)
}

/// `JSON.stringify` of a string.
fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

/// `JSON.stringify(value)` (compact).
pub(super) fn js_json(v: &Value) -> String {
    let mut out = String::new();
    write_js_json(v, &mut out);
    out
}

fn js_json_array(cells: &[Value]) -> String {
    let mut out = String::from("[");
    for (i, c) in cells.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_js_json(c, &mut out);
    }
    out.push(']');
    out
}

// Recursion depth is bounded by serde_json's parse depth limit (128) for
// parsed values; coerced cells are scalars.
fn write_js_json(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&super::yaml_flow::number_text(n)),
        Value::String(s) => out.push_str(&json_string(s)),
        Value::Array(items) => out.push_str(&js_json_array(items)),
        Value::Object(m) => {
            out.push('{');
            for (i, k) in js_keys(m).into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&json_string(k));
                out.push(':');
                if let Some(val) = m.get(k) {
                    write_js_json(val, out);
                }
            }
            out.push('}');
        }
    }
}

/// JavaScript's `String(value)` for a parsed JSON value.
fn js_string(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Array(items) => items
            .iter()
            .map(|x| match x {
                Value::Null => String::new(),
                other => js_string(other),
            })
            .collect::<Vec<_>>()
            .join(","),
        Value::Object(_) => "[object Object]".into(),
        other => dataset::scalar_text(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn js_semantics() {
        let v: Value =
            serde_json::from_str(r#"{"b":1,"2":2,"a":[1.5,"x\n",null],"1":true}"#).unwrap();
        assert_eq!(
            js_json(&v),
            r#"{"1":true,"2":2,"b":1,"a":[1.5,"x\n",null]}"#
        );
        assert_eq!(js_string(&json!([1, null, "a"])), "1,,a");
        assert_eq!(
            js_json(&json!(12345678901234567890u64)),
            "12345678901234567000"
        );
        assert_eq!(array_index("01"), None);
        assert_eq!(array_index("7"), Some(7));
    }

    #[test]
    fn property_rewrites() {
        let line = r#"  { "vertical": "finance", "score": 24 },"#;
        assert_eq!(
            rewrite_property_line(line, "score", &json!(25)).unwrap(),
            r#"  { "vertical": "finance", "score": 25 },"#
        );
        assert_eq!(
            rewrite_property_line(r#"    "v": "a\"b","#, "v", &json!("c")).unwrap(),
            r#"    "v": "c","#
        );
        // Nested values are not rewritten in place; neither are no-ops.
        assert!(rewrite_property_line(r#""v": [1],"#, "v", &json!(2)).is_err());
        assert!(rewrite_property_line(r#""v": 2"#, "v", &json!(2)).is_err());
        assert!(has_property(r#"  "score" : 1"#, "\"score\""));
        assert!(!has_property(r#"  "scores": 1"#, "\"score\""));
        assert!(has_any_property(r#"  "a\"b": 1"#));
        assert!(!has_any_property(r#"  ["a", "b"]"#));
    }

    #[test]
    fn member_lines() {
        assert_eq!(
            member_line(r#"  "columns": ["a", "b"] ,  "#, "columns"),
            Some((r#""columns": "#, r#"["a", "b"]"#, " ,"))
        );
        assert_eq!(
            member_line(r#""rows" : [] "#, "rows"),
            Some((r#""rows" : "#, "[]", " "))
        );
        assert_eq!(member_line(r#""rows": [] x"#, "rows"), None);
        assert_eq!(scalar_len("-1.5e+3, "), Some(7));
        assert_eq!(scalar_len("1., "), Some(1));
        assert_eq!(scalar_len("x"), None);
    }

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

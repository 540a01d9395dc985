//! The five dataset edits on the table read from a body, shared by every
//! body shape: each checks its arguments, edits the rows (and columns)
//! and reports where, so the caller rewrites only the lines that change.

use serde_json::Value;

use super::cell_value::{coerce, infer_type, scalar_text};
use super::{inferred_columns, Data};
use crate::patch::line_text;
use crate::patch::op::Column;
use crate::patch::table::as_index;
use crate::patch::{fail, OpResult, PatchErrorCode as E};

fn single_line(v: &str, what: &str) -> OpResult<()> {
    if line_text::has_newline(v) {
        return fail(E::InvalidContent, format!("{what} must be a single line"));
    }
    Ok(())
}

fn row_index(row: f64, len: usize, allow_end: bool) -> OpResult<usize> {
    let Some(r) = as_index(row) else {
        return fail(
            E::InvalidContent,
            "dataset row must be a non-negative integer",
        );
    };
    if r > len || (!allow_end && r == len) {
        return fail(
            E::InvalidContent,
            format!("dataset row {r} is out of range"),
        );
    }
    Ok(r)
}

fn column_index(d: &Data, column: &Column) -> OpResult<usize> {
    match column {
        Column::Index(n) => match as_index(*n) {
            Some(i) => Ok(i),
            None => fail(
                E::InvalidContent,
                "dataset column must be a non-negative integer",
            ),
        },
        Column::Label(l) => match d.columns.iter().position(|c| c == l) {
            Some(i) => Ok(i),
            None => fail(
                E::InvalidContent,
                format!("dataset column \"{l}\" not found"),
            ),
        },
    }
}

fn column_label(column: &Column) -> String {
    match column {
        Column::Index(n) => line_text::js_num(*n),
        Column::Label(s) => s.clone(),
    }
}

fn pad(d: &mut Data, n: usize) {
    for r in &mut d.rows {
        if r.len() < n {
            r.resize(n, Value::Null);
        }
    }
}

fn pad_columns(d: &mut Data, n: usize) {
    while d.columns.len() < n {
        let name = format!("Column {}", d.columns.len() + 1);
        d.columns.push(name);
    }
    pad(d, n);
}

/// `update_dataset_cell`: sets one coerced cell (padding every row to the
/// column count); returns its (row, column).
pub(super) fn update_cell(
    d: &mut Data,
    row: f64,
    column: &Column,
    value: &str,
) -> OpResult<(usize, usize)> {
    let Some(r) = as_index(row) else {
        return fail(
            E::InvalidContent,
            "dataset row must be a non-negative integer",
        );
    };
    single_line(value, "dataset cell value")?;
    if r >= d.rows.len() {
        return fail(
            E::InvalidContent,
            format!("dataset row {r} is out of range"),
        );
    }
    let c = column_index(d, column)?;
    let n = d.column_count();
    if c >= n {
        return fail(
            E::InvalidContent,
            format!("dataset column {} is out of range", column_label(column)),
        );
    }
    pad(d, n);
    let v = d.coerce_in(value, c);
    if let Some(cell) = d.rows.get_mut(r).and_then(|cells| cells.get_mut(c)) {
        *cell = v;
    }
    Ok((r, c))
}

/// `insert_dataset_row`: inserts the coerced, padded row; returns its index.
pub(super) fn insert_row(d: &mut Data, row: f64, cells: &[String]) -> OpResult<usize> {
    let r = row_index(row, d.rows.len(), true)?;
    for c in cells {
        single_line(c, "dataset row cells")?;
    }
    let mut n = d.column_count();
    if n == 0 {
        n = cells.len();
        d.columns = inferred_columns(n);
    }
    if cells.len() > n {
        return fail(E::InvalidContent, "dataset row cells exceed column count");
    }
    let mut raw = cells.to_vec();
    raw.resize(n, String::new());
    let values: Vec<Value> = raw
        .iter()
        .enumerate()
        .map(|(i, c)| d.coerce_in(c, i))
        .collect();
    d.rows.insert(r, values);
    Ok(r)
}

/// `delete_dataset_row`: removes one row; returns its index.
pub(super) fn delete_row(d: &mut Data, row: f64) -> OpResult<usize> {
    let r = row_index(row, d.rows.len(), false)?;
    d.rows.remove(r);
    Ok(r)
}

/// `insert_dataset_column`: inserts the header and the coerced cells;
/// returns the column index and the schema type inferred for it.
pub(super) fn insert_column(
    d: &mut Data,
    column: &Column,
    header: &str,
    cells: &[String],
) -> OpResult<(usize, &'static str)> {
    let n = d.column_count();
    let c = crate::patch::table::insert_column_index(column, n, "dataset")?;
    if line_text::has_newline(header) || line_text::js_trim(header).is_empty() {
        return fail(
            E::InvalidContent,
            "dataset column header must be a non-empty single-line string",
        );
    }
    if d.columns.iter().any(|h| h == header) {
        return fail(
            E::InvalidContent,
            format!("dataset column \"{header}\" already exists"),
        );
    }
    if cells.len() > d.rows.len() {
        return fail(E::InvalidContent, "dataset column cells exceed row count");
    }
    for v in cells {
        single_line(v, "dataset column cells")?;
    }
    let mut raw = cells.to_vec();
    raw.resize(d.rows.len(), String::new());
    let schema_value = Value::String(infer_type(&raw).into());
    // A blank cell coerced to `null` is written as `''`, like the reference
    // (`values[i] ?? ""`); CSV/TSV cells stay text.
    let values: Vec<Value> = raw
        .iter()
        .map(|v| match d.text_cells {
            true => Value::String(v.clone()),
            false => match coerce(v, Some(&schema_value)) {
                Value::Null => Value::String(String::new()),
                other => other,
            },
        })
        .collect();
    let value_texts: Vec<String> = values.iter().map(scalar_text).collect();
    let schema_type = infer_type(&value_texts);
    pad_columns(d, n);
    d.columns.insert(c.min(d.columns.len()), header.to_string());
    for (i, r) in d.rows.iter_mut().enumerate() {
        let v = values
            .get(i)
            .cloned()
            .unwrap_or_else(|| Value::String(String::new()));
        r.insert(c.min(r.len()), v);
    }
    Ok((c, schema_type))
}

/// `delete_dataset_column`: removes one column; returns its header.
pub(super) fn delete_column(d: &mut Data, column: &Column) -> OpResult<String> {
    let n = d.column_count();
    if n <= 1 {
        return fail(E::InvalidContent, "cannot delete the last dataset column");
    }
    let c = column_index(d, column)?;
    if c >= n {
        return fail(
            E::InvalidContent,
            format!("dataset column {} is out of range", column_label(column)),
        );
    }
    pad_columns(d, n);
    let header = d.columns.remove(c);
    for r in &mut d.rows {
        if c < r.len() {
            r.remove(c);
        }
    }
    Ok(header)
}

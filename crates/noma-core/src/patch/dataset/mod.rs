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
//! arrays, or `{columns, rows}` objects) are edited by `dataset_json`, which
//! shares the table-level edits below.

mod json;

use serde_json::{Map, Value};

use super::line_buf::LineBuf;
use super::line_text;
use super::op::{Column, Op};
use super::table::as_index;
use super::yaml;
use super::{fail, Ctx, OpResult, PatchErrorCode as E};
use crate::doc::inline::split_delimited_row;
use crate::doc::{number_to_json, Node};

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

/// JavaScript's `Number(s)` for strings: `None` when NaN.
fn js_number(s: &str) -> Option<f64> {
    let t = line_text::js_trim(s);
    if t.is_empty() {
        return Some(0.0);
    }
    let radix = |p: &str, r: u32| u64::from_str_radix(p, r).ok().map(|v| v as f64);
    if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        return radix(h, 16);
    }
    if let Some(o) = t.strip_prefix("0o").or_else(|| t.strip_prefix("0O")) {
        return radix(o, 8);
    }
    if let Some(b) = t.strip_prefix("0b").or_else(|| t.strip_prefix("0B")) {
        return radix(b, 2);
    }
    match t.trim_start_matches(['+', '-']) {
        "Infinity" => {
            return Some(if t.starts_with('-') {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            })
        }
        u if u.is_empty()
            || !u
                .bytes()
                .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-')) =>
        {
            return None
        }
        _ => {}
    }
    t.parse::<f64>().ok()
}

fn finite_number(s: &str) -> Option<f64> {
    js_number(s).filter(|n| n.is_finite())
}

fn boolean_text(s: &str) -> Option<bool> {
    match line_text::js_trim(s).to_lowercase().as_str() {
        "true" | "yes" | "1" => Some(true),
        "false" | "no" | "0" => Some(false),
        _ => None,
    }
}

fn schema_type(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.to_lowercase()),
        Value::Object(m) => m.get("type").and_then(Value::as_str).map(str::to_lowercase),
        _ => None,
    }
}

fn coerce(value: &str, schema: Option<&Value>) -> Value {
    match schema_type(schema).as_deref() {
        Some("number" | "integer") => {
            if line_text::js_trim(value).is_empty() {
                return Value::Null;
            }
            finite_number(value).map_or_else(|| Value::String(value.into()), number_to_json)
        }
        Some("boolean") => {
            if line_text::js_trim(value).is_empty() {
                return Value::Null;
            }
            boolean_text(value).map_or_else(|| Value::String(value.into()), Value::Bool)
        }
        Some(_) => Value::String(value.into()),
        None => {
            let t = line_text::js_trim(value);
            if t.is_empty() {
                return Value::String(value.into());
            }
            if let Some(b) = boolean_text(t) {
                return Value::Bool(b);
            }
            let numeric_start = t
                .strip_prefix('-')
                .unwrap_or(t)
                .starts_with(|c: char| c.is_ascii_digit());
            match finite_number(t) {
                Some(n) if numeric_start => number_to_json(n),
                _ => Value::String(value.into()),
            }
        }
    }
}

fn infer_type(values: &[String]) -> &'static str {
    let present: Vec<&str> = values
        .iter()
        .map(|v| line_text::js_trim(v))
        .filter(|v| !v.is_empty())
        .collect();
    if present.is_empty() {
        "string"
    } else if present.iter().all(|v| finite_number(v).is_some()) {
        "number"
    } else if present.iter().all(|v| boolean_text(v).is_some()) {
        "boolean"
    } else {
        "string"
    }
}

pub(super) fn scalar_text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Number(n) => yaml::number_text(n),
        Value::Bool(b) => b.to_string(),
        other => other.to_string(),
    }
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

fn format_of(node: &Node) -> Result<Format, String> {
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
        other => Err(other.to_string()),
    }
}

// ---------------------------------------------------------------------------
// Delimited rows
// ---------------------------------------------------------------------------

/// Whether a row line starting with `cell` would be read as block syntax
/// rather than as a row: a code fence (which would swallow the rest of the
/// document), a directive fence, or a heading.
fn starts_block_syntax(cell: &str) -> bool {
    ["```", "~~~", "::", "#"]
        .iter()
        .any(|p| cell.starts_with(p))
}

fn serialize_delimited(cells: &[String], delim: char) -> String {
    let parts: Vec<String> = cells
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let edge_ws = c.starts_with(char::is_whitespace) || c.ends_with(char::is_whitespace);
            let syntax = i == 0 && starts_block_syntax(c);
            if !c.contains(delim) && !c.contains('"') && !edge_ws && !syntax {
                c.clone()
            } else {
                format!("\"{}\"", c.replace('"', "\"\""))
            }
        })
        .collect();
    parts.join(&delim.to_string())
}

fn read_delimited(lines: &LineBuf<'_>, node: &Node, delim: char) -> OpResult<Data> {
    let (start, end) = (node.span.start as usize, node.span.end as usize);
    let mut rows = Vec::new();
    let mut src = Vec::new();
    for i in start..end.saturating_sub(1) {
        let line = lines.get(i);
        if line_text::js_trim(line).is_empty() {
            continue;
        }
        src.push(RowLine {
            index: i,
            indent: line_text::indent_of(line).to_string(),
            trailing: String::new(),
        });
        rows.push(split_delimited_row(line_text::js_trim(line), delim));
    }
    let mut it = rows.into_iter();
    let Some(columns) = it.next() else {
        return fail(E::InvalidContent, "dataset must have a header row");
    };
    Ok(Data {
        columns,
        rows: it
            .map(|r| r.into_iter().map(Value::String).collect())
            .collect(),
        schema: None,
        text_cells: true,
        lines: src,
        rows_line: 0,
        rows_key_indent: String::new(),
        schema_line: None,
        schema_key_indent: String::new(),
        schema_lines: Vec::new(),
    })
}

// ---------------------------------------------------------------------------
// YAML rows
// ---------------------------------------------------------------------------

/// `^(\s*)-\s*(\[.*\])(\s+#.*)?\s*$` → (indent, array text, trailing comment).
fn match_row_line(line: &str) -> Option<(&str, &str, &str)> {
    let indent = line_text::indent_of(line);
    let rest = line[indent.len()..].strip_prefix('-')?;
    let body = rest.trim_start_matches(crate::doc::slug::is_js_space);
    if !body.starts_with('[') {
        return None;
    }
    for (p, _) in body
        .match_indices(']')
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
    {
        let after = &body[p + 1..];
        let t = after.trim_start_matches(crate::doc::slug::is_js_space);
        if t.is_empty() {
            return Some((indent, &body[..=p], ""));
        }
        if t.starts_with('#') && t.len() < after.len() {
            return Some((indent, &body[..=p], after));
        }
    }
    None
}

fn key_prefix(line: &str, key: &str) -> Option<usize> {
    let indent = line_text::indent_of(line);
    let rest = line[indent.len()..].strip_prefix(key)?;
    rest.trim_start_matches(crate::doc::slug::is_js_space)
        .starts_with(':')
        .then_some(indent.len())
}

/// `^(\s*)([A-Za-z_][\w-]*)\s*:` → the key.
fn property_key(line: &str) -> Option<&str> {
    let indent = line_text::indent_of(line);
    let rest = &line[indent.len()..];
    let b = rest.as_bytes();
    if !b
        .first()
        .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
    {
        return None;
    }
    let n = b
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_' || **c == b'-')
        .count();
    rest[n..]
        .trim_start_matches(crate::doc::slug::is_js_space)
        .starts_with(':')
        .then(|| &rest[..n])
}

/// Reads a YAML body whose `rows:` are inline flow arrays, and maps each
/// row (and each `schema:` entry) to its source line.
fn read_yaml(lines: &LineBuf<'_>, node: &Node) -> OpResult<Data> {
    let (start, end) = (node.span.start as usize, node.span.end as usize);
    let body_end = end.saturating_sub(1).max(start);
    let body: Vec<&str> = (start..body_end).map(|i| lines.get(i)).collect();
    let id = node.id.as_deref().unwrap_or("?");
    let Some(parsed) = yaml::load(&body.join("\n")) else {
        return fail(
            E::InvalidContent,
            format!("dataset \"{id}\" is not valid YAML"),
        );
    };
    let Value::Object(record) = parsed else {
        return fail(
            E::InvalidContent,
            format!("dataset \"{id}\" must be a YAML object"),
        );
    };
    let Some(Value::Array(all_rows)) = record.get("rows") else {
        return fail(
            E::InvalidContent,
            format!("dataset \"{id}\" has no rows array"),
        );
    };
    let body_lines = start..body_end;
    let found = yaml_row_lines(lines, body_lines.clone())?;
    if found.rows.len() != all_rows.iter().filter(|r| r.is_array()).count() {
        return fail(
            E::InvalidContent,
            "source-preserving dataset row edits could not map every YAML row",
        );
    }
    let Some(rows_line) = found.rows_line else {
        return fail(
            E::InvalidContent,
            "source-preserving dataset row edits could not locate YAML rows",
        );
    };
    let schema_src = yaml_schema_lines(lines, body_lines);
    let schema = match record.get("schema") {
        Some(Value::Object(m)) => Some(m.clone()),
        _ => None,
    };
    let columns = match &schema {
        Some(m) => m.keys().cloned().collect(),
        None => {
            let attr = columns_attr(node);
            if attr.is_empty() {
                let width = all_rows
                    .iter()
                    .filter_map(Value::as_array)
                    .map(Vec::len)
                    .max()
                    .unwrap_or(0);
                inferred_columns(width)
            } else {
                attr
            }
        }
    };
    Ok(Data {
        columns,
        rows: found.rows,
        schema,
        text_cells: false,
        lines: found.lines,
        rows_line,
        rows_key_indent: found.key_indent,
        schema_line: schema_src.key_line,
        schema_key_indent: schema_src.key_indent,
        schema_lines: schema_src.entries,
    })
}

/// The `rows:` block of a YAML body as found in the source.
struct YamlRows {
    /// The `rows:` key line, if any.
    rows_line: Option<usize>,
    /// The indentation of the `rows:` key.
    key_indent: String,
    /// Each row's cells, parsed from its line.
    rows: Vec<Vec<Value>>,
    /// Each row's line.
    lines: Vec<RowLine>,
}

/// Finds the `rows:` key among `body` and reads the `- [..]` lines under
/// it; a block-style row (`- a`) is `invalid_content`, since it cannot be
/// rewritten as one line.
fn yaml_row_lines(lines: &LineBuf<'_>, body: std::ops::Range<usize>) -> OpResult<YamlRows> {
    let mut found = YamlRows {
        rows_line: None,
        key_indent: String::new(),
        rows: Vec::new(),
        lines: Vec::new(),
    };
    let mut inside = false;
    let mut rows_indent = 0usize;
    for (i, line, t, indent) in yaml_content_lines(lines, body) {
        if !inside {
            if key_prefix(line, "rows").is_some() {
                inside = true;
                rows_indent = indent.len();
                found.rows_line = Some(i);
                found.key_indent = indent.to_string();
            }
            continue;
        }
        if indent.len() <= rows_indent && !t.starts_with('-') {
            break;
        }
        let Some((row_indent, array, trailing)) = match_row_line(line) else {
            if t.starts_with('-') {
                return fail(
                    E::InvalidContent,
                    "source-preserving dataset row edits require inline YAML row arrays",
                );
            }
            continue;
        };
        let Some(Value::Array(cells)) = yaml::load(array) else {
            return fail(
                E::InvalidContent,
                "source-preserving dataset row edits require inline YAML row arrays",
            );
        };
        found.lines.push(RowLine {
            index: i,
            indent: row_indent.to_string(),
            trailing: trailing.to_string(),
        });
        found.rows.push(cells);
    }
    Ok(found)
}

/// The lines of a YAML body that hold content, blank and comment lines
/// skipped: (index, line, trimmed line, indentation).
fn yaml_content_lines<'l>(
    lines: &'l LineBuf<'_>,
    body: std::ops::Range<usize>,
) -> impl Iterator<Item = (usize, &'l str, &'l str, &'l str)> {
    body.filter_map(move |i| {
        let line = lines.get(i);
        let t = line_text::js_trim(line);
        (!t.is_empty() && !t.starts_with('#')).then(|| (i, line, t, line_text::indent_of(line)))
    })
}

/// The `schema:` block of a YAML body as found in the source.
struct YamlSchema {
    /// The `schema:` key line, if any.
    key_line: Option<usize>,
    /// The indentation of the `schema:` key.
    key_indent: String,
    /// Each property line under it: (key, line, indentation).
    entries: Vec<(String, usize, String)>,
}

/// Finds the `schema:` key among `body` and its property lines, so column
/// ops can add or remove one entry.
fn yaml_schema_lines(lines: &LineBuf<'_>, body: std::ops::Range<usize>) -> YamlSchema {
    let mut found = YamlSchema {
        key_line: None,
        key_indent: String::new(),
        entries: Vec::new(),
    };
    let mut schema_indent = 0usize;
    for (i, line, t, indent) in yaml_content_lines(lines, body) {
        if found.key_line.is_none() {
            if key_prefix(line, "schema").is_some() {
                found.key_line = Some(i);
                schema_indent = indent.len();
                found.key_indent = indent.to_string();
            }
            continue;
        }
        if indent.len() <= schema_indent && property_key(t).is_some() {
            break;
        }
        if let Some(k) = property_key(line) {
            if indent.len() > schema_indent {
                found.entries.push((k.to_string(), i, indent.to_string()));
            }
        }
    }
    found
}

// ---------------------------------------------------------------------------
// Table-level edits (shared by both shapes)
// ---------------------------------------------------------------------------

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
        Format::Yaml | Format::Json => format!("- {}", yaml::flow_row(cells)),
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
                    format!("{}- {}{}", src.indent, yaml::flow_row(row), src.trailing),
                );
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// The five edits on the table (shared by every body shape)
// ---------------------------------------------------------------------------

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
    let c = super::table::insert_column_index(column, n, "dataset")?;
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

/// A YAML `rows` key line split after its colon: (`  rows:`, the trimmed
/// rest). `None` when the line is not the `rows` key.
fn split_rows_line(line: &str) -> Option<(&str, &str)> {
    let indent_len = key_prefix(line, "rows")?;
    let colon = line[indent_len..]
        .find(':')
        .map_or(line.len(), |p| indent_len + p + 1);
    Some((&line[..colon], line_text::js_trim(&line[colon..])))
}

/// `rows: []` → `rows:` (keeping a trailing comment) before the first row.
fn rows_line_as_block(line: &str) -> OpResult<String> {
    const NEEDS_BLOCK: &str =
        "source-preserving insert_dataset_row requires a block YAML rows array";
    let Some((prefix, rest)) = split_rows_line(line) else {
        return fail(E::InvalidContent, NEEDS_BLOCK);
    };
    if let Some(after) = rest.strip_prefix("[]") {
        let comment = line_text::js_trim(after);
        if comment.is_empty() {
            return Ok(prefix.to_string());
        }
        if comment.starts_with('#') {
            return Ok(format!("{prefix} {comment}"));
        }
    }
    if line.contains("[]") || rest.is_empty() || rest.starts_with('#') {
        return Ok(line.to_string());
    }
    fail(E::InvalidContent, NEEDS_BLOCK)
}

/// `rows:` → `rows: []` (keeping a trailing comment) after the last row.
fn rows_line_as_empty(line: &str) -> OpResult<String> {
    match split_rows_line(line) {
        Some((prefix, "")) => Ok(format!("{prefix} []")),
        Some((prefix, rest)) if rest.starts_with('#') => Ok(format!("{prefix} [] {rest}")),
        _ => fail(
            E::InvalidContent,
            "source-preserving delete_dataset_row could not rewrite YAML rows as empty",
        ),
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
    use super::*;

    #[test]
    fn delimited_round_trip() {
        assert_eq!(
            split_delimited_row(r#"a, "b, c" ,"say ""hi""""#, ','),
            ["a", "b, c", "say \"hi\""]
        );
        assert_eq!(
            serialize_delimited(&["a".into(), "b, c".into(), " x".into()], ','),
            "a,\"b, c\",\" x\""
        );
    }

    #[test]
    fn coercion_follows_schema() {
        assert_eq!(
            coerce("3.8", Some(&Value::String("number".into()))),
            serde_json::json!(3.8)
        );
        assert_eq!(
            coerce("x", Some(&Value::String("number".into()))),
            serde_json::json!("x")
        );
        assert_eq!(coerce("14", None), serde_json::json!(14));
        assert_eq!(coerce("yes", None), serde_json::json!(true));
        assert_eq!(
            coerce("", Some(&Value::String("number".into()))),
            Value::Null
        );
        assert_eq!(infer_type(&["14".into(), "".into()]), "number");
    }

    #[test]
    fn row_line_matching() {
        assert_eq!(
            match_row_line("  - [a, 1] # note"),
            Some(("  ", "[a, 1]", " # note"))
        );
        assert_eq!(match_row_line("  - [a, [b]]"), Some(("  ", "[a, [b]]", "")));
        assert_eq!(match_row_line("  - a"), None);
    }

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

//! Record arrays (`[` / `{ "k": v, ... },` / `]`), one record per line or
//! pretty-printed over several: a cell update rewrites only that
//! property's value, a row insert copies the neighbouring record's layout,
//! and column edits re-serialize each record in its own layout.

use memchr::memmem;
use serde_json::Value;

use super::js_value::{js_json, json_string};
use super::{ensure_comma, remove_comma, skip_space, trim_end, Scope};
use crate::patch::dataset::{source_row, table_edit, Data};
use crate::patch::line_buf::LineBuf;
use crate::patch::line_text;
use crate::patch::op::{Column, Op};
use crate::patch::{fail, OpResult, PatchErrorCode as E};

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
        let (r, c) = table_edit::update_cell(d, row, column, value)?;
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
        let r = table_edit::insert_row(d, row, cells)?;
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
pub(super) fn records(
    lines: &mut LineBuf<'_>,
    scope: Scope,
    d: &mut Data,
    op: &Op,
) -> OpResult<()> {
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
            let r = table_edit::delete_row(d, *row)?;
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
            table_edit::insert_column(d, column, header, cells)?;
            rewrite_records(lines, &src, d);
        }
        Op::DeleteDatasetColumn { column, .. } => {
            table_edit::delete_column(d, column)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
    fn scalar_lengths() {
        assert_eq!(scalar_len("-1.5e+3, "), Some(7));
        assert_eq!(scalar_len("1., "), Some(1));
        assert_eq!(scalar_len("x"), None);
    }
}

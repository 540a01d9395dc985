//! Row arrays (`[` / `["a", 1],` / `]`, columns from the `columns`
//! attribute) and objects with a one-line `"columns": [...]` and a
//! `"rows": [` block: rows are rewritten as compact JSON lines, and column
//! edits also rewrite the columns line.

use serde_json::Value;

use super::js_value::js_json_array;
use super::{ensure_comma, remove_comma, skip_space, trim_end, Scope, Shape};
use crate::doc::slug::is_js_space;
use crate::patch::dataset::{source_row, table_edit, Data};
use crate::patch::line_buf::LineBuf;
use crate::patch::line_text;
use crate::patch::op::{Column, Op};
use crate::patch::{fail, OpResult, PatchErrorCode as E};

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
pub(super) fn arrays(
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
        let (r, _) = table_edit::update_cell(d, row, column, value)?;
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
        let r = table_edit::insert_row(d, row, cells)?;
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
        let r = table_edit::delete_row(d, row)?;
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
                table_edit::insert_column(d, column, header, cells)?;
            }
            Op::DeleteDatasetColumn { column, .. } => {
                table_edit::delete_column(d, column)?;
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

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}

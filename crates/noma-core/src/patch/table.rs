//! The six `::table` ops (§1.5). A `::table` body is one pipe row per
//! non-blank line (outer pipes optional); with the `header` attribute the
//! first row is the header. Edited rows are rewritten as `| a | b |` with
//! their original indentation, escaping pipes outside code spans; rows the
//! op does not touch keep their bytes (column ops rewrite every row).

use super::line_buf::LineBuf;
use super::line_text;
use super::op::{Column, Op};
use super::{fail, Ctx, OpResult, PatchErrorCode as E};
use crate::doc::ast::AttrValue;
use crate::doc::inline::split_pipe_row;
use crate::doc::Node;

struct SrcRow {
    index: usize,
    indent: String,
}

struct Table {
    header: Option<Vec<String>>,
    rows: Vec<Vec<String>>,
    lines: Vec<SrcRow>,
}

impl Table {
    fn column_count(&self) -> usize {
        let h = self.header.as_ref().map_or(0, Vec::len);
        self.rows.iter().map(Vec::len).fold(h, usize::max)
    }
    fn pad(&mut self, n: usize) {
        if let Some(h) = &mut self.header {
            if h.len() < n {
                h.resize(n, String::new());
            }
        }
        for r in &mut self.rows {
            if r.len() < n {
                r.resize(n, String::new());
            }
        }
    }
    fn all_rows(&self) -> Vec<&Vec<String>> {
        self.header.iter().chain(self.rows.iter()).collect()
    }
    fn line_offset(&self, row: usize) -> usize {
        if self.header.is_some() {
            row + 1
        } else {
            row
        }
    }
}

/// A non-negative integer, or `None`.
pub(crate) fn as_index(v: f64) -> Option<usize> {
    (v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= usize::MAX as f64).then_some(v as usize)
}

/// The position where a new column goes among `n` (0..=n): a label or a
/// non-integer is `invalid_content`, as is a position past the end.
/// `what` is `table` or `dataset`, for the messages.
pub(crate) fn insert_column_index(column: &Column, n: usize, what: &str) -> OpResult<usize> {
    let Some(c) = (match column {
        Column::Index(v) => as_index(*v),
        Column::Label(_) => None,
    }) else {
        return fail(
            E::InvalidContent,
            format!("{what} column must be a non-negative integer"),
        );
    };
    if c > n {
        return fail(
            E::InvalidContent,
            format!("{what} column {c} is out of range"),
        );
    }
    Ok(c)
}

fn read_table(ctx: &Ctx<'_>, lines: &LineBuf<'_>, node: &Node) -> OpResult<Table> {
    let (start, end) = (node.span.start as usize, node.span.end as usize);
    let mut parsed = Vec::new();
    let mut cells = Vec::new();
    for i in start..end.saturating_sub(1) {
        let line = lines.get(i);
        let t = line_text::js_trim(line);
        if t.is_empty() {
            continue;
        }
        if !t.contains('|') {
            return fail(E::InvalidContent, "table rows must use pipe syntax");
        }
        cells.push(
            split_pipe_row(t)
                .into_iter()
                .map(str::to_string)
                .collect::<Vec<_>>(),
        );
        parsed.push(SrcRow {
            index: i,
            indent: line_text::indent_of(line).to_string(),
        });
    }
    let _ = ctx;
    if parsed.is_empty() {
        return fail(
            E::InvalidContent,
            format!(
                "table \"{}\" has no rows",
                node.id.as_deref().unwrap_or("?")
            ),
        );
    }
    let wants_header = matches!(
        node.attrs().and_then(|a| a.get("header")),
        Some(AttrValue::Bool(true))
    ) || node.attrs().and_then(|a| a.get_str("header")) == Some("true");
    let mut it = cells.into_iter();
    let header = if wants_header { it.next() } else { None };
    Ok(Table {
        header,
        rows: it.collect(),
        lines: parsed,
    })
}

/// Escapes the pipes a row splitter would take as separators: those outside
/// code spans. A backtick opens a span only when another one closes it in
/// the same cell, so the pipes after an unmatched backtick are escaped too
/// (the reference leaves them bare, and the row gains a column).
fn escape_cell(cell: &str) -> String {
    let ticks = cell.bytes().filter(|&b| b == b'`').count();
    // With an odd count the last backtick is unmatched.
    let mut openers_left = ticks - ticks % 2;
    let mut out = String::with_capacity(cell.len());
    let mut in_code = false;
    let mut prev = None;
    for c in cell.chars() {
        if c == '`' && (in_code || openers_left > 0) {
            in_code = !in_code;
            openers_left = openers_left.saturating_sub(1);
        } else if c == '|' && !in_code && prev != Some('\\') {
            out.push_str("\\|");
            prev = Some(c);
            continue;
        }
        out.push(c);
        prev = Some(c);
    }
    out
}

/// One source row. The row must split back into the same cells: a cell
/// with an unmatched backtick turns the rest of the row into code for the
/// splitter, so it can only be the last one (`invalid_content` otherwise).
fn pipe_row(cells: &[String], indent: &str) -> OpResult<String> {
    let escaped: Vec<String> = cells.iter().map(|c| escape_cell(c)).collect();
    let row = format!("{indent}| {} |", escaped.join(" | "));
    let back = split_pipe_row(&row);
    let same =
        back.len() == escaped.len() && back.iter().zip(&escaped).all(|(a, b)| *a == b.trim());
    if !same {
        return fail(
            E::InvalidContent,
            "a table cell with an unmatched backtick must be the row's last cell",
        );
    }
    Ok(row)
}

fn column_index(t: &Table, column: &Column) -> OpResult<usize> {
    match column {
        Column::Index(n) => match as_index(*n) {
            Some(i) => Ok(i),
            None => fail(
                E::InvalidContent,
                "table column must be a non-negative integer",
            ),
        },
        Column::Label(label) => {
            let Some(h) = &t.header else {
                return fail(E::InvalidContent, "table column labels require header=true");
            };
            match h.iter().position(|c| c == label) {
                Some(i) => Ok(i),
                None => fail(
                    E::InvalidContent,
                    format!("table column \"{label}\" not found"),
                ),
            }
        }
    }
}

fn column_label(column: &Column) -> String {
    match column {
        Column::Index(n) => line_text::js_num(*n),
        Column::Label(s) => s.clone(),
    }
}

fn row_index(row: f64, len: usize, allow_end: bool) -> OpResult<usize> {
    let Some(r) = as_index(row) else {
        return fail(
            E::InvalidContent,
            "table row must be a non-negative integer",
        );
    };
    if r > len || (!allow_end && r == len) {
        return fail(E::InvalidContent, format!("table row {r} is out of range"));
    }
    Ok(r)
}

fn single_line(v: &str, what: &str) -> OpResult<()> {
    if line_text::has_newline(v) {
        return fail(E::InvalidContent, format!("{what} must be a single line"));
    }
    Ok(())
}

/// Dispatches the table ops.
pub(crate) fn apply(ctx: &Ctx<'_>, op: &Op) -> OpResult<String> {
    let id = match op {
        Op::UpdateTableCell { id, .. }
        | Op::UpdateTableHeaderCell { id, .. }
        | Op::InsertTableRow { id, .. }
        | Op::DeleteTableRow { id, .. }
        | Op::InsertTableColumn { id, .. }
        | Op::DeleteTableColumn { id, .. } => id,
        _ => return fail(E::UnsupportedOp, "not a table op"),
    };
    let node = ctx.require(id, E::TargetMissing, "table")?;
    if !node.is_directive("table") {
        return fail(
            E::InvalidContent,
            format!("block \"{id}\" is not a table directive"),
        );
    }
    let mut lines = LineBuf::new(ctx.src);
    let mut t = read_table(ctx, &lines, node)?;
    match op {
        Op::UpdateTableCell {
            row, column, value, ..
        } => t.update_cell(&mut lines, *row, column, value)?,
        Op::UpdateTableHeaderCell { column, value, .. } => {
            t.update_header_cell(&mut lines, column, value)?
        }
        Op::InsertTableRow { row, cells, .. } => {
            t.insert_row(&mut lines, *row, cells, node.span.end as usize - 1)?
        }
        Op::DeleteTableRow { row, .. } => t.delete_row(&mut lines, *row)?,
        Op::InsertTableColumn {
            column,
            header,
            cells,
            ..
        } => t.insert_column(&mut lines, column, header.as_deref(), cells)?,
        Op::DeleteTableColumn { column, .. } => t.delete_column(&mut lines, column)?,
        _ => {}
    }
    Ok(lines.finish_with(ctx.prefix))
}

/// The six edits: each changes the table and rewrites the source lines it
/// touches.
impl Table {
    /// `update_table_cell`: sets one body cell (padding rows to the column
    /// count) and rewrites its row.
    fn update_cell(
        &mut self,
        lines: &mut LineBuf<'_>,
        row: f64,
        column: &Column,
        value: &str,
    ) -> OpResult<()> {
        let Some(r) = as_index(row) else {
            return fail(
                E::InvalidContent,
                "table row must be a non-negative integer",
            );
        };
        single_line(value, "table cell value")?;
        if r >= self.rows.len() {
            return fail(E::InvalidContent, format!("table row {r} is out of range"));
        }
        let c = self.existing_column(column)?;
        self.rows[r][c] = value.to_string();
        let src = &self.lines[self.line_offset(r)];
        lines.set(src.index, pipe_row(&self.rows[r], &src.indent)?);
        Ok(())
    }

    /// The index of an existing column, every row padded to the column
    /// count so the cell can be set; out of range is `invalid_content`.
    fn existing_column(&mut self, column: &Column) -> OpResult<usize> {
        let c = column_index(self, column)?;
        let n = self.column_count();
        if c >= n {
            return fail(
                E::InvalidContent,
                format!("table column {} is out of range", column_label(column)),
            );
        }
        self.pad(n);
        Ok(c)
    }

    /// `update_table_header_cell`: sets one header cell and rewrites the
    /// header row.
    fn update_header_cell(
        &mut self,
        lines: &mut LineBuf<'_>,
        column: &Column,
        value: &str,
    ) -> OpResult<()> {
        if self.header.is_none() {
            return fail(
                E::InvalidContent,
                "table header cell update requires header=true",
            );
        }
        single_line(value, "table header cell value")?;
        let c = self.existing_column(column)?;
        if let Some(h) = &mut self.header {
            h[c] = value.to_string();
            let src = &self.lines[0];
            lines.set(src.index, pipe_row(h, &src.indent)?);
        }
        Ok(())
    }

    /// `insert_table_row`: writes a new padded row line before row `row`
    /// (after the last row, or before the closing fence at `fence_line`,
    /// when there is none).
    fn insert_row(
        &mut self,
        lines: &mut LineBuf<'_>,
        row: f64,
        cells: &[String],
        fence_line: usize,
    ) -> OpResult<()> {
        let r = row_index(row, self.rows.len(), true)?;
        for c in cells {
            single_line(c, "table row cells")?;
        }
        let mut cells = cells.to_vec();
        let n = self.column_count();
        if cells.len() < n {
            cells.resize(n, String::new());
        }
        let off = self.line_offset(r);
        let reference = self
            .lines
            .get(off)
            .or_else(|| self.lines.get(off.saturating_sub(1)))
            .or(self.lines.first());
        let indent = reference.map_or("", |l| l.indent.as_str());
        let at = match self.lines.get(off) {
            Some(l) => l.index,
            None => match self.lines.get(off.saturating_sub(1)) {
                Some(p) => p.index + 1,
                None => fence_line,
            },
        };
        let new_line = pipe_row(&cells, indent)?;
        lines.splice(at, 0, vec![new_line]);
        Ok(())
    }

    /// `delete_table_row`: removes one row's line.
    fn delete_row(&mut self, lines: &mut LineBuf<'_>, row: f64) -> OpResult<()> {
        let r = row_index(row, self.rows.len(), false)?;
        let Some(src) = self.lines.get(self.line_offset(r)) else {
            return fail(E::InvalidContent, format!("table row {r} is out of range"));
        };
        lines.splice(src.index, 1, Vec::new());
        Ok(())
    }

    /// `insert_table_column`: inserts the header (when given) and the cells
    /// (blank past `cells`), then rewrites every row.
    fn insert_column(
        &mut self,
        lines: &mut LineBuf<'_>,
        column: &Column,
        header: Option<&str>,
        cells: &[String],
    ) -> OpResult<()> {
        let n = self.column_count();
        let c = insert_column_index(column, n, "table")?;
        if self.header.is_none() && header.is_some() {
            return fail(
                E::InvalidContent,
                "table column header requires header=true",
            );
        }
        if let Some(h) = header {
            single_line(h, "table column header")?;
        }
        if cells.len() > self.rows.len() {
            return fail(E::InvalidContent, "table column cells exceed row count");
        }
        for v in cells {
            single_line(v, "table column cells")?;
        }
        self.pad(n);
        if let Some(h) = &mut self.header {
            h.insert(c.min(h.len()), header.unwrap_or_default().to_string());
        }
        for (i, r) in self.rows.iter_mut().enumerate() {
            let v = cells.get(i).cloned().unwrap_or_default();
            r.insert(c.min(r.len()), v);
        }
        rewrite_all(lines, self)
    }

    /// `delete_table_column`: removes one column (header included), then
    /// rewrites every row.
    fn delete_column(&mut self, lines: &mut LineBuf<'_>, column: &Column) -> OpResult<()> {
        let n = self.column_count();
        if n <= 1 {
            return fail(E::InvalidContent, "cannot delete the last table column");
        }
        let c = column_index(self, column)?;
        if c >= n {
            return fail(
                E::InvalidContent,
                format!("table column {} is out of range", column_label(column)),
            );
        }
        self.pad(n);
        if let Some(h) = &mut self.header {
            h.remove(c);
        }
        for r in &mut self.rows {
            r.remove(c);
        }
        rewrite_all(lines, self)
    }
}

fn rewrite_all(lines: &mut LineBuf<'_>, t: &Table) -> OpResult<()> {
    for (src, row) in t.lines.iter().zip(t.all_rows()) {
        lines.set(src.index, pipe_row(row, &src.indent)?);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_pipes_outside_code() {
        assert_eq!(escape_cell("a|b `x|y` c\\|d"), "a\\|b `x|y` c\\|d");
        assert_eq!(
            pipe_row(&["A".into(), "B".into()], "  ").unwrap(),
            "  | A | B |"
        );
        assert_eq!(escape_cell("`x | y"), "`x \\| y");
        assert_eq!(escape_cell("`a|b` `c|d"), "`a|b` `c\\|d");
    }

    #[test]
    fn an_unmatched_backtick_keeps_the_row_shape() {
        use crate::patch::apply_one;
        use serde_json::json;
        let src = "::table{id=\"t\"}\n| a | b |\n| c | d |\n::\n";
        let op = json!({"op": "update_table_cell", "id": "t", "row": 0, "column": 1,
                        "value": "`x | y"});
        let out = apply_one(src, &op).unwrap();
        assert_eq!(out, "::table{id=\"t\"}\n| a | `x \\| y |\n| c | d |\n::\n");
        // The next update still addresses two columns, and the cell is kept.
        let op = json!({"op": "update_table_cell", "id": "t", "row": 0, "column": 0,
                        "value": "z"});
        let again = apply_one(&out, &op).unwrap();
        assert_eq!(
            again,
            "::table{id=\"t\"}\n| z | `x \\| y |\n| c | d |\n::\n"
        );
        // Before the last cell it cannot be written without merging cells.
        let op = json!({"op": "update_table_cell", "id": "t", "row": 1, "column": 0,
                        "value": "`x | y"});
        assert_eq!(
            apply_one(src, &op).unwrap_err().code,
            crate::patch::PatchErrorCode::InvalidContent
        );
    }
}

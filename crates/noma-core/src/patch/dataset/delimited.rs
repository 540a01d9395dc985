//! `format=csv` and `format=tsv` bodies: one row per line, quoted cells
//! allowed, read into a table of text cells and written back a row at a
//! time.

use serde_json::Value;

use super::{Data, RowLine};
use crate::doc::inline::split_delimited_row;
use crate::doc::Node;
use crate::patch::line_buf::LineBuf;
use crate::patch::line_text;
use crate::patch::{fail, OpResult, PatchErrorCode as E};

/// Whether a row line starting with `cell` would be read as block syntax
/// rather than as a row: a code fence (which would swallow the rest of the
/// document), a directive fence, or a heading.
fn starts_block_syntax(cell: &str) -> bool {
    ["```", "~~~", "::", "#"]
        .iter()
        .any(|p| cell.starts_with(p))
}

pub(super) fn serialize_delimited(cells: &[String], delim: char) -> String {
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

pub(super) fn read_delimited(lines: &LineBuf<'_>, node: &Node, delim: char) -> OpResult<Data> {
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
}

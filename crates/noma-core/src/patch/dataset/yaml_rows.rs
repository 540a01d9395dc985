//! YAML bodies whose `rows:` are inline flow arrays (`- [legal, 3.4]`):
//! each row and each `schema:` entry mapped to its source line, and the
//! `rows:` key line rewritten when the first row arrives or the last goes.

use serde_json::Value;

use super::yaml_flow;
use super::{columns_attr, inferred_columns, Data, RowLine};
use crate::doc::Node;
use crate::patch::line_buf::LineBuf;
use crate::patch::line_text;
use crate::patch::{fail, OpResult, PatchErrorCode as E};

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
pub(super) fn read_yaml(lines: &LineBuf<'_>, node: &Node) -> OpResult<Data> {
    let (start, end) = (node.span.start as usize, node.span.end as usize);
    let body_end = end.saturating_sub(1).max(start);
    let body: Vec<&str> = (start..body_end).map(|i| lines.get(i)).collect();
    let id = node.id.as_deref().unwrap_or("?");
    let Some(parsed) = yaml_flow::load(&body.join("\n")) else {
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
        let Some(Value::Array(cells)) = yaml_flow::load(array) else {
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
pub(super) fn rows_line_as_block(line: &str) -> OpResult<String> {
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
pub(super) fn rows_line_as_empty(line: &str) -> OpResult<String> {
    match split_rows_line(line) {
        Some((prefix, "")) => Ok(format!("{prefix} []")),
        Some((prefix, rest)) if rest.starts_with('#') => Ok(format!("{prefix} [] {rest}")),
        _ => fail(
            E::InvalidContent,
            "source-preserving delete_dataset_row could not rewrite YAML rows as empty",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_line_matching() {
        assert_eq!(
            match_row_line("  - [a, 1] # note"),
            Some(("  ", "[a, 1]", " # note"))
        );
        assert_eq!(match_row_line("  - [a, [b]]"), Some(("  ", "[a, [b]]", "")));
        assert_eq!(match_row_line("  - a"), None);
    }
}

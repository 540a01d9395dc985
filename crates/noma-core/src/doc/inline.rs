//! Inline helpers: pipe-row and CSV/TSV-row splitting and `[[wikilink]]`
//! extraction (one splitter each, shared by the validator and the patch ops).

/// Splits a pipe-table row into trimmed cells. Pipes inside backtick code
/// spans and escaped `\|` stay inside the cell (the escape is kept verbatim).
pub fn split_pipe_row(line: &str) -> Vec<&str> {
    let t = line.trim();
    let t = t.strip_prefix('|').unwrap_or(t);
    let t = t.strip_suffix('|').unwrap_or(t);
    // Every byte that matters is ASCII, so cells are slices of the row.
    let b = t.as_bytes();
    let mut cells = Vec::new();
    let (mut cell_start, mut i, mut in_code) = (0usize, 0usize, false);
    while i < b.len() {
        match b[i] {
            b'\\' if b.get(i + 1) == Some(&b'|') => i += 1,
            b'`' => in_code = !in_code,
            b'|' if !in_code => {
                cells.push(t[cell_start..i].trim());
                cell_start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    cells.push(t[cell_start..].trim());
    cells
}

/// One `[[target]]` or labelled `[[target|label]]` wikilink in a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wikilink<'t> {
    /// Byte offset of the opening `[[`.
    pub start: usize,
    /// Byte offset just past the closing `]]`.
    pub end: usize,
    /// The id or alias it points at.
    pub target: &'t str,
    /// The text shown instead of the target, as written (`None` without `|`).
    pub label: Option<&'t str>,
}

/// Every `[[target]]` wikilink in `text`, with its byte offset (labelled
/// ones included, see [`wikilink_spans`]).
pub fn wikilinks(text: &str) -> Vec<(usize, &str)> {
    wikilink_spans(text)
        .into_iter()
        .map(|l| (l.start, l.target))
        .collect()
}

/// Every wikilink in `text`: `[[target]]` or `[[target|label]]`. A target
/// is `[a-zA-Z_][\w\-./:]*`, as in the reference inline parser; a label is
/// any text up to the closing `]]` on the same line, without `[` or `]`
/// (the reference's `check` reports a broken labelled link like a plain one).
pub fn wikilink_spans(text: &str) -> Vec<Wikilink<'_>> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut from = 0usize;
    while let Some(off) = memchr::memchr(b'[', &b[from..]) {
        let open = from + off;
        if b.get(open + 1) != Some(&b'[') {
            from = open + 1;
            continue;
        }
        let start = open + 2;
        let mut end = start;
        if end < b.len() && (b[end].is_ascii_alphabetic() || b[end] == b'_') {
            end += 1;
            while end < b.len()
                && (b[end].is_ascii_alphanumeric()
                    || matches!(b[end], b'_' | b'-' | b'.' | b'/' | b':'))
            {
                end += 1;
            }
            let target = &text[start..end];
            if b.get(end) == Some(&b']') && b.get(end + 1) == Some(&b']') {
                out.push(Wikilink {
                    start: open,
                    end: end + 2,
                    target,
                    label: None,
                });
                from = end + 2;
                continue;
            }
            if b.get(end) == Some(&b'|') {
                let label_at = end + 1;
                let stop = b[label_at..]
                    .iter()
                    .position(|c| matches!(c, b'[' | b']' | b'\n' | b'\r'))
                    .map(|p| label_at + p);
                if let Some(close) = stop.filter(|&c| b.get(c + 1) == Some(&b']') && b[c] == b']') {
                    out.push(Wikilink {
                        start: open,
                        end: close + 2,
                        target,
                        label: Some(&text[label_at..close]),
                    });
                    from = close + 2;
                    continue;
                }
            }
        }
        from = open + 1;
    }
    out
}

/// Splits one CSV/TSV row: a cell that starts with `"` is quoted (`""`
/// escapes a quote, its content is kept verbatim); other cells are trimmed.
pub fn split_delimited_row(line: &str, delim: char) -> Vec<String> {
    let mut cells = Vec::new();
    let mut buf = String::new();
    let (mut in_quotes, mut quoted, mut after_close) = (false, false, false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if in_quotes {
            if c == '"' {
                if chars.peek() == Some(&'"') {
                    buf.push('"');
                    chars.next();
                } else {
                    in_quotes = false;
                    quoted = true;
                    after_close = true;
                }
            } else {
                buf.push(c);
            }
            continue;
        }
        if c == delim {
            cells.push(finish_cell(&mut buf, quoted));
            quoted = false;
            after_close = false;
            continue;
        }
        if c == '"' && !quoted && buf.trim_matches(crate::doc::slug::is_js_space).is_empty() {
            buf.clear();
            in_quotes = true;
            continue;
        }
        if after_close && crate::doc::slug::is_js_space(c) {
            continue;
        }
        after_close = false;
        buf.push(c);
    }
    cells.push(finish_cell(&mut buf, quoted));
    cells
}

fn finish_cell(buf: &mut String, quoted: bool) -> String {
    let cell = if quoted {
        buf.clone()
    } else {
        buf.trim_matches(crate::doc::slug::is_js_space).to_string()
    };
    buf.clear();
    cell
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_rows_respecting_code_and_escapes() {
        assert_eq!(
            split_pipe_row("| a | `x|y` | b \\| c |"),
            ["a", "`x|y`", "b \\| c"]
        );
        assert_eq!(split_pipe_row("|:---|---:|"), [":---", "---:"]);
        // Non-ASCII text, an unpaired backtick (its cell swallows the rest)
        // and a trailing escaped pipe, which the outer strip still removes.
        assert_eq!(split_pipe_row("| é | ü`x | y |"), ["é", "ü`x | y"]);
        assert_eq!(split_pipe_row("a | b \\|"), ["a", "b \\"]);
    }

    #[test]
    fn finds_wikilinks() {
        let found: Vec<&str> = wikilinks("see [[a-b]] and [[ bad]] [[[x]]] [[c.d/e:f]]")
            .into_iter()
            .map(|(_, t)| t)
            .collect();
        assert_eq!(found, ["a-b", "x", "c.d/e:f"]);
    }

    #[test]
    fn finds_labelled_wikilinks() {
        let text = "see [[a|the A]] and [[b|]] [[c|x]y]] [[d|two\nlines]] [[e|é ok]]";
        let found: Vec<(&str, Option<&str>)> = wikilink_spans(text)
            .into_iter()
            .map(|l| (l.target, l.label))
            .collect();
        assert_eq!(
            found,
            [("a", Some("the A")), ("b", Some("")), ("e", Some("é ok"))]
        );
        let first = wikilink_spans(text)[0];
        assert_eq!(&text[first.start..first.end], "[[a|the A]]");
        assert_eq!(wikilinks(text)[0], (4, "a"));
    }

    #[test]
    fn splits_csv_rows_like_the_reference() {
        assert_eq!(
            split_delimited_row(" a , \"b,c\" ,d", ','),
            ["a", "b,c", "d"]
        );
        assert_eq!(
            split_delimited_row("\"x \"\"q\"\"\",y", ','),
            ["x \"q\"", "y"]
        );
        assert_eq!(split_delimited_row("a\tb", '\t'), ["a", "b"]);
        assert_eq!(split_delimited_row("", ','), [""]);
    }
}

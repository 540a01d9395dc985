//! Byte ranges and line/column positions over a document's text, for
//! editors: the parser's spans are whole 1-based lines, and a
//! [`LineIndex`] turns them (and any line/column) into byte offsets of the
//! text as the caller holds it, and back.
//!
//! Conventions, the same everywhere in this module:
//! - offsets are bytes into the text given to [`LineIndex::new`], BOM
//!   included; a leading BOM belongs to no line (line 1 starts after it),
//!   so the line/columns an editor that hides the BOM shows are the ones
//!   computed here;
//! - lines end at `\n`, `\r\n` or a lone `\r`, as the parser splits them;
//! - a line's range is its content without the terminator, and a span's
//!   range runs from its first line's first byte to its last line's last
//!   content byte, terminator excluded (half-open `start..end`);
//! - [`LineCol`] is 1-based in both parts, the column counted in UTF-8
//!   bytes; [`LineIndex::utf16_character`] gives the 0-based UTF-16 column
//!   the Language Server Protocol counts in.

use std::ops::Range;

use super::ast::{Node, Span};

/// A 1-based line and a 1-based column counted in UTF-8 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LineCol {
    /// 1-based line.
    pub line: u32,
    /// 1-based column, in UTF-8 bytes from the line's first byte.
    pub column: u32,
}

/// The line table of one text: where each line's content starts and ends.
#[derive(Debug, Clone)]
pub struct LineIndex<'a> {
    text: &'a str,
    /// `(start, end)` of each line's content (terminator excluded).
    lines: Vec<(usize, usize)>,
}

impl<'a> LineIndex<'a> {
    /// The line table of `text` (a leading BOM is skipped, see the module
    /// docs). A text ending in a terminator has an empty last line, as in
    /// [`super::lines::split`].
    pub fn new(text: &'a str) -> LineIndex<'a> {
        let bom = if text.starts_with('\u{feff}') { 3 } else { 0 };
        let body = &text[bom..];
        let lines = super::lines::split(body)
            .iter()
            .map(|l| {
                let start = l.start_in(body) + bom;
                (start, start + l.text.len())
            })
            .collect();
        LineIndex { text, lines }
    }

    /// The text this table indexes.
    pub fn text(&self) -> &'a str {
        self.text
    }

    /// Number of lines, the empty one after a final terminator included.
    pub fn line_count(&self) -> u32 {
        self.lines.len() as u32
    }

    /// The content bytes of 1-based `line`, without its terminator.
    pub fn line_range(&self, line: u32) -> Option<Range<usize>> {
        let &(s, e) = self.lines.get((line as usize).checked_sub(1)?)?;
        Some(s..e)
    }

    /// The content of 1-based `line`, without its terminator.
    pub fn line_text(&self, line: u32) -> Option<&'a str> {
        self.line_range(line).map(|r| &self.text[r])
    }

    /// The bytes of `span`: its first line's start to its last line's
    /// content end (terminator excluded). Lines past the end are clamped
    /// to the last line; `None` for a span starting past the end or at 0.
    pub fn span_range(&self, span: Span) -> Option<Range<usize>> {
        let first = self.line_range(span.start)?;
        let last_line = span.end.max(span.start).min(self.line_count());
        let last = self.line_range(last_line)?;
        Some(first.start..last.end)
    }

    /// The line/column of byte `offset` (clamped to the text, moved back to
    /// a character boundary; an offset inside a terminator or a BOM is the
    /// end of the line it follows, or line 1 column 1).
    pub fn line_col(&self, offset: usize) -> LineCol {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let idx = self
            .lines
            .partition_point(|&(s, _)| s <= offset)
            .saturating_sub(1);
        let (s, e) = self.lines[idx];
        let col = offset.clamp(s, e) - s;
        LineCol {
            line: idx as u32 + 1,
            column: col as u32 + 1,
        }
    }

    /// The byte offset of `pos`; `None` when the line does not exist or the
    /// column is past the line's end + 1 or inside a character.
    pub fn offset(&self, pos: LineCol) -> Option<usize> {
        let r = self.line_range(pos.line)?;
        let at = r.start + (pos.column as usize).checked_sub(1)?;
        (at <= r.end && self.text.is_char_boundary(at)).then_some(at)
    }

    /// The 0-based UTF-16 column of `pos` (what LSP calls `character`).
    pub fn utf16_character(&self, pos: LineCol) -> Option<u32> {
        let r = self.line_range(pos.line)?;
        let at = self.offset(pos)?;
        Some(self.text[r.start..at].encode_utf16().count() as u32)
    }

    /// The byte offset of 0-based UTF-16 column `character` on 1-based
    /// `line`: past the line's end means its end, inside a surrogate pair
    /// means the character's start.
    pub fn offset_of_utf16(&self, line: u32, character: u32) -> Option<usize> {
        let r = self.line_range(line)?;
        let mut units = 0u32;
        for (i, c) in self.text[r.clone()].char_indices() {
            let next = units + c.len_utf16() as u32;
            if next > character {
                return Some(r.start + i);
            }
            units = next;
        }
        Some(r.end)
    }

    /// The range of `value` in `key="value"` (or `key=value`) on 1-based
    /// `line`: where an attribute's value (an id, a reference) is written.
    pub fn attr_value_range(&self, line: u32, key: &str, value: &str) -> Option<Range<usize>> {
        let r = self.line_range(line)?;
        let content = &self.text[r.clone()];
        let mut from = 0;
        while let Some(found) = content[from..].find(key) {
            let at = from + found;
            from = at + key.len();
            let before_ok = at == 0 || !is_key_char(content.as_bytes()[at - 1]);
            let Some(rest) = content[at + key.len()..].strip_prefix('=') else {
                continue;
            };
            let quoted = rest.strip_prefix('"');
            let value_at = at + key.len() + 1 + usize::from(quoted.is_some());
            if before_ok && !value.is_empty() && quoted.unwrap_or(rest).starts_with(value) {
                let s = r.start + value_at;
                return Some(s..s + value.len());
            }
        }
        None
    }

    /// The range of 1-based `line` from its first non-blank character to
    /// its end (the whole, empty, content when it is blank).
    pub fn trimmed_line_range(&self, line: u32) -> Option<Range<usize>> {
        let r = self.line_range(line)?;
        let content = &self.text[r.clone()];
        let lead = content.len() - content.trim_start().len();
        Some(if lead == content.len() {
            r
        } else {
            r.start + lead..r.end
        })
    }
}

/// Whether `b` can be part of an attribute key.
fn is_key_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b':')
}

impl Node {
    /// The node's bytes in the text `index` was built from, by
    /// [`LineIndex::span_range`]: first line's start to last line's content
    /// end, terminator excluded.
    pub fn byte_range(&self, index: &LineIndex<'_>) -> Option<Range<usize>> {
        index.span_range(self.span)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::parse;

    #[test]
    fn node_ranges_cover_their_lines_without_the_final_terminator() {
        let src = "# T\n\n::note{id=\"n\"}\nbody\n::\n";
        let doc = parse(src);
        let ix = LineIndex::new(src);
        let n = doc.find("n").unwrap();
        let r = n.byte_range(&ix).unwrap();
        assert_eq!(&src[r], "::note{id=\"n\"}\nbody\n::");
        assert_eq!(ix.line_count(), 6);
        assert_eq!(
            ix.line_col(src.find("body").unwrap()),
            LineCol { line: 4, column: 1 }
        );
    }

    #[test]
    fn crlf_and_lone_cr_terminators_are_outside_every_line() {
        let src = "# T\r\n\r\n::note{id=\"n\"}\r\nbody\rmore\r\n::\r\n";
        let doc = parse(src);
        let ix = LineIndex::new(src);
        let r = doc.find("n").unwrap().byte_range(&ix).unwrap();
        assert_eq!(&src[r], "::note{id=\"n\"}\r\nbody\rmore\r\n::");
        assert_eq!(ix.line_text(4), Some("body"));
        assert_eq!(ix.line_text(5), Some("more"));
        // An offset on the `\n` of a `\r\n` is the end of its line.
        let lf = src.find("\r\n").unwrap() + 1;
        assert_eq!(ix.line_col(lf), LineCol { line: 1, column: 4 });
        assert_eq!(ix.offset(LineCol { line: 2, column: 1 }), Some(5));
        assert_eq!(ix.offset(LineCol { line: 1, column: 5 }), None);
    }

    #[test]
    fn a_bom_belongs_to_no_line() {
        let src = "\u{feff}::note{id=\"n\"}\nx\n::\n";
        let doc = parse(src);
        let ix = LineIndex::new(src);
        let r = doc.find("n").unwrap().byte_range(&ix).unwrap();
        assert_eq!(r.start, 3);
        assert_eq!(&src[r], "::note{id=\"n\"}\nx\n::");
        assert_eq!(ix.line_col(0), LineCol { line: 1, column: 1 });
        assert_eq!(ix.line_col(3), LineCol { line: 1, column: 1 });
        assert_eq!(ix.attr_value_range(1, "id", "n"), Some(14..15));
    }

    #[test]
    fn multibyte_columns_in_bytes_and_utf16() {
        // é: 2 bytes, 1 UTF-16 unit; 😀: 4 bytes, 2 units.
        let src = "é😀[[x]]\n";
        let ix = LineIndex::new(src);
        let at = src.find("[[").unwrap();
        let pos = ix.line_col(at);
        assert_eq!(pos, LineCol { line: 1, column: 7 });
        assert_eq!(ix.utf16_character(pos), Some(3));
        assert_eq!(ix.offset_of_utf16(1, 3), Some(at));
        // Inside the surrogate pair: the emoji's start; past the end: the end.
        assert_eq!(ix.offset_of_utf16(1, 2), Some(2));
        assert_eq!(ix.offset_of_utf16(1, 99), Some(src.len() - 1));
        // Inside a character: moved back to its start; not an offset.
        assert_eq!(ix.line_col(1), LineCol { line: 1, column: 1 });
        assert_eq!(ix.offset(LineCol { line: 1, column: 2 }), None);
    }

    #[test]
    fn spans_past_the_end_are_clamped_or_refused() {
        let src = "a\nb";
        let ix = LineIndex::new(src);
        assert_eq!(ix.span_range(Span::new(1, 9)), Some(0..3));
        assert_eq!(ix.span_range(Span::new(3, 3)), None);
        assert_eq!(ix.span_range(Span::new(0, 1)), None);
        assert_eq!(ix.line_col(99), LineCol { line: 2, column: 2 });
        assert_eq!(ix.trimmed_line_range(1), Some(0..1));
    }
}

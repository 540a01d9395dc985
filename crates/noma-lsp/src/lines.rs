//! Byte offsets ↔ LSP positions. LSP counts a line's characters in UTF-16
//! code units (its default position encoding); the parser counts lines
//! from 1 and the text in bytes, so every range crosses this table. Lines
//! end at `\n`, `\r\n` or a lone `\r`, as the LSP spec and the parser
//! (`noma check`) both count them.

use lsp_types::{Position, Range};

/// The start of every line of one text, for position conversions.
#[derive(Debug, Clone)]
pub struct LineIndex {
    /// Byte offset where each line starts; `starts[0] == 0`.
    starts: Vec<usize>,
    len: usize,
}

impl LineIndex {
    /// The index of `text` (lines end at `\n`, `\r\n` or a lone `\r`).
    pub fn new(text: &str) -> LineIndex {
        let mut starts = vec![0];
        let bytes = text.as_bytes();
        if memchr::memchr(b'\r', bytes).is_none() {
            starts.extend(memchr::memchr_iter(b'\n', bytes).map(|i| i + 1));
        } else {
            for at in memchr::memchr2_iter(b'\n', b'\r', bytes) {
                // The `\r` of a `\r\n` pair does not end a line; its `\n` does.
                if !(bytes[at] == b'\r' && bytes.get(at + 1) == Some(&b'\n')) {
                    starts.push(at + 1);
                }
            }
        }
        LineIndex {
            starts,
            len: text.len(),
        }
    }

    /// Number of lines (a text ending in `\n` has an empty last line).
    pub fn line_count(&self) -> usize {
        self.starts.len()
    }

    /// The content of 0-based `line` without its line ending, or `""` past
    /// the end.
    pub fn line<'t>(&self, text: &'t str, line: usize) -> &'t str {
        let Some(&start) = self.starts.get(line) else {
            return "";
        };
        let end = self.starts.get(line + 1).map_or(self.len, |&e| e);
        let s = &text[start..end.max(start)];
        // Its line end: `\n`, `\r\n` or `\r` (only the last line has none,
        // and it cannot end in either).
        let s = s.strip_suffix('\n').unwrap_or(s);
        s.strip_suffix('\r').unwrap_or(s)
    }

    /// Byte offset where 0-based `line` starts (the text's end past it).
    pub fn line_start(&self, line: usize) -> usize {
        self.starts.get(line).copied().unwrap_or(self.len)
    }

    /// The LSP position of byte `offset` (clamped to the text and moved
    /// back to a character boundary).
    pub fn position(&self, text: &str, offset: usize) -> Position {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.starts.partition_point(|&s| s <= offset) - 1;
        let character = utf16_len(&text[self.starts[line]..offset]);
        Position::new(line as u32, character)
    }

    /// The byte offset of an LSP position: a character past the line's end
    /// means its end, a line past the text's end means the text's end, and
    /// a position inside a surrogate pair means the character's start.
    pub fn offset(&self, text: &str, pos: Position) -> usize {
        let line = pos.line as usize;
        if line >= self.starts.len() {
            return self.len;
        }
        let content = self.line(text, line);
        let mut units = 0u32;
        for (i, c) in content.char_indices() {
            let next = units + c.len_utf16() as u32;
            if next > pos.character {
                return self.starts[line] + i;
            }
            units = next;
        }
        self.starts[line] + content.len()
    }

    /// The range of bytes `start..end` of the text.
    pub fn range(&self, text: &str, start: usize, end: usize) -> Range {
        Range::new(self.position(text, start), self.position(text, end))
    }

    /// The range of 0-based `line` from its first non-blank character to
    /// its end (the whole line when it is blank).
    pub fn line_range(&self, text: &str, line: usize) -> Range {
        let content = self.line(text, line);
        let start = self.line_start(line);
        let trimmed = content.trim_start();
        let lead = if trimmed.is_empty() {
            0
        } else {
            content.len() - trimmed.len()
        };
        self.range(text, start + lead, start + content.len())
    }
}

/// `text` with one `didChange` content change applied: its range (LSP
/// positions, clamped as [`LineIndex::offset`] clamps them) replaced by
/// its text, or the whole text replaced when it has no range.
#[cfg(test)]
pub(crate) fn apply_change(
    mut text: String,
    change: lsp_types::TextDocumentContentChangeEvent,
) -> String {
    apply_change_with(&mut text, change, None);
    text
}

/// [`apply_change`] in place, with `index` the line table of `text` when
/// the caller has it (the first keystroke after an analysis): the byte
/// range of the old text replaced, or `None` when the whole text was.
pub(crate) fn apply_change_with(
    text: &mut String,
    change: lsp_types::TextDocumentContentChangeEvent,
    index: Option<&LineIndex>,
) -> Option<(usize, usize)> {
    let Some(range) = change.range else {
        *text = change.text;
        return None;
    };
    let owned;
    let index = match index {
        Some(ix) => ix,
        None => {
            owned = LineIndex::new(text);
            &owned
        }
    };
    let start = index.offset(text, range.start);
    let end = index.offset(text, range.end).max(start);
    text.replace_range(start..end, &change.text);
    Some((start, end))
}

/// Length of `s` in UTF-16 code units.
pub(crate) fn utf16_len(s: &str) -> u32 {
    s.chars().map(|c| c.len_utf16() as u32).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_positions_are_byte_columns() {
        let t = "ab\ncd\n";
        let ix = LineIndex::new(t);
        assert_eq!(ix.position(t, 4), Position::new(1, 1));
        assert_eq!(ix.offset(t, Position::new(1, 1)), 4);
        assert_eq!(ix.line_count(), 3);
        assert_eq!(ix.line(t, 1), "cd");
    }

    #[test]
    fn characters_count_in_utf16_units() {
        // é is 2 bytes and 1 unit; 😀 is 4 bytes and 2 units (a surrogate pair).
        let t = "é😀[[x]]\n";
        let ix = LineIndex::new(t);
        let at_link = t.find("[[").unwrap();
        assert_eq!(at_link, 6);
        assert_eq!(ix.position(t, at_link), Position::new(0, 3));
        assert_eq!(ix.offset(t, Position::new(0, 3)), at_link);
        // Inside the surrogate pair: the emoji's start.
        assert_eq!(ix.offset(t, Position::new(0, 2)), 2);
        // Inside a multi-byte character: moved back to its start.
        assert_eq!(ix.position(t, 1), Position::new(0, 0));
    }

    #[test]
    fn crlf_and_out_of_range_positions() {
        let t = "a\r\nbc\r\n";
        let ix = LineIndex::new(t);
        assert_eq!(ix.line(t, 0), "a");
        assert_eq!(ix.offset(t, Position::new(0, 99)), 1);
        assert_eq!(ix.offset(t, Position::new(9, 0)), t.len());
        assert_eq!(ix.position(t, 99), Position::new(2, 0));
        assert_eq!(
            ix.line_range(t, 1),
            Range::new(Position::new(1, 0), Position::new(1, 2))
        );
    }

    #[test]
    fn changes_apply_by_range_or_replace_the_text() {
        use lsp_types::TextDocumentContentChangeEvent as Change;
        let at = |l, c| Position::new(l, c);
        let edit = |start, end, text: &str| Change {
            range: Some(Range::new(start, end)),
            range_length: None,
            text: text.to_string(),
        };
        let t = "ab\r\né😀x\n".to_string();
        // Typing after the surrogate pair (UTF-16 column 3).
        let t = apply_change(t, edit(at(1, 3), at(1, 3), "Z"));
        assert_eq!(t, "ab\r\né😀Zx\n");
        // Deleting across the CRLF line end.
        let t = apply_change(t, edit(at(0, 1), at(1, 1), ""));
        assert_eq!(t, "a😀Zx\n");
        // Past the end: clamped to the text's end.
        let t = apply_change(t, edit(at(9, 0), at(9, 4), "!"));
        assert_eq!(t, "a😀Zx\n!");
        let whole = Change {
            range: None,
            range_length: None,
            text: "new".to_string(),
        };
        assert_eq!(apply_change(t, whole), "new");
    }

    /// A lone `\r` ends a line as `\n` and `\r\n` do, as the parser and
    /// `noma check` count lines.
    #[test]
    fn lone_cr_ends_a_line_as_the_parser_counts() {
        let t = "a\rb\r\nc\nd\r\re";
        let ix = LineIndex::new(t);
        let lines: Vec<&str> = (0..ix.line_count()).map(|l| ix.line(t, l)).collect();
        assert_eq!(lines, ["a", "b", "c", "d", "", "e"]);
        let parsed: Vec<&str> = noma_core::doc::lines::split(t)
            .iter()
            .map(|l| l.text)
            .collect();
        assert_eq!(lines, parsed);
        assert_eq!(ix.position(t, 2), Position::new(1, 0));
        assert_eq!(ix.offset(t, Position::new(4, 5)), 9);
        assert_eq!(ix.offset(t, Position::new(5, 0)), 10);
        // Typing at the start of the line after a lone CR.
        use lsp_types::TextDocumentContentChangeEvent as Change;
        let at = Position::new(1, 0);
        let edit = Change {
            range: Some(Range::new(at, at)),
            range_length: None,
            text: "X".to_string(),
        };
        assert_eq!(apply_change(t.to_string(), edit), "a\rXb\r\nc\nd\r\re");
    }

    #[test]
    fn line_range_skips_leading_blanks() {
        let t = "  ::note{id=\"n\"}\n";
        let ix = LineIndex::new(t);
        assert_eq!(
            ix.line_range(t, 0),
            Range::new(Position::new(0, 2), Position::new(0, 16))
        );
    }
}

//! Line splitting. A line ends at `\n`, `\r\n` or a lone `\r` (the reference
//! normalises `\r\n?` to `\n` before splitting), so CRLF files parse exactly
//! like LF files while the bytes themselves are never rewritten.

use super::ast::Text;

/// One physical line: its text without the terminator, borrowed from the
/// source. Byte offsets are not stored: a big document has one `Line` per
/// line, and at 16 bytes instead of 32 the line table of a 3 MB document
/// is 2.6 MB of fresh memory instead of 5.2 (fresh pages cost a fault and a
/// zeroing each). [`Line::start_in`] recovers the offset when needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Line<'a> {
    /// The line's text, without its terminator.
    pub text: &'a str,
}

impl Line<'_> {
    /// Byte offset of the line's first byte in `src`, the string it was
    /// split from (or a string that contains that one).
    pub fn start_in(&self, src: &str) -> usize {
        let at = (self.text.as_ptr() as usize).wrapping_sub(src.as_ptr() as usize);
        debug_assert!(at + self.text.len() <= src.len(), "line is not in src");
        at
    }
}

/// Splits `src` into lines. Like JavaScript's `split("\n")` after newline
/// normalisation, a trailing terminator yields a final empty line.
pub fn split(src: &str) -> Vec<Line<'_>> {
    let bytes = src.as_bytes();
    let mut out;
    let mut start = 0usize;
    if memchr::memchr(b'\r', bytes).is_none() {
        // LF-only text (the common case): one needle is markedly cheaper,
        // and counting first sizes the vector exactly (a growing one would
        // copy itself and touch half as much memory again). Lines are short:
        // the portable word-at-a-time search, inlined, finds each end in
        // fewer steps than the vectorised one, whose per-call dispatch
        // costs more than a line (2-3% of checking a 3 MB document).
        out = Vec::with_capacity(memchr::memchr_iter(b'\n', bytes).count() + 1);
        for at in memchr::arch::all::memchr::One::new(b'\n').iter(bytes) {
            out.push(Line {
                text: &src[start..at],
            });
            start = at + 1;
        }
    } else {
        out = Vec::with_capacity(bytes.len() / 32 + 1);
        for at in memchr::arch::all::memchr::Two::new(b'\n', b'\r').iter(bytes) {
            if at < start {
                // The `\n` of a `\r\n` pair already consumed.
                continue;
            }
            let term_len = if bytes[at] == b'\r' && bytes.get(at + 1) == Some(&b'\n') {
                2
            } else {
                1
            };
            out.push(Line {
                text: &src[start..at],
            });
            start = at + term_len;
        }
    }
    out.push(Line {
        text: &src[start..],
    });
    out
}

/// The document's last line number (§6.3): the number of physical lines,
/// not counting the empty artifact after a trailing newline.
pub fn last_line(lines: &[Line<'_>]) -> u32 {
    let n = lines.len();
    if n > 1 && lines[n - 1].text.is_empty() {
        (n - 1) as u32
    } else {
        n as u32
    }
}

/// The source slice for lines `start..=end` (1-based, inclusive), joined
/// with `\n` and without a trailing newline — the input of `baseHash`.
pub fn slice_joined(lines: &[Line<'_>], start: u32, end: u32) -> String {
    join_into(lines, start, end)
}

/// [`slice_joined`] as the AST's string type (short slices stay inline).
pub fn slice_joined_text(lines: &[Line<'_>], start: u32, end: u32) -> Text {
    join_into(lines, start, end)
}

/// What [`join_into`] can build: `String` and the AST's [`Text`].
trait JoinTarget: Default {
    fn with_capacity(n: usize) -> Self;
    fn push_str(&mut self, s: &str);
}

impl JoinTarget for String {
    fn with_capacity(n: usize) -> Self {
        String::with_capacity(n)
    }
    fn push_str(&mut self, s: &str) {
        String::push_str(self, s)
    }
}

impl JoinTarget for Text {
    fn with_capacity(n: usize) -> Self {
        Text::with_capacity(n)
    }
    fn push_str(&mut self, s: &str) {
        Text::push_str(self, s)
    }
}

fn join_into<T: JoinTarget>(lines: &[Line<'_>], start: u32, end: u32) -> T {
    let s = (start.max(1) - 1) as usize;
    let e = (end as usize).min(lines.len());
    if s >= e {
        return T::default();
    }
    // The lines lie in one source, so the bytes from the first line's start
    // to the last line's end bound the joined length (terminators are one
    // or two bytes; the join puts one).
    let (first, last) = (lines[s].text, lines[e - 1].text);
    let span = (last.as_ptr() as usize + last.len()).saturating_sub(first.as_ptr() as usize);
    let mut out = T::with_capacity(span);
    for (k, line) in lines[s..e].iter().enumerate() {
        if k > 0 {
            out.push_str("\n");
        }
        out.push_str(line.text);
    }
    out
}

/// True when `new` is `old` with its LF line endings turned into CRLF and
/// nothing else changed: what git's `core.autocrlf=true` checkout makes of
/// a committed LF file when nothing keeps it byte-exact.
pub fn is_crlf_conversion(old: &[u8], new: &[u8]) -> bool {
    if old == new || old.contains(&b'\r') || new.len() <= old.len() {
        return false;
    }
    let mut lf = Vec::with_capacity(old.len());
    for (i, &b) in new.iter().enumerate() {
        if !(b == b'\r' && new.get(i + 1) == Some(&b'\n')) {
            lf.push(b);
        }
    }
    lf == old
}

/// The line terminator a whole text uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Eol {
    /// `\n`.
    Lf,
    /// `\r\n`.
    Crlf,
}

impl Eol {
    /// The name people know it by (`LF`, `CRLF`).
    pub fn name(self) -> &'static str {
        match self {
            Eol::Lf => "LF",
            Eol::Crlf => "CRLF",
        }
    }

    /// The other kind.
    pub fn other(self) -> Eol {
        match self {
            Eol::Lf => Eol::Crlf,
            Eol::Crlf => Eol::Lf,
        }
    }
}

/// The one terminator every line break of `text` uses; None when it has
/// no line break, mixes `\n` and `\r\n`, or has a lone `\r`.
pub fn uniform_eol(text: &[u8]) -> Option<Eol> {
    let lf = memchr::memchr_iter(b'\n', text).count();
    let cr = memchr::memchr_iter(b'\r', text).count();
    let crlf = memchr::memmem::find_iter(text, b"\r\n").count();
    match (lf, cr) {
        (0, _) => None,
        (_, 0) => Some(Eol::Lf),
        _ if cr == crlf && crlf == lf => Some(Eol::Crlf),
        _ => None,
    }
}

/// A text saved with other line endings than `model`'s, given back
/// `model`'s: what an editor that saves CRLF (or LF) did to a document,
/// undone, so the edit left is the person's own. The terminators are
/// `model`'s (which must use one kind throughout) and `text` must use the
/// other kind somewhere; a lone `\r` is left as it is. None otherwise.
pub fn with_line_endings_of(model: &str, text: &str) -> Option<(Eol, String)> {
    with_line_endings(uniform_eol(model.as_bytes())?, text)
}

/// `text` given `eol` line endings throughout, with the kind it used
/// instead (see [`with_line_endings_of`]); None when it uses no other.
pub fn with_line_endings(eol: Eol, text: &str) -> Option<(Eol, String)> {
    let (saved, out) = match eol {
        Eol::Lf if text.contains("\r\n") => (Eol::Crlf, text.replace("\r\n", "\n")),
        Eol::Crlf => {
            let bytes = text.as_bytes();
            let mut out = String::with_capacity(text.len() + text.len() / 32);
            let (mut from, mut any) = (0, false);
            for at in memchr::memchr_iter(b'\n', bytes) {
                if at == 0 || bytes[at - 1] != b'\r' {
                    out.push_str(&text[from..at]);
                    out.push('\r');
                    (from, any) = (at, true);
                }
            }
            if !any {
                return None;
            }
            out.push_str(&text[from..]);
            (Eol::Lf, out)
        }
        Eol::Lf => return None,
    };
    Some((saved, out))
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_crlf_conversion_is_told_from_an_edit() {
        use super::is_crlf_conversion as conv;
        assert!(conv(b"a\nb\n", b"a\r\nb\r\n"));
        assert!(!conv(b"a\nb\n", b"a\nb\n"), "unchanged");
        assert!(!conv(b"a\nb\n", b"a\r\nc\r\n"), "edited too");
        assert!(!conv(b"a\r\n", b"a\r\n"), "already CRLF");
        assert!(
            !conv(b"a\nb\n", b"a\rb\r"),
            "lone CR is not git's conversion"
        );
    }
    use super::*;

    #[test]
    fn a_save_with_other_line_endings_is_given_back_the_models() {
        use super::{uniform_eol, with_line_endings_of as back, Eol};
        assert_eq!(uniform_eol(b"a\nb\n"), Some(Eol::Lf));
        assert_eq!(uniform_eol(b"a\r\nb"), Some(Eol::Crlf));
        assert_eq!(uniform_eol(b"a\r\nb\n"), None, "mixed");
        assert_eq!(uniform_eol(b"a\rb\n"), None, "lone CR");
        assert_eq!(uniform_eol(b"one line"), None);
        // CRLF saved over LF, an edit included: the edit stays.
        assert_eq!(
            back("a\nb\n", "a\r\nB\r\nc\r\n"),
            Some((Eol::Crlf, "a\nB\nc\n".to_string()))
        );
        // LF saved over CRLF; a line without terminator at the end.
        assert_eq!(
            back("a\r\nb", "a\nb\nc"),
            Some((Eol::Lf, "a\r\nb\r\nc".to_string()))
        );
        assert_eq!(
            back("a\r\n", "\nx\r\n"),
            Some((Eol::Lf, "\r\nx\r\n".to_string()))
        );
        assert_eq!(back("a\nb\n", "a\nc\n"), None, "same line endings");
        assert_eq!(back("a\r\nb\r\n", "a\r\nc\r\n"), None);
        assert_eq!(back("a\r\nb\n", "a\r\nb\r\n"), None, "mixed model");
        assert_eq!(back("ab", "a\r\nb"), None, "model has no line break");
        // A lone CR is nobody's line ending convention: kept.
        assert_eq!(
            back("a\n", "a\r\nb\rc\r\n"),
            Some((Eol::Crlf, "a\nb\rc\n".to_string()))
        );
    }

    #[test]
    fn splits_lf_crlf_and_cr() {
        let v: Vec<&str> = split("a\nb\r\nc\rd").iter().map(|l| l.text).collect();
        assert_eq!(v, ["a", "b", "c", "d"]);
    }

    #[test]
    fn trailing_newline_yields_artifact_line() {
        let lines = split("a\nb\n");
        assert_eq!(lines.len(), 3);
        assert_eq!(last_line(&lines), 2);
        assert_eq!(last_line(&split("a\nb")), 2);
        assert_eq!(last_line(&split("")), 1);
    }

    #[test]
    fn slice_joins_without_trailing_newline() {
        let lines = split("a\r\nb\r\nc\r\n");
        assert_eq!(slice_joined(&lines, 1, 2), "a\nb");
        assert_eq!(slice_joined(&lines, 3, 9), "c\n");
    }
}

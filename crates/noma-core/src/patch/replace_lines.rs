//! `x-noma/replace_lines`: the one extension op, written by `noma record`
//! for hand edits that no v1.0 op expresses (prose and paragraphs in a
//! section, list items, tables and cards outside addressable directives,
//! frontmatter, blank-line layout) and for a transcript's genesis record.
//!
//! ```json
//! {"op":"x-noma/replace_lines","line":12,"old":"A sentence.\n","new":"Another sentence.\n"}
//! ```
//!
//! The op replaces whole lines of the file's bytes: `old` must be the text
//! that starts at 1-based line `line` (the BOM, if any, belongs to line 1),
//! and both `old` and `new` are whole lines — empty, or ending with `\n`
//! unless they end the file. It works on bytes, not on the parse, so its
//! effect never depends on the parser: replay applies it the same way in
//! every version. `old` doubles as the precondition (a mismatch is
//! `target_missing`) and as the audit trail of what the human changed.
//!
//! The op is outside the v1.0 catalogue: agents' requests (CLI `noma patch`,
//! MCP `patch_block`) refuse it as `unsupported_op`
//! ([`crate::plan::check_request`]); only `noma record` writes it, and
//! `.noma/config.yml` `record_text_edits: false` forbids it altogether.

use super::{fail, OpResult, PatchErrorCode};

/// The op's name (namespaced: it is not a v1.0 op).
pub const REPLACE_LINES: &str = "x-noma/replace_lines";

/// The op of a genesis record: the empty document becomes `text`, so a
/// transcript that opens with it replays from its own content (§5.5).
pub fn genesis_op(text: &str) -> serde_json::Value {
    serde_json::json!({"op": REPLACE_LINES, "line": 1, "old": "", "new": text})
}

/// Applies the op to the whole `source` (BOM included).
pub(crate) fn replace_lines(source: &str, line: f64, old: &str, new: &str) -> OpResult<String> {
    if !(line >= 1.0 && line.fract() == 0.0 && line <= usize::MAX as f64) {
        return fail(
            PatchErrorCode::InvalidContent,
            format!("`line` must be a whole number from 1, got {line}"),
        );
    }
    let line = line as usize;
    let Some(start) = line_start(source, line) else {
        let count = memchr::memchr_iter(b'\n', source.as_bytes()).count() + 1;
        return fail(
            PatchErrorCode::TargetMissing,
            format!("line {line} is past the end of the document ({count} lines)"),
        );
    };
    let rest = &source[start..];
    if !rest.starts_with(old) {
        return fail(
            PatchErrorCode::TargetMissing,
            format!(
                "the text at line {line} is not the recorded `old` text (the document changed)"
            ),
        );
    }
    let end = start + old.len();
    let reaches_eof = end == source.len();
    let whole = |s: &str| s.is_empty() || s.ends_with('\n') || reaches_eof;
    if !whole(old) || !whole(new) {
        return fail(
            PatchErrorCode::InvalidContent,
            "`old` and `new` must be whole lines (ending with a newline unless they end the file)",
        );
    }
    let mut out = String::with_capacity(source.len() - old.len() + new.len());
    out.push_str(&source[..start]);
    out.push_str(new);
    out.push_str(&source[end..]);
    Ok(out)
}

/// Where a hunk recorded on one branch stands after another branch moved
/// lines around it: the 1-based line nearest to `line` at which `source`
/// holds exactly `old`, as whole lines (the offset search of `patch(1)`).
/// `None` when `old` is empty (an insertion has no text to find) or is no
/// longer in `source` (the other side changed those lines: a conflict).
pub fn relocate(source: &str, line: usize, old: &str) -> Option<usize> {
    if old.is_empty() {
        return None;
    }
    let starts =
        std::iter::once(0).chain(memchr::memchr_iter(b'\n', source.as_bytes()).map(|i| i + 1));
    starts
        .enumerate()
        .filter(|&(_, at)| {
            let rest = &source[at..];
            rest.starts_with(old) && (old.ends_with('\n') || rest.len() == old.len())
        })
        .map(|(i, _)| i + 1)
        .min_by_key(|&found| found.abs_diff(line))
}

/// Byte offset where 1-based `line` starts; `None` past the end. The line
/// after a final newline starts at the end of the text.
fn line_start(source: &str, line: usize) -> Option<usize> {
    if line == 1 {
        return Some(0);
    }
    memchr::memchr_iter(b'\n', source.as_bytes())
        .nth(line - 2)
        .map(|i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_inserts_and_deletes_whole_lines() {
        let src = "# T\n\nold prose\n";
        assert_eq!(
            replace_lines(src, 3.0, "old prose\n", "new prose\n").unwrap(),
            "# T\n\nnew prose\n"
        );
        assert_eq!(
            replace_lines(src, 4.0, "", "more\n").unwrap(),
            "# T\n\nold prose\nmore\n"
        );
        assert_eq!(
            replace_lines(src, 2.0, "\n", "").unwrap(),
            "# T\nold prose\n"
        );
        // Genesis: from the empty document.
        assert_eq!(replace_lines("", 1.0, "", src).unwrap(), src);
        // A last line without newline may be replaced by one without.
        assert_eq!(replace_lines("a\nb", 2.0, "b", "c").unwrap(), "a\nc");
    }

    #[test]
    fn relocation_finds_the_nearest_copy_of_the_old_lines() {
        let src = "a\nx\nb\nx\nc\n";
        assert_eq!(relocate(src, 2, "x\n"), Some(2));
        assert_eq!(relocate(src, 5, "x\n"), Some(4));
        assert_eq!(relocate(src, 9, "b\nx\n"), Some(3));
        // Whole lines only, the last one possibly without a newline.
        assert_eq!(relocate("ax\n", 1, "a"), None);
        assert_eq!(relocate("a\nlast", 1, "last"), Some(2));
        assert_eq!(relocate(src, 2, "y\n"), None);
        assert_eq!(relocate(src, 2, ""), None);
    }

    #[test]
    fn the_old_text_is_the_precondition() {
        let e = replace_lines("a\nb\n", 2.0, "x\n", "y\n").unwrap_err();
        assert_eq!(e.code, PatchErrorCode::TargetMissing);
        let e = replace_lines("a\n", 5.0, "", "y\n").unwrap_err();
        assert_eq!(e.code, PatchErrorCode::TargetMissing);
    }

    #[test]
    fn partial_lines_and_bad_numbers_are_refused() {
        for (line, old, new) in [
            (1.0, "a", "b\n"),
            (1.0, "a\n", "b"),
            (0.0, "", "x\n"),
            (1.5, "", "x\n"),
            (f64::NAN, "", "x\n"),
        ] {
            let e = replace_lines("a\nb\n", line, old, new).unwrap_err();
            assert_eq!(
                e.code,
                PatchErrorCode::InvalidContent,
                "{line} {old:?} {new:?}"
            );
        }
    }
}

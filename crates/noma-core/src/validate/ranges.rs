//! Exact ranges on the validator's diagnostics, for editors. The validator
//! runs on the tree alone and positions a finding at a line; given the text
//! too, [`attach_ranges`] narrows each finding to the token it is about:
//! the broken reference as written (`[[x]]` or `for="x"`), else the id of
//! the node it names when that id is written on the finding's line, else
//! the line's text from its first non-blank character; a finding with no
//! line gets its node's whole range, and one with neither stays without.

use std::ops::Range;

use crate::diag::{Diagnostic, SourceRange};
use crate::doc::{inline, Document, LineIndex};

use super::Options;

/// Validates `doc` (parsed from `text`) like [`super::validate`], with
/// every diagnostic's [`Diagnostic::range`] filled by [`attach_ranges`].
pub fn validate_with_ranges(text: &str, doc: &Document, opts: &Options) -> Vec<Diagnostic> {
    let mut diags = super::validate(doc, opts);
    attach_ranges(text, doc, &mut diags);
    diags
}

/// Fills [`Diagnostic::range`] of each of `diags`, found on `doc` parsed
/// from `text` (byte offsets are into `text`, BOM included; see
/// [`crate::doc::range`]).
pub fn attach_ranges(text: &str, doc: &Document, diags: &mut [Diagnostic]) {
    // The line table costs a pass over the text; none is needed for none.
    if diags.is_empty() {
        return;
    }
    let index = LineIndex::new(text);
    for d in diags.iter_mut() {
        d.range = range_of(&index, doc, d).map(|r| SourceRange::of_bytes(&index, r));
    }
}

fn range_of(index: &LineIndex<'_>, doc: &Document, d: &Diagnostic) -> Option<Range<usize>> {
    let node = d.node_id.as_deref().and_then(|id| doc.find(id));
    let Some(line) = d.pos.map(|p| p.line) else {
        return node.and_then(|n| n.byte_range(index));
    };
    let token = if d.code == "broken-reference" {
        reference_token(index, line, &d.message)
    } else {
        d.node_id
            .as_deref()
            .and_then(|id| index.attr_value_range(line, "id", id))
    };
    token.or_else(|| index.trimmed_line_range(line))
}

/// The reference a broken-reference message names (`[[x]] points …` or
/// `attr="x" points …`), found on `line`.
fn reference_token(index: &LineIndex<'_>, line: u32, message: &str) -> Option<Range<usize>> {
    let written = message.split(" points at ").next()?;
    if let Some(target) = written
        .strip_prefix("[[")
        .and_then(|w| w.strip_suffix("]]"))
    {
        let r = index.line_range(line)?;
        let (off, _) = inline::wikilinks(&index.text()[r.clone()])
            .into_iter()
            .find(|(_, t)| *t == target)?;
        let start = r.start + off + 2;
        return Some(start..start + target.len());
    }
    let (attr, quoted) = written.split_once('=')?;
    let target = quoted.strip_prefix('"')?.strip_suffix('"')?;
    index.attr_value_range(line, attr, target)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::parse;

    fn ranged(text: &str) -> Vec<(String, String)> {
        let doc = parse(text);
        validate_with_ranges(text, &doc, &Options::default())
            .into_iter()
            .map(|d| (d.code, text[d.range.unwrap().bytes()].to_string()))
            .collect()
    }

    #[test]
    fn broken_references_point_at_the_reference_as_written() {
        let text = "\u{feff}# Té\r\n\r\nSee [[nowhere]] and [[t]].\r\n\r\n::comment{id=\"c\" target=\"gone\"}\r\nx\r\n::\r\n";
        let found = ranged(text);
        assert!(
            found.contains(&("broken-reference".into(), "nowhere".into())),
            "{found:?}"
        );
        assert!(
            found.contains(&("broken-reference".into(), "gone".into())),
            "{found:?}"
        );
    }

    #[test]
    fn duplicate_ids_point_at_the_id_and_positions_are_exact() {
        let text = "::note{id=\"dup\"}\na\n::\n\n::note{id=\"dup\"}\nb é\n::\n";
        let doc = parse(text);
        let diags = validate_with_ranges(text, &doc, &Options::default());
        let dup = diags
            .iter()
            .find(|d| d.code == "duplicate-id")
            .expect("a duplicate");
        let r = dup.range.unwrap();
        assert_eq!(&text[r.bytes()], "dup");
        assert_eq!((r.start.line, r.start.column), (5, 12));
        assert_eq!((r.end.line, r.end.column), (5, 15));
    }

    #[test]
    fn ranges_are_never_serialised() {
        let text = "See [[nowhere]].\n";
        let doc = parse(text);
        let diags = validate_with_ranges(text, &doc, &Options::default());
        assert!(diags[0].range.is_some());
        let json = serde_json::to_string(&diags[0]).unwrap();
        assert!(!json.contains("range") && !json.contains("Byte"), "{json}");
        let plain = super::super::validate(&doc, &Options::default());
        assert_eq!(json, serde_json::to_string(&plain[0]).unwrap());
    }
}

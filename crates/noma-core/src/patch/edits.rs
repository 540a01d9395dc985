//! A patch as the edits it made: what an editor applies to its buffer
//! instead of replacing the whole text. The ops splice lines in many
//! places of their own code, so the edits are recovered from the old and
//! new texts (a line diff of the changed middle, each hunk then trimmed to
//! the bytes that differ), which holds for every op alike.

use std::ops::Range;

use serde_json::Value;

use super::PatchError;

/// One replacement: the bytes `range` of the old text become `new_text`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextEdit {
    /// Byte range in the old text (half-open, on character boundaries).
    pub range: Range<usize>,
    /// What replaces it.
    pub new_text: String,
}

/// The result of [`apply_ops_with_edits`]: the new text and the edits that
/// turn the old one into it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patched {
    /// The new text, as [`super::apply_ops`] returns it.
    pub text: String,
    /// Sorted, non-overlapping edits of the old text; applying them
    /// ([`apply_text_edits`]) yields `text`. Empty when nothing changed.
    pub edits: Vec<TextEdit>,
}

/// [`super::apply_ops`], returning the edits as well as the new text.
pub fn apply_ops_with_edits(source: &str, ops: &[Value]) -> Result<Patched, PatchError> {
    let text = super::apply_ops(source, ops)?;
    let edits = text_edits(source, &text);
    Ok(Patched { text, edits })
}

/// Above this many lines in the changed middle of both texts, the diff is
/// one edit: a line diff costs (lines × differences), and a text rewritten
/// wholesale gains nothing from a finer one.
const MAX_DIFF_LINES: usize = 20_000;

/// Sorted, non-overlapping edits turning `old` into `new`: the common
/// start and end are kept, the middle is diffed line by line, and each
/// changed hunk is trimmed to the bytes (whole characters) that differ.
pub fn text_edits(old: &str, new: &str) -> Vec<TextEdit> {
    if old == new {
        return Vec::new();
    }
    let (head, tail) = common_ends(old, new);
    let (old_mid, new_mid) = (&old[head..old.len() - tail], &new[head..new.len() - tail]);
    let mut edits = line_hunks(old_mid, new_mid).unwrap_or_else(|| {
        vec![TextEdit {
            range: 0..old_mid.len(),
            new_text: new_mid.to_string(),
        }]
    });
    for e in edits.iter_mut() {
        e.range = e.range.start + head..e.range.end + head;
        trim(old, e);
    }
    edits
}

/// The changed line runs of `old` against `new`, as edits of `old`;
/// `None` when the texts are too long to diff or the diff does not add up.
fn line_hunks(old: &str, new: &str) -> Option<Vec<TextEdit>> {
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    if old_lines.len() + new_lines.len() > MAX_DIFF_LINES {
        return None;
    }
    let offsets = |lines: &[&str]| -> Vec<usize> {
        let mut at = vec![0];
        at.extend(lines.iter().scan(0, |acc, l| {
            *acc += l.len();
            Some(*acc)
        }));
        at
    };
    let (old_at, new_at) = (offsets(&old_lines), offsets(&new_lines));
    let mut edits: Vec<TextEdit> = Vec::new();
    // Positions are counted from the ops' lengths: the index fields of the
    // inserts and deletes `similar` reports can lag behind the equal run
    // before them. Equal runs are checked, so a diff that does not add up
    // falls back to one edit rather than a wrong one.
    let (mut o, mut n) = (0usize, 0usize);
    for op in similar::capture_diff_slices(similar::Algorithm::Myers, &old_lines, &new_lines) {
        let (tag, old_r, new_r) = op.as_tag_tuple();
        let (old_end, new_end) = (o + old_r.len(), n + new_r.len());
        if old_end > old_lines.len() || new_end > new_lines.len() {
            return None;
        }
        if tag == similar::DiffTag::Equal {
            if old_lines[o..old_end] != new_lines[n..new_end] {
                return None;
            }
        } else {
            let range = old_at[o]..old_at[old_end];
            let text = &new[new_at[n]..new_at[new_end]];
            match edits.last_mut() {
                Some(prev) if prev.range.end == range.start => {
                    prev.range.end = range.end;
                    prev.new_text.push_str(text);
                }
                _ => edits.push(TextEdit {
                    range,
                    new_text: text.to_string(),
                }),
            }
        }
        (o, n) = (old_end, new_end);
    }
    (o == old_lines.len() && n == new_lines.len()).then_some(edits)
}

/// The lengths of the longest common prefix and (not overlapping it)
/// suffix of `a` and `b`, on character boundaries.
fn common_ends(a: &str, b: &str) -> (usize, usize) {
    let (x, y) = (a.as_bytes(), b.as_bytes());
    let mut head = x.iter().zip(y).take_while(|(p, q)| p == q).count();
    while !a.is_char_boundary(head) {
        head -= 1;
    }
    let room = x.len().min(y.len()) - head;
    let mut tail = x
        .iter()
        .rev()
        .zip(y.iter().rev())
        .take(room)
        .take_while(|(p, q)| p == q)
        .count();
    while !a.is_char_boundary(a.len() - tail) || !b.is_char_boundary(b.len() - tail) {
        tail -= 1;
    }
    (head, tail)
}

/// Shrinks `e` to the bytes of its old range that actually change.
fn trim(old: &str, e: &mut TextEdit) {
    let was = &old[e.range.clone()];
    let (head, tail) = common_ends(was, &e.new_text);
    e.new_text = e.new_text[head..e.new_text.len() - tail].to_string();
    e.range = e.range.start + head..e.range.end - tail;
}

/// `old` with `edits` applied; `None` when they are not sorted, overlap,
/// leave the text or cut a character.
pub fn apply_text_edits(old: &str, edits: &[TextEdit]) -> Option<String> {
    let mut out = String::with_capacity(old.len());
    let mut at = 0;
    for e in edits {
        let r = e.range.clone();
        if r.start < at || r.end < r.start || old.get(r.clone()).is_none() {
            return None;
        }
        out.push_str(&old[at..r.start]);
        out.push_str(&e.new_text);
        at = r.end;
    }
    out.push_str(&old[at..]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn check(old: &str, new: &str) -> Vec<TextEdit> {
        let edits = text_edits(old, new);
        assert_eq!(apply_text_edits(old, &edits).as_deref(), Some(new));
        for w in edits.windows(2) {
            assert!(w[0].range.end < w[1].range.start, "{edits:?}");
        }
        edits
    }

    #[test]
    fn edits_are_minimal_hunks() {
        let old = "a\nb\nc\nd\ne\n";
        let edits = check(old, "a\nB\nc\nd\nE!\n");
        assert_eq!(
            edits,
            vec![
                TextEdit {
                    range: 2..3,
                    new_text: "B".into()
                },
                TextEdit {
                    range: 8..9,
                    new_text: "E!".into()
                }
            ]
        );
        assert!(check("same", "same").is_empty());
        check("é😀\r\nx", "é😁\r\nx");
        check("", "new\n");
        // An input where the diff's own insert/delete indexes lag.
        check("a\n\n\na\n\nb", "\né\n\n\n\n\n\na");
        check("old\n", "");
        assert_eq!(
            apply_text_edits(
                "abc",
                &[TextEdit {
                    range: 2..9,
                    new_text: String::new()
                }]
            ),
            None
        );
        assert_eq!(
            apply_text_edits(
                "é",
                &[TextEdit {
                    range: 1..2,
                    new_text: String::new()
                }]
            ),
            None
        );
    }

    #[test]
    fn a_patch_returns_its_edits() {
        let src =
            "# T\r\n\r\n::note{id=\"a\"}\r\nold\r\n::\r\n\r\n::note{id=\"b\"}\r\nkeep\r\n::\r\n";
        let ops = [
            json!({"op": "replace_body", "id": "a", "content": "new"}),
            json!({"op": "update_attribute", "id": "b", "key": "k", "value": "v"}),
        ];
        let p = apply_ops_with_edits(src, &ops).unwrap();
        assert_eq!(p.text, super::super::apply_ops(src, &ops).unwrap());
        assert_eq!(
            apply_text_edits(src, &p.edits).as_deref(),
            Some(p.text.as_str())
        );
        assert_eq!(p.edits.len(), 2, "{:?}", p.edits);
        assert_eq!(&src[p.edits[0].range.clone()], "old");
    }

    const IDS: [&str; 4] = ["a", "b", "c", "d"];

    fn doc_text() -> impl Strategy<Value = String> {
        (proptest::bool::ANY, proptest::bool::ANY, "[a-zé😀 ]{0,12}").prop_map(
            |(crlf, bom, word)| {
                let nl = if crlf { "\r\n" } else { "\n" };
                let mut s = String::from(if bom { "\u{feff}# Doc" } else { "# Doc" });
                s.push_str(nl);
                for id in IDS {
                    s.push_str(&format!(
                        "{nl}::note{{id=\"{id}\"}}{nl}{word} {id}{nl}::{nl}"
                    ));
                }
                s
            },
        )
    }

    fn an_op() -> impl Strategy<Value = Value> {
        let id = proptest::sample::select(IDS.to_vec());
        let text = "[a-zé😀 \n]{0,16}";
        prop_oneof![
            (id.clone(), text).prop_map(|(id, c)| json!({"op": "replace_body", "id": id, "content": c})),
            id.clone().prop_map(|id| json!({"op": "delete_block", "id": id})),
            (id.clone(), "[a-z]{1,6}", text).prop_map(|(id, k, v)| json!({"op": "update_attribute", "id": id, "key": k, "value": v})),
            (id.clone(), "[a-z]{1,6}").prop_map(|(id, n)| json!({"op": "add_block", "parent": "doc", "content": format!("::note{{id=\"{n}x\"}}\n{id}\n::")})),
            (id, proptest::sample::select(IDS.to_vec())).prop_map(|(a, b)| json!({"op": "move_block", "id": a, "parent": "doc", "position": IDS.iter().position(|i| *i == b)})),
        ]
    }

    /// On random op lists over random documents, the edits of every patch
    /// that applies rebuild its new text; most lists must apply, or the
    /// property would hold of nothing.
    #[test]
    fn applying_a_patchs_edits_to_the_old_text_yields_the_new() {
        let applied = std::cell::Cell::new(0u32);
        let mut runner = proptest::test_runner::TestRunner::default();
        let cases = runner.config().cases;
        let strategy = (doc_text(), proptest::collection::vec(an_op(), 1..4));
        runner
            .run(&strategy, |(src, ops)| {
                if let Ok(p) = apply_ops_with_edits(&src, &ops) {
                    applied.set(applied.get() + 1);
                    prop_assert_eq!(apply_text_edits(&src, &p.edits), Some(p.text.clone()));
                    for w in p.edits.windows(2) {
                        prop_assert!(w[0].range.end < w[1].range.start);
                    }
                    prop_assert_eq!(p.edits.is_empty(), p.text == src);
                }
                Ok(())
            })
            .unwrap();
        assert!(
            applied.get() * 3 >= cases,
            "{} of {cases} applied",
            applied.get()
        );
    }

    proptest! {
        #[test]
        fn edits_between_any_two_texts_rebuild_the_new(
            old in "[ab\r\né😀\n]{0,40}",
            new in "[ab\r\né😀\n]{0,40}",
        ) {
            prop_assert_eq!(apply_text_edits(&old, &text_edits(&old, &new)), Some(new));
        }
    }
}

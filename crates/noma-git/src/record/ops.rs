//! The hand edit as ops: rounds of v1.0 block ops (delete_block,
//! replace_block on the innermost changed directives, split into
//! replace_body and update_attribute where those write the same bytes
//! (`narrow`), update_heading, add_block), each round re-diffing the
//! result against the file, so coarser replacements happen only when
//! finer ones do not suffice; then
//! line hunks with the extension op [`noma_core::patch::REPLACE_LINES`]
//! for what no v1.0 op reaches, unless the policy forbids text edits.

use std::collections::{HashMap, HashSet};

use serde_json::{json, Value};

use noma_core::doc::ast::{Document, Node, NodeKind};
use noma_core::doc::lines;
use noma_core::patch::REPLACE_LINES;

/// A hand edit that only text ops could record, under a policy with
/// `record_text_edits: false` ([`edit_ops`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "lines {first}-{last} of the file cannot be expressed as block ops (a change outside any directive with an id, e.g. prose in a section, or blank-line layout) ({config} has record_text_edits: false, so only v1.0 block ops may record it)",
    config = noma_provenance::config::CONFIG_PATH
)]
pub struct TextEditsOff {
    /// First changed line (1-based) of the edited file.
    pub first: usize,
    /// Last changed line (1-based) of the edited file.
    pub last: usize,
}

/// An addressable node as the differ sees it.
struct Block {
    directive: bool,
    section_title: Option<String>,
    parent: Option<String>,
    /// Position among the parent's children.
    index: usize,
    text: String,
    heading: String,
}

/// The addressable nodes of `src` (parsed as `doc`): their ids in document
/// order, and each by id.
fn blocks_of(src: &str, doc: &Document) -> (Vec<String>, BlockMap) {
    let all = lines::split(src.strip_prefix('\u{feff}').unwrap_or(src));
    let mut order = Vec::new();
    let mut map = HashMap::new();
    // Explicit stack: documents can nest deeply.
    let mut stack: Vec<(Option<&str>, &[Node], usize)> = vec![(None, &doc.children, 0)];
    while let Some((parent, kids, i)) = stack.pop() {
        let Some(node) = kids.get(i) else { continue };
        stack.push((parent, kids, i + 1));
        if let Some(id) = &node.id {
            let (s, e) = (node.span.start, node.span.end);
            map.insert(
                id.to_string(),
                Block {
                    directive: matches!(node.kind, NodeKind::Directive { .. }),
                    section_title: match &node.kind {
                        NodeKind::Section { title, .. } => Some(title.to_string()),
                        _ => None,
                    },
                    parent: parent.map(str::to_string),
                    index: i,
                    text: lines::slice_joined(&all, s, e),
                    heading: lines::slice_joined(&all, s, s),
                },
            );
            order.push(id.to_string());
        }
        if !node.children().is_empty() {
            stack.push((node.id.as_deref().or(parent), node.children(), 0));
        }
    }
    (order, map)
}

/// Ops that turn `old` into exactly `new`: v1.0 block ops first, then
/// (when `text_edits`) `x-noma/replace_lines` hunks for the rest; without
/// `text_edits`, an explanation of which lines no block op reaches.
pub fn edit_ops(old: &str, new: &str, text_edits: bool) -> Result<Vec<Value>, TextEditsOff> {
    let (mut ops, cur) = block_ops(old, new);
    if cur == new {
        return Ok(ops);
    }
    if !text_edits {
        return Err(unexpressible(&cur, new));
    }
    ops.extend(line_hunks(&cur, new));
    Ok(ops)
}

/// The `x-noma/replace_lines` ops, top to bottom, that turn `cur` into
/// `new`: one per run of changed lines of a line diff. Each op's `line`
/// counts in the text the previous ops left, so they apply in order.
fn line_hunks(cur: &str, new: &str) -> Vec<Value> {
    let a: Vec<&str> = cur.split_inclusive('\n').collect();
    let b: Vec<&str> = new.split_inclusive('\n').collect();
    let mut ops = Vec::new();
    let mut push = |mut old: std::ops::Range<usize>, mut newr: std::ops::Range<usize>| {
        // A pure insertion takes one unchanged neighbour line along, so
        // its `old` is text a merge can find again (`patch::relocate`).
        if old.is_empty() && old.start > 0 {
            (old.start, newr.start) = (old.start - 1, newr.start - 1);
        } else if old.is_empty() && old.end < a.len() {
            (old.end, newr.end) = (old.end + 1, newr.end + 1);
        }
        ops.push(json!({
            "op": REPLACE_LINES,
            "line": newr.start + 1,
            "old": a[old].concat(),
            "new": b[newr].concat(),
        }));
    };
    // Positions are counted from the ops' lengths: a Delete's `new_index`
    // is not always the position in `new` (similar 2.7, Myers).
    let (mut oi, mut ni) = (0, 0);
    let mut hunk: Option<(std::ops::Range<usize>, std::ops::Range<usize>)> = None;
    for op in similar::capture_diff_slices(similar::Algorithm::Myers, &a, &b) {
        let (ol, nl) = (op.old_range().len(), op.new_range().len());
        let (o, n) = (oi..oi + ol, ni..ni + nl);
        (oi, ni) = (o.end, n.end);
        if let similar::DiffOp::Equal { .. } = op {
            if let Some((o, n)) = hunk.take() {
                push(o, n);
            }
            continue;
        }
        hunk = Some(match hunk.take() {
            Some((ho, hn)) => (ho.start..o.end, hn.start..n.end),
            None => (o, n),
        });
    }
    if let Some((o, n)) = hunk {
        push(o, n);
    }
    ops
}

/// Rounds of v1.0 block ops from `old` towards `new`: the ops and the
/// text they reach (equal to `new` when block ops suffice).
fn block_ops(old: &str, new: &str) -> (Vec<Value>, String) {
    let mut cur = old.to_string();
    let mut ops: Vec<Value> = Vec::new();
    let (new_order, nb) = blocks_of(new, &noma_core::doc::parse(new));
    for _round in 0..32 {
        if cur == new {
            break;
        }
        let (cur_order, cb) = blocks_of(&cur, &noma_core::doc::parse(&cur));
        let round = next_round((&cur_order, &cb), (&new_order, &nb));
        if round.is_empty() {
            break;
        }
        let before = cur.clone();
        for op in round {
            let old = op["id"].as_str().and_then(|id| cb.get(id));
            // An op the engine refuses is left to the line hunks.
            let Some((narrowest, next)) =
                super::narrow::apply_narrowest(&cur, op, old.map(|b| b.text.as_str()))
            else {
                return (ops, cur);
            };
            cur = next;
            ops.extend(narrowest);
        }
        if cur == before {
            break;
        }
    }
    (ops, cur)
}

/// The addressable nodes of a text by id.
type BlockMap = HashMap<String, Block>;

/// One round of block ops from the current blocks towards the new ones
/// (each as ids in document order and by id): deletions, changed
/// headings and innermost changed directives, additions; when none of
/// those is left, the outermost changed directives are replaced whole.
fn next_round(
    (cur_order, cb): (&[String], &BlockMap),
    (new_order, nb): (&[String], &BlockMap),
) -> Vec<Value> {
    let differs = |id: &str| match (cb.get(id), nb.get(id)) {
        (Some(a), Some(b)) => a.text != b.text,
        _ => true,
    };
    let changed: HashSet<&str> = cur_order
        .iter()
        .filter(|id| nb.contains_key(id.as_str()) && differs(id))
        .map(String::as_str)
        .collect();
    let mut round = deletions(cur_order, cb, nb);
    round.extend(changes(cur_order, (cb, nb), &changed));
    round.extend(additions(new_order, cb, nb));
    if round.is_empty() {
        // Coarsen when nothing fine-grained is left.
        round = outermost_replacements(cur_order, (cb, nb), &changed);
    }
    round
}

/// Removed directives (outermost only: deleting the parent takes the
/// children).
fn deletions(cur_order: &[String], cb: &BlockMap, nb: &BlockMap) -> Vec<Value> {
    let mut round = Vec::new();
    for id in cur_order {
        let Some(b) = cb.get(id) else { continue };
        let parent_gone = b.parent.as_ref().is_some_and(|p| !nb.contains_key(p));
        if !nb.contains_key(id) && b.directive && !parent_gone {
            round.push(json!({"op": "delete_block", "id": id}));
        }
    }
    round
}

/// Changed headings and innermost changed directives.
fn changes(
    cur_order: &[String],
    (cb, nb): (&BlockMap, &BlockMap),
    changed: &HashSet<&str>,
) -> Vec<Value> {
    let mut round = Vec::new();
    for id in cur_order {
        if !changed.contains(id.as_str()) {
            continue;
        }
        let (Some(c), Some(n)) = (cb.get(id), nb.get(id)) else {
            continue;
        };
        if let (Some(_), Some(title)) = (&c.section_title, &n.section_title) {
            if c.heading != n.heading {
                round.push(json!({"op": "update_heading", "id": id, "title": title}));
            }
        } else if c.directive && n.directive && !has_changed_descendant(id, (cb, nb), changed) {
            round.push(json!({"op": "replace_block", "id": id, "content": n.text}));
        }
    }
    round
}

/// Whether a block under `id` changed, was added or was removed.
fn has_changed_descendant(
    id: &str,
    (cb, nb): (&BlockMap, &BlockMap),
    changed: &HashSet<&str>,
) -> bool {
    nb.iter().any(|(k, b)| {
        let mut p = b.parent.as_deref();
        let mut depth = 0;
        while let Some(pp) = p {
            if pp == id {
                return changed.contains(k.as_str()) || !cb.contains_key(k);
            }
            depth += 1;
            if depth > 256 {
                break;
            }
            p = nb.get(pp).and_then(|b| b.parent.as_deref());
        }
        false
    }) || cb
        .iter()
        .any(|(k, b)| b.parent.as_deref() == Some(id) && !nb.contains_key(k))
}

/// Added directives whose parent exists, in document order.
fn additions(new_order: &[String], cb: &BlockMap, nb: &BlockMap) -> Vec<Value> {
    let mut round = Vec::new();
    for id in new_order {
        let Some(n) = nb.get(id) else { continue };
        if cb.contains_key(id) || !n.directive {
            continue;
        }
        if let Some(p) = &n.parent {
            if cb.contains_key(p) {
                round.push(
                    json!({"op": "add_block", "parent": p, "position": n.index, "content": n.text}),
                );
            }
        }
    }
    round
}

/// The outermost changed directives, replaced whole.
fn outermost_replacements(
    cur_order: &[String],
    (cb, nb): (&BlockMap, &BlockMap),
    changed: &HashSet<&str>,
) -> Vec<Value> {
    let mut round = Vec::new();
    for id in cur_order {
        let (Some(c), Some(n)) = (cb.get(id), nb.get(id)) else {
            continue;
        };
        let parent_changed = c
            .parent
            .as_deref()
            .is_some_and(|p| changed.contains(p) && cb.get(p).is_some_and(|b| b.directive));
        if changed.contains(id.as_str()) && c.directive && n.directive && !parent_changed {
            round.push(json!({"op": "replace_block", "id": id, "content": n.text}));
        }
    }
    round
}

/// Names the line range where `got` (best effort) and `want` still differ.
fn unexpressible(got: &str, want: &str) -> TextEditsOff {
    let a: Vec<&str> = got.split('\n').collect();
    let b: Vec<&str> = want.split('\n').collect();
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let suffix = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take_while(|(x, y)| x == y)
        .count()
        .min(a.len().min(b.len()) - prefix);
    let first = prefix + 1;
    let last = b.len().saturating_sub(suffix).max(first);
    TextEditsOff { first, last }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(old: &str, new: &str) -> Vec<Value> {
        let ops = edit_ops(old, new, true).unwrap();
        assert_eq!(noma_core::patch::apply_ops(old, &ops).unwrap(), new);
        ops
    }

    const BASE: &str = "# Plan\n\n::note{id=\"a\"}\nalpha\n::\n\n::note{id=\"b\"}\nbeta\n::\n";

    #[test]
    fn replace_delete_add_and_heading() {
        let ops = roundtrip(BASE, &BASE.replace("alpha", "ALPHA"));
        assert_eq!(ops.len(), 1);
        assert_eq!(ops[0]["op"], "replace_body");
        // A renamed directive is replaced whole.
        let ops = roundtrip(BASE, &BASE.replace("::note{id=\"a\"}", "::claim{id=\"a\"}"));
        assert_eq!(ops[0]["op"], "replace_block");
        let ops = roundtrip(BASE, "# Plan\n\n::note{id=\"a\"}\nalpha\n::\n");
        assert_eq!(ops[0]["op"], "delete_block");
        let ops = roundtrip(BASE, &format!("{BASE}\n::note{{id=\"c\"}}\ngamma\n::\n"));
        assert_eq!(ops[0]["op"], "add_block");
    }

    #[test]
    fn the_narrowest_op_that_writes_the_same_bytes_is_recorded() {
        let old = "# Plan\n\n::claim{id=\"c\" status=\"draft\" confidence=0.5}\nThe claim.\n::\n";
        let names = |ops: &[Value]| -> Vec<String> {
            ops.iter()
                .map(|o| o["op"].as_str().unwrap().to_string())
                .collect()
        };
        let attrs = old.replace("draft", "final").replace("0.5", "0.9");
        assert_eq!(names(&roundtrip(old, &attrs)), ["update_attribute"; 2]);
        let removed = old.replace(" confidence=0.5", "");
        let ops = roundtrip(old, &removed);
        assert_eq!(names(&ops), ["update_attribute"]);
        assert_eq!(ops[0]["value"], Value::Null);
        let both = attrs.replace("The claim.", "Another claim.");
        assert_eq!(
            names(&roundtrip(old, &both)),
            ["update_attribute", "update_attribute", "replace_body"]
        );
        // Bytes an attribute op would write differently: replaced whole.
        let spaced = old.replace("draft\"", "draft\"   owner=\"ada\"");
        assert_eq!(names(&roundtrip(old, &spaced)), ["replace_block"]);
    }

    #[test]
    fn prose_outside_directives_is_refused_with_lines_when_text_edits_are_off() {
        let old = "# Plan\n\nsome prose\n";
        let err = edit_ops(old, "# Plan\n\nother prose\n", false).unwrap_err();
        assert_eq!((err.first, err.last), (3, 3));
        let err = err.to_string();
        assert!(err.contains("lines 3-3"), "{err}");
        assert!(err.contains("record_text_edits: false"), "{err}");
    }

    #[test]
    fn hand_edits_outside_blocks_become_line_hunks_after_block_ops() {
        let old =
            "---\ntitle: A\n---\n# Plan\n\nsome prose\n\n- one\n\n::note{id=\"a\"}\nalpha\n::\n";
        let new = "---\ntitle: B\n---\n# Plan\n\nother prose\n\nA new paragraph.\n\n- one\n- two\n\n::note{id=\"a\"}\nALPHA\n::\n";
        let ops = roundtrip(old, new);
        let names: Vec<&str> = ops.iter().filter_map(|o| o["op"].as_str()).collect();
        assert_eq!(names[0], "replace_body", "{ops:?}");
        assert!(names[1..].iter().all(|n| *n == REPLACE_LINES), "{ops:?}");
        // One hunk per run of changed lines, each carrying the old text.
        assert_eq!(ops[1]["old"], "title: A\n");
        assert_eq!(ops[1]["line"], 2);
        assert!(ops.len() >= 4, "{ops:?}");
    }

    #[test]
    fn line_hunks_apply_in_order_for_random_edits() {
        use proptest::prelude::*;
        let line = prop_oneof![
            Just("a\n"),
            Just("b\n"),
            Just("\n"),
            Just("c\r\n"),
            Just("d")
        ];
        let text = proptest::collection::vec(line, 0..12).prop_map(|v| v.concat());
        proptest!(|(old in text.clone(), new in text)| {
            let ops = line_hunks(&old, &new);
            prop_assert_eq!(noma_core::patch::apply_ops(&old, &ops).unwrap(), new);
            // Every hunk of a non-empty text carries `old` lines a merge
            // can find again (an insertion takes a neighbour along).
            prop_assert!(old.is_empty() || ops.iter().all(|o| o["old"] != ""), "{:?}", ops);
        });
    }
}

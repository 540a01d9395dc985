//! What a replayed op touched, and which touches clash: the conflict rule
//! of the transcript merge ([`crate::transcript`]).
//!
//! An op touches its target block plus the innermost blocks whose source
//! changed when it ran (an ancestor that only changed because a child did
//! is not touched). Most ops touch their target as a whole. Some touch
//! one [`Part`] of it and leave the rest alone: an insertion into a
//! container, one attribute, a section's heading line, a directive's
//! body, one table or dataset row, a table's header. Two touches of one
//! block clash when their parts overlap ([`Part::overlaps`]): two
//! insertions into one section, or updates of different attributes or
//! rows, do not; anything against the whole block does.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use noma_core::doc::hash::block_hashes;
use noma_core::patch::{op_name, op_target, REPLACE_LINES};

/// The part of a block an op touched.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Part {
    /// The block as a whole: its source changed, it was added or deleted,
    /// or the op targets it wholesale (`replace_block`, `rename_id`, …).
    Whole,
    /// A block inserted into it (`add_block`, `add_comment` and the other
    /// note ops).
    Into,
    /// One attribute of its opener (`update_attribute`,
    /// `remove_attribute`).
    Attr(String),
    /// A section's heading line (`update_heading`, which keeps the id).
    Heading,
    /// Its body (`replace_body`).
    Body,
    /// One table or dataset row, by the op's `row` (`update_table_cell`,
    /// `update_dataset_cell`).
    Row(String),
    /// A table's header row (`update_table_header_cell`).
    Header,
    /// Its id (`rename_id`): the other side's ops on the block follow it
    /// to its new id ([`crate::transcript`] retargets them).
    Id,
}

impl Part {
    /// The part of its target that `op` touches.
    fn of(op: &Value) -> Part {
        let field = |k: &str| op.get(k);
        match op_name(op) {
            Some(
                "add_block" | "add_comment" | "add_footnote" | "add_endnote" | "add_change_request",
            ) => Part::Into,
            Some("update_attribute" | "remove_attribute") => {
                match field("key").and_then(Value::as_str) {
                    Some(key) => Part::Attr(key.to_string()),
                    None => Part::Whole,
                }
            }
            Some("update_heading") => Part::Heading,
            Some("replace_body") => Part::Body,
            Some("update_table_cell" | "update_dataset_cell") => match field("row") {
                Some(row) => Part::Row(row.to_string()),
                None => Part::Whole,
            },
            Some("update_table_header_cell") => Part::Header,
            Some("rename_id") => Part::Id,
            _ => Part::Whole,
        }
    }

    /// Whether changes to these two parts of one block may not commute:
    /// either is the whole block; they are the same attribute, row,
    /// heading, header or body; one is the body and the other lies inside
    /// it (an insertion, a row, the header); or one is the heading and the
    /// other an attribute (a section's attributes sit on its heading line).
    /// Two insertions always commute. An id overlaps the `id` attribute and
    /// a section's heading line (which carries a renamed section's id).
    pub(crate) fn overlaps(&self, other: &Part) -> bool {
        use Part::{Attr, Body, Header, Heading, Id, Into, Row, Whole};
        match (self, other) {
            (Whole, _) | (_, Whole) => true,
            (Into, Into) => false,
            (Body, Into | Row(_) | Header) | (Into | Row(_) | Header, Body) => true,
            (Attr(_), Heading) | (Heading, Attr(_)) => true,
            (Id, Heading) | (Heading, Id) => true,
            (Id, Attr(k)) | (Attr(k), Id) => k == "id",
            (a, b) => a == b,
        }
    }
}

/// A block and the part of it an op touched.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Touch {
    /// The block's id.
    pub block: String,
    /// What of it.
    pub part: Part,
}

/// Touches by block, each with the op that made it, in the order added.
#[derive(Debug, Default)]
pub(crate) struct Touches(HashMap<String, Vec<(Part, String)>>);

impl Touches {
    /// Records that `op_id` made `touch`.
    pub(crate) fn add(&mut self, touch: &Touch, op_id: &str) {
        let parts = self.0.entry(touch.block.clone()).or_default();
        if !parts.iter().any(|(p, o)| *p == touch.part && o == op_id) {
            parts.push((touch.part.clone(), op_id.to_string()));
        }
    }

    /// The op that made the latest touch `touch` clashes with.
    pub(crate) fn clashing(&self, touch: &Touch) -> Option<&str> {
        self.0
            .get(&touch.block)?
            .iter()
            .rev()
            .find(|(p, _)| p.overlaps(&touch.part))
            .map(|(_, op)| op.as_str())
    }
}

/// What `op` touched when it turned `pre` into `post` (sorted,
/// deduplicated): the innermost blocks whose source differs, as wholes,
/// and its target, as the part the op changes (that part replaces the
/// target's whole when its source changed, since the op changed only it).
pub(crate) fn touched(pre: &str, post: &str, op: &Value) -> Vec<Touch> {
    let a = block_hashes(pre, &noma_core::doc::parse(pre));
    let b = block_hashes(post, &noma_core::doc::parse(post));
    let amap: HashMap<&str, (&str, Option<&str>)> = a
        .iter()
        .map(|h| (h.id.as_str(), (h.sha256.as_str(), h.parent.as_deref())))
        .collect();
    let bmap: HashMap<&str, (&str, Option<&str>)> = b
        .iter()
        .map(|h| (h.id.as_str(), (h.sha256.as_str(), h.parent.as_deref())))
        .collect();
    let mut changed: Vec<&str> = Vec::new();
    for (id, (sha, _)) in &amap {
        if bmap.get(id).map(|x| x.0) != Some(*sha) {
            changed.push(id);
        }
    }
    // The id a `rename_id` gives its target names the same block.
    let renamed_to = (op_name(op) == Some("rename_id"))
        .then(|| op.get("to").and_then(Value::as_str))
        .flatten();
    for id in bmap.keys() {
        if !amap.contains_key(id) && Some(*id) != renamed_to {
            changed.push(id);
        }
    }
    // Ancestors of a changed block changed because of it: not "touched".
    let mut ancestors: HashSet<&str> = HashSet::new();
    let limit = amap.len() + bmap.len();
    for id in &changed {
        let mut cur = *id;
        for _ in 0..limit {
            let parent = bmap.get(cur).or_else(|| amap.get(cur)).and_then(|x| x.1);
            match parent {
                Some(p) if ancestors.insert(p) => cur = p,
                _ => break,
            }
        }
    }
    // A hand edit of prose (`x-noma/replace_lines`) is not an edit of the
    // section around it: two of them in one section conflict only when
    // their lines do (`reapply` finds the lines or fails).
    let lines_op = op_name(op) == Some(REPLACE_LINES);
    let section = |id: &str| {
        a.iter()
            .chain(&b)
            .any(|h| h.id == id && h.kind == "section")
    };
    let target = op_target(op).filter(|t| amap.contains_key(t));
    let part = Part::of(op);
    let mut out: Vec<Touch> = changed
        .into_iter()
        .filter(|id| !ancestors.contains(id))
        .filter(|id| !(lines_op && section(id)))
        .map(|id| Touch {
            block: id.to_string(),
            // The target's own change is the part the op changes.
            part: if Some(id) == target {
                part.clone()
            } else {
                Part::Whole
            },
        })
        .collect();
    if let Some(t) = target {
        out.push(Touch {
            block: t.to_string(),
            part,
        });
    }
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::test_support::BASE;

    fn touch(block: &str, part: Part) -> Touch {
        Touch {
            block: block.to_string(),
            part,
        }
    }

    #[test]
    fn ancestors_are_skipped_and_the_target_kept() {
        let post = BASE.replace("alpha", "A");
        let op = json!({"op": "replace_block", "id": "a", "content": "::note{id=\"a\"}\nA\n::"});
        assert_eq!(touched(BASE, &post, &op), vec![touch("a", Part::Whole)]);
        // Kept even when nothing changed.
        let op =
            json!({"op": "replace_block", "id": "a", "content": "::note{id=\"a\"}\nalpha\n::"});
        assert_eq!(touched(BASE, BASE, &op), vec![touch("a", Part::Whole)]);
    }

    #[test]
    fn ops_on_one_part_touch_that_part() {
        let post = BASE.replace("alpha", "A");
        let op = json!({"op": "replace_body", "id": "a", "content": "A"});
        assert_eq!(touched(BASE, &post, &op), vec![touch("a", Part::Body)]);
        let op = json!({"op": "update_heading", "id": "t", "title": "T"});
        assert_eq!(touched(BASE, BASE, &op), vec![touch("t", Part::Heading)]);
        let post = BASE.replace("::note{id=\"a\"}", "::note{id=\"a\" k=\"v\"}");
        let op = json!({"op": "update_attribute", "id": "a", "key": "k", "value": "v"});
        assert_eq!(
            touched(BASE, &post, &op),
            vec![touch("a", Part::Attr("k".into()))]
        );
        // An insertion: the new block, and the container's Into.
        let post = BASE.replace(
            "::\n\n::note{id=\"b\"}",
            "::\n\n::note{id=\"n\"}\nn\n::\n\n::note{id=\"b\"}",
        );
        let op = json!({"op": "add_block", "parent": "t", "position": 1, "content": "::note{id=\"n\"}\nn\n::"});
        assert_eq!(
            touched(BASE, &post, &op),
            vec![touch("n", Part::Whole), touch("t", Part::Into)]
        );
    }

    #[test]
    fn overlaps_is_symmetric_and_commutes_only_independent_parts() {
        let all = [
            Part::Whole,
            Part::Into,
            Part::Attr("k".into()),
            Part::Attr("j".into()),
            Part::Heading,
            Part::Body,
            Part::Row("1".into()),
            Part::Row("2".into()),
            Part::Header,
            Part::Id,
            Part::Attr("id".into()),
        ];
        for a in &all {
            assert!(a.overlaps(&Part::Whole), "{a:?}");
            for b in &all {
                assert_eq!(a.overlaps(b), b.overlaps(a), "{a:?} {b:?}");
            }
        }
        assert!(!Part::Into.overlaps(&Part::Into));
        assert!(!Part::Attr("k".into()).overlaps(&Part::Attr("j".into())));
        assert!(Part::Attr("k".into()).overlaps(&Part::Attr("k".into())));
        assert!(!Part::Attr("k".into()).overlaps(&Part::Body));
        assert!(Part::Attr("k".into()).overlaps(&Part::Heading));
        assert!(Part::Body.overlaps(&Part::Into) && Part::Body.overlaps(&Part::Row("1".into())));
        assert!(!Part::Row("1".into()).overlaps(&Part::Row("2".into())));
        assert!(!Part::Id.overlaps(&Part::Body) && !Part::Id.overlaps(&Part::Into));
        assert!(!Part::Id.overlaps(&Part::Attr("k".into())));
        assert!(Part::Id.overlaps(&Part::Attr("id".into())) && Part::Id.overlaps(&Part::Id));
    }

    #[test]
    fn a_rename_touches_the_id_of_its_target_only() {
        let post = BASE.replace("::note{id=\"a\"}", "::note{id=\"z\"}");
        let op = json!({"op": "rename_id", "from": "a", "to": "z"});
        assert_eq!(touched(BASE, &post, &op), vec![touch("a", Part::Id)]);
    }

    #[test]
    fn touches_answer_with_the_latest_clashing_op() {
        let mut t = Touches::default();
        t.add(&touch("a", Part::Attr("k".into())), "op1");
        t.add(&touch("a", Part::Body), "op2");
        assert_eq!(t.clashing(&touch("a", Part::Attr("j".into()))), None);
        assert_eq!(t.clashing(&touch("a", Part::Attr("k".into()))), Some("op1"));
        assert_eq!(t.clashing(&touch("a", Part::Whole)), Some("op2"));
        assert_eq!(t.clashing(&touch("b", Part::Whole)), None);
    }
}

//! The narrowest ops for a changed directive: a `replace_block` the
//! differ chose is split into what it changes — `replace_body` when only
//! the body changed, one `update_attribute` per changed attribute (value
//! `null` for a removed one) when only the opener did, both when both did
//! — because the merge driver lets ops on different parts of one block
//! commute ([`crate::overlap::Part`]) and a whole-block replacement
//! commutes with nothing. The split is used only when it writes the same
//! bytes as the replacement; otherwise the replacement stands.

use serde_json::{json, Value};

use noma_core::doc::ast::{Attrs, NodeKind};

/// The parts of one directive's source: opener, body lines, closer.
struct Parts {
    name: String,
    colons: u32,
    attrs: Attrs,
    opener: String,
    body: Vec<String>,
    closer: String,
}

/// `text` (a closed directive's lines) as its parts, when it parses alone
/// as exactly that directive.
fn parts(text: &str, id: &str) -> Option<Parts> {
    let doc = noma_core::doc::parse(text);
    let [node] = doc.children.as_slice() else {
        return None;
    };
    let NodeKind::Directive {
        name,
        attrs,
        colons,
        closed: true,
        ..
    } = &node.kind
    else {
        return None;
    };
    if node.id.as_deref() != Some(id) {
        return None;
    }
    let mut lines: Vec<String> = text.split('\n').map(str::to_string).collect();
    if lines.len() < 2 {
        return None;
    }
    let closer = lines.pop()?;
    let opener = lines.remove(0);
    Some(Parts {
        name: name.to_string(),
        colons: *colons,
        attrs: attrs.clone(),
        opener,
        body: lines,
        closer,
    })
}

/// The ops that change the parts `old` and `new` (block `id`'s texts)
/// differ in, or `None` when the name, fence or closer changed, or the
/// new body is empty (which `replace_body` cannot write).
pub(crate) fn split_ops(id: &str, old: &str, new: &str) -> Option<Vec<Value>> {
    let (a, b) = (parts(old, id)?, parts(new, id)?);
    if a.name != b.name || a.colons != b.colons || a.closer != b.closer {
        return None;
    }
    let mut ops = Vec::new();
    if a.opener != b.opener {
        for (key, value) in b.attrs.iter() {
            if key != "id" && a.attrs.get(key) != Some(value) {
                ops.push(json!({"op": "update_attribute", "id": id, "key": key, "value": value.to_json()}));
            }
        }
        for (key, _) in a.attrs.iter() {
            if key != "id" && !b.attrs.has(key) {
                ops.push(json!({"op": "update_attribute", "id": id, "key": key, "value": null}));
            }
        }
    }
    if a.body != b.body {
        if b.body.is_empty() {
            return None;
        }
        ops.push(json!({"op": "replace_body", "id": id, "content": b.body.join("\n")}));
    }
    Some(ops)
}

/// Applies `op` to `cur`: when it is a `replace_block` whose split
/// ([`split_ops`] of `old`, the block's current text) writes the same
/// bytes, the split ops and the text; else `op` and its result. `None`
/// when the engine refuses `op`.
pub(crate) fn apply_narrowest(
    cur: &str,
    op: Value,
    old: Option<&str>,
) -> Option<(Vec<Value>, String)> {
    let wide = noma_core::patch::apply_one(cur, &op).ok()?;
    // `op` has just applied, so it parses.
    let split = match (noma_core::patch::Op::parse(&op), old) {
        (Ok(noma_core::patch::Op::ReplaceBlock { id, content }), Some(old)) => {
            split_ops(&id, old, &content)
        }
        _ => None,
    };
    if let Some(ops) = split.filter(|ops| !ops.is_empty()) {
        if noma_core::patch::apply_ops(cur, &ops).ok().as_deref() == Some(wide.as_str()) {
            return Some((ops, wide));
        }
    }
    Some((vec![op], wide))
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &str = "::claim{id=\"c\" status=\"draft\" confidence=0.5}\nThe claim.\n::";

    fn names(ops: &[Value]) -> Vec<&str> {
        ops.iter().filter_map(|o| o["op"].as_str()).collect()
    }

    #[test]
    fn body_only_is_replace_body() {
        let new = OLD.replace("The claim.", "The claim, revised.\nOn two lines.");
        let ops = split_ops("c", OLD, &new).unwrap();
        assert_eq!(names(&ops), ["replace_body"]);
        assert_eq!(ops[0]["content"], "The claim, revised.\nOn two lines.");
    }

    #[test]
    fn attributes_only_are_one_update_attribute_each() {
        let new = OLD.replace(
            "status=\"draft\" confidence=0.5",
            "status=\"final\" owner=\"ada\"",
        );
        let ops = split_ops("c", OLD, &new).unwrap();
        assert_eq!(names(&ops), ["update_attribute"; 3]);
        assert_eq!(ops[0]["key"], "status");
        assert_eq!(ops[0]["value"], "final");
        assert_eq!(ops[1]["key"], "owner");
        assert_eq!(ops[2]["key"], "confidence");
        assert_eq!(ops[2]["value"], Value::Null);
    }

    #[test]
    fn both_are_the_pair_and_renames_or_empty_bodies_are_not_split() {
        let new = OLD
            .replace("draft", "final")
            .replace("The claim.", "Another claim.");
        assert_eq!(
            names(&split_ops("c", OLD, &new).unwrap()),
            ["update_attribute", "replace_body"]
        );
        assert!(split_ops("c", OLD, &OLD.replace("::claim", "::note")).is_none());
        assert!(split_ops("c", OLD, "::claim{id=\"c\"}\n::").is_none());
        assert!(split_ops("c", OLD, &OLD.replace("\n::", "\n:::")).is_none());
    }
}

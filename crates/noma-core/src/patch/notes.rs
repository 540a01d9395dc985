//! add_comment (incl. threaded `reply_to`), resolve_comment, add_footnote,
//! add_endnote and add_change_request (§1.5).
//!
//! New blocks go right after a directive target (at the target's fence
//! depth, with a blank line before) or at the top of a section target
//! (after the heading and one blank line, with a blank line after), fenced
//! one deeper than the innermost enclosing directive (§1.5; the reference
//! writes depth 2 there, which closes an enclosing `::` block). Note text
//! that would leave a code fence open is `invalid_content`.

use super::core::{is_valid_id, parse_fragment, rewrite_open_line};
use super::fence::child_fence_depth;
use super::line_buf::LineBuf;
use super::line_text::{self, serialize_attr, AttrVal};
use super::op::{NoteKind, Op};
use super::{fail, Ctx, OpResult, PatchErrorCode as E};
use crate::doc::NodeKind;

type Attrs = Vec<(&'static str, String)>;

fn push_truthy(attrs: &mut Attrs, key: &'static str, v: &Option<String>) {
    if let Some(s) = v.as_ref().filter(|s| !s.is_empty()) {
        attrs.push((key, s.clone()));
    }
}

/// The block to add: directive name, attributes and body text.
struct NewBlock {
    name: &'static str,
    attrs: Attrs,
    body: String,
}

/// Validates an add-* op and builds its block; returns (new id, target, block).
fn build(op: &Op) -> OpResult<(&str, &str, NewBlock)> {
    match op {
        Op::AddComment {
            id,
            target,
            content,
            author,
            initials,
            date,
            reply_to,
        } => {
            let plain = [("author", author), ("initials", initials), ("date", date)];
            Ok((id, target, comment(id, target, content, reply_to, plain)))
        }
        Op::AddNote {
            kind,
            id,
            target,
            content,
            label,
        } => Ok((id, target, note(*kind, id, target, content, label)?)),
        Op::AddChangeRequest {
            id,
            target,
            action,
            from,
            to,
            text,
            content,
            author,
            date,
        } => {
            check_change_request(action, from, to, text, [author, date])?;
            let roles = [("from", from), ("to", to), ("text", text)];
            let plain = [("author", author), ("date", date)];
            let block = change_request(id, target, action, roles, content, plain);
            Ok((id, target, block))
        }
        _ => fail(E::UnsupportedOp, "not an add-note op"),
    }
}

/// The `::comment` of add_comment: threaded under `reply_to` when given,
/// else attached to `target`; `plain` attributes only when non-empty.
fn comment(
    id: &str,
    target: &str,
    content: &str,
    reply_to: &Option<String>,
    plain: [(&'static str, &Option<String>); 3],
) -> NewBlock {
    let mut attrs: Attrs = vec![("id", id.to_string())];
    match reply_to.as_ref().filter(|s| !s.is_empty()) {
        Some(r) => attrs.push(("reply_to", r.clone())),
        None => attrs.push(("parent", target.to_string())),
    }
    for (key, v) in plain {
        push_truthy(&mut attrs, key, v);
    }
    NewBlock {
        name: "comment",
        attrs,
        body: content.to_string(),
    }
}

/// The `::footnote` or `::endnote` of add_footnote / add_endnote.
fn note(
    kind: NoteKind,
    id: &str,
    target: &str,
    content: &str,
    label: &Option<String>,
) -> OpResult<NewBlock> {
    let what = if kind == NoteKind::Footnote {
        "footnote"
    } else {
        "endnote"
    };
    check_note(what, content, label.as_deref())?;
    let mut attrs: Attrs = vec![("id", id.to_string()), ("for", target.to_string())];
    push_truthy(&mut attrs, "label", label);
    Ok(NewBlock {
        name: what,
        attrs,
        body: content.to_string(),
    })
}

/// The `::change_request` of add_change_request: the attributes with a
/// role in the action (`roles`) whenever given, `plain` ones only when
/// non-empty.
fn change_request(
    id: &str,
    target: &str,
    action: &str,
    roles: [(&'static str, &Option<String>); 3],
    content: &Option<String>,
    plain: [(&'static str, &Option<String>); 2],
) -> NewBlock {
    let mut attrs: Attrs = vec![
        ("id", id.to_string()),
        ("target", target.to_string()),
        ("action", action.to_string()),
    ];
    for (k, v) in roles {
        if let Some(v) = v {
            attrs.push((k, v.clone()));
        }
    }
    for (key, v) in plain {
        push_truthy(&mut attrs, key, v);
    }
    NewBlock {
        name: "change_request",
        attrs,
        body: content.clone().unwrap_or_default(),
    }
}

/// A footnote/endnote needs text, and its label must fit on the open line.
fn check_note(what: &str, content: &str, label: Option<&str>) -> OpResult<()> {
    if line_text::js_trim(content).is_empty() {
        return fail(
            E::InvalidContent,
            format!("{what} content must not be empty"),
        );
    }
    if label.is_some_and(line_text::has_newline) {
        return fail(E::InvalidContent, "note label must be a single-line string");
    }
    Ok(())
}

/// A change request's attributes must be single-line, and its action must
/// be one of the three with the fields that action needs (`plain`: the
/// attributes with no role in the action, author and date).
fn check_change_request(
    action: &str,
    from: &Option<String>,
    to: &Option<String>,
    text: &Option<String>,
    plain: [&Option<String>; 2],
) -> OpResult<()> {
    for v in [from, to, text].into_iter().chain(plain).flatten() {
        if line_text::has_newline(v) {
            return fail(
                E::InvalidContent,
                "change_request attributes must be single-line strings",
            );
        }
    }
    let set = |v: &Option<String>| v.as_ref().is_some_and(|s| !s.is_empty());
    match action {
        "replace" if !(set(from) && set(to)) => {
            return fail(
                E::InvalidContent,
                "replace change_request requires from and to",
            )
        }
        "insert" if !(set(to) || set(text)) => {
            return fail(
                E::InvalidContent,
                "insert change_request requires to or text",
            )
        }
        "delete" if !(set(from) || set(text)) => {
            return fail(
                E::InvalidContent,
                "delete change_request requires from or text",
            )
        }
        "replace" | "insert" | "delete" => {}
        _ => {
            return fail(
                E::InvalidContent,
                "change_request action must be insert, delete, or replace",
            )
        }
    }
    Ok(())
}

/// Serializes the block at depth 2 and checks it parses back to one directive.
fn serialize(block: &NewBlock) -> OpResult<Vec<String>> {
    if block.name == "comment" && line_text::js_trim(&block.body).is_empty() {
        return fail(E::InvalidContent, "comment content must not be empty");
    }
    for (_, v) in &block.attrs {
        if line_text::has_newline(v) {
            return fail(
                E::InvalidContent,
                "attribute values must be single-line strings",
            );
        }
    }
    let attrs: Vec<String> = block
        .attrs
        .iter()
        .map(|(k, v)| serialize_attr(k, &AttrVal::Str(v.clone())))
        .collect();
    let mut out = vec![format!("::{}{{{}}}", block.name, attrs.join(" "))];
    let body = block.body.trim_end_matches(['\n', '\r']);
    if !body.is_empty() || block.name != "change_request" {
        out.extend(line_text::fragment_lines(body));
    }
    out.push("::".to_string());
    parse_fragment(&out.join("\n"))?;
    Ok(out)
}

/// add_comment / add_footnote / add_endnote / add_change_request.
pub(crate) fn add_note_like(ctx: &Ctx<'_>, op: &Op) -> OpResult<String> {
    let (id, target, block) = build(op)?;
    if ctx.id_taken(id) {
        return fail(E::IdConflict, format!("target id \"{id}\" already exists"));
    }
    let target = ctx.require(target, E::TargetMissing, "block")?;
    if !is_valid_id(id) {
        return fail(E::InvalidContent, format!("\"{id}\" is not a valid id"));
    }
    // A directive target gets a sibling at its own depth; a section target
    // gets a first child, which inside a `::` block needs that block's
    // depth + 1 (the reference writes depth 2 there and closes the block).
    let depth = match &target.kind {
        NodeKind::Directive { colons, .. } => *colons as usize,
        _ => child_fence_depth(&ctx.doc, target),
    };
    let mut fragment = line_text::normalize_fence_depth(&serialize(&block)?, 2, depth);
    let mut lines = LineBuf::new(ctx.src);
    let (start, end) = (target.span.start as usize, target.span.end as usize);
    let at = if matches!(target.kind, NodeKind::Section { .. }) {
        fragment.push(String::new());
        if lines.is_empty_line(start) {
            start + 1
        } else {
            start
        }
    } else {
        fragment.insert(0, String::new());
        end
    };
    lines.splice(at, 0, fragment);
    Ok(lines.finish_with(ctx.prefix))
}

/// Marks a `::comment` resolved: `status="resolved"` plus resolver metadata.
pub(crate) fn resolve_comment(
    ctx: &Ctx<'_>,
    id: &str,
    resolved_by: Option<&str>,
    resolved_at: Option<&str>,
) -> OpResult<String> {
    let node = ctx.require(id, E::TargetMissing, "comment")?;
    if !node.is_directive("comment") {
        return fail(
            E::InvalidContent,
            format!("block \"{id}\" is not a comment"),
        );
    }
    if resolved_by
        .into_iter()
        .chain(resolved_at)
        .any(line_text::has_newline)
    {
        return fail(
            E::InvalidContent,
            "resolver metadata must be single-line strings",
        );
    }
    rewrite_open_line(ctx, node, |line| {
        let mut next =
            line_text::set_open_line_attr(line, "status", &AttrVal::Str("resolved".into()))?;
        for (k, v) in [("resolved_by", resolved_by), ("resolved_at", resolved_at)] {
            if let Some(v) = v.filter(|s| !s.is_empty()) {
                next = line_text::set_open_line_attr(&next, k, &AttrVal::Str(v.to_string()))?;
            }
        }
        Some(next)
    })
}

#[cfg(test)]
mod tests {
    use crate::patch::apply_one;
    use crate::patch::core::error_codes;
    use serde_json::json;

    const IN_BLOCK: &str = "::grid{id=\"g\"}\n## Inner\n\ntext\n::\n\n## After\n";

    #[test]
    fn notes_on_a_section_inside_a_block_are_fenced_one_deeper() {
        let ops = [
            json!({"op": "add_comment", "id": "n1", "target": "inner", "content": "hi"}),
            json!({"op": "add_footnote", "id": "n1", "target": "inner", "content": "hi"}),
            json!({"op": "add_endnote", "id": "n1", "target": "inner", "content": "hi"}),
            json!({"op": "add_change_request", "id": "n1", "target": "inner",
                   "action": "insert", "text": "x"}),
        ];
        for op in ops {
            let out = apply_one(IN_BLOCK, &op).unwrap();
            assert!(out.contains("\n:::"), "{op}: {out}");
            assert!(error_codes(&out).is_empty(), "{op}: {out}");
            // Inside a directive a section is its heading line: the note
            // follows it as the directive's child, as in the reference.
            let doc = crate::doc::parse(&out);
            let g = doc.find("g").unwrap();
            assert_eq!(g.children()[0].id.as_deref(), Some("inner"));
            assert_eq!(g.children()[1].id.as_deref(), Some("n1"), "{out}");
            assert_eq!(
                doc.find("after").unwrap().span.start as usize,
                out.lines().count()
            );
        }
    }

    #[test]
    fn note_text_that_opens_a_fence_is_refused() {
        let src = "::claim{id=\"c\"}\nx\n::\n\n## After\n";
        for content in ["```\ncode", "~~~\nx", "```js"] {
            let op = json!({"op": "add_comment", "id": "n1", "target": "c", "content": content});
            let err = apply_one(src, &op).unwrap_err();
            assert_eq!(
                err.code,
                crate::patch::PatchErrorCode::InvalidContent,
                "{content}"
            );
        }
        // A closed fence is fine.
        let op = json!({"op": "add_footnote", "id": "n1", "target": "c",
                        "content": "```\ncode\n```"});
        let out = apply_one(src, &op).unwrap();
        assert!(error_codes(&out).is_empty(), "{out}");
    }
}

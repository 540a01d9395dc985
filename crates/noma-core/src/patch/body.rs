//! replace_body, update_heading and remove_attribute (§1.5).
//!
//! Imports `core` (one way) for the directive helpers; the heading-id
//! helpers it shares with rename_id live in `heading_id`.

use super::core::{check_key, parse_fragment, require_directive, rewrite_open_line};
use super::fence;
use super::heading_id::keep_section_ids;
use super::line_buf::LineBuf;
use super::line_text::{self, attr_tokens};
use super::{fail, Ctx, OpResult, PatchErrorCode as E};
use crate::doc::slug::slugify;
use crate::doc::NodeKind;

/// Replaces the body lines of a body-only directive (no child blocks other
/// than its one paragraph), keeping the opener and closer lines.
pub(crate) fn replace_body(ctx: &Ctx<'_>, id: &str, content: &str) -> OpResult<String> {
    let node = ctx.require(id, E::TargetMissing, "block")?;
    let NodeKind::Directive {
        children,
        closed,
        colons,
        ..
    } = &node.kind
    else {
        return fail(
            E::InvalidContent,
            format!("block \"{id}\" does not have replaceable body text"),
        );
    };
    let (closed, colons) = (*closed, *colons);
    if !(children.is_empty() || node.body().is_some()) {
        return fail(
            E::InvalidContent,
            format!("block \"{id}\" has child blocks; use replace_block"),
        );
    }
    let (start, end) = (node.span.start as usize, node.span.end as usize);
    let mut lines = LineBuf::new(ctx.src);
    let mut body = line_text::fragment_lines(content);
    // The block with its new body must still be one closed block: a body
    // that opens a code fence (or a directive) it does not close would
    // swallow the closing fence and the rest of the document. Directives in
    // the body are re-fenced below the block's own depth, as add_block's
    // content is (decision `parsed-directive-is-inserted`): the block is
    // read fenced `::`, so a body directive of any depth is its child.
    if closed {
        let shallow = |l: &str| format!("::{}", l.trim_start_matches(':'));
        let mut whole = vec![shallow(lines.get(start - 1))];
        whole.extend(body.iter().cloned());
        whole.push(shallow(lines.get(end - 1)));
        let parsed = parse_fragment(&whole.join("\n"))?;
        let mut whole = fence::refence(&whole, &parsed, 1, colons as usize)?;
        whole.pop();
        whole.remove(0);
        body = whole;
    }
    lines.splice(start, end.saturating_sub(start + 1), body);
    Ok(lines.finish_with(ctx.prefix))
}

/// Changes a section title, pinning the section's current id with an
/// explicit `{id="..."}` when the new title would slugify differently.
pub(crate) fn update_heading(ctx: &Ctx<'_>, id: &str, title: &str) -> OpResult<String> {
    let node = ctx.require(id, E::TargetMissing, "block")?;
    if !matches!(node.kind, NodeKind::Section { .. }) {
        return fail(
            E::InvalidContent,
            format!("block \"{id}\" is not a section heading"),
        );
    }
    if line_text::has_newline(title) {
        return fail(E::InvalidContent, "heading title must be a single line");
    }
    let mut lines = LineBuf::new(ctx.src);
    let idx = node.span.start as usize - 1;
    if let Some(next) = rewrite_heading_title(lines.get(idx), title, id) {
        lines.set(idx, next);
    }
    let out = lines.finish_with(ctx.prefix);
    keep_section_ids(ctx, id, None, out)
}

fn rewrite_heading_title(line: &str, title: &str, stable_id: &str) -> Option<String> {
    let h = line_text::split_heading_line(line)?;
    let needs_id = !stable_id.is_empty() && slugify(title) != stable_id;
    let attrs = h.attrs.map(line_text::js_trim).unwrap_or("");
    let (hashes, space) = (h.hashes, h.space);
    if attrs.is_empty() {
        return Some(if needs_id {
            format!("{hashes}{space}{title} {{id=\"{stable_id}\"}}")
        } else {
            format!("{hashes}{space}{title}")
        });
    }
    let has_id = attr_tokens(attrs)
        .iter()
        .any(|t| &attrs[t.start..t.key_end] == "id");
    let merged = if needs_id && !has_id {
        format!("{attrs} id=\"{stable_id}\"")
    } else {
        attrs.to_string()
    };
    Some(format!(
        "{hashes}{space}{title} {{{}}}",
        line_text::js_trim(&merged)
    ))
}

/// Removes one non-id attribute from a directive's open line.
pub(crate) fn remove_attribute(ctx: &Ctx<'_>, id: &str, key: &str) -> OpResult<String> {
    check_key(key)?;
    let node = require_directive(ctx, id)?;
    rewrite_open_line(ctx, node, |l| line_text::remove_open_line_attr(l, key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heading_title_pins_id() {
        assert_eq!(
            rewrite_heading_title("## Old {id=\"sec\"}", "New", "sec").as_deref(),
            Some("## New {id=\"sec\"}")
        );
        assert_eq!(
            rewrite_heading_title("# Risks", "Top Risks", "risks").as_deref(),
            Some("# Top Risks {id=\"risks\"}")
        );
        assert_eq!(
            rewrite_heading_title("# Risks", "RISKS", "risks").as_deref(),
            Some("# RISKS")
        );
        assert_eq!(
            rewrite_heading_title("# A {aliases=\"x\"}", "B", "a").as_deref(),
            Some("# B {aliases=\"x\" id=\"a\"}")
        );
    }

    #[test]
    fn other_sections_keep_their_ids() {
        use crate::patch::apply_one;
        use serde_json::json;
        let src = "# Overview\n\na\n\n# Overview\n\nb\n\n# Overview {x=\"1\"}\n\nc\n";
        let op = json!({"op": "update_heading", "id": "overview-2", "title": "Intro"});
        let out = apply_one(src, &op).unwrap();
        assert_eq!(
            out,
            "# Overview\n\na\n\n# Intro {id=\"overview-2\"}\n\nb\n\n# Overview {x=\"1\" id=\"overview-3\"}\n\nc\n"
        );
        // A new duplicate title shifts the later suffixes the other way.
        let src = "# Intro\n\n# Overview\n\n# Overview\n";
        let op = json!({"op": "update_heading", "id": "intro", "title": "Overview"});
        let out = apply_one(src, &op).unwrap();
        let ids: Vec<_> = crate::patch::heading_id::section_ids(&crate::doc::parse(&out))
            .into_iter()
            .map(|s| s.0.to_string())
            .collect();
        assert_eq!(ids, ["intro", "overview", "overview-2"], "{out}");
        // A title that stops being a heading is refused.
        let op = json!({"op": "update_heading", "id": "intro", "title": ""});
        assert_eq!(
            apply_one(src, &op).unwrap_err().code,
            crate::patch::PatchErrorCode::InvalidContent
        );
    }

    /// A directive in a new body is re-fenced below the block, so it is
    /// the block's child without a depth warning; code is untouched.
    #[test]
    fn directives_in_a_body_are_re_fenced() {
        use crate::patch::apply_one;
        use serde_json::json;
        let src = ":::claim{id=\"c\"}\nx\n:::\n";
        let op = json!({"op": "replace_body", "id": "c",
                        "content": "Text.\n\n::note{id=\"n\"}\nN\n::\n\n```\n::\n```"});
        let out = apply_one(src, &op).unwrap();
        assert_eq!(
            out,
            ":::claim{id=\"c\"}\nText.\n\n::::note{id=\"n\"}\nN\n::::\n\n```\n::\n```\n:::\n"
        );
        let d = crate::doc::parse(&out);
        assert!(d.issues.is_empty(), "{:?}", d.issues);
        assert_eq!(d.find("c").unwrap().children()[1].id.as_deref(), Some("n"));
    }

    #[test]
    fn a_body_that_opens_a_fence_is_refused() {
        use crate::patch::apply_one;
        use serde_json::json;
        let src = "::claim{id=\"c\"}\nx\n::\n\n## After\n";
        let op = json!({"op": "replace_body", "id": "c", "content": "```\ncode"});
        assert_eq!(
            apply_one(src, &op).unwrap_err().code,
            crate::patch::PatchErrorCode::InvalidContent
        );
        let op = json!({"op": "replace_body", "id": "c", "content": "```\ncode\n```"});
        assert_eq!(
            apply_one(src, &op).unwrap(),
            "::claim{id=\"c\"}\n```\ncode\n```\n::\n\n## After\n"
        );
        let op = json!({"op": "add_block", "parent": "after",
                        "content": "::claim{id=\"d\"}\n```\n"});
        assert_eq!(
            apply_one(src, &op).unwrap_err().code,
            crate::patch::PatchErrorCode::InvalidContent
        );
    }
}

//! replace_body, update_heading and remove_attribute (§1.5).

use super::core::{check_key, require_directive, rewrite_open_line};
use super::source::{self, attr_tokens, LineBuf};
use super::{fail, Ctx, OpResult, PatchErrorCode as E};
use crate::doc::slug::slugify;
use crate::doc::NodeKind;

/// Replaces the body lines of a body-only directive (no child blocks other
/// than its one paragraph), keeping the opener and closer lines.
pub(crate) fn replace_body(ctx: &Ctx<'_>, id: &str, content: &str) -> OpResult<String> {
    let node = ctx.require(id, E::TargetMissing, "block")?;
    let NodeKind::Directive {
        children, closed, ..
    } = &node.kind
    else {
        return fail(
            E::InvalidContent,
            format!("block \"{id}\" does not have replaceable body text"),
        );
    };
    let closed = *closed;
    if !(children.is_empty() || node.body().is_some()) {
        return fail(
            E::InvalidContent,
            format!("block \"{id}\" has child blocks; use replace_block"),
        );
    }
    let (start, end) = (node.span.start as usize, node.span.end as usize);
    let mut lines = LineBuf::new(ctx.src);
    let body = source::fragment_lines(content);
    // The block with its new body must still be one closed block: a body
    // that opens a code fence (or a directive) it does not close would
    // swallow the closing fence and the rest of the document.
    if closed {
        let mut whole = vec![lines.get(start - 1).to_string()];
        whole.extend(body.iter().cloned());
        whole.push(lines.get(end - 1).to_string());
        super::core::parse_fragment(&whole.join("\n"))?;
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
    if source::has_newline(title) {
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

/// The section ids of `doc` in document order, with their heading lines.
fn section_ids(doc: &crate::doc::Document) -> Vec<(&str, usize)> {
    doc.walk()
        .filter(|n| matches!(n.kind, NodeKind::Section { .. }))
        .map(|n| (n.id.as_deref().unwrap_or(""), n.span.start as usize))
        .collect()
}

/// Heading-derived ids are numbered in document order (§6.5), so a title
/// change can shift the `-n` suffix of later headings with the same slug
/// (`overview-3` becoming `overview-2` once `overview-2` is pinned and
/// renamed). The reference pins only the edited heading and so produces a
/// duplicate id; here every other section whose id would change is pinned
/// to its old id too, and a title that would still change an id (or stop
/// being a heading) is `invalid_content`. With `renamed`, section `id` is
/// expected to carry that new id (rename_id).
pub(crate) fn keep_section_ids(
    ctx: &Ctx<'_>,
    id: &str,
    renamed: Option<&str>,
    out: String,
) -> OpResult<String> {
    let before: Vec<(&str, usize)> = section_ids(&ctx.doc)
        .into_iter()
        .map(|(s, l)| (if s == id { renamed.unwrap_or(s) } else { s }, l))
        .collect();
    let body = out.strip_prefix(ctx.prefix).unwrap_or(&out);
    let parsed = crate::doc::parse(body);
    let after = section_ids(&parsed);
    if after.len() != before.len() {
        return fail(
            E::InvalidContent,
            format!("the new title would not leave \"{id}\" a section heading"),
        );
    }
    let shifted: Vec<(usize, &str)> = before
        .iter()
        .zip(&after)
        .filter(|((old, _), (new, _))| old != new)
        .map(|((old, _), (_, line))| (*line, *old))
        .collect();
    if shifted.is_empty() {
        return Ok(out);
    }
    let mut lines = LineBuf::new(body);
    for (line, old) in &shifted {
        if *old == id || Some(*old) == renamed {
            continue;
        }
        if let Some(next) = pin_heading_id(lines.get(line - 1), old) {
            lines.set(line - 1, next);
        }
    }
    let pinned = lines.finish_with(ctx.prefix);
    let body = pinned.strip_prefix(ctx.prefix).unwrap_or(&pinned);
    let check = crate::doc::parse(body);
    let same = section_ids(&check)
        .iter()
        .map(|s| s.0)
        .eq(before.iter().map(|s| s.0));
    if !same {
        return fail(
            E::InvalidContent,
            format!("the new title for \"{id}\" would change section ids"),
        );
    }
    Ok(pinned)
}

/// Sets a heading's explicit id: rewrites an `id=` token of its `{...}`
/// block, or adds one (appending a block when there is none).
pub(crate) fn set_heading_id(line: &str, id: &str) -> Option<String> {
    let h = source::split_heading_line(line)?;
    if let Some(a) = h.attrs {
        if let Some(t) = attr_tokens(a)
            .into_iter()
            .find(|t| &a[t.start..t.key_end] == "id")
        {
            let off = a.as_ptr() as usize - line.as_ptr() as usize;
            return Some(format!(
                "{}id=\"{id}\"{}",
                &line[..off + t.start],
                &line[off + t.end..]
            ));
        }
    }
    pin_heading_id(line, id)
}

/// Adds `id="…"` to a heading line's `{...}` block (or appends one).
fn pin_heading_id(line: &str, id: &str) -> Option<String> {
    let h = source::split_heading_line(line)?;
    let pin = format!("id=\"{id}\"");
    Some(match h.attrs {
        None => format!(
            "{} {{{pin}}}",
            line.trim_end_matches(crate::doc::slug::is_js_space)
        ),
        Some(a) => {
            let open = a.as_ptr() as usize - line.as_ptr() as usize - 1;
            let close = open + 1 + a.len();
            let inner = source::js_trim(a);
            let sep = if inner.is_empty() { "" } else { " " };
            format!(
                "{}{{{inner}{sep}{pin}}}{}",
                &line[..open],
                &line[close + 1..]
            )
        }
    })
}

fn rewrite_heading_title(line: &str, title: &str, stable_id: &str) -> Option<String> {
    let h = source::split_heading_line(line)?;
    let needs_id = !stable_id.is_empty() && slugify(title) != stable_id;
    let attrs = h.attrs.map(source::js_trim).unwrap_or("");
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
        source::js_trim(&merged)
    ))
}

/// Removes one non-id attribute from a directive's open line.
pub(crate) fn remove_attribute(ctx: &Ctx<'_>, id: &str, key: &str) -> OpResult<String> {
    check_key(key)?;
    let node = require_directive(ctx, id)?;
    rewrite_open_line(ctx, node, |l| source::remove_open_line_attr(l, key))
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
        let ids: Vec<_> = section_ids(&crate::doc::parse(&out))
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

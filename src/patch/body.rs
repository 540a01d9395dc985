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
    let NodeKind::Directive { children, .. } = &node.kind else {
        return fail(
            E::InvalidContent,
            format!("block \"{id}\" does not have replaceable body text"),
        );
    };
    if !(children.is_empty() || node.body().is_some()) {
        return fail(
            E::InvalidContent,
            format!("block \"{id}\" has child blocks; use replace_block"),
        );
    }
    let (start, end) = (node.span.start as usize, node.span.end as usize);
    let mut lines = LineBuf::new(ctx.src);
    lines.splice(
        start,
        end.saturating_sub(start + 1),
        source::fragment_lines(content),
    );
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
    Ok(lines.finish_with(ctx.prefix))
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
}

//! Section heading ids shared by update_heading (`body.rs`), and by
//! rename_id and delete_block on a section (`core.rs`): pinning an explicit
//! `{id="…"}` on a heading line, and keeping every other section's
//! heading-derived id stable after an edit. Its own file so that both op
//! files use it without importing each other.

use super::line_buf::LineBuf;
use super::line_text::{self, attr_tokens};
use super::{fail, Ctx, OpResult, PatchErrorCode as E};
use crate::doc::NodeKind;

/// The section ids of `doc` in document order, with their heading lines.
pub(super) fn section_ids(doc: &crate::doc::Document) -> Vec<(&str, usize)> {
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
    let edited = |old: &str| old == id || Some(old) == renamed;
    let what = format!("the new title for \"{id}\"");
    pin_shifted_ids(ctx, &before, edited, out, &what)
}

/// delete_block on a section: the sections after the deleted ones keep
/// their ids. Deleting `## Overview` would otherwise turn the next
/// `## Overview` (`overview-2`) into `overview`, retargeting every
/// reference to either; those headings get their old id pinned instead
/// (the reference renumbers them). `gone` is the deleted span's lines.
pub(crate) fn keep_ids_after_delete(
    ctx: &Ctx<'_>,
    id: &str,
    gone: std::ops::RangeInclusive<usize>,
    out: String,
) -> OpResult<String> {
    let before: Vec<(&str, usize)> = section_ids(&ctx.doc)
        .into_iter()
        .filter(|(_, line)| !gone.contains(line))
        .collect();
    let what = format!("deleting \"{id}\"");
    pin_shifted_ids(ctx, &before, |_| false, out, &what)
}

/// Pins on each heading of `out` whose section id differs from `before`
/// (the expected ids in document order) its old id, except where `edited`
/// says the change is the op's own; `invalid_content` (naming `what`) when
/// the sections no longer line up or an id still differs after pinning.
fn pin_shifted_ids(
    ctx: &Ctx<'_>,
    before: &[(&str, usize)],
    edited: impl Fn(&str) -> bool,
    out: String,
    what: &str,
) -> OpResult<String> {
    let body = out.strip_prefix(ctx.prefix).unwrap_or(&out);
    let parsed = crate::doc::parse(body);
    let after = section_ids(&parsed);
    if after.len() != before.len() {
        return fail(
            E::InvalidContent,
            format!("{what} would change which lines are section headings"),
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
        // The op's own heading is the op's to write; the check below still
        // holds it to the id expected of it.
        if edited(old) {
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
            format!("{what} would change section ids"),
        );
    }
    Ok(pinned)
}

/// Sets a heading's explicit id: rewrites an `id=` token of its `{...}`
/// block, or adds one (appending a block when there is none).
pub(crate) fn set_heading_id(line: &str, id: &str) -> Option<String> {
    let h = line_text::split_heading_line(line)?;
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
    let h = line_text::split_heading_line(line)?;
    let pin = format!("id=\"{id}\"");
    Some(match h.attrs {
        None => format!(
            "{} {{{pin}}}",
            line.trim_end_matches(crate::doc::slug::is_js_space)
        ),
        Some(a) => {
            let open = a.as_ptr() as usize - line.as_ptr() as usize - 1;
            let close = open + 1 + a.len();
            let inner = line_text::js_trim(a);
            let sep = if inner.is_empty() { "" } else { " " };
            format!(
                "{}{{{inner}{sep}{pin}}}{}",
                &line[..open],
                &line[close + 1..]
            )
        }
    })
}

//! The five core ops (§3.1): replace_block, add_block, delete_block,
//! update_attribute, rename_id.
//!
//! Where the reference is looser than §3.1 this follows the protocol:
//! replace_block on a section (a non-directive) is `target_missing`
//! (§3.1.1 and §3.5 name that case); replace_block and add_block reject a content id
//! that is already taken (`id_conflict`); add_block rejects a position
//! outside `0..=children.len()` (`parent_missing`, which §3.1.2 says in so
//! many words) instead of clamping it as the reference does; and
//! replace_block and add_block insert the parsed directive (§3.1.2),
//! re-fenced to the depth its place needs ([`fence`]), where the reference
//! splices the text verbatim and a `::` fragment under a `::` parent
//! closes the parent.
//!
//! rename_id and delete_block on a section are the two exceptions:
//! §3.1.3 and §3.1.5 word them for directives, but the reference applies
//! both, and a transcript it wrote must replay here.
//! rename_id gives the heading an explicit `{id="…"}`, which writes nothing
//! a §2.1 parser reads differently (see [`rename_id`]); delete_block
//! removes the section's lines (see [`delete_block`]).

use super::fence::{self, path_to};
use super::heading_id::{keep_ids_after_delete, keep_section_ids, set_heading_id};
use super::line_buf::LineBuf;
use super::line_text::{self, AttrVal};
use super::{fail, Ctx, OpResult, PatchErrorCode as E};
use crate::doc::{self, Node, NodeKind};

/// The schema's id pattern `^[A-Za-z_][A-Za-z0-9_./:-]*$`.
pub(crate) fn is_valid_id(id: &str) -> bool {
    let mut b = id.bytes();
    matches!(b.next(), Some(c) if c.is_ascii_alphabetic() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'/' | b':' | b'-'))
}

/// The schema's attribute key pattern `^[A-Za-z_][A-Za-z0-9_-]*$`.
pub(crate) fn is_valid_key(key: &str) -> bool {
    let mut b = key.bytes();
    matches!(b.next(), Some(c) if c.is_ascii_alphabetic() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-'))
}

/// `content` must parse to exactly one top-level directive that its own
/// closing fence ends (a code fence left open inside would swallow that
/// fence and, once spliced in, the rest of the document); returns it.
pub(crate) fn parse_fragment(content: &str) -> OpResult<Node> {
    let mut parsed = doc::parse(content);
    if let Some(issue) = parsed.issues.iter().find(|i| {
        matches!(
            i.code,
            "unclosed-code-fence" | "unclosed-directive" | "stray-directive-close"
        )
    }) {
        return fail(
            E::InvalidContent,
            format!(
                "fragment is not a closed block ({}: {})",
                issue.code, issue.message
            ),
        );
    }
    match parsed.children.len() {
        0 => return fail(E::InvalidContent, "fragment parsed to no blocks"),
        1 => {}
        n => {
            return fail(
                E::InvalidContent,
                format!("fragment must contain exactly one top-level block (got {n})"),
            )
        }
    }
    let node = parsed.children.remove(0);
    if !matches!(node.kind, NodeKind::Directive { .. }) {
        return fail(
            E::InvalidContent,
            format!(
                "fragment must be a directive block (got {})",
                node.type_name()
            ),
        );
    }
    Ok(node)
}

/// Finds `id` and requires it to be a directive (`target_missing` otherwise).
pub(crate) fn require_directive<'c>(ctx: &'c Ctx<'_>, id: &str) -> OpResult<&'c Node> {
    let node = ctx.require(id, E::TargetMissing, "block")?;
    if !matches!(node.kind, NodeKind::Directive { .. }) {
        return fail(
            E::TargetMissing,
            format!("block \"{id}\" is not a directive"),
        );
    }
    Ok(node)
}

/// Whether `node` (named `id`) is a heading section rather than a
/// directive; `target_missing` when it is neither (the ops that take both,
/// rename_id and delete_block).
fn is_section(node: &Node, id: &str) -> OpResult<bool> {
    match node.kind {
        NodeKind::Section { .. } => Ok(true),
        NodeKind::Directive { .. } => Ok(false),
        _ => fail(
            E::TargetMissing,
            format!("block \"{id}\" is neither a directive nor a section"),
        ),
    }
}

/// Rewrites the opener of `node` with `f`; `invalid_content` if it is not one.
pub(crate) fn rewrite_open_line(
    ctx: &Ctx<'_>,
    node: &Node,
    f: impl FnOnce(&str) -> Option<String>,
) -> OpResult<String> {
    let mut lines = LineBuf::new(ctx.src);
    let idx = node.span.start as usize - 1;
    let Some(next) = f(lines.get(idx)) else {
        return fail(
            E::InvalidContent,
            format!(
                "malformed open line for \"{}\"",
                node.id.as_deref().unwrap_or("?")
            ),
        );
    };
    lines.set(idx, next);
    Ok(lines.finish_with(ctx.prefix))
}

fn check_content_id(ctx: &Ctx<'_>, fragment: &Node, except: Option<&str>) -> OpResult<()> {
    if let Some(new_id) = fragment.id.as_deref() {
        if Some(new_id) != except && ctx.id_taken(new_id) {
            return fail(E::IdConflict, format!("id \"{new_id}\" is already taken"));
        }
    }
    Ok(())
}

/// The fragment's lines, re-fenced for a place whose fence depth is
/// [`fence::depth_for`] its container and siblings (§3.1.2: the *parsed*
/// directive is inserted; an agent cannot know the destination's depth).
fn placed_fragment(
    ctx: &Ctx<'_>,
    content: &str,
    fragment: &Node,
    container: Option<&Node>,
    siblings: &[Node],
) -> OpResult<Vec<String>> {
    let NodeKind::Directive { colons, .. } = fragment.kind else {
        return Ok(line_text::fragment_lines(content));
    };
    let depth = fence::depth_for(&ctx.doc, container, siblings, colons as usize);
    // `parse_fragment` parsed `content` as a document of its own; leading
    // blank lines put the directive below line 1.
    let lines = line_text::fragment_lines(content);
    fence::refence(&lines, fragment, 1, depth)
}

/// §3.1.1 replace_block: the new block takes the old one's place at the
/// depth that place needs ([`placed_fragment`]).
pub(crate) fn replace_block(ctx: &Ctx<'_>, id: &str, content: &str) -> OpResult<String> {
    let fragment = parse_fragment(content)?;
    let node = require_directive(ctx, id)?;
    check_content_id(ctx, &fragment, Some(id))?;
    let path = path_to(&ctx.doc, node);
    let container = path.len().checked_sub(2).map(|i| path[i]);
    let siblings = container.map_or(&ctx.doc.children[..], |c| c.children());
    let new = placed_fragment(ctx, content, &fragment, container, siblings)?;
    let (start, end) = (node.span.start as usize, node.span.end as usize);
    let mut lines = LineBuf::new(ctx.src);
    lines.splice(start - 1, end - start + 1, new);
    Ok(lines.finish_with(ctx.prefix))
}

/// Where a new child at `position` of `parent` goes: (line index, lines).
/// Mirrors the reference: before the sibling at `position` with a blank
/// line after, after the last child with a blank line before, or just
/// inside an empty parent.
pub(crate) fn child_insertion(
    parent: &Node,
    pos: usize,
    mut fragment: Vec<String>,
) -> (usize, Vec<String>) {
    let children = parent.children();
    let at = if let Some(next) = children.get(pos) {
        fragment.push(String::new());
        next.span.start as usize - 1
    } else if let Some(last) = children.last() {
        fragment.insert(0, String::new());
        last.span.end as usize
    } else if matches!(parent.kind, NodeKind::Directive { .. }) {
        parent.span.end as usize - 1
    } else {
        parent.span.end as usize
    };
    (at, fragment)
}

/// Resolves `parent` to a block that can hold children (a section or a
/// directive); anything else is `parent_missing`.
pub(crate) fn require_container<'c>(ctx: &'c Ctx<'_>, parent: &str) -> OpResult<&'c Node> {
    let node = ctx.require(parent, E::ParentMissing, "parent")?;
    if !matches!(
        node.kind,
        NodeKind::Directive { .. } | NodeKind::Section { .. }
    ) {
        return fail(
            E::ParentMissing,
            format!("parent \"{parent}\" cannot have children"),
        );
    }
    if let Some(holder) = directive_holding(ctx, node) {
        // Inside a directive a heading is a section of its own line: a
        // block placed after it stays the directive's child, so the op
        // would report success at another place than the one asked for.
        let name = holder
            .id
            .as_deref()
            .map_or_else(|| "its directive".to_string(), |h| format!("\"{h}\""));
        return fail(
            E::ParentMissing,
            format!(
                "parent \"{parent}\" is a heading inside directive block {name}, which holds no \
                 blocks (the blocks after it belong to the directive); use {name} as the parent, \
                 with a position after the heading"
            ),
        );
    }
    Ok(node)
}

/// The directive whose subtree holds section `node`, if any.
fn directive_holding<'c>(ctx: &'c Ctx<'_>, node: &Node) -> Option<&'c Node> {
    if !matches!(node.kind, NodeKind::Section { .. }) {
        return None;
    }
    ctx.doc
        .walk_with_parent()
        .into_iter()
        .find(|(_, n)| std::ptr::eq(*n, node))
        .and_then(|(parent, _)| parent)
        .and_then(|p| {
            // A section's parent is a directive or a section; sections
            // inside a directive own nothing, so the parent is the holder
            // when the section is inside one at all.
            matches!(p.kind, NodeKind::Directive { .. }).then_some(p)
        })
}

/// Resolves `parent` + `position` for add_block/move_block.
pub(crate) fn require_parent<'c>(
    ctx: &'c Ctx<'_>,
    parent: &str,
    position: Option<f64>,
) -> OpResult<(&'c Node, usize)> {
    let node = require_container(ctx, parent)?;
    let kids: Vec<&Node> = node.children().iter().collect();
    let pos = child_position(node, &kids, parent, position)?;
    Ok((node, pos))
}

/// The index a new child block takes among `kids` of `dest` (default:
/// last).
///
/// Outside directives a section owns everything up to the next heading of
/// its level, so a block written after a section child's heading becomes
/// that section's child, not `parent`'s (the reference appends there
/// anyway). The positions that keep it a direct child are `0..=k`, `k`
/// being the index of the first section child (or the count): no position
/// means `k`, and a position past `k` is `parent_missing`, like one past
/// the end. Inside a directive a heading is a section of its own line
/// (`doc::parse`), so there every position keeps the block a direct child.
pub(crate) fn child_position(
    dest: &Node,
    kids: &[&Node],
    parent: &str,
    position: Option<f64>,
) -> OpResult<usize> {
    let len = kids.len();
    let k = if matches!(dest.kind, NodeKind::Directive { .. }) {
        len
    } else {
        kids.iter()
            .position(|c| matches!(c.kind, NodeKind::Section { .. }))
            .unwrap_or(len)
    };
    match position {
        None => Ok(k),
        Some(p) if p.fract() == 0.0 && p >= 0.0 && p <= k as f64 => Ok(p as usize),
        Some(p) if p.fract() == 0.0 && p >= 0.0 && p <= len as f64 => fail(
            E::ParentMissing,
            format!(
                "position {p} of parent \"{parent}\" is inside its section \"{}\"; a block stays a child of \"{parent}\" only at 0..={k}",
                kids[k].id.as_deref().unwrap_or("?")
            ),
        ),
        Some(p) => fail(
            E::ParentMissing,
            format!("position {p} is out of range for parent \"{parent}\" (0..={len})"),
        ),
    }
}

/// §3.1.2 add_block. The parsed directive is inserted, re-fenced to the
/// depth its parent needs ([`placed_fragment`]); positions after a section
/// child are refused (see [`child_position`]).
pub(crate) fn add_block(
    ctx: &Ctx<'_>,
    parent: &str,
    content: &str,
    position: Option<f64>,
) -> OpResult<String> {
    let fragment = parse_fragment(content)?;
    let (node, pos) = require_parent(ctx, parent, position)?;
    check_content_id(ctx, &fragment, None)?;
    let new = placed_fragment(ctx, content, &fragment, Some(node), node.children())?;
    let (at, new) = child_insertion(node, pos, new);
    let mut lines = LineBuf::new(ctx.src);
    lines.splice(at, 0, new);
    Ok(lines.finish_with(ctx.prefix))
}

/// Removes lines `start..=end` (1-based), plus one following blank line
/// when the block also had a blank line before it.
pub(crate) fn delete_span(lines: &mut LineBuf<'_>, start: usize, end: usize) {
    let mut count = end - start + 1;
    if lines.is_empty_line(end) && start >= 2 && lines.is_empty_line(start - 2) {
        count += 1;
    }
    lines.splice(start - 1, count, Vec::new());
}

/// §3.1.3 delete_block. A section is deleted as the reference deletes it:
/// its heading through the end of its span (its subsections included), so
/// a transcript the reference wrote replays here. §3.1.3 words the op for
/// directives, like rename_id; see the module documentation. Later
/// sections keep their ids ([`keep_ids_after_delete`]).
pub(crate) fn delete_block(ctx: &Ctx<'_>, id: &str) -> OpResult<String> {
    let node = ctx.require(id, E::TargetMissing, "block")?;
    let section = is_section(node, id)?;
    let (start, end) = (node.span.start as usize, node.span.end as usize);
    let mut lines = LineBuf::new(ctx.src);
    delete_span(&mut lines, start, end);
    let out = lines.finish_with(ctx.prefix);
    if section {
        keep_ids_after_delete(ctx, id, start..=end, out)
    } else {
        Ok(out)
    }
}

pub(crate) fn check_key(key: &str) -> OpResult<()> {
    if key == "id" {
        return fail(
            E::IdAttributeProtected,
            "use rename_id to change a block's id",
        );
    }
    if !is_valid_key(key) {
        return fail(
            E::InvalidContent,
            format!("\"{key}\" is not a valid attribute key"),
        );
    }
    Ok(())
}

/// §3.1.4 update_attribute (`null` removes the attribute; a no-op if absent).
pub(crate) fn update_attribute(
    ctx: &Ctx<'_>,
    id: &str,
    key: &str,
    value: Option<&AttrVal>,
) -> OpResult<String> {
    check_key(key)?;
    let node = require_directive(ctx, id)?;
    if let Some(AttrVal::Str(s)) = value {
        if line_text::has_newline(s) {
            return fail(
                E::InvalidContent,
                "attribute values must be single-line strings",
            );
        }
    }
    match value {
        Some(v) => rewrite_open_line(ctx, node, |l| line_text::set_open_line_attr(l, key, v)),
        None => rewrite_open_line(ctx, node, |l| line_text::remove_open_line_attr(l, key)),
    }
}

/// Attributes whose values rename_id retargets.
const REF_ATTRS: [&str; 5] = ["for", "parent", "dataset", "block", "ref"];

/// §3.1.5 rename_id: the id itself, `[[from]]` wikilinks anywhere (and
/// labelled `[[from|label]]` ones, the label kept), and
/// `for=`/`parent=`/`dataset=`/`block=`/`ref=` values on directive open lines.
///
/// Order of checks, as the reference: `from` missing is `target_missing`,
/// then a taken `to` is `id_conflict` (whatever `from`'s kind), then a
/// target that is neither a directive nor a section is `target_missing`,
/// and a `to` outside the published `BlockId` pattern
/// (`patch-op.schema.json`) is `invalid_content`: §2 and §3 give no id
/// grammar, but the reference's own wire schema makes such an op invalid
/// (its engine writes it anyway, e.g. `{id="Bad Id!"}`).
///
/// A section is renamed as the reference does it, by giving its heading an
/// explicit `{id="to"}` (replacing an `id=` already there). §3.1.5 words
/// rename_id for directive blocks; the reference's behaviour, which only
/// adds an explicit id, is followed so that its transcripts replay here.
/// Explicit ids take no part in heading-slug suffixing (§2.1), so later
/// headings with the same slug would renumber (`overview-2` becoming
/// `overview`); those are pinned to their current ids, as update_heading
/// does.
pub(crate) fn rename_id(ctx: &Ctx<'_>, from: &str, to: &str) -> OpResult<String> {
    let node = ctx.require(from, E::TargetMissing, "block")?;
    if ctx.id_taken(to) {
        return fail(E::IdConflict, format!("target id \"{to}\" already exists"));
    }
    let section = is_section(node, from)?;
    if !is_valid_id(to) {
        return fail(E::InvalidContent, format!("\"{to}\" is not a valid id"));
    }
    let mut lines = LineBuf::new(ctx.src);
    let idx = node.span.start as usize - 1;
    let open = if section {
        set_heading_id(lines.get(idx), to)
    } else {
        line_text::set_open_line_attr(lines.get(idx), "id", &AttrVal::Str(to.to_string()))
    };
    let Some(open) = open else {
        return fail(
            E::InvalidContent,
            format!("malformed open line for \"{from}\""),
        );
    };
    lines.set(idx, open);
    let link_from = format!("[[{from}]]");
    let link_to = format!("[[{to}]]");
    let finder = memchr::memmem::Finder::new(link_from.as_bytes());
    let labelled_from = format!("[[{from}|");
    let labelled = memchr::memmem::Finder::new(labelled_from.as_bytes());
    // Both rewrites need `from` itself on the line: skip the rest cheaply.
    let any = memchr::memmem::Finder::new(from.as_bytes());
    for i in 0..lines.len() {
        let line = lines.get(i);
        if any.find(line.as_bytes()).is_none() {
            continue;
        }
        let mut next: Option<String> = None;
        if finder.find(line.as_bytes()).is_some() {
            next = Some(line.replace(&link_from, &link_to));
        }
        let cur = next.as_deref().unwrap_or(line);
        if labelled.find(cur.as_bytes()).is_some() {
            next = Some(retarget_labelled(cur, from, to));
        }
        let cur = next.as_deref().unwrap_or(line);
        if is_directive_line(cur) {
            if let Some(r) = retarget_attrs(cur, from, to) {
                next = Some(r);
            }
        }
        if let Some(n) = next {
            lines.set(i, n);
        }
    }
    let out = lines.finish_with(ctx.prefix);
    if section {
        keep_section_ids(ctx, from, Some(to), out)
    } else {
        Ok(out)
    }
}

/// `line` with every labelled `[[from|label]]` pointing at `to` instead,
/// its label kept.
fn retarget_labelled(line: &str, from: &str, to: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut copied = 0;
    for link in crate::doc::inline::wikilink_spans(line) {
        if link.target == from && link.label.is_some() {
            let at = link.start + 2;
            out.push_str(&line[copied..at]);
            out.push_str(to);
            copied = at + from.len();
        }
    }
    out.push_str(&line[copied..]);
    out
}

/// `/^:{2,}\w/` on the trimmed line.
fn is_directive_line(line: &str) -> bool {
    let t = line_text::js_trim(line);
    let colons = t.bytes().take_while(|&c| c == b':').count();
    colons >= 2
        && t.as_bytes()
            .get(colons)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
}

/// Rewrites `k="from"`, `k='from'` and bare `k=from` for the reference keys;
/// `None` when nothing changed.
fn retarget_attrs(line: &str, from: &str, to: &str) -> Option<String> {
    let mut cur = line.to_string();
    let mut changed = false;
    for key in REF_ATTRS {
        let pat = format!("{key}=");
        let mut out = String::with_capacity(cur.len());
        let mut i = 0;
        while let Some(off) = cur[i..].find(&pat) {
            let at = i + off;
            let boundary = at == 0
                || !cur.as_bytes()[at - 1].is_ascii_alphanumeric()
                    && cur.as_bytes()[at - 1] != b'_';
            let v = at + pat.len();
            out.push_str(&cur[i..v]);
            i = v;
            if !boundary {
                continue;
            }
            let rest = &cur[v..];
            let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'');
            if let Some(q) = quote {
                if let Some(after) = rest[1..].strip_prefix(from) {
                    if after.starts_with(q) {
                        out.push(q);
                        out.push_str(to);
                        out.push(q);
                        i = v + 1 + from.len() + 1;
                        changed = true;
                        continue;
                    }
                }
            } else if let Some(after) = rest.strip_prefix(from) {
                if after.starts_with(|c: char| c == '}' || crate::doc::slug::is_js_space(c)) {
                    out.push('"');
                    out.push_str(to);
                    out.push('"');
                    i = v + from.len();
                    changed = true;
                }
            }
        }
        out.push_str(&cur[i..]);
        cur = out;
    }
    changed.then_some(cur)
}

/// Test helper: the validator's error codes for `src`, sorted.
#[cfg(test)]
pub(crate) fn error_codes(src: &str) -> Vec<String> {
    let opts = crate::validate::Options::default();
    let mut codes: Vec<String> = crate::validate::validate(&doc::parse(src), &opts)
        .into_iter()
        .filter(|d| d.severity == crate::diag::Severity::Error)
        .map(|d| d.code)
        .collect();
    codes.sort();
    codes
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The canonical ids of `src` in document order.
    fn ids_of(src: &str) -> Vec<String> {
        doc::parse(src)
            .walk()
            .filter_map(|n| n.id.as_ref().map(|i| i.to_string()))
            .collect()
    }

    #[test]
    fn retargets_reference_attrs_only() {
        assert_eq!(
            retarget_attrs(
                r#"::evidence{for="old" data-for=old x="old"}"#,
                "old",
                "new"
            )
            .as_deref(),
            Some(r#"::evidence{for="new" data-for="new" x="old"}"#)
        );
        assert_eq!(retarget_attrs(r#"::e{xfor="old"}"#, "old", "new"), None);
        assert_eq!(retarget_attrs(r#"::e{for="older"}"#, "old", "new"), None);
    }

    #[test]
    fn rename_id_retargets_labelled_links_keeping_the_label() {
        use crate::patch::apply_one;
        use serde_json::json;
        let src = "::claim{id=\"old\"}\nx\n::\n\nSee [[old|the claim]], [[old]], [[older|no]] and [[old|a|b]].\n";
        let out = apply_one(src, &json!({"op": "rename_id", "from": "old", "to": "new"})).unwrap();
        assert_eq!(
            out,
            "::claim{id=\"new\"}\nx\n::\n\nSee [[new|the claim]], [[new]], [[older|no]] and [[new|a|b]].\n"
        );
        assert_eq!(retarget_labelled("[[old|x", "old", "new"), "[[old|x");
    }

    #[test]
    fn rename_id_on_a_section_pins_the_heading() {
        use crate::patch::{apply_one, PatchErrorCode};
        use serde_json::json;
        let src = "# Risks\n\nSee [[risks]].\n\n## Overview\n\nx\n\n## Overview\n\ny\n";
        let out = apply_one(
            src,
            &json!({"op": "rename_id", "from": "risks", "to": "r2"}),
        );
        assert_eq!(
            out.unwrap(),
            "# Risks {id=\"r2\"}\n\nSee [[r2]].\n\n## Overview\n\nx\n\n## Overview\n\ny\n"
        );
        // The first of two equal titles: the second keeps `overview-2`.
        let out = apply_one(
            src,
            &json!({"op": "rename_id", "from": "overview", "to": "o"}),
        )
        .unwrap();
        assert_eq!(
            out,
            "# Risks\n\nSee [[risks]].\n\n## Overview {id=\"o\"}\n\nx\n\n## Overview {id=\"overview-2\"}\n\ny\n"
        );
        assert_eq!(ids_of(&out), ["risks", "o", "overview-2"]);
        // An explicit id is rewritten in place, other heading attrs kept.
        let src = "## Plan {id=\"p\" aliases=\"x\"}\n\nz\n";
        assert_eq!(
            apply_one(src, &json!({"op": "rename_id", "from": "p", "to": "q"})).unwrap(),
            "## Plan {id=\"q\" aliases=\"x\"}\n\nz\n"
        );
        // id_conflict comes before the kind and id checks; missing `from` first.
        let src = "# Risks\n\n::claim{id=\"c\"}\nx\n::\n";
        for (from, to, code) in [
            ("risks", "c", PatchErrorCode::IdConflict),
            ("nope", "c", PatchErrorCode::TargetMissing),
            ("risks", "Bad Id!", PatchErrorCode::InvalidContent),
        ] {
            let op = json!({"op": "rename_id", "from": from, "to": to});
            assert_eq!(apply_one(src, &op).unwrap_err().code, code, "{op}");
        }
    }

    #[test]
    fn delete_block_on_a_section_removes_it_as_the_reference_does() {
        use crate::patch::{apply_one, PatchErrorCode};
        use serde_json::json;
        let src = "# Risks\n\nSee [[overview-2]].\n\n## Overview\n\nx\n\n### Deep\n\n::note{id=\"n\"}\nN\n::\n\n## Overview\n\ny\n";
        // The section, its subsection and its blocks go with one blank
        // line; the second "Overview" keeps `overview-2` (pinned), so the
        // link still resolves.
        let out = apply_one(src, &json!({"op": "delete_block", "id": "overview"})).unwrap();
        assert_eq!(
            out,
            "# Risks\n\nSee [[overview-2]].\n\n## Overview {id=\"overview-2\"}\n\ny\n"
        );
        assert_eq!(ids_of(&out), ["risks", "overview-2"]);
        // The last section: nothing after it shifts, nothing is pinned.
        let out = apply_one(src, &json!({"op": "delete_block", "id": "overview-2"})).unwrap();
        assert_eq!(
            out,
            "# Risks\n\nSee [[overview-2]].\n\n## Overview\n\nx\n\n### Deep\n\n::note{id=\"n\"}\nN\n::\n"
        );
        // replace_block stays directive-only (§3.1.1).
        let op = json!({"op": "replace_block", "id": "deep", "content": "::x{id=\"deep\"}\n::"});
        assert_eq!(
            apply_one(src, &op).unwrap_err().code,
            PatchErrorCode::TargetMissing
        );
    }

    #[test]
    fn ids_and_keys() {
        assert!(is_valid_id("a-b.c/d:e_1"));
        assert!(!is_valid_id("1a"));
        assert!(!is_valid_id("a b"));
        assert!(is_valid_key("resolved_by"));
        assert!(!is_valid_key("a=b"));
    }

    /// Content fenced too shallow for its place is re-fenced (decision
    /// `parsed-directive-is-inserted`):
    /// the block lands where the op put it, every other line unchanged.
    #[test]
    fn content_fenced_too_shallow_is_re_fenced() {
        use crate::patch::apply_one;
        use serde_json::json;
        let src = "::grid{id=\"g\"}\n:::card{id=\"a\"}\nA\n:::\n\n:::card{id=\"b\"}\nB\n:::\n::\n";
        let shallow = "::card{id=\"n\"}\nN\n::";
        let deep = ":::card{id=\"n\"}\nN\n:::";
        for content in [shallow, deep] {
            let add = json!({"op": "add_block", "parent": "g", "position": 0, "content": content});
            assert_eq!(
                apply_one(src, &add).unwrap(),
                "::grid{id=\"g\"}\n:::card{id=\"n\"}\nN\n:::\n\n:::card{id=\"a\"}\nA\n:::\n\n:::card{id=\"b\"}\nB\n:::\n::\n"
            );
            let replace = json!({"op": "replace_block", "id": "a", "content": content});
            assert_eq!(
                apply_one(src, &replace).unwrap(),
                "::grid{id=\"g\"}\n:::card{id=\"n\"}\nN\n:::\n\n:::card{id=\"b\"}\nB\n:::\n::\n"
            );
        }
        // A fragment's own children follow it, an equal-colon child made
        // strictly deeper; a code fence inside is left alone.
        let nested = "::card{id=\"n\"}\n::note{id=\"m\"}\n```\n::\n```\n::\n::";
        let op = json!({"op": "add_block", "parent": "b", "content": nested});
        let out = apply_one(src, &op).unwrap();
        assert!(
            out.contains(
                "::::card{id=\"n\"}\n:::::note{id=\"m\"}\n```\n::\n```\n:::::\n::::\n:::\n::\n"
            ),
            "{out}"
        );
        assert!(error_codes(&out).is_empty(), "{out}");
        let d = doc::parse(&out);
        assert!(d.issues.is_empty(), "{out}");
        let b = d.find("b").unwrap();
        assert_eq!(b.children().last().unwrap().id.as_deref(), Some("n"));
        assert_eq!(d.find("n").unwrap().children()[0].id.as_deref(), Some("m"));
        // Not exactly one directive: still invalid_content.
        for bad in ["text", "::a\n::\n::b\n::", "::a\nopen"] {
            let op = json!({"op": "add_block", "parent": "g", "content": bad});
            assert_eq!(
                apply_one(src, &op).unwrap_err().code,
                crate::patch::PatchErrorCode::InvalidContent,
                "{bad}"
            );
        }
    }
}

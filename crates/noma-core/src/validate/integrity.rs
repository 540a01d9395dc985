//! Document integrity: `duplicate-id`, `broken-reference`, and the profile
//! declaration check (`unknown-profile`).

use super::{profiles, rule_diagnostic, Ctx, FastMap, FastSet};
use crate::diag::Diagnostic;
use crate::doc::inline::wikilinks;
use crate::doc::Node;
use std::borrow::Cow;

/// Registers a node's id and aliases; a repeated canonical id is an error.
pub(crate) fn register_ids<'d>(cx: &mut Ctx<'d>, node: &'d Node) {
    if let Some(duplicate) = register(&mut cx.ids, &mut cx.aliases, node) {
        cx.out.push(duplicate);
    }
}

/// Maps a node's id and aliases to it unless an earlier node holds them;
/// a repeated canonical id yields its `duplicate-id` finding.
fn register<'d>(
    ids: &mut FastMap<&'d str, &'d Node>,
    aliases: &mut FastMap<&'d str, &'d Node>,
    node: &'d Node,
) -> Option<Diagnostic> {
    for alias in &node.aliases {
        aliases.entry(alias.as_str()).or_insert(node);
    }
    let id = node.id.as_deref()?;
    // One hash per id: the entry either registers it or finds the first owner.
    let first_line = match ids.entry(id) {
        std::collections::hash_map::Entry::Vacant(slot) => {
            slot.insert(node);
            return None;
        }
        std::collections::hash_map::Entry::Occupied(first) => first.get().span.start,
    };
    Some(rule_diagnostic(
        "duplicate-id",
        format!(
            "duplicate block id \"{id}\" (first used on line {first_line}); give one of them a different id="
        ),
        Some(node.span.start),
        Some(id),
    ))
}

/// Queues every `[[wikilink]]` in `text` (outside inline code spans) as a
/// reference; `line` is the text's first line.
pub(crate) fn wikilinks_in<'d>(cx: &mut Ctx<'d>, text: &'d str, line: u32, owner: Option<&'d str>) {
    let has_link = memchr::memchr_iter(b'[', text.as_bytes())
        .any(|i| text.as_bytes().get(i + 1) == Some(&b'['));
    if !has_link {
        return;
    }
    if memchr::memchr(b'`', text.as_bytes()).is_none() {
        let mut counted = 0usize;
        let mut cur_line = line;
        for (off, target) in wikilinks(text) {
            cur_line += newlines(&text[counted..off]);
            counted = off;
            cx.reference(target, cur_line, owner, None);
        }
        return;
    }
    // Inline code spans are removed first, as the reference does, so the
    // text around a span is joined; track removed newlines for positions.
    let (stripped, removed) = strip_code_spans(text);
    let (mut counted, mut kept_lines) = (0usize, 0u32);
    for (off, target) in wikilinks(&stripped) {
        kept_lines += newlines(&stripped[counted..off]);
        counted = off;
        let idx = removed.partition_point(|(at, _)| *at <= off);
        let before = idx
            .checked_sub(1)
            .and_then(|i| removed.get(i))
            .map_or(0, |(_, n)| *n);
        let l = line + kept_lines + before;
        cx.reference(Cow::Owned(target.to_string()), l, owner, None);
    }
}

fn newlines(s: &str) -> u32 {
    memchr::memchr_iter(b'\n', s.as_bytes()).count() as u32
}

/// Removes `` `…` `` spans (an unpaired backtick stays). Returns the text and
/// checkpoints `(offset in stripped text, newlines removed so far)`.
fn strip_code_spans(text: &str) -> (String, Vec<(usize, u32)>) {
    let mut out = String::with_capacity(text.len());
    let mut removed = Vec::new();
    let mut total = 0u32;
    let mut rest = text;
    while let Some(open) = rest.find('`') {
        let Some(len) = rest[open + 1..].find('`') else {
            break;
        };
        out.push_str(&rest[..open]);
        total += newlines(&rest[open..open + len + 2]);
        removed.push((out.len(), total));
        rest = &rest[open + len + 2..];
    }
    out.push_str(rest);
    (out, removed)
}

/// Declared profile names must be known.
pub(crate) fn check_profiles_declared(cx: &mut Ctx<'_>) {
    let from_frontmatter = cx.opts.profile.is_none();
    let line = if from_frontmatter {
        profile_line(cx)
    } else {
        None
    };
    let names = cx.profiles.names.clone();
    for name in names {
        if !profiles::is_known(&name) {
            cx.emit(
                "unknown-profile",
                format!(
                    "unknown profile \"{name}\"; known profiles: {}",
                    profiles::KNOWN.join(", ")
                ),
                line,
                None,
            );
        }
    }
}

/// The frontmatter line declaring `profile:`/`profiles:`, if any.
fn profile_line(cx: &Ctx<'_>) -> Option<u32> {
    let fm = cx.doc.frontmatter.as_ref()?;
    fm.raw
        .split('\n')
        .position(|l| l.starts_with("profile:") || l.starts_with("profiles:"))
        .map(|i| fm.span.start + 1 + i as u32)
        .or(Some(fm.span.start))
}

/// Resolves every queued reference against canonical ids and aliases.
pub(crate) fn check_references(cx: &mut Ctx<'_>) {
    let refs = std::mem::take(&mut cx.refs);
    let mut reported: FastSet<(Option<&str>, u32, &str)> = FastSet::default();
    let mut suggestions_left = MAX_SUGGESTIONS;
    for r in &refs {
        let target: &str = &r.target;
        let elsewhere = (cx.opts.known_elsewhere.as_ref()).is_some_and(|k| k.contains(target));
        if cx.resolve(target).is_some()
            || elsewhere
            || !reported.insert((r.node_id, r.line, target))
        {
            continue;
        }
        let how = match r.attr {
            Some(attr) => format!("{attr}=\"{target}\""),
            None => format!("[[{target}]]"),
        };
        let hint = if suggestions_left > 0 {
            suggestions_left -= 1;
            near_miss(cx, target)
                .map(|s| format!("; did you mean \"{s}\"?"))
                .unwrap_or_else(|| "; fix the id or add a block with that id".into())
        } else {
            String::new()
        };
        cx.emit(
            "broken-reference",
            format!("{how} points at no block id or alias{hint}"),
            Some(r.line),
            r.node_id,
        );
    }
}

/// How many broken references get a "did you mean" search (each is a scan
/// over every id, so a document full of broken links stays linear).
const MAX_SUGGESTIONS: usize = 32;

/// The unique id or alias within edit distance 2 of `target`, if exactly
/// one exists.
fn near_miss<'d>(cx: &Ctx<'d>, target: &str) -> Option<&'d str> {
    crate::suggest::near_miss(
        target,
        cx.ids.keys().copied().chain(cx.aliases.keys().copied()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_code_spans_and_tracks_newlines() {
        let (s, removed) = strip_code_spans("a `x\ny` b `c");
        assert_eq!(s, "a  b `c");
        assert_eq!(removed, vec![(2, 1)]);
    }
}

//! Both sides' values of a block a rebase conflicts on, so a reviewer
//! sees what each side wants without opening either transcript.

use noma_core::doc::ast::{Attrs, Node};
use noma_core::doc::lines::{slice_joined, split};

/// Characters of one side's value kept; a longer one is cut with `…`.
pub const VALUE_CHARS: usize = 120;

/// What block `id` holds in the documents `ours` and `theirs`, narrowed
/// to the part that differs: the attributes that differ (`key=value`,
/// `key unset`) when the bodies agree, else the bodies, else the block's
/// source; `(absent)` for a side without the block. Each on one line and
/// cut at [`VALUE_CHARS`].
pub(crate) fn conflict_values(ours: &str, theirs: &str, id: &str) -> (String, String) {
    let (od, td) = (noma_core::doc::parse(ours), noma_core::doc::parse(theirs));
    let (o, t) = (od.find(id), td.find(id));
    let (o, t) = match (o, t) {
        (Some(o), Some(t)) => narrowed((ours, o), (theirs, t)),
        _ => (
            o.map_or_else(absent, |n| source(ours, n)),
            t.map_or_else(absent, |n| source(theirs, n)),
        ),
    };
    (short(&o), short(&t))
}

fn absent() -> String {
    "(absent)".into()
}

/// Both sides' differing part of a block both sides hold.
fn narrowed((os, o): (&str, &Node), (ts, t): (&str, &Node)) -> (String, String) {
    if let (true, Some(oa), Some(ta)) = (o.body() == t.body(), o.attrs(), t.attrs()) {
        let mut keys: Vec<&str> = Vec::new();
        for (k, _) in oa.iter().chain(ta.iter()) {
            if !keys.contains(&k) && oa.get(k) != ta.get(k) {
                keys.push(k);
            }
        }
        if !keys.is_empty() {
            let show = |a: &Attrs| {
                let kv: Vec<String> = keys
                    .iter()
                    .map(|k| match a.get(k) {
                        Some(v) => format!("{k}={}", v.to_display_string()),
                        None => format!("{k} unset"),
                    })
                    .collect();
                kv.join(" ")
            };
            return (show(oa), show(ta));
        }
    }
    match (o.body(), t.body()) {
        (Some(ob), Some(tb)) if ob != tb => (ob.to_string(), tb.to_string()),
        _ => (source(os, o), source(ts, t)),
    }
}

/// The block's lines in its document's source.
fn source(src: &str, n: &Node) -> String {
    slice_joined(&split(src), n.span.start, n.span.end)
}

/// One line, at most [`VALUE_CHARS`] characters.
fn short(s: &str) -> String {
    let one = s.split_whitespace().collect::<Vec<_>>().join(" ");
    match one.char_indices().nth(VALUE_CHARS) {
        Some((at, _)) => format!("{}…", &one[..at]),
        None => one,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "# D\n\n::claim{id=\"speed\" confidence=0.5}\nFast.\n::\n";

    #[test]
    fn an_attribute_conflict_shows_each_sides_attribute() {
        let ours = DOC.replace("0.5", "0.9");
        let theirs = DOC.replace("0.5", "0.7");
        assert_eq!(
            conflict_values(&ours, &theirs, "speed"),
            ("confidence=0.9".into(), "confidence=0.7".into())
        );
    }

    #[test]
    fn a_body_conflict_shows_the_bodies_and_a_missing_block_is_absent() {
        let ours = DOC.replace("Fast.", "Quick | now.");
        let theirs = DOC.replace("Fast.", &"slow ".repeat(40));
        let (o, t) = conflict_values(&ours, &theirs, "speed");
        assert_eq!(o, "Quick | now.");
        assert!(
            t.ends_with('…') && t.chars().count() == VALUE_CHARS + 1,
            "{t}"
        );
        let (o, t) = conflict_values("# D\n", DOC, "speed");
        assert_eq!(o, "(absent)");
        assert!(t.starts_with("::claim{id=\"speed\""), "{t}");
    }
}

//! AST → `.noma` source (the reference's `renderNoma`).
//!
//! The output is canonical rather than byte-preserving: blocks are separated
//! by exactly one blank line, pipe tables are re-padded to their column
//! widths, lists are re-marked (`-`, `1.`, `2.`, …) and attributes are
//! re-serialised. What it guarantees is the roundtrip property of Annex C:
//! `parse(render_noma(parse(x)))` is structurally equal to `parse(x)`
//! (see [`structurally_equal`]).
//!
//! Deviations from the reference that our parser requires:
//! - directives keep their own colon count (raised only when a child would
//!   otherwise not nest deeper than its parent), so authored fences survive;
//! - an explicit heading id is always written, even when it equals the slug
//!   (explicit ids do not take part in implicit `-2` suffixing, so dropping
//!   it could change later ids);
//! - frontmatter aliases are left off only the heading the parser attaches
//!   them to (the first top-level `#` section);
//! - heading attribute keys other than `id`/`aliases` are kept;
//! - a blank heading title is written as `#` and two spaces (`# ` alone
//!   would read back as a paragraph);
//! - a table cell that leaves a code span open (an unmatched backtick)
//!   ends its row: the row splitter reads the rest of the row into it, so
//!   the padding cells after it are not written (each render would
//!   otherwise add a `|` to that cell);
//! - a directive's fence is widened past any stray closing fence (`:::`
//!   alone, kept as text in an invalid document) inside it, which would
//!   otherwise close it when read back;
//! - a code fence whose info string starts with the fence character keeps
//!   a space before it, or the fence would lengthen when read back.
//!
//! With these, rendering is a fixed point for every input, valid or not:
//! `render(parse(render(parse(x)))) == render(parse(x))` (property tests
//! below).

use super::ast::{Align, AttrValue, Document, ListItem, Node, NodeKind, Text};
use super::attrs::{parse_heading_attrs, serialize_attr, serialize_attrs};
use super::slug::{heading_slug, is_js_space};

pub use super::json::structurally_equal;

/// Renders a document back to `.noma` source.
///
/// Empty documents render to the empty string; anything else ends with
/// exactly one `\n`.
pub fn render_noma(doc: &Document) -> String {
    let regen = frontmatter_aliases(doc);
    let mut out: Vec<String> = Vec::new();
    if let Some(fm) = &doc.frontmatter {
        // The raw YAML is re-emitted verbatim, as the reference does for its
        // frontmatter node: re-dumping would reorder keys and change quoting.
        out.push(format!("---\n{}\n---", fm.raw));
    }
    // The parser attaches frontmatter aliases to the first top-level `#`
    // section; only there are they left implicit.
    let fm_root = doc
        .children
        .iter()
        .position(|n| matches!(n.kind, NodeKind::Section { level: 1, .. }));
    for (i, child) in doc.children.iter().enumerate() {
        let regen: &[String] = if Some(i) == fm_root { &regen } else { &[] };
        // A `---` rule as the first line would be re-read as a frontmatter fence.
        let rendered = if out.is_empty() && matches!(child.kind, NodeKind::ThematicBreak) {
            "***".to_string()
        } else {
            render_node(child, 2, regen)
        };
        if !rendered.trim().is_empty() {
            out.push(rendered);
        }
    }
    if out.is_empty() {
        return String::new();
    }
    let mut s = out.join("\n\n");
    if s.starts_with('\u{feff}') {
        // The parser drops one leading U+FEFF as a byte-order mark: keep
        // the block's own by writing a BOM in front of it.
        s.insert(0, '\u{feff}');
    }
    s.truncate(s.trim_end_matches('\n').len());
    s.push('\n');
    s
}

/// The frontmatter `aliases:` list, trimmed, as the parser reads it.
fn frontmatter_aliases(doc: &Document) -> Vec<String> {
    let Some(serde_json::Value::Array(list)) = doc.meta.get("aliases") else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|a| a.as_str())
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Renders one block. `colons` is the minimum fence length a directive at
/// this depth needs (2 at the top, parent + 1 inside a directive); `regen`
/// lists aliases the parser will re-attach to this node by itself.
fn render_node(node: &Node, colons: u32, regen: &[String]) -> String {
    match &node.kind {
        NodeKind::Section {
            level,
            title,
            heading_attrs,
            explicit_id,
            children,
        } => {
            let attrs =
                heading_attr_text(node, title, *explicit_id, heading_attrs.as_deref(), regen);
            let head = heading_line(*level, title, &attrs);
            if children.is_empty() {
                return head;
            }
            let inner = join_children(children, colons);
            format!("{head}\n\n{inner}")
        }
        NodeKind::Paragraph { content } => content.to_string(),
        NodeKind::Code { lang, content, .. } => render_code(lang.as_deref(), content),
        NodeKind::List { ordered, items } => render_list(*ordered, items),
        NodeKind::Quote { content } => render_quote(content),
        NodeKind::ThematicBreak => "---".to_string(),
        NodeKind::Table {
            header,
            align,
            rows,
        } => render_table(header, align, rows),
        NodeKind::Directive {
            name,
            attrs,
            children,
            colons: own,
            ..
        } => {
            // A stray closing fence kept as text inside this directive would
            // close it when read back if the fence were as wide (only
            // invalid documents hold one), so the width steps past those.
            let strays = stray_closer_widths(children);
            let mut n = (*own).max(colons).max(2);
            while strays.contains(&n) {
                n += 1;
            }
            let fence = ":".repeat(n as usize);
            let open = format!("{fence}{name}{}", serialize_attrs(attrs));
            if children.is_empty() {
                return match node.body() {
                    Some(b) if !b.is_empty() => format!("{open}\n{b}\n{fence}"),
                    _ => format!("{open}\n{fence}"),
                };
            }
            let inner = join_children(children, n + 1);
            format!("{open}\n{inner}\n{fence}")
        }
    }
}

/// The widths of the closing-fence lines (`:::` alone) kept as paragraph
/// text anywhere under `children`: the parser reads such a line as text
/// only when no open directive has its width.
fn stray_closer_widths(children: &[Node]) -> Vec<u32> {
    let mut widths = Vec::new();
    let mut stack: Vec<&[Node]> = vec![children];
    while let Some(nodes) = stack.pop() {
        for node in nodes {
            match &node.kind {
                NodeKind::Paragraph { content } => widths.extend(
                    content
                        .lines()
                        .filter_map(super::line_match::match_directive_close),
                ),
                NodeKind::Section { children, .. } | NodeKind::Directive { children, .. } => {
                    stack.push(children);
                }
                _ => {}
            }
        }
    }
    widths
}

/// A section's heading line: the `#`s, the title and its `{...}` block
/// (`attrs`, empty when none is needed).
fn heading_line(level: u8, title: &str, attrs: &str) -> String {
    let hashes = "#".repeat(usize::from(level.clamp(1, 6)));
    // A blank title needs two spaces after the `#`s: one alone does
    // not make a heading (the parser's `\s+(.+?)` wants a character
    // after the first space), and the section would become a paragraph.
    let mut head = if title.trim_matches(is_js_space).is_empty() {
        format!("{hashes}  ")
    } else {
        format!("{hashes} {title}")
    };
    if !attrs.is_empty() {
        head.push(' ');
        head.push_str(attrs);
    }
    head
}

/// A list, one `- ` or `N. ` line per item.
fn render_list(ordered: bool, items: &[ListItem]) -> String {
    let mut lines = Vec::with_capacity(items.len());
    for (i, it) in items.iter().enumerate() {
        if ordered {
            lines.push(format!("{}. {}", i + 1, it.content));
        } else {
            lines.push(format!("- {}", it.content));
        }
    }
    lines.join("\n")
}

/// A block quote: every line behind `> ` (a bare `>` for an empty one).
fn render_quote(content: &str) -> String {
    content
        .split('\n')
        .map(|l| {
            if l.is_empty() {
                ">".to_string()
            } else {
                format!("> {l}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn join_children(children: &[Node], colons: u32) -> String {
    children
        .iter()
        .map(|c| render_node(c, colons, &[]))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// A fenced code block. The fence is one longer than any run of the fence
/// character that starts a content line (at least three), so no content
/// line can close it; tildes are used when the language holds a backtick,
/// which a backtick fence's info string may not.
fn render_code(lang: Option<&str>, content: &str) -> String {
    let lang = lang.unwrap_or("");
    let ch = if lang.contains('`') { '~' } else { '`' };
    let longest = content
        .split('\n')
        .map(|l| l.chars().take_while(|&c| c == ch).count())
        .max()
        .unwrap_or(0);
    let fence: String = std::iter::repeat_n(ch, (longest + 1).max(3)).collect();
    // An info string that starts with the fence character would lengthen
    // the fence when read back; the parser trims the space kept between.
    let gap = if lang.starts_with(ch) { " " } else { "" };
    format!("{fence}{gap}{lang}\n{content}\n{fence}")
}

/// The `{...}` block of a heading, or `""` when none is needed.
fn heading_attr_text(
    node: &Node,
    title: &str,
    explicit_id: bool,
    raw: Option<&str>,
    regen: &[String],
) -> String {
    let slug = heading_slug(title);
    let id = node.id.as_deref().filter(|id| {
        // Pin the id when it was written, when the title would otherwise lose
        // a trailing `{...}` to the attribute matcher, or when the parser
        // would not derive it again (a hand-made AST). Collision suffixes
        // (`slug-2`) are re-derived in document order, so they stay implicit.
        explicit_id
            || title_looks_like_attrs(title)
            || (*id != slug && !is_collision_suffix(id, &slug))
    });
    let aliases: Vec<&str> = node
        .aliases
        .iter()
        .map(Text::as_str)
        .filter(|a| !regen.iter().any(|r| r == a))
        .collect();
    let mut parts = Vec::new();
    if let Some(id) = id {
        parts.push(serialize_attr("id", &AttrValue::Str(id.into())));
    }
    if !aliases.is_empty() {
        parts.push(serialize_attr(
            "aliases",
            &AttrValue::Str(aliases.join(",").into()),
        ));
    }
    // Other keys written on the heading are kept so nothing is lost.
    if let Some(attrs) = raw.and_then(parse_heading_attrs) {
        for (k, v) in attrs.iter() {
            if k != "id" && k != "aliases" {
                parts.push(serialize_attr(k, v));
            }
        }
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!("{{{}}}", parts.join(" "))
    }
}

/// Whether `id` is `slug-N` with `N >= 2`, the §6.5 collision form.
fn is_collision_suffix(id: &str, slug: &str) -> bool {
    !slug.is_empty()
        && id
            .strip_prefix(slug)
            .and_then(|r| r.strip_prefix('-'))
            .is_some_and(|n| {
                !n.is_empty() && !n.starts_with('0') && n.bytes().all(|b| b.is_ascii_digit())
            })
}

/// Whether a title ends in whitespace + a `{...}` block that the heading
/// matcher would split off as attributes on re-parse (mirrors its rule: the
/// first `{` after the last inner `}` with whitespace and text before it,
/// and content that tokenises strictly).
fn title_looks_like_attrs(title: &str) -> bool {
    let Some(without_close) = title.strip_suffix('}') else {
        return false;
    };
    let from = without_close.rfind('}').map_or(0, |p| p + 1);
    for (off, _) in without_close[from..].match_indices('{') {
        let brace = from + off;
        let before = &without_close[..brace];
        let kept = before.trim_end_matches(is_js_space);
        if before.len() > kept.len() && !kept.is_empty() {
            return parse_heading_attrs(&without_close[brace + 1..]).is_some();
        }
    }
    false
}

/// Width as JavaScript's `String.length` counts it (UTF-16 code units), so
/// padding matches the reference byte for byte.
fn js_len(s: &str) -> usize {
    s.encode_utf16().count()
}

fn pad_end(s: &str, width: usize) -> String {
    let mut out = s.to_string();
    for _ in js_len(s)..width {
        out.push(' ');
    }
    out
}

/// Whether the row splitter ([`split_pipe_row`](super::inline::split_pipe_row))
/// is still inside a code span at the end of `cell`: backticks toggle it,
/// `\|` is skipped.
fn leaves_code_open(cell: &str) -> bool {
    let b = cell.as_bytes();
    let (mut i, mut open) = (0, false);
    while i < b.len() {
        match b[i] {
            b'\\' if b.get(i + 1) == Some(&b'|') => i += 1,
            b'`' => open = !open,
            _ => {}
        }
        i += 1;
    }
    open
}

fn render_table(header: &[Text], align: &[Option<Align>], rows: &[Vec<Text>]) -> String {
    let widths: Vec<usize> = header
        .iter()
        .enumerate()
        .map(|(i, h)| {
            rows.iter()
                .map(|r| r.get(i).map_or(0, |c| js_len(c)))
                .fold(js_len(h).max(3), usize::max)
        })
        .collect();
    let fmt_row = |cells: &[Text]| {
        // Cells after one that leaves a code span open were read into it.
        let upto = cells
            .iter()
            .position(|c| leaves_code_open(c))
            .map_or(cells.len(), |i| i + 1);
        let padded: Vec<String> = cells[..upto]
            .iter()
            .enumerate()
            .map(|(i, c)| pad_end(c, widths.get(i).copied().unwrap_or(0)))
            .collect();
        format!("| {} |", padded.join(" | "))
    };
    let sep: Vec<String> = widths
        .iter()
        .enumerate()
        .map(|(i, &w)| match align.get(i).copied().flatten() {
            Some(Align::Center) => format!(":{}:", "-".repeat(w.saturating_sub(2).max(3))),
            Some(Align::Right) => format!("{}:", "-".repeat(w.saturating_sub(1).max(3))),
            Some(Align::Left) => format!(":{}", "-".repeat(w.saturating_sub(1).max(3))),
            None => "-".repeat(w.max(3)),
        })
        .collect();
    let mut lines = Vec::with_capacity(rows.len() + 2);
    lines.push(fmt_row(header));
    lines.push(format!("| {} |", sep.join(" | ")));
    for r in rows {
        lines.push(fmt_row(r));
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::parse;

    fn rt(src: &str) -> String {
        let doc = parse(src);
        let out = render_noma(&doc);
        let again = parse(&out);
        assert!(
            structurally_equal(&doc, &again),
            "roundtrip broke for {src:?}:\n{out}"
        );
        out
    }

    #[test]
    fn pads_tables_and_keeps_alignment() {
        let out = rt("# T\n\n| Name | Score |\n|:-----|------:|\n| Alice | 92 |\n| Bob   | 88 |\n");
        assert_eq!(
            out,
            "# T\n\n| Name  | Score |\n| :---- | ----: |\n| Alice | 92    |\n| Bob   | 88    |\n"
        );
    }

    #[test]
    fn centre_alignment_and_short_columns() {
        let out = rt("| a | b |\n|:---:|---|\n| x | y |\n");
        assert_eq!(out, "| a   | b   |\n| :---: | --- |\n| x   | y   |\n");
    }

    #[test]
    fn normalises_blank_lines_and_list_markers() {
        let out = rt("Para one\nline two\n\n\n\n* a\n* b\n  cont\n\n3. x\n9. y\n");
        assert_eq!(
            out,
            "Para one\nline two\n\n- a\n- b\n  cont\n\n1. x\n2. y\n"
        );
    }

    #[test]
    fn frontmatter_raw_is_verbatim_and_aliases_are_not_duplicated() {
        let src = "---\ntitle: X\naliases: [demo, intro]\n---\n\n# Aliases\n\nParagraph.\n";
        assert_eq!(rt(src), src);
    }

    #[test]
    fn frontmatter_only() {
        assert_eq!(rt("---\ntitle: Only\n---\n"), "---\ntitle: Only\n---\n");
        assert_eq!(rt(""), "");
    }

    #[test]
    fn nested_directives_keep_or_raise_colons() {
        let src = "::outer{id=\"o\" n=3 f ok=false}\n:::inner{id=\"i\"}\nbody\n:::\n::\n";
        assert_eq!(rt(src), src);
        let src = "::::wide{id=\"w\"}\ntext\n::::\n";
        assert_eq!(rt(src), src);
        let src = "::finance::position{id=\"p\" weight=0.25}\nx\n::\n";
        assert_eq!(rt(src), src);
    }

    #[test]
    fn code_fence_with_colons_in_directive() {
        let src = "::note{id=\"n\"}\n```noma\n::claim{id=\"x\"}\n::\n```\n::\n";
        assert_eq!(rt(src), src);
    }

    #[test]
    fn headings_keep_explicit_ids_and_aliases_only() {
        let src = "# Intro {id=\"start\" aliases=\"a, b\"}\n\n## Overview\n\n## Overview\n";
        assert_eq!(
            rt(src),
            "# Intro {id=\"start\" aliases=\"a,b\"}\n\n## Overview\n\n## Overview\n"
        );
        // An explicit id equal to the slug is still written.
        assert_eq!(rt("# Risks {id=\"risks\"}\n"), "# Risks {id=\"risks\"}\n");
    }

    #[test]
    fn title_ending_in_braces_is_pinned() {
        let src = "# Set {x} {id=\"set\"}\n";
        let doc = parse(src);
        if let NodeKind::Section { title, .. } = &doc.children[0].kind {
            assert_eq!(title, "Set {x}");
        }
        assert_eq!(rt(src), src);
    }

    #[test]
    fn quotes_and_breaks() {
        let out = rt("> a\n>\n>  b\n\n---\n\ntext\n");
        assert_eq!(out, "> a\n>\n>  b\n\n---\n\ntext\n");
        assert_eq!(rt("---x\n\n***\n"), "---x\n\n---\n");
        assert_eq!(rt("***\n\ntext\n"), "***\n\ntext\n");
    }

    #[test]
    fn attribute_values_keep_their_types() {
        let src = "::d{id=\"7\" n=\"42\" m=42 q='say \"hi\"' both=\"a \\\" b '\" flag}\n::\n";
        assert_eq!(rt(src), src);
    }

    #[test]
    fn long_and_tilde_fences() {
        let out = rt("````md\n```\ninner\n```\n````\n");
        assert_eq!(out, "````md\n```\ninner\n```\n````\n");
        // Tilde fences become backtick fences; the info string keeps its first word.
        assert_eq!(
            rt("~~~ python extra\nx = 1\n~~~\n"),
            "```python\nx = 1\n```\n"
        );
        assert_eq!(rt("```\n```\n"), "```\n\n```\n");
    }

    #[test]
    fn frontmatter_aliases_stay_implicit_only_on_their_heading() {
        let src = "---\naliases: [demo]\n---\n\n# Root\n\n## Sub {aliases=\"demo\"}\n";
        assert_eq!(rt(src), src);
    }

    #[test]
    fn extra_heading_attributes_are_kept() {
        let src = "# Intro {id=\"i\" tone=\"warm\" n=3}\n";
        assert_eq!(rt(src), src);
    }

    #[test]
    fn empty_slug_headings_use_the_section_id() {
        assert_eq!(rt("# !!!\n\n# ???\n"), "# !!!\n\n# ???\n");
    }

    #[test]
    fn crlf_input_renders_lf() {
        assert_eq!(rt("# A\r\n\r\ntext\r\n"), "# A\n\ntext\n");
    }

    #[test]
    fn deep_nesting_does_not_overflow() {
        let mut src = String::new();
        for d in 0..300 {
            src.push_str(&":".repeat(d + 2));
            src.push_str("d\n");
        }
        for d in (0..300).rev() {
            src.push_str(&":".repeat(d + 2));
            src.push('\n');
        }
        let doc = parse(&src);
        let _ = render_noma(&doc);
    }

    /// Lines that mix block syntax with the edge cases where the reference
    /// writes otherwise (`.noma/reference-differences.noma`): blank titles
    /// in every kind of whitespace, unmatched backticks in table cells, and
    /// U+FEFF at the start of a line.
    const LINES: &[&str] = &[
        "",
        "para text",
        "# Title",
        "## Sub",
        "#   ",
        "#\u{a0}\u{a0}",
        "# \u{3000}",
        "##\t\t",
        "::note{id=\"n1\"}",
        "::",
        ":::card",
        ":::",
        "- item",
        "1. one",
        "> quote",
        "---",
        "| a | b |",
        "|---|---|",
        "| `x | y |",
        "| p | `q |",
        "```",
        "code",
        "\u{feff}text",
        "\u{feff}::note{id=\"n2\"}",
        "\u{feff}",
        "\u{feff}# h",
        "\u{feff}- item",
        "\u{feff}| a |",
        " \u{feff}x",
        "\u{feff} ",
        "\u{feff}\u{feff}",
        "\u{feff}:::card",
        "\u{feff}```",
        "\u{feff}> q",
        "text {x}",
    ];

    fn line_doc() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        proptest::collection::vec(0..LINES.len(), 0..14)
            .prop_map(|ix| ix.iter().map(|&i| LINES[i]).collect::<Vec<_>>().join("\n"))
    }

    fn check_errors(doc: &Document) -> usize {
        crate::validate::validate(doc, &crate::validate::Options::default())
            .iter()
            .filter(|d| d.severity == crate::diag::Severity::Error)
            .count()
    }

    /// For documents `check` accepts, `parse(render(d))` equals `parse(d)`
    /// (spans aside) and rendering twice changes nothing. Deterministic
    /// seed; a failure prints the document.
    #[test]
    fn render_is_a_stable_roundtrip_for_accepted_documents() {
        use proptest::strategy::{Strategy, ValueTree};
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let strategy = line_doc();
        let mut accepted = 0;
        for _ in 0..20000 {
            let src = strategy.new_tree(&mut runner).expect("a case").current();
            let doc = parse(&src);
            if check_errors(&doc) > 0 {
                continue;
            }
            accepted += 1;
            let once = render_noma(&doc);
            let again = parse(&once);
            assert!(
                structurally_equal(&doc, &again),
                "roundtrip broke for {src:?}:\n{once:?}"
            );
            assert_eq!(
                render_noma(&again),
                once,
                "render not idempotent for {src:?}"
            );
        }
        assert!(accepted > 3000, "only {accepted} accepted documents");
    }

    #[test]
    fn issue_19_roundtrip_cases() {
        for src in [
            "#   \n\ntext\n",
            "# \u{3000}\n\ntext\n",
            "#\u{a0}\u{a0}\ntext\n",
            "## \t\n",
            "| a | b |\n|---|---|\n| `x | y |\n",
            "| a | b |\n|---|---|\n| p | `q |\n",
            "\n\u{feff}::note{id=\"x\"}\nbody\n",
        ] {
            assert_eq!(check_errors(&parse(src)), 0, "{src:?}");
            let out = rt(src);
            assert_eq!(rt(&out), out, "{src:?}");
        }
    }

    /// Lines that make documents invalid in many ways: fences of every
    /// width (stray, unclosed, equal to the parent's), broken attributes,
    /// duplicate ids, unclosed code fences, headings at every level.
    const BROKEN: &[&str] = &[
        "::::",
        "::::card",
        ":::note{id=\"n3\"}",
        "::note{id=\"n1\"} tail",
        "::note{id=bad",
        "::::::",
        ":: ",
        "  :::",
        "\t::note{id=\"n4\"}",
        "~~~",
        "```js",
        "````",
        "[[missing]]",
        "[[n1|label]]",
        "  - nested",
        "#",
        "###### six",
        "# T {id=\"dup\"}",
        "## T {id=\"dup\"}",
        "::note{id=\"dup\"}",
        "\r",
        "> ::note{id=\"q\"}",
        "- ::",
    ];

    /// Rendering an invalid document, reading it back and rendering again
    /// gives the same text: what `noma render` writes is a fixed
    /// point even when `check` reports errors. Deterministic seeds; a
    /// failure prints the document.
    #[test]
    fn render_is_stable_for_invalid_documents() {
        use proptest::strategy::{Strategy, ValueTree};
        let lines: Vec<&str> = LINES.iter().chain(BROKEN).copied().collect();
        let strategy = proptest::collection::vec(0..lines.len(), 0..18)
            .prop_map(move |ix| ix.iter().map(|&i| lines[i]).collect::<Vec<_>>().join("\n"));
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let mut invalid = 0;
        for _ in 0..30000 {
            let src = strategy.new_tree(&mut runner).expect("a case").current();
            let doc = parse(&src);
            if check_errors(&doc) == 0 {
                continue;
            }
            invalid += 1;
            let once = render_noma(&doc);
            assert_eq!(
                render_noma(&parse(&once)),
                once,
                "render of an invalid document not stable for {src:?}"
            );
        }
        assert!(invalid > 15000, "only {invalid} invalid documents");
    }

    /// The same fixed-point property over text made of the syntax's
    /// characters in any order (fences glued to info strings, stray CRs,
    /// unbalanced braces), where the line generator above cannot reach.
    #[test]
    fn render_is_stable_for_fuzzed_text() {
        use proptest::strategy::{Strategy, ValueTree};
        const ALPHA: &[&str] = &[
            ":", ":", "::", "{", "}", "\"", "=", "#", "# ", "\n", "\n", "\n", "`", "```", "|", " ",
            "-", ">", "\r", "a", "id", "note", "[[", "]]", "~~~", "\t", "1.", "---", "é",
        ];
        let strategy = proptest::collection::vec(0..ALPHA.len(), 0..60)
            .prop_map(|ix| ix.iter().map(|&i| ALPHA[i]).collect::<String>());
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let mut invalid = 0;
        for _ in 0..60000 {
            let src = strategy.new_tree(&mut runner).expect("a case").current();
            let doc = parse(&src);
            invalid += usize::from(check_errors(&doc) > 0);
            let once = render_noma(&doc);
            assert_eq!(
                render_noma(&parse(&once)),
                once,
                "render not stable for {src:?}"
            );
        }
        assert!(invalid > 10000, "only {invalid} invalid documents");
    }
}

//! Issue 33, on the documents the reference's tools wrote: the most common
//! agent edit, a note added under an existing directive, and a nested
//! block replaced, both with content fenced `::` (an agent cannot know its
//! destination's depth), applied to every directive of every example
//! (`../shared/reference/noma/examples/**/*.noma`).

use std::path::{Path, PathBuf};

use noma::diag::Severity;
use noma::doc::{Document, Node, NodeKind};
use serde_json::json;

use crate::common;

fn examples(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            examples(&p, out);
        } else if p.extension().is_some_and(|e| e == "noma") {
            out.push(p);
        }
    }
}

/// Error-severity codes of `src`, sorted.
fn errors(src: &str) -> Vec<String> {
    let opts = noma::validate::Options::default();
    let mut v: Vec<String> = noma::validate::validate(&noma::doc::parse(src), &opts)
        .into_iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| d.code)
        .collect();
    v.sort();
    v
}

/// `(parent id, node)` of every block, in document order.
fn with_parents(doc: &Document) -> Vec<(Option<&str>, &Node)> {
    fn go<'d>(
        list: &'d [Node],
        parent: Option<&'d str>,
        out: &mut Vec<(Option<&'d str>, &'d Node)>,
    ) {
        for n in list {
            out.push((parent, n));
            let me = n.id.as_deref().or(parent);
            go(n.children(), if n.id.is_some() { me } else { parent }, out);
        }
    }
    let mut out = Vec::new();
    go(&doc.children, None, &mut out);
    out
}

fn is_directive(n: &Node) -> bool {
    matches!(n.kind, NodeKind::Directive { .. })
}

/// A directive's children written as data or code, where a block inside
/// would be read as data (a dataset's rows, a table's cells, ...).
fn holds_data(n: &Node) -> bool {
    n.directive_name().is_some_and(|name| {
        matches!(
            name,
            "dataset"
                | "table"
                | "code"
                | "code_cell"
                | "math"
                | "plotly"
                | "diagram"
                | "query"
                | "output"
        )
    })
}

#[test]
fn a_note_lands_under_every_directive_of_every_example() {
    let Some(shared) = common::shared_reference("a_note_lands_under_every_directive") else {
        return;
    };
    let mut files = Vec::new();
    examples(&shared.join("noma/examples"), &mut files);
    assert!(files.len() >= 15, "{} examples", files.len());
    let (mut docs, mut added, mut replaced) = (0, 0, 0);
    for file in &files {
        let src = std::fs::read_to_string(file).unwrap();
        let doc = noma::doc::parse(&src);
        let standing = errors(&src);
        let directives: Vec<(Option<&str>, &Node)> = with_parents(&doc)
            .into_iter()
            .filter(|(_, n)| is_directive(n) && n.id.is_some())
            .collect();
        if directives.is_empty() {
            continue;
        }
        docs += 1;
        for (parent, node) in directives {
            let id = node.id.as_deref().unwrap();
            let name = file.display();
            // add_block of a `::note` under the directive.
            if !holds_data(node) {
                let op = json!({"op": "add_block", "parent": id,
                                "content": "::note{id=\"n1\"}\nNew note.\n::"});
                let out = noma::patch::apply_one(&src, &op)
                    .unwrap_or_else(|e| panic!("{name}: {op}: {e}"));
                assert_eq!(errors(&out), standing, "{name}: {op}\n{out}");
                let after = noma::doc::parse(&out);
                let (p, note) = with_parents(&after)
                    .into_iter()
                    .find(|(_, n)| n.id.as_deref() == Some("n1"))
                    .unwrap_or_else(|| panic!("{name}: {op}: no n1\n{out}"));
                assert_eq!(p, Some(id), "{name}: {op}\n{out}");
                let host = after.find(id).unwrap();
                assert!(
                    host.span.start < note.span.start && note.span.end < host.span.end,
                    "{name}: {op}: n1 {:?} outside {id} {:?}",
                    note.span,
                    host.span
                );
                added += 1;
            }
            // replace_block of a nested block with itself as an agent
            // writes it: fenced `::`, a line added to its text.
            if parent.is_some() {
                let lines: Vec<&str> = src.lines().collect();
                let (a, b) = (node.span.start as usize - 1, node.span.end as usize - 1);
                let mut content = vec![format!("::{}", lines[a].trim_start_matches(':'))];
                if !holds_data(node) {
                    content.push("Replaced.".into());
                    content.push(String::new());
                }
                content.extend(lines[a + 1..b].iter().map(|l| l.to_string()));
                content.push("::".into());
                let op = json!({"op": "replace_block", "id": id, "content": content.join("\n")});
                let out = noma::patch::apply_one(&src, &op)
                    .unwrap_or_else(|e| panic!("{name}: {op}: {e}"));
                assert_eq!(errors(&out), standing, "{name}: {op}\n{out}");
                let after = noma::doc::parse(&out);
                let (p, _) = with_parents(&after)
                    .into_iter()
                    .find(|(_, n)| n.id.as_deref() == Some(id))
                    .unwrap_or_else(|| panic!("{name}: {op}: {id} gone\n{out}"));
                assert_eq!(p, parent, "{name}: {op}\n{out}");
                replaced += 1;
            }
        }
    }
    eprintln!(
        "{docs} examples with directives: {added} notes added, {replaced} nested blocks replaced"
    );
    assert!(
        docs >= 10 && added >= 50 && replaced >= 10,
        "{docs} {added} {replaced}"
    );
}

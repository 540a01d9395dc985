//! Placement (decision `parsed-directive-is-inserted`), on the documents
//! the reference's tools wrote: the most common agent edit, a note added
//! under an existing directive, and a nested block replaced, both with
//! content fenced `::` (an agent cannot know its destination's depth),
//! applied to every directive of every example
//! (`../shared/reference/noma/examples/**/*.noma`).

use std::path::{Path, PathBuf};

use noma_core::diag::Severity;
use noma_core::doc::{Document, Node, NodeKind};
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
    let opts = noma_core::validate::Options::default();
    let mut v: Vec<String> = noma_core::validate::validate(&noma_core::doc::parse(src), &opts)
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
        let doc = noma_core::doc::parse(&src);
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
                let out = noma_core::patch::apply_one(&src, &op)
                    .unwrap_or_else(|e| panic!("{name}: {op}: {e}"));
                assert_eq!(errors(&out), standing, "{name}: {op}\n{out}");
                let after = noma_core::doc::parse(&out);
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
                let out = noma_core::patch::apply_one(&src, &op)
                    .unwrap_or_else(|e| panic!("{name}: {op}: {e}"));
                assert_eq!(errors(&out), standing, "{name}: {op}\n{out}");
                let after = noma_core::doc::parse(&out);
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

/// The normative Annex C `patch/add_block` input nests a `::risk` in a
/// `::section` with equal colons: `noma check` reads the risk as the
/// section's child and reports no error, only the depth warning (which
/// `--strict` turns into a failure); a dropped closer is still an error.
#[test]
fn the_annex_c_add_block_input_checks_without_errors() {
    let Some(shared) = common::shared_reference("the_annex_c_add_block_input_checks") else {
        return;
    };
    let input = shared.join("noma/conformance/patch/add_block/input.noma");
    let input = input.to_str().unwrap();
    let run = |args: &[&str]| {
        std::process::Command::new(common::NOMA)
            .args(args)
            .output()
            .unwrap()
    };
    let o = run(&["check", "--format", "json", input]);
    assert_eq!(o.status.code(), Some(0), "{}", common::text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let diags: Vec<(String, String)> = v[0]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["severity"].as_str().unwrap().to_string(),
                d["code"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(
        diags.contains(&("warning".into(), "directive-depth-mismatch".into())),
        "{diags:?}"
    );
    assert!(diags.iter().all(|(s, _)| s != "error"), "{diags:?}");
    let o = run(&["check", "--strict", input]);
    assert_eq!(o.status.code(), Some(1), "{}", common::text(&o));
    // The same document with the section's closer lost fails.
    let src = std::fs::read_to_string(input).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let lost = dir.path().join("lost.noma");
    std::fs::write(&lost, src.trim_end().strip_suffix("::").unwrap()).unwrap();
    let o = run(&["check", lost.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", common::text(&o));
    assert!(common::text(&o).contains("unclosed-directive"));
}

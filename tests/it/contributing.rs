//! CONTRIBUTING.md stays true to the tree it describes: every repository
//! path it writes in backticks exists, and every file that spells out all
//! of the catalogue's ops, or all of the MCP server's tools, is in the
//! guide's checklist for a new op or a new tool, so a place that must
//! change with them cannot be added without the guide saying so.

use std::path::{Path, PathBuf};

fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn guide() -> String {
    std::fs::read_to_string(manifest_dir().join("CONTRIBUTING.md"))
        .expect("CONTRIBUTING.md at the repository root")
}

/// The text outside fenced code blocks: the commands in a fence are
/// examples to run, not references to the tree.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        } else if !in_code {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The inline code spans of `text`'s prose, whitespace folded (a span may
/// wrap onto the next line); `None` when a backtick is left unpaired,
/// which would shift every span after it.
fn code_spans(text: &str) -> Option<Vec<String>> {
    let prose = prose(text);
    let parts: Vec<&str> = prose.split('`').collect();
    if parts.len().is_multiple_of(2) {
        return None;
    }
    Some(
        parts
            .iter()
            .skip(1)
            .step_by(2)
            .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect(),
    )
}

/// Characters of a span that stands for more than one path: a placeholder
/// (`<module>`), a glob, alternatives, a variable, an elision.
const NOT_ONE_PATH: [char; 8] = ['<', '>', '*', '{', '}', '$', '|', '…'];

/// Endings that make a span without a `/` a path.
const PATH_ENDINGS: [&str; 5] = [".rs", ".md", ".noma", ".yml", ".toml"];

/// Whether a code span names one repository path: a single word with a `/`
/// or a path ending, and no placeholder. Extension-op names
/// (`x-noma/replace_lines`), URLs and build outputs under `target/` (made
/// by the build and the tests, so absent from a fresh clone) are not
/// repository paths.
fn is_path(span: &str) -> bool {
    let looks = span.contains('/') || PATH_ENDINGS.iter().any(|e| span.ends_with(e));
    let one_word = !span.is_empty() && !span.contains(char::is_whitespace);
    let excluded = span.chars().any(|c| NOT_ONE_PATH.contains(&c))
        || span.starts_with("x-noma/")
        || span.starts_with("target/")
        || span.contains("://");
    looks && one_word && !excluded
}

/// The paths `text` writes in backticks, in order.
fn paths(text: &str) -> Vec<String> {
    let spans = code_spans(text).expect("an unpaired backtick in CONTRIBUTING.md");
    spans.into_iter().filter(|s| is_path(s)).collect()
}

/// The lines under the heading `heading` (exact line) up to the next
/// heading of level 2 or 3.
fn section(text: &str, heading: &str) -> String {
    let body: Vec<&str> = text
        .lines()
        .skip_while(|l| l.trim() != heading)
        .skip(1)
        .take_while(|l| !l.starts_with("## ") && !l.starts_with("### "))
        .collect();
    assert!(!body.is_empty(), "CONTRIBUTING.md has no \"{heading}\"");
    body.join("\n")
}

#[test]
fn every_path_the_guide_names_exists() {
    let named = paths(&guide());
    // The guide is mostly paths: a reader that found few has stopped
    // seeing them.
    assert!(named.len() >= 100, "only {} paths: {named:?}", named.len());
    let missing: Vec<&String> = named
        .iter()
        .filter(|p| !manifest_dir().join(p.as_str()).exists())
        .collect();
    assert!(
        missing.is_empty(),
        "CONTRIBUTING.md names paths that do not exist: {missing:?}"
    );
}

/// The reader itself sees what it is for.
#[test]
fn the_path_reader_sees_paths_and_only_paths() {
    let sample = "See `src/cli/mod.rs`, `README.md` and `docs/`, not `noma check`,\n\
                  `x-noma/replace_lines`, `tests/it/*.rs`, `src/cli/<command>/`,\n\
                  `https://example.org/a.md` or `docs/\nperformance.md`.\n\n\
                  ```sh\ncat `src/nothing.rs`\n```\n";
    assert_eq!(paths(sample), ["src/cli/mod.rs", "README.md", "docs/"]);
    assert!(code_spans("one `unpaired backtick").is_none());
    let text = "## A\n\n### B\n`x.rs`\n### C\n`y.rs`\n";
    assert_eq!(section(text, "### B"), "`x.rs`");
    assert!(names_word("(\"move_block\", 1)", "move_block"));
    assert!(!names_word("move_blocks and a_move_block", "move_block"));
}

/// Whether `text` holds `word` with no identifier character on either side.
fn names_word(text: &str, word: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}

/// Every UTF-8 file of the repository (build output, git's files and the
/// guide itself left out), as a `/`-separated relative path and its text.
fn repository_texts() -> Vec<(String, String)> {
    let root = manifest_dir();
    let mut out = Vec::new();
    let mut stack: Vec<PathBuf> = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            if matches!(&*name.to_string_lossy(), "target" | ".git" | "node_modules") {
                continue;
            }
            // Symbolic links are not followed: no loops, no files outside.
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_file() {
                let Ok(text) = std::fs::read_to_string(&path) else {
                    continue;
                };
                let rel: Vec<String> = path
                    .strip_prefix(root)
                    .unwrap()
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                let rel = rel.join("/");
                if rel != "CONTRIBUTING.md" {
                    out.push((rel, text));
                }
            }
        }
    }
    out.sort();
    out
}

/// The files that name every one of `words`, and those of them the
/// guide's `heading` section does not name in backticks.
fn listing_files(words: &[String], heading: &str) -> (Vec<String>, Vec<String>) {
    let listed = paths(&section(&guide(), heading));
    let listing: Vec<String> = repository_texts()
        .into_iter()
        .filter(|(_, text)| words.iter().all(|w| names_word(text, w)))
        .map(|(rel, _)| rel)
        .collect();
    let unlisted = listing
        .iter()
        .filter(|rel| !listed.contains(*rel))
        .cloned()
        .collect();
    (listing, unlisted)
}

#[test]
fn every_file_that_lists_every_op_is_in_the_new_op_checklist() {
    let ops: Vec<String> = noma_core::patch::OP_NAMES
        .iter()
        .map(|s| s.to_string())
        .collect();
    let (listing, unlisted) = listing_files(&ops, "### A new patch op");
    // At least the op table, the schema, the grants, the MCP op schema and
    // the help's examples: fewer means the search has stopped working.
    assert!(listing.len() >= 5, "{listing:?}");
    assert!(
        unlisted.is_empty(),
        "these files list every op, so a new op changes them; add them to \
         CONTRIBUTING.md's \"A new patch op\": {unlisted:?}"
    );
}

#[test]
fn every_file_that_lists_every_mcp_tool_is_in_the_new_tool_checklist() {
    let tools = noma_mcp::tool_names();
    assert!(tools.len() >= 10, "{tools:?}");
    let (listing, unlisted) = listing_files(&tools, "### A new MCP tool");
    // At least the registry, the MCP documentation and the SDK check.
    assert!(listing.len() >= 3, "{listing:?}");
    assert!(
        unlisted.is_empty(),
        "these files list every MCP tool, so a new tool changes them; add \
         them to CONTRIBUTING.md's \"A new MCP tool\": {unlisted:?}"
    );
}

//! Every check a decision record names exists. A decision in `.noma/`
//! that cites a test, a source file or a constant as what holds it to its
//! word is only as good as that citation; code moves and tests are
//! renamed, and a record naming what is gone reads as a guarantee nobody
//! keeps. What a decision names in backticks is checked:
//!
//! - a path under one of the project's directories (`crates/…`, `tests/…`,
//!   `benches/…`, …) exists; up to a `*` or `<placeholder>`, its directory
//!   does;
//! - a Rust path of this workspace (`module::test_name`,
//!   `noma_git::patch::context`) ends in an item that some Rust file
//!   declares (`fn`, `mod`, `struct`, `enum`, `trait`, `type`, `const`,
//!   `static`) or in a module file's name;
//! - a constant-like name (`PURE_CRATES`) occurs in some tracked file
//!   outside `.noma/`, unless it is a name from outside the project
//!   ([`OUTSIDE_NAMES`]).
//!
//! Old names a record tells the history of are written without backticks.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The project's top-level directories a path in a decision may start with.
const PROJECT_DIRS: &[&str] = &[
    "crates/",
    "tests/",
    "benches/",
    "src/",
    ".ci/",
    "docs/",
    "hooks/",
    "conformance/",
    "packaging/",
    "editors/",
    "examples/",
    ".github/",
];

/// Crates outside the workspace whose paths decisions quote.
const OUTSIDE_CRATES: &[&str] = &[
    "std",
    "core",
    "alloc",
    "rmcp",
    "serde",
    "serde_json",
    "git2",
    "tokio",
    "rusqlite",
    "clap",
    "notify",
    "lsp_types",
    "gix",
    "clippy",
    "url",
    "ssh_key",
    "globset",
    "proptest",
];

/// Constant-like names that belong to git, POSIX or other tools, not to
/// this project's code.
const OUTSIDE_NAMES: &[&str] = &["GIT_REFLOG_ACTION", "O_EXCL"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Each decision's id and body, from the text of one `.noma` file.
fn decisions(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut current: Option<(String, String)> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("::decision{") {
            let id = rest
                .split("id=\"")
                .nth(1)
                .and_then(|s| s.split('"').next())
                .unwrap_or("")
                .to_string();
            current = Some((id, String::new()));
        } else if line == "::" {
            out.extend(current.take());
        } else if let Some((_, body)) = current.as_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    out
}

/// The backticked spans of one body.
fn quoted(body: &str) -> Vec<&str> {
    body.split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| !s.contains('\n'))
        .collect()
}

/// What the workspace's Rust files declare, and their module names.
struct Code {
    items: BTreeSet<String>,
    /// Every tracked file's text outside `.noma/`, for constant-like names.
    text: String,
}

fn tracked_files(root: &Path) -> Vec<PathBuf> {
    let o = std::process::Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root)
        .output()
        .expect("git ls-files");
    assert!(o.status.success(), "git ls-files failed in {root:?}");
    o.stdout
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| root.join(String::from_utf8_lossy(p).as_ref()))
        .collect()
}

fn code(root: &Path) -> Code {
    let mut items = BTreeSet::new();
    let mut text = String::new();
    for p in tracked_files(root) {
        // This file's own examples of what is missing must not count.
        if p.starts_with(root.join(".noma")) || p.ends_with("tests/it/decision_checks.rs") {
            continue;
        }
        let Ok(t) = std::fs::read_to_string(&p) else {
            continue;
        };
        if p.extension().is_some_and(|e| e == "rs") {
            if let Some(stem) = p.file_stem().and_then(|s| s.to_str()) {
                items.insert(stem.to_string());
            }
            if let Some(dir) = p.parent().and_then(Path::file_name) {
                items.insert(dir.to_string_lossy().into_owned());
            }
            items.extend(declared(&t));
        }
        text.push_str(&t);
    }
    Code { items, text }
}

/// The names `fn`, `mod`, `struct`, … declare in `source`.
fn declared(source: &str) -> Vec<String> {
    const KEYWORDS: &[&str] = &[
        "fn", "mod", "struct", "enum", "trait", "type", "const", "static",
    ];
    let mut out = Vec::new();
    let words: Vec<&str> = source
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    for pair in words.windows(2) {
        if KEYWORDS.contains(&pair[0]) {
            out.push(pair[1].to_string());
        }
    }
    out
}

fn is_rust_path(s: &str) -> bool {
    let segs: Vec<&str> = s.split("::").collect();
    segs.len() >= 2
        && segs
            .iter()
            .all(|g| !g.is_empty() && g.chars().all(|c| c.is_alphanumeric() || c == '_'))
        && segs[0].chars().all(|c| c.is_ascii_lowercase() || c == '_')
}

fn is_constant_like(s: &str) -> bool {
    s.len() >= 4
        && s.contains('_')
        && s.starts_with(|c: char| c.is_ascii_uppercase())
        && s.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// What a decision names that does not exist, each with the decision's id.
fn missing(decisions: &[(String, String)], root: &Path, code: &Code) -> Vec<String> {
    let mut bad = Vec::new();
    for (id, body) in decisions {
        for q in quoted(body) {
            let q = q.trim();
            if PROJECT_DIRS.iter().any(|d| q.starts_with(d)) {
                // `path:line`, `path (what)`, a glob or a placeholder.
                let path = q.split([' ', ':']).next().unwrap_or(q);
                let cut = path.find(['*', '<']).map_or(path, |i| &path[..i]);
                let cut = cut.trim_end_matches([',', '.']);
                if !root.join(cut).exists() {
                    bad.push(format!("{id}: `{q}` does not exist"));
                }
            } else if is_rust_path(q) {
                let first = q.split("::").next().unwrap_or("");
                let last = q.rsplit("::").next().unwrap_or("");
                if !OUTSIDE_CRATES.contains(&first) && !code.items.contains(last) {
                    bad.push(format!("{id}: `{q}`: nothing declares `{last}`"));
                }
            } else if is_constant_like(q) && !OUTSIDE_NAMES.contains(&q) && !code.text.contains(q) {
                bad.push(format!("{id}: `{q}` occurs nowhere in the code"));
            }
        }
    }
    bad
}

fn project_decisions(root: &Path) -> Vec<(String, String)> {
    let mut all = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join(".noma"))
        .expect(".noma/")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "noma"))
        .collect();
    files.sort();
    for f in files {
        all.extend(decisions(&std::fs::read_to_string(&f).expect("read")));
    }
    all
}

#[test]
fn every_check_a_decision_names_exists() {
    let root = root();
    let all = project_decisions(&root);
    assert!(all.len() >= 50, "only {} decisions found", all.len());
    let bad = missing(&all, &root, &code(&root));
    assert!(
        bad.is_empty(),
        "decisions name what does not exist:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_decision_check_sees_a_violation() {
    let root = root();
    let text = "::decision{id=\"d\" status=\"accepted\"}\nHeld by `PURE_CRATES_GONE`, \
        `tests/it/no_such_file.rs`, `src/cli/*.rs`, `architecture::no_such_test`, \
        `architecture::the_checks_see_a_violation`, `std::fs::nothing` and `O_EXCL`.\n::\n";
    let ds = decisions(text);
    assert_eq!(ds.len(), 1);
    let bad = missing(&ds, &root, &code(&root));
    assert_eq!(
        bad,
        [
            "d: `PURE_CRATES_GONE` occurs nowhere in the code",
            "d: `tests/it/no_such_file.rs` does not exist",
            "d: `architecture::no_such_test`: nothing declares `no_such_test`",
        ]
    );
}

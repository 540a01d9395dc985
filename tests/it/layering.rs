//! The architecture's one-way data flow, checked on the source: the engine
//! (bytes → document → validate | patch | hash → records) never imports a
//! shell, and only `src/git/` names the `git2` crate. A new import that
//! breaks either rule fails here with the file and line.

use std::path::{Path, PathBuf};

/// The engine: modules that must not know about git, caches, hooks, MCP or
/// the CLI (the leaves `diag` and `fsio` included).
const ENGINE: [&str; 7] = [
    "doc",
    "validate",
    "patch",
    "transcript",
    "engine",
    "diag.rs",
    "fsio.rs",
];

/// The shells over the engine. (`synth`, the document generator of the
/// benches and tests, depends on `doc` alone: either side may use it.)
const SHELLS: [&str; 11] = [
    "git", "cache", "staged", "record", "install", "changes", "merge", "mcp", "cli", "config",
    "verify",
];

fn rust_files(p: &Path, out: &mut Vec<PathBuf>) {
    if p.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(p)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for e in entries {
            rust_files(&e, out);
        }
    } else if p.extension().is_some_and(|e| e == "rs") {
        out.push(p.to_path_buf());
    }
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Code lines of a file (comment lines skipped), numbered from 1.
fn code_lines(path: &Path) -> Vec<(usize, String)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
        .map(|(i, l)| (i + 1, l.to_string()))
        .collect()
}

/// Shell module names a line imports through `crate::…`, including
/// grouped imports such as `use crate::{doc, merge};`.
fn shells_named(line: &str) -> Vec<&'static str> {
    let mut found = Vec::new();
    for shell in SHELLS {
        let direct = format!("crate::{shell}::");
        let direct_end = format!("crate::{shell};");
        let grouped = line.contains("crate::{")
            && line
                .split(['{', '}', ',', ' '])
                .any(|w| w.trim() == shell || w.trim().starts_with(&format!("{shell}::")));
        if line.contains(&direct) || line.contains(&direct_end) || grouped {
            found.push(shell);
        }
    }
    found
}

#[test]
fn engine_modules_import_no_shell() {
    let mut bad = Vec::new();
    for m in ENGINE {
        let mut files = Vec::new();
        rust_files(&src().join(m), &mut files);
        assert!(!files.is_empty(), "src/{m} has no Rust files");
        for f in files {
            for (n, line) in code_lines(&f) {
                for shell in shells_named(&line) {
                    bad.push(format!("{}:{n}: imports crate::{shell}", f.display()));
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "engine → shell imports:\n{}",
        bad.join("\n")
    );
}

#[test]
fn only_the_git_module_names_git2() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let git_dir = src().join("git");
    let mut bad = Vec::new();
    for f in files.iter().filter(|f| !f.starts_with(&git_dir)) {
        for (n, line) in code_lines(f) {
            if line.contains("git2::") || line.contains("use git2") {
                bad.push(format!("{}:{n}: {}", f.display(), line.trim()));
            }
        }
    }
    assert!(bad.is_empty(), "git2 outside src/git/:\n{}", bad.join("\n"));
}

#[test]
fn the_checks_see_a_violation() {
    assert_eq!(shells_named("use crate::merge::Labels;"), ["merge"]);
    assert_eq!(shells_named("use crate::{doc, git::repo::Repo};"), ["git"]);
    assert!(shells_named("use crate::doc::parse;").is_empty());
    assert!(shells_named("let cache_hit = crate::doc::x();").is_empty());
}

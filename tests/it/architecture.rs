//! What the compiler cannot see about the architecture. The crate graph
//! itself (`noma-core` → `noma-merge`; `noma-core` → `noma-store` →
//! `noma-provenance`;
//! the git layers: `noma-repo` (plumbing and the block cache) →
//! `noma-changes`, `noma-history` → `noma-reconcile` → `noma-git` (the
//! hooks, and the facade) → `noma-mcp`; `noma-lsp` over `noma-core`,
//! `noma-store` and `noma-provenance` (the policy file), and the `noma`
//! binary on top; see `.noma/architecture.noma`) is enforced by Cargo: a
//! crate cannot import one it does not depend on. Checked here: the graph
//! is the documented one (an edge it does not list fails, and
//! [`FORBIDDEN_EDGES`] fail however they are reached), only
//! `noma-repo` depends on git2 or rusqlite and only `noma-changes` on the
//! file-system watcher, no crate but `noma-core` holds more than 8,000
//! lines of code, and the crates that need no repository
//! ([`WITHOUT_A_REPOSITORY`]: `noma-core`, `noma-merge`,
//! `noma-provenance`) pull in no git, database, async, MCP or
//! file-watcher crate; the engine crates keep no state behind their
//! callers (a thread-local or static cache); only `noma-repo`'s `git`
//! module names `git2` and only its `cache` names `rusqlite`; inside a
//! crate no two top-level modules and no two sibling files import each
//! other; no function outgrows what a reader holds in mind (80 lines), no
//! file holds several jobs' worth of code (800 lines before its tests),
//! and the binary does no engine work: it parses arguments, calls the
//! libraries and words their data (decision `wording-in-the-binary`). The
//! library crates opt into the workspace lints (no printing, documented
//! public items; decision `workspace-lints`). A change that breaks a rule
//! fails here with the file and line.

use std::path::{Path, PathBuf};

/// The workspace's crates and the workspace crates each may depend on
/// (normal dependencies): the crate graph of `.noma/architecture.noma`.
/// The git side is layered: `noma-repo` alone talks to git and SQLite,
/// the job crates (`noma-changes`, `noma-history`, `noma-reconcile`) sit
/// on it, and `noma-git` (the hooks) on them.
const CRATE_GRAPH: [(&str, &[&str]); 14] = [
    ("noma-core", &[]),
    ("noma-store", &["noma-core"]),
    ("noma-merge", &["noma-core"]),
    ("noma-provenance", &["noma-core", "noma-store"]),
    ("noma-repo", &["noma-core", "noma-store"]),
    (
        "noma-changes",
        &["noma-core", "noma-merge", "noma-repo", "noma-store"],
    ),
    (
        "noma-history",
        &[
            "noma-core",
            "noma-merge",
            "noma-provenance",
            "noma-repo",
            "noma-store",
        ],
    ),
    (
        "noma-reconcile",
        &[
            "noma-changes",
            "noma-core",
            "noma-history",
            "noma-merge",
            "noma-provenance",
            "noma-repo",
            "noma-store",
        ],
    ),
    (
        "noma-git",
        &[
            "noma-changes",
            "noma-core",
            "noma-history",
            "noma-merge",
            "noma-provenance",
            "noma-reconcile",
            "noma-repo",
            "noma-store",
        ],
    ),
    ("noma-verify", &["noma-core", "noma-store"]),
    (
        "noma-mcp",
        &["noma-core", "noma-git", "noma-provenance", "noma-store"],
    ),
    ("noma-lsp", &["noma-core", "noma-provenance", "noma-store"]),
    (
        "noma",
        &[
            "noma-core",
            "noma-git",
            "noma-lsp",
            "noma-mcp",
            "noma-merge",
            "noma-provenance",
            "noma-store",
            "noma-verify",
        ],
    ),
    ("noma-testutil", &[]),
];

/// Workspace edges the layering forbids outright, directly or through
/// other crates, so that allowing one in [`CRATE_GRAPH`] fails too:
/// `noma-merge` merges bytes (decision `merge-crate`); reading, locking and
/// writing the files is its callers' work.
const FORBIDDEN_EDGES: [(&str, &str); 1] = [("noma-merge", "noma-store")];

/// External crates only one workspace crate may depend on directly, and
/// which: git and SQLite are `noma-repo`'s (a single place to change the
/// git library), the file-system watcher is `noma-changes'`.
const ONE_HOME: [(&str, &str); 5] = [
    ("git2", "noma-repo"),
    ("libgit2-sys", "noma-repo"),
    ("rusqlite", "noma-repo"),
    ("libsqlite3-sys", "noma-repo"),
    ("notify", "noma-changes"),
];

/// Lines of code a crate may hold (blank and comment lines not counted,
/// tests counted), and the crate exempt: `noma-core`, the pure document
/// model, is one concept however large.
const MAX_CRATE_LINES: usize = 8_000;
const LARGE_CRATE: &str = "noma-core";

/// The crates that need no repository (decisions `crates-split-by-job`
/// and `merge-crate`): bytes and files in, data out.
const WITHOUT_A_REPOSITORY: [&str; 3] = ["noma-core", "noma-merge", "noma-provenance"];

/// What a crate of [`WITHOUT_A_REPOSITORY`] must never pull in, directly
/// or through another crate: git, SQLite, an async runtime, the MCP SDK,
/// the changed-block watcher.
const NOT_WITHOUT_A_REPOSITORY: [&str; 7] = [
    "notify",
    "git2",
    "libgit2-sys",
    "rusqlite",
    "libsqlite3-sys",
    "tokio",
    "rmcp",
];

/// The engine crates: pure functions over values (`noma-core`) and their
/// durable side (`noma-store`).
fn engine_roots() -> Vec<PathBuf> {
    ["noma-core", "noma-store"]
        .iter()
        .map(|c| root().join("crates").join(c).join("src"))
        .collect()
}

/// Every crate's source root: the binary's `src/` and `crates/*/src/`.
fn source_roots() -> Vec<PathBuf> {
    let mut roots = vec![root().join("src")];
    let mut crates: Vec<PathBuf> = std::fs::read_dir(root().join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    crates.sort();
    roots.extend(crates);
    assert!(roots.len() >= 6, "crates not found: {roots:?}");
    roots
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The package names of a `cargo tree --prefix none` listing
/// (`name vX.Y.Z [(path)] [(*)]` per line), sorted, each once.
fn tree_names(listing: &str) -> Vec<String> {
    let mut names: Vec<String> = listing
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The packages of `names` (everything `krate` depends on) that are in
/// `forbidden`, each worded for the failure.
fn forbidden_dependencies(krate: &str, names: &[String], forbidden: &[&str]) -> Vec<String> {
    names
        .iter()
        .filter(|n| forbidden.contains(&n.as_str()))
        .map(|n| format!("{krate} depends on {n}"))
        .collect()
}

/// `cargo tree` of one workspace crate: the names of the packages it
/// depends on, directly or not (normal and build dependencies).
fn dependency_names(krate: &str) -> Vec<String> {
    let o = std::process::Command::new(env!("CARGO"))
        .args([
            "tree",
            "--offline",
            "-p",
            krate,
            "-e",
            "normal,build",
            "--prefix",
            "none",
        ])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "cargo tree -p {krate}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    tree_names(&String::from_utf8_lossy(&o.stdout))
}

#[test]
fn crates_without_a_repository_depend_on_no_git_database_async_or_watcher_crate() {
    let mut bad = Vec::new();
    for krate in WITHOUT_A_REPOSITORY {
        let names = dependency_names(krate);
        assert!(
            names.iter().any(|n| n == "noma-core"),
            "cargo tree shows no dependencies of {krate}: {names:?}"
        );
        bad.extend(forbidden_dependencies(
            krate,
            &names,
            &NOT_WITHOUT_A_REPOSITORY,
        ));
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    // The same check over the crate that does need a repository finds
    // what it holds.
    let git = forbidden_dependencies(
        "noma-repo",
        &dependency_names("noma-repo"),
        &NOT_WITHOUT_A_REPOSITORY,
    );
    assert!(
        git.iter().any(|f| f.ends_with(" git2")) && git.iter().any(|f| f.ends_with(" rusqlite")),
        "{git:?}"
    );
}

#[test]
fn the_dependency_check_sees_a_forbidden_crate_however_deep() {
    // A `cargo tree --prefix none -p noma-provenance` listing after someone
    // added a crate that pulls libgit2 in two levels down.
    let listing = "noma-provenance v0.1.0 (/w/crates/noma-provenance)\n\
                   noma-core v0.1.0 (/w/crates/noma-core)\n\
                   some-vcs-helper v1.0.0\n\
                   git2 v0.20.2\n\
                   libgit2-sys v0.18.2+1.9.1\n\
                   cc v1.2.0\n\
                   noma-core v0.1.0 (/w/crates/noma-core) (*)\n";
    let names = tree_names(listing);
    assert_eq!(
        forbidden_dependencies("noma-provenance", &names, &NOT_WITHOUT_A_REPOSITORY),
        [
            "noma-provenance depends on git2",
            "noma-provenance depends on libgit2-sys"
        ]
    );
    let clean = tree_names("noma-provenance v0.1.0 (/w)\nserde v1.0.0\n");
    assert!(
        forbidden_dependencies("noma-provenance", &clean, &NOT_WITHOUT_A_REPOSITORY).is_empty()
    );
}

/// `cargo metadata --no-deps` of the workspace: its packages, their
/// dependencies and targets.
fn workspace_metadata() -> serde_json::Value {
    let o = std::process::Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--offline",
            "--format-version",
            "1",
            "--no-deps",
        ])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let meta: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    meta
}

/// A crate and the workspace crates it depends on (normal dependencies).
type Edges = Vec<(String, Vec<String>)>;

/// Each package of the workspace with its normal dependencies whose
/// names `keep` accepts, sorted.
fn workspace_dependencies(keep: impl Fn(&str) -> bool) -> Edges {
    let meta = workspace_metadata();
    let mut got = Vec::new();
    for p in meta["packages"].as_array().unwrap() {
        let name = p["name"].as_str().unwrap().to_string();
        let mut deps: Vec<String> = p["dependencies"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["kind"].is_null() && d["name"].as_str().is_some_and(&keep))
            .map(|d| d["name"].as_str().unwrap().to_string())
            .collect();
        deps.sort();
        got.push((name, deps));
    }
    got.sort();
    got
}

/// What differs between the crate graph Cargo has (`got`) and the allowed
/// one (`allowed`): an edge, or a crate, that is not allowed, and an
/// allowed edge that is gone (the graph documents what is, not a wish).
fn graph_findings(got: &Edges, allowed: &[(&str, &[&str])]) -> Vec<String> {
    let mut bad = Vec::new();
    for (krate, deps) in got {
        let Some((_, ok)) = allowed.iter().find(|(c, _)| c == krate) else {
            bad.push(format!("{krate} is not in CRATE_GRAPH"));
            continue;
        };
        for d in deps.iter().filter(|d| !ok.contains(&d.as_str())) {
            bad.push(format!(
                "{krate} depends on {d}: an edge CRATE_GRAPH does not allow"
            ));
        }
        for d in ok.iter().filter(|d| !deps.iter().any(|g| g == *d)) {
            bad.push(format!(
                "{krate} no longer depends on {d}: drop the edge from CRATE_GRAPH"
            ));
        }
    }
    for (krate, _) in allowed {
        if !got.iter().any(|(c, _)| c == krate) {
            bad.push(format!("{krate} of CRATE_GRAPH is not in the workspace"));
        }
    }
    bad
}

/// `list` as [`Edges`].
fn edges_of(list: &[(&str, &[&str])]) -> Edges {
    list.iter()
        .map(|(c, d)| (c.to_string(), d.iter().map(|s| s.to_string()).collect()))
        .collect()
}

/// The path of crates from `from` to `to` in `graph` (both ends
/// included), if `from` reaches `to` at all.
fn path_between(graph: &Edges, from: &str, to: &str) -> Option<Vec<String>> {
    let mut seen = vec![from.to_string()];
    let mut paths = vec![vec![from.to_string()]];
    while let Some(path) = paths.pop() {
        let last = path.last().unwrap();
        let deps = graph.iter().find(|(c, _)| c == last).map(|(_, d)| d);
        for d in deps.into_iter().flatten() {
            let mut next = path.clone();
            next.push(d.clone());
            if d == to {
                return Some(next);
            }
            if !seen.contains(d) {
                seen.push(d.clone());
                paths.push(next);
            }
        }
    }
    None
}

/// The edges of [`FORBIDDEN_EDGES`] that `graph` has, directly or through
/// other crates, each with the path it takes.
fn forbidden_edges(graph: &Edges) -> Vec<String> {
    FORBIDDEN_EDGES
        .iter()
        .filter_map(|(from, to)| path_between(graph, from, to))
        .map(|path| format!("{}: a forbidden edge", path.join(" -> ")))
        .collect()
}

/// The crates depending directly on an external crate of [`ONE_HOME`]
/// other than its home.
fn homeless_dependencies(got: &Edges) -> Vec<String> {
    let mut bad = Vec::new();
    for (krate, deps) in got {
        for (dep, home) in ONE_HOME {
            if krate != home && deps.iter().any(|d| d == dep) {
                bad.push(format!("{krate} depends on {dep}, which is {home}'s alone"));
            }
        }
    }
    bad
}

#[test]
fn the_crate_graph_is_the_documented_one() {
    let got = workspace_dependencies(|n| n.starts_with("noma"));
    let bad = graph_findings(&got, &CRATE_GRAPH);
    assert!(
        bad.is_empty(),
        "the crate graph changed: update CRATE_GRAPH and .noma/architecture.noma together\n{}",
        bad.join("\n")
    );
    let forbidden = [
        forbidden_edges(&got),
        forbidden_edges(&edges_of(&CRATE_GRAPH)),
    ]
    .concat();
    assert!(forbidden.is_empty(), "{}", forbidden.join("\n"));
}

#[test]
fn only_noma_repo_depends_on_git_or_sqlite_and_only_noma_changes_on_the_watcher() {
    let got = workspace_dependencies(|n| ONE_HOME.iter().any(|(d, _)| *d == n));
    let homes: Vec<&str> = got
        .iter()
        .filter(|(_, deps)| !deps.is_empty())
        .map(|(c, _)| c.as_str())
        .collect();
    assert_eq!(homes, ["noma-changes", "noma-repo"], "{got:?}");
    let bad = homeless_dependencies(&got);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn the_graph_checks_see_a_forbidden_edge() {
    let edges = edges_of;
    // The reconcile reaching up into the hooks, the changed-block crate
    // naming git2 and a new crate nobody listed.
    let got = edges(&[
        ("noma-reconcile", &["noma-git", "noma-repo"]),
        ("noma-changes", &["git2", "noma-repo"]),
        ("noma-extra", &[]),
    ]);
    let allowed: [(&str, &[&str]); 3] = [
        ("noma-reconcile", &["noma-repo", "noma-history"]),
        ("noma-changes", &["noma-repo"]),
        ("noma-repo", &[]),
    ];
    assert_eq!(
        graph_findings(&got, &allowed),
        [
            "noma-reconcile depends on noma-git: an edge CRATE_GRAPH does not allow",
            "noma-reconcile no longer depends on noma-history: drop the edge from CRATE_GRAPH",
            "noma-changes depends on git2: an edge CRATE_GRAPH does not allow",
            "noma-extra is not in CRATE_GRAPH",
            "noma-repo of CRATE_GRAPH is not in the workspace",
        ]
    );
    assert_eq!(
        homeless_dependencies(&got),
        ["noma-changes depends on git2, which is noma-repo's alone"]
    );
    // The real graph with one edge added fails too.
    let mut real = workspace_dependencies(|n| n.starts_with("noma"));
    assert!(graph_findings(&real, &CRATE_GRAPH).is_empty());
    let merge = real.iter_mut().find(|(c, _)| c == "noma-merge").unwrap();
    merge.1.push("noma-repo".into());
    assert_eq!(
        graph_findings(&real, &CRATE_GRAPH),
        ["noma-merge depends on noma-repo: an edge CRATE_GRAPH does not allow"]
    );
    assert_eq!(
        forbidden_edges(&real),
        ["noma-merge -> noma-repo -> noma-store: a forbidden edge"]
    );
    // The merge crate back on the store: refused by the graph, and by the
    // forbidden edges even when the graph is edited to allow it.
    let mut real = workspace_dependencies(|n| n.starts_with("noma"));
    let merge = real.iter_mut().find(|(c, _)| c == "noma-merge").unwrap();
    merge.1.push("noma-store".into());
    assert_eq!(
        graph_findings(&real, &CRATE_GRAPH),
        ["noma-merge depends on noma-store: an edge CRATE_GRAPH does not allow"]
    );
    assert_eq!(
        forbidden_edges(&real),
        ["noma-merge -> noma-store: a forbidden edge"]
    );
    let mut allowing = edges_of(&CRATE_GRAPH);
    let merge = allowing
        .iter_mut()
        .find(|(c, _)| c == "noma-merge")
        .unwrap();
    merge.1.push("noma-provenance".into());
    assert_eq!(
        forbidden_edges(&allowing),
        ["noma-merge -> noma-provenance -> noma-store: a forbidden edge"]
    );
}

/// Lines of code of Rust files: blank lines and comment lines left out,
/// tests counted (they are code a reader of the crate reads too).
fn lines_of_code(files: &[PathBuf]) -> usize {
    files
        .iter()
        .map(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .lines()
                .filter(|l| {
                    let t = l.trim_start();
                    !t.is_empty() && !t.starts_with("//")
                })
                .count()
        })
        .sum()
}

/// The crates over [`MAX_CRATE_LINES`] but [`LARGE_CRATE`], worded.
fn oversized_crates(sizes: &[(String, usize)]) -> Vec<String> {
    sizes
        .iter()
        .filter(|(c, n)| c != LARGE_CRATE && *n > MAX_CRATE_LINES)
        .map(|(c, n)| format!("{c}: {n} lines of code (over {MAX_CRATE_LINES}: split it by job)"))
        .collect()
}

/// Each workspace crate's lines of code (the binary's `src/` as `noma`).
fn crate_sizes() -> Vec<(String, usize)> {
    source_roots()
        .into_iter()
        .map(|r| {
            let name = if r == root().join("src") {
                "noma".to_string()
            } else {
                r.parent()
                    .unwrap()
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            };
            let mut files = Vec::new();
            rust_files(&r, &mut files);
            (name, lines_of_code(&files))
        })
        .collect()
}

#[test]
fn no_crate_but_noma_core_holds_more_than_8000_lines_of_code() {
    let sizes = crate_sizes();
    assert!(sizes.len() >= 10, "crates not found: {sizes:?}");
    assert!(
        sizes.iter().all(|(_, n)| *n > 0),
        "a crate without code: the count is broken: {sizes:?}"
    );
    let bad = oversized_crates(&sizes);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn the_crate_size_check_sees_a_violation() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("x.rs");
    std::fs::write(
        &f,
        "// a comment\n\nfn a() {\n    // inside\n    let b = 1;\n}\n",
    )
    .unwrap();
    assert_eq!(lines_of_code(&[f.clone(), f]), 6);
    let sizes = [
        ("noma-core".to_string(), 17_000),
        ("noma-git".to_string(), 8_001),
        ("noma-repo".to_string(), 8_000),
    ];
    assert_eq!(
        oversized_crates(&sizes),
        ["noma-git: 8001 lines of code (over 8000: split it by job)"]
    );
}

/// The `.rs` files under `p`, in a stable order.
pub(crate) fn rust_files(p: &Path, out: &mut Vec<PathBuf>) {
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

/// Every code line of the engine's files: `(file, line number, line)`.
fn engine_code_lines() -> Vec<(PathBuf, usize, String)> {
    let mut out = Vec::new();
    for r in engine_roots() {
        let mut files = Vec::new();
        rust_files(&r, &mut files);
        assert!(!files.is_empty(), "{} has no Rust files", r.display());
        for f in files {
            for (n, line) in non_test_code(&f) {
                out.push((f.clone(), n, line));
            }
        }
    }
    out
}

/// Whether a line declares state that outlives a call: a thread-local or
/// a static cell (constants and `&'static` borrows are fine).
fn declares_hidden_state(line: &str) -> bool {
    let code = line.trim_start();
    code.contains("thread_local!")
        || ["OnceLock", "LazyLock", "OnceCell", "static mut "]
            .iter()
            .any(|cell| code.contains(cell))
        || code.split_whitespace().take(2).any(|word| word == "static")
}

/// The engine is pure functions over values: a cache that one step fills
/// for the next (the parse memo, once thread-local) is a value passed
/// where it is used (`doc::ParseMemo`), never state behind the callers.
#[test]
fn engine_modules_keep_no_hidden_state() {
    let bad: Vec<String> = engine_code_lines()
        .into_iter()
        .filter(|(_, _, line)| declares_hidden_state(line))
        .map(|(f, n, line)| format!("{}:{n}: {}", f.display(), line.trim()))
        .collect();
    assert!(
        bad.is_empty(),
        "state outside the values passed through the engine:\n{}",
        bad.join("\n")
    );
}

#[test]
fn only_the_git_module_names_git2_and_only_the_cache_rusqlite() {
    let mut files = Vec::new();
    for r in source_roots() {
        rust_files(&r, &mut files);
    }
    let mut bad = Vec::new();
    for (krate, home) in [("git2", "git"), ("rusqlite", "cache")] {
        let dir = root().join("crates/noma-repo/src").join(home);
        for f in files.iter().filter(|f| !f.starts_with(&dir)) {
            for (n, line) in code_lines(f) {
                if line.contains(&format!("{krate}::")) || line.contains(&format!("use {krate}")) {
                    bad.push(format!(
                        "{}:{n}: {} (only crates/noma-repo/src/{home}/ names {krate})",
                        shown(f),
                        line.trim()
                    ));
                }
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn the_checks_see_a_violation() {
    assert!(declares_hidden_state("thread_local! {"));
    assert!(declares_hidden_state(
        "static LAST: OnceLock<Document> = OnceLock::new();"
    ));
    assert!(declares_hidden_state("pub(crate) static mut N: u32 = 0;"));
    assert!(!declares_hidden_state("const MAX: usize = 64;"));
    assert!(!declares_hidden_state("fn name(&self) -> &'static str {"));
}

/// A path as the project names it (`crates/noma-core/src/…`).
fn shown(p: &Path) -> String {
    p.strip_prefix(env!("CARGO_MANIFEST_DIR"))
        .unwrap_or(p)
        .display()
        .to_string()
}

/// The code of a file before its test module (`#[cfg(test)]`), comment
/// lines skipped; nothing for a file that is all tests (`tests.rs`).
fn non_test_code(path: &Path) -> Vec<(usize, String)> {
    if path.file_name().is_some_and(|n| n == "tests.rs") {
        return Vec::new();
    }
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        // Test modules, and test seams only test builds compile, run to
        // the end of the file; a test-only item elsewhere still counts.
        let t = line.trim_start();
        let test_only =
            t.starts_with("#[cfg(test)]") || line.starts_with("#[cfg(feature = \"testing\")]");
        if test_only && opens_module_block(&lines[i + 1..]) {
            break;
        }
        if !line.trim_start().starts_with("//") {
            out.push((i + 1, line.to_string()));
        }
    }
    out
}

/// Whether the item after an attribute (further attributes and comments
/// skipped) is a module written in place (`mod tests {`), not `mod x;`.
fn opens_module_block(rest: &[&str]) -> bool {
    let Some(item) = rest
        .iter()
        .map(|l| l.trim())
        .find(|l| !l.is_empty() && !l.starts_with("#[") && !l.starts_with("//"))
    else {
        return false;
    };
    let item = item
        .strip_prefix("pub(crate) ")
        .or_else(|| item.strip_prefix("pub "))
        .unwrap_or(item);
    item.starts_with("mod ") && item.ends_with('{')
}

/// The names a line reaches through `prefix` (`crate::` or `super::`),
/// grouped imports included: `crate::{doc, git::Oid}` names doc and git.
fn names_after(line: &str, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find(prefix) {
        rest = &rest[at + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let inner = group.split('}').next().unwrap_or("");
            for part in inner.split(',') {
                let name: String = part
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                out.push(name);
            }
        } else {
            out.push(
                rest.chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect(),
            );
        }
    }
    out.retain(|n| !n.is_empty());
    out
}

/// The module name of a file or directory entry under a module directory.
fn module_name(p: &Path) -> Option<String> {
    let name = p.file_name()?.to_str()?;
    if p.is_dir() {
        return Some(name.to_string());
    }
    let stem = name.strip_suffix(".rs")?;
    (!matches!(stem, "mod" | "lib" | "main")).then(|| stem.to_string())
}

/// Pairs that name each other, given each node's named set.
fn mutual(edges: &std::collections::BTreeMap<String, Vec<(String, String)>>) -> Vec<String> {
    let mut bad = Vec::new();
    for (a, named) in edges {
        for (b, at) in named {
            if a < b {
                if let Some((_, back)) = edges.get(b).and_then(|v| v.iter().find(|(n, _)| n == a)) {
                    bad.push(format!("{a} ⇄ {b}: {at} and {back}"));
                }
            }
        }
    }
    bad
}

#[test]
fn no_two_top_level_modules_import_each_other() {
    for r in source_roots() {
        top_level_modules_of(&r);
    }
}

fn top_level_modules_of(src: &Path) {
    let mut edges = std::collections::BTreeMap::<String, Vec<(String, String)>>::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(src)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    let modules: Vec<String> = entries.iter().filter_map(|p| module_name(p)).collect();
    for (entry, m) in entries.iter().filter_map(|p| Some((p, module_name(p)?))) {
        let mut files = Vec::new();
        rust_files(entry, &mut files);
        let named = edges.entry(m.clone()).or_default();
        for f in files {
            for (n, line) in non_test_code(&f) {
                for other in names_after(&line, "crate::") {
                    if other != m
                        && modules.contains(&other)
                        && !named.iter().any(|(o, _)| *o == other)
                    {
                        named.push((other, format!("{}:{n}", shown(&f))));
                    }
                }
            }
        }
    }
    let bad = mutual(&edges);
    assert!(
        bad.is_empty(),
        "modules importing each other:\n{}",
        bad.join("\n")
    );
}

#[test]
fn no_two_sibling_files_import_each_other() {
    for r in source_roots() {
        sibling_files_of(&r);
    }
}

fn sibling_files_of(src: &Path) {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut edges = std::collections::BTreeMap::<String, Vec<(String, String)>>::new();
    for f in &files {
        let Some(me) = module_name(f) else { continue };
        let dir = f.parent().unwrap();
        let siblings: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| module_name(&e.unwrap().path()))
            .filter(|n| *n != me)
            .collect();
        let rel = dir.strip_prefix(src).unwrap();
        let crate_path = format!(
            "crate::{}::",
            rel.components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("::")
        );
        let key = shown(&dir.join(&me));
        let named = edges.entry(key).or_default();
        for (n, line) in non_test_code(f) {
            let mut found = names_after(&line, "super::");
            if !rel.as_os_str().is_empty() {
                found.extend(names_after(&line, &crate_path));
            }
            for other in found.into_iter().filter(|o| siblings.contains(o)) {
                let other = shown(&dir.join(&other));
                if !named.iter().any(|(o, _)| *o == other) {
                    named.push((other, format!("{}:{n}", shown(f))));
                }
            }
        }
    }
    let bad = mutual(&edges);
    assert!(
        bad.is_empty(),
        "sibling files importing each other:\n{}",
        bad.join("\n")
    );
}

/// Largest file, in lines before its test module (comments excluded).
const MAX_FILE_LINES: usize = 800;
/// What the binary (`src/`) leaves to the libraries, each as the name
/// that does it and whose job it is: the binary parses arguments, calls
/// the libraries and words what they return. A name counts when no
/// identifier character precedes it (`history_replay::replay_at_rev` is a
/// library call, `replay::replay(` is the engine's work).
const ENGINE_WORK: [(&str, &str); 14] = [
    ("git2::", "git plumbing is noma-repo's `git` module"),
    ("rusqlite::", "the block cache is noma-repo's `cache`"),
    (
        "apply_ops",
        "applying ops is the engine's (noma_store::engine)",
    ),
    (
        "apply_one(",
        "applying ops is the engine's (noma_store::engine)",
    ),
    ("apply_text_edits(", "applying edits is the engine's"),
    ("replay::replay", "replaying a transcript is the engine's"),
    ("state_after(", "replaying a transcript is the engine's"),
    ("parse_transcript(", "reading a transcript is the engine's"),
    ("sha256_hex(", "hashing documents is the engine's"),
    (
        "sshsig::",
        "signing and verifying is noma-history's `provenance`",
    ),
    (
        "fs::write(",
        "writing files is the store's (its crash protocol)",
    ),
    (
        "File::create(",
        "writing files is the store's (its crash protocol)",
    ),
    (
        "OpenOptions",
        "writing files is the store's (its crash protocol)",
    ),
    (
        "fs::rename(",
        "writing files is the store's (its crash protocol)",
    ),
];

/// Files of `src/` that may do one kind of [`ENGINE_WORK`], and why.
const ENGINE_WORK_ALLOWED: [(&str, &str, &str); 1] = [(
    "src/cli/man.rs",
    "fs::write(",
    "man pages written into the directory --dir names: no document",
)];

/// The engine work of a binary source file: `path:line: name (whose job)`
/// per line of code (comments and tests skipped) naming it.
fn engine_work(path: &Path, shown_as: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (n, line) in non_test_code(path) {
        for (name, why) in ENGINE_WORK {
            let named = line.match_indices(name).any(|(at, _)| {
                !line[..at]
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_')
            });
            let allowed = ENGINE_WORK_ALLOWED
                .iter()
                .any(|(f, w, _)| *f == shown_as && *w == name);
            if named && !allowed {
                out.push(format!("{shown_as}:{n}: {name} ({why})"));
            }
        }
    }
    out
}

#[test]
fn the_binary_does_no_engine_work() {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    assert!(files.len() > 30, "only {} files found", files.len());
    let bad: Vec<String> = files
        .iter()
        .flat_map(|f| engine_work(f, &shown(f)))
        .collect();
    assert!(
        bad.is_empty(),
        "engine work in the binary (call the library that does it):\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_engine_work_check_sees_a_violation() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("x.rs");
    std::fs::write(
        &f,
        "// std::fs::write(a comment)\nfn run() {\n    let r = noma_git::history_replay::replay_at_rev(a);\n    let t = noma_core::patch::apply_ops(&s, &ops);\n    std::fs::write(p, t);\n}\n#[cfg(test)]\nmod tests {\n    fn t() { std::fs::write(p, b); }\n}\n",
    )
    .unwrap();
    assert_eq!(
        engine_work(&f, "src/cli/x.rs"),
        [
            "src/cli/x.rs:4: apply_ops (applying ops is the engine's (noma_store::engine))",
            "src/cli/x.rs:5: fs::write( (writing files is the store's (its crash protocol))",
        ]
    );
    assert!(
        engine_work(&f, "src/cli/man.rs").len() == 1,
        "the allowed write is allowed"
    );
}

/// What writes to the terminal: outside the printer, a command returns it
/// in its `Output` instead.
const PRINTING: &[&str] = &[
    "print!(",
    "println!(",
    "eprint!(",
    "eprintln!(",
    "dbg!(",
    "io::stdout",
    "io::stderr",
];

/// The printer, the one file of the binary's source that writes to the
/// terminal.
const PRINTER: &str = "src/cli/output.rs";

/// The printing of a file of `src/`: `path:line: name` per line of
/// code (comments and tests skipped) that prints, the printer's excepted.
fn prints_outside_the_printer(path: &Path, shown_as: &str) -> Vec<String> {
    if shown_as == PRINTER {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (n, line) in non_test_code(path) {
        for name in PRINTING {
            let named = line.match_indices(name).any(|(at, _)| {
                !line[..at]
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_')
            });
            if named {
                out.push(format!("{shown_as}:{n}: {name}"));
            }
        }
    }
    out
}

#[test]
fn nothing_in_src_prints_outside_the_printer() {
    // The commands (`src/cli`), and what words for them (`src/report`).
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    assert!(files.len() > 30, "only {} files found", files.len());
    assert!(
        files.iter().any(|f| shown(f) == PRINTER),
        "the printer {PRINTER} is missing"
    );
    let bad: Vec<String> = files
        .iter()
        .flat_map(|f| prints_outside_the_printer(f, &shown(f)))
        .collect();
    assert!(
        bad.is_empty(),
        "printing outside the printer (return it in the command's Output, or use \
         print_now/note/streamed of {PRINTER}):\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_printing_check_sees_a_violation() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("x.rs");
    std::fs::write(
        &f,
        "// println!(a comment)\nfn run() {\n    eprintln!(\"noma: {e}\");\n    print!(\"{out}\");\n    let o = std::io::stdout().lock();\n    c.sprint!(x);\n}\n#[cfg(test)]\nmod tests {\n    fn t() { println!(\"x\"); }\n}\n",
    )
    .unwrap();
    assert_eq!(
        prints_outside_the_printer(&f, "src/cli/x.rs"),
        [
            "src/cli/x.rs:3: eprintln!(",
            "src/cli/x.rs:4: print!(",
            "src/cli/x.rs:5: io::stdout",
        ]
    );
    assert!(
        prints_outside_the_printer(&f, PRINTER).is_empty(),
        "the printer may print"
    );
}

#[test]
fn no_file_holds_more_than_800_lines_of_code() {
    let mut files = Vec::new();
    for r in source_roots() {
        rust_files(&r, &mut files);
    }
    assert!(files.len() > 100, "only {} files found", files.len());
    let mut bad = Vec::new();
    for f in &files {
        let code = non_test_code(f).len();
        if code > MAX_FILE_LINES {
            bad.push(format!(
                "{}: {code} lines before its tests (over {MAX_FILE_LINES}: split it by job)",
                shown(f)
            ));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn the_structure_checks_see_a_violation() {
    assert_eq!(
        names_after("use crate::{doc, git::Oid};", "crate::"),
        ["doc", "git"]
    );
    assert_eq!(names_after("use super::core::{a, b};", "super::"), ["core"]);
}

/// Library crates not yet under the workspace lints, each with why: the
/// MCP server's transport is being rewritten, and its `eprintln!` sites
/// (`lib.rs`, `patch_tools.rs`, `transport.rs`) go with that rewrite.
const LINTS_PENDING: [&str; 0] = [];

/// The `key = value` lines of each `[table]` of a Cargo.toml, by table
/// name, comments dropped: enough for the workspace's manifests.
fn manifest_tables(text: &str) -> std::collections::BTreeMap<String, Vec<(String, String)>> {
    let mut tables = std::collections::BTreeMap::new();
    let mut current = String::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            current = name.trim().to_string();
            tables.entry(current.clone()).or_insert_with(Vec::new);
        } else if let Some((k, v)) = line.split_once('=') {
            let v = v.trim().trim_matches('"').to_string();
            let entry = tables.entry(current.clone()).or_insert_with(Vec::new);
            entry.push((k.trim().to_string(), v));
        }
    }
    tables
}

/// What is wrong with the lints: the workspace must deny printing and
/// flag undocumented public items (warn is enough, CI's clippy runs with
/// `-D warnings`), and each library crate (name, manifest) must opt in.
fn lint_findings(workspace: &str, libraries: &[(String, String)]) -> Vec<String> {
    let tables = manifest_tables(workspace);
    let value = |table: &str, key: &str| -> Option<String> {
        let t = tables.get(table)?;
        t.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone())
    };
    let mut bad = Vec::new();
    let wanted = [
        (
            "workspace.lints.rust",
            "missing_docs",
            &["warn", "deny", "forbid"][..],
        ),
        (
            "workspace.lints.rust",
            "unreachable_pub",
            &["warn", "deny", "forbid"][..],
        ),
        (
            "workspace.lints.clippy",
            "print_stdout",
            &["deny", "forbid"][..],
        ),
        (
            "workspace.lints.clippy",
            "print_stderr",
            &["deny", "forbid"][..],
        ),
        (
            "workspace.lints.clippy",
            "too_many_lines",
            &["deny", "forbid"][..],
        ),
    ];
    for (table, key, levels) in wanted {
        let got = value(table, key);
        if !got.as_deref().is_some_and(|v| levels.contains(&v)) {
            bad.push(format!(
                "Cargo.toml: [{table}] {key} is {got:?}, not one of {levels:?}"
            ));
        }
    }
    for (name, manifest) in libraries {
        let t = manifest_tables(manifest);
        let opted_in = t
            .get("lints")
            .is_some_and(|l| l.iter().any(|(k, v)| k == "workspace" && v == "true"));
        if !opted_in {
            bad.push(format!(
                "crates/{name}/Cargo.toml: no `[lints] workspace = true`"
            ));
        }
    }
    bad
}

/// Longest function: clippy's `too_many_lines` counts its lines of code
/// (comments and blank lines left out) and is denied above this.
const MAX_FUNCTION_LINES: usize = 80;

/// What is wrong with the function-length lint: `clippy.toml` must set
/// its threshold to [`MAX_FUNCTION_LINES`], and the binary, which does not
/// take the workspace lints (it prints), must deny it in `src/main.rs`.
/// The libraries deny it through `[workspace.lints]` ([`lint_findings`]).
fn length_lint_findings(clippy_toml: &str, main_rs: &str) -> Vec<String> {
    let mut bad = Vec::new();
    let threshold = clippy_toml.lines().find_map(|l| {
        let l = l.split('#').next()?.trim();
        let (k, v) = l.split_once('=')?;
        (k.trim() == "too-many-lines-threshold").then(|| v.trim().to_string())
    });
    if threshold.as_deref() != Some(&MAX_FUNCTION_LINES.to_string()) {
        bad.push(format!(
            "clippy.toml: too-many-lines-threshold is {threshold:?}, not {MAX_FUNCTION_LINES}"
        ));
    }
    let denied = main_rs.lines().any(|l| {
        let l = l.trim();
        l.starts_with("#![deny(") && l.contains("clippy::too_many_lines")
    });
    if !denied {
        bad.push("src/main.rs: no `#![deny(clippy::too_many_lines)]`".into());
    }
    bad
}

/// The workspace's library crates (a `lib` target) with their manifests'
/// text, those in `LINTS_PENDING` left out.
fn library_manifests() -> Vec<(String, String)> {
    let meta = workspace_metadata();
    let mut out = Vec::new();
    for p in meta["packages"].as_array().unwrap() {
        let name = p["name"].as_str().unwrap().to_string();
        let is_lib = p["targets"].as_array().unwrap().iter().any(|t| {
            t["kind"]
                .as_array()
                .is_some_and(|k| k.iter().any(|k| k == "lib"))
        });
        if is_lib && !LINTS_PENDING.contains(&name.as_str()) {
            let path = p["manifest_path"].as_str().unwrap();
            out.push((name, std::fs::read_to_string(path).unwrap()));
        }
    }
    out.sort();
    out
}

#[test]
fn library_crates_never_print_and_document_their_public_items() {
    let libraries = library_manifests();
    assert!(
        libraries.len() >= 5,
        "library crates not found: {libraries:?}"
    );
    let workspace = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let mut bad = lint_findings(&workspace, &libraries);
    bad.extend(length_lint_findings(
        &std::fs::read_to_string(root().join("clippy.toml")).unwrap(),
        &std::fs::read_to_string(root().join("src/main.rs")).unwrap(),
    ));
    // An allow in the source would switch the lints off where they matter.
    for (name, _) in &libraries {
        let mut files = Vec::new();
        rust_files(&root().join("crates").join(name).join("src"), &mut files);
        for f in &files {
            for (n, line) in non_test_code(f) {
                let allows = line.contains("allow(") || line.contains("expect(");
                let lint = [
                    "missing_docs",
                    "clippy::print_stdout",
                    "clippy::print_stderr",
                    "clippy::too_many_lines",
                ]
                .iter()
                .any(|l| line.contains(l));
                if allows && lint {
                    bad.push(format!("{}:{n}: {}", shown(f), line.trim()));
                }
            }
        }
    }
    // Warnings fail CI only because its clippy denies them.
    let ci = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    if !ci.contains("cargo clippy --all-targets -- -D warnings") {
        bad.push(".ci/run: no `cargo clippy --all-targets -- -D warnings`".into());
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn the_lint_check_sees_a_violation() {
    let workspace = "[workspace.lints.rust]\nmissing_docs = \"allow\" # off\n\n\
                     [workspace.lints.clippy]\nprint_stdout = \"deny\"\n";
    let libraries = [
        (
            "a".to_string(),
            "[package]\nname = \"a\"\n\n[lints]\nworkspace = true\n".to_string(),
        ),
        (
            "b".to_string(),
            "[package]\nname = \"b\"\n# [lints]\n".to_string(),
        ),
    ];
    assert_eq!(
        lint_findings(workspace, &libraries),
        [
            "Cargo.toml: [workspace.lints.rust] missing_docs is Some(\"allow\"), not one of [\"warn\", \"deny\", \"forbid\"]",
            "Cargo.toml: [workspace.lints.rust] unreachable_pub is None, not one of [\"warn\", \"deny\", \"forbid\"]",
            "Cargo.toml: [workspace.lints.clippy] print_stderr is None, not one of [\"deny\", \"forbid\"]",
            "Cargo.toml: [workspace.lints.clippy] too_many_lines is None, not one of [\"deny\", \"forbid\"]",
            "crates/b/Cargo.toml: no `[lints] workspace = true`",
        ]
    );
    assert_eq!(
        length_lint_findings(
            "too-many-lines-threshold = 100 # 80\n",
            "// #![deny(clippy::too_many_lines)]\n#![deny(missing_docs)]\n"
        ),
        [
            "clippy.toml: too-many-lines-threshold is Some(\"100\"), not 80",
            "src/main.rs: no `#![deny(clippy::too_many_lines)]`",
        ]
    );
    assert!(length_lint_findings(
        "too-many-lines-threshold = 80\n",
        "#![deny(clippy::too_many_lines)]\n"
    )
    .is_empty());
}

/// The workspace crates a file's code names (`noma_git::…`), `noma_core`
/// left out: its items are values and pure functions (no file, git or
/// database), so naming them is not a step into another layer.
fn layers_named(code: &[(usize, String)]) -> std::collections::BTreeSet<String> {
    let mut out = std::collections::BTreeSet::new();
    for (_, line) in code {
        let mut rest = line.as_str();
        while let Some(at) = rest.find("noma_") {
            let before = line.len() - rest.len() + at;
            let boundary = before == 0
                || !line.as_bytes()[before - 1].is_ascii_alphanumeric()
                    && line.as_bytes()[before - 1] != b'_';
            let name: String = rest[at..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            rest = &rest[at + name.len()..];
            if boundary && rest.starts_with("::") && name != "noma_core" {
                out.insert(name);
            }
        }
    }
    out
}

/// The `noma_store` paths a file's code names (`engine::BeforeAppend`).
fn store_paths_named(code: &[(usize, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (_, line) in code {
        let mut rest = line.as_str();
        while let Some(at) = rest.find("noma_store::") {
            rest = &rest[at + "noma_store::".len()..];
            let path: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || "_:{}, ".contains(*c))
                .collect();
            out.push(path.trim_end_matches([',', ' ', ':']).to_string());
        }
    }
    out
}

/// Fields of the engine's `Options`: a struct elsewhere holding six or
/// more of them is a second copy of the request, to be kept in step by
/// hand.
const OPTIONS_FIELDS: [&str; 13] = [
    "strict",
    "reason",
    "actor",
    "expected_sha",
    "base_sha256",
    "parent_op_id",
    "transcript",
    "doc_uri",
    "write",
    "force",
    "validate",
    "genesis",
    "before_append",
];

/// The structs of a file's code holding six or more of [`OPTIONS_FIELDS`].
fn options_copies(code: &[(usize, String)]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut open: Option<(usize, String, usize)> = None;
    for (n, line) in code {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("pub struct ").or(t.strip_prefix("struct ")) {
            if t.ends_with('{') {
                let name = rest.split([' ', '<', '{']).next().unwrap_or("").to_string();
                open = Some((*n, name, 0));
            }
            continue;
        }
        let Some((at, name, count)) = open.as_mut() else {
            continue;
        };
        if t == "}" {
            if *count >= 6 {
                out.push((*at, name.clone()));
            }
            open = None;
            continue;
        }
        let field = t.strip_prefix("pub ").unwrap_or(t);
        let field = field.split(':').next().unwrap_or("");
        if t.contains(':') && OPTIONS_FIELDS.contains(&field) {
            *count += 1;
        }
    }
    out
}

/// Whether a line opens an `impl` block of the hook's `Guard`.
fn implements_guard(line: &str) -> bool {
    line.starts_with("impl") && (line.contains(" Guard<") || line.contains(" Guard {"))
}

/// `noma patch`'s route (decision `patch-request-one-path`): the command
/// (`src/cli/patch/mod.rs`, its outcome `src/cli/patch/run.rs` and the
/// writer flags it shares, `src/cli/writer.rs`)
/// steps into two crates, once each: `noma_git` for the writer's context
/// (root, actor, genesis, signer) and `noma_store` for the engine; the
/// context names nothing of the engine but the signing step it fills
/// (it never reaches back into store helpers); no struct outside the
/// engine copies the engine's `Options` (or the planner's `Request`, its
/// pure part); and the hook's `Guard` is
/// implemented in one file, its steps plain functions called by path.
#[test]
fn a_patch_request_crosses_crates_at_most_twice() {
    let cli = root().join("src/cli");
    let mut layers = std::collections::BTreeSet::new();
    for f in ["patch/mod.rs", "patch/run.rs", "writer.rs"] {
        layers.extend(layers_named(&non_test_code(&cli.join(f))));
    }
    let want: std::collections::BTreeSet<String> = ["noma_git".into(), "noma_store".into()].into();
    assert_eq!(layers, want, "the crates `noma patch` steps into");
    let ctx = root().join("crates/noma-git/src/patch/context.rs");
    let named = store_paths_named(&non_test_code(&ctx));
    assert_eq!(named, ["engine::BeforeAppend"], "{}", shown(&ctx));
    let mut files = Vec::new();
    for r in source_roots() {
        rust_files(&r, &mut files);
    }
    let mut bad = Vec::new();
    let mut guard_files = Vec::new();
    for f in &files {
        let code = non_test_code(f);
        // The engine's Options and the planner's Request (its pure part).
        let engine = [
            "crates/noma-store/src/engine/mod.rs",
            "crates/noma-core/src/plan/mod.rs",
        ];
        if !engine.iter().any(|e| f.ends_with(e)) {
            for (n, name) in options_copies(&code) {
                bad.push(format!(
                    "{}:{n}: struct {name} copies the engine's Options",
                    shown(f)
                ));
            }
        }
        if code.iter().any(|(_, l)| implements_guard(l)) {
            guard_files.push(shown(f));
        }
    }
    assert_eq!(guard_files.len(), 1, "impl Guard in {guard_files:?}");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn the_patch_route_checks_see_a_violation() {
    let lines = |text: &str| -> Vec<(usize, String)> {
        text.lines()
            .enumerate()
            .map(|(i, l)| (i + 1, l.to_string()))
            .collect()
    };
    // The shape before: the command named three layers, the request was a
    // copy of Options, and the context reached back into store helpers.
    let cli = lines(
        "use noma_git::patch::{self, options};\nlet o = noma_store::op_list::read(a, b);\n\
         let v = noma_mcp::serve();\nuse noma_core::transcript::ActorKind;\n",
    );
    assert_eq!(
        layers_named(&cli).into_iter().collect::<Vec<_>>(),
        ["noma_git", "noma_mcp", "noma_store"]
    );
    let ctx = lines(
        "use noma_store::engine::{self, Options, WriteMode};\n\
         opts.doc_uri = Some(noma_store::uri::portable_doc_uri(root, doc));\n",
    );
    assert_eq!(
        store_paths_named(&ctx),
        [
            "engine::{self, Options, WriteMode}",
            "uri::portable_doc_uri"
        ]
    );
    let request = lines(
        "pub struct Request {\n    pub actor_kind: ActorKind,\n    pub reason: Option<String>,\n\
         pub expected_sha: Option<String>,\n    pub base_sha256: Option<String>,\n\
         pub parent_op_id: Option<String>,\n    pub transcript: Option<PathBuf>,\n\
         pub write: WriteMode,\n    pub strict: bool,\n}\n\
         struct Small {\n    reason: String,\n    force: bool,\n}\n",
    );
    assert_eq!(options_copies(&request), [(1, "Request".to_string())]);
    assert!(implements_guard("impl Guard<'_> {"));
    assert!(implements_guard("impl<'a> Guard<'a> {"));
    assert!(!implements_guard(
        "    let guard = Guard::new(&repo, &policy, &cache);"
    ));
}

/// Whether a line declares a function other crates can call: `pub fn`
/// (with `const`, `async` or `unsafe`), not `pub(crate)` or narrower.
fn declares_public_fn(line: &str) -> bool {
    let Some(mut rest) = line.trim_start().strip_prefix("pub ") else {
        return false;
    };
    for q in ["const ", "async ", "unsafe "] {
        rest = rest.strip_prefix(q).unwrap_or(rest);
    }
    rest.starts_with("fn ")
}

/// The `pub fn`s of a crate's code before its tests, free functions and
/// methods alike: a count that errs high (a `pub fn` in a private module
/// counts too), so the facade can only be smaller than it says.
fn public_functions(krate: &str) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(&root().join("crates").join(krate).join("src"), &mut files);
    let mut out = Vec::new();
    for f in &files {
        for (n, line) in non_test_code(f) {
            if declares_public_fn(&line) {
                out.push(format!("{}:{n}: {}", shown(f), line.trim()));
            }
        }
    }
    out
}

/// `noma_git` offers the binary and the MCP server a short facade
/// (decision `git-crate-facade`): fewer than 100 public functions, what
/// only the crate uses being `pub(crate)`.
#[test]
fn noma_git_offers_fewer_than_100_public_functions() {
    let public = public_functions("noma-git");
    assert!(
        public.len() < 100,
        "noma_git has {} public functions (fewer than 100 wanted; make what only the crate uses pub(crate)):\n{}",
        public.len(),
        public.join("\n")
    );
}

#[test]
fn the_public_function_count_sees_what_it_counts() {
    assert!(declares_public_fn("    pub fn run(&self) {"));
    assert!(declares_public_fn("pub const fn new() -> Self {"));
    assert!(declares_public_fn("pub async unsafe fn go() {"));
    assert!(!declares_public_fn("    pub(crate) fn run(&self) {"));
    assert!(!declares_public_fn("pub(super) fn run() {"));
    assert!(!declares_public_fn("fn private() {"));
    assert!(!declares_public_fn("pub struct Fn;"));
}

/// The files of `sources` (path, text) that define a function named
/// `reapply`.
fn reapply_definitions(sources: &[(String, String)]) -> Vec<String> {
    sources
        .iter()
        .filter(|(_, text)| {
            text.lines().any(|l| {
                let l = l.trim_start();
                !l.starts_with("//")
                    && l.split("fn reapply")
                        .nth(1)
                        .is_some_and(|rest| rest.starts_with('(') || rest.starts_with('<'))
            })
        })
        .map(|(p, _)| p.clone())
        .collect()
}

/// Re-applying a recorded op onto its state is one function,
/// `noma_core::transcript::reapply::reapply`; every replay calls it and
/// words its outcome.
#[test]
fn reapply_has_one_definition() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    for e in std::fs::read_dir(root.join("crates")).unwrap() {
        rust_files(&e.unwrap().path().join("src"), &mut files);
    }
    let sources: Vec<(String, String)> = files
        .iter()
        .map(|f| {
            let rel = f
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            (rel, std::fs::read_to_string(f).unwrap())
        })
        .collect();
    assert_eq!(
        reapply_definitions(&sources),
        ["crates/noma-core/src/transcript/reapply.rs"]
    );
}

#[test]
fn the_reapply_check_sees_a_second_definition() {
    let planted = |text: &str| vec![("a.rs".to_string(), text.to_string())];
    assert_eq!(
        reapply_definitions(&planted("fn reapply(x: u8) {}")),
        ["a.rs"]
    );
    assert_eq!(
        reapply_definitions(&planted("    pub fn reapply<T>(x: T) {}")),
        ["a.rs"]
    );
    assert!(reapply_definitions(&planted("fn reapply_from(x: u8) {}")).is_empty());
    assert!(reapply_definitions(&planted("// fn reapply(x)")).is_empty());
}

/// The server crates, whose callers need only how to start them: their
/// modules are private, and what the binary calls is re-exported at the
/// root (`pub use`). `unreachable_pub` then makes every other item say
/// `pub(crate)`.
const FACADE_CRATES: [&str; 2] = ["noma-mcp", "noma-lsp"];

/// The `pub mod` lines of a crate root: `lib.rs:line: text`.
fn public_modules(lib_rs: &str) -> Vec<String> {
    lib_rs
        .lines()
        .enumerate()
        .filter(|(_, l)| l.trim_start().starts_with("pub mod "))
        .map(|(n, l)| format!("lib.rs:{}: {}", n + 1, l.trim()))
        .collect()
}

#[test]
fn the_server_crates_offer_a_facade_only() {
    let mut bad = Vec::new();
    for name in FACADE_CRATES {
        let lib =
            std::fs::read_to_string(root().join("crates").join(name).join("src/lib.rs")).unwrap();
        assert!(lib.contains("pub use "), "{name}: no facade found");
        bad.extend(
            public_modules(&lib)
                .into_iter()
                .map(|m| format!("{name}/src/{m}")),
        );
    }
    assert!(
        bad.is_empty(),
        "public modules in a server crate (make them private, re-export what callers use):\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_facade_check_sees_a_public_module() {
    assert_eq!(
        public_modules(
            "//! pub mod in a comment\nmod server;\npub mod tools;\npub use server::serve;\n"
        ),
        ["lib.rs:3: pub mod tools;"]
    );
}

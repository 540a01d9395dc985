//! `noma changed` end to end: a real `git` in a temp repository, the real
//! binary, committed, staged, unstaged and untracked edits since `main`.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::common::{git_at as git, run_at as cmd, text as all, NOMA};

fn noma(dir: &Path, args: &[&str]) -> Output {
    cmd(dir, NOMA, args)
}

fn noma_json(dir: &Path, args: &[&str]) -> Value {
    let o = noma(dir, args);
    assert!(o.status.success(), "noma {args:?}: {}", all(&o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", all(&o)))
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

fn edit(dir: &Path, name: &str, from: &str, to: &str) {
    let text = std::fs::read_to_string(dir.join(name)).unwrap();
    assert!(text.contains(from), "{name} lacks {from:?}");
    write(dir, name, &text.replacen(from, to, 1));
}

/// (doc, id, change) of every reported block.
fn triples(v: &Value) -> BTreeSet<(String, String, String)> {
    let mut out = BTreeSet::new();
    for d in v["docs"].as_array().unwrap() {
        for b in d["blocks"].as_array().unwrap() {
            out.insert((
                d["path"].as_str().unwrap().to_string(),
                b["id"].as_str().unwrap().to_string(),
                b["change"].as_str().unwrap().to_string(),
            ));
        }
    }
    out
}

fn set(items: &[(&str, &str, &str)]) -> BTreeSet<(String, String, String)> {
    items
        .iter()
        .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
        .collect()
}

fn doc<'a>(v: &'a Value, path: &str) -> &'a Value {
    v["docs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["path"] == path)
        .unwrap_or_else(|| panic!("{path} not in {v}"))
}

const A: &str = "# Alpha\n\nIntro text.\n\n::claim{id=\"a1\"}\nClaim one.\n::\n\n::claim{id=\"a2\"}\nClaim two.\n::\n\n::claim{id=\"a3\"}\nClaim three.\n::\n\n::note{id=\"a4\"}\nNote four.\n::\n";
const B: &str = "# Beta\n\nBeta intro.\n\n## Details\n\nDetails text.\n\n::claim{id=\"b1\"}\nNested claim.\n::\n";
const C: &str = "# Gamma\n\nGamma text.\n\n::note{id=\"c1\"}\nC one.\n::\n";

/// `main` with three documents; branch `work` with one edit of each kind
/// spread over committed, staged and unstaged states.
fn setup() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    git(d, &["init", "-q", "-b", "main"]);
    write(d, ".gitignore", ".noma/cache/\n");
    write(d, "a.noma", A);
    write(d, "b.noma", B);
    write(d, "c.noma", C);
    git(d, &["add", "-A"]);
    git(d, &["commit", "-q", "-m", "base"]);
    git(d, &["checkout", "-q", "-b", "work"]);
    // Committed: patch a1, delete a3, edit the nested child b1.
    edit(d, "a.noma", "Claim one.", "Claim one, patched.");
    edit(d, "a.noma", "::claim{id=\"a3\"}\nClaim three.\n::\n\n", "");
    edit(d, "b.noma", "Nested claim.", "Nested claim, edited.");
    git(d, &["commit", "-q", "-am", "work"]);
    // Staged: add a5.
    edit(
        d,
        "a.noma",
        "Claim two.\n::\n",
        "Claim two.\n::\n\n::claim{id=\"a5\"}\nClaim five.\n::\n",
    );
    git(d, &["add", "a.noma"]);
    // Unstaged: rename a4 (same content, new id).
    edit(d, "a.noma", "::note{id=\"a4\"}", "::note{id=\"a4-new\"}");
    tmp
}

#[test]
fn exactly_the_changed_blocks_and_nothing_else() {
    let tmp = setup();
    let d = tmp.path();
    // A commit on main after the branch point touching c.noma.
    git(d, &["stash", "-q"]);
    git(d, &["checkout", "-q", "main"]);
    edit(d, "c.noma", "C one.", "C one on main.");
    git(d, &["commit", "-q", "-am", "main moves"]);
    git(d, &["checkout", "-q", "work"]);
    git(d, &["stash", "pop", "-q", "--index"]);

    let v = noma_json(d, &["changed", "--base", "main", "--format", "json"]);
    assert_eq!(
        triples(&v),
        set(&[
            ("a.noma", "a1", "modified"),
            ("a.noma", "a3", "removed"),
            ("a.noma", "a4-new", "renamed"),
            ("a.noma", "a5", "added"),
            ("b.noma", "b1", "modified"),
        ]),
        "{v:#}"
    );
    let a = doc(&v, "a.noma");
    assert_eq!(a["change"], "modified");
    let a1 = a["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["id"] == "a1")
        .unwrap();
    assert_eq!(a1["source"], "::claim{id=\"a1\"}\nClaim one, patched.\n::");
    assert_eq!(
        a1["sha256"],
        noma_core::doc::hash::sha256_hex(b"::claim{id=\"a1\"}\nClaim one, patched.\n::")
    );
    assert_eq!(
        a1["old_sha256"],
        noma_core::doc::hash::sha256_hex(b"::claim{id=\"a1\"}\nClaim one.\n::")
    );
    assert_eq!(a1["lines"], serde_json::json!([5, 7]));
    assert_eq!(a1["parent"], "alpha");
    assert!(a1.get("old_source").is_none(), "old source only when asked");
    let renamed = a["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["id"] == "a4-new")
        .unwrap();
    assert_eq!(renamed["old_id"], "a4");
    let b1 = &doc(&v, "b.noma")["blocks"][0];
    assert_eq!(b1["parent"], "details");
    assert_eq!(v["merge_base"].as_str().unwrap().len(), 40);

    // --old-source adds the base slice.
    let v = noma_json(
        d,
        &[
            "changed",
            "--base",
            "main",
            "--old-source",
            "--format",
            "json",
            "b.noma",
        ],
    );
    assert_eq!(
        doc(&v, "b.noma")["blocks"][0]["old_source"],
        "::claim{id=\"b1\"}\nNested claim.\n::"
    );

    // Human output: one line per block, grouped by document.
    let o = noma(d, &["changed", "--base", "main"]);
    assert!(o.status.success(), "{}", all(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("a.noma (modified: 1 added, 1 modified, 1 removed, 1 renamed)"),
        "{text}"
    );
    assert!(text.contains("a4 -> a4-new"), "{text}");
    assert_eq!(
        text.lines().filter(|l| l.starts_with("  ")).count(),
        5,
        "{text}"
    );
    assert!(!text.contains("c.noma"), "{text}");

    // A warm second run gives the same answer (served from the cache).
    let again = noma_json(d, &["changed", "--base", "main", "--format", "json"]);
    assert_eq!(triples(&again).len(), 5);
    let bypass = noma_json(
        d,
        &[
            "changed",
            "--base",
            "main",
            "--bypass-cache",
            "--format",
            "json",
        ],
    );
    assert_eq!(triples(&again), triples(&bypass));

    // The MCP tool gives exactly the same blocks.
    let over_mcp = mcp_get_changed_blocks(d, serde_json::json!({"base_branch": "main"}));
    assert_eq!(triples(&over_mcp), triples(&again), "{over_mcp:#}");
}

/// Asks a real `noma mcp` over stdio (newline-delimited JSON-RPC) for
/// `get_changed_blocks` and returns the tool's JSON answer.
fn mcp_get_changed_blocks(dir: &Path, args: Value) -> Value {
    use std::io::{BufRead, BufReader, Write};
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_noma"))
        .arg("mcp")
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let requests = [
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "changed-test", "version": "0"}}}),
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "get_changed_blocks", "arguments": args}}),
    ];
    for r in &requests {
        writeln!(stdin, "{r}").unwrap();
    }
    stdin.flush().unwrap();
    let mut answer = None;
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let msg: Value = serde_json::from_str(&line.unwrap()).unwrap();
        if msg["id"] == 2 {
            answer = Some(msg);
            break;
        }
    }
    drop(stdin);
    let _ = child.wait();
    let msg = answer.expect("an answer to tools/call");
    assert_ne!(msg["result"]["isError"], true, "{msg}");
    crate::common::tool_body(&msg).1
}

#[test]
fn documents_filters_reconciliation_and_snapshot() {
    let tmp = setup();
    let d = tmp.path();
    // A document added (untracked, never `git add`ed) and one deleted.
    write(d, "e.noma", "# Echo\n\n## One\n\nx\n\n## Two\n\ny\n");
    git(d, &["rm", "-q", "c.noma"]);

    let v = noma_json(
        d,
        &["changed", "--base", "main", "--docs", "--format", "json"],
    );
    let docs: Vec<_> = v["docs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| (x["path"].as_str().unwrap(), x["change"].as_str().unwrap()))
        .collect();
    assert_eq!(
        docs,
        [
            ("a.noma", "modified"),
            ("b.noma", "modified"),
            ("c.noma", "removed"),
            ("e.noma", "added")
        ]
    );
    let counts = &doc(&v, "a.noma")["counts"];
    assert_eq!(
        (
            counts["added"].as_u64(),
            counts["modified"].as_u64(),
            counts["removed"].as_u64()
        ),
        (Some(1), Some(1), Some(1))
    );
    let v = noma_json(d, &["changed", "--base", "main", "--format", "json"]);
    let t = triples(&v);
    assert!(
        t.contains(&("c.noma".into(), "gamma".into(), "removed".into())),
        "{t:?}"
    );
    assert!(
        t.contains(&("e.noma".into(), "echo".into(), "added".into())),
        "{t:?}"
    );
    // Only top-level blocks of an added document are listed.
    assert_eq!(doc(&v, "e.noma")["blocks"].as_array().unwrap().len(), 1);

    // An unstaged edit counts.
    edit(d, "b.noma", "Details text.", "Details text, unstaged.");
    let v = noma_json(
        d,
        &["changed", "--base", "main", "--format", "json", "b.noma"],
    );
    assert_eq!(
        triples(&v),
        set(&[
            ("b.noma", "b1", "modified"),
            ("b.noma", "details", "modified")
        ])
    );

    // files / exclude filters.
    let v = noma_json(
        d,
        &[
            "changed", "--base", "main", "--format", "json", "c.noma", "e.noma",
        ],
    );
    let paths: Vec<_> = v["docs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["path"].clone())
        .collect();
    assert_eq!(paths, ["c.noma", "e.noma"]);
    let v = noma_json(
        d,
        &[
            "changed",
            "--base",
            "main",
            "--exclude",
            "[ab].noma",
            "--exclude",
            "e*",
            "--format",
            "json",
        ],
    );
    let paths: Vec<_> = v["docs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["path"].clone())
        .collect();
    assert_eq!(paths, ["c.noma"]);
    assert_eq!(
        v["excluded"],
        serde_json::json!(["a.noma", "b.noma", "e.noma"])
    );

    // mark_reconciled, then the blocks are skipped until they change again.
    let m = noma_json(
        d,
        &[
            "changed",
            "--base",
            "main",
            "--mark-reconciled",
            "a.noma",
            "--format",
            "json",
        ],
    );
    assert_eq!(m["updated"], 4);
    let v = noma_json(d, &["changed", "--base", "main", "--format", "json"]);
    let a = doc(&v, "a.noma");
    assert_eq!(a["blocks"], serde_json::json!([]));
    let skipped: BTreeSet<_> = a["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    assert_eq!(skipped, BTreeSet::from(["a1", "a3", "a4-new", "a5"]));
    assert_eq!(a["counts"]["skipped"], 4);
    edit(d, "a.noma", "Claim five.", "Claim five, again.");
    let v = noma_json(
        d,
        &["changed", "--base", "main", "--format", "json", "a.noma"],
    );
    assert_eq!(triples(&v), set(&[("a.noma", "a5", "added")]));
    assert_eq!(doc(&v, "a.noma")["skipped"].as_array().unwrap().len(), 3);
    // bypass_cache ignores the marks.
    let v = noma_json(
        d,
        &[
            "changed",
            "--base",
            "main",
            "--bypass-cache",
            "--format",
            "json",
            "a.noma",
        ],
    );
    assert_eq!(triples(&v).len(), 4);

    // snapshot_state: a committable baseline.
    let s = noma_json(d, &["changed", "--snapshot", "--format", "json"]);
    assert_eq!(s["docs"], 1);
    assert_eq!(s["blocks"], 4);
    let head = cmd(d, "git", &["rev-parse", "HEAD"]);
    let head = String::from_utf8_lossy(&head.stdout).trim().to_string();
    let file: Value =
        serde_json::from_slice(&std::fs::read(d.join(".noma/reconciliation_state.json")).unwrap())
            .unwrap();
    assert_eq!(file["version"], 1);
    assert_eq!(file["git_hash"], head.as_str());
    let a_bytes = std::fs::read(d.join("a.noma")).unwrap();
    assert_eq!(
        file["docs"]["a.noma"]["sha256"],
        noma_core::doc::hash::sha256_hex(&a_bytes)
    );
    let ids: Vec<_> = file["docs"]["a.noma"]["blocks"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(ids, ["a1", "a3", "a4-new", "a5"], "sorted keys");
    assert_eq!(
        file["docs"]["a.noma"]["blocks"]["a1"],
        serde_json::json!([noma_core::doc::hash::sha256_hex(
            b"::claim{id=\"a1\"}\nClaim one, patched.\n::"
        )])
    );

    // Clearing the local marks keeps the committed baseline in force;
    // a corrupt local store is a notice, not a failure.
    let c = noma_json(d, &["changed", "--clear", "--format", "json"]);
    assert_eq!(c["cleared"], true);
    std::fs::write(d.join(".noma/cache/reconciled.json"), b"{broken").unwrap();
    let o = noma(
        d,
        &["changed", "--base", "main", "--format", "json", "a.noma"],
    );
    assert!(o.status.success(), "{}", all(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("notice"),
        "{}",
        all(&o)
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(triples(&v), set(&[("a.noma", "a5", "added")]));
}

#[test]
fn concurrent_marks_are_all_kept() {
    // Each run reads the store, adds its document's marks and replaces the
    // file: without the store's lock, runs that overlap lose each other's.
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    git(d, &["init", "-q", "-b", "main"]);
    write(d, ".gitignore", ".noma/cache/\n");
    let names: Vec<String> = (0..12).map(|i| format!("d{i}.noma")).collect();
    for (i, name) in names.iter().enumerate() {
        write(
            d,
            name,
            &format!("# D{i}\n\n::claim{{id=\"c{i}\"}}\nOld.\n::\n"),
        );
    }
    git(d, &["add", "-A"]);
    git(d, &["commit", "-q", "-m", "base"]);
    for name in &names {
        edit(d, name, "Old.", "New.");
    }
    let runs: Vec<_> = names
        .iter()
        .map(|name| {
            let d = d.to_path_buf();
            let name = name.clone();
            std::thread::spawn(move || {
                noma(
                    &d,
                    &["changed", "--base", "main", "--mark-reconciled", &name],
                )
            })
        })
        .collect();
    for run in runs {
        let o = run.join().unwrap();
        assert!(o.status.success(), "{}", all(&o));
    }
    let store: Value =
        serde_json::from_slice(&std::fs::read(d.join(".noma/cache/reconciled.json")).unwrap())
            .unwrap();
    let marked: BTreeSet<&str> = store["docs"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(marked, names.iter().map(String::as_str).collect());
}

#[test]
fn errors_exit_2_with_a_clear_message() {
    let tmp = setup();
    let d = tmp.path();
    let o = noma(d, &["changed", "--base", "no-such-branch"]);
    assert_eq!(o.status.code(), Some(2), "{}", all(&o));
    assert!(
        all(&o).contains("`no-such-branch` is not a revision of this repository"),
        "{}",
        all(&o)
    );
    assert!(o.stdout.is_empty());
    for bad in ["../x.noma", "/etc/x.noma", "missing.noma", "a.txt"] {
        let o = noma(d, &["changed", "--base", "main", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", all(&o));
        assert!(all(&o).contains(bad), "{bad}: {}", all(&o));
    }
    let o = noma(d, &["changed", "--base", "main", "--exclude", "a["]);
    assert_eq!(o.status.code(), Some(2), "{}", all(&o));
    assert!(all(&o).contains("bad exclude pattern"), "{}", all(&o));

    let plain = tempfile::tempdir().unwrap();
    let o = noma(plain.path(), &["changed", "--base", "main"]);
    assert_eq!(o.status.code(), Some(2), "{}", all(&o));
    assert!(all(&o).contains("not a git repository"), "{}", all(&o));
}

//! `noma reconcile` of a PR that touches many documents shares its
//! repository handle, its blob reads and its cache across them: each
//! document's report must be the one a PR of that document alone gets, and
//! a rerun against the filled cache must answer the same.

use crate::common::{text, Repo};

fn doc(name: &str) -> String {
    format!("# Doc {name}\n\n::note{{id=\"a\"}}\nalpha {name}\n::\n\n::note{{id=\"b\"}}\nbeta {name}\n::\n")
}

fn patch(r: &Repo, name: &str, id: &str, body: &str) {
    let op = serde_json::json!({"op": "replace_body", "id": id, "content": body}).to_string();
    let path = format!("{name}.noma");
    let o = r.noma(&["patch", &path, "--inplace", "--op", &op]);
    assert!(o.status.success(), "patch {name}: {}", text(&o));
}

fn reconcile(r: &Repo) -> serde_json::Value {
    let o = r.noma(&["reconcile", "--base", "main", "--format", "json"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", text(&o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", text(&o)))
}

/// Documents `a`..`e` with transcripts on main; the PR appends to `a`
/// and (twice) `b`, appends to `c` and `e` while main appends to them too
/// (`e` on the same block: a conflict), and edits `d` after its record.
fn many() -> Repo {
    many_and(&[])
}

/// [`many`] with the documents `more` on main too, each of the PR's
/// plain appends.
fn many_and(more: &[&str]) -> Repo {
    let r = Repo::init();
    r.write(".gitignore", ".noma/cache/\n");
    for n in ["a", "b", "c", "d", "e"].iter().chain(more) {
        r.write(&format!("{n}.noma"), &doc(n));
        patch(&r, n, "a", &format!("first {n}"));
    }
    r.commit_all("documents with transcripts");
    r.ok(&["checkout", "-q", "-b", "pr"]);
    for n in more {
        patch(&r, n, "b", &format!("pr {n}"));
    }
    patch(&r, "a", "b", "pr a");
    patch(&r, "b", "b", "pr b");
    patch(&r, "b", "a", "pr b again");
    patch(&r, "c", "b", "pr c");
    patch(&r, "d", "b", "pr d");
    r.write(
        "d.noma",
        &r.read("d.noma").replace("pr d", "edited by hand"),
    );
    patch(&r, "e", "b", "pr e");
    r.commit_all("the PR");
    r.ok(&["checkout", "-q", "main"]);
    patch(&r, "c", "a", "main c");
    patch(&r, "e", "b", "main e");
    r.commit_all("main moves on");
    r.ok(&["checkout", "-q", "pr"]);
    r
}

#[test]
fn each_documents_report_is_the_one_its_own_pr_gets() {
    let r = many();
    std::fs::remove_dir_all(r.path().join(".noma/cache")).ok();
    let whole = reconcile(&r);
    let docs = whole["documents"].as_array().expect("documents");
    let paths: Vec<&str> = docs.iter().map(|d| d["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["a.noma", "b.noma", "c.noma", "d.noma", "e.noma"]);
    // The mix this test is about: a plain append, the base moved, a
    // divergence, a conflict.
    assert_eq!(docs[1]["branch_records"], 2, "{whole:#}");
    assert_eq!(docs[2]["base_records"], 1, "{whole:#}");
    assert_eq!(docs[3]["replays"], false, "{whole:#}");
    assert_eq!(docs[4]["rebases"], false, "{whole:#}");
    assert_eq!(reconcile(&r), whole, "a rerun on the filled cache");
    let fork = r.ok(&["merge-base", "main", "pr"]);
    for (i, d) in paths.iter().enumerate() {
        let t = format!("{d}.patches");
        r.ok(&["checkout", "-q", "-b", &format!("only-{i}"), fork.trim()]);
        r.ok(&["checkout", "pr", "--", d, &t]);
        r.commit_all(&format!("only {d}"));
        for cache in ["cold", "warm"] {
            if cache == "cold" {
                std::fs::remove_dir_all(r.path().join(".noma/cache")).ok();
            }
            let alone = reconcile(&r);
            assert_eq!(
                alone["documents"],
                serde_json::json!([docs[i]]),
                "{d} alone ({cache})"
            );
        }
    }
}

/// `noma reconcile` with `args` added: its exit code and output.
fn reconcile_with(r: &Repo, args: &[&str]) -> (Option<i32>, String) {
    let mut all = vec!["reconcile", "--base", "main"];
    all.extend_from_slice(args);
    let o = r.noma(&all);
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
    )
}

/// Documents checked by several threads are reported as one thread
/// reports them: same order, same verdicts, same bytes in every format,
/// cold and warm.
#[test]
fn the_report_is_the_same_whatever_the_number_of_threads() {
    // More documents than threads, so that each thread checks several:
    // plain appends after the mixed five, one edited by hand.
    let more: Vec<String> = (0..20).map(|i| format!("m{i:02}")).collect();
    let r = many_and(&more.iter().map(String::as_str).collect::<Vec<_>>());
    r.write("m04.noma", &r.read("m04.noma").replace("pr m04", "by hand"));
    r.commit_all("the PR's second part");
    for format in ["json", "human", "github", "sarif", "markdown"] {
        for cache in ["cold", "warm"] {
            if cache == "cold" {
                std::fs::remove_dir_all(r.path().join(".noma/cache")).ok();
            }
            let one = reconcile_with(&r, &["--format", format, "--jobs", "1"]);
            assert_eq!(one.0, Some(1), "{format}: the divergences fail the check");
            for jobs in [["--jobs", "3"], ["--jobs", "64"]] {
                if cache == "cold" {
                    std::fs::remove_dir_all(r.path().join(".noma/cache")).ok();
                }
                let many = reconcile_with(&r, &[&["--format", format], &jobs[..]].concat());
                assert_eq!(many, one, "{format}, {cache}, {jobs:?}");
            }
            if cache == "cold" {
                std::fs::remove_dir_all(r.path().join(".noma/cache")).ok();
            }
            assert_eq!(
                reconcile_with(&r, &["--format", format]),
                one,
                "{format}, {cache}, default"
            );
        }
    }
    let (_, json) = reconcile_with(&r, &["--format", "json", "--jobs", "4"]);
    let v: serde_json::Value = serde_json::from_str(&json).expect("json");
    let docs = v["documents"].as_array().expect("documents");
    assert_eq!(docs.len(), 25, "a..e and m00..m19: {v:#}");
    let m04 = docs.iter().find(|d| d["path"] == "m04.noma").expect("m04");
    assert_eq!(m04["replays"], false, "{m04:#}");
}

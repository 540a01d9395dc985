//! "What changed since main", as a branch is kept up to date: `noma
//! changed --base main` and the MCP tool `get_changed_blocks` report only
//! the branch's own blocks after `git merge main` (GitHub's "Update
//! branch"), after `git rebase main`, and in a linked worktree. Real `git`,
//! hooks installed, every commit through them.

use serde_json::{json, Value};

use crate::common::{text, McpClient, Repo};

const DOC: &str = "# Plan\n\n::note{id=\"a\"}\nalpha\n::\n\n::note{id=\"b\"}\nbeta\n::\n\n::note{id=\"c\"}\ngamma\n::\n";

/// One agent edit of block `id` in `plan.noma`, committed.
fn edit(r: &Repo, id: &str, body: &str) {
    let op = json!({"op": "replace_body", "id": id, "content": body}).to_string();
    r.agent_patch("plan.noma", &op);
    r.commit_all(&format!("edit {id}"));
}

/// `(id, change)` of every changed block, from a changed-blocks answer.
fn blocks(answer: &Value) -> Vec<(String, String)> {
    let docs = answer["docs"].as_array().cloned().unwrap_or_default();
    docs.iter()
        .flat_map(|d| d["blocks"].as_array().cloned().unwrap_or_default())
        .map(|b| {
            let s = |k: &str| b[k].as_str().unwrap_or("").to_string();
            (s("id"), s("change"))
        })
        .collect()
}

/// The CLI's and the MCP tool's answers agree; returns the blocks.
fn changed_since_main(r: &Repo) -> Vec<(String, String)> {
    let o = r.noma(&["changed", "--base", "main", "--format", "json"]);
    assert!(o.status.success(), "noma changed: {}", text(&o));
    let cli: Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut mcp = McpClient::start(r.path());
    let over_mcp = mcp.ok("get_changed_blocks", json!({"base_branch": "main"}));
    mcp.finish();
    assert_eq!(blocks(&over_mcp), blocks(&cli), "{over_mcp:#}");
    blocks(&cli)
}

fn modified(id: &str) -> Vec<(String, String)> {
    vec![(id.to_string(), "modified".to_string())]
}

#[test]
fn changed_blocks_follow_the_branch_through_merge_from_main_rebase_and_a_worktree() {
    let r = Repo::with_genesis_record(DOC);

    r.ok(&["checkout", "-q", "-b", "feat"]);
    edit(&r, "b", "BETA");
    r.ok(&["checkout", "-q", "main"]);
    edit(&r, "a", "ALPHA");
    r.ok(&["checkout", "-q", "feat"]);
    assert_eq!(changed_since_main(&r), modified("b"), "before updating");

    // "Update branch": main merged into the branch; main's edit of `a` is
    // now on both sides and not the branch's change.
    let o = r.git(&["merge", "--no-edit", "main"]);
    assert!(o.status.success(), "merge main: {}", text(&o));
    assert_eq!(
        changed_since_main(&r),
        modified("b"),
        "after git merge main"
    );

    // The same branch rebased instead.
    r.ok(&["reset", "-q", "--hard", "HEAD~1"]);
    let o = r.git(&["rebase", "main"]);
    assert!(o.status.success(), "rebase main: {}", text(&o));
    assert_eq!(
        changed_since_main(&r),
        modified("b"),
        "after git rebase main"
    );

    // A linked worktree on its own branch answers for its own checkout.
    let w = Repo {
        dir: tempfile::tempdir().unwrap(),
        home: tempfile::tempdir().unwrap(),
    };
    let wt = w.path().to_str().unwrap().to_string();
    r.ok(&["worktree", "add", "-q", "-b", "wt", &wt, "main"]);
    edit(&w, "c", "GAMMA");
    assert_eq!(changed_since_main(&w), modified("c"), "in the worktree");
    assert_eq!(changed_since_main(&r), modified("b"), "the main checkout");
}

/// A CI checkout or a PR bot's clone often has `origin/main` and no local
/// `main`: `--base main` (and the MCP `base_branch: "main"`) then means
/// the remote's, as `git checkout main` would. Two remotes with a `main`
/// are ambiguous and refused.
#[test]
fn a_base_with_no_local_branch_is_the_remote_tracking_one() {
    let r = Repo::with_genesis_record(DOC);
    let remotes = tempfile::tempdir().unwrap();
    for name in ["origin", "upstream"] {
        let url = remotes.path().join(name);
        r.ok(&["init", "-q", "--bare", url.to_str().unwrap()]);
        r.ok(&["remote", "add", name, url.to_str().unwrap()]);
    }
    r.ok(&["checkout", "-q", "-b", "feat"]);
    edit(&r, "b", "BETA");
    r.ok(&["checkout", "-q", "main"]);
    edit(&r, "a", "ALPHA");
    r.ok(&["push", "-q", "origin", "main"]);
    r.ok(&["checkout", "-q", "feat"]);
    r.ok(&["branch", "-q", "-D", "main"]);

    assert_eq!(changed_since_main(&r), modified("b"), "origin/main as main");
    let o = r.noma(&["reconcile", "--base", "main"]);
    assert!(o.status.success(), "reconcile: {}", text(&o));

    r.ok(&["push", "-q", "upstream", "origin/main:refs/heads/main"]);
    r.ok(&["fetch", "-q", "upstream"]);
    let o = r.noma(&["changed", "--base", "main"]);
    assert!(!o.status.success(), "two remotes' main: {}", text(&o));
    assert!(text(&o).contains("several remotes have it"), "{}", text(&o));
}

/// A clone of `r` over `file://` (so that `--depth` and `--filter` apply),
/// made with `args`.
fn clone_of(r: &Repo, args: &[&str]) -> Repo {
    let ci = Repo {
        dir: tempfile::tempdir().unwrap(),
        home: tempfile::tempdir().unwrap(),
    };
    let url = format!("file://{}", r.path().display());
    let dest = ci.path().to_str().unwrap();
    ci.ok(&[&["clone", "-q"][..], args, &[&url, dest]].concat());
    ci
}

/// A CI checkout is shallow by default: the merge base is missing, and
/// both `noma changed` and `noma reconcile` say that the clone is shallow
/// and how to fetch the history, instead of only "no merge base".
#[test]
fn a_shallow_clone_is_named_as_the_reason_for_a_missing_merge_base() {
    let r = Repo::with_genesis_record(DOC);
    r.ok(&["checkout", "-q", "-b", "feat"]);
    edit(&r, "b", "BETA");
    r.ok(&["checkout", "-q", "main"]);
    edit(&r, "a", "ALPHA");
    let ci = clone_of(&r, &["--depth", "1", "--branch", "feat"]);
    ci.ok(&[
        "fetch",
        "-q",
        "--depth",
        "1",
        "origin",
        "main:refs/remotes/origin/main",
    ]);
    for args in [
        &["changed", "--base", "main"][..],
        &["reconcile", "--base", "origin/main"][..],
    ] {
        let o = ci.noma(args);
        assert!(!o.status.success(), "{args:?}: {}", text(&o));
        assert!(
            text(&o).contains("git fetch --unshallow"),
            "{args:?}: {}",
            text(&o)
        );
    }
    ci.ok(&["fetch", "-q", "--unshallow"]);
    let o = ci.noma(&["changed", "--base", "main"]);
    assert!(o.status.success(), "after fetching: {}", text(&o));
}

/// A blobless partial clone (`git clone --filter=blob:none`, a common CI
/// and monorepo set-up) holds only the blobs it checked out. libgit2 cannot
/// fetch the others from the remote, so `noma changed`, `noma reconcile`
/// and `noma replay`, which read older versions, failed with "object not
/// found" or found no base. They now get missing blobs through `git`.
#[test]
fn a_blobless_partial_clone_reads_older_versions_through_git() {
    // No genesis record: replay must find the first committed version.
    let r = Repo::init();
    assert!(r.noma(&["init"]).status.success());
    r.write("plan.noma", DOC);
    r.commit_all("plan");
    r.ok(&["config", "uploadpack.allowFilter", "true"]);
    r.ok(&["config", "uploadpack.allowAnySHA1InWant", "true"]);
    r.ok(&["checkout", "-q", "-b", "feat"]);
    edit(&r, "b", "BETA");
    edit(&r, "c", "GAMMA");
    r.ok(&["checkout", "-q", "main"]);
    edit(&r, "a", "ALPHA");
    let ci = clone_of(&r, &["--filter=blob:none", "--branch", "feat"]);
    // The clone is partial: the first version of the document is missing.
    let old = ci.ok(&["rev-parse", "HEAD~2:plan.noma"]);
    let missing = ci.ok(&["rev-list", "--objects", "--missing=print", "HEAD"]);
    assert!(
        missing.lines().any(|l| l == format!("?{}", old.trim())),
        "the base version must be missing locally: {missing}"
    );
    let o = ci.noma(&["changed", "--base", "HEAD~2"]);
    assert!(o.status.success(), "changed: {}", text(&o));
    assert!(text(&o).contains("modified b"), "{}", text(&o));
    let o = ci.noma(&["reconcile", "--base", "origin/main"]);
    assert!(o.status.success(), "reconcile: {}", text(&o));
    let o = ci.noma(&["replay", "plan.noma"]);
    assert!(o.status.success(), "replay: {}", text(&o));
}

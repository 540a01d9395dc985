//! A document's history follows its content, not its path.
//! Renamed, copied and new documents replay in a fresh clone, merge with
//! patches of the same document on another branch, and pass `noma
//! reconcile --base main`; a patch through a symlink is refused (the
//! target patches); `git revert -n` and `git am` meet the hook as their plain forms
//! do. Real `git` CLI throughout, with the hooks and driver installed.

use crate::common::{assert_ran, text, Repo};

const DOC: &str = "# Plan\n\n::note{id=\"a\"}\nalpha\n::\n\n::note{id=\"b\"}\nbeta\n::\n\n::note{id=\"c\"}\ngamma\n::\n";

fn body(id: &str, content: &str) -> String {
    serde_json::json!({"op": "replace_body", "id": id, "content": content}).to_string()
}

/// Hooks and driver installed; `doc.noma` committed on main, then three
/// agent patches of it committed (its transcript starts at the committed
/// document, found by content in history). Three records, so that git's
/// rename detection (50% similar) pairs a moved transcript that gained a
/// record on the way; see `a_short_transcript_moved_and_extended`.
fn setup() -> Repo {
    setup_with(3)
}

/// [`setup`] with `records` (1 to 3) agent patches of block `a`, the last
/// one writing `A1`.
fn setup_with(records: usize) -> Repo {
    let r = Repo::init();
    assert_ran(&r.noma(&["hooks", "install"]));
    r.write("doc.noma", DOC);
    r.commit_all("base");
    for v in &["A-1", "A0", "A1"][3 - records..] {
        r.agent_patch("doc.noma", &body("a", v));
        r.commit_all(&format!("patch a: {v}"));
    }
    r
}

/// `noma reconcile --base main`: exit code and the JSON report.
fn reconcile(r: &Repo) -> (Option<i32>, serde_json::Value) {
    let o = r.noma(&["reconcile", "--base", "main", "--format", "json"]);
    let v = serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", text(&o)));
    (o.status.code(), v)
}

/// `noma replay DOC` passes.
fn replays(r: &Repo, doc: &str) {
    let o = r.noma(&["replay", doc]);
    assert!(o.status.success(), "replay {doc}: {}", text(&o));
}

/// A fresh `git clone` of `r`, with its own HOME.
fn fresh_clone(r: &Repo) -> Repo {
    let c = Repo::init();
    std::fs::remove_dir_all(c.path().join(".git")).unwrap();
    let url = format!("file://{}", r.path().display());
    let o = c.cmd("git", &["clone", "-q", &url, "."]);
    assert!(o.status.success(), "clone: {}", text(&o));
    c.ok(&["config", "user.name", "Tester"]);
    c.ok(&["config", "user.email", "t@example.com"]);
    c
}

fn rename(r: &Repo, from: &str, to: &str) {
    r.ok(&["mv", from, to]);
    r.ok(&["mv", &format!("{from}.patches"), &format!("{to}.patches")]);
}

#[test]
fn a_rename_only_branch_passes_reconcile() {
    let r = setup();
    r.ok(&["checkout", "-q", "-b", "feat"]);
    rename(&r, "doc.noma", "renamed.noma");
    r.commit_all("rename");
    let (code, v) = reconcile(&r);
    assert_eq!(code, Some(0), "{v:#}");
    replays(&r, "renamed.noma");
    // And with an agent's patch after the rename.
    r.agent_patch("renamed.noma", &body("b", "B1"));
    r.commit_all("patch b after the rename");
    let (code, v) = reconcile(&r);
    assert_eq!(code, Some(0), "{v:#}");
    let c = fresh_clone(&r);
    c.ok(&["checkout", "-q", "feat"]);
    replays(&c, "renamed.noma");
}

/// The ways a renaming branch `feat` meets main, which patched the same
/// document under its old name.
const WAYS: [&str; 3] = [
    "merge feat into main",
    "merge main into feat",
    "rebase feat onto main",
];

fn meet(r: &Repo, how: &str) -> std::process::Output {
    match how {
        "merge feat into main" => {
            r.ok(&["checkout", "-q", "main"]);
            r.git(&["merge", "--no-edit", "feat"])
        }
        "merge main into feat" => {
            r.ok(&["checkout", "-q", "feat"]);
            r.git(&["merge", "--no-edit", "main"])
        }
        "rebase feat onto main" => {
            r.ok(&["checkout", "-q", "feat"]);
            r.git(&["rebase", "main"])
        }
        _ => panic!("no such way: {how}"),
    }
}

/// `patch`: none, in a commit after the move's, or in the move's commit.
#[derive(Clone, Copy, PartialEq)]
enum Patch {
    None,
    Later,
    SameCommit,
}

fn rename_meets_a_patch_on_main(patch: Patch) {
    let patch_after_rename = patch != Patch::None;
    for how in WAYS {
        // A moved transcript that gains a record needs a few before it for
        // git to pair it (see the short-transcript test below); a pure move
        // is paired at any length, so that case starts from one record.
        let r = setup_with(if patch_after_rename { 3 } else { 1 });
        r.ok(&["checkout", "-q", "-b", "feat"]);
        rename(&r, "doc.noma", "renamed.noma");
        if patch == Patch::Later {
            r.commit_all("rename");
        }
        if patch_after_rename {
            r.agent_patch("renamed.noma", &body("b", "B1"));
        }
        r.commit_all("patch b (and the move, or after it)");
        r.ok(&["checkout", "-q", "main"]);
        r.agent_patch("doc.noma", &body("c", "C1"));
        r.commit_all("patch c on main");
        let o = meet(&r, how);
        assert!(o.status.success(), "{how}: {}", text(&o));
        let st = r.ok(&["status", "--porcelain"]);
        assert!(st.trim().is_empty(), "{how}: not clean: {st}");
        assert!(!r.path().join("doc.noma").exists(), "{how}: old name back");
        let doc = r.read("renamed.noma");
        assert!(doc.contains("A1") && doc.contains("C1"), "{how}: {doc}");
        if patch_after_rename {
            assert!(doc.contains("B1"), "{how}: {doc}");
        }
        replays(&r, "renamed.noma");
        let c = fresh_clone(&r);
        c.ok(&["checkout", "-q", "feat"]);
        c.ok(&["checkout", "-q", "main"]);
        let head = r.ok(&["rev-parse", "--abbrev-ref", "HEAD"]);
        c.ok(&["checkout", "-q", head.trim()]);
        replays(&c, "renamed.noma");
    }
}

#[test]
fn a_rename_on_a_branch_merges_with_a_patch_on_main_every_way() {
    rename_meets_a_patch_on_main(Patch::None);
}

#[test]
fn a_rename_and_a_patch_on_a_branch_merge_with_a_patch_on_main_every_way() {
    rename_meets_a_patch_on_main(Patch::Later);
}

/// The document's state at the merge base never existed under the new
/// name: only a lookup by content finds it for the driver.
#[test]
fn a_rename_with_a_patch_in_one_commit_merges_with_a_patch_on_main_every_way() {
    rename_meets_a_patch_on_main(Patch::SameCommit);
}

#[test]
fn a_new_document_patched_before_its_first_commit_replays_in_a_clone() {
    let r = setup();
    r.ok(&["checkout", "-q", "-b", "feat"]);
    r.write("new.noma", DOC);
    r.agent_patch("new.noma", &body("b", "B-new"));
    r.commit_all("a new document, patched by an agent");
    replays(&r, "new.noma");
    let (code, v) = reconcile(&r);
    assert_eq!(code, Some(0), "{v:#}");
    let c = fresh_clone(&r);
    c.ok(&["checkout", "-q", "feat"]);
    replays(&c, "new.noma");
    let (code, v) = reconcile(&c);
    assert_eq!(code, Some(0), "{v:#}");
}

#[test]
fn a_copied_document_patched_before_its_first_commit_replays_in_a_clone() {
    let r = setup();
    r.ok(&["checkout", "-q", "-b", "feat"]);
    std::fs::copy(r.path().join("doc.noma"), r.path().join("copy.noma")).unwrap();
    r.agent_patch("copy.noma", &body("c", "C-copy"));
    r.commit_all("a copy, patched by an agent");
    replays(&r, "copy.noma");
    let (code, v) = reconcile(&r);
    assert_eq!(code, Some(0), "{v:#}");
    let c = fresh_clone(&r);
    c.ok(&["checkout", "-q", "feat"]);
    replays(&c, "copy.noma");
    let (code, v) = reconcile(&c);
    assert_eq!(code, Some(0), "{v:#}");
}

/// A transcript whose base exists nowhere (written outside the repository
/// and committed past the hook): replay rejects it, and so must the hook
/// and reconcile.
#[test]
fn a_transcript_whose_base_is_nowhere_is_refused_by_hook_and_reconcile() {
    let r = setup();
    r.ok(&["checkout", "-q", "-b", "feat"]);
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(
        outside.path().join("lost.noma"),
        DOC.replace("alpha", "never"),
    )
    .unwrap();
    let o = r.cmd(
        crate::common::NOMA,
        &[
            "patch",
            outside.path().join("lost.noma").to_str().unwrap(),
            "--inplace",
            "--op",
            &body("b", "B-lost"),
        ],
    );
    assert_ran(&o);
    for f in ["lost.noma", "lost.noma.patches"] {
        std::fs::copy(outside.path().join(f), r.path().join(f)).unwrap();
    }
    r.ok(&["add", "-A"]);
    let (ok, out) = r.try_commit("a transcript from nowhere");
    assert!(!ok, "the hook let it through: {out}");
    assert!(out.contains("transcript-base-unknown"), "{out}");
    assert!(out.contains("fix:"), "no fix named: {out}");
    r.ok(&["commit", "-q", "--no-verify", "-m", "past the hook"]);
    let o = r.noma(&["replay", "lost.noma"]);
    assert!(!o.status.success(), "replay: {}", text(&o));
    let (code, v) = reconcile(&r);
    assert_eq!(code, Some(1), "{v:#}");
    let d = v["documents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["path"] == "lost.noma")
        .unwrap_or_else(|| panic!("{v:#}"));
    assert_eq!(d["replays"], false, "{v:#}");
}

/// A patch through a symlinked document is refused (noma writes no file
/// through a link, see `write_containment`): nothing is written beside the
/// link or to its target, and patching the target itself works.
#[cfg(unix)]
#[test]
fn a_patch_through_a_symlink_is_refused_and_the_target_patches() {
    let r = setup();
    std::os::unix::fs::symlink("doc.noma", r.path().join("link.noma")).unwrap();
    let op = body("b", "B-link");
    let o = r.noma(&["patch", "link.noma", "--inplace", "--op", &op]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("symbolic link to doc.noma"),
        "{}",
        text(&o)
    );
    assert!(!r.path().join("link.noma.patches").exists());
    assert!(!r.read("doc.noma").contains("B-link"));
    r.agent_patch("doc.noma", &op);
    std::fs::remove_file(r.path().join("link.noma")).unwrap();
    r.commit_all("patched the target");
    replays(&r, "doc.noma");
}

/// `git revert -n HEAD && git commit` cuts the transcript as `git revert
/// HEAD` does, and the hook treats both alike.
#[test]
fn revert_without_commit_passes_like_revert() {
    for plain in [true, false] {
        let r = setup();
        r.agent_patch("doc.noma", &body("b", "B1"));
        r.commit_all("patch b");
        if plain {
            let o = r.git(&["revert", "--no-edit", "HEAD"]);
            assert!(o.status.success(), "revert: {}", text(&o));
        } else {
            r.ok(&["revert", "-n", "HEAD"]);
            let (ok, out) = r.try_commit("revert -n");
            assert!(ok, "revert -n refused: {out}");
        }
        assert!(!r.read("doc.noma").contains("B1"));
        replays(&r, "doc.noma");
    }
}

/// `git am` of an agent-patch commit once main's transcript moved used to
/// stop (the appended line no longer applies textually) with no hint that
/// `git am -3` works: the install sets `am.threeWay` (unless the user set
/// it), so plain `git am` merges three-way, through the driver.
#[test]
fn git_am_of_an_agent_patch_applies_three_way() {
    let r = setup();
    assert_eq!(r.ok(&["config", "am.threeWay"]).trim(), "true");
    r.ok(&["checkout", "-q", "-b", "feat"]);
    r.agent_patch("doc.noma", &body("b", "B1"));
    r.commit_all("patch b");
    let mbox = r.ok(&["format-patch", "-1", "--stdout"]);
    r.write(".git/b.mbox", &mbox);
    r.ok(&["checkout", "-q", "main"]);
    r.agent_patch("doc.noma", &body("c", "C1"));
    r.commit_all("patch c");
    let o = r.git(&["am", ".git/b.mbox"]);
    assert!(o.status.success(), "am: {}", text(&o));
    let doc = r.read("doc.noma");
    assert!(doc.contains("B1") && doc.contains("C1"), "{doc}");
    replays(&r, "doc.noma");
    // A user's own setting is left alone.
    r.ok(&["config", "am.threeWay", "false"]);
    assert_ran(&r.noma(&["hooks", "install"]));
    assert_eq!(r.ok(&["config", "am.threeWay"]).trim(), "false");
}

/// A transcript of one record, moved and extended on a branch, is less
/// than 50% like its old self: git's rename detection does not pair it,
/// and merging main's patch of the old path stops on a modify/delete
/// conflict of the old transcript (the document itself is paired and
/// merged by the driver). The route the hook then names works: keep one
/// side's transcript, and the hook names `noma repair`, which merges both
/// sides' records at the new path; commit; it replays.
#[test]
fn a_short_transcript_moved_and_extended_merges_by_the_named_route() {
    let r = setup_with(1);
    r.ok(&["checkout", "-q", "-b", "feat"]);
    rename(&r, "doc.noma", "renamed.noma");
    r.agent_patch("renamed.noma", &body("b", "B1"));
    r.commit_all("rename and patch b");
    r.ok(&["checkout", "-q", "main"]);
    r.agent_patch("doc.noma", &body("c", "C1"));
    r.commit_all("patch c on main");
    let o = r.git(&["merge", "--no-edit", "feat"]);
    assert!(!o.status.success(), "git paired it after all: {}", text(&o));
    assert!(text(&o).contains("doc.noma.patches"), "{}", text(&o));
    r.ok(&["rm", "-q", "doc.noma.patches"]);
    let (ok, out) = r.try_commit("merge feat");
    assert!(!ok, "{out}");
    assert!(
        out.contains("after line 1 "),
        "the common record is line 1: {out}"
    );
    let fix = crate::common::fix_of(&out, "transcript-fork");
    assert!(fix.starts_with("noma repair \"renamed.noma\""), "{fix}");
    assert_ran(&r.sh(&fix));
    let (ok, out) = r.try_commit("merge feat");
    assert!(ok, "{out}");
    let doc = r.read("renamed.noma");
    assert!(
        doc.contains("A1") && doc.contains("B1") && doc.contains("C1"),
        "{doc}"
    );
    replays(&r, "renamed.noma");
}

/// Over MCP too: an agent's first `patch_block` of a document no commit
/// holds opens the transcript with the tool's genesis record; the commit
/// passes the hook and the document replays in a fresh clone.
#[test]
fn an_mcp_patch_of_a_new_document_starts_with_a_genesis_record() {
    let r = setup();
    r.write("fresh.noma", DOC);
    let mut m = crate::common::McpClient::start(r.path());
    m.ok(
        "patch_block",
        serde_json::json!({"file": "fresh.noma", "op": {"op": "replace_body", "id": "b", "content": "B-mcp"}}),
    );
    m.stop();
    let t = r.read("fresh.noma.patches");
    let first: serde_json::Value = serde_json::from_str(t.lines().next().unwrap()).unwrap();
    assert_eq!(first["pre_sha256"], crate::common::EMPTY_SHA256, "{t}");
    assert_eq!(first["actor"]["kind"], "tool", "{t}");
    assert_eq!(t.lines().count(), 2, "{t}");
    r.commit_all("a new document, patched over MCP");
    let c = fresh_clone(&r);
    replays(&c, "fresh.noma");
}

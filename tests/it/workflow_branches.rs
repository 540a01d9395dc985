//! The ways branches meet with the real `git` CLI — updating a
//! branch from main and merging it back, fast-forwards, rebase,
//! `pull --rebase`, cherry-pick, `noma reconcile --write` and undoing
//! history (revert, `rebase -i` drop, picking a later commit) — with the
//! hooks and merge driver installed and agents patching through
//! `noma patch --inplace`. Every scenario ends with a clean work tree,
//! `noma replay` passing from the document's first committed content, and
//! every commit having gone through the hooks.

use crate::common::{assert_ran, fix_of, text, Repo};

const DOC: &str = "# Plan\n\n::note{id=\"a\"}\nalpha\n::\n\n::note{id=\"b\"}\nbeta\n::\n\n::note{id=\"c\"}\ngamma\n::\n\n::note{id=\"d\"}\ndelta\n::\n\n::note{id=\"e\"}\nepsilon\n::\n\n::note{id=\"f\"}\nzeta\n::\n\n::note{id=\"g\"}\neta\n::\n";

/// A repository with hooks and driver installed and `plan.noma` committed
/// on main (its first content is kept untracked in `.git/base.noma`).
fn setup() -> Repo {
    setup_with(DOC, false)
}

/// [`setup`] with another first document, optionally under
/// `core.autocrlf=true` (Git for Windows' default).
fn setup_with(doc: &str, autocrlf: bool) -> Repo {
    let r = Repo::init();
    if autocrlf {
        r.ok(&["config", "core.autocrlf", "true"]);
    }
    assert_ran(&r.noma(&["hooks", "install"]));
    r.write("plan.noma", doc);
    r.write(".git/base.noma", doc);
    r.commit_all("base");
    r
}

/// One agent edit of block `id` through `noma patch --inplace`, committed.
fn patch_commit(r: &Repo, id: &str, body: &str) {
    let op = serde_json::json!({"op": "replace_body", "id": id, "content": body}).to_string();
    r.agent_patch("plan.noma", &op);
    r.commit_all(&format!("patch {id}"));
}

/// `a` patched on main, then `b` on the branch `feat` and `c` on main;
/// `feat` checked out.
fn fork_with_main_ahead(r: &Repo) {
    patch_commit(r, "a", "A1");
    r.ok(&["checkout", "-q", "-b", "feat"]);
    patch_commit(r, "b", "B1");
    r.ok(&["checkout", "-q", "main"]);
    patch_commit(r, "c", "C1");
    r.ok(&["checkout", "-q", "feat"]);
}

/// A bare repository inside `.git` as the remote `origin`.
fn add_remote(r: &Repo) {
    let remote = r.path().join(".git").join("remote.git");
    let remote = remote.to_str().unwrap();
    r.ok(&["init", "-q", "--bare", remote]);
    r.ok(&["remote", "add", "origin", remote]);
}

/// `git merge` that must be clean (the merge commit passes the hooks).
fn merge_clean(r: &Repo, rev: &str) {
    let o = r.git(&["merge", "--no-edit", rev]);
    assert!(
        o.status.success(),
        "merge {rev} must be clean: {}",
        text(&o)
    );
}

/// The end state every scenario must reach: nothing left uncommitted, the
/// transcript replays from the first committed content, and the document
/// holds every body in `want`.
fn assert_sound(r: &Repo, want: &[&str]) {
    assert!(
        r.git(&["diff", "--quiet", "HEAD"]).status.success(),
        "work tree not clean: {}",
        r.ok(&["status", "--short"])
    );
    let o = r.noma(&["replay", "plan.noma", "--base", ".git/base.noma"]);
    assert!(o.status.success(), "replay: {}", text(&o));
    let doc = r.read("plan.noma");
    for w in want {
        assert!(doc.contains(&format!("\n{w}\n")), "{w} missing:\n{doc}");
    }
    let o = r.noma(&["check", "plan.noma"]);
    assert!(o.status.success(), "check: {}", text(&o));
}

/// Op ids in a revision's transcript.
fn op_ids(r: &Repo, rev: &str) -> Vec<String> {
    r.ok(&["show", &format!("{rev}:plan.noma.patches")])
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|v| v["op_id"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// (a) + (f): a branch updated from main twice while main moves on, then
/// merged back; `noma reconcile` is happy with the updated branch.
#[test]
fn a_update_branch_from_main_twice_then_merge_back() {
    let r = setup();
    fork_with_main_ahead(&r);
    merge_clean(&r, "main");
    r.ok(&["checkout", "-q", "main"]);
    patch_commit(&r, "d", "D1");
    r.ok(&["checkout", "-q", "feat"]);
    merge_clean(&r, "main");
    patch_commit(&r, "e", "E1");
    assert_sound(&r, &["A1", "B1", "C1", "D1", "E1"]);
    // (f) the updated branch passes `noma reconcile` against main.
    let o = r.noma(&["reconcile", "--base", "main"]);
    assert!(o.status.success(), "reconcile: {}", text(&o));
    r.ok(&["checkout", "-q", "main"]);
    patch_commit(&r, "f", "F1");
    let main_before = op_ids(&r, "HEAD");
    merge_clean(&r, "feat");
    // Main's committed lines are kept: its transcript only grew.
    assert_eq!(op_ids(&r, "HEAD")[..main_before.len()], main_before[..]);
    assert_sound(&r, &["A1", "B1", "C1", "D1", "E1", "F1"]);
    // Merging main into the branch once more is clean too.
    r.ok(&["checkout", "-q", "feat"]);
    merge_clean(&r, "main");
    assert_sound(&r, &["A1", "B1", "C1", "D1", "E1", "F1"]);
}

/// The same, but main has not moved when the branch is merged back: git
/// takes the branch's transcript (its copies of main's records replace
/// main's tail) and the pre-merge-commit hook must accept it.
#[test]
fn a_update_then_merge_back_without_main_moving() {
    let r = setup();
    fork_with_main_ahead(&r);
    merge_clean(&r, "main");
    r.ok(&["checkout", "-q", "main"]);
    let o = r.git(&["merge", "--no-ff", "--no-edit", "feat"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_sound(&r, &["A1", "B1", "C1"]);
}

/// (b): the update ends in a fast-forward of main; a second branch forked
/// from the old main is merged after it.
#[test]
fn b_fast_forward_then_branch_from_old_main() {
    let r = setup();
    patch_commit(&r, "a", "A1");
    r.ok(&["checkout", "-q", "-b", "feat"]);
    patch_commit(&r, "b", "B1");
    r.ok(&["checkout", "-q", "main"]);
    patch_commit(&r, "c", "C1");
    r.ok(&["branch", "other"]);
    r.ok(&["checkout", "-q", "feat"]);
    merge_clean(&r, "main");
    r.ok(&["checkout", "-q", "main"]);
    r.ok(&["merge", "-q", "--ff-only", "feat"]);
    r.ok(&["checkout", "-q", "other"]);
    patch_commit(&r, "d", "D1");
    r.ok(&["checkout", "-q", "main"]);
    merge_clean(&r, "other");
    assert_sound(&r, &["A1", "B1", "C1", "D1"]);
    // And the other way round: the old-main branch takes the new main.
    r.ok(&["checkout", "-q", "-b", "other2", "main~1"]);
    r.ok(&["checkout", "-q", "other"]);
    patch_commit(&r, "e", "E1");
    merge_clean(&r, "main");
    assert_sound(&r, &["A1", "B1", "C1", "D1", "E1"]);
}

/// A branch with three patch commits and a main with two more.
fn three_on_branch_two_on_main() -> Repo {
    let r = setup();
    r.ok(&["checkout", "-q", "-b", "feat"]);
    patch_commit(&r, "b", "B1");
    patch_commit(&r, "c", "C1");
    patch_commit(&r, "d", "D1");
    r.ok(&["checkout", "-q", "main"]);
    patch_commit(&r, "a", "A1");
    patch_commit(&r, "e", "E1");
    r
}

/// (c): `git rebase main`, then merging the rebased branch; and the same
/// records merged instead of rebased give the same bytes.
#[test]
fn c_rebase_onto_main() {
    let r = three_on_branch_two_on_main();
    r.ok(&["branch", "feat-merged", "main"]);
    r.ok(&["checkout", "-q", "feat"]);
    let o = r.git(&["rebase", "main"]);
    assert!(o.status.success(), "rebase must be clean: {}", text(&o));
    assert_sound(&r, &["A1", "B1", "C1", "D1", "E1"]);
    r.ok(&["checkout", "-q", "feat-merged"]);
    merge_clean(&r, "feat@{1}");
    assert_sound(&r, &["A1", "B1", "C1", "D1", "E1"]);
    assert_eq!(
        r.ok(&["show", "feat:plan.noma.patches"]),
        r.ok(&["show", "feat-merged:plan.noma.patches"]),
        "a merge and a rebase of the same records write the same transcript"
    );
    r.ok(&["checkout", "-q", "main"]);
    r.ok(&["merge", "-q", "--ff-only", "feat"]);
    assert_sound(&r, &["A1", "B1", "C1", "D1", "E1"]);
}

/// (c): `git pull --rebase` from a bare remote that gained two commits.
#[test]
fn c_pull_rebase_from_remote() {
    let r = setup();
    add_remote(&r);
    r.ok(&["push", "-q", "origin", "main"]);
    // Someone else pushes two patch commits.
    r.ok(&["checkout", "-q", "-b", "elsewhere"]);
    patch_commit(&r, "a", "A1");
    patch_commit(&r, "e", "E1");
    r.ok(&["push", "-q", "origin", "elsewhere:main"]);
    r.ok(&["checkout", "-q", "main"]);
    r.ok(&["branch", "-D", "elsewhere"]);
    patch_commit(&r, "b", "B1");
    patch_commit(&r, "c", "C1");
    patch_commit(&r, "d", "D1");
    let o = r.git(&["pull", "--rebase", "origin", "main"]);
    assert!(
        o.status.success(),
        "pull --rebase must be clean: {}",
        text(&o)
    );
    assert_sound(&r, &["A1", "B1", "C1", "D1", "E1"]);
    r.ok(&["push", "-q", "origin", "main"]);
}

/// (d): `git cherry-pick` of one patch commit.
#[test]
fn d_cherry_pick_one_patch_commit() {
    let r = setup();
    r.ok(&["checkout", "-q", "-b", "feat"]);
    patch_commit(&r, "b", "B1");
    patch_commit(&r, "c", "C1");
    r.ok(&["checkout", "-q", "main"]);
    patch_commit(&r, "a", "A1");
    let o = r.git(&["cherry-pick", "feat~1"]);
    assert!(
        o.status.success(),
        "cherry-pick must be clean: {}",
        text(&o)
    );
    assert_sound(&r, &["A1", "B1"]);
    // The rest of the branch merges after the picked commit.
    merge_clean(&r, "feat");
    assert_sound(&r, &["A1", "B1", "C1"]);
}

/// (e): `noma reconcile --write` on the branch, committed through the
/// hooks, then merged into main without a conflict.
#[test]
fn e_reconcile_write_commit_and_merge() {
    let r = setup();
    r.ok(&["checkout", "-q", "-b", "feat"]);
    patch_commit(&r, "b", "B1");
    r.ok(&["checkout", "-q", "main"]);
    patch_commit(&r, "a", "A1");
    r.ok(&["checkout", "-q", "feat"]);
    let o = r.noma(&["reconcile", "--base", "main", "--write"]);
    assert!(o.status.success(), "reconcile --write: {}", text(&o));
    r.commit_all("reconcile with main");
    assert_sound(&r, &["A1", "B1"]);
    let o = r.noma(&["reconcile", "--base", "main"]);
    assert!(o.status.success(), "reconcile after --write: {}", text(&o));
    r.ok(&["checkout", "-q", "main"]);
    patch_commit(&r, "c", "C1");
    merge_clean(&r, "feat");
    assert_sound(&r, &["A1", "B1", "C1"]);
}

/// (g): both sides editing the same block still conflict.
#[test]
fn g_same_block_still_conflicts() {
    let r = setup();
    r.ok(&["checkout", "-q", "-b", "feat"]);
    patch_commit(&r, "b", "B from feat");
    r.ok(&["checkout", "-q", "main"]);
    patch_commit(&r, "b", "B from main");
    let o = r.git(&["merge", "--no-edit", "feat"]);
    assert!(!o.status.success(), "must conflict: {}", text(&o));
    assert!(text(&o).contains("\"b\""), "{}", text(&o));
    r.ok(&["merge", "--abort"]);
    // Rebasing the same change conflicts as well.
    r.ok(&["checkout", "-q", "feat"]);
    let o = r.git(&["rebase", "main"]);
    assert!(!o.status.success(), "rebase must conflict: {}", text(&o));
    r.ok(&["rebase", "--abort"]);
}

/// A merge concluded by hand on one branch with the bytes the same merge
/// writes on the other branch (an append to the merged parent, not to
/// HEAD) passes the hooks; a textual union of the two transcripts does not.
#[test]
fn merge_resolved_with_a_successor_of_both_parents_passes_the_hook() {
    let r = setup();
    r.ok(&["checkout", "-q", "-b", "feat"]);
    patch_commit(&r, "b", "B1");
    r.ok(&["checkout", "-q", "main"]);
    patch_commit(&r, "a", "A1");
    r.ok(&["checkout", "-q", "-b", "probe"]);
    merge_clean(&r, "feat");
    let (doc, tr) = (r.read("plan.noma"), r.read("plan.noma.patches"));
    r.ok(&["checkout", "-q", "feat"]);
    r.ok(&["merge", "-q", "--no-commit", "-s", "ours", "main"]);
    let feat_t = r.ok(&["show", "feat:plan.noma.patches"]);
    let main_t = r.ok(&["show", "main:plan.noma.patches"]);
    r.write("plan.noma", &doc);
    r.write("plan.noma.patches", &format!("{feat_t}{main_t}"));
    r.ok(&["add", "-A"]);
    let o = r.git(&["commit", "-q", "--no-edit"]);
    assert!(!o.status.success(), "a union must be refused: {}", text(&o));
    r.write("plan.noma.patches", &tr);
    r.ok(&["add", "-A"]);
    r.ok(&["commit", "-q", "--no-edit"]);
    assert_sound(&r, &["A1", "B1"]);
}

/// Asserts `body` is nowhere in the document (an undone edit stays undone).
fn assert_absent(r: &Repo, body: &str) {
    let doc = r.read("plan.noma");
    assert!(
        !doc.contains(&format!("\n{body}\n")),
        "{body} is back:\n{doc}"
    );
}

/// (h) Undoing history: the merge driver reconciles three-way, so a record
/// the merge base holds and one side lacks stays removed. Cherry-picking
/// a later commit brings only its own record, not its parent's.
#[test]
fn h_cherry_pick_of_a_later_commit_brings_only_its_record() {
    let r = setup();
    r.ok(&["checkout", "-q", "-b", "feat"]);
    patch_commit(&r, "b", "B1");
    patch_commit(&r, "c", "C1");
    r.ok(&["checkout", "-q", "main"]);
    patch_commit(&r, "a", "A1");
    let o = r.git(&["cherry-pick", "feat"]);
    assert!(
        o.status.success(),
        "cherry-pick must be clean: {}",
        text(&o)
    );
    assert_sound(&r, &["A1", "beta", "C1"]);
    assert_absent(&r, "B1");
    // The skipped commit still merges in later.
    merge_clean(&r, "feat");
    assert_sound(&r, &["A1", "B1", "C1"]);
}

/// (h) `git rebase -i` dropping a patch commit: later picks must not bring
/// the dropped record back.
#[test]
fn h_rebase_dropping_a_patch_commit_keeps_it_dropped() {
    let r = setup();
    patch_commit(&r, "a", "A1");
    patch_commit(&r, "b", "B1");
    patch_commit(&r, "c", "C1");
    let o = r.git(&[
        "-c",
        "sequence.editor=sed -i 2s/^pick/drop/",
        "rebase",
        "-i",
        "HEAD~3",
    ]);
    assert!(o.status.success(), "rebase -i must be clean: {}", text(&o));
    assert_eq!(
        op_ids(&r, "HEAD").len(),
        2,
        "{}",
        r.ok(&["log", "--oneline"])
    );
    assert_sound(&r, &["A1", "beta", "C1"]);
    assert_absent(&r, "B1");
}

/// (h) `git revert` of the last patch commit is git's own business (the
/// driver is not called) and of an earlier one stops with the transcript
/// conflicted, the document merged, and a fix that completes the revert.
#[test]
fn h_revert_of_a_patch_commit_is_completed_by_recording_it() {
    let r = setup();
    patch_commit(&r, "a", "A1");
    patch_commit(&r, "b", "B1");
    patch_commit(&r, "c", "C1");
    patch_commit(&r, "d", "D1");
    let o = r.git(&["revert", "--no-edit", "HEAD"]);
    assert!(o.status.success(), "revert of HEAD: {}", text(&o));
    assert_sound(&r, &["A1", "B1", "C1", "delta"]);
    // An earlier commit (`patch b`, with `patch c` after it): undone in
    // the document, never silently dropped.
    let o = r.git(&["revert", "--no-edit", ":/patch b"]);
    assert!(!o.status.success(), "must stop: {}", text(&o));
    let out = text(&o);
    assert!(out.contains("removes 1 recorded op"), "{out}");
    assert!(out.contains("noma record \"plan.noma\""), "{out}");
    assert_absent(&r, "B1");
    let o = r.noma(&["record", "plan.noma"]);
    assert!(o.status.success(), "record: {}", text(&o));
    r.ok(&["add", "plan.noma", "plan.noma.patches"]);
    let o = r.git(&["revert", "--continue", "--no-edit"]);
    assert!(o.status.success(), "revert --continue: {}", text(&o));
    assert_sound(&r, &["A1", "beta", "C1", "delta"]);
    assert_absent(&r, "B1");
}

/// (h) Main reverts its last patch commit (git shortens the transcript);
/// a branch made before the revert is updated from main: the revert is
/// not undone by the branch's copy of the record, and after recording it
/// the branch merges back cleanly.
#[test]
fn h_updating_a_branch_from_a_main_that_reverted_keeps_the_revert() {
    let r = setup();
    patch_commit(&r, "a", "A1");
    patch_commit(&r, "b", "B1");
    r.ok(&["checkout", "-q", "-b", "feat"]);
    patch_commit(&r, "c", "C1");
    r.ok(&["checkout", "-q", "main"]);
    r.ok(&["revert", "--no-edit", "HEAD"]);
    r.ok(&["checkout", "-q", "feat"]);
    let o = r.git(&["merge", "--no-edit", "main"]);
    assert!(!o.status.success(), "must stop: {}", text(&o));
    assert!(
        text(&o).contains("noma record \"plan.noma\""),
        "{}",
        text(&o)
    );
    assert_absent(&r, "B1");
    let o = r.noma(&["record", "plan.noma"]);
    assert!(o.status.success(), "record: {}", text(&o));
    r.ok(&["add", "plan.noma", "plan.noma.patches"]);
    let o = r.git(&["commit", "-q", "--no-edit"]);
    assert!(o.status.success(), "merge commit: {}", text(&o));
    assert_sound(&r, &["A1", "beta", "C1"]);
    r.ok(&["checkout", "-q", "main"]);
    merge_clean(&r, "feat");
    assert_sound(&r, &["A1", "beta", "C1"]);
    assert_absent(&r, "B1");
}

/// (i) `git stash` of an agent's uncommitted patch, new patch commits
/// pulled in, `git stash pop`: the driver reconciles the stashed record
/// onto them and the result commits through the hooks.
#[test]
fn i_stash_pop_over_new_patch_commits() {
    let r = setup();
    patch_commit(&r, "a", "A1");
    r.ok(&["checkout", "-q", "-b", "other"]);
    patch_commit(&r, "c", "C1");
    r.ok(&["checkout", "-q", "main"]);
    let op = serde_json::json!({"op": "replace_body", "id": "b", "content": "B1"}).to_string();
    r.agent_patch("plan.noma", &op);
    r.ok(&["stash", "-q"]);
    r.ok(&["merge", "-q", "--ff-only", "other"]);
    patch_commit(&r, "d", "D1");
    let o = r.git(&["stash", "pop"]);
    assert!(o.status.success(), "stash pop must be clean: {}", text(&o));
    r.commit_all("the stashed patch");
    assert_sound(&r, &["A1", "B1", "C1", "D1"]);
}

/// (g) A rebase that conflicts on one block, resolved by hand: git runs no
/// hooks during a rebase, so `noma record` refuses to record the
/// unresolved `::conflict` block; once resolved it records the choice and
/// `git rebase --continue` finishes with a transcript that replays.
#[test]
fn g_rebase_conflict_resolved_and_recorded() {
    let r = setup();
    r.ok(&["checkout", "-q", "-b", "feat"]);
    patch_commit(&r, "b", "B from feat");
    patch_commit(&r, "c", "C1");
    r.ok(&["checkout", "-q", "main"]);
    patch_commit(&r, "b", "B from main");
    r.ok(&["checkout", "-q", "feat"]);
    let o = r.git(&["rebase", "main"]);
    assert!(!o.status.success(), "rebase must conflict: {}", text(&o));
    // The driver says what to do before `--continue`, which runs no hooks.
    assert!(
        text(&o).contains("once no ::conflict block is left, noma record \"plan.noma\""),
        "{}",
        text(&o)
    );
    let o = r.noma(&["record", "plan.noma"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("[unresolved-conflict]"), "{}", text(&o));
    assert!(text(&o).contains("nothing was recorded"), "{}", text(&o));
    // Keep the branch's version of the block.
    let resolved = r
        .ok(&["show", "main:plan.noma"])
        .replace("B from main", "B from feat");
    r.write("plan.noma", &resolved);
    let o = r.noma(&["record", "plan.noma"]);
    assert!(o.status.success(), "record: {}", text(&o));
    r.ok(&["add", "plan.noma", "plan.noma.patches"]);
    let o = r.git(&["-c", "core.editor=true", "rebase", "--continue"]);
    assert!(o.status.success(), "rebase --continue: {}", text(&o));
    assert_sound(&r, &["alpha", "B from feat", "C1"]);
    r.ok(&["checkout", "-q", "main"]);
    merge_clean(&r, "feat");
    assert_sound(&r, &["alpha", "B from feat", "C1"]);
}

/// (j) `git mv` of a document and its transcript into a folder while a
/// branch patches it at the old path. Git's rename detection misses the
/// transcript (its lines are long and unique), so the merge leaves the
/// branch's transcript at the old path; the hook names it as an old copy
/// of the moved one, the fixes it prints resolve the merge, and `noma
/// replay` finds the base committed before the move (under the path the
/// first record names).
#[test]
fn j_moving_a_document_while_a_branch_patches_it() {
    let r = setup();
    patch_commit(&r, "a", "A1");
    r.ok(&["checkout", "-q", "-b", "feat"]);
    patch_commit(&r, "c", "C1");
    r.ok(&["checkout", "-q", "main"]);
    std::fs::create_dir(r.path().join("docs")).unwrap();
    r.ok(&["mv", "plan.noma", "docs/plan.noma"]);
    r.ok(&["mv", "plan.noma.patches", "docs/plan.noma.patches"]);
    r.commit_all("move");
    let o = r.noma(&["replay", "docs/plan.noma"]);
    assert!(o.status.success(), "replay after the move: {}", text(&o));
    let op = serde_json::json!({"op": "replace_body", "id": "b", "content": "B1"}).to_string();
    r.agent_patch("docs/plan.noma", &op);
    r.commit_all("patch b");
    let o = r.git(&["merge", "--no-edit", "feat"]);
    assert!(
        !o.status.success(),
        "git leaves a modify/delete: {}",
        text(&o)
    );
    r.ok(&["add", "-A"]);
    let o = r.noma(&["hook", "pre-commit", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let findings = v["findings"].as_array().unwrap();
    let orphan = findings
        .iter()
        .find(|f| f["code"] == "transcript-orphaned")
        .unwrap_or_else(|| panic!("{findings:?}"));
    assert!(
        orphan["message"]
            .as_str()
            .unwrap()
            .contains("docs/plan.noma.patches"),
        "{orphan}"
    );
    // Each printed fix, run as a user would (`noma` on PATH).
    let bin = std::path::Path::new(crate::common::NOMA).parent().unwrap();
    let path = format!("PATH={}:{}", bin.display(), std::env::var("PATH").unwrap());
    for f in findings {
        let fix = f["fix"].as_str().unwrap();
        let o = r.cmd("env", &[&path, "sh", "-c", fix]);
        assert!(o.status.success(), "fix `{fix}`: {}", text(&o));
    }
    let o = r.git(&["commit", "-q", "--no-edit"]);
    assert!(o.status.success(), "merge commit: {}", text(&o));
    let o = r.noma(&["replay", "docs/plan.noma"]);
    assert!(o.status.success(), "replay: {}", text(&o));
    let doc = r.read("docs/plan.noma");
    assert!(
        ["A1", "B1", "C1"]
            .iter()
            .all(|w| doc.contains(&format!("\n{w}\n"))),
        "{doc}"
    );
    assert!(!r.path().join("plan.noma.patches").exists());
}

/// (k) `git commit --amend` replaces HEAD, so the installed hook judges
/// the transcript against HEAD's parent: an amend may rewrite or drop the
/// last commit's records. A plain commit that drops them is still refused.
#[test]
fn k_amending_the_last_patch_commit_may_rewrite_its_records() {
    let r = setup();
    patch_commit(&r, "a", "A1");
    patch_commit(&r, "b", "B1");
    // Redo the last patch differently, in place of the committed one.
    r.ok(&["checkout", "HEAD~1", "--", "plan.noma", "plan.noma.patches"]);
    let op = serde_json::json!({"op": "replace_body", "id": "b", "content": "B2"}).to_string();
    r.agent_patch("plan.noma", &op);
    r.ok(&["add", "-A"]);
    let o = r.git(&["commit", "-q", "--amend", "--no-edit"]);
    assert!(o.status.success(), "amend: {}", text(&o));
    assert_eq!(op_ids(&r, "HEAD").len(), 2);
    assert_sound(&r, &["A1", "B2"]);
    assert_absent(&r, "B1");
    // Drop the last patch altogether (the commit keeps another change).
    r.ok(&["checkout", "HEAD~1", "--", "plan.noma", "plan.noma.patches"]);
    r.write("notes.txt", "kept\n");
    r.ok(&["add", "-A"]);
    let o = r.git(&["commit", "-q", "--amen", "--no-edit"]);
    assert!(o.status.success(), "amend dropping the patch: {}", text(&o));
    assert_eq!(op_ids(&r, "HEAD").len(), 1);
    assert_sound(&r, &["A1", "beta"]);
    // Without --amend the same drop removes a committed record.
    patch_commit(&r, "c", "C1");
    r.ok(&["checkout", "HEAD~1", "--", "plan.noma", "plan.noma.patches"]);
    let (ok, out) = r.try_commit("drop a committed record");
    assert!(!ok, "{out}");
    assert!(out.contains("[transcript-tampered]"), "{out}");
}

/// (h) `git rebase -i` reordering patch commits: each pick brings only its
/// own record (before the three-way rule, the first pick also brought the
/// records of the commits it was moved before).
#[test]
fn h_rebase_reordering_patch_commits() {
    let r = setup();
    patch_commit(&r, "g", "G1");
    patch_commit(&r, "a", "A1");
    patch_commit(&r, "b", "B1");
    patch_commit(&r, "c", "C1");
    let o = r.git(&[
        "-c",
        "sequence.editor=sed -i -e '1{h;d}' -e 3G",
        "rebase",
        "-i",
        "HEAD~3",
    ]);
    assert!(o.status.success(), "rebase -i must be clean: {}", text(&o));
    let log = r.ok(&["log", "--format=%s", "-3"]);
    assert_eq!(log, "patch a\npatch c\npatch b\n");
    assert_eq!(
        op_ids(&r, "HEAD~2").len(),
        2,
        "the first pick holds G1 and B1 only"
    );
    assert_eq!(op_ids(&r, "HEAD").len(), 4);
    assert_sound(&r, &["G1", "A1", "B1", "C1"]);
}

/// (h) `git pull --rebase` after the remote reverted the commit that
/// created the transcript: git deletes the file on one side and calls no
/// driver (modify/delete); the README's steps (keep the left transcript,
/// `noma record`, continue) finish the rebase with a transcript that
/// replays and the revert kept.
#[test]
fn h_pull_rebase_after_the_remote_reverted_the_transcripts_first_commit() {
    let r = setup();
    add_remote(&r);
    patch_commit(&r, "a", "A1");
    r.ok(&["push", "-q", "origin", "main"]);
    r.ok(&["checkout", "-q", "-b", "mine"]);
    patch_commit(&r, "b", "B1");
    patch_commit(&r, "c", "C1");
    r.ok(&["checkout", "-q", "main"]);
    r.ok(&["revert", "--no-edit", "HEAD"]);
    r.ok(&["push", "-q", "origin", "main"]);
    r.ok(&["checkout", "-q", "mine"]);
    let o = r.git(&["pull", "--rebase", "origin", "main"]);
    assert!(!o.status.success(), "git stops: {}", text(&o));
    assert!(text(&o).contains("modify/delete"), "{}", text(&o));
    r.ok(&["add", "plan.noma.patches"]);
    let o = r.noma(&["record", "plan.noma"]);
    assert!(o.status.success(), "record: {}", text(&o));
    r.ok(&["add", "plan.noma", "plan.noma.patches"]);
    let o = r.git(&["-c", "core.editor=true", "rebase", "--continue"]);
    assert!(o.status.success(), "rebase --continue: {}", text(&o));
    assert_sound(&r, &["alpha", "B1", "C1"]);
    assert_absent(&r, "A1");
}

/// (l) Taking a document with its transcript from another branch or an
/// older commit (`git checkout REV -- doc doc.patches`) would rewrite the
/// committed transcript: the hook refuses it and prints the command that
/// keeps the checked-out document as a recorded change instead. Merging
/// afterwards is clean: the block both sides now hold alike is no clash.
#[test]
fn l_checking_out_another_version_of_a_document_is_recorded_then_merges() {
    let r = setup();
    fork_with_main_ahead(&r);

    // The branch takes main's version.
    r.ok(&["checkout", "main", "--", "plan.noma", "plan.noma.patches"]);
    let (ok, out) = r.try_commit("take main's plan");
    assert!(!ok, "{out}");
    let keep = out
        .split_once("record its change instead: ")
        .and_then(|(_, rest)| rest.split_once(" (fix: "))
        .map(|(cmd, _)| cmd)
        .unwrap_or_else(|| panic!("no command in: {out}"));
    assert_ran(&r.sh(keep));
    let (ok, out) = r.try_commit("take main's plan");
    assert!(ok, "{out}");
    assert_sound(&r, &["A1", "beta", "C1"]);
    r.ok(&["checkout", "-q", "main"]);
    merge_clean(&r, "feat");
    assert_sound(&r, &["A1", "beta", "C1"]);

    // Main undoes its last patch by checking out the older version.
    patch_commit(&r, "d", "D1");
    r.ok(&["checkout", "HEAD~1", "--", "plan.noma", "plan.noma.patches"]);
    let (ok, out) = r.try_commit("undo D1");
    assert!(!ok, "{out}");
    assert_ran(&r.sh(&fix_of(&out, "transcript-tampered")));
    let (ok, out) = r.try_commit("undo D1");
    assert!(ok, "{out}");
    assert_sound(&r, &["A1", "beta", "C1", "delta"]);
    r.ok(&["checkout", "-q", "feat"]);
    merge_clean(&r, "main");
    assert_sound(&r, &["A1", "beta", "C1", "delta"]);
}

/// One agent add_block into `plan`, committed.
fn add_commit(r: &Repo, position: u64, id: &str) {
    let op = serde_json::json!({
        "op": "add_block", "parent": "plan", "position": position,
        "content": format!("::note{{id=\"{id}\"}}\n{id}\n::"),
    })
    .to_string();
    r.agent_patch("plan.noma", &op);
    r.commit_all(&format!("add {id}"));
}

/// (m) Two branches each add a block to the same section (two agents
/// filling one chapter): merging either way and rebasing are clean, both
/// blocks land where their authors put them, and the result replays.
#[test]
fn m_blocks_added_to_one_section_on_two_branches_merge_every_way() {
    for how in ["merge into main", "update the branch", "rebase"] {
        let r = setup();
        r.ok(&["checkout", "-q", "-b", "feat"]);
        add_commit(&r, 1, "fromfeat");
        r.ok(&["checkout", "-q", "main"]);
        add_commit(&r, 4, "frommain");
        match how {
            "merge into main" => merge_clean(&r, "feat"),
            "update the branch" => {
                r.ok(&["checkout", "-q", "feat"]);
                merge_clean(&r, "main");
            }
            _ => {
                r.ok(&["checkout", "-q", "feat"]);
                let o = r.git(&["rebase", "main"]);
                assert!(o.status.success(), "rebase: {}", text(&o));
            }
        }
        assert_sound(&r, &["fromfeat", "frommain"]);
        let doc = r.read("plan.noma");
        let at = |s: &str| doc.find(s).unwrap_or_else(|| panic!("{how}: {s} missing"));
        assert!(
            at("alpha") < at("fromfeat") && at("fromfeat") < at("beta"),
            "{how}:\n{doc}"
        );
        assert!(
            at("delta") < at("frommain") && at("frommain") < at("epsilon"),
            "{how}:\n{doc}"
        );
    }
}

/// (m) Two branches setting different attributes of one block (one agent
/// marks a task done, another assigns it) merge; the same attribute set
/// differently on both still stops the merge.
#[test]
fn m_different_attributes_of_one_block_merge() {
    let r = setup();
    let set = |key: &str, value: &str| {
        let op =
            serde_json::json!({"op": "update_attribute", "id": "a", "key": key, "value": value});
        r.agent_patch("plan.noma", &op.to_string());
        r.commit_all(&format!("{key}={value}"));
    };
    r.ok(&["checkout", "-q", "-b", "feat"]);
    set("owner", "bob");
    r.ok(&["checkout", "-q", "main"]);
    set("status", "done");
    merge_clean(&r, "feat");
    assert_sound(&r, &["alpha"]);
    assert!(
        r.read("plan.noma")
            .contains("::note{id=\"a\" status=\"done\" owner=\"bob\"}"),
        "{}",
        r.read("plan.noma")
    );
    r.ok(&["checkout", "-q", "feat"]);
    set("status", "blocked");
    r.ok(&["checkout", "-q", "main"]);
    let o = r.git(&["merge", "--no-edit", "feat"]);
    assert!(!o.status.success(), "the same attribute: {}", text(&o));
}

/// (n) A transcript born on a branch (its first agent patch) while main
/// went on editing the document by hand, without one. Rebasing the branch
/// or merging main into it merges the document block by block, and the
/// transcript, present on one side only, does not record main's edit. A
/// rebase or cherry-pick runs no hooks, so the merge driver is the one to
/// print the fix; a merge is also stopped by the hook. Following the fix leaves a sound
/// pair either way.
#[test]
fn n_a_transcript_born_on_a_branch_over_hand_edits_on_main() {
    const FIX: &str = "noma record \"plan.noma\" && git add \"plan.noma\" \"plan.noma.patches\"";
    for how in [
        "rebase feat onto main",
        "cherry-pick feat onto main",
        "merge main into feat",
    ] {
        let r = setup();
        r.ok(&["checkout", "-q", "-b", "feat"]);
        patch_commit(&r, "b", "B1");
        r.ok(&["checkout", "-q", "main"]);
        r.write("plan.noma", &DOC.replace("alpha", "alpha, by hand"));
        r.commit_all("hand edit on main");
        let o = meet(&r, how);
        let out = text(&o);
        assert!(out.contains("merged block by block"), "{how}: {out}");
        assert!(out.contains(FIX), "{how}: the driver names the fix: {out}");
        // The rebase and the cherry-pick went through (no hooks) with a
        // transcript that does not replay; the merge was stopped by the
        // pre-merge-commit hook.
        assert_eq!(
            o.status.success(),
            !how.starts_with("merge"),
            "{how}: {out}"
        );
        let o = r.noma(&["replay", "plan.noma", "--base", ".git/base.noma"]);
        assert!(
            !o.status.success(),
            "{how}: replay before the fix: {}",
            text(&o)
        );
        assert!(r.sh(FIX).status.success(), "{how}");
        // The hook replays the whole transcript then: an edit beyond the
        // record is still caught.
        let recorded = r.read("plan.noma");
        r.write("plan.noma", &recorded.replace("B1", "B1 and more"));
        r.ok(&["add", "plan.noma"]);
        let (ok, out) = r.try_commit("unrecorded");
        assert!(!ok && out.contains("[unrecorded-edit]"), "{how}: {out}");
        r.write("plan.noma", &recorded);
        r.ok(&["add", "plan.noma"]);
        let (ok, out) = r.try_commit("record main's hand edit");
        assert!(ok, "{how}: {out}");
        assert_sound(&r, &["alpha, by hand", "B1"]);
    }
}

/// With `main` checked out and `feat` forked from it: "merge feat into
/// main", "merge main into feat", "rebase feat onto main" or "cherry-pick
/// feat onto main" (its last commit).
fn meet(r: &Repo, how: &str) -> std::process::Output {
    match how {
        "merge feat into main" => r.git(&["merge", "--no-edit", "feat"]),
        "cherry-pick feat onto main" => r.git(&["cherry-pick", "feat"]),
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

/// (o) A transcript started on two branches at once: on main by `noma
/// record` of a hand edit (its genesis record writes the committed
/// document first), on `feat` by an agent's first patch (which starts at
/// the committed document), or by `noma record` on both. They share no
/// line, so every merge and rebase used to conflict (and called the
/// genesis record a revert); the genesis now counts as starting where the
/// other side starts. Every way merges, replays, and merges back.
#[test]
fn o_transcripts_started_on_two_branches_by_record_and_by_patch_merge() {
    let hand_edit = |r: &Repo, from: &str, to: &str| {
        r.write("plan.noma", &r.read("plan.noma").replace(from, to));
        let o = r.noma(&["record", "plan.noma"]);
        assert!(o.status.success(), "record: {}", text(&o));
        r.commit_all(&format!("hand edit {to}"));
    };
    for (how, feat_by_hand) in [
        ("merge feat into main", false),
        ("merge main into feat", false),
        ("rebase feat onto main", false),
        ("cherry-pick feat onto main", false),
        ("merge feat into main", true),
        ("rebase feat onto main", true),
    ] {
        let r = setup();
        r.ok(&["checkout", "-q", "-b", "feat"]);
        if feat_by_hand {
            hand_edit(&r, "gamma", "gamma, by hand on feat");
        } else {
            patch_commit(&r, "b", "B1");
        }
        r.ok(&["checkout", "-q", "main"]);
        hand_edit(&r, "alpha", "alpha, by hand");
        let o = meet(&r, how);
        let ctx = format!("{how} (feat by hand: {feat_by_hand})");
        assert!(o.status.success(), "{ctx}: {}", text(&o));
        assert!(!text(&o).contains("revert"), "{ctx}: {}", text(&o));
        let want = if feat_by_hand {
            ["alpha, by hand", "gamma, by hand on feat"]
        } else {
            ["alpha, by hand", "B1"]
        };
        let check = |r: &Repo, ctx: &str| {
            assert!(
                r.git(&["diff", "--quiet", "HEAD"]).status.success(),
                "{ctx}"
            );
            let o = r.noma(&["replay", "plan.noma"]);
            assert!(o.status.success(), "{ctx}: replay: {}", text(&o));
            let doc = r.read("plan.noma");
            for w in want {
                assert!(
                    doc.contains(&format!("\n{w}\n")),
                    "{ctx}: {w} missing:\n{doc}"
                );
            }
        };
        check(&r, &ctx);
        // And back the other way.
        let other = if r.ok(&["branch", "--show-current"]).trim() == "main" {
            "feat"
        } else {
            "main"
        };
        let here = if other == "main" { "feat" } else { "main" };
        r.ok(&["checkout", "-q", other]);
        let o = r.git(&["merge", "--no-edit", here]);
        assert!(o.status.success(), "{ctx}, then back: {}", text(&o));
        check(&r, &format!("{ctx}, then back"));
    }
}

/// (p) One agent renames a block (`rename_id`) while another edits it by
/// its old id. The edit follows the block to its new id in a merge either
/// way and in a rebase; an edit of the same part on both sides still
/// conflicts.
#[test]
fn p_an_edit_follows_a_block_renamed_on_the_other_branch() {
    let op = |r: &Repo, op: serde_json::Value, msg: &str| {
        r.agent_patch("plan.noma", &op.to_string());
        r.commit_all(msg);
    };
    let rename = serde_json::json!({"op": "rename_id", "from": "b", "to": "b2"});
    for how in [
        "merge feat into main",
        "merge main into feat",
        "rebase feat onto main",
        "cherry-pick feat onto main",
    ] {
        let r = setup();
        r.ok(&["checkout", "-q", "-b", "feat"]);
        patch_commit(&r, "b", "B1");
        r.ok(&["checkout", "-q", "main"]);
        op(&r, rename.clone(), "rename b");
        let o = meet(&r, how);
        assert!(o.status.success(), "{how}: {}", text(&o));
        assert_sound(&r, &["B1"]);
        let doc = r.read("plan.noma");
        assert!(doc.contains("::note{id=\"b2\"}\nB1\n::"), "{how}:\n{doc}");
        assert!(!doc.contains("id=\"b\"}"), "{how}:\n{doc}");
    }
    let r = setup();
    r.ok(&["checkout", "-q", "-b", "feat"]);
    patch_commit(&r, "b", "B1");
    r.ok(&["checkout", "-q", "main"]);
    op(&r, rename, "rename b");
    patch_commit(&r, "b2", "B2");
    let o = r.git(&["merge", "--no-edit", "feat"]);
    assert!(!o.status.success(), "the same body: {}", text(&o));
}

/// Resolves a conflicted `plan.noma.patches` the way a merge without
/// noma's driver usually is (GitHub's editor, `git merge-file --union`):
/// both sides kept, ours first.
fn keep_both_transcripts(r: &Repo) {
    let stage = |n: u8| r.git(&["show", &format!(":{n}:plan.noma.patches")]).stdout;
    let (base, ours, theirs) = (stage(1), stage(2), stage(3));
    assert!(theirs.starts_with(&base) && ours.starts_with(&base));
    let both = [ours, theirs[base.len()..].to_vec()].concat();
    std::fs::write(r.path().join("plan.noma.patches"), both).unwrap();
}

#[test]
fn q_a_merge_without_the_driver_that_kept_both_sides_is_repaired() {
    // A teammate's clone without noma: no driver, no hooks. The documents
    // merge line by line, the transcripts conflict and both sides are kept.
    let r = setup();
    fork_with_main_ahead(&r);
    r.ok(&["checkout", "-q", "main"]);
    r.ok(&["config", "--remove-section", "merge.noma"]);
    let o = r.git(&[
        "-c",
        "core.hooksPath=/dev/null",
        "merge",
        "--no-edit",
        "feat",
    ]);
    assert!(
        !o.status.success(),
        "the transcripts conflict: {}",
        text(&o)
    );
    keep_both_transcripts(&r);
    r.ok(&["add", "-A"]);
    r.ok(&["-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", "m"]);
    // With noma: replay and record say what happened and what to run.
    let o = r.noma(&["replay", "plan.noma"]);
    assert!(
        !o.status.success(),
        "{} {}",
        text(&o),
        r.read("plan.noma.patches")
    );
    assert!(
        text(&o).contains("fix: its records from line 3 on are another branch's"),
        "{}",
        text(&o)
    );
    let o = r.noma(&["record", "plan.noma"]);
    assert!(
        !o.status.success() && text(&o).contains("noma repair \"plan.noma\""),
        "{}",
        text(&o)
    );
    let o = r.noma(&["reconcile", "--base", "HEAD~1"]);
    assert!(text(&o).contains("[transcript-joined]"), "{}", text(&o));
    // An agent's patch names the same one fix (it named `noma record`,
    // which then redirected to `noma repair`).
    let op = serde_json::json!({"op": "replace_body", "id": "d", "content": "D0"}).to_string();
    let o = r.noma(&["patch", "plan.noma", "--inplace", "--op", &op]);
    assert!(
        !o.status.success() && text(&o).contains("noma repair \"plan.noma\""),
        "{}",
        text(&o)
    );
    assert!(!text(&o).contains("noma record"), "{}", text(&o));
    let o = r.noma(&["repair", "plan.noma"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("1 of them rebased"), "{}", text(&o));
    assert!(
        !text(&o).contains("next:"),
        "git merged the lines as the driver would: {}",
        text(&o)
    );
    assert!(r.path().join("plan.noma.patches.joined").is_file());
    // Not an append to HEAD's transcript, but HEAD's made linear: the hook
    // takes it, and the branch goes on.
    assert!(r.noma(&["hooks", "install"]).status.success());
    r.ok(&["add", "plan.noma.patches"]);
    let (ok, out) = r.try_commit("noma repair");
    assert!(ok, "{out}");
    assert_sound(&r, &["A1", "B1", "C1"]);
    patch_commit(&r, "d", "D1");
    r.ok(&["checkout", "-q", "feat"]);
    merge_clean(&r, "main");
    patch_commit(&r, "e", "E1");
    r.ok(&["checkout", "-q", "main"]);
    merge_clean(&r, "feat");
    assert_sound(&r, &["A1", "B1", "C1", "D1", "E1"]);

    // Hooks on, driver missing, and the same block changed on both sides:
    // the document is resolved by hand, the transcripts by keeping both.
    // The hook names the one fix, which records the resolution.
    let r = setup();
    patch_commit(&r, "a", "A1");
    r.ok(&["checkout", "-q", "-b", "feat"]);
    patch_commit(&r, "c", "C-feat");
    r.ok(&["checkout", "-q", "main"]);
    patch_commit(&r, "c", "C-main");
    r.ok(&["config", "--remove-section", "merge.noma"]);
    assert!(!r.git(&["merge", "--no-edit", "feat"]).status.success());
    keep_both_transcripts(&r);
    let doc = r
        .read(".git/base.noma")
        .replace("alpha", "A1")
        .replace("gamma", "C-both");
    r.write("plan.noma", &doc);
    r.ok(&["add", "-A"]);
    let o = r.git(&["commit", "-q", "--no-edit"]);
    let out = text(&o);
    assert!(!o.status.success(), "{out}");
    let o = r.sh(&fix_of(&out, "transcript-fork"));
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("conflict"),
        "the clash is named: {}",
        text(&o)
    );
    let o = r.git(&["commit", "-q", "--no-edit"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_sound(&r, &["A1", "C-both"]);
}

/// During a merge that stopped on a block conflict, an agent's patch over
/// MCP is refused (the `::conflict` block is no recorded state) with a
/// message that says so and names the blocks a person must resolve.
#[test]
fn r_an_agent_is_told_a_merge_conflict_awaits_a_person() {
    let r = setup();
    r.ok(&["checkout", "-q", "-b", "feat"]);
    patch_commit(&r, "b", "B-feat");
    r.ok(&["checkout", "-q", "main"]);
    patch_commit(&r, "b", "B-main");
    assert!(!r.git(&["merge", "--no-edit", "feat"]).status.success());
    let mut mcp = crate::common::McpClient::start(r.path());
    let (is_error, body) = mcp.call(
        "patch_block",
        serde_json::json!({"file": "plan.noma", "op": {"op": "replace_body", "id": "c", "content": "C1"}}),
    );
    mcp.stop();
    assert!(!is_error, "{body}");
    assert_eq!(body["code"], "unrecorded_edit", "{body}");
    let msg = body["error"].as_str().unwrap();
    assert!(
        msg.contains(
            "a merge in progress left 1 unresolved ::conflict block(s) (merge-conflict-1-b)"
        ),
        "{msg}"
    );
}

/// A transcript repaired by `noma repair` (after a merge without the
/// driver) meets a branch made before that merge every way branches meet:
/// merge either way, rebase, cherry-pick, and `pull --rebase` of the
/// repaired main. Each lands clean, through the hooks, and replays, with
/// `core.autocrlf=true` (Git for Windows' default) throughout.
#[test]
fn q_a_repaired_transcript_meets_older_branches_every_way() {
    let ways = [
        "merge feat into main",
        "merge main into feat",
        "rebase feat onto main",
        "cherry-pick feat onto main",
        "pull --rebase",
    ];
    for how in ways {
        let r = setup();
        r.ok(&["config", "core.autocrlf", "true"]);
        add_remote(&r);
        patch_commit(&r, "a", "A1");
        r.ok(&["branch", "feat"]);
        r.ok(&["checkout", "-q", "-b", "side"]);
        patch_commit(&r, "b", "B1");
        r.ok(&["checkout", "-q", "main"]);
        patch_commit(&r, "c", "C1");
        r.ok(&["push", "-q", "origin", "main"]);
        // The teammate without the driver merges side, keeping both sides.
        r.ok(&["config", "--remove-section", "merge.noma"]);
        let o = r.git(&[
            "-c",
            "core.hooksPath=/dev/null",
            "merge",
            "--no-edit",
            "side",
        ]);
        assert!(!o.status.success(), "{how}: {}", text(&o));
        keep_both_transcripts(&r);
        r.ok(&["add", "-A"]);
        r.ok(&["-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", "m"]);
        assert!(r.noma(&["hooks", "install"]).status.success());
        assert_ran(&r.noma(&["repair", "plan.noma"]));
        r.ok(&["add", "plan.noma.patches"]);
        let (ok, out) = r.try_commit("noma repair");
        assert!(ok, "{how}: {out}");
        // `feat` (made before the union) patches another block.
        r.ok(&["checkout", "-q", "feat"]);
        patch_commit(&r, "d", "D1");
        let want: &[&str] = &["A1", "B1", "C1", "D1"];
        if how == "pull --rebase" {
            // main's repaired history is pushed; feat pulls it with rebase.
            r.ok(&["push", "-q", "origin", "main"]);
            let o = r.git(&["pull", "--rebase", "origin", "main"]);
            assert!(o.status.success(), "{how}: {}", text(&o));
        } else {
            r.ok(&["checkout", "-q", "main"]);
            let o = meet(&r, how);
            assert!(o.status.success(), "{how}: {}", text(&o));
        }
        assert_sound(&r, want);
    }
}

const SECTIONS: &str = "# Plan\n\n## Old notes\n\n::note{id=\"old\"}\nstale\n::\n\n## Current\n\n::note{id=\"cur\"}\nfresh\n::\n\n## Current\n\n::note{id=\"later\"}\nlater\n::\n";

/// (s) An agent deletes a heading section (delete_block on a section, as
/// the reference's tools do) on `feat` while main edits a block elsewhere:
/// every way the branches meet (merge both ways, rebase, cherry-pick,
/// `pull --rebase`) is clean, under `core.autocrlf=true` too, the
/// second `## Current` keeps its id `current-2`, and the result replays.
/// An edit inside the deleted section conflicts instead of being lost.
#[test]
fn s_a_section_deleted_on_a_branch_meets_edits_every_way() {
    let ways = [
        "merge feat into main",
        "merge main into feat",
        "rebase feat onto main",
        "cherry-pick feat onto main",
        "pull --rebase into feat",
    ];
    for autocrlf in [false, true] {
        for how in ways {
            let r = setup_with(SECTIONS, autocrlf);
            r.ok(&["checkout", "-q", "-b", "feat"]);
            r.agent_patch("plan.noma", r#"{"op":"delete_block","id":"current"}"#);
            r.commit_all("delete the first Current section");
            r.ok(&["checkout", "-q", "main"]);
            patch_commit(&r, "later", "LATER");
            let o = if how == "pull --rebase into feat" {
                r.ok(&["checkout", "-q", "feat"]);
                r.git(&["pull", "-q", "--rebase", ".", "main"])
            } else {
                meet(&r, how)
            };
            assert!(
                o.status.success(),
                "{how} (autocrlf {autocrlf}): {}",
                text(&o)
            );
            assert_sound(&r, &["stale", "LATER"]);
            let doc = r.read("plan.noma");
            assert!(!doc.contains("fresh"), "{how}:\n{doc}");
            assert!(
                doc.contains("## Current {id=\"current-2\"}\n"),
                "{how}: the later section must keep its id:\n{doc}"
            );
        }
    }
    // The other branch edited a block inside the deleted section: a
    // conflict a person resolves, never a silent loss of either change.
    let r = setup_with(SECTIONS, false);
    r.ok(&["checkout", "-q", "-b", "feat"]);
    r.agent_patch("plan.noma", r#"{"op":"delete_block","id":"old-notes"}"#);
    r.commit_all("delete Old notes");
    r.ok(&["checkout", "-q", "main"]);
    patch_commit(&r, "old", "STILL NEEDED");
    let o = r.git(&["merge", "--no-edit", "feat"]);
    assert!(!o.status.success(), "must conflict: {}", text(&o));
    let doc = r.read("plan.noma");
    assert!(
        doc.contains("::conflict{") && doc.contains("STILL NEEDED"),
        "{doc}"
    );
}

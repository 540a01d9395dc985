//! Merges a team makes every day, with the real `git` and noma's hooks and
//! driver (`noma init`): a merge commit that would keep a transcript
//! without its document is blocked with `transcript-orphaned` (a merge
//! concluded by hand, one that stopped on a conflict, and a clean merge
//! through pre-merge-commit), and `git merge -X ours|theirs`, which git
//! never passes to a merge driver, stops on a same-block conflict as a
//! plain merge does, resolved the way `docs/git-workflows.md` says.

use crate::common::{text, Repo};

const DOC: &str = "# Plan\n\n::claim{id=\"c\" status=\"draft\"}\nThe claim.\n::\n\n::note{id=\"n\"}\nA note.\n::\n";

fn body(id: &str, content: &str) -> String {
    serde_json::json!({"op": "replace_body", "id": id, "content": content}).to_string()
}

/// main and branch `B` each patched one block (`main_block`, `b_block`)
/// through the agent and committed; main is checked out.
fn two_branches(main_block: &str, b_block: &str) -> Repo {
    let r = Repo::with_genesis_record(DOC);
    r.ok(&["checkout", "-q", "-b", "B"]);
    r.agent_patch("plan.noma", &body(b_block, "From B."));
    r.commit_all("B");
    r.ok(&["checkout", "-q", "main"]);
    r.agent_patch("plan.noma", &body(main_block, "From main."));
    r.commit_all("main");
    r
}

/// `git commit --no-edit` of a merge in progress: refused with
/// `transcript-orphaned`, the merge still pending.
fn commit_is_orphan_blocked(r: &Repo) {
    let o = r.git(&["commit", "-q", "--no-edit"]);
    assert!(!o.status.success(), "must be blocked: {}", text(&o));
    assert!(
        text(&o).contains("[transcript-orphaned] plan.noma.patches"),
        "{}",
        text(&o)
    );
    assert!(r
        .git(&["rev-parse", "-q", "--verify", "MERGE_HEAD"])
        .status
        .success());
}

#[test]
fn a_merge_that_deletes_the_document_and_keeps_its_transcript_is_blocked() {
    let r = two_branches("c", "n");
    let o = r.git(&["merge", "--no-commit", "--no-ff", "B"]);
    assert!(o.status.success(), "{}", text(&o));
    r.ok(&["rm", "-q", "-f", "plan.noma"]);
    commit_is_orphan_blocked(&r);
}

#[test]
fn a_conflicted_merge_resolved_by_deleting_the_document_is_blocked() {
    // One branch removed the document with a record; main patched it.
    let r = Repo::with_genesis_record(DOC);
    r.ok(&["checkout", "-q", "-b", "R"]);
    let o = r.noma(&["rm", "plan.noma"]);
    assert!(o.status.success(), "{}", text(&o));
    r.commit_all("remove plan");
    r.ok(&["checkout", "-q", "main"]);
    r.agent_patch("plan.noma", &body("c", "From main."));
    r.commit_all("main");
    let o = r.git(&["merge", "--no-edit", "R"]);
    assert!(!o.status.success(), "modify/delete must stop: {}", text(&o));
    // Take the deletion, keep the transcript the driver merged.
    r.ok(&["rm", "-q", "plan.noma"]);
    r.ok(&["add", "plan.noma.patches"]);
    commit_is_orphan_blocked(&r);
}

#[test]
fn a_clean_merge_bringing_an_orphaned_transcript_is_blocked_by_pre_merge_commit() {
    // A teammate without the hooks deleted the document alone.
    let r = Repo::with_genesis_record(DOC);
    r.ok(&["checkout", "-q", "-b", "D"]);
    r.ok(&["rm", "-q", "plan.noma"]);
    r.ok(&["commit", "-q", "--no-verify", "-m", "drop plan"]);
    r.ok(&["checkout", "-q", "main"]);
    r.write("other.txt", "other\n");
    r.commit_all("other");
    let head = r.ok(&["rev-parse", "HEAD"]);
    let o = r.git(&["merge", "--no-edit", "D"]);
    assert!(
        text(&o).contains("noma pre-merge-commit")
            && text(&o).contains("[transcript-orphaned] plan.noma.patches"),
        "{}",
        text(&o)
    );
    assert_eq!(r.ok(&["rev-parse", "HEAD"]), head, "no merge commit");
}

/// `git merge -X OPTION B` on a block both branches changed stops as a
/// plain merge does, with the same document and transcript.
fn stops_like_a_plain_merge(option: &str) -> Repo {
    let r = two_branches("c", "c");
    let o = r.git(&["merge", "--no-edit", "B"]);
    assert!(!o.status.success(), "{}", text(&o));
    let plain = (r.read("plan.noma"), r.read("plan.noma.patches"));
    r.ok(&["merge", "--abort"]);
    let o = r.git(&["merge", "--no-edit", "-X", option, "B"]);
    assert!(!o.status.success(), "-X {option} must stop: {}", text(&o));
    assert!(text(&o).contains("conflict: block \"c\""), "{}", text(&o));
    let doc = r.read("plan.noma");
    assert!(doc.contains("::conflict{"), "{doc}");
    assert_eq!((doc, r.read("plan.noma.patches")), plain, "-X {option}");
    r
}

/// The documented resolution: `kept` (one side's version of the block;
/// here the side's whole document, the block being all that differs) in
/// place of the `::conflict` block, `noma record`, commit. Keeping theirs
/// is a person's record on top of ours; keeping ours records nothing.
fn resolve_by_hand(r: &Repo, kept: &str, recorded: bool) {
    r.write("plan.noma", kept);
    let o = r.noma(&["record", "plan.noma"]);
    assert!(o.status.success(), "{}", text(&o));
    r.commit_all("merge B, one side kept");
    assert_eq!(r.read("plan.noma"), kept);
    let o = r.noma(&["replay", "plan.noma"]);
    assert!(o.status.success(), "{}", text(&o));
    // The transcript extends ours; the choice is the person's record.
    let ours = r.ok(&["show", "HEAD^1:plan.noma.patches"]);
    let t = r.read("plan.noma.patches");
    assert!(t.starts_with(&ours), "{t}");
    let last: serde_json::Value = serde_json::from_str(t.lines().last().unwrap()).unwrap();
    assert_eq!(last["actor"]["kind"] == "human", recorded, "{t}");
}

#[test]
fn merge_x_theirs_stops_on_a_same_block_conflict_and_theirs_is_kept_by_hand() {
    let r = stops_like_a_plain_merge("theirs");
    resolve_by_hand(&r, &r.ok(&["show", "B:plan.noma"]), true);
    assert!(r.read("plan.noma").contains("From B."));
}

#[test]
fn merge_x_ours_stops_on_a_same_block_conflict_and_ours_is_kept_by_hand() {
    let r = stops_like_a_plain_merge("ours");
    resolve_by_hand(&r, &r.ok(&["show", "HEAD:plan.noma"]), false);
    assert!(r.read("plan.noma").contains("From main."));
}

//! Merging main into a branch, as teams do it every week, with the real
//! `git`, `ssh-keygen` and the installed hooks (never `--no-verify`): a
//! signer main added after the branch was made does not lock the branch
//! out of `git merge main`, while a key the branch adds itself still
//! verifies nothing in `noma reconcile --base main`.
#![cfg(unix)]

use std::path::{Path, PathBuf};

use crate::common::{assert_ran, keygen, text, Repo};

pub(crate) const DOC: &str = "# Plan\n\n::note{id=\"a\"}\nalpha\n::\n\n## Middle\n\nSome text.\n\nMore text.\n\n::note{id=\"b\"}\nbeta\n::\n";

pub(crate) fn body_op(id: &str, body: &str) -> String {
    serde_json::json!({"op": "replace_body", "id": id, "content": body}).to_string()
}

/// A repository where signatures are required and alice is the only
/// allowed signer, committed on main; returns it and alice's key.
pub(crate) fn signed_repo() -> (Repo, PathBuf) {
    let r = Repo::with_genesis_record(DOC);
    let (alice, alice_pub) = keygen(&r, "alice");
    let mut config = r.read(".noma/config.yml");
    config.push_str("provenance:\n  signatures: required\n");
    r.write(".noma/config.yml", &config);
    r.write(
        ".noma/allowed_signers",
        &format!("alice@example.com namespaces=\"noma\" {alice_pub}\n"),
    );
    r.commit_all("provenance on");
    (r, alice)
}

/// `noma patch plan.noma` signed with `key` as the person `who`.
pub(crate) fn signed_patch(r: &Repo, key: &Path, who: &str, op: &str) {
    let o = r.noma(&[
        "patch",
        "plan.noma",
        "--inplace",
        "--key",
        key.to_str().unwrap(),
        "--actor-name",
        who,
        "--op",
        op,
    ]);
    assert_ran(&o);
}

/// Adds `who`'s new key to `.noma/allowed_signers` and commits it; returns
/// the private key.
pub(crate) fn add_signer(r: &Repo, who: &str) -> PathBuf {
    let (key, public) = keygen(r, who);
    let mut signers = r.read(".noma/allowed_signers");
    signers.push_str(&format!("{who}@example.com namespaces=\"noma\" {public}\n"));
    r.write(".noma/allowed_signers", &signers);
    r.commit_all(&format!("{who} joins"));
    key
}

fn reconcile(r: &Repo) -> (i32, String) {
    let o = r.noma(&["reconcile", "--base", "main"]);
    (o.status.code().unwrap_or(-1), text(&o))
}

#[test]
fn a_branch_older_than_a_signer_added_on_main_merges_main_through_the_hook() {
    let (r, alice) = signed_repo();
    signed_patch(&r, &alice, "alice", &body_op("a", "alpha, signed"));
    r.commit_all("alice signs a");
    // Two branches made before carol joins: one touching no document, one
    // whose transcript main will append to as well.
    r.ok(&["branch", "notes"]);
    r.ok(&["checkout", "-q", "-b", "doc"]);
    signed_patch(&r, &alice, "alice", &body_op("a", "alpha, on the branch"));
    r.commit_all("alice again, on the branch");
    r.ok(&["checkout", "-q", "notes"]);
    r.write("notes.txt", "a note\n");
    r.commit_all("a note");

    r.ok(&["checkout", "-q", "main"]);
    let carol = add_signer(&r, "carol");
    signed_patch(&r, &carol, "carol", &body_op("b", "beta, by carol"));
    r.commit_all("carol signs b");

    for branch in ["notes", "doc"] {
        r.ok(&["checkout", "-q", branch]);
        let o = r.git(&["merge", "-q", "--no-edit", "main"]);
        assert!(
            o.status.success(),
            "{branch}: git merge main refused: {}",
            text(&o)
        );
        let doc = r.read("plan.noma");
        assert!(doc.contains("beta, by carol"), "{branch}: {doc}");
        let (code, out) = reconcile(&r);
        assert_eq!(code, 0, "{branch}: {out}");
    }

    // The branch still cannot trust a key it adds itself: dave's record
    // verifies by the branch's file, not by main's.
    let dave = add_signer(&r, "dave");
    signed_patch(&r, &dave, "dave", &body_op("b", "beta, by dave"));
    r.commit_all("dave signs b");
    let (code, out) = reconcile(&r);
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("signer-not-allowed"), "{out}");
}

#[test]
fn a_record_forged_on_the_merged_in_side_is_still_refused_by_the_hook() {
    let (r, _) = signed_repo();
    r.ok(&["checkout", "-q", "-b", "topic"]);
    r.write("notes.txt", "a note\n");
    r.commit_all("a note");
    r.ok(&["checkout", "-q", "main"]);
    let carol = add_signer(&r, "carol");
    signed_patch(&r, &carol, "carol", &body_op("b", "beta, by carol"));
    // Main's record is edited after carol signed it, and committed past
    // the hook: its signature no longer verifies on main's own terms.
    let t = r.read("plan.noma.patches");
    let forged = t.replace("\"name\":\"carol\"", "\"name\":\"mallory\"");
    assert_ne!(forged, t);
    r.write("plan.noma.patches", &forged);
    r.ok(&["add", "-A"]);
    r.ok(&["commit", "-q", "--no-verify", "-m", "forged"]);

    r.ok(&["checkout", "-q", "topic"]);
    let o = r.git(&["merge", "-q", "--no-edit", "main"]);
    assert!(!o.status.success(), "the forgery was merged: {}", text(&o));
    let out = text(&o);
    assert!(out.contains("signature-invalid"), "{out}");
    assert!(out.contains("the branch being merged"), "{out}");
    r.ok(&["merge", "--abort"]);
}

/// The document with blocks `a` and `b` holding `a` and `b`.
fn doc_with(a: &str, b: &str) -> String {
    DOC.replace("alpha", a).replace("beta", b)
}

/// The records of `rev`'s transcript.
fn records_at(r: &Repo, rev: &str) -> Vec<serde_json::Value> {
    r.ok(&["show", &format!("{rev}:plan.noma.patches")])
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A branch and main that both patched block `a` (main patched `b` too),
/// and `git merge main` on the branch stopped on the conflict; returns the
/// repository, what the merge printed, and main's record of `a`.
fn merged_main_with_a_conflict() -> (Repo, String, serde_json::Value) {
    let r = Repo::with_genesis_record(DOC);
    r.ok(&["checkout", "-q", "-b", "pr"]);
    r.agent_patch("plan.noma", &body_op("a", "alpha, the branch's"));
    r.commit_all("pr: a");
    r.ok(&["checkout", "-q", "main"]);
    r.agent_patch("plan.noma", &body_op("a", "alpha, main's"));
    r.agent_patch("plan.noma", &body_op("b", "beta, main's"));
    r.commit_all("main: a and b");
    let theirs = records_at(&r, "main")
        .into_iter()
        .find(|rec| rec["op"]["content"] == "alpha, main's")
        .unwrap();
    r.ok(&["checkout", "-q", "pr"]);
    let o = r.git(&["merge", "--no-edit", "main"]);
    assert!(!o.status.success(), "no conflict: {}", text(&o));
    let out = text(&o);
    assert!(r.read("plan.noma").contains("::conflict"), "{out}");
    (r, out, theirs)
}

/// What must hold once the merge of main is committed: the PR check
/// passes, the document replays, every record of main is on the branch
/// (as itself or as a copy), and plain git merges the branch into main.
fn assert_first_class(r: &Repo, want_a: &str) {
    assert!(r.read("plan.noma").contains(want_a));
    assert!(r.read("plan.noma").contains("beta, main's"));
    let (code, out) = reconcile(r);
    assert_eq!(code, 0, "{out}");
    assert_ran(&r.noma(&["replay", "plan.noma"]));
    let ours = records_at(r, "HEAD");
    for rec in records_at(r, "main") {
        let id = &rec["op_id"];
        assert!(
            ours.iter()
                .any(|o| o["op_id"] == *id || o["parent_op_id"] == *id),
            "main's record {id} was lost"
        );
    }
    r.ok(&["merge-tree", "--write-tree", "main", "pr"]);
}

#[test]
fn merging_main_and_keeping_ours_passes_the_pr_check() {
    let (r, _, _) = merged_main_with_a_conflict();
    // Ours is the first fenced version: the state the transcript ends at.
    r.write(
        "plan.noma",
        &doc_with("alpha, the branch's", "beta, main's"),
    );
    r.commit_all("merge main, keeping ours");
    assert_first_class(&r, "alpha, the branch's");
}

#[test]
fn merging_main_and_keeping_theirs_by_the_printed_command_passes_the_pr_check() {
    let (r, out, _) = merged_main_with_a_conflict();
    r.write("plan.noma", &doc_with("alpha, main's", "beta, main's"));
    // The driver's own fix, run as printed.
    let fix = out
        .lines()
        .find_map(|l| l.split_once("fix: once no ::conflict block is left, "))
        .and_then(|(_, rest)| rest.split_once(", before"))
        .map(|(cmd, _)| cmd.to_string())
        .unwrap_or_else(|| panic!("no fix in {out}"));
    assert_ran(&r.sh(&fix));
    let o = r.git(&["commit", "-q", "--no-edit"]);
    assert_ran(&o);
    assert_first_class(&r, "alpha, main's");
}

#[test]
fn merging_main_and_reapplying_theirs_as_the_agent_passes_the_pr_check() {
    let (r, _, theirs) = merged_main_with_a_conflict();
    r.write(
        "plan.noma",
        &doc_with("alpha, the branch's", "beta, main's"),
    );
    let o = r.noma(&[
        "patch",
        "plan.noma",
        "--inplace",
        "--actor-kind",
        "agent",
        "--actor-name",
        "bot",
        "--parent-op-id",
        theirs["op_id"].as_str().unwrap(),
        "--reason",
        "merge main: its a wins",
        "--op",
        &body_op("a", "alpha, main's"),
    ]);
    assert_ran(&o);
    r.commit_all("merge main, main's a re-applied");
    assert_first_class(&r, "alpha, main's");
    // The resolution is the branch's, and the agent's.
    let last = records_at(&r, "HEAD").pop().unwrap();
    assert_eq!(last["actor"]["kind"], "agent");
    assert_eq!(last["parent_op_id"], theirs["op_id"]);
}

/// Found by the team-history simulator (seeds 9, 11, 16, 18, 20, 34 and
/// 51): pr2 merged main while main held the agent's record of `a`, so pr2
/// holds an applied copy of it; pr1 then merged main, resolved the
/// same-block conflict by the driver's printed fix (keeping main's `a`)
/// and landed, so main holds that record's rejected copy. pr2's next `git
/// merge main` keeps its applied copy and drops the rejected one (one
/// record per op), which `noma reconcile --base main` reported as main's
/// line removed (`transcript-rewritten`).
#[test]
fn merging_main_again_after_main_kept_a_rejected_copy_passes_the_pr_check() {
    let r = Repo::with_genesis_record(DOC);
    r.ok(&["branch", "pr1"]);
    r.ok(&["branch", "pr2"]);
    r.ok(&["checkout", "-q", "pr1"]);
    r.agent_patch("plan.noma", &body_op("a", "alpha, pr1's"));
    r.commit_all("pr1: a");
    r.ok(&["checkout", "-q", "pr2"]);
    r.agent_patch("plan.noma", &body_op("b", "beta, pr2's"));
    r.commit_all("pr2: b");
    r.ok(&["checkout", "-q", "main"]);
    r.agent_patch("plan.noma", &body_op("a", "alpha, main's"));
    r.commit_all("main: a");
    let mains = records_at(&r, "main").pop().unwrap();
    // pr2 is updated first: main's record of `a` arrives as an applied copy.
    r.ok(&["checkout", "-q", "pr2"]);
    r.ok(&["merge", "-q", "--no-edit", "main"]);
    // pr1 is updated, keeps main's `a` by the driver's fix, and lands.
    r.ok(&["checkout", "-q", "pr1"]);
    let o = r.git(&["merge", "--no-edit", "main"]);
    assert!(!o.status.success(), "no conflict: {}", text(&o));
    let out = text(&o);
    r.write("plan.noma", &doc_with("alpha, main's", "beta"));
    let fix = out
        .lines()
        .find_map(|l| l.split_once("fix: once no ::conflict block is left, "))
        .and_then(|(_, rest)| rest.split_once(", before"))
        .map(|(cmd, _)| cmd.to_string())
        .unwrap_or_else(|| panic!("no fix in {out}"));
    assert_ran(&r.sh(&fix));
    assert_ran(&r.git(&["commit", "-q", "--no-edit"]));
    r.ok(&["checkout", "-q", "main"]);
    r.ok(&["merge", "-q", "--no-ff", "--no-edit", "pr1"]);
    let rejected = records_at(&r, "main")
        .into_iter()
        .find(|rec| rec["parent_op_id"] == mains["op_id"] && rec["patch_result"] == "rejected");
    assert!(rejected.is_some(), "main holds no rejected copy");
    // pr2 is updated again: the PR check passes.
    r.ok(&["checkout", "-q", "pr2"]);
    r.ok(&["merge", "-q", "--no-edit", "main"]);
    let (code, out) = reconcile(&r);
    assert_eq!(code, 0, "{out}");
    assert_ran(&r.noma(&["replay", "plan.noma"]));
    assert!(r.read("plan.noma").contains("beta, pr2's"));
    assert!(r.read("plan.noma").contains("alpha, main's"));
    r.ok(&["merge-tree", "--write-tree", "main", "pr2"]);
}

/// Found by the team-history simulator (a `KNOWN_GAPS` flow): a branch
/// removed the document with `noma rm` while main patched it; `git merge
/// main` stopped on git's modify/delete of the document and a conflict of
/// its transcript, and no message named a command. The driver now names
/// the one that keeps the removal (the merged transcript holds main's
/// records as rejected copies), and the hook and the PR check accept the
/// tombstone that ends with them.
#[test]
fn merging_main_into_a_branch_that_removed_a_document_main_patched_converges() {
    let r = Repo::with_genesis_record(DOC);
    r.ok(&["checkout", "-q", "-b", "pr"]);
    assert_ran(&r.noma(&["rm", "plan.noma", "--actor-name", "alice"]));
    r.commit_all("pr: remove plan");
    r.ok(&["checkout", "-q", "main"]);
    r.agent_patch("plan.noma", &body_op("a", "alpha, main's"));
    r.commit_all("main: a");
    let mains = records_at(&r, "main").pop().unwrap();
    r.ok(&["checkout", "-q", "pr"]);
    let o = r.git(&["merge", "--no-edit", "main"]);
    assert!(!o.status.success(), "no conflict: {}", text(&o));
    let out = text(&o);
    let fix = out
        .lines()
        .find_map(|l| l.split_once("keeps the removal and the other side's records. fix: "))
        .map(|(_, cmd)| cmd.to_string())
        .unwrap_or_else(|| panic!("no fix in {out}"));
    assert_ran(&r.sh(&fix));
    assert_ran(&r.git(&["commit", "-q", "--no-edit"]));
    assert!(!r.path().join("plan.noma").exists());
    let (code, out) = reconcile(&r);
    assert_eq!(code, 0, "{out}");
    assert_ran(&r.noma(&["replay", "plan.noma"]));
    // Main's record is kept, as a copy.
    assert!(records_at(&r, "HEAD")
        .iter()
        .any(|rec| rec["parent_op_id"] == mains["op_id"]));
    r.ok(&["merge-tree", "--write-tree", "main", "pr"]);
}

/// The other way round: main removed the document (`noma rm`) while the
/// branch patched it. The driver names the command that keeps the edit
/// (main's removal stays as a rejected copy), and the PR check passes.
#[test]
fn merging_main_that_removed_a_document_the_branch_patched_converges() {
    let r = Repo::with_genesis_record(DOC);
    r.ok(&["checkout", "-q", "-b", "pr"]);
    r.agent_patch("plan.noma", &body_op("a", "alpha, the branch's"));
    r.commit_all("pr: a");
    r.ok(&["checkout", "-q", "main"]);
    assert_ran(&r.noma(&["rm", "plan.noma", "--actor-name", "alice"]));
    r.commit_all("main: remove plan");
    let removal = records_at(&r, "main").pop().unwrap();
    r.ok(&["checkout", "-q", "pr"]);
    let o = r.git(&["merge", "--no-edit", "main"]);
    assert!(!o.status.success(), "no conflict: {}", text(&o));
    let out = text(&o);
    let fix = out
        .lines()
        .find_map(|l| l.split_once("then noma rm \"plan.noma\"). fix: "))
        .map(|(_, cmd)| cmd.to_string())
        .unwrap_or_else(|| panic!("no fix in {out}"));
    assert_ran(&r.sh(&fix));
    assert_ran(&r.git(&["commit", "-q", "--no-edit"]));
    assert!(r.read("plan.noma").contains("alpha, the branch's"));
    let (code, out) = reconcile(&r);
    assert_eq!(code, 0, "{out}");
    assert_ran(&r.noma(&["replay", "plan.noma"]));
    assert!(records_at(&r, "HEAD")
        .iter()
        .any(|rec| rec["parent_op_id"] == removal["op_id"]));
    r.ok(&["merge-tree", "--write-tree", "main", "pr"]);
}

/// Found by the team-history simulator (seed 45): a branch that moved a
/// document merges main twice; between the two, main's transcript was
/// rewritten by a landed PR that had merged main itself (its record first,
/// main's as a copy). git takes main's transcript whole at the second
/// merge, so the branch holds main's copy, while its first-parent line
/// (the first merge) held the original: that copy is main's, not the
/// branch relabelling its own record (`copy-of-own-record` said so
/// before), and the PR check passes.
#[test]
fn a_copy_made_on_main_is_not_the_branchs_own_after_a_move() {
    let (r, alice) = signed_repo();
    // As the simulator runs: signatures warned about, not required (the
    // genesis record predates the policy).
    let config = r.read(".noma/config.yml");
    r.write(
        ".noma/config.yml",
        &config.replace("signatures: required", "signatures: warn"),
    );
    r.commit_all("signatures: warn");
    // A signed record first, so the sidecar exists and moves with it.
    signed_patch(&r, &alice, "alice", &body_op("a", "zero"));
    r.commit_all("signed");
    assert!(r.path().join("plan.noma.provenance").exists());
    r.ok(&["branch", "pr2"]);
    r.ok(&["checkout", "-q", "-b", "pr3"]);
    r.ok(&["mv", "plan.noma", "moved.noma"]);
    r.ok(&["mv", "plan.noma.patches", "moved.noma.patches"]);
    r.ok(&["mv", "plan.noma.provenance", "moved.noma.provenance"]);
    r.commit_all("move");
    // pr1 lands: alice's record A on main.
    r.ok(&["checkout", "-q", "main"]);
    signed_patch(&r, &alice, "alice", &body_op("a", "one"));
    r.commit_all("pr1: A");
    r.ok(&["checkout", "-q", "pr3"]);
    assert_ran(&r.git(&["merge", "-q", "--no-edit", "main"]));
    // pr2 merges main (A becomes a copy after pr2's own record) and lands.
    r.ok(&["checkout", "-q", "pr2"]);
    signed_patch(&r, &alice, "alice", &body_op("b", "two"));
    r.commit_all("pr2: C");
    assert_ran(&r.git(&["merge", "-q", "--no-edit", "main"]));
    r.ok(&["checkout", "-q", "main"]);
    assert_ran(&r.git(&["merge", "-q", "--no-edit", "pr2"]));
    // pr3 merges main again: git takes main's rewritten transcript.
    r.ok(&["checkout", "-q", "pr3"]);
    assert_ran(&r.git(&["merge", "-q", "--no-edit", "main"]));
    let t = r.read("moved.noma.patches");
    assert!(t.contains("\"parent_op_id\""), "main's copy arrived: {t}");
    let o = r.noma(&["reconcile", "--base", "main"]);
    assert!(o.status.success(), "{}", text(&o));
}

/// Found by the simulator (seed 27, after merges both ways across a move):
/// main and the branch made the same change, so main's record arrives in
/// `git merge main` as a copy that changes nothing (`noop`). The hook let
/// the merge through, but `noma reconcile --base main` reported main's
/// applied record as `transcript-rewritten`: only a rejected copy stood
/// for its op. A no-op copy keeps it too (its effect is in the state).
#[test]
fn sim_seed_27_main_making_the_branchs_change_again_passes_the_pr_check() {
    let r = Repo::with_genesis_record(DOC);
    r.ok(&["checkout", "-q", "-b", "pr"]);
    r.agent_patch("plan.noma", &body_op("a", "the same"));
    r.commit_all("pr: a");
    r.ok(&["checkout", "-q", "main"]);
    r.agent_patch("plan.noma", &body_op("a", "the same"));
    r.commit_all("main: a");
    r.ok(&["checkout", "-q", "pr"]);
    assert_ran(&r.git(&["merge", "-q", "--no-edit", "main"]));
    let main_rec = records_at(&r, "main").pop().unwrap();
    let copy = records_at(&r, "HEAD").pop().unwrap();
    assert_eq!(copy["parent_op_id"], main_rec["op_id"]);
    assert_eq!(copy["patch_result"], "noop");
    let (code, out) = reconcile(&r);
    assert_eq!(code, 0, "{out}");
    r.ok(&["merge-tree", "--write-tree", "main", "pr"]);
    // A removed record is still refused: the copy dropped.
    let t = r.read("plan.noma.patches");
    let kept: String = t.lines().take(2).map(|l| format!("{l}\n")).collect();
    r.write("plan.noma.patches", &kept);
    r.ok(&["add", "-A"]);
    r.ok(&["commit", "-q", "--no-verify", "-m", "drop main's copy"]);
    let (code, out) = reconcile(&r);
    assert_ne!(code, 0, "{out}");
}

/// `noma rm` of a document that the other side moved with `git mv`: git
/// stops on a rename/delete conflict of the document (no driver runs for
/// it, so no noma message yet). Done as git says (`git add -A`, then the
/// commit), the hook names the command that keeps the removal; run, the
/// merge commits, the moved path's transcript is the tombstone, and the
/// PR check and plain git's merge into main pass. Either side may be the
/// one that removed it.
#[test]
fn a_removal_meeting_a_move_of_the_document_keeps_the_removal_by_the_named_command() {
    for branch_removes in [true, false] {
        let r = Repo::with_genesis_record(DOC);
        let remove = |r: &Repo| {
            assert_ran(&r.noma(&["rm", "plan.noma", "--actor-name", "alice"]));
            r.commit_all("remove plan");
        };
        let moved = |r: &Repo| {
            r.ok(&["mv", "plan.noma", "moved.noma"]);
            r.ok(&["mv", "plan.noma.patches", "moved.noma.patches"]);
            r.commit_all("move plan");
        };
        r.ok(&["checkout", "-q", "-b", "pr"]);
        if branch_removes {
            remove(&r)
        } else {
            moved(&r)
        }
        r.ok(&["checkout", "-q", "main"]);
        if branch_removes {
            moved(&r)
        } else {
            remove(&r)
        }
        r.ok(&["checkout", "-q", "pr"]);
        let o = r.git(&["merge", "--no-edit", "main"]);
        assert!(!o.status.success(), "no conflict: {}", text(&o));
        assert!(text(&o).contains("rename/delete"), "{}", text(&o));
        r.ok(&["add", "-A"]);
        let (ok, out) = r.try_commit("merge main");
        assert!(!ok, "the restored document was committed: {out}");
        let fix = crate::common::fix_of(&out, "removed-document-restored");
        assert_eq!(fix, "git rm -q -f -- \"moved.noma\"", "{out}");
        assert_ran(&r.sh(&fix));
        let (ok, out) = r.try_commit("merge main");
        assert!(ok, "branch_removes={branch_removes}: {out}");
        assert!(!r.path().join("moved.noma").exists());
        let t = r.read("moved.noma.patches");
        assert!(t.contains("x-noma/remove_document"), "{t}");
        let (code, out) = reconcile(&r);
        assert_eq!(code, 0, "branch_removes={branch_removes}: {out}");
        r.ok(&["merge-tree", "--write-tree", "main", "pr"]);
    }
}

/// The command of the merge driver's line for `transcript` (`… fix: CMD`).
fn driver_fix(out: &str, transcript: &str) -> String {
    out.lines()
        .filter(|l| l.contains(&format!("merge-driver: {transcript}:")))
        .find_map(|l| l.split_once(". fix: "))
        .map(|(_, cmd)| cmd.to_string())
        .unwrap_or_else(|| panic!("no fix for {transcript} in {out}"))
}

/// `git mv` of plan.noma to moved.noma, then `noma rm moved.noma`, in two
/// commits.
fn move_then_remove(r: &Repo) {
    r.ok(&["mv", "plan.noma", "moved.noma"]);
    r.ok(&["mv", "plan.noma.patches", "moved.noma.patches"]);
    r.commit_all("move plan");
    assert_ran(&r.noma(&["rm", "moved.noma", "--actor-name", "alice"]));
    r.commit_all("remove moved");
}

/// Found by the simulator (seeds 54 and 109): the branch moved the
/// document and removed it under its new name while main patched it. `git
/// merge main` stops on the modify/delete of the old name, where git
/// leaves main's version, and the transcript driver's fix removed only the
/// new name; `git add -A` then committed main's version under the old name
/// without a transcript, through the hook, and the PR check failed on the
/// deleted transcript. The driver's fix now removes both names, and the
/// hook names the removal for a person who ran `git add -A` instead.
#[test]
fn sim_seed_54_a_document_moved_and_removed_on_the_branch_meets_mains_patch() {
    for by_the_hook in [false, true] {
        let r = Repo::with_genesis_record(DOC);
        r.ok(&["checkout", "-q", "-b", "pr"]);
        move_then_remove(&r);
        r.ok(&["checkout", "-q", "main"]);
        r.agent_patch("plan.noma", &body_op("a", "alpha, main's"));
        r.commit_all("main: a");
        let mains = records_at(&r, "main").pop().unwrap();
        r.ok(&["checkout", "-q", "pr"]);
        let o = r.git(&["merge", "--no-edit", "main"]);
        assert!(!o.status.success(), "no conflict: {}", text(&o));
        if by_the_hook {
            r.ok(&["add", "-A"]);
            let (ok, out) = r.try_commit("merge main");
            assert!(!ok, "main's version committed under the old name: {out}");
            let fix = crate::common::fix_of(&out, "removed-document-restored");
            assert_eq!(fix, "git rm -q -f -- \"plan.noma\"", "{out}");
            assert_ran(&r.sh(&fix));
        } else {
            assert_ran(&r.sh(&driver_fix(&text(&o), "moved.noma.patches")));
        }
        let (ok, out) = r.try_commit("merge main");
        assert!(ok, "by_the_hook={by_the_hook}: {out}");
        assert!(!r.path().join("plan.noma").exists());
        assert!(!r.path().join("moved.noma").exists());
        let (code, out) = reconcile(&r);
        assert_eq!(code, 0, "by_the_hook={by_the_hook}: {out}");
        // Main's record is kept, as a copy in the tombstone.
        let id = mains["op_id"].as_str().unwrap();
        let t = r.ok(&["show", "HEAD:moved.noma.patches"]);
        assert!(t.contains(&format!("\"parent_op_id\":\"{id}\"")), "{t}");
        r.ok(&["merge-tree", "--write-tree", "main", "pr"]);
    }
}

/// The other way round: main moved the document and removed it under its
/// new name while the branch patched it. The driver's fix named `git add`
/// of the new name, which the tree does not hold (git left the branch's
/// version under the old name); it now moves the kept edit to the
/// transcript's name, and the merge commits and passes the PR check.
#[test]
fn a_document_moved_and_removed_on_main_meets_the_branchs_patch() {
    let r = Repo::with_genesis_record(DOC);
    r.ok(&["checkout", "-q", "-b", "pr"]);
    r.agent_patch("plan.noma", &body_op("a", "alpha, the branch's"));
    r.commit_all("pr: a");
    r.ok(&["checkout", "-q", "main"]);
    move_then_remove(&r);
    r.ok(&["checkout", "-q", "pr"]);
    let o = r.git(&["merge", "--no-edit", "main"]);
    assert!(!o.status.success(), "no conflict: {}", text(&o));
    assert_ran(&r.sh(&driver_fix(&text(&o), "moved.noma.patches")));
    let (ok, out) = r.try_commit("merge main");
    assert!(ok, "{out}");
    assert!(r.read("moved.noma").contains("alpha, the branch's"));
    assert!(!r.path().join("plan.noma").exists());
    let (code, out) = reconcile(&r);
    assert_eq!(code, 0, "{out}");
    assert_ran(&r.noma(&["replay", "moved.noma"]));
    r.ok(&["merge-tree", "--write-tree", "main", "pr"]);
}

/// Found by the simulator (seed 141): main moved a document and removed
/// it under its new name; a branch that never touched it merges main. Git
/// does not pair the short old transcript with the tombstone, and the hook
/// warned that the document was "deleted with its transcript" and named a
/// `git restore` + `noma rm` (which failed once the merge committed). The
/// removal is recorded in the moved transcript: no warning.
#[test]
fn sim_seed_141_merging_main_that_moved_and_removed_a_document_warns_nothing() {
    let r = Repo::with_genesis_record(DOC);
    r.ok(&["checkout", "-q", "-b", "pr"]);
    r.write("notes.txt", "a note\n");
    r.commit_all("pr: a note");
    r.ok(&["checkout", "-q", "main"]);
    for i in 0..3 {
        r.agent_patch("plan.noma", &body_op("a", &format!("alpha {i}")));
    }
    r.commit_all("main: three records");
    move_then_remove(&r);
    r.ok(&["checkout", "-q", "pr"]);
    let o = r.git(&["merge", "--no-edit", "main"]);
    assert_ran(&o);
    assert!(!text(&o).contains("document-removed"), "{}", text(&o));
    let (code, out) = reconcile(&r);
    assert_eq!(code, 0, "{out}");
}

/// Found by the simulator (seed 87): a branch added a document and later
/// removed it; main got the document by a cherry-pick of its first commit
/// and patched it. `git merge main` stages main's document (new to the
/// merge base, so no conflict), and the driver's `git rm` refused to
/// remove a file staged with changes. The fix forces it.
#[test]
fn sim_seed_87_a_removal_meets_a_cherry_picked_copy_of_the_document() {
    let r = Repo::with_genesis_record(DOC);
    r.ok(&["checkout", "-q", "-b", "pr"]);
    r.write("new.noma", DOC);
    assert_ran(&r.noma(&["record", "new.noma"]));
    r.commit_all("pr: new");
    let added = r.ok(&["rev-parse", "HEAD"]);
    r.agent_patch("new.noma", &body_op("a", "alpha, the branch's"));
    r.commit_all("pr: a");
    assert_ran(&r.noma(&["rm", "new.noma", "--actor-name", "alice"]));
    r.commit_all("pr: remove new");
    r.ok(&["checkout", "-q", "main"]);
    r.ok(&["cherry-pick", added.trim()]);
    r.agent_patch("new.noma", &body_op("b", "beta, main's"));
    r.commit_all("main: b");
    r.ok(&["checkout", "-q", "pr"]);
    let o = r.git(&["merge", "--no-edit", "main"]);
    assert!(!o.status.success(), "no conflict: {}", text(&o));
    assert_ran(&r.sh(&driver_fix(&text(&o), "new.noma.patches")));
    let (ok, out) = r.try_commit("merge main");
    assert!(ok, "{out}");
    assert!(!r.path().join("new.noma").exists());
    let (code, out) = reconcile(&r);
    assert_eq!(code, 0, "{out}");
    r.ok(&["merge-tree", "--write-tree", "main", "pr"]);
}

/// `noma rm` meeting a `git mv` in `git rebase main`, either side the
/// remover: git stops on rename/delete and no noma code runs (the
/// transcripts merge without their driver). Done as git says (`git add
/// -A`, `git rebase --continue`, which runs no hook), the branch holds the
/// document beside its tombstone; the PR check named `noma record`, which
/// would record the other side's version as a re-creation of a removed
/// document. It now names the removal; run and committed through the
/// hook, the PR check passes. A cherry-pick's `--continue` runs the hook,
/// which names the same command.
#[test]
fn a_removal_meeting_a_move_through_rebase_and_cherry_pick_converges() {
    for (branch_removes, pick) in [(true, false), (false, false), (true, true), (false, true)] {
        let case = format!("branch_removes={branch_removes} pick={pick}");
        let r = Repo::with_genesis_record(DOC);
        let remove = |r: &Repo| {
            assert_ran(&r.noma(&["rm", "plan.noma", "--actor-name", "alice"]));
            r.commit_all("remove plan");
        };
        let moved = |r: &Repo| {
            r.ok(&["mv", "plan.noma", "moved.noma"]);
            r.ok(&["mv", "plan.noma.patches", "moved.noma.patches"]);
            r.commit_all("move plan");
        };
        r.ok(&["checkout", "-q", "-b", "pr"]);
        if branch_removes {
            remove(&r)
        } else {
            moved(&r)
        }
        r.ok(&["checkout", "-q", "main"]);
        if branch_removes {
            moved(&r)
        } else {
            remove(&r)
        }
        r.ok(&["checkout", "-q", "pr"]);
        let o = if pick {
            r.ok(&["reset", "-q", "--hard", "main"]);
            r.git(&["cherry-pick", "pr@{1}"])
        } else {
            r.git(&["rebase", "main"])
        };
        assert!(text(&o).contains("rename/delete"), "{case}: {}", text(&o));
        r.ok(&["add", "-A"]);
        let cont = if pick { "cherry-pick" } else { "rebase" };
        let o = r.cmd("env", &["GIT_EDITOR=true", "git", cont, "--continue"]);
        let fix = if pick {
            assert!(!o.status.success(), "{case}: {}", text(&o));
            crate::common::fix_of(&text(&o), "removed-document-restored")
        } else {
            assert_ran(&o);
            let (code, out) = reconcile(&r);
            assert_ne!(code, 0, "{case}: {out}");
            let line = out
                .lines()
                .find(|l| l.contains("[removed-document-restored]"))
                .unwrap_or_else(|| panic!("{case}: {out}"));
            let (_, cmd) = line.split_once("fix: ").unwrap();
            cmd.trim_end_matches(", then commit").to_string()
        };
        assert_eq!(fix, "git rm -q -f -- \"moved.noma\"", "{case}");
        assert_ran(&r.sh(&fix));
        if pick {
            let o = r.cmd(
                "env",
                &["GIT_EDITOR=true", "git", "cherry-pick", "--continue"],
            );
            assert_ran(&o);
        } else {
            r.commit_all("keep the removal");
        }
        assert!(!r.path().join("moved.noma").exists(), "{case}");
        let (code, out) = reconcile(&r);
        assert_eq!(code, 0, "{case}: {out}");
        r.ok(&["merge-tree", "--write-tree", "main", "HEAD"]);
    }
}

/// Found by the simulator (seed 1008 of base 1000): main removed
/// the document while the branch's records left it as the merge base had
/// it (a change and its undoing). Git deletes the document cleanly (our
/// side did not change it), the transcript driver keeps our records and
/// main's removal as a rejected copy, and its fix named `git add` of the
/// deleted document. It now restores HEAD's version first; the merge
/// commits and passes the PR check.
#[test]
fn sim_seed_1008_a_removal_meets_records_that_end_where_the_base_did() {
    let r = Repo::with_genesis_record(DOC);
    r.ok(&["checkout", "-q", "-b", "pr"]);
    r.agent_patch("plan.noma", &body_op("a", "changed"));
    r.agent_patch("plan.noma", &body_op("a", "alpha"));
    r.commit_all("pr: a change and its undoing");
    r.ok(&["checkout", "-q", "main"]);
    assert_ran(&r.noma(&["rm", "plan.noma", "--actor-name", "alice"]));
    r.commit_all("main: remove plan");
    r.ok(&["checkout", "-q", "pr"]);
    let o = r.git(&["merge", "--no-edit", "main"]);
    assert!(!o.status.success(), "no conflict: {}", text(&o));
    assert_ran(&r.sh(&driver_fix(&text(&o), "plan.noma.patches")));
    let (ok, out) = r.try_commit("merge main");
    assert!(ok, "{out}");
    assert_eq!(r.read("plan.noma"), DOC);
    let (code, out) = reconcile(&r);
    assert_eq!(code, 0, "{out}");
    r.ok(&["merge-tree", "--write-tree", "main", "pr"]);
}

/// Found by the simulator (seed 1012 of base 1000): main moved the
/// document and removed it under its new name while the branch patched
/// it; the named commands kept the branch's edit under main's name. Git did
/// not pair the old transcript with the new one, and the hook warned that
/// the old name was "deleted with its transcript", naming a `git restore`
/// that failed once the merge committed. The transcript went with the
/// document (the new one starts with its first record): no warning.
#[test]
fn sim_seed_1012_a_kept_edit_under_the_moved_name_is_no_unrecorded_removal() {
    let r = Repo::with_genesis_record(DOC);
    r.ok(&["checkout", "-q", "-b", "pr"]);
    for i in 0..3 {
        r.agent_patch("plan.noma", &body_op("b", &format!("beta {i}")));
    }
    r.commit_all("pr: three records");
    r.ok(&["checkout", "-q", "main"]);
    move_then_remove(&r);
    r.ok(&["checkout", "-q", "pr"]);
    let o = r.git(&["merge", "--no-edit", "main"]);
    assert!(!o.status.success(), "no conflict: {}", text(&o));
    assert_ran(&r.sh(&driver_fix(&text(&o), "moved.noma.patches")));
    let (ok, out) = r.try_commit("merge main");
    assert!(ok, "{out}");
    assert!(!out.contains("document-removed"), "{out}");
    assert!(r.read("moved.noma").contains("beta 2"));
    let (code, out) = reconcile(&r);
    assert_eq!(code, 0, "{out}");
}

/// Found by the simulator (seed 1012 of base 1000, after the test above):
/// main moved the document, patched it and removed it; the branch patched
/// another block under the old name. `noma repair` of the moved name then
/// block-merged the branch's edit with the empty (removed) document and
/// wrote `::conflict` blocks; keeping "theirs" and running the `noma
/// record` its `next:` line names emptied the document by a text edit, no
/// removal, and the next agent patch found no block. The merged transcript
/// keeps the edit over the removal (a rejected copy), as the driver does:
/// the document is now what it replays to, with no conflict block.
#[test]
fn sim_seed_1012_repair_keeps_the_edit_over_a_removal_after_a_move() {
    let r = Repo::with_genesis_record(DOC);
    // A history long enough that git pairs the moved transcript.
    for i in 0..6 {
        r.agent_patch("plan.noma", &body_op("a", &format!("alpha {i}")));
    }
    r.commit_all("main: history");
    r.ok(&["checkout", "-q", "-b", "pr"]);
    r.agent_patch("plan.noma", &body_op("b", "beta, the branch's"));
    r.commit_all("pr: b");
    r.ok(&["checkout", "-q", "main"]);
    r.ok(&["mv", "plan.noma", "moved.noma"]);
    r.ok(&["mv", "plan.noma.patches", "moved.noma.patches"]);
    r.commit_all("move plan");
    r.agent_patch("moved.noma", &body_op("a", "alpha, main's"));
    r.commit_all("main: a");
    assert_ran(&r.noma(&["rm", "moved.noma", "--actor-name", "alice"]));
    r.commit_all("remove moved");
    r.ok(&["checkout", "-q", "pr"]);
    let o = r.git(&["merge", "--no-edit", "main"]);
    assert!(!o.status.success(), "no conflict: {}", text(&o));
    // As the simulator did: the driver's fix, `git add -A` of what no
    // message resolves, then the hook's fix, which runs `noma repair`.
    assert_ran(&r.sh(&driver_fix(&text(&o), "moved.noma.patches")));
    r.ok(&["add", "-A"]);
    let (ok, out) = r.try_commit("merge main");
    assert!(!ok, "{out}");
    let o = r.sh(&crate::common::fix_of(&out, "transcript-fork"));
    assert_ran(&o);
    let out = text(&o);
    let doc = r.read("moved.noma");
    assert!(!doc.contains("::conflict"), "{out}\n{doc}");
    assert!(doc.contains("beta, the branch's"), "{doc}");
    assert!(doc.contains("alpha, main's"), "{doc}");
    assert_ran(&r.sh(&repair_next(&out)));
    let (ok, out) = r.try_commit("merge main");
    assert!(ok, "{out}");
    r.agent_patch("moved.noma", &body_op("b", "beta, later"));
    r.commit_all("pr: b again");
    let (code, out) = reconcile(&r);
    assert_eq!(code, 0, "{out}");
    r.ok(&["merge-tree", "--write-tree", "main", "pr"]);
}

/// The command of `noma repair`'s `next:` line in `out`.
fn repair_next(out: &str) -> String {
    out.lines()
        .find_map(|l| l.split_once("next: "))
        .map(|(_, n)| n.trim_start_matches("once no ::conflict block is left, "))
        .and_then(|n| n.split_once(", then ").map(|(cmd, _)| cmd.to_string()))
        .unwrap_or_else(|| panic!("no next: line in {out}"))
}

/// Found by the simulator (seed 1170 of base 1000): main moved the
/// document and removed it under its new name, the branch moved it to
/// another name and patched it. Git's rename/rename hands the transcript
/// to the driver under the merge base's name, and its keep-the-edit fix
/// named `git checkout HEAD --` of that name, which HEAD lacks. It now
/// names `noma repair` of the branch's name, whose `next:` line commits a
/// merge that passes the PR check and keeps the document patchable.
#[test]
fn sim_seed_1170_a_removal_after_a_move_meets_a_move_elsewhere() {
    let r = Repo::with_genesis_record(DOC);
    r.ok(&["checkout", "-q", "-b", "pr"]);
    r.ok(&["mv", "plan.noma", "ours.noma"]);
    r.ok(&["mv", "plan.noma.patches", "ours.noma.patches"]);
    r.commit_all("pr: move");
    r.agent_patch("ours.noma", &body_op("b", "beta, the branch's"));
    r.commit_all("pr: b");
    r.ok(&["checkout", "-q", "main"]);
    move_then_remove(&r);
    r.ok(&["checkout", "-q", "pr"]);
    let o = r.git(&["merge", "--no-edit", "main"]);
    assert!(!o.status.success(), "no conflict: {}", text(&o));
    let fix = driver_fix(&text(&o), "plan.noma.patches");
    assert_eq!(fix, "noma repair \"ours.noma\"", "{}", text(&o));
    let o = r.sh(&fix);
    assert_ran(&o);
    let out = text(&o);
    assert!(!r.read("ours.noma").contains("::conflict"), "{out}");
    assert_ran(&r.sh(&repair_next(&out)));
    let (ok, out) = r.try_commit("merge main");
    assert!(ok, "{out}");
    assert!(r.read("ours.noma").contains("beta, the branch's"));
    r.agent_patch("ours.noma", &body_op("a", "alpha, later"));
    r.commit_all("pr: a");
    let (code, out) = reconcile(&r);
    assert_eq!(code, 0, "{out}");
    r.ok(&["merge-tree", "--write-tree", "main", "pr"]);
}

/// Found by the simulator (seed 1008 of base 1000, after the test above):
/// main patched another block, then removed the document, while the
/// branch's records left it as the merge base had it. The merged
/// transcript keeps the branch's edit over the removal and applies main's
/// earlier record, but the driver's fix restored HEAD's version, which
/// lacks that record's change: the hook's `unrecorded-edit` fix (`git add`
/// of the document) repeated forever. The fix now names `noma repair`,
/// which writes the state the merged transcript replays to.
#[test]
fn sim_seed_1008_a_kept_edit_gets_mains_earlier_records_written() {
    for main_patches in [false, true] {
        let r = Repo::with_genesis_record(DOC);
        r.ok(&["checkout", "-q", "-b", "pr"]);
        r.agent_patch("plan.noma", &body_op("a", "changed"));
        r.agent_patch("plan.noma", &body_op("a", "alpha"));
        r.commit_all("pr: a change and its undoing");
        r.ok(&["checkout", "-q", "main"]);
        if main_patches {
            r.agent_patch("plan.noma", &body_op("b", "beta, main's"));
            r.commit_all("main: b");
        }
        assert_ran(&r.noma(&["rm", "plan.noma", "--actor-name", "alice"]));
        r.commit_all("main: remove plan");
        r.ok(&["checkout", "-q", "pr"]);
        let o = r.git(&["merge", "--no-edit", "main"]);
        assert!(!o.status.success(), "no conflict: {}", text(&o));
        let fix = driver_fix(&text(&o), "plan.noma.patches");
        assert!(fix.starts_with("noma repair \"plan.noma\""), "{fix}");
        assert_ran(&r.sh(&fix));
        let (ok, out) = r.try_commit("merge main");
        assert!(ok, "main_patches={main_patches}: {out}");
        assert_eq!(r.read("plan.noma").contains("beta, main's"), main_patches);
        assert_ran(&r.noma(&["replay", "plan.noma"]));
        let (code, out) = reconcile(&r);
        assert_eq!(code, 0, "main_patches={main_patches}: {out}");
        r.ok(&["merge-tree", "--write-tree", "main", "pr"]);
    }
}

/// Found by the simulator (seed 1062 of base 1000): a branch moved the
/// document and merged main twice, the second time taking main's
/// transcript in which a landed merge of main had turned main's signed
/// records into copies; then main moved the document elsewhere. After
/// git's rename/rename and `git add -A`, the PR check took those copies
/// for the branch's own records relabelled (`copy-of-own-record`): they
/// are main's, held there under the other name.
#[test]
fn sim_seed_1062_copies_main_made_stay_mains_after_a_rename_rename() {
    let r = Repo::with_genesis_record(DOC);
    let (alice, alice_pub) = keygen(&r, "alice");
    let mut config = r.read(".noma/config.yml");
    config.push_str("provenance:\n  signatures: warn\n");
    r.write(".noma/config.yml", &config);
    r.write(
        ".noma/allowed_signers",
        &format!("alice@example.com namespaces=\"noma\" {alice_pub}\n"),
    );
    signed_patch(&r, &alice, "alice", &body_op("b", "beta, first"));
    r.commit_all("alice signs b");
    r.ok(&["branch", "other"]);
    r.ok(&["checkout", "-q", "-b", "pr"]);
    signed_patch(&r, &alice, "alice", &body_op("a", "alpha, the branch's"));
    r.commit_all("pr: a");
    r.ok(&["checkout", "-q", "main"]);
    signed_patch(&r, &alice, "alice", &body_op("a", "alpha, main's"));
    signed_patch(&r, &alice, "alice", &body_op("b", "beta, main's"));
    r.commit_all("main: a and b");
    let move_to = |to: &str| {
        for ext in ["", ".patches", ".provenance"] {
            r.ok(&["mv", &format!("plan.noma{ext}"), &format!("{to}.noma{ext}")]);
        }
        r.commit_all(&format!("move to {to}"));
    };
    r.ok(&["checkout", "-q", "other"]);
    move_to("ours");
    assert_ran(&r.git(&["merge", "-q", "--no-edit", "main"]));
    r.ok(&["checkout", "-q", "pr"]);
    let o = r.git(&["merge", "--no-edit", "main"]);
    assert!(!o.status.success(), "no conflict: {}", text(&o));
    let out = text(&o);
    r.write("plan.noma", &doc_with("alpha, main's", "beta, main's"));
    let fix = out
        .lines()
        .find_map(|l| l.split_once("fix: once no ::conflict block is left, "))
        .and_then(|(_, rest)| rest.split_once(", before"))
        .map(|(cmd, _)| cmd.to_string())
        .unwrap_or_else(|| panic!("no fix in {out}"));
    assert_ran(&r.sh(&fix));
    assert_ran(&r.git(&["commit", "-q", "--no-edit"]));
    r.ok(&["checkout", "-q", "main"]);
    assert_ran(&r.git(&["merge", "-q", "--no-ff", "--no-edit", "pr"]));
    r.ok(&["checkout", "-q", "other"]);
    assert_ran(&r.git(&["merge", "-q", "--no-edit", "main"]));
    let key = alice.to_str().unwrap();
    let op = body_op("b", "beta, the branch's");
    assert_ran(&r.noma(&[
        "patch",
        "ours.noma",
        "--inplace",
        "--key",
        key,
        "--actor-name",
        "alice",
        "--op",
        &op,
    ]));
    r.commit_all("other: b");
    r.ok(&["checkout", "-q", "main"]);
    move_to("theirs");
    r.ok(&["checkout", "-q", "other"]);
    let o = r.git(&["merge", "--no-edit", "main"]);
    assert!(!o.status.success(), "no rename/rename: {}", text(&o));
    r.ok(&["add", "-A"]);
    let (ok, out) = r.try_commit("merge main");
    assert!(ok, "{out}");
    let (code, out) = reconcile(&r);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("copy-of-own-record"), "{out}");
}

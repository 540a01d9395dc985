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

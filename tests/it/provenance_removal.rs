//! Deletion as a recorded event, with the real `git` and `ssh-keygen`: a
//! branch that `git rm`s a guarded document fails `noma reconcile` under
//! `signatures: required` (listed in every format; warned with provenance
//! off) and is reported by the pre-commit hook; `noma rm` appends a signed
//! final record, passes both, and leaves a tombstone that replays. A
//! commit that changes only the provenance sidecar is checked by the hook
//! with the code reconcile gives.

use std::path::PathBuf;

use serde_json::{json, Value};

use crate::common::{assert_ran, signed_policy, text, Repo};

const DOC: &str = "# Plan\n\n::claim{id=\"c1\" confidence=0.5}\nOne.\n::\n\n::claim{id=\"c2\" confidence=0.5}\nTwo.\n::\n";

/// main: plan.noma with its genesis record, `signatures: required` and
/// `agents_need_approval: true`, alice's and the agent's keys allowed, and
/// two records alice signed (so the sidecar exists). Returns the repo and
/// the private keys (alice, agent).
fn signed_main() -> (Repo, PathBuf, PathBuf) {
    let r = Repo::with_genesis_record(DOC);
    let (alice, agent) = signed_policy(&r);
    r.commit_all("provenance on");
    for (id, v) in [("c1", 0.7), ("c2", 0.8)] {
        let op = json!({"op": "update_attribute", "id": id, "key": "confidence", "value": v});
        assert_ran(&r.noma(&[
            "patch",
            "plan.noma",
            "--inplace",
            "--key",
            alice.to_str().unwrap(),
            "--actor-name",
            "alice",
            "--op",
            &op.to_string(),
        ]));
    }
    r.commit_all("two signed edits");
    (r, alice, agent)
}

/// `noma reconcile --base main --format F`: (exit code, output).
fn reconcile(r: &Repo, format: &str) -> (i32, String) {
    let o = r.noma(&["reconcile", "--base", "main", "--format", format]);
    (o.status.code().unwrap_or(-1), text(&o))
}

/// Every format of `noma reconcile` names `plan.noma` as removed: text and
/// Markdown say how, JSON carries `removed`, GitHub and SARIF the
/// `document-removed` finding at `level`.
fn listed_everywhere(r: &Repo, removed: &str, level: &str) {
    let (_, human) = reconcile(r, "human");
    let word = match removed {
        "recorded" => "plan.noma: removed (recorded by noma rm)",
        _ => "plan.noma: REMOVED WITHOUT A RECORD",
    };
    assert!(human.contains(word), "{human}");
    let upper = level.to_uppercase();
    assert!(
        human.contains(&format!("{upper} [document-removed] plan.noma")),
        "{human}"
    );
    let (_, md) = reconcile(r, "markdown");
    assert!(md.contains("Removed on this branch:"), "{md}");
    let how = match removed {
        "recorded" => "- `plan.noma`: recorded with `noma rm`",
        _ => "- `plan.noma`: **no record says who removed it**",
    };
    assert!(md.contains(how), "{md}");
    assert!(!md.contains("No `.noma` document changed"), "{md}");
    let (_, js) = reconcile(r, "json");
    let v: Value = serde_json::from_str(&js).unwrap();
    let doc = &v["documents"][0];
    assert_eq!(doc["path"], "plan.noma", "{js}");
    assert_eq!(doc["removed"], removed, "{js}");
    let (_, gh) = reconcile(r, "github");
    let cmd = match level {
        "note" => "notice",
        l => l,
    };
    assert!(
        gh.contains(&format!(
            "::{cmd} file=plan.noma,line=1,title=noma document-removed::"
        )),
        "{gh}"
    );
    let (_, sarif) = reconcile(r, "sarif");
    let v: Value = serde_json::from_str(&sarif).unwrap();
    let results = v["runs"][0]["results"].as_array().unwrap();
    assert!(
        results
            .iter()
            .any(|x| x["ruleId"] == "document-removed" && x["level"] == level),
        "{sarif}"
    );
}

/// `git rm` of a signed document and its transcript and sidecar: the hook
/// blocks it, and committed past the hook it fails the PR check, listed
/// in every format with the fix.
#[test]
fn an_unrecorded_removal_fails_the_check_and_is_listed() {
    let (r, _, _) = signed_main();
    r.ok(&["checkout", "-q", "-b", "drop"]);
    r.ok(&[
        "rm",
        "-q",
        "plan.noma",
        "plan.noma.patches",
        "plan.noma.provenance",
    ]);
    let (ok, hook) = r.try_commit("drop the plan");
    assert!(!ok, "the hook let an unrecorded removal through: {hook}");
    assert!(hook.contains("[document-removed] plan.noma"), "{hook}");
    assert!(hook.contains("noma rm"), "{hook}");
    r.ok(&["commit", "-q", "--no-verify", "-m", "drop the plan"]);
    let (code, human) = reconcile(&r, "human");
    assert_eq!(code, 1, "{human}");
    assert!(human.contains(r#"noma rm "plan.noma""#), "{human}");
    listed_everywhere(&r, "unrecorded", "error");
    let (code, md) = reconcile(&r, "markdown");
    assert_eq!(code, 1, "{md}");
    assert!(md.contains("1 with errors"), "{md}");
}

/// The document alone deleted, its transcript kept: still no removal
/// record, and the hook's fix names `noma rm`.
#[test]
fn a_document_deleted_without_its_transcript_names_noma_rm() {
    let (r, _, _) = signed_main();
    r.ok(&["checkout", "-q", "-b", "drop"]);
    r.ok(&["rm", "-q", "plan.noma"]);
    let (ok, hook) = r.try_commit("drop the plan only");
    assert!(!ok, "{hook}");
    assert!(hook.contains("[transcript-orphaned]"), "{hook}");
    assert!(hook.contains(r#"noma rm "plan.noma""#), "{hook}");
    r.ok(&["commit", "-q", "--no-verify", "-m", "drop the plan only"]);
    let (code, out) = reconcile(&r, "human");
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("ERROR [document-removed] plan.noma"), "{out}");
    assert!(out.contains("does not end with a removal record"), "{out}");
}

/// With provenance off the removal is still listed and warned, in the
/// hook (which lets it through) and in every reconcile format.
#[test]
fn with_provenance_off_an_unrecorded_removal_is_listed_and_warned() {
    let r = Repo::with_genesis_record(DOC);
    r.ok(&["checkout", "-q", "-b", "drop"]);
    r.ok(&["rm", "-q", "plan.noma", "plan.noma.patches"]);
    let (ok, hook) = r.try_commit("drop the plan");
    assert!(ok, "{hook}");
    assert!(
        hook.contains("WARNING [document-removed] plan.noma"),
        "{hook}"
    );
    let (code, out) = reconcile(&r, "human");
    assert_eq!(code, 0, "{out}");
    listed_everywhere(&r, "unrecorded", "warning");
}

/// `noma rm` signs a final record and keeps the transcript and sidecar:
/// the hook and the PR check pass, the removal is listed, and the
/// tombstone replays (with its signatures).
#[test]
fn noma_rm_passes_the_hook_and_reconcile_and_the_tombstone_replays() {
    let (r, alice, _) = signed_main();
    r.ok(&["checkout", "-q", "-b", "drop"]);
    let o = r.noma(&[
        "rm",
        "plan.noma",
        "--key",
        alice.to_str().unwrap(),
        "--actor-name",
        "alice",
        "--reason",
        "superseded by the roadmap",
    ]);
    assert_ran(&o);
    let said = text(&o);
    assert!(
        said.contains(r#"git add -A -- "plan.noma" "plan.noma.patches" "plan.noma.provenance""#),
        "{said}"
    );
    assert!(!r.path().join("plan.noma").exists());
    let last = r.read("plan.noma.patches");
    let last: Value = serde_json::from_str(last.lines().last().unwrap()).unwrap();
    // The op names the state it removes (its record's pre_sha256).
    assert_eq!(
        last["op"],
        json!({"op": "x-noma/remove_document", "sha256": last["pre_sha256"]})
    );
    assert_eq!(last["post_sha256"], noma_core::doc::hash::sha256_hex(b""));
    assert_eq!(last["reason"], "superseded by the roadmap");
    assert!(r
        .read("plan.noma.provenance")
        .contains(last["op_id"].as_str().unwrap()));
    let o = r.noma(&["replay", "plan.noma"]);
    assert_ran(&o);
    let empty = noma_core::doc::hash::sha256_hex(b"");
    assert!(
        text(&o).contains(&format!(
            "ok: replay reproduces the document (sha256 {empty})"
        )),
        "{}",
        text(&o)
    );
    // The final record is signed like the others (the genesis record
    // predates the policy and stays unsigned).
    let o = r.noma(&["replay", "plan.noma", "--signatures"]);
    let said = text(&o);
    assert!(
        said.contains("ok: replay reproduces the document"),
        "{said}"
    );
    let id = last["op_id"].as_str().unwrap();
    assert!(
        said.contains(&format!("line 4 {id}: signed by alice@example.com")),
        "{said}"
    );
    // Run again: already removed, nothing written.
    let before = r.read("plan.noma.patches");
    assert_ran(&r.noma(&["rm", "plan.noma", "--key", alice.to_str().unwrap()]));
    assert_eq!(r.read("plan.noma.patches"), before);
    r.commit_all("drop the plan, recorded");
    let (code, out) = reconcile(&r, "human");
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("NOTE [document-removed] plan.noma"), "{out}");
    assert!(out.contains("by human alice"), "{out}");
    listed_everywhere(&r, "recorded", "note");
    let (code, md) = reconcile(&r, "markdown");
    assert_eq!(code, 0, "{md}");
    assert!(md.contains("all checks pass"), "{md}");
    // The committed tombstone replays from history too.
    assert_ran(&r.noma(&["replay", "plan.noma", "--rev", "HEAD"]));
}

/// A document committed without a transcript: `noma rm` starts the
/// transcript with its removal, and the tombstone replays from the
/// version git has (in the work tree, and as committed).
#[test]
fn a_tombstone_without_a_genesis_record_replays_from_history() {
    let r = Repo::init();
    assert_ran(&r.noma(&["init"]));
    r.write("docs/old.noma", "# Old\n\nText.\n");
    r.commit_all("old doc");
    assert_ran(&r.noma(&["rm", "docs/old.noma"]));
    assert!(!r.path().join("docs/old.noma").exists());
    let o = r.noma(&["replay", "docs/old.noma"]);
    assert_ran(&o);
    assert!(
        text(&o).contains("ok: replay reproduces the document"),
        "{}",
        text(&o)
    );
    r.commit_all("removed");
    let o = r.noma(&["replay", "docs/old.noma", "--rev", "HEAD"]);
    assert_ran(&o);
    assert!(
        text(&o).contains("ok: replay reproduces the document"),
        "{}",
        text(&o)
    );
}

/// The final record is verified like any record: unsigned under
/// `required` the hook blocks it; an agent's removal needs a person's
/// approval in the PR check; agents' patch requests cannot send the op.
#[test]
fn the_removal_record_is_verified_like_any_other() {
    let (r, alice, agent) = signed_main();
    r.ok(&["checkout", "-q", "-b", "drop"]);
    let o = r.noma(&[
        "patch",
        "plan.noma",
        "--inplace",
        "--op",
        r#"{"op":"x-noma/remove_document"}"#,
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("noma rm"), "{}", text(&o));
    assert_ran(&r.noma(&["rm", "plan.noma", "--no-sign"]));
    r.ok(&["add", "-A"]);
    let (ok, hook) = r.try_commit("unsigned removal");
    assert!(!ok, "{hook}");
    assert!(
        hook.contains("[unsigned-record] plan.noma.patches:"),
        "{hook}"
    );
    // An agent's signed removal: committed, but no person approved it.
    r.ok(&["reset", "-q", "--hard", "main"]);
    assert_ran(&r.sh(&format!(
        "NOMA_SIGNING_KEY='{}' noma rm plan.noma --actor-kind agent --actor-name bot --reason cleanup",
        agent.display()
    )));
    r.commit_all("agent removal");
    let (code, out) = reconcile(&r, "human");
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("ERROR [approval-missing] plan.noma.patches:4"),
        "{out}"
    );
    assert!(out.contains("NOTE [document-removed]"), "{out}");
    // A person approves the removal (the approver sees what it removes).
    let o = r.noma(&[
        "approve",
        "plan.noma",
        "--key",
        alice.to_str().unwrap(),
        "--yes",
    ]);
    assert_ran(&o);
    assert!(
        text(&o).contains("line 4 x-noma/remove_document"),
        "{}",
        text(&o)
    );
    r.commit_all("approved");
    let (code, out) = reconcile(&r, "human");
    assert_eq!(code, 0, "{out}");
}

/// The reviewer's summary of a branch that removed one document with
/// `noma rm` and deleted another without a record (provenance off, so
/// the branch passes with a warning).
#[test]
fn the_summary_lists_recorded_and_unrecorded_removals() {
    let r = Repo::with_genesis_record(DOC);
    r.write("notes.noma", "# Notes\n\nKept for a while.\n");
    assert_ran(&r.noma(&["record", "notes.noma"]));
    r.commit_all("notes");
    r.ok(&["checkout", "-q", "-b", "cleanup"]);
    assert_ran(&r.noma(&["rm", "plan.noma", "--reason", "superseded by the roadmap"]));
    r.ok(&["rm", "-q", "notes.noma", "notes.noma.patches"]);
    r.commit_all("cleanup");
    let (code, md) = reconcile(&r, "markdown");
    assert_eq!(code, 0, "{md}");
    insta::with_settings!({filters => vec![
        (r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "[op-id]"),
        (r"\b[0-9a-f]{8,64}\b", "[hash]"),
    ]}, {
        insta::assert_snapshot!(md);
    });
}

/// The hook's verdict on staged work (blocked, saying `code`), then the PR
/// check's on the same work committed past the hook (failed, saying it).
fn hook_and_check_agree(r: &Repo, message: &str, code: &str) {
    r.ok(&["add", "-A"]);
    let (ok, hook) = r.try_commit(message);
    assert!(!ok, "the hook let it through: {hook}");
    assert!(hook.contains(&format!("[{code}]")), "{hook}");
    r.ok(&["commit", "-q", "--no-verify", "-m", message]);
    let (exit, out) = reconcile(r, "human");
    assert_eq!(exit, 1, "{out}");
    assert!(out.contains(&format!("ERROR [{code}]")), "{out}");
}

/// A commit that changes only `plan.noma.provenance` (deletes it, breaks a
/// line, moves a signature onto another record) is blocked by the hook
/// with the code `noma reconcile` gives.
#[test]
fn a_commit_that_changes_only_the_sidecar_is_checked() {
    let (r, _, _) = signed_main();
    let side = r.read("plan.noma.provenance");
    let lines: Vec<&str> = side.lines().collect();
    assert_eq!(lines.len(), 2, "{side}");
    let op_id = |l: &str| {
        serde_json::from_str::<Value>(l).unwrap()["op_id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (first, second) = (op_id(lines[0]), op_id(lines[1]));

    r.ok(&["checkout", "-q", "-b", "deleted", "main"]);
    std::fs::remove_file(r.path().join("plan.noma.provenance")).unwrap();
    hook_and_check_agree(&r, "delete the sidecar", "unsigned-record");

    r.ok(&["checkout", "-q", "-b", "broken", "main"]);
    r.write(
        "plan.noma.provenance",
        &format!("{}\n{{\"kind\":\n", lines[0]),
    );
    hook_and_check_agree(&r, "break a line", "sidecar-invalid");

    // The first record's signature now claims the second record, whose
    // own line is gone: both records' signatures changed.
    r.ok(&["checkout", "-q", "-b", "moved", "main"]);
    r.write(
        "plan.noma.provenance",
        &format!("{}\n", lines[0].replace(&first, &second)),
    );
    hook_and_check_agree(&r, "move a signature", "signature-invalid");
    let (_, out) = reconcile(&r, "human");
    assert!(out.contains("ERROR [unsigned-record]"), "{out}");

    // Re-ordered and repeated lines are the same set: nothing to check.
    r.ok(&["checkout", "-q", "-b", "reordered", "main"]);
    r.write(
        "plan.noma.provenance",
        &format!("{}\n{}\n{}\n", lines[1], lines[0], lines[1]),
    );
    r.commit_all("same set");
    let (exit, out) = reconcile(&r, "human");
    assert_eq!(exit, 0, "{out}");
}

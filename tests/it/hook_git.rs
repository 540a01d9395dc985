//! The git hooks and `noma record` against real repositories driven by the
//! `git` CLI. Hooks are installed by hand (scripts that exec the test
//! binary), so these tests do not depend on `noma hooks install`.

use crate::common::{text, Repo, NOMA};

use std::path::PathBuf;
use std::process::Command;

/// This file's helpers on [`Repo`], a trait because inherent methods
/// would clash with other test modules' in the one test crate.
trait HookRepo {
    fn new() -> Self;
}

impl HookRepo for Repo {
    fn new() -> Repo {
        let r = Repo::init();
        for hook in ["pre-commit", "pre-merge-commit"] {
            let p = r.path().join(".git/hooks").join(hook);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, format!("#!/bin/sh\nexec \"{NOMA}\" hook {hook}\n")).unwrap();
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
            }
        }
        r
    }
}

/// A valid document with two directives far enough apart that git merges
/// edits to each without conflict.
fn doc() -> String {
    let mut s = String::from("# Plan\n\n::note{id=\"a\"}\nalpha\n::\n\n");
    for i in 0..6 {
        s.push_str(&format!("Paragraph {i}.\n\n"));
    }
    s.push_str("::note{id=\"b\"}\nbeta\n::\n");
    s
}

fn replace_op(id: &str, body: &str) -> String {
    serde_json::json!({
        "op": "replace_block",
        "id": id,
        "content": format!("::note{{id=\"{id}\"}}\n{body}\n::"),
    })
    .to_string()
}

#[test]
fn valid_passes_invalid_is_blocked_with_file_line_rule() {
    let r = Repo::new();
    r.write("plan.noma", &doc());
    r.ok(&["add", "-A"]);
    let (ok, out) = r.try_commit("valid");
    assert!(ok, "{out}");
    r.write(
        "plan.noma",
        &format!("{}\n::note{{id=\"a\"}}\ndup\n::\n", doc()),
    );
    r.ok(&["add", "-A"]);
    let (ok, out) = r.try_commit("invalid");
    assert!(!ok, "must be blocked: {out}");
    assert!(out.contains("ERROR [duplicate-id] plan.noma:"), "{out}");
    assert!(out.contains("commit blocked"), "{out}");
    // JSON for machines, exit 1.
    let o = r.noma(&["hook", "pre-commit", "--format", "json"]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["blocked"], true);
    assert_eq!(v["findings"][0]["code"], "duplicate-id");
}

#[test]
fn binary_staged_document_is_blocked() {
    let r = Repo::new();
    std::fs::write(r.path().join("bin.noma"), b"# x\n\0\xff").unwrap();
    r.ok(&["add", "-A"]);
    let (ok, out) = r.try_commit("bin");
    assert!(!ok);
    assert!(out.contains("[not-text] bin.noma"), "{out}");
}

#[test]
fn patched_then_hand_edited_then_recorded() {
    let r = Repo::new();
    r.write("plan.noma", &doc());
    r.ok(&["add", "-A"]);
    assert!(r.try_commit("base").0);
    r.agent_patch("plan.noma", &replace_op("a", "ALPHA"));
    r.ok(&["add", "-A"]);
    let (ok, out) = r.try_commit("patched");
    assert!(ok, "{out}");

    // A hand edit is blocked, naming the block.
    r.write(
        "plan.noma",
        &r.read("plan.noma").replace("beta", "BETA by hand"),
    );
    r.ok(&["add", "-A"]);
    let (ok, out) = r.try_commit("hand");
    assert!(!ok, "{out}");
    assert!(out.contains("[unrecorded-edit] plan.noma"), "{out}");
    assert!(out.contains("b (changed"), "{out}");
    assert!(out.contains("noma record"), "{out}");

    let o = r.noma(&["record", "plan.noma", "--reason", "typo"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("replace_body"), "{}", text(&o));
    let t = r.read("plan.noma.patches");
    let last: serde_json::Value = serde_json::from_str(t.lines().last().unwrap()).unwrap();
    assert_eq!(last["actor"]["kind"], "human");
    assert_eq!(last["reason"], "typo");
    r.ok(&["add", "-A"]);
    let (ok, out) = r.try_commit("recorded");
    assert!(ok, "{out}");
    // Nothing left to record.
    let o = r.noma(&["record", "plan.noma"]);
    assert!(text(&o).contains("nothing to record"), "{}", text(&o));
    // The replay of the whole transcript from the committed base agrees.
    let o = r.noma(&["record", "plan.noma", "--format", "json"]);
    assert!(o.status.success());
}

#[test]
fn record_refuses_prose_changes_with_lines_when_the_policy_forbids_text_edits() {
    let r = Repo::new();
    r.write(".noma/config.yml", "record_text_edits: false\n");
    r.write("plan.noma", &doc());
    r.ok(&["add", "-A"]);
    assert!(r.try_commit("base").0);
    r.write(
        "plan.noma",
        &doc().replace("Paragraph 2.", "Paragraph two."),
    );
    let o = r.noma(&["record", "plan.noma"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("lines 11-11"), "{}", text(&o));
}

#[test]
fn tampered_transcript_line_is_blocked_with_its_number() {
    let r = Repo::new();
    r.write("plan.noma", &doc());
    r.ok(&["add", "-A"]);
    assert!(r.try_commit("base").0);
    r.agent_patch("plan.noma", &replace_op("a", "one"));
    r.agent_patch("plan.noma", &replace_op("a", "two"));
    r.ok(&["add", "-A"]);
    assert!(r.try_commit("patched").0);
    let t = r.read("plan.noma.patches");
    let mut lines: Vec<String> = t.lines().map(str::to_string).collect();
    lines[0] = lines[0].replace("\"bot\"", "\"mallory\"");
    r.write("plan.noma.patches", &(lines.join("\n") + "\n"));
    r.ok(&["add", "-A"]);
    let (ok, out) = r.try_commit("tamper");
    assert!(!ok);
    assert!(
        out.contains("[transcript-tampered] plan.noma.patches:1:"),
        "{out}"
    );
    // Removing the transcript while the document stays is tampering too.
    r.ok(&["reset", "-q", "--hard"]);
    r.ok(&["rm", "-q", "--cached", "plan.noma.patches"]);
    let (ok, out) = r.try_commit("drop");
    assert!(!ok);
    assert!(out.contains("[transcript-removed]"), "{out}");
}

#[test]
fn partially_staged_files_are_judged_by_the_index() {
    let r = Repo::new();
    let bad = format!("{}\n::note{{id=\"a\"}}\ndup\n::\n", doc());
    r.write("plan.noma", &doc());
    r.ok(&["add", "-A"]);
    r.write("plan.noma", &bad); // working tree invalid, index valid
    let (ok, out) = r.try_commit("staged valid");
    assert!(ok, "{out}");
    r.ok(&["add", "-A"]); // index invalid
    r.write("plan.noma", &doc()); // working tree fixed, not staged
    let (ok, out) = r.try_commit("staged invalid");
    assert!(!ok, "{out}");
    assert!(out.contains("duplicate-id"), "{out}");
}

#[test]
fn rename_delete_spaces_and_unicode() {
    let r = Repo::new();
    let p = "my docs/é plan ü.noma";
    r.write(p, &doc());
    r.ok(&["add", "-A"]);
    assert!(r.try_commit("base").0);
    r.agent_patch(p, &replace_op("b", "patched"));
    r.ok(&["add", "-A"]);
    let (ok, out) = r.try_commit("patched");
    assert!(ok, "{out}");
    // Moving the document without its transcript is blocked.
    r.ok(&["mv", p, "moved ✓.noma"]);
    let (ok, out) = r.try_commit("move doc only");
    assert!(!ok, "{out}");
    assert!(out.contains("did not move along"), "{out}");
    r.ok(&["mv", &format!("{p}.patches"), "moved ✓.noma.patches"]);
    let (ok, out) = r.try_commit("move both");
    assert!(ok, "{out}");
    // Deleting document and transcript together has nothing to check.
    r.ok(&["rm", "-q", "moved ✓.noma", "moved ✓.noma.patches"]);
    let (ok, out) = r.try_commit("delete");
    assert!(ok, "{out}");
}

#[test]
fn merge_of_two_patched_branches_reports_the_fork_then_linear_passes() {
    let r = Repo::new();
    r.write(".gitattributes", "*.patches merge=union\n");
    r.write("plan.noma", &doc());
    r.ok(&["add", "-A"]);
    assert!(r.try_commit("base").0);
    r.agent_patch("plan.noma", &replace_op("a", "first"));
    r.ok(&["add", "-A"]);
    assert!(r.try_commit("shared patch").0);
    r.ok(&["checkout", "-q", "-b", "side"]);
    r.agent_patch("plan.noma", &replace_op("b", "theirs"));
    r.ok(&["add", "-A"]);
    assert!(r.try_commit("side patch").0);
    r.ok(&["checkout", "-q", "main"]);
    r.agent_patch("plan.noma", &replace_op("a", "ours"));
    r.ok(&["add", "-A"]);
    assert!(r.try_commit("main patch").0);

    let o = r.git(&["merge", "--no-ff", "-m", "merge side", "side"]);
    let out = text(&o);
    assert!(!o.status.success(), "the fork must block the merge: {out}");
    assert!(
        out.contains("[transcript-fork] plan.noma.patches:2:"),
        "{out}"
    );
    assert!(out.contains("HEAD has 1 record(s)"), "{out}");
    assert!(out.contains("MERGE_HEAD has 1 record(s)"), "{out}");
    // merge=union joined the two tails: the fix is one command.
    assert!(out.contains("(fix: noma repair \"plan.noma\""), "{out}");

    // Reconcile: keep ours, re-apply their op on top, commit the merge.
    r.ok(&["checkout", "HEAD", "--", "plan.noma", "plan.noma.patches"]);
    r.agent_patch("plan.noma", &replace_op("b", "theirs"));
    r.ok(&["add", "-A"]);
    let (ok, out) = r.try_commit("merge side (reconciled)");
    assert!(ok, "{out}");
}

#[test]
fn outside_a_repository_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(NOMA)
        .args(["hook", "pre-commit"])
        .current_dir(dir.path())
        .env("GIT_CEILING_DIRECTORIES", dir.path().parent().unwrap())
        .env_remove("GIT_DIR")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let _ = PathBuf::new();
}

#[test]
fn new_transcript_replays_from_a_base_found_in_history() {
    let r = Repo::new();
    r.write("plan.noma", &doc());
    r.ok(&["add", "-A"]);
    assert!(r.try_commit("v1").0);
    r.agent_patch("plan.noma", &replace_op("a", "patched"));
    // Commit the patched document first, its transcript later: the base
    // (v1) is then only in history, not at HEAD. The hook refuses the
    // first commit (transcript-unstaged), so it skips the hooks.
    r.ok(&["add", "plan.noma"]);
    let (ok, out) = r.try_commit("doc only");
    assert!(!ok && out.contains("[transcript-unstaged]"), "{out}");
    r.ok(&["commit", "-q", "--no-verify", "-m", "doc only"]);
    r.ok(&["add", "plan.noma.patches"]);
    let o = r.noma(&["hook", "pre-commit", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(o.status.code(), Some(0), "{v}");
    assert_eq!(v["transcripts"], 1);
    assert!(v["findings"].as_array().unwrap().is_empty(), "{v}");
    // A transcript whose records do not lead to the staged document is caught.
    let t = r.read("plan.noma.patches");
    r.write("plan.noma", &doc().replace("beta", "other"));
    r.ok(&["add", "-A"]);
    let o = r.noma(&["hook", "pre-commit"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("unrecorded-edit"), "{}", text(&o));
    let _ = t;
}

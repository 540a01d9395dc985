//! What the pre-commit hook reports, in the workflows teams use:
//! leftover merge-conflict blocks, one diagnostic format, file line numbers,
//! orphaned transcripts, symlinked documents, and hints that are commands
//! that work (each test runs the hint it was given).

use crate::common;
use crate::common::{fix_of, text, Repo};

fn repo() -> Repo {
    let r = Repo::init();
    let o = r.noma(&["init", "--no-mcp"]);
    assert!(o.status.success(), "{}", text(&o));
    r
}

fn add_commit(r: &Repo, msg: &str) -> (bool, String) {
    r.ok(&["add", "-A"]);
    r.try_commit(msg)
}

fn doc(a: &str) -> String {
    format!(
        "# Plan\n\n::note{{id=\"a\"}}\n{a}\n::\n\nSome prose.\n\n::note{{id=\"b\"}}\nbeta\n::\n"
    )
}

fn patch(r: &Repo, path: &str, id: &str, body: &str) {
    let op = serde_json::json!({
        "op": "replace_block",
        "id": id,
        "content": format!("::note{{id=\"{id}\"}}\n{body}\n::"),
    })
    .to_string();
    let o = r.noma(&["patch", path, "--inplace", "--op", &op]);
    assert!(o.status.success(), "patch: {}", text(&o));
}

/// The hook's findings as JSON.
fn findings(r: &Repo) -> Vec<serde_json::Value> {
    let o = r.noma(&["hook", "pre-commit", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["findings"].as_array().unwrap().clone()
}

/// Runs a hint's command with sh, asserting it works.
fn run_hint(r: &Repo, cmd: &str) {
    common::assert_ran(&r.sh(cmd));
}

#[test]
fn a_leftover_conflict_block_from_the_merge_driver_is_blocked() {
    let r = repo();
    r.write("plan.noma", &doc("base"));
    assert!(add_commit(&r, "base").0);
    r.ok(&["checkout", "-q", "-b", "side"]);
    r.write("plan.noma", &doc("theirs"));
    assert!(add_commit(&r, "side").0);
    r.ok(&["checkout", "-q", "main"]);
    r.write("plan.noma", &doc("ours"));
    assert!(add_commit(&r, "main").0);
    let o = r.git(&["merge", "-q", "side", "-m", "merge"]);
    assert!(!o.status.success(), "same-block edits conflict");
    let merged = r.read("plan.noma");
    assert!(merged.contains("::conflict{"), "{merged}");
    // Marked as resolved without resolving it: the hook blocks.
    let (ok, out) = add_commit(&r, "merge");
    assert!(!ok, "{out}");
    let line = 1 + merged
        .lines()
        .position(|l| l.contains(":conflict{"))
        .unwrap_or_else(|| panic!("{merged}"));
    assert!(
        out.contains(&format!(
            "ERROR [unresolved-conflict] plan.noma:{line}:1: unresolved merge conflict on block `a`"
        )),
        "{out}"
    );
    assert!(
        out.contains("(ours, HEAD)") && out.contains("(theirs, "),
        "{out}"
    );
    r.write("plan.noma", &doc("ours and theirs"));
    let (ok, out) = add_commit(&r, "merge");
    assert!(ok, "{out}");
}

#[test]
fn hook_lines_use_the_check_format() {
    let r = repo();
    r.write("plan.noma", "# Plan\n\n::risk{id=\"r\"}\nFloods.\n::\n");
    r.ok(&["add", "-A"]);
    let check = text(&r.noma(&["check", "plan.noma"]));
    let want = "WARNING [risk-without-owner] plan.noma:3:1: ";
    assert!(check.contains(want), "{check}");
    let (ok, out) = r.try_commit("warned");
    assert!(ok, "{out}");
    assert!(out.contains(want), "{out}");
}

#[test]
fn a_broken_chain_names_the_files_line() {
    let r = repo();
    r.write("plan.noma", &doc("alpha"));
    assert!(add_commit(&r, "base").0);
    patch(&r, "plan.noma", "a", "one");
    assert!(add_commit(&r, "one").0);
    patch(&r, "plan.noma", "a", "two");
    patch(&r, "plan.noma", "b", "three");
    // Break line 3's link to line 2 (the second new record).
    let t = r.read("plan.noma.patches");
    let mut lines: Vec<String> = t.lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 3);
    let mut rec: serde_json::Value = serde_json::from_str(&lines[2]).unwrap();
    assert!(rec["prev_entry_sha256"].is_string(), "{rec}");
    rec["prev_entry_sha256"] = "0".repeat(64).into();
    lines[2] = rec.to_string();
    r.write("plan.noma.patches", &(lines.join("\n") + "\n"));
    let (ok, out) = add_commit(&r, "tampered");
    assert!(!ok, "{out}");
    assert!(
        out.contains("[transcript-tampered] plan.noma.patches:3:1: prev_entry_sha256 does not chain onto line 2 "),
        "{out}"
    );
    let f = findings(&r);
    let fix = f[0]["fix"].as_str().unwrap();
    let cmd = fix.split(", then").next().unwrap();
    run_hint(&r, cmd);
    patch(&r, "plan.noma", "a", "two");
    let (ok, out) = add_commit(&r, "redone");
    assert!(ok, "{out}");
}

#[test]
fn a_deleted_document_cannot_leave_its_transcript_behind() {
    let r = repo();
    r.write("plan.noma", &doc("alpha"));
    assert!(add_commit(&r, "base").0);
    patch(&r, "plan.noma", "a", "one");
    assert!(add_commit(&r, "patched").0);
    r.ok(&["rm", "-q", "plan.noma"]);
    let (ok, out) = r.try_commit("delete doc only");
    assert!(!ok, "{out}");
    assert!(
        out.contains("ERROR [transcript-orphaned] plan.noma.patches: plan.noma is deleted"),
        "{out}"
    );
    let f = findings(&r);
    let fix = f[0]["fix"].as_str().unwrap();
    assert!(fix.contains("noma rm \"plan.noma\""), "{fix}");
    // The fix: bring the document back, remove it with a record.
    run_hint(
        &r,
        "git restore --staged --worktree --source=HEAD \"plan.noma\" && noma rm \"plan.noma\" && git add -A",
    );
    let (ok, out) = r.try_commit("removed, recorded");
    assert!(ok, "{out}");
    assert!(!out.contains("document-removed"), "{out}");
}

#[test]
fn a_transcript_moved_without_its_document_is_told_to_move_it() {
    let r = repo();
    r.write("plan.noma", &doc("alpha"));
    assert!(add_commit(&r, "base").0);
    patch(&r, "plan.noma", "a", "one");
    assert!(add_commit(&r, "patched").0);
    r.ok(&["mv", "plan.noma.patches", "moved.noma.patches"]);
    let (ok, out) = r.try_commit("move the transcript only");
    assert!(!ok, "{out}");
    let f = findings(&r);
    assert_eq!(f[0]["code"], "transcript-orphaned", "{f:?}");
    assert_eq!(f[0]["fix"], "git mv \"plan.noma\" \"moved.noma\"", "{f:?}");
    run_hint(&r, f[0]["fix"].as_str().unwrap());
    let (ok, out) = r.try_commit("move both");
    assert!(ok, "{out}");
}

#[test]
fn a_transcript_staged_without_its_document_is_told_to_git_add_it() {
    let r = repo();
    // New document and transcript, only the transcript staged.
    r.write("plan.noma", &doc("alpha"));
    assert!(add_commit(&r, "base").0);
    r.write("new.noma", &doc("alpha"));
    patch(&r, "new.noma", "a", "one");
    r.ok(&["add", "new.noma.patches"]);
    let (ok, out) = r.try_commit("transcript only");
    assert!(!ok, "{out}");
    assert!(
        out.contains("[transcript-orphaned] new.noma.patches"),
        "{out}"
    );
    let f = findings(&r);
    assert_eq!(f[0]["fix"], "git add \"new.noma\"", "{f:?}");
    run_hint(&r, f[0]["fix"].as_str().unwrap());
    // The base is not in history: a warning, not a block.
    let (ok, out) = r.try_commit("both");
    assert!(ok, "{out}");

    // A committed document patched, only the transcript staged.
    patch(&r, "plan.noma", "a", "one");
    r.ok(&["add", "plan.noma.patches"]);
    let (ok, out) = r.try_commit("transcript only");
    assert!(!ok, "{out}");
    let f = findings(&r);
    assert_eq!(f[0]["code"], "document-unstaged", "{f:?}");
    assert_eq!(f[0]["fix"], "git add \"plan.noma\"", "{f:?}");
    run_hint(&r, f[0]["fix"].as_str().unwrap());
    let (ok, out) = r.try_commit("both");
    assert!(ok, "{out}");
}

#[cfg(unix)]
#[test]
fn a_symlinked_document_is_refused() {
    let r = repo();
    r.write("real.noma", &doc("alpha"));
    assert!(add_commit(&r, "base").0);
    // The link's text would validate fine; its target is what matters.
    std::os::unix::fs::symlink("real.noma", r.path().join("link.noma")).unwrap();
    let (ok, out) = add_commit(&r, "link");
    assert!(!ok, "{out}");
    assert!(
        out.contains("ERROR [symlinked-document] link.noma: staged as a symlink to real.noma"),
        "{out}"
    );
    let f = findings(&r);
    let fix = f[0]["fix"].as_str().unwrap();
    assert!(fix.contains("git rm --cached \"link.noma\""), "{fix}");
    run_hint(&r, "git rm -q --cached \"link.noma\"");
    r.write("notes.txt", "the link stays local\n");
    r.ok(&["add", "notes.txt"]);
    let (ok, out) = r.try_commit("no link");
    assert!(ok, "{out}");
}

#[test]
fn the_hints_for_missing_and_torn_transcripts_work() {
    let r = repo();
    r.write(".noma/config.yml", "require_transcript: [\"**/*.noma\"]\n");
    r.write("plan.noma", &doc("alpha"));
    r.ok(&["add", "-A"]);
    let f = findings(&r);
    assert_eq!(f[0]["code"], "transcript-missing", "{f:?}");
    run_hint(&r, f[0]["fix"].as_str().unwrap());
    let (ok, out) = r.try_commit("base with an empty transcript");
    assert!(ok, "{out}");
    patch(&r, "plan.noma", "a", "one");
    assert!(add_commit(&r, "patched").0);

    // An interrupted append: half a record without its newline.
    patch(&r, "plan.noma", "a", "two");
    let t = r.read("plan.noma.patches");
    let whole = t.len() - t.lines().last().unwrap().len() - 1;
    r.write("plan.noma.patches", &t[..whole + 10]);
    r.write("plan.noma", &doc("one"));
    r.ok(&["add", "-A"]);
    let f = findings(&r);
    assert_eq!(f[0]["code"], "transcript-torn", "{f:?}");
    let fix = f[0]["fix"].as_str().unwrap();
    // The command, without the note on where the torn bytes go.
    run_hint(&r, fix.split(" (").next().unwrap());
    assert!(r.read("plan.noma.patches.torn").starts_with("{"));
    r.write("notes.txt", "something to commit\n");
    r.ok(&["add", "notes.txt"]);
    let (ok, out) = r.try_commit("repaired");
    assert!(ok, "{out}");
}

#[test]
fn a_hand_edit_between_two_records_gets_a_fix_that_works() {
    let r = repo();
    r.write("plan.noma", &doc("alpha"));
    assert!(add_commit(&r, "base").0);
    patch(&r, "plan.noma", "a", "one");
    // A hand edit, then a patch forced on top of it.
    r.write("plan.noma", &r.read("plan.noma").replace("beta", "by hand"));
    let op = serde_json::json!({
        "op": "replace_block",
        "id": "a",
        "content": "::note{id=\"a\"}\ntwo\n::",
    })
    .to_string();
    let o = r.noma(&["patch", "plan.noma", "--inplace", "--force", "--op", &op]);
    assert!(o.status.success(), "{}", text(&o));
    r.ok(&["add", "-A"]);
    let f = findings(&r);
    assert_eq!(f[0]["code"], "unrecorded-edit", "{f:?}");
    let fix = f[0]["fix"].as_str().unwrap();
    assert!(!fix.contains("restore it or record"), "{fix}");
    run_hint(&r, fix.split(", then").next().unwrap());
    patch(&r, "plan.noma", "a", "two");
    let (ok, out) = add_commit(&r, "redone");
    assert!(ok, "{out}");
}

/// A person discards an agent's uncommitted edit (`git restore` of the
/// document) but stages its transcript: the message names the command
/// that drops the records as well, and it works.
#[test]
fn a_discarded_agent_edit_is_told_how_to_drop_its_records() {
    let r = repo();
    r.write("plan.noma", &doc("alpha"));
    patch(&r, "plan.noma", "a", "one");
    assert!(add_commit(&r, "first patch").0);
    patch(&r, "plan.noma", "a", "two");
    r.ok(&["restore", "plan.noma"]);
    let (ok, out) = add_commit(&r, "discarded");
    assert!(!ok, "{out}");
    let f = findings(&r);
    let message = f[0]["message"].as_str().unwrap();
    let drop = message
        .split_once("drop the records too: ")
        .map(|(_, cmd)| cmd)
        .unwrap_or_else(|| panic!("no command in: {message}"));
    run_hint(&r, drop);
    let (ok, out) = add_commit(&r, "nothing left to commit");
    assert!(!ok && out.contains("nothing to commit"), "{out}");
    assert_eq!(
        r.ok(&["status", "--porcelain"]),
        "",
        "both files back at HEAD"
    );
}

#[cfg(unix)]
/// `git ARGS` through the hooks: whether it succeeded, and what it printed.
fn git_try(r: &Repo, args: &[&str]) -> (bool, String) {
    let o = r.git(args);
    (o.status.success(), text(&o))
}

#[cfg(unix)]
/// `git commit -a` leaves a new transcript out and `git commit <doc>`
/// leaves new records out: the agent's edit would land without them. The
/// hook says which file to add, and the commit then passes. A transcript
/// the team gitignores is their choice and is never read.
#[test]
fn a_commit_that_leaves_the_transcript_out_is_told_to_add_it() {
    let r = repo();
    r.write("plan.noma", &doc("alpha"));
    r.write(".gitignore", "scratch.noma.patches\n");
    r.write("scratch.noma", &doc("alpha"));
    assert!(add_commit(&r, "base").0);

    patch(&r, "plan.noma", "a", "one");
    let (ok, out) = git_try(&r, &["commit", "-q", "-a", "-m", "agent"]);
    assert!(!ok, "{out}");
    assert!(out.contains("it is untracked"), "{out}");
    run_hint(&r, &fix_of(&out, "transcript-unstaged"));
    let (ok, out) = git_try(&r, &["commit", "-q", "-a", "-m", "agent"]);
    assert!(ok, "{out}");
    assert_eq!(r.ok(&["status", "--porcelain"]), "");

    patch(&r, "plan.noma", "b", "two");
    let (ok, out) = git_try(&r, &["commit", "-q", "-m", "doc only", "plan.noma"]);
    assert!(!ok, "{out}");
    assert!(out.contains("its new records are not staged"), "{out}");
    run_hint(&r, &fix_of(&out, "transcript-unstaged"));
    let (ok, out) = git_try(&r, &["commit", "-q", "-a", "-m", "both"]);
    assert!(ok, "{out}");
    assert_eq!(r.ok(&["status", "--porcelain"]), "");

    patch(&r, "scratch.noma", "a", "one");
    let (ok, out) = git_try(&r, &["commit", "-q", "-a", "-m", "ignored transcript"]);
    assert!(ok, "{out}");
}

/// `git add -p` staging part of an agent's edits, with the transcript
/// staged whole: the hook used to call it an unrecorded edit and suggest
/// `noma record`, which records nothing here. It now says the document is
/// staged in part and that `git add` of it is the fix (the case of a
/// transcript staged alone is in the test above).
#[test]
fn a_document_staged_in_part_is_told_to_stage_the_rest() {
    let r = repo();
    r.write("plan.noma", &doc("alpha"));
    assert!(add_commit(&r, "base").0);
    patch(&r, "plan.noma", "a", "one");
    patch(&r, "plan.noma", "b", "two");
    let full = r.read("plan.noma");
    // What `git add -p` leaves: a's change staged, b's not.
    r.write("plan.noma", &full.replace("two", "beta"));
    r.ok(&["add", "plan.noma", "plan.noma.patches"]);
    r.write("plan.noma", &full);
    let (ok, out) = r.try_commit("part");
    assert!(!ok, "{out}");
    assert!(out.contains("[document-unstaged]"), "{out}");
    assert!(!out.contains("noma record"), "{out}");
    run_hint(&r, &fix_of(&out, "document-unstaged"));
    let (ok, out) = r.try_commit("whole");
    assert!(ok, "{out}");

    assert_eq!(r.ok(&["status", "--porcelain"]), "");
}

/// A document written where `noma rm` left a tombstone continues that
/// transcript (from the empty document the removal left): unrecorded, it
/// is an edit, as `noma reconcile` says (`replay-diverged`), and the
/// hook's fix records it.
#[test]
fn a_document_written_over_its_tombstone_needs_a_record() {
    let r = repo();
    r.write("plan.noma", &doc("alpha"));
    assert!(add_commit(&r, "base").0);
    patch(&r, "plan.noma", "a", "one");
    assert!(add_commit(&r, "patched").0);
    common::assert_ran(&r.noma(&["rm", "plan.noma"]));
    assert!(add_commit(&r, "removed").0);
    r.ok(&["tag", "removed"]);
    r.write("plan.noma", &doc("reborn"));
    let (ok, out) = add_commit(&r, "written over the tombstone");
    assert!(!ok, "{out}");
    run_hint(&r, &fix_of(&out, "unrecorded-edit"));
    let (ok, out) = r.try_commit("recorded");
    assert!(ok, "{out}");
    let o = r.noma(&["reconcile", "--base", "removed"]);
    assert!(o.status.success(), "{}", text(&o));
}

/// A guarded document moved to a path the policy does not guard (a
/// non-`.noma` name, or outside the include globs) is reported as the
/// removal it is, as `noma reconcile` reports it, and the fix moves it
/// back.
#[test]
fn a_document_moved_out_of_its_guard_is_reported() {
    let r = repo();
    r.write(
        ".noma/config.yml",
        "include: [\"docs/**/*.noma\", \"*.noma\"]\nexclude: [\"vendor/**\"]\n",
    );
    r.write("plan.noma", &doc("alpha"));
    assert!(add_commit(&r, "base").0);
    patch(&r, "plan.noma", "a", "one");
    assert!(add_commit(&r, "patched").0);
    for (to, to_t) in [
        ("plan.txt", "plan.txt.patches"),
        ("vendor/plan.noma", "vendor/plan.noma.patches"),
    ] {
        if let Some(dir) = std::path::Path::new(to).parent() {
            std::fs::create_dir_all(r.path().join(dir)).unwrap();
        }
        r.ok(&["mv", "plan.noma", to]);
        r.ok(&["mv", "plan.noma.patches", to_t]);
        let (ok, out) = r.try_commit("moved out of the guard");
        assert!(!ok || out.contains("WARNING [document-removed]"), "{out}");
        assert!(
            out.contains(&format!("plan.noma is moved to {to}")),
            "{out}"
        );
        // Not committed when it only warned: undo the commit to try the fix.
        if ok {
            r.ok(&["reset", "-q", "--soft", "HEAD~1"]);
        }
        run_hint(&r, &fix_of(&out, "document-removed"));
        let o = r.git(&["status", "--porcelain"]);
        assert_eq!(text(&o).trim(), "", "the fix restores the guarded paths");
    }
}

/// `noma rm` of a document and a similar new one in the same commit: git
/// pairs the two as a rename, but the removed one's tombstone stays at its
/// path, so the new document is new, not the old one moved without its
/// transcript (the hook's `transcript-removed` said so before, with a fix
/// that would have moved the tombstone). Reconcile agrees.
#[test]
fn a_removed_document_and_a_similar_new_one_are_not_a_move() {
    let r = repo();
    r.write("plan.noma", &doc("alpha with a body long enough to pair"));
    assert!(add_commit(&r, "base").0);
    patch(
        &r,
        "plan.noma",
        "a",
        "alpha with a body long enough to pair",
    );
    assert!(add_commit(&r, "patched").0);
    r.ok(&["tag", "before"]);
    common::assert_ran(&r.noma(&["rm", "plan.noma"]));
    r.write("next.noma", &doc("alpha with a body long enough to pair!"));
    r.ok(&["add", "-A"]);
    let status = text(&r.git(&["status", "--porcelain"]));
    assert!(status.contains("R  plan.noma -> next.noma"), "{status}");
    let (ok, out) = r.try_commit("removed one, added another");
    assert!(ok, "{out}");
    let o = r.noma(&["reconcile", "--base", "before"]);
    assert!(o.status.success(), "{}", text(&o));
}

//! Renames meet patches on a short history, with the real `git` and
//! `ssh-keygen`: a branch moves `plan.noma` with its transcript and
//! sidecar (`git mv`) and patches it; main's agent patches the old name.
//! Git does not pair a moved transcript (or sidecar) that a new record
//! leaves less than 50% alike, so the merge (either way) or rebase stops on
//! a modify/delete conflict of the old path. `noma repair NEW` merges the
//! two sides' records at the new path as the driver would (the other
//! side's as merge copies, with their actors and signatures); the hook
//! names that fix when the old path was simply removed; `noma reconcile`
//! and `noma replay` agree on the result.

use std::path::PathBuf;

use serde_json::{json, Value};

use crate::common::{assert_ran, fix_of, keygen, text, Repo};

const DOC: &str = "# Plan\n\n::note{id=\"a\"}\nalpha\n::\n\n::note{id=\"b\"}\nbeta\n::\n\n::note{id=\"c\"}\ngamma\n::\n";

struct Setup {
    r: Repo,
    bot: PathBuf,
    x: PathBuf,
}

impl Setup {
    /// `noma patch DOC --inplace` of block `id`'s body as agent `name`,
    /// signed with `key`.
    fn patch(&self, doc: &str, name: &str, id: &str, content: &str) {
        let key = if name == "x" { &self.x } else { &self.bot };
        let op = json!({"op": "replace_body", "id": id, "content": content}).to_string();
        let o = self.r.noma(&[
            "patch",
            doc,
            "--inplace",
            "--actor-kind",
            "agent",
            "--actor-name",
            name,
            "--key",
            key.to_str().unwrap(),
            "--op",
            &op,
        ]);
        assert_ran(&o);
    }

    /// `noma reconcile --base BASE --format json`: exit code and report.
    fn reconcile(&self, base: &str) -> (Option<i32>, Value) {
        let o = self
            .r
            .noma(&["reconcile", "--base", base, "--format", "json"]);
        let v = serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", text(&o)));
        (o.status.code(), v)
    }

    /// `noma replay DOC` succeeds.
    fn replays(&self, doc: &str) {
        assert_ran(&self.r.noma(&["replay", doc]));
    }
}

/// main: plan.noma, `signatures: required`, the agents bot and x allowed,
/// and one signed record by bot (a transcript and sidecar of one line
/// each). Branch `feat` moves the three files (`git mv`) and adds
/// `branch_records` signed records by bot; main then adds one by x.
fn setup(branch_records: usize) -> Setup {
    let r = Repo::init();
    assert_ran(&r.noma(&["init"]));
    let (bot, bot_pub) = keygen(&r, "bot");
    let (x, x_pub) = keygen(&r, "x");
    r.write("plan.noma", DOC);
    let mut config = r.read(".noma/config.yml");
    config.push_str("provenance:\n  signatures: required\n");
    r.write(".noma/config.yml", &config);
    r.write(
        ".noma/allowed_signers",
        &format!(
            "bot@agents.example namespaces=\"noma\" {bot_pub}\nx@agents.example namespaces=\"noma\" {x_pub}\n"
        ),
    );
    r.commit_all("plan, signatures required");
    let s = Setup { r, bot, x };
    s.patch("plan.noma", "bot", "a", "A1");
    s.r.commit_all("bot: a");
    s.r.ok(&["checkout", "-q", "-b", "feat"]);
    for f in ["plan.noma", "plan.noma.patches", "plan.noma.provenance"] {
        s.r.ok(&["mv", f, &f.replace("plan", "new")]);
    }
    for (i, v) in ["B1", "B2"][..branch_records].iter().enumerate() {
        s.patch("new.noma", "bot", ["b", "a"][i], v);
    }
    s.r.commit_all("move plan to new, bot patches it");
    s.r.ok(&["checkout", "-q", "main"]);
    s.patch("plan.noma", "x", "c", "C1");
    s.r.commit_all("x: c");
    s
}

/// Git stops on the old transcript's modify/delete conflict.
fn stops_on_modify_delete(o: &std::process::Output) {
    assert!(!o.status.success(), "git paired it after all: {}", text(o));
    let out = text(o);
    assert!(
        out.contains("CONFLICT (modify/delete): plan.noma.patches"),
        "{out}"
    );
}

/// The docs' recipe during the stopped merge or rebase: `noma repair
/// new.noma`, then exactly the `git add` its `next:` line names.
fn repair_and_stage(s: &Setup) {
    let o = s.r.noma(&["repair", "new.noma"]);
    assert_ran(&o);
    let out = text(&o);
    let next = out
        .lines()
        .find_map(|l| l.strip_prefix("next: "))
        .unwrap_or_else(|| panic!("{out}"));
    let add = next.split(", then").next().unwrap();
    assert!(add.starts_with("git add -A -- \"new.noma\""), "{out}");
    assert!(add.contains("\"plan.noma.patches\""), "{out}");
    assert!(add.contains("\"new.noma.provenance\""), "{out}");
    assert_ran(&s.r.sh(add));
    assert!(!s.r.path().join("plan.noma.patches").exists());
    assert_eq!(s.r.ok(&["ls-files", "-u"]), "", "still unmerged");
    let indexed = s.r.ok(&["ls-files"]);
    assert!(!indexed.contains("plan.noma"), "old path left: {indexed}");
}

/// The record of the merged transcript whose actor is the agent `name`
/// and that changed block `id`.
fn record_by(s: &Setup, name: &str, id: &str) -> Value {
    let t = s.r.read("new.noma.patches");
    t.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| r["actor"] == json!({"kind": "agent", "name": name}) && r["op"]["id"] == id)
        .unwrap_or_else(|| panic!("no record by agent {name} on {id}:\n{t}"))
}

/// reconcile's `records[]` entry for `op_id`.
fn listed(v: &Value, op_id: &Value) -> Value {
    let records = v["documents"][0]["records"].as_array().unwrap();
    records
        .iter()
        .find(|r| r["op_id"] == *op_id)
        .cloned()
        .unwrap_or_else(|| panic!("{op_id} not in records[]: {v:#}"))
}

#[test]
fn branch_merges_main_by_the_docs_recipe_keeping_the_agents_record_and_signature() {
    let s = setup(1);
    s.r.ok(&["checkout", "-q", "feat"]);
    let o = s.r.git(&["merge", "--no-edit", "main"]);
    stops_on_modify_delete(&o);
    // The document's driver said what to run.
    assert!(
        named_run(&text(&o)) == "noma repair \"new.noma\"",
        "{}",
        text(&o)
    );
    repair_and_stage(&s);
    let (ok, out) = s.r.try_commit("merge main");
    assert!(ok, "the hook refused: {out}");
    let (code, v) = s.reconcile("main");
    assert_eq!(code, Some(0), "{v:#}");
    let doc = &v["documents"][0];
    assert_eq!(doc["path"], "new.noma", "{v:#}");
    assert_eq!(
        (&doc["append_only"], &doc["replays"]),
        (&json!(true), &json!(true))
    );
    s.replays("new.noma");
    let merged = s.r.read("new.noma");
    assert!(
        ["A1", "B1", "C1"].iter().all(|b| merged.contains(b)),
        "{merged}"
    );
    // Main's agent record is a merge copy under x's name, still signed.
    let copy = record_by(&s, "x", "c");
    let rec = listed(&v, &copy["op_id"]);
    assert_eq!(rec["actor"], "agent x", "{rec:#}");
    assert_eq!(rec["signed_by"], "x@agents.example", "{rec:#}");
}

#[test]
fn main_merges_the_branch_by_the_docs_recipe() {
    let s = setup(1);
    let fork = s.r.ok(&["merge-base", "main", "feat"]);
    let o = s.r.git(&["merge", "--no-edit", "feat"]);
    stops_on_modify_delete(&o);
    assert!(
        named_run(&text(&o)) == "noma repair \"new.noma\"",
        "{}",
        text(&o)
    );
    repair_and_stage(&s);
    let (ok, out) = s.r.try_commit("merge feat");
    assert!(ok, "the hook refused: {out}");
    s.replays("new.noma");
    assert!(!s.r.path().join("plan.noma").exists());
    // The branch's agent record came over as a copy, with its signature.
    let copy = record_by(&s, "bot", "b");
    let (code, v) = s.reconcile(fork.trim());
    assert_eq!(code, Some(0), "{v:#}");
    let rec = listed(&v, &copy["op_id"]);
    assert_eq!(rec["signed_by"], "bot@agents.example", "{rec:#}");
    assert_eq!(
        listed(&v, &record_by(&s, "x", "c")["op_id"])["signed_by"],
        "x@agents.example"
    );
}

/// A rebase of the branch onto main, and a cherry-pick of its commit onto
/// a branch of main: the picked commit moved the document.
#[test]
fn a_rebase_or_cherry_pick_of_the_move_by_the_docs_recipe() {
    for how in ["rebase", "cherry-pick"] {
        let s = setup(1);
        if how == "rebase" {
            s.r.ok(&["checkout", "-q", "feat"]);
            stops_on_modify_delete(&s.r.git(&["rebase", "main"]));
        } else {
            s.r.ok(&["checkout", "-q", "-b", "picked", "main"]);
            stops_on_modify_delete(&s.r.git(&["cherry-pick", "feat"]));
        }
        repair_and_stage(&s);
        let o =
            s.r.cmd("env", &["GIT_EDITOR=true", "git", how, "--continue"]);
        assert_ran(&o);
        let (code, v) = s.reconcile("main");
        assert_eq!(code, Some(0), "{how}: {v:#}");
        s.replays("new.noma");
        let rec = listed(&v, &record_by(&s, "x", "c")["op_id"]);
        assert_eq!(rec["signed_by"], "x@agents.example", "{how}: {rec:#}");
        let rec = listed(&v, &record_by(&s, "bot", "b")["op_id"]);
        assert_eq!(rec["signed_by"], "bot@agents.example", "{how}: {rec:#}");
    }
}

/// Two records on the branch: the sidecar is not paired either, so both
/// old files stop the merge. Removing them (`git rm`, what git's message
/// suggests) and committing is blocked by the hook, which names the
/// whole fix, sidecar included; running exactly it and committing passes
/// the hook and reconcile.
#[test]
fn a_short_history_move_with_its_sidecar_resolves_by_the_hooks_fix() {
    let s = setup(2);
    s.r.ok(&["checkout", "-q", "feat"]);
    let o = s.r.git(&["merge", "--no-edit", "main"]);
    stops_on_modify_delete(&o);
    assert!(
        text(&o).contains("CONFLICT (modify/delete): plan.noma.provenance"),
        "{}",
        text(&o)
    );
    s.r.ok(&["rm", "-q", "plan.noma.patches", "plan.noma.provenance"]);
    let (ok, out) = s.r.try_commit("merge main");
    assert!(!ok, "main's records were dropped silently: {out}");
    let fix = fix_of(&out, "transcript-fork");
    assert_eq!(
        fix,
        "noma repair \"new.noma\" && git add -A -- \"new.noma\" \"new.noma.patches\" \"new.noma.provenance\""
    );
    assert_ran(&s.r.sh(&fix));
    let (ok, out) = s.r.try_commit("merge main");
    assert!(ok, "{out}");
    let (code, v) = s.reconcile("main");
    assert_eq!(code, Some(0), "{v:#}");
    s.replays("new.noma");
    let rec = listed(&v, &record_by(&s, "x", "c")["op_id"]);
    assert_eq!(rec["signed_by"], "x@agents.example", "{rec:#}");
}

/// The recipe the docs used to give (keep the moved transcript, `noma
/// record` the merged document) drops main's agent record: the hook now
/// blocks it, naming `noma repair`. Committed anyway, `noma reconcile`
/// fails for the true cause (main's record is gone: not append-only) and,
/// like `noma replay`, says the transcript replays.
#[test]
fn recording_over_a_dropped_side_is_blocked_and_reconcile_agrees_with_replay() {
    let s = setup(1);
    s.r.ok(&["checkout", "-q", "feat"]);
    stops_on_modify_delete(&s.r.git(&["merge", "--no-edit", "main"]));
    s.r.ok(&["rm", "-q", "plan.noma.patches"]);
    assert_ran(&s.r.noma(&["record", "new.noma"]));
    s.r.ok(&["add", "-A"]);
    let (ok, out) = s.r.try_commit("merge main");
    assert!(!ok, "{out}");
    assert!(
        fix_of(&out, "transcript-fork").starts_with("noma repair \"new.noma\""),
        "{out}"
    );
    s.r.ok(&["commit", "-q", "--no-verify", "-m", "merge main"]);
    s.replays("new.noma");
    let (code, v) = s.reconcile("main");
    assert_eq!(code, Some(1), "{v:#}");
    let doc = &v["documents"][0];
    assert_eq!(doc["append_only"], false, "{v:#}");
    assert_eq!(doc["replays"], true, "replay says it replays: {v:#}");
    let codes: Vec<&str> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap())
        .collect();
    assert!(codes.contains(&"transcript-rewritten"), "{v:#}");
    assert!(!codes.contains(&"replay-diverged"), "{v:#}");
}

/// The `noma repair` command a message's `fix:` names (the end of its
/// line).
fn named_run(out: &str) -> String {
    out.lines()
        .find_map(|l| l.split_once("fix: noma repair").map(|(_, r)| r))
        .map(|r| format!("noma repair{}", r.trim_end()))
        .unwrap_or_else(|| panic!("no `noma repair` named:\n{out}"))
}

/// Runs `noma repair` as `repair` names it, then the `git add` and the
/// continuing command of its `next:` line, exactly as printed.
fn follow_repair(s: &Setup, repair: &str) {
    let o = s.r.sh(repair);
    assert_ran(&o);
    let out = text(&o);
    let next = out
        .lines()
        .find_map(|l| l.strip_prefix("next: "))
        .unwrap_or_else(|| panic!("{out}"));
    let (add, then) = next.split_once(", then ").unwrap();
    assert_ran(&s.r.sh(add));
    let then = then.trim_matches('`');
    assert!(then.starts_with("git "), "{next}");
    let o = s.r.sh(&format!("GIT_EDITOR=true {then}"));
    assert_ran(&o);
    assert_eq!(s.r.ok(&["ls-files", "-u"]), "", "still unmerged");
    assert!(!s.r.ok(&["ls-files"]).contains("plan.noma"));
}

/// The three ways a move meets a patch without a merge commit: the
/// branch rebased onto main, the move cherry-picked onto main, and
/// main's patch cherry-picked onto the moved side. Git stops on the old
/// transcript; its own message names `noma repair` (the driver knows the
/// picked commit from git's label), and running what it names, then the
/// `next:` line, converges: main's agent record kept under x's name and
/// signature, everything reconciles and replays.
#[test]
fn rebase_and_both_cherry_picks_converge_by_the_commands_the_messages_name() {
    for how in ["rebase", "pick the move", "pick the patch"] {
        let s = setup(1);
        let o = match how {
            "rebase" => {
                s.r.ok(&["checkout", "-q", "feat"]);
                s.r.git(&["rebase", "main"])
            }
            "pick the move" => {
                s.r.ok(&["checkout", "-q", "-b", "picked", "main"]);
                s.r.git(&["cherry-pick", "feat"])
            }
            _ => {
                s.r.ok(&["checkout", "-q", "feat"]);
                s.r.git(&["cherry-pick", "main"])
            }
        };
        stops_on_modify_delete(&o);
        let repair = named_run(&text(&o));
        assert_eq!(repair, "noma repair \"new.noma\"", "{how}");
        follow_repair(&s, &repair);
        let (code, v) = s.reconcile("main");
        assert_eq!(code, Some(0), "{how}: {v:#}");
        s.replays("new.noma");
        let x = record_by(&s, "x", "c");
        let rec = listed(&v, &x["op_id"]);
        assert_eq!(rec["actor"], "agent x", "{how}: {rec:#}");
        assert_eq!(rec["signed_by"], "x@agents.example", "{how}: {rec:#}");
        let rec = listed(&v, &record_by(&s, "bot", "b")["op_id"]);
        assert_eq!(rec["signed_by"], "bot@agents.example", "{how}: {rec:#}");
    }
}

/// `noma repair` with no argument during the stop finds the moved
/// document itself.
#[test]
fn repair_without_an_argument_finds_the_moved_document() {
    let s = setup(1);
    s.r.ok(&["checkout", "-q", "feat"]);
    stops_on_modify_delete(&s.r.git(&["rebase", "main"]));
    follow_repair(&s, "noma repair");
    let (code, v) = s.reconcile("main");
    assert_eq!(code, Some(0), "{v:#}");
    assert_eq!(record_by(&s, "x", "c")["actor"]["name"], "x");
    // Outside an operation there is nothing to find: a usage error.
    let o = s.r.noma(&["repair"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("noma repair FILE"), "{}", text(&o));
}

/// A cherry-pick resolved as git's own message suggests (`git rm` of the
/// old transcript, `--continue`): the hook blocks it and names `noma
/// repair`, never a path HEAD lacks nor `noma record` (which would turn
/// the agent's record into a person's edit); its fix, then `--continue`,
/// passes and keeps the agent's actor.
#[test]
fn a_cherry_pick_resolved_by_git_rm_is_blocked_with_the_repair_fix() {
    for pick_move in [true, false] {
        let s = setup(1);
        if pick_move {
            s.r.ok(&["checkout", "-q", "-b", "picked", "main"]);
            stops_on_modify_delete(&s.r.git(&["cherry-pick", "feat"]));
        } else {
            s.r.ok(&["checkout", "-q", "feat"]);
            stops_on_modify_delete(&s.r.git(&["cherry-pick", "main"]));
        }
        s.r.ok(&["rm", "-q", "plan.noma.patches"]);
        let cont = ["GIT_EDITOR=true", "git", "cherry-pick", "--continue"];
        let o = s.r.cmd("env", &cont);
        assert!(!o.status.success(), "{pick_move}: {}", text(&o));
        let out = text(&o);
        assert!(!out.contains("noma record"), "{pick_move}: {out}");
        assert!(!out.contains("HEAD:\"new.noma"), "{pick_move}: {out}");
        let fix = fix_of(&out, "transcript-fork");
        assert_eq!(
            fix,
            "noma repair \"new.noma\" && git add -A -- \"new.noma\" \"new.noma.patches\" \"new.noma.provenance\"",
            "{pick_move}"
        );
        assert_ran(&s.r.sh(&fix));
        assert_ran(&s.r.cmd("env", &cont));
        let (code, v) = s.reconcile("main");
        assert_eq!(code, Some(0), "{pick_move}: {v:#}");
        s.replays("new.noma");
        let rec = listed(&v, &record_by(&s, "x", "c")["op_id"]);
        assert_eq!(rec["actor"], "agent x", "{pick_move}: {rec:#}");
    }
}

/// Main moves a document (a history long enough for git to pair the
/// transcript) that a PR patched under the old name, then patches it
/// again. The PR check against main compares with main's moved files (it
/// used to read main's side as gone: a revert of every record); after
/// the PR merges main the check passes too, and main merging the PR
/// replays.
#[test]
fn main_renaming_a_document_a_pr_patched_reconciles() {
    let r = Repo::init();
    assert_ran(&r.noma(&["init"]));
    r.write("plan.noma", DOC);
    r.commit_all("plan");
    let patch = |doc: &str, id: &str, content: &str| {
        let op = json!({"op": "replace_body", "id": id, "content": content}).to_string();
        r.agent_patch(doc, &op);
    };
    for i in 0..30 {
        patch("plan.noma", "a", &format!("A{i}"));
    }
    r.commit_all("bot: a, 30 times");
    r.ok(&["checkout", "-q", "-b", "pr"]);
    patch("plan.noma", "b", "B1");
    r.commit_all("pr: b");
    r.ok(&["checkout", "-q", "main"]);
    r.ok(&["mv", "plan.noma", "new.noma"]);
    r.ok(&["mv", "plan.noma.patches", "new.noma.patches"]);
    r.commit_all("move plan to new");
    patch("new.noma", "c", "C1");
    r.commit_all("main: c");
    r.ok(&["checkout", "-q", "pr"]);
    let reconcile = || {
        let o = r.noma(&["reconcile", "--base", "main", "--format", "json"]);
        let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", text(&o)));
        (o.status.code(), v)
    };
    let (code, v) = reconcile();
    assert_eq!(code, Some(0), "{v:#}");
    assert_eq!(v["documents"][0]["rebases"], true, "{v:#}");
    r.ok(&["merge", "--no-edit", "main"]);
    let (code, v) = reconcile();
    assert_eq!(code, Some(0), "{v:#}");
    assert_eq!(v["documents"][0]["path"], "new.noma", "{v:#}");
    r.ok(&["checkout", "-q", "main"]);
    r.ok(&["merge", "--no-edit", "pr"]);
    assert_ran(&r.noma(&["replay", "new.noma"]));
    let merged = r.read("new.noma");
    assert!(
        ["A29", "B1", "C1"].iter().all(|b| merged.contains(b)),
        "{merged}"
    );
}

/// A moved transcript whose committed line was changed in the same
/// commit: the hook's advice restores it from the path HEAD has (there
/// is nothing at the new path in HEAD), and following it passes.
#[test]
fn a_rewritten_moved_transcript_is_restored_from_heads_path() {
    let r = Repo::with_genesis_record(DOC);
    let op = json!({"op": "replace_body", "id": "a", "content": "A1"}).to_string();
    r.agent_patch("plan.noma", &op);
    r.commit_all("bot: a");
    r.ok(&["mv", "plan.noma", "new.noma"]);
    r.ok(&["mv", "plan.noma.patches", "new.noma.patches"]);
    let t = r.read("new.noma.patches");
    r.write("new.noma.patches", &t.replacen("\"bot\"", "\"b0t\"", 1));
    r.ok(&["add", "-A"]);
    let (ok, out) = r.try_commit("move");
    assert!(!ok, "{out}");
    assert!(!out.contains("HEAD:\"new.noma.patches\""), "{out}");
    assert!(!out.contains("--source=HEAD \"new.noma.patches\""), "{out}");
    let fix = fix_of(&out, "transcript-tampered");
    assert!(fix.contains("git show HEAD:\"plan.noma.patches\""), "{out}");
    let keep = out
        .split("record its change instead: ")
        .nth(1)
        .and_then(|s| s.split(" (fix: ").next())
        .unwrap_or_else(|| panic!("{out}"));
    assert_ran(&r.sh(keep));
    let (ok, out) = r.try_commit("move");
    assert!(ok, "{out}");
    assert_ran(&r.noma(&["replay", "new.noma"]));
}

/// The modify/delete conflict resolved by keeping the old transcript
/// (`git add -A`): the hook blocks the merge, and its fix stages the old
/// transcript's removal too, so no orphan of it is committed.
#[test]
fn the_hooks_rename_fix_removes_the_old_transcript() {
    let s = setup(1);
    s.r.ok(&["checkout", "-q", "feat"]);
    stops_on_modify_delete(&s.r.git(&["merge", "--no-edit", "main"]));
    s.r.ok(&["add", "-A"]);
    let (ok, out) = s.r.try_commit("merge main");
    assert!(!ok, "{out}");
    let fix = fix_of(&out, "transcript-fork");
    assert!(fix.contains("\"plan.noma.patches\""), "{fix}");
    assert_ran(&s.r.sh(&fix));
    let (ok, out) = s.r.try_commit("merge main");
    assert!(ok, "{out}");
    let files = s.r.ok(&["ls-tree", "-r", "--name-only", "HEAD"]);
    assert!(
        !files.contains("plan.noma"),
        "an orphan is committed: {files}"
    );
    let (code, v) = s.reconcile("main");
    assert_eq!(code, Some(0), "{v:#}");
}

/// The commands of the `fix:` and `next:` lines of `out`, as the team
/// simulator reads them: the command ends the line, "once no ::conflict
/// block is left, " (flagged) and ", then …" are not part of it.
/// Runs every fix the hook printed, commits the merge (which must now
/// pass the hook, with the old name gone) and returns the PR check's
/// passing verdict against main.
fn fixes_commit_and_reconcile(s: &Setup, fixes: Vec<(String, bool)>) -> Value {
    for (cmd, _) in fixes {
        assert_ran(&s.r.sh(&cmd));
    }
    let (ok, out) = s.r.try_commit("merge main");
    assert!(ok, "{out}");
    assert!(!s.r.ok(&["ls-files"]).contains("plan.noma"));
    let (code, v) = s.reconcile("main");
    assert_eq!(code, Some(0), "{v:#}");
    v
}

fn fix_lines(out: &str) -> Vec<(String, bool)> {
    let mut found: Vec<(String, bool)> = Vec::new();
    for line in out.lines() {
        let Some(i) = line.find("fix: ").or_else(|| line.find("next: ")) else {
            continue;
        };
        let rest = &line[i..];
        let rest = rest[rest.find(": ").unwrap() + 2..].trim_end();
        let (rest, blocks) = match rest.strip_prefix("once no ::conflict block is left, ") {
            Some(r) => (r, true),
            None => (rest, false),
        };
        let mut cmd = rest;
        for cut in [", then ", ", before `git commit`", " before you commit"] {
            cmd = cmd.split(cut).next().unwrap();
        }
        let cmd = cmd.strip_suffix(')').unwrap_or(cmd).to_string();
        if (cmd.starts_with("noma ") || cmd.starts_with("git "))
            && !found.iter().any(|f| f.0 == cmd)
        {
            found.push((cmd, blocks));
        }
    }
    found
}

/// Keeps the first (ours) version of every `::conflict` block of `doc`.
fn keep_ours(s: &Setup, doc: &str) {
    let t = s.r.read(doc);
    let mut out = String::new();
    let mut lines = t.split_inclusive('\n');
    while let Some(line) = lines.next() {
        if !line.starts_with(":::conflict{") {
            out.push_str(line);
            continue;
        }
        let (mut fenced, mut kept) = (0, String::new());
        for l in lines.by_ref() {
            match l.trim_end() {
                ":::" => break,
                f if f.starts_with("```") => fenced += 1,
                _ if fenced == 1 => kept.push_str(l),
                _ => {}
            }
        }
        out.push_str(&kept);
    }
    s.r.write(doc, &out);
}

/// Runs every command `out` names (and those their output names), in
/// order, as the team simulator does.
fn follow_all(s: &Setup, out: &str) {
    for (cmd, blocks) in fix_lines(out) {
        if blocks {
            keep_ours(s, "new.noma");
        }
        let o = s.r.sh(&cmd);
        assert_ran(&o);
        follow_all(s, &text(&o));
    }
}

/// Found by the team simulator (seeds 5 and 24): a merge or rebase that
/// stops on the moved transcript's modify/delete conflict named `noma
/// repair NEW` only in prose, so a user (or the simulator) who runs what
/// the `fix:` and `next:` lines name ran nothing. Now the driver's line
/// ends in `fix: noma repair "new.noma"`, and running every named command,
/// then git's own continue, converges with main's agent record kept as
/// agent x's.
#[test]
fn sim_seeds_5_and_24_the_moves_fix_is_a_line_the_user_can_run() {
    for rebase in [false, true] {
        let s = setup(1);
        s.r.ok(&["checkout", "-q", "feat"]);
        let o = if rebase {
            s.r.git(&["rebase", "main"])
        } else {
            s.r.git(&["merge", "--no-edit", "main"])
        };
        stops_on_modify_delete(&o);
        let fixes = fix_lines(&text(&o));
        assert_eq!(
            fixes,
            vec![("noma repair \"new.noma\"".to_string(), false)],
            "{}",
            text(&o)
        );
        follow_all(&s, &text(&o));
        assert_eq!(s.r.ok(&["ls-files", "-u"]), "", "still unmerged");
        let cont = if rebase {
            vec!["GIT_EDITOR=true", "git", "rebase", "--continue"]
        } else {
            vec!["git", "commit", "-q", "--no-edit"]
        };
        assert_ran(&s.r.cmd("env", &cont));
        let (code, v) = s.reconcile("main");
        assert_eq!(code, Some(0), "rebase {rebase}: {v:#}");
        s.replays("new.noma");
        let rec = listed(&v, &record_by(&s, "x", "c")["op_id"]);
        assert_eq!(rec["actor"], "agent x", "rebase {rebase}: {rec:#}");
        assert!(!s.r.ok(&["ls-files"]).contains("plan.noma"));
    }
}

/// Found by the team simulator (seeds 22 and 39): the moved document's
/// block changed on both sides, so its driver also named `noma record
/// NEW` once the conflict block is resolved. Run first, that recorded
/// main's agent change as the merging person's edit, and the `noma
/// repair` named after it then refused the transcript. Now the driver
/// names only `noma repair`, whose `next:` line names the record of the
/// resolution (the same command form), and following them converges.
#[test]
fn sim_seeds_22_and_39_a_moved_documents_conflict_names_repair_not_record() {
    for rebase in [false, true] {
        let s = setup(1);
        s.patch("plan.noma", "x", "b", "BX");
        s.r.commit_all("x: b");
        s.r.ok(&["checkout", "-q", "feat"]);
        let o = if rebase {
            s.r.git(&["rebase", "main"])
        } else {
            s.r.git(&["merge", "--no-edit", "main"])
        };
        stops_on_modify_delete(&o);
        let out = text(&o);
        let fixes = fix_lines(&out);
        assert_eq!(
            fixes,
            vec![("noma repair \"new.noma\"".to_string(), false)],
            "{out}"
        );
        follow_all(&s, &out);
        assert!(!s.r.read("new.noma").contains("conflict{"));
        assert_eq!(s.r.ok(&["ls-files", "-u"]), "", "still unmerged");
        let cont = if rebase {
            vec!["GIT_EDITOR=true", "git", "rebase", "--continue"]
        } else {
            vec!["git", "commit", "-q", "--no-edit"]
        };
        let o = s.r.cmd("env", &cont);
        assert_ran(&o);
        let (code, v) = s.reconcile("main");
        assert_eq!(code, Some(0), "rebase {rebase}: {v:#}");
        s.replays("new.noma");
        for block in ["b", "c"] {
            let rec = listed(&v, &record_by(&s, "x", block)["op_id"]);
            assert_eq!(rec["actor"], "agent x", "rebase {rebase}: {rec:#}");
        }
    }
}

/// Found by the team simulator (seed 33): both sides moved one document,
/// to different names (alice `git mv d.noma x.noma`, bob `git mv d.noma
/// y.noma`); git stops on a rename/rename conflict, leaves the document
/// under both names, and nothing named a command. Now the document's
/// driver names `noma repair` with HEAD's name, which keeps one document
/// with both sides' records (the other side's as merge copies, actors
/// kept) and removes the other name; running what the lines name, then
/// the continue, converges for a merge and a rebase.
#[test]
fn sim_seed_33_a_document_moved_apart_keeps_one_name_with_both_sides_records() {
    for rebase in [false, true] {
        let s = setup(1);
        for f in ["plan.noma", "plan.noma.patches", "plan.noma.provenance"] {
            s.r.ok(&["mv", f, &f.replace("plan", "other")]);
        }
        s.r.commit_all("main moves plan to other");
        s.r.ok(&["checkout", "-q", "feat"]);
        let o = if rebase {
            s.r.git(&["rebase", "main"])
        } else {
            s.r.git(&["merge", "--no-edit", "main"])
        };
        assert!(!o.status.success(), "{}", text(&o));
        let out = text(&o);
        assert!(out.contains("CONFLICT (rename/rename)"), "{out}");
        let fixes = fix_lines(&out);
        let ours = if rebase { "other.noma" } else { "new.noma" };
        assert_eq!(
            fixes,
            vec![(format!("noma repair \"{ours}\""), false)],
            "rebase {rebase}: {out}"
        );
        follow_all(&s, &out);
        assert_eq!(s.r.ok(&["ls-files", "-u"]), "", "still unmerged");
        let cont = if rebase {
            vec!["GIT_EDITOR=true", "git", "rebase", "--continue"]
        } else {
            vec!["git", "commit", "-q", "--no-edit"]
        };
        assert_ran(&s.r.cmd("env", &cont));
        let files = s.r.ok(&["ls-files"]);
        let theirs = if rebase { "new.noma" } else { "other.noma" };
        assert!(
            files.contains(ours) && !files.contains(theirs) && !files.contains("plan.noma"),
            "rebase {rebase}: {files}"
        );
        let o =
            s.r.noma(&["reconcile", "--base", "main", "--format", "json"]);
        let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", text(&o)));
        assert_eq!(o.status.code(), Some(0), "rebase {rebase}: {v:#}");
        assert_ran(&s.r.noma(&["replay", ours]));
        let t = s.r.read(&format!("{ours}.patches"));
        for (name, block) in [("x", "c"), ("bot", "b")] {
            assert!(
                t.lines().any(|l| {
                    let r: Value = serde_json::from_str(l).unwrap();
                    r["actor"] == json!({"kind": "agent", "name": name}) && r["op"]["id"] == block
                }),
                "rebase {rebase}: no record by agent {name} on {block}:\n{t}"
            );
        }
    }
}

/// The modify/delete conflict of a merge resolved as git says (`git add
/// -A`, keeping the other side's old transcript) and committed: every
/// finding of the hook names `noma repair` (the orphaned old transcript's
/// too, which advised `noma record` on the moved document: the other
/// side's agent record made the committer's edit), and running every fix
/// it prints, in order, converges.
#[test]
fn after_git_add_all_every_hook_finding_names_the_repair() {
    let s = setup(1);
    s.r.ok(&["checkout", "-q", "feat"]);
    stops_on_modify_delete(&s.r.git(&["merge", "--no-edit", "main"]));
    s.r.ok(&["add", "-A"]);
    let (ok, out) = s.r.try_commit("merge main");
    assert!(!ok, "{out}");
    assert!(!out.contains("noma record"), "{out}");
    let orphan = fix_of(&out, "transcript-orphaned");
    assert!(orphan.starts_with("noma repair \"new.noma\""), "{out}");
    let v = fixes_commit_and_reconcile(&s, fix_lines(&out));
    let rec = listed(&v, &record_by(&s, "x", "c")["op_id"]);
    assert_eq!(rec["actor"], "agent x", "{rec:#}");
}

/// Found by the team simulator (seed 105): a branch recorded a change
/// that leaves the document as it was and merged main, so its transcript
/// keeps the merge base's records only as copies after its own; main then
/// moved the document with new records. Merging main again, git takes
/// main's unchanged-here document without running a driver and stops on
/// the old transcript's modify/delete; after `git add -A` the hook's
/// `transcript-tampered` fix was prose. Now the hook names `noma repair`,
/// and following what it names converges with every record kept.
#[test]
fn sim_seed_105_a_move_on_main_meets_a_branch_that_merged_main_before() {
    let s = setup(2);
    let long = "X".repeat(400);
    s.patch("plan.noma", "x", "c", &long);
    s.r.commit_all("x: c again");
    s.r.ok(&["checkout", "-q", "-b", "pr", "main~2"]);
    // A record that leaves the document as it was (the simulator's was
    // an agent patch whose block main's merged record then set back).
    s.patch("plan.noma", "x", "a", "A1");
    s.r.commit_all("x: a, unchanged");
    assert_ran(&s.r.git(&["merge", "-q", "--no-edit", "main"]));
    // The mover updates from main, then lands by a merge commit.
    s.r.ok(&["checkout", "-q", "feat"]);
    stops_on_modify_delete(&s.r.git(&["merge", "--no-edit", "main"]));
    repair_and_stage(&s);
    assert_ran(&s.r.git(&["commit", "-q", "--no-edit"]));
    s.r.ok(&["checkout", "-q", "main"]);
    assert_ran(&s.r.git(&["merge", "-q", "--no-ff", "--no-edit", "feat"]));
    s.r.ok(&["checkout", "-q", "pr"]);
    stops_on_modify_delete(&s.r.git(&["merge", "--no-edit", "main"]));
    s.r.ok(&["add", "-A"]);
    let (ok, out) = s.r.try_commit("merge main");
    assert!(!ok, "{out}");
    let fixes = fix_lines(&out);
    assert!(
        fixes
            .iter()
            .any(|(c, _)| c.starts_with("noma repair \"new.noma\"")),
        "{out}"
    );
    fixes_commit_and_reconcile(&s, fixes);
    s.replays("new.noma");
    let t = s.r.read("new.noma.patches");
    assert!(
        t.contains("\"patch_result\":\"noop\""),
        "the branch's record lost:\n{t}"
    );
    // main's agent record is kept as the agent's, not the merger's.
    record_by(&s, "bot", "b");
}

//! Approvals as a team uses them, with the real `git` and `ssh-keygen`:
//! they bind each approved intent, not the records' order, so they survive
//! `git rebase -i --autosquash` and a conflicted merge that drops one
//! approved record; the approver sees the changed blocks of a document
//! committed before its transcript; an approval that could never count is
//! refused before anything is written; and a killed writer's intent marker
//! plus a later hand edit ends, by the commands the messages name, in a
//! transcript that replays with the edit recorded.

use std::path::PathBuf;

use serde_json::{json, Value};

use crate::common::{assert_ran, keygen, signed_policy, text, Repo};

const DOC: &str = "# Plan\n\n::claim{id=\"c1\" confidence=0.5}\nOne.\n::\n\n::claim{id=\"c2\" confidence=0.5}\nTwo.\n::\n";

struct Setup {
    r: Repo,
    alice: PathBuf,
    bot: PathBuf,
}

/// Turns on `signatures: required` and `agents_need_approval: true` with
/// alice (a person) and bot (an agent principal) in allowed_signers, and
/// commits it.
fn provenance_on(r: Repo) -> Setup {
    let (alice, bot) = signed_policy(&r);
    r.commit_all("provenance on");
    Setup { r, alice, bot }
}

impl Setup {
    /// The agent's signed `noma patch --inplace`, committed as `msg`.
    fn agent_commit(&self, op: &Value, msg: &str) {
        let o = self.r.sh(&format!(
            "NOMA_SIGNING_KEY='{}' noma patch plan.noma --inplace --actor-kind agent --actor-name bot --reason 'agent edit' --op '{op}'",
            self.bot.display()
        ));
        assert_ran(&o);
        self.r.commit_all(msg);
    }

    /// alice's signed `noma patch --inplace`, committed as `msg`.
    fn person_commit(&self, op: &Value, msg: &str) {
        let key = self.alice.to_str().unwrap();
        let o = self.r.noma(&[
            "patch",
            "plan.noma",
            "--inplace",
            "--key",
            key,
            "--actor-name",
            "alice",
            "--op",
            &op.to_string(),
        ]);
        assert_ran(&o);
        self.r.commit_all(msg);
    }

    /// `noma approve plan.noma --yes` with `key`: what it printed.
    fn approve(&self, key: &std::path::Path) -> std::process::Output {
        self.r.noma(&[
            "approve",
            "plan.noma",
            "--key",
            key.to_str().unwrap(),
            "--yes",
        ])
    }

    /// `noma reconcile --base main`: exit code and output.
    fn reconcile(&self) -> (i32, String) {
        let o = self.r.noma(&["reconcile", "--base", "main"]);
        (o.status.code().unwrap_or(-1), text(&o))
    }
}

fn set(id: &str, key: &str, v: f64) -> Value {
    json!({"op": "update_attribute", "id": id, "key": key, "value": v})
}

/// The agent's fixup commit (another agent record) approved with the
/// rest, then `git rebase -i --autosquash`: the approved records are now
/// out of the order they were approved in (the fixup's record sits before
/// the second commit's, rebased as a copy), and the approval still covers
/// each of them.
#[test]
fn approvals_survive_rebase_autosquash() {
    let s = provenance_on(Repo::with_genesis_record(DOC));
    let r = &s.r;
    r.ok(&["checkout", "-q", "-b", "agent"]);
    s.agent_commit(&set("c1", "confidence", 0.9), "agent c1");
    s.agent_commit(&set("c2", "confidence", 0.8), "agent c2");
    s.agent_commit(&set("c1", "n", 1.0), "fixup! agent c1");
    assert_ran(&s.approve(&s.alice));
    r.commit_all("approved");
    let (code, out) = s.reconcile();
    assert_eq!(code, 0, "before the rebase: {out}");
    let before = origins(r);

    let o = r.sh("GIT_SEQUENCE_EDITOR=true git rebase -q -i --autosquash main");
    assert_ran(&o);
    let subjects = r.ok(&["log", "--format=%s", "main..HEAD"]);
    assert_eq!(subjects, "approved\nagent c2\nagent c1\n", "autosquashed");
    // The fixup's record now comes before the second commit's (both
    // rebased as copies): the approval's order is not the transcript's.
    let after = origins(r);
    let moved = [&before[0], &before[1], &before[3], &before[2]];
    assert_eq!(after.iter().collect::<Vec<_>>(), moved);
    let (code, out) = s.reconcile();
    assert_eq!(code, 0, "after the autosquash: {out}");
    assert!(!out.contains("approval-"), "{out}");
}

/// The op each record of plan.noma's transcript stands for, in order: its
/// own op_id, or for a merge's copy the original's.
fn origins(r: &Repo) -> Vec<String> {
    r.read("plan.noma.patches")
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let copy = v["reason"]
                .as_str()
                .is_some_and(|w| w.starts_with("reconciled: op "));
            v[if copy { "parent_op_id" } else { "op_id" }].to_string()
        })
        .collect()
}

/// Two approved agent records; main changed the second one's block too.
/// Merging the branch keeps main's version of that block, so the merge
/// drops that approved record: the approval still covers the other.
#[test]
fn approvals_survive_a_conflicted_merge_that_drops_one_approved_record() {
    let s = provenance_on(Repo::with_genesis_record(DOC));
    let r = &s.r;
    r.ok(&["checkout", "-q", "-b", "agent"]);
    s.agent_commit(&set("c1", "confidence", 0.9), "agent c1");
    s.agent_commit(&set("c2", "confidence", 0.8), "agent c2");
    assert_ran(&s.approve(&s.alice));
    r.commit_all("approved");
    r.ok(&["checkout", "-q", "main"]);
    s.person_commit(&set("c2", "confidence", 0.1), "alice on c2");

    r.ok(&["checkout", "-q", "-b", "integrate"]);
    let o = r.git(&["merge", "--no-edit", "agent"]);
    assert!(!o.status.success(), "c2 conflicts: {}", text(&o));
    assert!(r.read("plan.noma").contains("::conflict{"), "{}", text(&o));
    // Keep ours (main's c2): the document is then the state the merged
    // transcript ends at, and agent c2's record is not in it.
    r.write(
        "plan.noma",
        &DOC.replace("confidence=0.5}\nOne", "confidence=0.9}\nOne")
            .replace("confidence=0.5}\nTwo", "confidence=0.1}\nTwo"),
    );
    r.ok(&["add", "-A"]);
    let o = r.git(&["commit", "-q", "--no-edit"]);
    assert_ran(&o);
    // The genesis, alice's record, the copy of agent c1's and the
    // rejected copy of agent c2's (kept, not applied).
    let t = r.read("plan.noma.patches");
    assert_eq!(t.lines().count(), 4);
    assert!(
        t.lines()
            .last()
            .unwrap()
            .contains("\"patch_result\":\"rejected\""),
        "{t}"
    );
    let o = r.noma(&["replay", "plan.noma"]);
    assert_ran(&o);
    let (code, out) = s.reconcile();
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("approval-"), "{out}");
    // The one agent record in range is the copy of agent c1's, approved.
    let o = r.noma(&["replay", "plan.noma", "--signatures", "--format", "json"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let last = &v["signatures"]["records"][2];
    assert_eq!(last["approved_by"], "alice@example.com", "{v}");
}

/// A document committed before its transcript existed: the agent's first
/// record starts from the committed version, and `noma approve` finds it
/// by content, as `noma replay` does, to list the blocks each record
/// changed.
#[test]
fn approve_lists_changed_blocks_for_a_document_committed_before_its_transcript() {
    let r = Repo::init();
    assert_ran(&r.noma(&["init"]));
    r.write("plan.noma", DOC);
    r.commit_all("plan, no transcript");
    let s = provenance_on(r);
    let r = &s.r;
    r.ok(&["checkout", "-q", "-b", "agent"]);
    // A person's record first: the records before the first waiting one
    // are replayed from the committed version too.
    s.person_commit(&set("c2", "n", 1.0), "alice");
    s.agent_commit(&set("c1", "confidence", 0.9), "agent c1");
    s.agent_commit(&set("c2", "confidence", 0.8), "agent c2");
    assert_ran(&r.noma(&["replay", "plan.noma"]));

    let o = s.approve(&s.alice);
    assert_ran(&o);
    let shown = text(&o);
    assert!(!shown.contains("unknown"), "{shown}");
    assert!(!shown.contains("--base"), "{shown}");
    let at = |needle: &str| {
        shown
            .find(needle)
            .unwrap_or_else(|| panic!("{needle:?} missing: {shown}"))
    };
    let (l1, l2) = (at("line 2 update_attribute"), at("line 3 update_attribute"));
    let (c1, c2) = (
        at("modified c1\tdirective/claim\tlines 3-5"),
        at("modified c2\tdirective/claim\tlines 7-9"),
    );
    assert!(l1 < c1 && c1 < l2 && l2 < c2, "{shown}");
    r.commit_all("approved");
    let (code, out) = s.reconcile();
    assert_eq!(code, 0, "{out}");
}

/// An approval by an agent principal's key, or by a key allowed_signers
/// does not list for the principal it would sign as, could never count:
/// `noma approve` refuses it before writing, with a non-zero exit.
#[test]
fn approvals_that_could_never_count_are_refused_before_writing() {
    let s = provenance_on(Repo::with_genesis_record(DOC));
    let r = &s.r;
    r.ok(&["checkout", "-q", "-b", "agent"]);
    s.agent_commit(&set("c1", "confidence", 0.9), "agent c1");
    let side = || r.read("plan.noma.provenance");
    let before = side();

    // The agent's own key.
    let o = s.approve(&s.bot);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("bot@agents.example is an agent principal"),
        "{}",
        text(&o)
    );
    assert!(text(&o).contains("nothing was written"), "{}", text(&o));
    assert_eq!(side(), before);

    // A key allowed_signers does not list, claiming to be alice.
    let (mallory, _) = keygen(r, "mallory");
    let o = r.sh(&format!(
        "NOMA_SIGNING_PRINCIPAL=alice@example.com noma approve plan.noma --key '{}' --yes",
        mallory.display()
    ));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains(".noma/allowed_signers does not list this key"),
        "{}",
        text(&o)
    );
    assert_eq!(side(), before);
    // Nor as itself (no principal at all).
    let o = s.approve(&mallory);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_eq!(side(), before);

    // alice's key still approves.
    assert_ran(&s.approve(&s.alice));
    assert_ne!(side(), before);
}

/// The `noma …` commands a message names between backquotes.
fn named_commands(message: &str) -> Vec<String> {
    message
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|c| c.starts_with("noma "))
        .map(str::to_string)
        .collect()
}

/// Each command `message` names exists, with every option it passes
/// (`noma SUB --help` lists it).
fn commands_exist(r: &Repo, message: &str) -> Vec<String> {
    let commands = named_commands(message);
    assert!(!commands.is_empty(), "no command named: {message}");
    for c in &commands {
        let words: Vec<&str> = c.split_whitespace().collect();
        let help = r.noma(&[words[1], "--help"]);
        assert_ran(&help);
        for opt in words.iter().filter(|w| w.starts_with("--")) {
            let opt = opt.split('=').next().unwrap();
            assert!(
                text(&help).contains(opt),
                "`{c}`: no {opt} in: {}",
                text(&help)
            );
        }
    }
    commands
}

/// What a writer killed between committing its records and renaming the
/// document leaves: the transcript with the request's records, the
/// document at its pre-state, and the intent marker (written the way the
/// store writes it). Returns the document the request would have left.
fn kill_after_commit(r: &Repo, op: &Value) -> String {
    let pre_doc = r.read("plan.noma");
    let pre_t = std::fs::read(r.path().join("plan.noma.patches")).unwrap();
    assert_ran(&r.noma(&["patch", "plan.noma", "--inplace", "--op", &op.to_string()]));
    let post_doc = r.read("plan.noma");
    let t = std::fs::read(r.path().join("plan.noma.patches")).unwrap();
    let sha = |b: &[u8]| noma_core::doc::hash::sha256_hex(b);
    let marker = json!({
        "transcript_len": pre_t.len(),
        "append_len": t.len() - pre_t.len(),
        "append_sha256": sha(&t[pre_t.len()..]),
        "doc_pre_sha256": sha(pre_doc.as_bytes()),
        "doc_post_sha256": sha(post_doc.as_bytes()),
    });
    r.write(".plan.noma.patches.noma-intent", &marker.to_string());
    r.write("plan.noma", &pre_doc);
    post_doc
}

/// Runs each `noma …` command `message` names (after checking it exists)
/// with `sh`; returns what the last one printed.
fn follow(r: &Repo, message: &str) -> String {
    let mut out = String::new();
    for c in commands_exist(r, message) {
        let o = r.sh(&c);
        assert_ran(&o);
        out = text(&o);
    }
    out
}

/// A writer killed after committing its records, then a person's edit of
/// the document: `noma record` names `noma repair`, which rolls the
/// interrupted request forward onto the edit and names `noma record`,
/// which records the edit. Every command named exists; the transcript
/// replays, with the request's change and the person's edit.
#[test]
fn an_intent_marker_plus_a_hand_edit_ends_recorded_by_the_named_commands() {
    let r = Repo::with_genesis_record(DOC);
    kill_after_commit(&r, &set("c1", "confidence", 0.9));
    let edited = DOC.replace("Two.", "Two, edited by hand.");
    r.write("plan.noma", &edited);

    // The read-only replay says what the repair will do.
    let o = r.noma(&["replay", "plan.noma"]);
    assert!(
        text(&o).contains("onto the document's later edit"),
        "{}",
        text(&o)
    );
    let o = r.noma(&["record", "plan.noma"]);
    assert!(!o.status.success(), "{}", text(&o));
    let said = follow(&r, &text(&o));
    assert!(
        said.contains("rolled forward 1 record(s) onto the edit"),
        "{said}"
    );
    assert!(!said.contains("--force"), "{said}");
    assert!(!r.path().join(".plan.noma.patches.noma-intent").exists());
    // Both changes are in the document; the edit is still unrecorded.
    let doc = r.read("plan.noma");
    assert!(
        doc.contains("confidence=0.9") && doc.contains("Two, edited by hand."),
        "{doc}"
    );
    let said = follow(&r, &said);
    assert!(said.contains("recorded"), "{said}");
    let o = r.noma(&["replay", "plan.noma", "--format", "json"]);
    assert_ran(&o);
    let last: Value =
        serde_json::from_str(r.read("plan.noma.patches").lines().last().unwrap()).unwrap();
    assert_eq!(last["actor"]["kind"], "human", "{last}");
    assert_eq!(r.read("plan.noma"), doc, "record rewrites nothing");
}

/// The same, when the person's edit removed the block the interrupted
/// request changed: its op no longer applies, the document is left as
/// edited, and `noma record` records it on top of the request's records.
#[test]
fn an_intent_marker_plus_an_edit_the_request_cannot_follow_ends_recorded() {
    let r = Repo::with_genesis_record(DOC);
    kill_after_commit(&r, &set("c1", "confidence", 0.9));
    let edited = DOC.replace("::claim{id=\"c1\" confidence=0.5}\nOne.\n::\n\n", "");
    r.write("plan.noma", &edited);

    let o = r.noma(&["repair", "plan.noma"]);
    assert_ran(&o);
    let said = text(&o);
    assert!(said.contains("does not apply to the edit"), "{said}");
    assert_eq!(r.read("plan.noma"), edited);
    let said = follow(&r, &said);
    assert!(said.contains("recorded"), "{said}");
    assert_ran(&r.noma(&["replay", "plan.noma"]));
    assert_eq!(r.read("plan.noma"), edited);
    // Nothing is left to repair.
    let o = r.noma(&["repair", "plan.noma"]);
    assert!(text(&o).contains("nothing to repair"), "{}", text(&o));
}

/// A transcript older than the policy: the records it held when the
/// repository turned provenance on are notes in `noma replay
/// --signatures`, not failures, and wait for no approval; a record
/// appended unsigned after adoption is still an error.
#[test]
fn records_older_than_the_policy_are_notes_not_failures() {
    let r = Repo::with_genesis_record(DOC);
    r.agent_patch("plan.noma", &set("c1", "confidence", 0.7).to_string());
    r.commit_all("an agent's edit, before any policy");
    let s = provenance_on(r);
    let r = &s.r;
    let o = r.noma(&["replay", "plan.noma", "--signatures", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let recs = v["signatures"]["records"].as_array().unwrap();
    assert_eq!(recs.len(), 2, "{v}");
    for rec in recs {
        for p in rec["problems"].as_array().unwrap() {
            assert_eq!(p["code"], "pre-policy-record", "{v}");
            assert_eq!(p["level"], "note", "{v}");
        }
    }
    let o = s.approve(&s.alice);
    assert_ran(&o);
    assert!(text(&o).contains("no agent record waits"), "{}", text(&o));

    let o = r.noma(&[
        "patch",
        "plan.noma",
        "--inplace",
        "--no-sign",
        "--op",
        &set("c2", "confidence", 0.2).to_string(),
    ]);
    assert_ran(&o);
    let o = r.noma(&["replay", "plan.noma", "--signatures"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let out = text(&o);
    assert!(out.contains("NOTE [pre-policy-record] line 2"), "{out}");
    assert!(out.contains("ERROR [unsigned-record] line 3"), "{out}");
}

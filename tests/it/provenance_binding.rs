//! A signature binds a record to its document, and a tombstone stays:
//! with the real `git` and `ssh-keygen`, a record alice signed (or
//! approved) on other.noma, replayed into plan.noma verbatim or as a merge
//! copy, fails `noma reconcile --base main` at its line and is not shown
//! as signed by alice; her signed removal of other.noma does not remove
//! plan.noma; a deleted or cut tombstone fails the check; honest work on
//! the document itself still passes.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::common::{assert_ran, signed_policy, text, Repo};

/// Both documents hold the same blocks, so one document's op applies to
/// the other.
const DOC: &str = "# Plan\n\n::claim{id=\"c1\" confidence=0.5}\nOne.\n::\n\n::claim{id=\"r1\" confidence=0.5}\nTwo.\n::\n";

/// main: plan.noma and other.noma with their genesis records, then
/// `signatures: required`, `agents_need_approval: true`, alice's and the
/// agent's keys.
struct Setup {
    r: Repo,
    alice: PathBuf,
    agent: PathBuf,
}

fn setup() -> Setup {
    let r = Repo::with_genesis_record(DOC);
    r.write("other.noma", DOC);
    assert_ran(&r.noma(&["record", "other.noma"]));
    r.commit_all("other, with its genesis record");
    let (alice, agent) = signed_policy(&r);
    r.commit_all("provenance on");
    Setup { r, alice, agent }
}

fn delete_r1() -> Value {
    json!({"op": "delete_block", "id": "r1"})
}

impl Setup {
    /// `noma patch DOC --inplace --op OP` signed with `key` as `name`.
    fn signed_patch(&self, doc: &str, key: &Path, kind: &str, name: &str, op: &Value) {
        assert_ran(&self.r.noma(&[
            "patch",
            doc,
            "--inplace",
            "--key",
            key.to_str().unwrap(),
            "--actor-kind",
            kind,
            "--actor-name",
            name,
            "--op",
            &op.to_string(),
        ]));
    }

    /// The last record of `doc`'s transcript.
    fn last_record(&self, doc: &str) -> Value {
        let t = self.r.read(&format!("{doc}.patches"));
        serde_json::from_str(t.lines().last().unwrap()).unwrap()
    }

    /// The sidecar lines of `doc` that name `op_id`.
    fn sidecar_lines(&self, doc: &str, op_id: &str) -> Vec<String> {
        (self.r.read(&format!("{doc}.provenance")).lines())
            .filter(|l| l.contains(op_id))
            .map(str::to_string)
            .collect()
    }

    /// Applies `op` to plan.noma unsigned, then dresses its record in
    /// `original`'s identity (op_id, ts, actor, reason, doc_uri), or as a
    /// merge copy of it when `as_copy`, and appends `lines` to plan.noma's
    /// sidecar. Returns the record's transcript line.
    fn replay_into_plan(
        &self,
        original: &Value,
        op: &Value,
        as_copy: bool,
        lines: &[String],
    ) -> usize {
        assert_ran(&self.r.noma(&[
            "patch",
            "plan.noma",
            "--inplace",
            "--no-sign",
            "--op",
            &op.to_string(),
        ]));
        let t = self.r.read("plan.noma.patches");
        let mut recs: Vec<&str> = t.lines().collect();
        let mut rec: Value = serde_json::from_str(recs.pop().unwrap()).unwrap();
        for k in ["ts", "actor", "doc_uri"] {
            rec[k] = original[k].clone();
        }
        let id = original["op_id"].as_str().unwrap();
        if as_copy {
            rec["parent_op_id"] = json!(id);
            let why = original["reason"]
                .as_str()
                .map_or(String::new(), |r| format!("; original reason: {r}"));
            rec["reason"] = json!(format!("reconciled: op {id} from the merged branch{why}"));
        } else {
            rec["op_id"] = original["op_id"].clone();
            rec["reason"] = original["reason"].clone();
        }
        let line = recs.len() + 1;
        let mut out: String = recs.iter().map(|l| format!("{l}\n")).collect();
        out.push_str(&format!("{rec}\n"));
        self.r.write("plan.noma.patches", &out);
        let mut side =
            std::fs::read_to_string(self.r.path().join("plan.noma.provenance")).unwrap_or_default();
        for l in lines {
            side.push_str(l);
            side.push('\n');
        }
        self.r.write("plan.noma.provenance", &side);
        line
    }

    fn reconcile(&self) -> (i32, String) {
        let o = self.r.noma(&["reconcile", "--base", "main"]);
        (o.status.code().unwrap_or(-1), text(&o))
    }

    /// `git add -A` and a commit through the hooks: whether they let it
    /// through, and what they printed.
    fn try_commit_all(&self, message: &str) -> (bool, String) {
        self.r.ok(&["add", "-A"]);
        self.r.try_commit(message)
    }

    fn commit_unchecked(&self, message: &str) {
        self.r.ok(&["add", "-A"]);
        self.r.ok(&["commit", "-q", "--no-verify", "-m", message]);
    }

    /// `noma replay plan.noma --signatures --format json`: the status of
    /// the record on `line`.
    fn replay_status(&self, line: usize) -> Value {
        let o = self
            .r
            .noma(&["replay", "plan.noma", "--signatures", "--format", "json"]);
        let v: Value = serde_json::from_str(&String::from_utf8_lossy(&o.stdout))
            .unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
        let recs = v["signatures"]["records"].as_array().cloned();
        let recs = recs.or_else(|| v["records"].as_array().cloned());
        let recs = recs.unwrap_or_else(|| panic!("no records: {v}"));
        recs.into_iter()
            .find(|s| s["line"] == line)
            .unwrap_or_else(|| panic!("no status of line {line}: {v}"))
    }
}

/// The forgery of a signed record: the hook blocks it, `noma reconcile`
/// fails it at its line with `signature-invalid`, and `replay
/// --signatures` does not show alice as its signer.
fn assert_forgery_fails(s: &Setup, line: usize) {
    let (ok, hook) = s.try_commit_all("alice's record, replayed");
    assert!(!ok, "the hook let a replayed record through: {hook}");
    assert!(hook.contains("signature-invalid"), "{hook}");
    s.commit_unchecked("alice's record, replayed");
    let (code, out) = s.reconcile();
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!("[signature-invalid] plan.noma.patches:{line}")),
        "{out}"
    );
    let status = s.replay_status(line);
    assert!(status["signed_by"].is_null(), "{status}");
}

/// alice's signed `delete_block r1` of other.noma, replayed into
/// plan.noma with her identity fields and her sidecar line.
#[test]
fn a_signed_record_of_another_document_replayed_verbatim_fails() {
    let s = setup();
    s.signed_patch("other.noma", &s.alice, "human", "alice", &delete_r1());
    s.r.commit_all("alice deletes r1 of other.noma");
    let original = s.last_record("other.noma");
    let lines = s.sidecar_lines("other.noma", original["op_id"].as_str().unwrap());
    assert_eq!(lines.len(), 1, "{lines:?}");
    s.r.ok(&["checkout", "-q", "-b", "forge"]);
    let line = s.replay_into_plan(&original, &delete_r1(), false, &lines);
    assert_forgery_fails(&s, line);
}

/// The same record, replayed as a merge copy of alice's (new op_id,
/// `parent_op_id`, the copy's reason).
#[test]
fn a_signed_record_of_another_document_replayed_as_a_merge_copy_fails() {
    let s = setup();
    s.signed_patch("other.noma", &s.alice, "human", "alice", &delete_r1());
    s.r.commit_all("alice deletes r1 of other.noma");
    let original = s.last_record("other.noma");
    let lines = s.sidecar_lines("other.noma", original["op_id"].as_str().unwrap());
    s.r.ok(&["checkout", "-q", "-b", "forge"]);
    let line = s.replay_into_plan(&original, &delete_r1(), true, &lines);
    assert_forgery_fails(&s, line);
}

/// An agent record of other.noma that alice approved, replayed into
/// plan.noma with the agent's signature and alice's approval: neither
/// counts there.
#[test]
fn an_approved_agent_record_of_another_document_fails() {
    let s = setup();
    s.signed_patch("other.noma", &s.agent, "agent", "bot", &delete_r1());
    let o = s.r.noma(&[
        "approve",
        "other.noma",
        "--key",
        s.alice.to_str().unwrap(),
        "--yes",
    ]);
    assert_ran(&o);
    s.r.commit_all("bot deletes r1 of other.noma; alice approves");
    let (code, out) = s.reconcile();
    assert_eq!(code, 0, "honest on main: {out}");
    let original = s.last_record("other.noma");
    let lines = s.sidecar_lines("other.noma", original["op_id"].as_str().unwrap());
    assert_eq!(lines.len(), 2, "a signature and an approval: {lines:?}");
    s.r.ok(&["checkout", "-q", "-b", "forge"]);
    let line = s.replay_into_plan(&original, &delete_r1(), false, &lines);
    assert_forgery_fails(&s, line);
    let status = s.replay_status(line);
    assert!(status["approved_by"].is_null(), "{status}");
}

/// alice's `noma rm other.noma`, its record replayed into
/// plan.noma.patches (with her sidecar line) to delete plan.noma.
#[test]
fn a_signed_removal_of_another_document_does_not_remove_this_one() {
    let s = setup();
    let o =
        s.r.noma(&["rm", "other.noma", "--key", s.alice.to_str().unwrap()]);
    assert_ran(&o);
    s.r.commit_all("alice removes other.noma");
    let original = s.last_record("other.noma");
    assert_eq!(original["op"]["op"], "x-noma/remove_document", "{original}");
    let lines = s.sidecar_lines("other.noma", original["op_id"].as_str().unwrap());
    s.r.ok(&["checkout", "-q", "-b", "forge"]);
    // The forger appends alice's record itself: plan.noma's transcript
    // ends with her removal, and plan.noma is deleted.
    let mut rec = original.clone();
    let t = s.r.read("plan.noma.patches");
    let last: Value = serde_json::from_str(t.lines().last().unwrap()).unwrap();
    rec["pre_sha256"] = last["post_sha256"].clone();
    rec["prev_entry_sha256"] = json!(noma_sha256(t.lines().last().unwrap()));
    s.r.write("plan.noma.patches", &format!("{t}{rec}\n"));
    let mut side =
        std::fs::read_to_string(s.r.path().join("plan.noma.provenance")).unwrap_or_default();
    for l in &lines {
        side.push_str(l);
        side.push('\n');
    }
    s.r.write("plan.noma.provenance", &side);
    std::fs::remove_file(s.r.path().join("plan.noma")).unwrap();
    let (ok, hook) = s.try_commit_all("plan.noma, removed by alice's record");
    assert!(!ok, "the hook let a replayed removal through: {hook}");
    s.commit_unchecked("plan.noma, removed by alice's record");
    let (code, out) = s.reconcile();
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("plan.noma.patches:"), "{out}");
    assert!(
        !out.contains("removed with `noma rm` by human alice"),
        "{out}"
    );
}

/// The sha256 of a transcript line as `prev_entry_sha256` names it (the
/// line's bytes with its newline).
fn noma_sha256(line: &str) -> String {
    use std::io::Write;
    let mut c = std::process::Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin
        .take()
        .unwrap()
        .write_all(format!("{line}\n").as_bytes())
        .unwrap();
    let o = c.wait_with_output().unwrap();
    String::from_utf8_lossy(&o.stdout)[..64].to_string()
}

/// main removed other.noma with `noma rm`; a branch deletes the tombstone
/// (transcript and sidecar), or cuts the transcript before its removal
/// record.
#[test]
fn a_deleted_or_cut_tombstone_fails_the_check() {
    let s = setup();
    s.signed_patch("other.noma", &s.alice, "human", "alice", &delete_r1());
    let o =
        s.r.noma(&["rm", "other.noma", "--key", s.alice.to_str().unwrap()]);
    assert_ran(&o);
    s.r.commit_all("alice removes other.noma");
    let (code, out) = s.reconcile();
    assert_eq!(code, 0, "{out}");

    s.r.ok(&["checkout", "-q", "-b", "erase"]);
    s.r.ok(&["rm", "-q", "other.noma.patches", "other.noma.provenance"]);
    let (ok, hook) = s.r.try_commit("erase the tombstone");
    assert!(!ok, "the hook let a tombstone go: {hook}");
    assert!(hook.contains("transcript-removed"), "{hook}");
    s.r.ok(&["commit", "-q", "--no-verify", "-m", "erase the tombstone"]);
    let (code, out) = s.reconcile();
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("[transcript-removed] other.noma.patches"),
        "{out}"
    );
    assert!(
        out.contains("[transcript-removed] other.noma.provenance"),
        "{out}"
    );

    s.r.ok(&["checkout", "-q", "main"]);
    s.r.ok(&["checkout", "-q", "-b", "cut"]);
    let t = s.r.read("other.noma.patches");
    let kept: String = t.lines().take(2).map(|l| format!("{l}\n")).collect();
    s.r.write("other.noma.patches", &kept);
    let (ok, hook) = s.try_commit_all("cut the tombstone");
    assert!(!ok, "the hook let a cut tombstone through: {hook}");
    s.commit_unchecked("cut the tombstone");
    let (code, out) = s.reconcile();
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("[transcript-rewritten] other.noma.patches:3"),
        "{out}"
    );
}

/// Honest work still verifies: alice's signed records on both documents,
/// a rename of plan.noma with its transcript and sidecar, and a merge of
/// main into the branch.
#[test]
fn honest_records_renames_and_merges_still_verify() {
    let s = setup();
    s.signed_patch("plan.noma", &s.alice, "human", "alice", &delete_r1());
    s.r.commit_all("alice on main");
    s.r.ok(&["checkout", "-q", "-b", "feature"]);
    let set = json!({"op": "update_attribute", "id": "c1", "key": "confidence", "value": 0.9});
    s.signed_patch("plan.noma", &s.alice, "human", "alice", &set);
    s.r.commit_all("alice on the branch");
    s.r.ok(&["mv", "plan.noma", "moved.noma"]);
    s.r.ok(&["mv", "plan.noma.patches", "moved.noma.patches"]);
    s.r.ok(&["mv", "plan.noma.provenance", "moved.noma.provenance"]);
    s.r.commit_all("rename");
    s.r.ok(&["checkout", "-q", "main"]);
    s.signed_patch("other.noma", &s.alice, "human", "alice", &delete_r1());
    s.r.commit_all("alice on other.noma");
    s.r.ok(&["checkout", "-q", "feature"]);
    assert_ran(&s.r.git(&["merge", "--no-edit", "main"]));
    let (code, out) = s.reconcile();
    assert_eq!(code, 0, "{out}");
    // (The genesis record predates the policy; after the rename replay
    // does not find it in the adoption commit, so only alice's records are
    // asserted here.)
    let o = s.r.noma(&["replay", "moved.noma", "--signatures"]);
    let out = text(&o);
    assert!(!out.contains("signature-invalid"), "{out}");
    assert_eq!(
        out.matches("signed by alice@example.com").count(),
        2,
        "{out}"
    );
}

/// A branch removes other.noma with `noma rm` (its tombstone stays) and
/// adds a new document with nearly the same text: git pairs the two as a
/// rename, but a path whose transcript is still there was not moved, so
/// the new document is checked as new and the removal as a removal.
#[test]
fn a_new_document_like_a_removed_one_is_not_its_rename() {
    let s = setup();
    s.r.ok(&["checkout", "-q", "-b", "replace"]);
    let o =
        s.r.noma(&["rm", "other.noma", "--key", s.alice.to_str().unwrap()]);
    assert_ran(&o);
    s.r.write("fresh.noma", &DOC.replace("Two.", "Three."));
    let o =
        s.r.noma(&["record", "fresh.noma", "--key", s.alice.to_str().unwrap()]);
    assert_ran(&o);
    s.commit_unchecked("remove other, add fresh");
    let (code, out) = s.reconcile();
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("transcript-rewritten"), "{out}");
}

/// A branch renames other.noma with its transcript, then
/// removes it with `noma rm`: only the tombstone is left at the new path,
/// and the old path is its move, not a removal without a record.
#[test]
fn a_document_renamed_then_removed_is_one_recorded_removal() {
    let s = setup();
    s.r.ok(&["checkout", "-q", "-b", "retire"]);
    for suffix in ["", ".patches"] {
        s.r.ok(&[
            "mv",
            &format!("other.noma{suffix}"),
            &format!("gone.noma{suffix}"),
        ]);
    }
    s.r.commit_all("rename other to gone");
    let o =
        s.r.noma(&["rm", "gone.noma", "--key", s.alice.to_str().unwrap()]);
    assert_ran(&o);
    s.r.commit_all("remove gone");
    let (code, out) = s.reconcile();
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("removed without a record"), "{out}");
    assert!(out.contains("removed with `noma rm`"), "{out}");
}

/// The branch's own approved agent record, re-labelled as a merge copy of
/// itself at another position: the branch rewrites plan.noma to main's
/// state, has alice sign another edit, and appends the agent's op again,
/// dressed as a copy of its committed record (the sidecar still holds
/// that record's signature and alice's approval). The hook refuses the
/// rewrite; committed past it, `noma reconcile` fails the copy at its
/// line, since its original is the branch's own earlier record.
#[test]
fn an_own_record_relabelled_as_a_copy_at_another_position_fails() {
    let s = setup();
    s.r.ok(&["checkout", "-q", "-b", "agent"]);
    let raise = json!({"op": "update_attribute", "id": "c1", "key": "confidence", "value": 0.9});
    s.signed_patch("plan.noma", &s.agent, "agent", "bot", &raise);
    let o = s.r.noma(&[
        "approve",
        "plan.noma",
        "--key",
        s.alice.to_str().unwrap(),
        "--yes",
    ]);
    assert_ran(&o);
    s.r.commit_all("bot raises c1; alice approves");
    let (code, out) = s.reconcile();
    assert_eq!(code, 0, "honest: {out}");
    let original = s.last_record("plan.noma");

    // The agent's record goes after alice's next edit, as a "copy".
    s.r.ok(&["checkout", "main", "--", "plan.noma", "plan.noma.patches"]);
    s.signed_patch("plan.noma", &s.alice, "human", "alice", &delete_r1());
    let line = s.replay_into_plan(&original, &raise, true, &[]);
    let (ok, hook) = s.try_commit_all("the agent's record, moved as a copy");
    assert!(!ok, "the hook let a rewritten record through: {hook}");
    assert!(hook.contains("transcript-tampered"), "{hook}");
    s.commit_unchecked("the agent's record, moved as a copy");
    let (code, out) = s.reconcile();
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!("[copy-of-own-record] plan.noma.patches:{line}")),
        "{out}"
    );
    assert!(!out.contains("approved by alice"), "{out}");
}

/// As above, but alice edits the document four times between the rename
/// and the removal: the tombstone's transcript is then five records where
/// the old path's was one, too unlike it for git to pair, and the old
/// path was reported as removed without a record. The two transcripts
/// start with the same first record: that pairs them.
#[test]
fn a_document_renamed_edited_then_removed_is_one_recorded_removal() {
    let s = setup();
    s.r.ok(&["checkout", "-q", "-b", "retire"]);
    for suffix in ["", ".patches"] {
        s.r.ok(&[
            "mv",
            &format!("other.noma{suffix}"),
            &format!("gone.noma{suffix}"),
        ]);
    }
    s.r.commit_all("rename other to gone");
    for v in 1..=4 {
        let op = json!({"op": "update_attribute", "id": "c1", "key": "confidence", "value": f64::from(v) / 10.0});
        s.signed_patch("gone.noma", &s.alice, "human", "alice", &op);
    }
    s.r.commit_all("alice edits gone");
    let o =
        s.r.noma(&["rm", "gone.noma", "--key", s.alice.to_str().unwrap()]);
    assert_ran(&o);
    s.r.commit_all("remove gone");
    let (code, out) = s.reconcile();
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("removed without a record"), "{out}");
    assert!(out.contains("removed with `noma rm`"), "{out}");
}

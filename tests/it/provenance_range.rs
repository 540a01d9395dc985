//! The PR check's range is proved, not claimed, and the verified signer
//! reaches the reviewer: with the real `git` and `ssh-keygen`, records that
//! only *claim* to be merge copies of main's records, or a new document
//! whose first record reuses main's op_id, stay in `noma reconcile`'s
//! checked range and fail it at their lines; honest merges still pass; and
//! every format names who verifiably signed each record, flagging a key
//! that signs under another actor's name.

use std::path::PathBuf;

use serde_json::{json, Value};

use crate::common::{assert_ran, signed_policy, text, McpClient, Repo};

const DOC: &str = "# Plan\n\n::claim{id=\"c1\" confidence=0.5}\nOne.\n::\n\n::claim{id=\"c2\" confidence=0.5}\nTwo.\n::\n";

/// main: plan.noma with its (pre-policy, unsigned) genesis record, then
/// `signatures: required` and `agents_need_approval: true` with alice's
/// and the agent's keys, then two records alice signed on main.
struct Setup {
    r: Repo,
    alice: PathBuf,
    agent: PathBuf,
}

fn set(id: &str, v: f64) -> Value {
    json!({"op": "update_attribute", "id": id, "key": "confidence", "value": v})
}

fn setup() -> Setup {
    let r = Repo::with_genesis_record(DOC);
    let (alice, agent) = signed_policy(&r);
    r.commit_all("provenance on");
    let s = Setup { r, alice, agent };
    s.alice_patch(&set("c1", 0.6), "alice");
    s.alice_patch(&set("c2", 0.6), "alice");
    s.r.commit_all("alice on main");
    s
}

impl Setup {
    fn alice_patch(&self, op: &Value, actor: &str) {
        assert_ran(&self.r.noma(&[
            "patch",
            "plan.noma",
            "--inplace",
            "--key",
            self.alice.to_str().unwrap(),
            "--actor-name",
            actor,
            "--op",
            &op.to_string(),
        ]));
    }

    fn reconcile(&self, format: &str) -> (i32, String) {
        let o = self
            .r
            .noma(&["reconcile", "--base", "main", "--format", format]);
        (o.status.code().unwrap_or(-1), text(&o))
    }

    /// The op_ids of main's plan.noma records, in order.
    fn main_op_ids(&self) -> Vec<String> {
        self.r
            .ok(&["show", "main:plan.noma.patches"])
            .lines()
            .map(|l| {
                serde_json::from_str::<Value>(l).unwrap()["op_id"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect()
    }

    /// `noma patch` of an unsigned agent record dressed as a merge copy of
    /// `original`, committed past the hook.
    fn fake_copy(&self, original: &str, op: &Value) {
        assert_ran(&self.r.noma(&[
            "patch",
            "plan.noma",
            "--inplace",
            "--no-sign",
            "--actor-kind",
            "agent",
            "--actor-name",
            "bot",
            "--parent-op-id",
            original,
            "--reason",
            &format!("reconciled: op {original} from the merged branch"),
            "--op",
            &op.to_string(),
        ]));
    }

    fn commit_unchecked(&self, message: &str) {
        self.r.ok(&["add", "-A"]);
        self.r.ok(&["commit", "-q", "--no-verify", "-m", message]);
    }
}

/// An unsigned, unapproved agent record whose `parent_op_id` names a
/// record on main and whose reason reads like a merge copy's used to
/// leave the checked range, and `noma reconcile` passed.
#[test]
fn a_record_disguised_as_a_merge_copy_stays_in_the_checked_range() {
    let s = setup();
    let r = &s.r;
    let ids = s.main_op_ids();
    r.ok(&["checkout", "-q", "-b", "agent"]);
    s.fake_copy(&ids[1], &set("c2", 0.1));
    s.commit_unchecked("a disguised merge copy");
    let (code, out) = s.reconcile("human");
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("plan.noma.patches:4"), "{out}");
    assert!(
        out.contains("[approval-missing] plan.noma.patches:4"),
        "{out}"
    );
    assert!(out.contains("claims to stand for op"), "{out}");
    let (_, md) = s.reconcile("markdown");
    assert!(!md.contains("all checks pass"), "{md}");
}

/// Three fake copies in a row, each naming one of main's records (the
/// unsigned pre-policy genesis record among them): each fails at its line.
#[test]
fn three_fake_copies_in_a_row_each_fail_at_their_line() {
    let s = setup();
    let r = &s.r;
    let ids = s.main_op_ids();
    r.ok(&["checkout", "-q", "-b", "agent"]);
    for (n, id) in ids.iter().enumerate() {
        s.fake_copy(id, &set("c1", 0.1 + n as f64 / 10.0));
    }
    s.commit_unchecked("three disguised merge copies");
    let (code, out) = s.reconcile("human");
    assert_eq!(code, 1, "{out}");
    for line in [4, 5, 6] {
        assert!(
            out.contains(&format!("[approval-missing] plan.noma.patches:{line}")),
            "line {line}: {out}"
        );
    }
}

/// The same disguise written by an agent through MCP alone
/// (`patch_block` with that reason and `parent_op_id`): the server signs
/// it with the agent's key, and the check still fails it.
#[test]
fn a_disguised_copy_written_through_mcp_fails_the_check() {
    let s = setup();
    let r = &s.r;
    let ids = s.main_op_ids();
    r.ok(&["checkout", "-q", "-b", "agent"]);
    let mut m = McpClient::start_with(r.path(), &["--signing-key", s.agent.to_str().unwrap()]);
    let body = m.ok(
        "patch_block",
        json!({"file": "plan.noma", "op": set("c2", 0.1),
               "actor": {"kind": "agent", "name": "bot"},
               "reason": format!("reconciled: op {} from the merged branch", ids[2]),
               "parent_op_id": ids[2]}),
    );
    assert_eq!(body["ok"], true, "{body}");
    m.finish();
    s.commit_unchecked("disguised through MCP");
    let (code, out) = s.reconcile("human");
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("[approval-missing] plan.noma.patches:4"),
        "{out}"
    );
}

/// A new document whose first record reuses the op_id and `doc_uri` of
/// main's plan.noma genesis record is not a renamed plan.noma (which is
/// still there): all its records are checked.
#[test]
fn a_new_document_reusing_mains_genesis_op_id_is_checked_whole() {
    let s = setup();
    let r = &s.r;
    let ids = s.main_op_ids();
    r.ok(&["checkout", "-q", "-b", "agent"]);
    r.write("new.noma", "# New\n\n::claim{id=\"n1\"}\nSneaked in.\n::\n");
    assert_ran(&r.noma(&["record", "new.noma", "--no-sign"]));
    let line = r.read("new.noma.patches");
    let mut rec: Value = serde_json::from_str(line.trim_end()).unwrap();
    rec["op_id"] = json!(ids[0]);
    rec["doc_uri"] = json!("plan.noma");
    r.write("new.noma.patches", &format!("{rec}\n"));
    assert_ran(&r.noma(&["replay", "new.noma"]));
    s.commit_unchecked("a new document under main's genesis op_id");
    let (code, out) = s.reconcile("human");
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("[unsigned-record] new.noma.patches:1"),
        "{out}"
    );
}

/// An honest merge of main into the branch (main's records arrive as
/// copies) and of the branch into main still pass: copies that say
/// exactly what main's records say are history.
#[test]
fn honest_merges_both_ways_still_pass() {
    let s = setup();
    let r = &s.r;
    r.ok(&["checkout", "-q", "-b", "feature"]);
    s.alice_patch(&set("c1", 0.9), "alice");
    r.commit_all("alice on the branch");
    r.ok(&["checkout", "-q", "main"]);
    s.alice_patch(&set("c2", 0.2), "alice");
    r.commit_all("alice on main again");
    r.ok(&["checkout", "-q", "feature"]);
    assert_ran(&r.git(&["merge", "--no-edit", "main"]));
    let t = r.read("plan.noma.patches");
    assert!(
        t.contains("reconciled: op"),
        "main's record arrives as a copy: {t}"
    );
    let (code, out) = s.reconcile("human");
    assert_eq!(code, 0, "{out}");
    // The copy is history, not the branch's: one branch record checked.
    let (_, json) = s.reconcile("json");
    let v: Value = serde_json::from_str(&json).unwrap();
    let recs = v["documents"][0]["records"].as_array().cloned();
    let recs = recs.unwrap_or_else(|| panic!("{v}"));
    assert_eq!(recs.len(), 1, "{v}");
    assert_eq!(recs[0]["signed_by"], "alice@example.com", "{v}");
}

/// Alice's key signs a record whose actor says carol: every format names
/// alice as the signer, and the mismatch is flagged.
#[test]
fn every_reconcile_format_names_the_verified_signer_and_flags_a_mismatch() {
    let s = setup();
    let r = &s.r;
    r.ok(&["checkout", "-q", "-b", "feature"]);
    s.alice_patch(&set("c1", 0.9), "carol");
    r.commit_all("alice signs as carol");
    let filters = vec![
        (
            r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
            "[op-id]",
        ),
        (r"\b[0-9a-f]{8,64}\b", "[hash]"),
        (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", "[ts]"),
        (r#""version": "[^"]+""#, r#""version": "[version]""#),
    ];
    for format in ["human", "json", "github", "sarif", "markdown"] {
        let (code, out) = s.reconcile(format);
        assert_eq!(code, 0, "{format}: a mismatch is a warning: {out}");
        assert!(out.contains("alice@example.com"), "{format}: {out}");
        assert!(out.contains("carol"), "{format}: {out}");
        assert!(
            out.contains("signer-mismatch") || out.contains("not the actor"),
            "{format}: {out}"
        );
        insta::with_settings!({filters => filters.clone(), snapshot_suffix => format}, {
            insta::assert_snapshot!(out);
        });
    }
}

/// A sidecar past the file-size cap (`NOMA_MAX_FILE_BYTES`, lowered here
/// to 2,000 bytes; ~400 bytes a signature) still takes signed writes and
/// still verifies: a signed write reads only the sidecar's tail, and the
/// sidecar, like the transcript, has no cap of its own.
#[test]
fn signed_writes_and_verification_go_on_past_the_file_size_cap() {
    let s = setup();
    let r = &s.r;
    for i in 0..8 {
        let o = r.sh(&format!(
            "NOMA_MAX_FILE_BYTES=2000 noma patch plan.noma --inplace --key '{}' --actor-name alice --op '{}'",
            s.alice.display(),
            set("c1", 0.1 + f64::from(i) / 100.0)
        ));
        assert_ran(&o);
    }
    let side = r.read("plan.noma.provenance");
    assert!(side.len() > 2000, "{}", side.len());
    let o = r.sh("NOMA_MAX_FILE_BYTES=2000 noma replay plan.noma --signatures --format json");
    let v: Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    let recs = v["signatures"]["records"].as_array().unwrap();
    assert_eq!(recs.len(), 11, "{v}");
    assert!(
        recs[1..]
            .iter()
            .all(|s| s["signed_by"] == "alice@example.com"),
        "{v}"
    );
}

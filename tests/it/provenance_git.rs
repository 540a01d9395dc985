//! Signed records and approval as a reviewer tries them, with the real
//! `git` and `ssh-keygen`: signed agent records on a branch, `noma
//! reconcile --base main` failing with `approval-missing` per record line
//! until a person runs `noma approve`; each forgery failing with its own
//! code and line; the hook blocking a forged signature; ssh-keygen interop
//! both ways.

use std::path::PathBuf;

use noma_core::doc::hash::sha256_hex;
use serde_json::{json, Value};

use crate::common::{assert_ran, keygen, signed_policy, text, McpClient, Repo};

const DOC: &str = "# Plan\n\n::claim{id=\"c1\" confidence=0.5}\nOne.\n::\n\n::claim{id=\"c2\" confidence=0.5}\nTwo.\n::\n";

struct Setup {
    r: Repo,
    person: PathBuf,
    agent: PathBuf,
}

/// main: plan.noma with its genesis record, `signatures: required`,
/// `agents_need_approval: true`, alice's key and the agent's key in
/// `.noma/allowed_signers`; sidecars merge as a set through the
/// `.gitattributes` line `noma init` wrote (no step of the test's).
fn setup() -> Setup {
    let r = Repo::with_genesis_record(DOC);
    let (person, agent) = signed_policy(&r);
    assert!(
        r.read(".gitattributes")
            .contains("\n*.noma.provenance merge=union\n"),
        "noma init routes sidecars to the union driver"
    );
    r.commit_all("provenance on");
    Setup { r, person, agent }
}

impl Setup {
    /// `noma patch plan.noma --inplace` as alice, signing with her key.
    fn person_patch(&self, op: &Value) {
        let o = self.r.noma(&[
            "patch",
            "plan.noma",
            "--inplace",
            "--key",
            self.person.to_str().unwrap(),
            "--actor-name",
            "alice",
            "--op",
            &op.to_string(),
        ]);
        assert_ran(&o);
    }

    /// `noma patch plan.noma --inplace` as the agent, signing through
    /// NOMA_SIGNING_KEY.
    fn agent_patch(&self, op: &Value) {
        let o = self.r.sh(&format!(
            "NOMA_SIGNING_KEY='{}' noma patch plan.noma --inplace --actor-kind agent --actor-name bot --reason 'agent edit' --op '{op}'",
            self.agent.display()
        ));
        assert_ran(&o);
    }

    fn reconcile(&self) -> (i32, String) {
        let o = self.r.noma(&["reconcile", "--base", "main"]);
        (o.status.code().unwrap_or(-1), text(&o))
    }

    /// `noma reconcile --base main` fails (exit 1) and says `needle`;
    /// returns what it printed.
    fn fails_with(&self, needle: &str) -> String {
        let (code, out) = self.reconcile();
        assert_eq!(code, 1, "{out}");
        assert!(out.contains(needle), "{out}");
        out
    }

    /// What is staged: the pre-commit hook blocks it saying `needle`;
    /// committed anyway (`--no-verify`), `noma reconcile` fails saying it
    /// too. Returns (the hook's output, reconcile's output).
    fn hook_blocks_and_check_fails(&self, message: &str, needle: &str) -> (String, String) {
        let (ok, hook) = self.r.try_commit(message);
        assert!(!ok, "the hook let it through: {hook}");
        assert!(hook.contains(needle), "{hook}");
        self.r.ok(&["commit", "-q", "--no-verify", "-m", message]);
        (hook, self.fails_with(needle))
    }
}

fn set(id: &str, v: f64) -> Value {
    json!({"op": "update_attribute", "id": id, "key": "confidence", "value": v})
}

/// Signed agent work on a branch, by CLI and by MCP, fails the PR check
/// with approval-missing on each record's line until a person approves.
#[test]
fn agent_records_need_a_persons_approval_before_the_check_passes() {
    let s = setup();
    let r = &s.r;
    r.ok(&["checkout", "-q", "-b", "agent"]);
    s.agent_patch(&set("c1", 0.9));
    let mut m = McpClient::start_with(r.path(), &["--signing-key", s.agent.to_str().unwrap()]);
    let body = m.ok(
        "patch_block",
        json!({"file": "plan.noma", "op": set("c2", 0.8),
               "actor": {"kind": "agent", "name": "bot"}}),
    );
    assert_eq!(body["ok"], true, "{body}");
    let read = m.ok("transcript_read", json!({"file": "plan.noma"}));
    let statuses = read["provenance"]["records"].as_array().unwrap();
    assert_eq!(statuses.len(), 3, "{read}");
    assert_eq!(statuses[2]["signed_by"], "bot@agents.example", "{read}");
    m.finish();
    let side = r.read("plan.noma.provenance");
    assert_eq!(side.lines().count(), 2, "{side}");
    assert!(!side.contains("PRIVATE"));
    r.commit_all("agent edits, signed");

    let (code, out) = s.reconcile();
    assert_eq!(code, 1, "{out}");
    for line in [2, 3] {
        assert!(
            out.contains(&format!("[approval-missing] plan.noma.patches:{line}")),
            "{out}"
        );
    }
    assert!(!out.contains("unsigned-record"), "{out}");

    let o = r.noma(&[
        "approve",
        "plan.noma",
        "--key",
        s.person.to_str().unwrap(),
        "--yes",
    ]);
    assert_ran(&o);
    // Each record is shown with the blocks it changed, as `noma changed`
    // lists blocks: c1 under line 2, c2 under line 3.
    let shown = text(&o);
    let at = |needle: &str| {
        shown
            .find(needle)
            .unwrap_or_else(|| panic!("{needle:?} missing: {shown}"))
    };
    let (l2, l3) = (at("line 2 update_attribute"), at("line 3 update_attribute"));
    let (c1, c2) = (
        at("modified c1\tdirective/claim\tlines 3-5"),
        at("modified c2\tdirective/claim\tlines 7-9"),
    );
    assert!(l2 < c1 && c1 < l3 && l3 < c2, "{shown}");
    r.commit_all("approved");
    let (code, out) = s.reconcile();
    assert_eq!(code, 0, "{out}");
    // Over the whole transcript, the genesis record (made before
    // provenance was turned on) is the one unsigned record: a note, since
    // it is older than the policy.
    let o = r.noma(&["replay", "plan.noma", "--signatures", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["replay"]["ok"], true, "{v}");
    let recs = v["signatures"]["records"].as_array().unwrap();
    assert_eq!(recs[0]["problems"][0]["code"], "pre-policy-record", "{v}");
    assert_eq!(recs[0]["problems"][0]["level"], "note", "{v}");
    assert_eq!(recs[1]["approved_by"], "alice@example.com", "{v}");
    assert_eq!(recs[2]["signed_by"], "bot@agents.example", "{v}");
    assert!(recs[1..].iter().all(|r| r.get("problems").is_none()), "{v}");
}

/// The transcript's lines with line `at` (0-based) edited by `f` and every
/// later line re-chained: what a forger who can write the file does.
fn edit_and_rechain(bytes: &str, at: usize, f: impl Fn(&mut Value)) -> String {
    let mut out = String::new();
    let mut prev: Option<String> = None;
    for (i, l) in bytes.lines().enumerate() {
        let mut v: Value = serde_json::from_str(l).unwrap();
        if i == at {
            f(&mut v);
        }
        if i > at {
            v["prev_entry_sha256"] = json!(prev);
        }
        let line = if i >= at {
            format!("{v}\n")
        } else {
            format!("{l}\n")
        };
        prev = Some(sha256_hex(line.as_bytes()));
        out.push_str(&line);
    }
    out
}

/// Each forgery fails `noma reconcile` with its own code on its line; the
/// pre-commit hook blocks the first.
#[test]
fn each_forgery_fails_the_check_with_its_code_and_line() {
    let s = setup();
    let r = &s.r;
    r.ok(&["checkout", "-q", "-b", "agent"]);
    s.agent_patch(&set("c1", 0.9));
    s.agent_patch(&set("c2", 0.8));
    let approve = r.noma(&[
        "approve",
        "plan.noma",
        "--key",
        s.person.to_str().unwrap(),
        "--yes",
    ]);
    assert_ran(&approve);
    r.commit_all("signed and approved");
    assert_eq!(s.reconcile().0, 0, "{}", s.reconcile().1);
    let clean_t = r.read("plan.noma.patches");
    let clean_side = r.read("plan.noma.provenance");
    let head = r.ok(&["rev-parse", "HEAD"]).trim().to_string();
    let reset = || {
        r.ok(&["reset", "-q", "--hard", &head]);
    };

    // 1. A signed record's reason edited, the chain re-hashed: the hook
    // blocks it; committed anyway (--no-verify), the check names line 2.
    r.write(
        "plan.noma.patches",
        &edit_and_rechain(&clean_t, 1, |v| v["reason"] = json!("forged")),
    );
    r.ok(&["add", "-A"]);
    s.hook_blocks_and_check_fails("forged reason", "[signature-invalid] plan.noma.patches:2");
    reset();

    // 2. The op and 3. the actor of a signed record.
    for (what, f) in [
        (
            "op",
            Box::new(|v: &mut Value| v["op"]["value"] = json!(0.1)) as Box<dyn Fn(&mut Value)>,
        ),
        (
            "actor",
            Box::new(|v: &mut Value| v["actor"]["kind"] = json!("human")),
        ),
    ] {
        r.write("plan.noma.patches", &edit_and_rechain(&clean_t, 2, f));
        r.ok(&["add", "-A"]);
        r.ok(&["commit", "-q", "--no-verify", "-m", what]);
        let (code, out) = s.reconcile();
        assert_eq!(code, 1, "{what}: {out}");
        assert!(
            out.contains("[signature-invalid] plan.noma.patches:3"),
            "{what}: {out}"
        );
        reset();
    }

    // 4. An unsigned record appended.
    let o = r.noma(&[
        "patch",
        "plan.noma",
        "--inplace",
        "--no-sign",
        "--actor-name",
        "someone",
        "--op",
        &set("c1", 0.3).to_string(),
    ]);
    assert_ran(&o);
    r.ok(&["add", "-A"]);
    s.hook_blocks_and_check_fails("unsigned", "[unsigned-record] plan.noma.patches:4");
    reset();

    // 5. A record signed by a key the branch itself added.
    let (mallory, mallory_pub) = keygen(r, "mallory");
    let mut signers = r.read(".noma/allowed_signers");
    signers.push_str(&format!(
        "mallory@example.com namespaces=\"noma\" {mallory_pub}\n"
    ));
    r.write(".noma/allowed_signers", &signers);
    r.commit_all("trust myself");
    let o = r.noma(&[
        "patch",
        "plan.noma",
        "--inplace",
        "--key",
        mallory.to_str().unwrap(),
        "--op",
        &set("c1", 0.2).to_string(),
    ]);
    assert_ran(&o);
    r.commit_all("signed by a key the branch added");
    s.fails_with("[signer-not-allowed] plan.noma.patches:4");
    reset();

    // 6. A signature copied from another record (line 3's onto line 2's).
    let side: Vec<Value> = clean_side
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let recs: Vec<Value> = clean_t
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut forged = String::new();
    for e in &side {
        if e["op_id"] == recs[1]["op_id"] {
            continue;
        }
        forged.push_str(&format!("{e}\n"));
        if e["op_id"] == recs[2]["op_id"] {
            let mut copy = e.clone();
            copy["op_id"] = recs[1]["op_id"].clone();
            forged.push_str(&format!("{copy}\n"));
        }
    }
    r.write("plan.noma.provenance", &forged);
    r.ok(&["add", "-A"]);
    s.hook_blocks_and_check_fails(
        "copied signature",
        "[signature-invalid] plan.noma.patches:2",
    );
    reset();

    // 7. An approval signed by an agent principal (`noma approve` refuses
    // to write one; a forger signs it with ssh-keygen), and 8. one whose
    // approved draft does not match.
    let without_approval: String = clean_side
        .lines()
        .filter(|l| !l.contains("\"kind\":\"approval\""))
        .map(|l| format!("{l}\n"))
        .collect();
    let approval: Value = clean_side
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["kind"] == "approval")
        .unwrap();
    let mut body: noma_provenance::canonical::ApprovalBody =
        serde_json::from_value(approval.clone()).unwrap();
    body.approver = "bot@agents.example".into();
    let payload = noma_provenance::canonical::approval_payload(&body);
    r.write("payload", &String::from_utf8(payload).unwrap());
    let o = r.cmd(
        "ssh-keygen",
        &[
            "-q",
            "-Y",
            "sign",
            "-n",
            "noma",
            "-f",
            s.agent.to_str().unwrap(),
            "payload",
        ],
    );
    assert_ran(&o);
    let mut by_agent = serde_json::to_value(&body).unwrap();
    by_agent["kind"] = json!("approval");
    by_agent["sig"] = json!(r.read("payload.sig"));
    std::fs::remove_file(r.path().join("payload")).unwrap();
    std::fs::remove_file(r.path().join("payload.sig")).unwrap();
    r.write(
        "plan.noma.provenance",
        &format!("{without_approval}{by_agent}\n"),
    );
    r.commit_all("approved by the agent");
    let out = s.fails_with("[approval-invalid] plan.noma.patches:2");
    assert!(out.contains("agent principal"), "{out}");
    reset();
    let mut other_draft = approval.clone();
    other_draft["draft_sha256"] = json!(sha256_hex(b"another draft"));
    r.write(
        "plan.noma.provenance",
        &format!("{without_approval}{other_draft}\n"),
    );
    r.commit_all("approval of another draft");
    s.fails_with("[approval-invalid] plan.noma.patches:2");
}

/// ssh-keygen verifies what noma signed over the payload noma prints, and
/// noma accepts what ssh-keygen signed.
#[test]
fn ssh_keygen_interop_both_ways() {
    let s = setup();
    let r = &s.r;
    s.agent_patch(&set("c1", 0.9));
    let rec: Value =
        serde_json::from_str(r.read("plan.noma.patches").lines().nth(1).unwrap()).unwrap();
    let op_id = rec["op_id"].as_str().unwrap();
    let entry: Value =
        serde_json::from_str(r.read("plan.noma.provenance").lines().next().unwrap()).unwrap();
    r.write("sig", entry["sig"].as_str().unwrap());
    let o = r.sh(&format!(
        "noma provenance payload plan.noma --op-id {op_id} --signer bot@agents.example > payload && \
         ssh-keygen -Y verify -n noma -f .noma/allowed_signers -I bot@agents.example -s sig < payload"
    ));
    assert_ran(&o);
    assert!(text(&o).contains("Good \"noma\" signature"), "{}", text(&o));
    // A wrong principal or namespace is refused by ssh-keygen too.
    let o = r.sh("ssh-keygen -Y verify -n git -f .noma/allowed_signers -I bot@agents.example -s sig < payload");
    assert!(!o.status.success());

    // Now a record signed by ssh-keygen (as with a key in ssh-agent).
    let o = r.noma(&[
        "patch",
        "plan.noma",
        "--inplace",
        "--no-sign",
        "--actor-name",
        "alice",
        "--op",
        &set("c2", 0.7).to_string(),
    ]);
    assert_ran(&o);
    let rec: Value =
        serde_json::from_str(r.read("plan.noma.patches").lines().nth(2).unwrap()).unwrap();
    let op_id = rec["op_id"].as_str().unwrap();
    let o = r.sh(&format!(
        "noma provenance payload plan.noma --op-id {op_id} --signer alice@example.com > p2 && \
         ssh-keygen -q -Y sign -n noma -f '{}' p2 && \
         noma provenance import plan.noma --op-id {op_id} --signer alice@example.com --sig p2.sig",
        s.person.display()
    ));
    assert_ran(&o);
    let o = r.noma(&["replay", "plan.noma", "--signatures", "--format", "json"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v["signatures"]["records"][2]["signed_by"], "alice@example.com",
        "{v}"
    );
    assert!(
        v["signatures"]["records"][2].get("problems").is_none(),
        "{v}"
    );
    // A signature over other bytes is refused on import.
    let o = r.sh(&format!(
        "noma provenance import plan.noma --op-id {} --signer alice@example.com --sig p2.sig",
        rec["prev_entry_sha256"]
            .as_str()
            .map(|_| rec_op_id_other(r))
            .unwrap()
    ));
    assert!(!o.status.success(), "{}", text(&o));
}

/// The op_id of line 2 (another record than the one p2.sig signed).
fn rec_op_id_other(r: &Repo) -> String {
    let rec: Value =
        serde_json::from_str(r.read("plan.noma.patches").lines().nth(1).unwrap()).unwrap();
    rec["op_id"].as_str().unwrap().to_string()
}

/// The statuses `noma replay --signatures` gives every record of
/// plan.noma in the work tree, with the replay's own verdict.
fn statuses(r: &Repo) -> (bool, Vec<Value>) {
    let o = r.noma(&["replay", "plan.noma", "--signatures", "--format", "json"]);
    let v: Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    let recs = v["signatures"]["records"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    (v["replay"]["ok"] == true, recs)
}

/// Every record after the (unsigned) genesis record is signed, agent
/// records approved, and no record has a problem.
fn all_signed_and_approved(r: &Repo, what: &str) {
    let (ok, recs) = statuses(r);
    assert!(ok, "{what}: replay failed");
    assert!(recs.len() >= 3, "{what}: {recs:?}");
    for s in &recs[1..] {
        assert!(s.get("problems").is_none(), "{what}: {s}");
        assert!(s["signed_by"].is_string(), "{what}: {s}");
        if s["needs_approval"] == true {
            assert_eq!(s["approved_by"], "alice@example.com", "{what}: {s}");
        }
    }
}

/// Signed, approved work keeps every signature and approval through a
/// merge both ways, rebase, cherry-pick, squash, `reconcile --write` and
/// a rename, with main moving on meanwhile (a person's signed record on
/// another block).
#[test]
fn signatures_and_approvals_survive_merges_rebases_and_renames() {
    let s = setup();
    let r = &s.r;
    let person = s.person.to_str().unwrap();
    r.ok(&["checkout", "-q", "-b", "agent"]);
    s.agent_patch(&set("c1", 0.9));
    assert_ran(&r.noma(&["approve", "plan.noma", "--key", person, "--yes"]));
    r.commit_all("agent edit, approved");
    r.ok(&["checkout", "-q", "main"]);
    s.person_patch(&set("c2", 0.1));
    r.commit_all("alice on main");
    let main = r.ok(&["rev-parse", "main"]).trim().to_string();
    let agent = r.ok(&["rev-parse", "agent"]).trim().to_string();

    // Merge main into the branch: the PR check still passes.
    r.ok(&["checkout", "-q", "agent"]);
    let o = r.git(&["merge", "--no-edit", "main"]);
    assert_ran(&o);
    all_signed_and_approved(r, "main merged into the branch");
    let (code, out) = s.reconcile();
    assert_eq!(code, 0, "after merging main: {out}");

    // Merge the branch into main (the agent's records become copies).
    r.ok(&["checkout", "-q", "main"]);
    assert_ran(&r.git(&["merge", "--no-edit", "agent"]));
    all_signed_and_approved(r, "branch merged into main");
    r.ok(&["reset", "-q", "--hard", &main]);

    // Rebase the branch onto main.
    r.ok(&["checkout", "-q", "-B", "rebased", &agent]);
    assert_ran(&r.git(&["rebase", "-q", "main"]));
    all_signed_and_approved(r, "rebased");
    assert_eq!(s.reconcile().0, 0, "rebased: {}", s.reconcile().1);

    // pull --rebase of the branch from a remote whose main moved on.
    let remote = r.home.path().join("remote.git");
    r.ok(&["clone", "-q", "--bare", ".", remote.to_str().unwrap()]);
    r.ok(&["remote", "add", "origin", remote.to_str().unwrap()]);
    r.ok(&["checkout", "-q", "-B", "pulled", &agent]);
    assert_ran(&r.git(&["pull", "-q", "--rebase", "origin", "main"]));
    all_signed_and_approved(r, "pull --rebase");

    // Cherry-pick the branch's commit onto main.
    r.ok(&["checkout", "-q", "-B", "picked", &main]);
    assert_ran(&r.git(&["cherry-pick", &agent]));
    all_signed_and_approved(r, "cherry-picked");

    // Squash merge.
    r.ok(&["checkout", "-q", "-B", "squashed", &main]);
    assert_ran(&r.git(&["merge", "--squash", &agent]));
    r.commit_all("squashed");
    all_signed_and_approved(r, "squash merge");

    // reconcile --write on the branch, committed.
    r.ok(&["checkout", "-q", "-B", "written", &agent]);
    let o = r.noma(&["reconcile", "--base", "main", "--write"]);
    assert_ran(&o);
    r.commit_all("reconciled");
    all_signed_and_approved(r, "reconcile --write");
    assert_eq!(s.reconcile().0, 0, "written: {}", s.reconcile().1);

    // `noma repair` of a torn last line (an interrupted append) keeps
    // every record as it was, so every signature.
    let mut torn = r.read("plan.noma.patches");
    torn.push_str("{\"protocol_version\":\"1.0\",\"op_id\":");
    r.write("plan.noma.patches", &torn);
    assert_ran(&r.noma(&["repair", "plan.noma"]));
    all_signed_and_approved(r, "repair");
    assert_eq!(
        r.git(&["status", "--porcelain"]).stdout,
        b"",
        "repair left a change"
    );

    // A rename of the document, its transcript and its sidecar.
    for f in ["plan.noma", "plan.noma.patches", "plan.noma.provenance"] {
        r.ok(&["mv", f, &f.replace("plan", "renamed")]);
    }
    r.commit_all("renamed");
    let o = r.noma(&["replay", "renamed.noma", "--signatures", "--format", "json"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let recs = v["signatures"]["records"].as_array().unwrap();
    assert!(recs[1..].iter().all(|s| s.get("problems").is_none()), "{v}");
    assert_eq!(s.reconcile().0, 0, "renamed: {}", s.reconcile().1);
}

/// Bad input: an unusable key stops the write before anything is written;
/// a sidecar line or an allowed-signers line that does not parse is named
/// with its file and line, and the check fails.
#[test]
fn bad_keys_sidecars_and_signer_files_are_named() {
    let s = setup();
    let r = &s.r;
    let before = r.read("plan.noma.patches");
    let doc_before = r.read("plan.noma");
    let op = set("c1", 0.4).to_string();
    let public = format!("{}.pub", s.agent.display());
    let missing = r.home.path().join("no-such-key");
    for (key, says) in [
        (public.as_str(), "is a public key"),
        (missing.to_str().unwrap(), "no-such-key"),
        ("plan.noma", "not an OpenSSH private key"),
    ] {
        let o = r.noma(&["patch", "plan.noma", "--inplace", "--key", key, "--op", &op]);
        assert_eq!(o.status.code(), Some(2), "{key}: {}", text(&o));
        assert!(text(&o).contains(says), "{key}: {}", text(&o));
        assert_eq!(
            r.read("plan.noma.patches"),
            before,
            "{key}: a record was written"
        );
        assert_eq!(r.read("plan.noma"), doc_before);
        assert!(!r.path().join("plan.noma.provenance").exists());
    }
    // A passphrase-protected key.
    let locked = r.home.path().join("locked");
    assert_ran(&r.cmd(
        "ssh-keygen",
        &[
            "-q",
            "-t",
            "ed25519",
            "-N",
            "secret",
            "-f",
            locked.to_str().unwrap(),
        ],
    ));
    let o = r.noma(&[
        "patch",
        "plan.noma",
        "--inplace",
        "--key",
        locked.to_str().unwrap(),
        "--op",
        &op,
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("passphrase-protected"), "{}", text(&o));
    assert_eq!(r.read("plan.noma.patches"), before);

    // A key the allowed signers do not list, with no principal given.
    let (stranger, _) = keygen(r, "stranger");
    let o = r.noma(&[
        "patch",
        "plan.noma",
        "--inplace",
        "--key",
        stranger.to_str().unwrap(),
        "--op",
        &op,
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("no principal for this key"),
        "{}",
        text(&o)
    );
    assert_eq!(r.read("plan.noma.patches"), before);

    // A sidecar with a broken line, committed past the hook.
    r.ok(&["checkout", "-q", "-b", "agent"]);
    s.agent_patch(&set("c1", 0.9));
    let mut side = r.read("plan.noma.provenance");
    side.push_str("{\"kind\":\"signature\",\"op_id\":\n");
    r.write("plan.noma.provenance", &side);
    r.ok(&["add", "-A"]);
    r.ok(&["commit", "-q", "--no-verify", "-m", "broken sidecar"]);
    s.fails_with("[sidecar-invalid] plan.noma.provenance:2");

    // A base whose allowed_signers line does not parse: skipped and named
    // (as ssh-keygen skips it), so the agent's key is no longer listed.
    r.ok(&["checkout", "-q", "main"]);
    r.write(
        ".noma/allowed_signers",
        "alice@example.com ssh-ed25519 not-base64!\n",
    );
    r.ok(&["add", "-A"]);
    r.ok(&["commit", "-q", "--no-verify", "-m", "broken signers"]);
    r.ok(&["checkout", "-q", "agent"]);
    r.ok(&["reset", "-q", "--hard", "HEAD~1"]);
    s.agent_patch(&set("c2", 0.1));
    r.ok(&["add", "-A"]);
    r.ok(&["commit", "-q", "-m", "signed, by a key the base then skips"]);
    let (code, out) = s.reconcile();
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("[allowed-signers-warning] .noma/allowed_signers:1"),
        "{out}"
    );
    assert!(out.contains("skipped: invalid key"), "{out}");
    assert!(out.contains("[signer-not-allowed]"), "{out}");
}

/// `signatures: warn` reports an unsigned record in the hook and the check
/// without blocking either; a forgery still blocks.
#[test]
fn warn_reports_without_failing() {
    let s = setup();
    let r = &s.r;
    let config = r
        .read(".noma/config.yml")
        .replace("signatures: required", "signatures: warn")
        .replace("agents_need_approval: true", "agents_need_approval: false");
    r.write(".noma/config.yml", &config);
    r.commit_all("warn only");
    r.ok(&["checkout", "-q", "-b", "agent"]);
    let o = r.noma(&[
        "patch",
        "plan.noma",
        "--inplace",
        "--no-sign",
        "--op",
        &set("c1", 0.3).to_string(),
    ]);
    assert_ran(&o);
    r.ok(&["add", "-A"]);
    let (ok, out) = r.try_commit("unsigned, warned");
    assert!(ok, "{out}");
    assert!(
        out.contains("WARNING [unsigned-record] plan.noma.patches:2"),
        "{out}"
    );
    let (code, out) = s.reconcile();
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("WARNING [unsigned-record] plan.noma.patches:2"),
        "{out}"
    );
    s.agent_patch(&set("c2", 0.6));
    let forged = edit_and_rechain(&r.read("plan.noma.patches"), 2, |v| {
        v["reason"] = json!("x")
    });
    r.write("plan.noma.patches", &forged);
    r.ok(&["add", "-A"]);
    let (ok, out) = r.try_commit("forged under warn");
    assert!(!ok, "{out}");
    assert!(
        out.contains("[signature-invalid] plan.noma.patches:3"),
        "{out}"
    );
}

/// git's own signing key (`user.signingkey` with `gpg.format=ssh`) signs
/// where the policy turns provenance on, and is not even looked up where
/// it does not.
#[test]
fn gits_ssh_signing_key_is_used_where_provenance_is_on() {
    let s = setup();
    let r = &s.r;
    r.ok(&["config", "gpg.format", "ssh"]);
    r.ok(&["config", "user.signingkey", s.person.to_str().unwrap()]);
    let o = r.noma(&[
        "patch",
        "plan.noma",
        "--inplace",
        "--op",
        &set("c1", 0.2).to_string(),
    ]);
    assert_ran(&o);
    let side = r.read("plan.noma.provenance");
    assert!(side.contains("\"signer\":\"alice@example.com\""), "{side}");
    // --no-sign opts out.
    let o = r.noma(&[
        "patch",
        "plan.noma",
        "--inplace",
        "--no-sign",
        "--op",
        &set("c1", 0.3).to_string(),
    ]);
    assert_ran(&o);
    assert_eq!(r.read("plan.noma.provenance"), side);
    // Provenance off: git's key is not used.
    let config = r.read(".noma/config.yml");
    let off = &config[..config.find("provenance:").unwrap()];
    r.write(".noma/config.yml", off);
    let o = r.noma(&[
        "patch",
        "plan.noma",
        "--inplace",
        "--op",
        &set("c1", 0.4).to_string(),
    ]);
    assert_ran(&o);
    assert_eq!(r.read("plan.noma.provenance"), side);
}

/// Two branches that each sign records merge without a conflict, both
/// sides' signatures kept, through the attribute `noma init` wrote; the
/// same merge without that line conflicts on the sidecar (so the line is
/// what makes it clean).
#[test]
fn signatures_of_two_branches_merge_cleanly_with_inits_attributes() {
    let s = setup();
    let r = &s.r;
    r.ok(&["checkout", "-q", "-b", "one"]);
    s.person_patch(&set("c1", 0.7));
    r.commit_all("one, signed");
    let one = r.read("plan.noma.provenance");
    r.ok(&["checkout", "-q", "-b", "two", "main"]);
    s.person_patch(&set("c2", 0.6));
    r.commit_all("two, signed");
    let two = r.read("plan.noma.provenance");

    // Control: without the line, the two sidecars conflict.
    let attrs = r.read(".gitattributes");
    r.write(
        ".gitattributes",
        &attrs.replace("*.noma.provenance merge=union\n", ""),
    );
    let o = r.git(&["merge", "--no-edit", "one"]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("plan.noma.provenance"), "{}", text(&o));
    r.ok(&["merge", "--abort"]);
    r.ok(&["checkout", "--", ".gitattributes"]);

    let o = r.git(&["merge", "--no-edit", "one"]);
    assert_ran(&o);
    let merged = r.read("plan.noma.provenance");
    for line in one.lines().chain(two.lines()) {
        assert!(merged.contains(line), "{merged}");
    }
    all_signed_and_approved(r, "two signed branches merged");
    let (code, out) = s.reconcile();
    assert_eq!(code, 0, "{out}");
}

/// A rename that moves the document and its transcript but leaves the
/// sidecar behind is named, with the `git mv` that fixes it, by the
/// pre-commit hook and by `noma reconcile`; once the sidecar follows,
/// the check passes.
#[test]
fn a_sidecar_left_behind_by_a_rename_is_named_with_its_fix() {
    let s = setup();
    let r = &s.r;
    r.ok(&["checkout", "-q", "-b", "moved"]);
    s.person_patch(&set("c1", 0.7));
    r.commit_all("signed");
    for f in ["plan.noma", "plan.noma.patches"] {
        r.ok(&["mv", f, &f.replace("plan", "renamed")]);
    }
    let fix = r#"git mv "plan.noma.provenance" "renamed.noma.provenance""#;
    let (hook, check) = s.hook_blocks_and_check_fails("renamed anyway", "sidecar-not-renamed");
    assert!(hook.contains(fix), "{hook}");
    assert!(check.contains(fix), "{check}");
    r.ok(&["mv", "plan.noma.provenance", "renamed.noma.provenance"]);
    r.commit_all("the sidecar follows");
    let (code, out) = s.reconcile();
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("sidecar-not-renamed"), "{out}");
}

/// An ssh-agent of the test's own (its socket in the test's home),
/// killed when dropped.
struct SshAgent {
    socket: PathBuf,
    pid: String,
}

impl SshAgent {
    /// `ssh-agent -a SOCKET`: the socket is bound before the command
    /// returns (the agent forks after binding), so no wait is needed.
    fn start(r: &Repo) -> SshAgent {
        let socket = r.home.path().join("agent.sock");
        let o = r.cmd("ssh-agent", &["-s", "-a", socket.to_str().unwrap()]);
        assert_ran(&o);
        let out = String::from_utf8_lossy(&o.stdout).to_string();
        let pid = out
            .split("SSH_AGENT_PID=")
            .nth(1)
            .and_then(|s| s.split(';').next())
            .unwrap_or_else(|| panic!("no pid in {out}"))
            .to_string();
        SshAgent { socket, pid }
    }

    /// `cmd` run by `sh` with this agent's socket in the environment.
    fn sh(&self, r: &Repo, cmd: &str) -> std::process::Output {
        r.sh(&format!("SSH_AUTH_SOCK='{}' {cmd}", self.socket.display()))
    }
}

impl Drop for SshAgent {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill").arg(&self.pid).status();
    }
}

/// A public key names a key the running ssh-agent holds, as git's
/// `user.signingkey` does: `--key KEY.pub`, `NOMA_SIGNING_KEY=KEY.pub`
/// and git's literal `key::ssh-ed25519 …` all sign through the agent; the
/// agent-signed work passes the PR check after an agent-held approval.
/// Without an agent, or with one that lacks the key, nothing is written
/// and the message says what to do.
#[test]
fn a_public_key_signs_through_the_running_ssh_agent() {
    let s = setup();
    let r = &s.r;
    let agent = SshAgent::start(r);
    let (alice_pub, bot_pub) = (
        format!("{}.pub", s.person.display()),
        format!("{}.pub", s.agent.display()),
    );
    let before = r.read("plan.noma.patches");
    let op = set("c1", 0.4);
    // The agent holds no key yet: refused, nothing written.
    let o = agent.sh(
        r,
        &format!("noma patch plan.noma --inplace --key '{alice_pub}' --op '{op}'"),
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("does not hold this key"), "{}", text(&o));
    assert!(text(&o).contains("ssh-add"), "{}", text(&o));
    // No agent at all.
    let o = r.noma(&[
        "patch",
        "plan.noma",
        "--inplace",
        "--key",
        &alice_pub,
        "--op",
        &op.to_string(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("SSH_AUTH_SOCK is not set"),
        "{}",
        text(&o)
    );
    assert_eq!(r.read("plan.noma.patches"), before);
    assert!(!r.path().join("plan.noma.provenance").exists());

    for key in [&s.person, &s.agent] {
        assert_ran(&agent.sh(r, &format!("ssh-add -q '{}'", key.display())));
    }
    r.ok(&["checkout", "-q", "-b", "agent"]);
    let o = agent.sh(
        r,
        &format!(
            "NOMA_SIGNING_KEY='{bot_pub}' noma patch plan.noma --inplace --actor-kind agent \
             --actor-name bot --op '{}'",
            set("c1", 0.9)
        ),
    );
    assert_ran(&o);
    // git's literal public key with gpg.format=ssh, where provenance is on.
    r.ok(&["config", "gpg.format", "ssh"]);
    let public = std::fs::read_to_string(s.person.with_extension("pub")).unwrap();
    let literal = format!("key::{}", public.trim());
    r.ok(&["config", "user.signingkey", &literal]);
    assert_ran(&agent.sh(
        r,
        &format!(
            "noma patch plan.noma --inplace --actor-name alice --op '{}'",
            set("c2", 0.1)
        ),
    ));
    let side = r.read("plan.noma.provenance");
    assert_eq!(side.lines().count(), 2, "{side}");
    assert!(side.contains("\"signer\":\"bot@agents.example\""), "{side}");
    assert!(side.contains("\"signer\":\"alice@example.com\""), "{side}");
    r.commit_all("signed through the agent");
    s.fails_with("[approval-missing] plan.noma.patches:2");

    // The approval, signed through the agent with alice's public key.
    let o = agent.sh(
        r,
        &format!("noma approve plan.noma --key '{alice_pub}' --yes"),
    );
    assert_ran(&o);
    r.commit_all("approved through the agent");
    let (code, out) = s.reconcile();
    assert_eq!(code, 0, "{out}");
    // ssh-keygen verifies what the agent signed, over noma's payload.
    let entry: Value = serde_json::from_str(side.lines().next().unwrap()).unwrap();
    r.write("agent.sig", entry["sig"].as_str().unwrap());
    let o = r.sh(&format!(
        "noma provenance payload plan.noma --op-id {} --signer bot@agents.example > agent.payload && \
         ssh-keygen -Y verify -n noma -f .noma/allowed_signers -I bot@agents.example -s agent.sig < agent.payload",
        entry["op_id"].as_str().unwrap()
    ));
    assert_ran(&o);
}

/// The summary's overview table has a provenance column: a document
/// whose only errors are missing approvals is not all ✅ there, and
/// approved it is.
#[test]
fn the_overview_table_shows_provenance_errors() {
    let s = setup();
    let r = &s.r;
    r.ok(&["checkout", "-q", "-b", "agent"]);
    s.agent_patch(&set("c1", 0.9));
    r.commit_all("agent edit, signed");
    let row = || {
        let o = r.noma(&["reconcile", "--base", "main", "--format", "markdown"]);
        let out = text(&o);
        let header = out
            .lines()
            .find(|l| l.starts_with("| Document |"))
            .unwrap_or_else(|| panic!("{out}"));
        assert!(header.ends_with("| Provenance |"), "{header}");
        let row = out
            .lines()
            .find(|l| l.starts_with("| `plan.noma`"))
            .unwrap_or_else(|| panic!("{out}"))
            .to_string();
        (o.status.code(), row)
    };
    let (code, before) = row();
    assert_eq!(code, Some(1));
    assert!(
        before.ends_with("| ✅ | ✅ | ✅ | ✅ | ❌ |"),
        "approval-missing shows: {before}"
    );
    let key = s.person.to_str().unwrap();
    assert_ran(&r.noma(&["approve", "plan.noma", "--key", key, "--yes"]));
    r.commit_all("approved");
    let (code, after) = row();
    assert_eq!(code, Some(0), "{after}");
    assert!(after.ends_with("| ✅ | ✅ | ✅ | ✅ | ✅ |"), "{after}");
}

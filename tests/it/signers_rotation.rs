//! Key rotation as git teams do it, with the real `git` and `ssh-keygen`:
//! a `valid-before` on the old key keeps the records it signed valid and
//! refuses the ones it signs later; a line noma cannot use (OpenSSH's
//! `no-touch-required` among them) is skipped with a warning and never
//! blocks a write, the hook or the check; a signed record is never called
//! unsigned; an agent key also listed for a person still needs approval.

use std::path::Path;

use serde_json::{json, Value};

use crate::common::{assert_ran, keygen, text, Repo};

const DOC: &str = "# Plan\n\n::claim{id=\"c1\" confidence=0.5}\nOne.\n::\n\n::claim{id=\"c2\" confidence=0.5}\nTwo.\n::\n";

/// A repository with provenance under `policy` and `signers` as its
/// allowed-signers file, committed on main.
fn repo(policy: &str, signers: &dyn Fn(&Repo) -> String) -> Repo {
    let r = Repo::with_genesis_record(DOC);
    let mut config = r.read(".noma/config.yml");
    config.push_str(policy);
    r.write(".noma/config.yml", &config);
    let s = signers(&r);
    r.write(".noma/allowed_signers", &s);
    r.commit_all("provenance on");
    r
}

fn set(id: &str, v: f64) -> String {
    json!({"op": "update_attribute", "id": id, "key": "confidence", "value": v}).to_string()
}

/// `noma patch` signing with `key` (and `env`, e.g. a principal).
fn patch(r: &Repo, key: &Path, env: &str, op: &str) -> std::process::Output {
    r.sh(&format!(
        "{env} noma patch plan.noma --inplace --key '{}' --actor-name alice --op '{op}'",
        key.display()
    ))
}

fn reconcile(r: &Repo) -> (i32, String) {
    let o = r.noma(&["reconcile", "--base", "main"]);
    (o.status.code().unwrap_or(-1), text(&o))
}

fn replay_signatures(r: &Repo) -> (i32, Value) {
    let o = r.noma(&["replay", "plan.noma", "--signatures", "--format", "json"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", text(&o)));
    (o.status.code().unwrap_or(-1), v)
}

/// The `ts` of the transcript's last record, as `YYYYMMDDHHMMSSZ` (what
/// `valid-before` takes), and in whole seconds.
fn last_ts(r: &Repo) -> (String, u64) {
    let t = r.read("plan.noma.patches");
    let v: Value = serde_json::from_str(t.lines().last().unwrap()).unwrap();
    let ts = v["ts"].as_str().unwrap();
    let digits: String = ts[..19].chars().filter(char::is_ascii_digit).collect();
    let secs = noma_provenance::openssh::rfc3339_seconds(ts).unwrap();
    (format!("{digits}Z"), secs)
}

const REQUIRED: &str = "provenance:\n  signatures: required\n  agents_need_approval: false\n";

#[test]
fn a_key_rotated_with_valid_before_keeps_its_records_and_signs_no_new_ones() {
    let keys = std::cell::RefCell::new(None);
    let r = repo(REQUIRED, &|r| {
        let (old, old_pub) = keygen(r, "alice-old");
        let (new, new_pub) = keygen(r, "alice-new");
        let s = format!("alice@example.com namespaces=\"noma\" {old_pub}\n");
        *keys.borrow_mut() = Some((old, old_pub, new, new_pub));
        s
    });
    let (old, old_pub, new, new_pub) = keys.take().unwrap();
    assert_ran(&patch(&r, &old, "", &set("c1", 0.4)));
    r.commit_all("signed with the old key");
    let (before, t1) = last_ts(&r);
    // The rotation: the old key is valid up to (and including) the second
    // its last record was signed in; a new key takes over.
    r.write(
        ".noma/allowed_signers",
        &format!(
            "alice@example.com namespaces=\"noma\",valid-before=\"{before}\" {old_pub}\nalice@example.com namespaces=\"noma\" {new_pub}\n"
        ),
    );
    r.commit_all("rotate alice's key");
    // The old records stay valid.
    let (code, v) = replay_signatures(&r);
    let recs = v["signatures"]["records"].as_array().unwrap();
    assert_eq!(recs[1]["signed_by"], "alice@example.com", "{v}");
    assert!(recs[1].get("problems").is_none(), "{v}");
    assert_eq!(code, 0, "the genesis record predates the policy: {v}");
    assert_eq!(recs[0]["problems"][0]["code"], "pre-policy-record", "{v}");

    // What the old key signs later is refused. The key's window ends at a
    // whole second; the next record must be dated after it.
    while noma_provenance::signers::now() <= t1 {
        std::thread::yield_now();
    }
    r.ok(&["checkout", "-q", "-b", "late"]);
    let o = patch(&r, &old, "", &set("c2", 0.7));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains(
            "no principal for this key now: .noma/allowed_signers line 1 lists this key only valid-before"
        ),
        "{}",
        text(&o)
    );
    let o = patch(
        &r,
        &old,
        "NOMA_SIGNING_PRINCIPAL=alice@example.com",
        &set("c2", 0.7),
    );
    assert_ran(&o);
    r.ok(&["add", "-A"]);
    let (ok, hook) = r.try_commit("the old key, after its window");
    assert!(!ok, "{hook}");
    assert!(
        hook.contains("[signer-not-allowed] plan.noma.patches:3"),
        "{hook}"
    );
    assert!(hook.contains("valid-before"), "{hook}");
    r.ok(&["commit", "-q", "--no-verify", "-m", "committed anyway"]);
    let (code, out) = reconcile(&r);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("[signer-not-allowed] plan.noma.patches:3"),
        "{out}"
    );
    assert!(!out.contains("unsigned-record"), "{out}");
    // HEAD's committer date is the branch's to write: dated back into the
    // old key's window, it does not make the late record count.
    let back = format!("@{} +0000", t1 - 3600);
    let o = r.sh(&format!(
        "GIT_COMMITTER_DATE='{back}' git commit -q --amend --no-verify -C HEAD"
    ));
    assert_ran(&o);
    let (code, out) = reconcile(&r);
    assert_eq!(code, 1, "HEAD dated back: {out}");
    assert!(
        out.contains("[signer-not-allowed] plan.noma.patches:3"),
        "{out}"
    );

    // The new key signs.
    r.ok(&["checkout", "-q", "main"]);
    r.ok(&["checkout", "-q", "-b", "fresh"]);
    assert_ran(&patch(&r, &new, "", &set("c2", 0.8)));
    r.ok(&["add", "-A"]);
    let (ok, hook) = r.try_commit("the new key");
    assert!(ok, "{hook}");
    let (code, out) = reconcile(&r);
    assert_eq!(code, 0, "{out}");

    // A key removed outright: its records are signed, by a key no longer
    // allowed, never "unsigned".
    r.write(
        ".noma/allowed_signers",
        &format!("alice@example.com namespaces=\"noma\" {new_pub}\n"),
    );
    let (code, v) = replay_signatures(&r);
    assert_eq!(code, 1, "{v}");
    let recs = v["signatures"]["records"].as_array().unwrap();
    assert_eq!(recs[1]["problems"][0]["code"], "signer-not-allowed", "{v}");
    let o = r.noma(&["replay", "plan.noma", "--signatures"]);
    let out = text(&o);
    assert!(
        out.contains("line 2 ") && out.contains("signature not accepted"),
        "{out}"
    );
    let line2 = out.lines().find(|l| l.contains("  line 2 ")).unwrap();
    assert!(!line2.contains("unsigned"), "{out}");
}

#[test]
fn an_unusable_line_never_blocks_a_write_the_hook_or_the_check() {
    for level in ["warn", "required"] {
        let person = std::cell::RefCell::new(None);
        let r = repo(
            &format!("provenance:\n  signatures: {level}\n  agents_need_approval: false\n"),
            &|r| {
                let (key, public) = keygen(r, "alice");
                let (_, bob) = keygen(r, "bob");
                *person.borrow_mut() = Some(key);
                format!(
                    "# the team's file, shared with git\nbob@example.com no-touch-required {bob}\nalice@example.com namespaces=\"git,noma\" {public}\ncarol@example.com valid-before=\"someday\" {bob}\n"
                )
            },
        );
        let key = person.take().unwrap();
        r.ok(&["checkout", "-q", "-b", "edit"]);
        let o = patch(&r, &key, "", &set("c1", 0.2));
        assert_ran(&o);
        r.ok(&["add", "-A"]);
        let (ok, hook) = r.try_commit("signed edit");
        assert!(ok, "{level}: {hook}");
        assert!(
            hook.contains("[allowed-signers-warning] .noma/allowed_signers:2"),
            "{level}: {hook}"
        );
        let (code, out) = reconcile(&r);
        assert_eq!(code, 0, "{level}: {out}");
        assert!(
            out.contains("no-touch-required") && out.contains(".noma/allowed_signers:4"),
            "{level}: {out}"
        );
        let o = r.noma(&["replay", "plan.noma", "--signatures"]);
        let out = text(&o);
        assert!(
            out.contains("signed by alice@example.com"),
            "{level}: {out}"
        );
        assert!(
            out.contains("WARNING [allowed-signers-warning] .noma/allowed_signers line 2: skipped"),
            "{level}: {out}"
        );
        let o = r.noma(&["hooks", "status"]);
        assert_ran(&o);
        assert!(
            text(&o).contains("1 usable line(s), 2 warning(s)"),
            "{}",
            text(&o)
        );
        let o = r.noma(&["provenance", "check-signers"]);
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        assert!(
            text(&o).contains("line 4: skipped: bad options: invalid \"valid-before\" time"),
            "{}",
            text(&o)
        );
    }
}

#[test]
fn an_agent_key_listed_for_a_person_still_needs_approval_and_is_named() {
    let keys = std::cell::RefCell::new(None);
    let r = repo(
        "provenance:\n  signatures: required\n  agents_need_approval: true\n  agent_principals: [\"*@agents.example\"]\n",
        &|r| {
            let (person, person_pub) = keygen(r, "alice");
            let (agent, agent_pub) = keygen(r, "bot");
            *keys.borrow_mut() = Some((person, agent));
            format!(
                "alice@example.com namespaces=\"noma\" {person_pub}\nbot@agents.example namespaces=\"noma\" {agent_pub}\nalice@example.com,ops@example.com {agent_pub}\n"
            )
        },
    );
    let (person, agent) = keys.take().unwrap();
    let o = r.noma(&["provenance", "check-signers"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let said = text(&o);
    assert!(
        said.contains("listed for the agent principal bot@agents.example (line 2) and also for alice@example.com (line 3), ops@example.com (line 3)"),
        "{said}"
    );
    let o = r.noma(&["hooks", "status"]);
    assert!(
        text(&o).contains("give the agent a key of its own"),
        "{}",
        text(&o)
    );

    // The agent signs as alice, calling itself human.
    r.ok(&["checkout", "-q", "-b", "agent"]);
    let o = patch(
        &r,
        &agent,
        "NOMA_SIGNING_PRINCIPAL=alice@example.com",
        &set("c1", 0.9),
    );
    assert_ran(&o);
    r.commit_all("the agent, as alice");
    let (code, out) = reconcile(&r);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("[approval-missing] plan.noma.patches:2"),
        "{out}"
    );
    assert!(out.contains("give the agent a key of its own"), "{out}");
    // A person's approval lets it through.
    let o = r.noma(&[
        "approve",
        "plan.noma",
        "--key",
        person.to_str().unwrap(),
        "--yes",
    ]);
    assert_ran(&o);
    r.commit_all("approved");
    let (code, out) = reconcile(&r);
    assert_eq!(code, 0, "{out}");
}

/// A record dated forward into a key's `valid-after` window, in a commit
/// dated forward too, does not count: the check caps the record's time at
/// its own clock, not at HEAD's committer date, which the branch writes.
#[test]
fn a_forward_dated_record_of_a_key_not_yet_valid_does_not_count() {
    let keys = std::cell::RefCell::new(None);
    let day = 86_400;
    let later = noma_provenance::signers::now() + 2 * day;
    let from = utc(later - day, "%Y%m%d%H%M%SZ");
    let r = repo(REQUIRED, &|r| {
        let (new, new_pub) = keygen(r, "alice-next");
        *keys.borrow_mut() = Some(new);
        format!("alice@example.com namespaces=\"noma\",valid-after=\"{from}\" {new_pub}\n")
    });
    let new = keys.take().unwrap();
    r.ok(&["checkout", "-q", "-b", "future"]);
    assert_ran(&patch(
        &r,
        &new,
        "NOMA_SIGNING_PRINCIPAL=alice@example.com",
        &set("c1", 0.3),
    ));
    // The forger's record: dated two days ahead, inside the key's window,
    // and signed again over that date with the key.
    let t = r.read("plan.noma.patches");
    let (head, last) = t.trim_end().rsplit_once('\n').unwrap();
    let v: Value = serde_json::from_str(last).unwrap();
    let ts = v["ts"].as_str().unwrap();
    let forward = utc(later, "%Y-%m-%dT%H:%M:%SZ");
    let last = last.replace(
        &format!("\"ts\":\"{ts}\""),
        &format!("\"ts\":\"{forward}\""),
    );
    assert_ne!(last, t.trim_end().rsplit_once('\n').unwrap().1);
    r.write("plan.noma.patches", &format!("{head}\n{last}\n"));
    let rec = noma_core::transcript::parse_record(2, last.as_bytes()).unwrap();
    // Signed as the writer signs today: bound to the transcript's first
    // record (decision signatures-bind-the-document).
    let first_line = t.lines().next().unwrap();
    let first = noma_core::transcript::parse_record(1, first_line.as_bytes()).unwrap();
    let lineage = noma_provenance::canonical::Lineage::of(&first);
    let payload =
        noma_provenance::canonical::record_payload_v2(&rec, "alice@example.com", &lineage);
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
            new.to_str().unwrap(),
            "payload",
        ],
    );
    assert_ran(&o);
    let sig = r.read("payload.sig");
    std::fs::remove_file(r.path().join("payload")).unwrap();
    std::fs::remove_file(r.path().join("payload.sig")).unwrap();
    let side: String = r
        .read("plan.noma.provenance")
        .lines()
        .map(|l| {
            let mut e: Value = serde_json::from_str(l).unwrap();
            if e["op_id"] == v["op_id"] {
                e["sig"] = json!(sig);
            }
            format!("{e}\n")
        })
        .collect();
    r.write("plan.noma.provenance", &side);
    r.ok(&["add", "-A"]);
    let (ok, hook) = r.try_commit("dated forward");
    assert!(!ok, "{hook}");
    assert!(hook.contains("[signer-not-allowed]"), "{hook}");
    let o = r.sh(&format!(
        "GIT_COMMITTER_DATE='@{} +0000' git commit -q --no-verify -m 'dated forward'",
        later + 3600
    ));
    assert_ran(&o);
    let (code, out) = reconcile(&r);
    assert_eq!(code, 1, "HEAD dated forward: {out}");
    assert!(
        out.contains("[signer-not-allowed] plan.noma.patches:2") && out.contains("valid-after"),
        "{out}"
    );
    assert!(
        !out.contains("signature-invalid"),
        "the signature itself verifies: {out}"
    );
}

/// `t` (seconds since the epoch) in UTC, formatted by `date(1)`.
fn utc(t: u64, format: &str) -> String {
    let o = std::process::Command::new("date")
        .args(["-u", "-d", &format!("@{t}"), &format!("+{format}")])
        .output()
        .unwrap();
    assert_ran(&o);
    String::from_utf8(o.stdout).unwrap().trim().to_string()
}

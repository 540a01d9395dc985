//! The answers `noma blame` and `noma log` keep in the block cache are
//! keyed by everything they depend on: a repeated question is answered
//! from the cache, and any change to the transcript (appended to, or
//! rewritten in place with its size and mtime kept), the sidecar, the
//! allowed signers or HEAD gives a fresh answer.

use serde_json::{json, Value};

use crate::common::{assert_ran, keygen, Repo};

const DOC: &str = "# Plan\n\n::note{id=\"a\"}\nalpha\n::\n\n::note{id=\"b\"}\nbeta\n::\n";

/// `noma blame plan.noma --format json`: (id, last change) per block.
fn blame(r: &Repo) -> Vec<(String, Value)> {
    let o = r.noma(&["blame", "plan.noma", "--format", "json"]);
    assert_ran(&o);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    v["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| (b["id"].as_str().unwrap().to_string(), b["last"].clone()))
        .collect()
}

/// The last change of block `id`.
fn last(r: &Repo, id: &str) -> Value {
    blame(r).into_iter().find(|(i, _)| i == id).unwrap().1
}

/// `noma log plan.noma --block ID --limit 1 --format json`'s change.
fn log_one(r: &Repo, id: &str) -> Value {
    let o = r.noma(&[
        "log",
        "plan.noma",
        "--block",
        id,
        "--limit",
        "1",
        "--format",
        "json",
    ]);
    assert_ran(&o);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    v["changes"][0].clone()
}

fn patch(r: &Repo, reason: &str, op: &Value) {
    let o = r.noma(&[
        "patch",
        "plan.noma",
        "--inplace",
        "--reason",
        reason,
        "--op",
        &op.to_string(),
    ]);
    assert_ran(&o);
}

#[test]
fn an_appended_transcript_and_a_new_head_give_fresh_answers() {
    let r = Repo::with_genesis_record(DOC);
    patch(
        &r,
        "first",
        &json!({"op": "replace_body", "id": "a", "content": "one"}),
    );
    let before = last(&r, "a");
    assert_eq!(before["reason"], "first");
    assert_eq!(before["commit"], Value::Null);
    assert_eq!(last(&r, "a"), before, "the warm answer is the cold one");
    assert_eq!(log_one(&r, "a")["reason"], "first");
    // HEAD moves: the record now has its commit.
    r.commit_all("first");
    let head = r.ok(&["rev-parse", "HEAD"]).trim().to_string();
    assert_eq!(last(&r, "a")["commit"], head.as_str());
    assert_eq!(log_one(&r, "a")["commit"], head.as_str());
    // One more record appended: the cached answers are not served.
    patch(
        &r,
        "second",
        &json!({"op": "replace_body", "id": "a", "content": "two"}),
    );
    assert_eq!(last(&r, "a")["reason"], "second");
    assert_eq!(log_one(&r, "a")["reason"], "second");
}

#[test]
fn a_transcript_rewritten_in_place_is_never_answered_from_the_cache() {
    let r = Repo::with_genesis_record(DOC);
    patch(
        &r,
        "aaaa",
        &json!({"op": "replace_body", "id": "b", "content": "new"}),
    );
    assert_eq!(last(&r, "b")["reason"], "aaaa");
    assert_eq!(log_one(&r, "b")["reason"], "aaaa");
    // Same size, same mtime, other bytes (the reason is no part of the
    // hash chain, so the transcript still replays).
    let path = r.path().join("plan.noma.patches");
    let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
    let old = r.read("plan.noma.patches");
    let new = old.replace("\"reason\":\"aaaa\"", "\"reason\":\"bbbb\"");
    assert_ne!(old, new);
    assert_eq!(old.len(), new.len());
    std::fs::write(&path, &new).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    assert_eq!(last(&r, "b")["reason"], "bbbb");
    assert_eq!(log_one(&r, "b")["reason"], "bbbb");
}

#[test]
fn a_changed_signer_list_or_sidecar_gives_a_fresh_answer() {
    let r = Repo::with_genesis_record(DOC);
    let (key, public) = keygen(&r, "alice");
    let mut config = r.read(".noma/config.yml");
    config.push_str("provenance:\n  signatures: warn\n");
    r.write(".noma/config.yml", &config);
    let signers = format!("alice@example.com namespaces=\"noma\" {public}\n");
    r.write(".noma/allowed_signers", &signers);
    r.commit_all("provenance on");
    let o = r.sh(&format!(
        "NOMA_SIGNING_KEY='{}' noma patch plan.noma --inplace --reason signed --op '{}'",
        key.display(),
        json!({"op": "replace_body", "id": "a", "content": "one"})
    ));
    assert_ran(&o);
    assert_eq!(last(&r, "a")["signed_by"], "alice@example.com");
    // Her key no longer allowed: the signature no longer verifies.
    r.write(".noma/allowed_signers", "");
    assert_eq!(last(&r, "a")["signed_by"], Value::Null);
    r.write(".noma/allowed_signers", &signers);
    assert_eq!(last(&r, "a")["signed_by"], "alice@example.com");
    // The sidecar gone: no signature at all.
    let sidecar = r.path().join("plan.noma.provenance");
    let kept = std::fs::read(&sidecar).unwrap();
    std::fs::remove_file(&sidecar).unwrap();
    assert_eq!(last(&r, "a")["signed_by"], Value::Null);
    std::fs::write(&sidecar, kept).unwrap();
    assert_eq!(last(&r, "a")["signed_by"], "alice@example.com");
}

/// `noma blame` and `noma log` (every change) as JSON, with the block cache
/// removed first when `cold`.
fn answers(r: &Repo, cold: bool) -> (Value, Value) {
    if cold {
        let _ = std::fs::remove_dir_all(r.path().join(".noma/cache"));
    }
    let mut out = Vec::new();
    for args in [
        &["blame", "plan.noma", "--format", "json"][..],
        &["log", "plan.noma", "--format", "json"][..],
    ] {
        let o = r.noma(args);
        assert_ran(&o);
        out.push(serde_json::from_slice::<Value>(&o.stdout).unwrap());
    }
    (out.remove(0), out.remove(0))
}

/// A transcript that grew is attributed from where the stored attribution
/// stopped, and answers as a cold replay of the whole does, across renames,
/// removals and commits; one whose stored part was rewritten (same size)
/// is replayed from the start.
#[test]
fn a_grown_transcript_goes_on_from_where_its_attribution_stopped() {
    let r = Repo::with_genesis_record(DOC);
    let ops = [
        json!({"op": "replace_body", "id": "a", "content": "one"}),
        json!({"op": "rename_id", "from": "b", "to": "c"}),
        json!({"op": "add_block", "parent": "plan", "content": "::note{id=\"d\"}\nnew\n::", "position": 0}),
        json!({"op": "replace_body", "id": "c", "content": "renamed body"}),
        json!({"op": "delete_block", "id": "d"}),
        json!({"op": "rename_id", "from": "a", "to": "a2"}),
        json!({"op": "rename_id", "from": "a2", "to": "a"}),
        json!({"op": "replace_body", "id": "a", "content": "three"}),
    ];
    for (i, op) in ops.iter().enumerate() {
        patch(&r, &format!("step {i}"), op);
        if i % 3 == 1 {
            r.commit_all(&format!("step {i}"));
        }
        // Warm from the last answer's attribution, then the same cold.
        let resumed = answers(&r, false);
        assert_eq!(resumed, answers(&r, true), "after step {i}");
    }
    assert_eq!(last(&r, "a")["reason"], "step 7");
    // The stored attribution's part rewritten with its size kept but its
    // lines moved (one reason shorter, a later one longer), and one more
    // record: the lines are found where they are now.
    let path = r.path().join("plan.noma.patches");
    let old = r.read("plan.noma.patches");
    let new = (old.replace("\"reason\":\"step 1\"", "\"reason\":\"st 1\""))
        .replace("\"reason\":\"step 3\"", "\"reason\":\"STEP  3!\"");
    assert_eq!(old.len(), new.len());
    std::fs::write(&path, &new).unwrap();
    patch(
        &r,
        "step 8",
        &json!({"op": "replace_body", "id": "a", "content": "four"}),
    );
    let (blame, _) = answers(&r, false);
    let c = (blame["blocks"].as_array().unwrap().iter())
        .find(|b| b["id"] == "c")
        .unwrap();
    assert_eq!(c["last"]["reason"], "STEP  3!", "{blame}");
    assert_eq!(answers(&r, false), answers(&r, true));
}

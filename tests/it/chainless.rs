//! Transcripts without the optional hash chain (§5.3: `prev_entry_sha256`
//! is optional, "absence is permitted and common"): records written the
//! way the reference's MCP server (and the agent SDKs that drive it)
//! writes them commit through the hook, replay and reconcile, and noma's
//! writers chain onto them. The record shape was checked against the
//! reference's own server, driven by its TypeScript and Python SDKs.

use std::path::Path;

use noma_core::doc::hash::sha256_hex;
use serde_json::{json, Value};

use crate::common::{text, Repo};

const DOC: &str = "# Plan {id=\"plan\"}\n\n::claim{id=\"a\" confidence=0.5}\nAlpha.\n::\n\n::claim{id=\"b\"}\nBeta.\n::\n\n::claim{id=\"c\"}\nGamma.\n::\n";

/// Appends one record to `doc`'s transcript as the reference's
/// `patch_block` does (field order, short shas, a `file://` uri, no
/// `prev_entry_sha256`, no `signature`) and writes the patched document;
/// a refused op leaves a rejected record with its §3.5 code.
fn reference_patch(r: &Repo, doc: &str, op: Value) {
    let path = r.path().join(doc);
    let pre = std::fs::read_to_string(&path).unwrap();
    let pre_sha256 = sha256_hex(pre.as_bytes());
    let applied = noma_core::patch::apply_one(&pre, &op);
    let post = applied.as_deref().unwrap_or(&pre);
    let post_sha256 = sha256_hex(post.as_bytes());
    let mut rec = json!({
        "protocol_version": "1.0",
        "tool_version": "0.17.0",
        "op_id": uuid::Uuid::new_v4().to_string(),
        "ts": "2026-11-27T18:34:19.442Z",
        "actor": {"kind": "agent", "name": "ts-agent"},
        "doc_uri": format!("file://{}", path.display()),
        "pre_sha256": pre_sha256,
        "post_sha256": post_sha256,
        "pre_sha": &pre_sha256[..8],
        "post_sha": &post_sha256[..8],
        "op": op,
        "patch_result": if applied.is_ok() { "applied" } else { "rejected" },
        "pre_validation": "ok",
        "post_validation": "ok",
    });
    match &applied {
        Err(e) => {
            rec["diagnostics"] = json!([{"phase": "pre", "severity": "error",
                "code": e.code.as_str(), "message": e.message}])
        }
        // The reference lists the validator's warnings on applied records
        // (its own fields: `pos`, `nodeId`, `endLine`).
        Ok(post) if post.contains("accessed=") => {
            rec["pre_validation"] = json!("warn");
            rec["post_validation"] = json!("warn");
            rec["diagnostics"] = json!([{"severity": "warning", "code": "stale-citation",
                "message": "Citation \"x\" was last accessed 2025-12-15 (>60 days ago).",
                "pos": {"line": 3, "column": 1}, "nodeId": "x", "endLine": 5, "phase": "pre"}]);
        }
        Ok(_) => {}
    }
    rec["reason"] = json!("agent edit");
    rec["elapsed_ms"] = json!(3);
    let mut t = std::fs::read(r.path().join(format!("{doc}.patches"))).unwrap_or_default();
    t.extend_from_slice(format!("{rec}\n").as_bytes());
    std::fs::write(r.path().join(format!("{doc}.patches")), t).unwrap();
    std::fs::write(&path, post).unwrap();
}

/// The raw lines of `doc`'s transcript.
fn lines(r: &Repo, doc: &str) -> Vec<Vec<u8>> {
    std::fs::read(r.path().join(format!("{doc}.patches")))
        .unwrap()
        .split_inclusive(|b| *b == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

/// `noma replay DOC` and `noma reconcile --base main` both pass.
fn replays_and_reconciles(r: &Repo, doc: &str) {
    let o = r.noma(&["replay", doc]);
    assert!(o.status.success(), "replay: {}", text(&o));
    let o = r.noma(&["reconcile", "--base", "main"]);
    assert!(o.status.success(), "reconcile: {}", text(&o));
    assert!(text(&o).contains("replays yes"), "{}", text(&o));
}

/// A repository after `noma init` with `doc` (holding `content`)
/// committed on `main`, on a new branch `feat`.
fn repo_with(doc: &str, content: &str) -> Repo {
    let r = Repo::init();
    let o = r.noma(&["init"]);
    assert!(o.status.success(), "{}", text(&o));
    r.write(doc, content);
    r.commit_all("base");
    r.ok(&["checkout", "-q", "-b", "feat"]);
    r
}

#[test]
fn reference_written_records_commit_replay_reconcile_and_noma_chains_onto_them() {
    let r = repo_with("plan.noma", DOC);
    reference_patch(
        &r,
        "plan.noma",
        json!({"op":"update_attribute","id":"a","key":"confidence","value":0.9}),
    );
    reference_patch(
        &r,
        "plan.noma",
        json!({"op":"replace_body","id":"missing","content":"x"}),
    );
    reference_patch(
        &r,
        "plan.noma",
        json!({"op":"replace_body","id":"b","content":"Beta, revised.\n"}),
    );
    reference_patch(&r, "plan.noma", json!({"op":"delete_block","id":"c"}));
    reference_patch(
        &r,
        "plan.noma",
        json!({"op":"update_attribute","id":"b","key":"accessed","value":"2025-12-15"}),
    );
    let before = lines(&r, "plan.noma");
    assert_eq!(before.len(), 5);
    assert!(before
        .iter()
        .all(|l| !l.windows(17).any(|w| w == b"prev_entry_sha256")));
    r.commit_all("four records from a reference agent");
    replays_and_reconciles(&r, "plan.noma");

    // noma's writers chain onto the chain-less line before.
    r.agent_patch(
        "plan.noma",
        r#"{"op":"update_attribute","id":"b","key":"status","value":"ok"}"#,
    );
    let after = lines(&r, "plan.noma");
    let last: Value = serde_json::from_slice(&after[5]).unwrap();
    assert_eq!(last["prev_entry_sha256"], json!(sha256_hex(&after[4])));
    r.commit_all("a noma patch after them");
    replays_and_reconciles(&r, "plan.noma");
    // And the reference appending after a chained line is accepted too.
    reference_patch(
        &r,
        "plan.noma",
        json!({"op":"update_attribute","id":"a","key":"confidence","value":0.3}),
    );
    r.commit_all("the reference again");
    replays_and_reconciles(&r, "plan.noma");
}

#[test]
fn the_hook_names_the_true_cause_for_chain_less_records_it_refuses() {
    // A hand edit between two chain-less records: an unexplained edit,
    // not another branch's records.
    let r = repo_with("plan.noma", DOC);
    reference_patch(
        &r,
        "plan.noma",
        json!({"op":"update_attribute","id":"a","key":"confidence","value":0.9}),
    );
    let doc = r.read("plan.noma").replace("Gamma.", "Gamma, by hand.");
    r.write("plan.noma", &doc);
    reference_patch(
        &r,
        "plan.noma",
        json!({"op":"replace_body","id":"b","content":"Beta 2.\n"}),
    );
    r.ok(&["add", "-A"]);
    let (ok, out) = r.try_commit("hand edit between records");
    assert!(!ok, "{out}");
    assert!(
        out.contains("an edit happened that no record explains"),
        "{out}"
    );
    assert!(!out.contains("joined"), "{out}");

    // A chained record after a chain-less one must name that line.
    let r = repo_with("plan.noma", DOC);
    reference_patch(
        &r,
        "plan.noma",
        json!({"op":"update_attribute","id":"a","key":"confidence","value":0.9}),
    );
    r.agent_patch(
        "plan.noma",
        r#"{"op":"update_attribute","id":"b","key":"status","value":"ok"}"#,
    );
    let mut ls = lines(&r, "plan.noma");
    let mut first: Value = serde_json::from_slice(&ls[0]).unwrap();
    first["reason"] = json!("rewritten after the next line chained to it");
    ls[0] = format!("{first}\n").into_bytes();
    std::fs::write(r.path().join("plan.noma.patches"), ls.concat()).unwrap();
    r.ok(&["add", "-A"]);
    let (ok, out) = r.try_commit("a chained line after a rewritten one");
    assert!(!ok, "{out}");
    assert!(out.contains("prev_entry_sha256 does not"), "{out}");
}

#[test]
fn two_branches_of_chain_less_records_joined_without_the_driver_are_repaired() {
    let r = repo_with("plan.noma", DOC);
    reference_patch(
        &r,
        "plan.noma",
        json!({"op":"update_attribute","id":"a","key":"confidence","value":0.9}),
    );
    r.commit_all("common record");
    r.ok(&["checkout", "-q", "-b", "other"]);
    reference_patch(
        &r,
        "plan.noma",
        json!({"op":"replace_body","id":"c","content":"Gamma 2.\n"}),
    );
    let theirs = lines(&r, "plan.noma");
    let theirs_doc = r.read("plan.noma");
    r.commit_all("other: c");
    r.ok(&["checkout", "-q", "feat"]);
    reference_patch(
        &r,
        "plan.noma",
        json!({"op":"replace_body","id":"b","content":"Beta 2.\n"}),
    );
    reference_patch(
        &r,
        "plan.noma",
        json!({"op":"update_attribute","id":"b","key":"status","value":"x"}),
    );
    r.commit_all("feat: b");
    // What a union of the two transcripts leaves (a web conflict editor,
    // a clone without the driver): feat's records, then other's new one.
    let mut joined = lines(&r, "plan.noma");
    joined.push(theirs[1].clone());
    std::fs::write(r.path().join("plan.noma.patches"), joined.concat()).unwrap();
    let doc = r.read("plan.noma");
    let merged = doc.replace("Gamma.", "Gamma 2.");
    assert!(theirs_doc.contains("Gamma 2.") && merged != doc);
    r.write("plan.noma", &merged);
    r.ok(&["add", "-A"]);
    let (ok, out) = r.try_commit("joined");
    assert!(!ok, "{out}");
    assert!(
        out.contains("[transcript-joined] plan.noma.patches:4:1"),
        "{out}"
    );
    let o = r.noma(&["repair", "plan.noma"]);
    assert!(o.status.success(), "repair: {}", text(&o));
    r.commit_all("repaired");
    replays_and_reconciles(&r, "plan.noma");
}

/// The reference's own example documents and agent ops (its
/// `examples/agent-memory` and `examples/agent-stale-memo` demos), written
/// as its SDKs write them, then one noma patch.
#[test]
fn the_reference_examples_as_its_sdks_write_them_commit_and_replay() {
    let Some(shared) = crate::common::shared_reference(
        "the_reference_examples_as_its_sdks_write_them_commit_and_replay",
    ) else {
        return;
    };
    let examples = shared.join("noma/examples");
    for (dir, doc) in [
        ("agent-memory", "memory.noma"),
        ("agent-stale-memo", "memo.noma"),
    ] {
        let content = std::fs::read_to_string(examples.join(dir).join(doc)).unwrap();
        let r = repo_with(doc, &content);
        let ops: Vec<Value> = read_json(&examples.join(dir).join("patches.json"));
        assert!(ops.len() >= 3, "{dir}");
        for op in ops {
            reference_patch(&r, doc, op);
        }
        r.commit_all(dir);
        replays_and_reconciles(&r, doc);
    }
}

/// `noma mcp`'s `patch_block` and `noma record` after chain-less records:
/// both write, chained onto the line before, and the result commits.
#[test]
fn noma_mcp_and_record_chain_onto_chain_less_records() {
    use std::io::Write;
    let r = repo_with("plan.noma", DOC);
    for v in [0.1, 0.2, 0.3] {
        reference_patch(
            &r,
            "plan.noma",
            json!({"op":"update_attribute","id":"a","key":"confidence","value":v}),
        );
    }
    let requests = [
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}),
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"patch_block","arguments":{"file":"plan.noma","op":{"op":"update_attribute","id":"b","key":"status","value":"ok"}}}}),
    ];
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_noma"))
        .arg("mcp")
        .current_dir(r.path())
        .env("HOME", r.path())
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for q in &requests {
        writeln!(stdin, "{q}").unwrap();
    }
    drop(stdin);
    let o = child.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains(r#"\"ok\":true"#), "{out}");
    let ls = lines(&r, "plan.noma");
    assert_eq!(ls.len(), 4, "{out}");
    let last: Value = serde_json::from_slice(&ls[3]).unwrap();
    assert_eq!(last["prev_entry_sha256"], json!(sha256_hex(&ls[2])));

    r.write(
        "plan.noma",
        &r.read("plan.noma").replace("Gamma.", "Gamma, by hand."),
    );
    let o = r.noma(&["record", "plan.noma"]);
    assert!(o.status.success(), "record: {}", text(&o));
    let ls = lines(&r, "plan.noma");
    let last: Value = serde_json::from_slice(&ls[4]).unwrap();
    assert_eq!(last["prev_entry_sha256"], json!(sha256_hex(&ls[3])));
    r.commit_all("reference records, an MCP patch and a hand edit recorded");
    replays_and_reconciles(&r, "plan.noma");
}

fn read_json(path: &Path) -> Vec<Value> {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

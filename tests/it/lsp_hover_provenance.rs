//! `noma lsp` hover on a block of a repository whose policy signs records:
//! the hover's last changes name each record's signer and approver as
//! `noma log --block ID --format json` gives them (a signed agent record
//! approved by a person, and one still waiting for approval).

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::common::{assert_ran, signed_policy, text, Repo, NOMA};

const DOC: &str = "# Plan\n\n::claim{id=\"c1\" confidence=0.5}\nOne.\n::\n\n::claim{id=\"c2\" confidence=0.5}\nTwo.\n::\n";

/// One framed LSP message.
pub(crate) fn framed(v: &Value) -> Vec<u8> {
    let body = v.to_string();
    format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

/// The messages of an LSP byte stream.
pub(crate) fn messages(mut out: &[u8]) -> Vec<Value> {
    let mut found = Vec::new();
    while let Some(head_end) = out.windows(4).position(|w| w == b"\r\n\r\n") {
        let head = String::from_utf8_lossy(&out[..head_end]).to_string();
        let len: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .expect("a Content-Length header")
            .trim()
            .parse()
            .unwrap();
        let body = &out[head_end + 4..head_end + 4 + len];
        found.push(serde_json::from_slice(body).unwrap());
        out = &out[head_end + 4 + len..];
    }
    found
}

/// The hover texts of `noma lsp` (run in `r`'s work tree with its
/// environment) on plan.noma at each `(line, character)`, in one session
/// that ends with shutdown and exit.
fn hovers(r: &Repo, at: &[(u32, u32)]) -> Vec<String> {
    let path = r.path().join("plan.noma");
    let uri = format!("file://{}", path.display());
    let mut input = Vec::new();
    input.extend(framed(
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"capabilities": {}}}),
    ));
    input.extend(framed(
        &json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}),
    ));
    input.extend(framed(
        &json!({"jsonrpc": "2.0", "method": "textDocument/didOpen",
        "params": {"textDocument": {"uri": uri, "languageId": "noma", "version": 1,
        "text": r.read("plan.noma")}}}),
    ));
    for (i, (line, character)) in at.iter().enumerate() {
        input.extend(framed(&json!({"jsonrpc": "2.0", "id": i + 1,
            "method": "textDocument/hover", "params": {"textDocument": {"uri": uri},
            "position": {"line": line, "character": character}}})));
    }
    input.extend(framed(
        &json!({"jsonrpc": "2.0", "id": 999, "method": "shutdown"}),
    ));
    input.extend(framed(&json!({"jsonrpc": "2.0", "method": "exit"})));
    let mut child = Command::new(NOMA)
        .arg("lsp")
        .current_dir(r.path())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", r.home.path())
        .env_remove("SSH_AUTH_SOCK")
        .env_remove("GIT_DIR")
        .env_remove("GIT_INDEX_FILE")
        .env_remove("GIT_WORK_TREE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let replies = messages(&out.stdout);
    (1..=at.len())
        .map(|id| {
            let reply = replies
                .iter()
                .find(|m| m["id"] == json!(id))
                .unwrap_or_else(|| panic!("no hover reply {id}: {replies:?}"));
            reply["result"]["contents"]["value"]
                .as_str()
                .unwrap_or_else(|| panic!("no hover text: {reply}"))
                .to_string()
        })
        .collect()
}

/// The newest change of block `id` as `noma log --block` gives it.
fn newest_change(r: &Repo, id: &str) -> Value {
    let o = r.noma(&["log", "plan.noma", "--block", id, "--format", "json"]);
    assert_ran(&o);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    v["changes"][0].clone()
}

/// What the hover writes for a signer or approver (`—` for none).
fn shown(v: &Value) -> String {
    v.as_str().unwrap_or("—").to_string()
}

#[test]
fn hover_shows_the_signer_and_approver_that_noma_log_gives() {
    let r = Repo::with_genesis_record(DOC);
    let (alice, bot) = signed_policy(&r);
    r.commit_all("provenance on");
    let agent_edit = |id: &str| {
        let op = json!({"op": "update_attribute", "id": id, "key": "confidence", "value": 0.7});
        assert_ran(&r.sh(&format!(
            "NOMA_SIGNING_KEY='{}' noma patch plan.noma --inplace --actor-kind agent \
             --actor-name bot --reason 'agent edit' --op '{op}'",
            bot.display()
        )));
    };
    agent_edit("c1");
    let key = alice.to_str().unwrap();
    assert_ran(&r.noma(&["approve", "plan.noma", "--key", key, "--yes"]));
    r.commit_all("agent edit, approved");
    // A second signed agent record, not approved yet.
    agent_edit("c2");

    let c1 = newest_change(&r, "c1");
    assert_eq!(c1["signed_by"], "bot@agents.example", "{c1}");
    assert_eq!(c1["approved_by"], "alice@example.com", "{c1}");
    let c2 = newest_change(&r, "c2");
    assert_eq!(c2["signed_by"], "bot@agents.example", "{c2}");
    assert!(c2["approved_by"].is_null(), "{c2}");

    // On the id `c1` (line 3) and inside block c2's body (line 8).
    let texts = hovers(&r, &[(2, 13), (7, 1)]);
    for (text, change) in texts.iter().zip([&c1, &c2]) {
        let line = format!(
            "`update_attribute` by {} at {}; signed by {}, approved by {};",
            change["actor"].as_str().unwrap(),
            change["ts"].as_str().unwrap(),
            shown(&change["signed_by"]),
            shown(&change["approved_by"]),
        );
        let first_change = text
            .lines()
            .find(|l| l.starts_with("- "))
            .unwrap_or_else(|| panic!("no change listed: {text}"));
        assert!(first_change.contains(&line), "{line}\nnot in\n{text}");
    }
}

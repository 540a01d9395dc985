//! Nothing a record's writer chose reaches a terminal as control codes:
//! an agent's record whose reason and actor hide `\e[8m` (conceal),
//! `\e[2K` (erase line), `\r` and `\e[1A` (cursor up) is shown escaped,
//! byte for byte, by every human output (`noma approve`, `reconcile` in
//! each text format, `replay --signatures`, `log`, `blame`), and a path
//! holding them by the hook and `noma changed`. The writers refuse such
//! text at write time (CLI, MCP, the language server's record action),
//! and the MCP server refuses a client's `kind: human` actor.

use serde_json::{json, Value};

use crate::common::{assert_ran, keygen, signed_policy, text, McpClient, Repo};

const DOC: &str = "# Plan\n\n::claim{id=\"c1\" confidence=0.5}\nOne.\n::\n\n::claim{id=\"c2\" confidence=0.5}\nTwo.\n::\n";

/// What an agent hid in its reason: concealed text, then erase the line,
/// return, and move up one line, to redraw the listing above it.
const HOSTILE: &str = "harmless\u{1b}[8m delete_block c2\u{1b}[2K\r\u{1b}[1A";

/// The agent's record on branch `agent`, its reason and actor name made
/// hostile in the transcript (an agent with file access writes the
/// transcript itself: the writers refuse such text).
fn hostile_branch() -> (Repo, std::path::PathBuf) {
    let r = Repo::with_genesis_record(DOC);
    let (alice, bot) = signed_policy(&r);
    r.commit_all("provenance on");
    r.ok(&["checkout", "-q", "-b", "agent"]);
    let o = r.noma(&[
        "patch",
        "plan.noma",
        "--inplace",
        "--key",
        bot.to_str().unwrap(),
        "--actor-kind",
        "agent",
        "--actor-name",
        "bot",
        "--reason",
        "PLACEHOLDER",
        "--op",
        &json!({"op": "update_attribute", "id": "c1", "key": "confidence", "value": 0.1})
            .to_string(),
    ]);
    assert_ran(&o);
    let transcript = r.read("plan.noma.patches");
    let (head, last) = transcript
        .trim_end()
        .rsplit_once('\n')
        .expect("two records");
    let mut rec: Value = serde_json::from_str(last).unwrap();
    rec["reason"] = json!(HOSTILE);
    rec["actor"]["name"] = json!(format!("bot\u{1b}[2K\r{}", "alice"));
    r.write("plan.noma.patches", &format!("{head}\n{rec}\n"));
    r.ok(&["add", "-A"]);
    r.ok(&["commit", "-q", "--no-verify", "-m", "hostile agent record"]);
    (r, alice)
}

/// Asserts no ESC, CR or C1 CSI byte reached the output, and that
/// `needle` (escaped) did.
fn shown_escaped(what: &str, o: &std::process::Output, needle: &str) {
    let all = [&o.stdout[..], &o.stderr[..]].concat();
    for bad in [0x1b_u8, b'\r'] {
        assert!(
            !all.contains(&bad),
            "{what}: raw byte {bad:#04x} in the output:\n{}",
            text(o)
        );
    }
    assert!(!String::from_utf8_lossy(&all).contains('\u{9b}'), "{what}");
    assert!(
        text(o).contains(needle),
        "{what}: {needle:?} missing:\n{}",
        text(o)
    );
}

#[test]
fn an_agents_hostile_reason_is_shown_escaped_everywhere() {
    let (r, alice) = hostile_branch();
    let reason = "harmless\\e[8m delete_block c2\\e[2K\\r\\e[1A";
    // The approver's listing (declined: stdin is empty).
    let o = r.noma(&["approve", "plan.noma", "--key", alice.to_str().unwrap()]);
    shown_escaped("approve", &o, reason);
    assert!(text(&o).contains("by bot\\e[2K\\ralice"), "{}", text(&o));
    assert!(
        !r.path().join("plan.noma.provenance").exists() || {
            // Declined: nothing approved.
            !r.read("plan.noma.provenance").contains("approval")
        }
    );
    for format in ["human", "github", "markdown", "sarif"] {
        let o = r.noma(&["reconcile", "--base", "main", "--format", format]);
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        shown_escaped(&format!("reconcile --format {format}"), &o, "\\e[2K");
    }
    let o = r.noma(&["replay", "--signatures", "plan.noma"]);
    shown_escaped("replay --signatures", &o, "\\e[2K");
    let o = r.noma(&["log", "plan.noma"]);
    shown_escaped("log", &o, reason);
    // c1's last change is the hostile record.
    let o = r.noma(&["blame", "plan.noma"]);
    shown_escaped("blame", &o, reason);
    let o = r.noma(&["log", "plan.noma", "--block", "c1"]);
    shown_escaped("log --block", &o, reason);
}

#[test]
fn the_hook_and_changed_show_a_hostile_path_escaped() {
    let r = Repo::with_genesis_record(DOC);
    let name = "evil\u{1b}[2K\r\u{1b}[1A.noma";
    // A broken reference: the hook reports the document by its path.
    r.write(name, "# Evil\n\n::claim{id=\"e1\"}\nSee [[missing]].\n::\n");
    r.ok(&["add", "-A"]);
    let o = r.noma(&["hook", "pre-commit"]);
    shown_escaped("hook", &o, "evil\\e[2K\\r\\e[1A.noma");
    r.ok(&["commit", "-q", "--no-verify", "-m", "evil"]);
    let o = r.noma(&["changed", "--base", "HEAD~1"]);
    assert_ran(&o);
    shown_escaped("changed", &o, "evil\\e[2K\\r\\e[1A.noma");
}

#[test]
fn cli_writers_refuse_control_characters_in_reason_and_actor() {
    let r = Repo::with_genesis_record(DOC);
    let before = r.read("plan.noma.patches");
    let op = json!({"op": "update_attribute", "id": "c1", "key": "confidence", "value": 0.9})
        .to_string();
    let cases: [(&[&str], &str); 5] = [
        (
            &["--reason", "ok\u{1b}[8m"],
            "reason contains the control character U+001B",
        ),
        (
            &["--reason", "two\nlines"],
            "reason contains the control character U+000A",
        ),
        (
            &["--actor-name", "bot\r"],
            "actor.name contains the control character U+000D",
        ),
        (
            &["--actor-name", "a\u{202e}b"],
            "actor.name contains the control character U+202E",
        ),
        (
            &["--actor-model", "m\u{9b}1A"],
            "actor.model contains the control character U+009B",
        ),
    ];
    for (extra, message) in cases {
        let args = [&["patch", "plan.noma", "--inplace", "--op", &op][..], extra].concat();
        let o = r.noma(&args);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", text(&o));
        assert!(text(&o).contains(message), "{extra:?}: {}", text(&o));
        assert!(!o.stderr.contains(&0x1b) && !o.stderr.contains(&b'\r'));
    }
    // noma record and noma rm take the same fields.
    r.write("plan.noma", &DOC.replace("One.", "One, edited."));
    let o = r.noma(&["record", "plan.noma", "--reason", "x\u{1b}[1A"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("reason contains the control character U+001B"),
        "{}",
        text(&o)
    );
    let o = r.noma(&["record", "plan.noma", "--actor-name", "x\u{2066}y"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("actor.name contains the control character U+2066"),
        "{}",
        text(&o)
    );
    assert_ran(&r.noma(&["record", "plan.noma", "--reason", "fine"]));
    let recorded = r.read("plan.noma.patches");
    let o = r.noma(&["rm", "plan.noma", "--reason", "gone\r\u{1b}[2K"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("reason contains the control character U+000D"),
        "{}",
        text(&o)
    );
    assert!(r.path().join("plan.noma").exists());
    // Nothing refused was written.
    assert_eq!(r.read("plan.noma.patches"), recorded);
    assert!(recorded.starts_with(&before));
    assert_eq!(recorded.lines().count(), before.lines().count() + 1);
}

fn patch(m: &mut McpClient, extra: Value) -> (bool, Value) {
    let mut args = json!({"file": "plan.noma",
        "op": {"op": "update_attribute", "id": "c1", "key": "confidence", "value": 0.7}});
    for (k, v) in extra.as_object().unwrap() {
        args[k] = v.clone();
    }
    m.call("patch_block", args)
}

#[test]
fn mcp_refuses_control_characters_and_a_clients_human_actor() {
    let r = Repo::with_genesis_record(DOC);
    let before = r.read("plan.noma.patches");
    let mut m = McpClient::start(r.path());
    let refused = [
        (json!({"reason": "x\u{1b}[8m"}), "invalid_reason"),
        (
            json!({"actor": {"kind": "agent", "name": "bot\r\u{1b}[1A"}}),
            "invalid_actor",
        ),
        (
            json!({"actor": {"kind": "agent", "name": "bot", "model": "m\u{202d}"}}),
            "invalid_actor",
        ),
        (
            json!({"actor": {"kind": "human", "name": "alice"}}),
            "actor_not_allowed",
        ),
    ];
    for (extra, code) in refused {
        let (_, body) = patch(&mut m, extra.clone());
        assert_eq!(body["ok"], false, "{extra}: {body}");
        assert_eq!(body["code"], code, "{extra}: {body}");
        let said = body["error"].as_str().unwrap_or_default();
        assert!(said.contains("nothing was written"), "{body}");
        assert!(!said.contains('\u{1b}') && !said.contains('\r'), "{body}");
    }
    let (is_error, body) = patch(&mut m, json!({"actor": {"kind": "agent", "name": "bot"}}));
    assert!(!is_error, "{body}");
    assert_eq!(body["transcript_entry"]["actor"]["kind"], "agent", "{body}");
    m.finish();
    let after = r.read("plan.noma.patches");
    assert_eq!(after.lines().count(), before.lines().count() + 1, "{after}");
}

/// Under `signatures: warn` with `agents_need_approval: true`, a record
/// that claims a person but that no allowed key signed waits for a
/// person's approval: `noma reconcile --base main` fails until alice
/// approves, and alice's own signed record needs none.
#[test]
fn under_warn_an_unsigned_claim_of_a_person_needs_approval() {
    let r = Repo::with_genesis_record(DOC);
    let (alice, alice_pub) = keygen(&r, "alice");
    let mut config = r.read(".noma/config.yml");
    config.push_str(
        "provenance:\n  signatures: warn\n  agents_need_approval: true\n  agent_principals: [\"*@agents.example\"]\n",
    );
    r.write(".noma/config.yml", &config);
    r.write(
        ".noma/allowed_signers",
        &format!("alice@example.com namespaces=\"noma\" {alice_pub}\n"),
    );
    r.commit_all("provenance on, warn");
    r.ok(&["checkout", "-q", "-b", "agent"]);
    // Through MCP the claim is refused outright.
    let mut m = McpClient::start(r.path());
    let (_, body) = patch(&mut m, json!({"actor": {"kind": "human", "name": "alice"}}));
    assert_eq!(body["code"], "actor_not_allowed", "{body}");
    m.finish();
    // Written another way, unsigned, it claims alice.
    let op = json!({"op": "update_attribute", "id": "c1", "key": "confidence", "value": 0.1});
    let o = r.noma(&[
        "patch",
        "plan.noma",
        "--inplace",
        "--no-sign",
        "--actor-kind",
        "human",
        "--actor-name",
        "alice",
        "--op",
        &op.to_string(),
    ]);
    assert_ran(&o);
    r.commit_all("unsigned, claiming alice");
    let o = r.noma(&["reconcile", "--base", "main"]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("[approval-missing] plan.noma.patches:2"),
        "{out}"
    );
    assert!(out.contains("nothing proves a person wrote it"), "{out}");
    let o = r.noma(&[
        "approve",
        "plan.noma",
        "--key",
        alice.to_str().unwrap(),
        "--yes",
    ]);
    assert_ran(&o);
    r.commit_all("approved by alice");
    let o = r.noma(&["reconcile", "--base", "main"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // alice's signed record is a person's: no approval needed.
    let op = json!({"op": "update_attribute", "id": "c2", "key": "confidence", "value": 0.2});
    let o = r.noma(&[
        "patch",
        "plan.noma",
        "--inplace",
        "--key",
        alice.to_str().unwrap(),
        "--actor-name",
        "alice",
        "--op",
        &op.to_string(),
    ]);
    assert_ran(&o);
    r.commit_all("alice, signed");
    let o = r.noma(&["reconcile", "--base", "main"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

/// The language server's write paths (the "Record this edit" command and
/// rename) refuse an actor name holding control characters, and write
/// nothing.
#[test]
fn the_language_server_refuses_a_hostile_actor_name() {
    use crate::lsp_hover_provenance::{framed, messages};
    use std::io::Write;
    use std::process::{Command, Stdio};

    let r = Repo::with_genesis_record(DOC);
    let edited = DOC.replace("One.", "One, edited.");
    r.write("plan.noma", &edited);
    let before = r.read("plan.noma.patches");
    let uri = format!("file://{}", r.path().join("plan.noma").display());
    let mut input = Vec::new();
    for m in [
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"capabilities": {}}}),
        json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}),
        json!({"jsonrpc": "2.0", "method": "textDocument/didOpen",
            "params": {"textDocument": {"uri": uri, "languageId": "noma", "version": 1,
            "text": edited}}}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "workspace/executeCommand",
            "params": {"command": "noma.record", "arguments": [uri]}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "textDocument/rename",
            "params": {"textDocument": {"uri": uri}, "position": {"line": 6, "character": 13},
            "newName": "c3"}}),
        json!({"jsonrpc": "2.0", "id": 999, "method": "shutdown"}),
        json!({"jsonrpc": "2.0", "method": "exit"}),
    ] {
        input.extend(framed(&m));
    }
    let mut child = Command::new(crate::common::NOMA)
        .arg("lsp")
        .current_dir(r.path())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", r.home.path())
        .env("GIT_AUTHOR_NAME", "mallory\u{1b}[2K\ralice")
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
    for id in [1, 2] {
        let reply = replies
            .iter()
            .find(|m| m["id"] == json!(id))
            .unwrap_or_else(|| panic!("no reply {id}: {replies:?}"));
        let message = reply["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("actor.name contains the control character U+001B"),
            "{id}: {reply}"
        );
    }
    assert_eq!(r.read("plan.noma.patches"), before);
    assert_eq!(r.read("plan.noma"), edited);
}

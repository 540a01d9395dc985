//! `noma mcp` as an MCP server describes itself and keeps the protocol's
//! session rules, over real stdio line by line: the size of
//! `tools/list`, titles, annotations and output schemas with
//! `structuredContent`, `isError` for the noma-only tools' failures while a
//! rejected patch stays a result (Annex B), `-32602` for an unknown cursor,
//! batches refused and lines that are not JSON dropped without a reply, a
//! notification before `initialize` dropped, and read_doc's
//! `unrecorded_edit`.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

use serde_json::{json, Value};

const NOMA: &str = env!("CARGO_BIN_EXE_noma");
const TIMEOUT: Duration = Duration::from_secs(60);

const DOC: &str =
    "# Plan {id=\"plan\"}\n\nIntro.\n\n::claim{id=\"c1\" confidence=0.5}\nThe sky is blue.\n::\n";

/// `noma mcp` spoken to line by line: nothing is sent for the caller.
struct Raw {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl Raw {
    fn start(root: &Path) -> Raw {
        let mut child = Command::new(NOMA)
            .arg("mcp")
            .current_dir(root)
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Raw {
            child,
            stdin,
            lines: rx,
        }
    }

    /// Starts and completes the handshake with revision `version`.
    fn session(root: &Path, version: &str) -> Raw {
        let mut s = Raw::start(root);
        s.send(
            &json!({"jsonrpc": "2.0", "id": "init", "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {},
                       "clientInfo": {"name": "test", "version": "1"}}}),
        );
        let init = s.recv();
        assert_eq!(init["result"]["protocolVersion"], version, "{init}");
        s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        s
    }

    fn send(&mut self, v: &Value) {
        self.send_line(&v.to_string());
    }

    fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    /// The next line the server writes.
    fn recv(&mut self) -> Value {
        let line = self.lines.recv_timeout(TIMEOUT).expect("an answer");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }

    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let v = self.recv();
        assert_eq!(v["id"], id, "{v}");
        v
    }

    /// A tool call's result object.
    fn call(&mut self, id: u64, tool: &str, args: Value) -> Value {
        let r = self.request(id, "tools/call", json!({"name": tool, "arguments": args}));
        r.get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{tool}: {r}"))
    }

    /// Closes stdin; the server must exit cleanly.
    fn finish(mut self) {
        drop(self.stdin.take());
        let status = self.child.wait().unwrap();
        assert!(status.success(), "{status:?}");
    }
}

/// A repository on `main` with one commit holding `a.noma`.
fn repo() -> tempfile::TempDir {
    // mcp_repo commits a.noma; its branch is named by git's default.
    let dir = crate::common::mcp_repo(DOC);
    crate::common::git_at(dir.path(), &["checkout", "-q", "-B", "main"]);
    dir
}

/// The tool result's body: its text content as JSON, which
/// `structuredContent` repeats where the tool has an output schema (every
/// tool but read_doc).
fn body(result: &Value) -> Value {
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    if let Some(structured) = result.get("structuredContent") {
        assert_eq!(structured, &text, "{result}");
    }
    text
}

#[test]
fn tools_list_is_under_21_kb_with_a_title_hints_and_output_schema_per_tool() {
    let dir = repo();
    let mut s = Raw::session(dir.path(), "2025-11-25");
    s.send_line(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
    let line = s.lines.recv_timeout(TIMEOUT).unwrap();
    // 28422 bytes when the op schema was written out twice; 11979 with it
    // written once; 19360 with typed output schemas and patch_block_list's
    // metadata declared (both asked for by clients that validate); 20786
    // with block_history, its answer typed member by member.
    assert!(line.len() < 21_000, "tools/list is {} bytes", line.len());
    println!("tools/list: {} bytes", line.len());
    let list: Value = serde_json::from_str(&line).unwrap();
    let tools = list["result"]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 13);
    let mut read_only = Vec::new();
    for t in tools {
        let name = t["name"].as_str().unwrap();
        assert!(t["title"].as_str().is_some_and(|s| !s.is_empty()), "{t}");
        assert_eq!(t["annotations"]["openWorldHint"], false, "{t}");
        if t["annotations"]["readOnlyHint"] == true {
            read_only.push(name);
        }
        // read_doc answers in JSON text only, without an output schema.
        if name == "read_doc" {
            assert!(t.get("outputSchema").is_none(), "{t}");
        } else {
            assert_eq!(t["outputSchema"]["type"], "object", "{t}");
        }
    }
    assert_eq!(
        read_only,
        [
            "read_doc",
            "list_ids",
            "validate_doc",
            "transcript_read",
            "describe_capabilities",
            "block_history",
            "list_changed_docs",
            "get_changed_blocks"
        ]
    );
    let clear = tools.iter().find(|t| t["name"] == "clear_cache").unwrap();
    assert_eq!(clear["annotations"]["destructiveHint"], true);
    let mark = tools
        .iter()
        .find(|t| t["name"] == "mark_reconciled")
        .unwrap();
    assert_eq!(mark["annotations"]["destructiveHint"], false);
    // Every op variant and op field carries a one-line description.
    let pb = tools.iter().find(|t| t["name"] == "patch_block").unwrap();
    let op = &pb["inputSchema"]["properties"]["op"];
    for v in op["properties"]["op"]["oneOf"].as_array().unwrap() {
        assert!(
            v["description"].as_str().is_some_and(|d| d.len() > 15),
            "{v}"
        );
    }
    for (field, p) in op["properties"].as_object().unwrap() {
        assert!(p["description"].is_string(), "{field}");
    }
    s.finish();
}

#[test]
fn an_unknown_cursor_is_32602() {
    let dir = repo();
    let mut s = Raw::session(dir.path(), "2025-11-25");
    let r = s.request(1, "tools/list", json!({"cursor": "bogus"}));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("cursor"));
    // Without a cursor the one page comes back, with no nextCursor.
    let r = s.request(2, "tools/list", json!({}));
    assert!(r["result"]["tools"].is_array(), "{r}");
    assert!(r["result"].get("nextCursor").is_none(), "{r}");
    s.finish();
}

#[test]
fn noma_only_failures_are_is_error_and_a_rejected_patch_is_a_result() {
    let dir = repo();
    let mut s = Raw::session(dir.path(), "2025-11-25");
    // get_changed_blocks with a base that does not exist.
    let r = s.call(
        1,
        "get_changed_blocks",
        json!({"base_branch": "no-such-branch"}),
    );
    assert_eq!(r["isError"], true, "{r}");
    let b = body(&r);
    assert_eq!(
        (b["ok"].clone(), b["code"].clone()),
        (json!(false), json!("invalid_request"))
    );
    // mark_reconciled of a file that is not there.
    let r = s.call(2, "mark_reconciled", json!({"files": ["missing.noma"]}));
    assert_eq!(r["isError"], true, "{r}");
    assert_eq!(body(&r)["ok"], false);
    // A refused patch is a normal result (Annex B.7) with its §3.5 code.
    let r = s.call(
        4,
        "patch_block",
        json!({"file": "a.noma", "op": {"op": "delete_block", "id": "nope"}}),
    );
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(body(&r)["code"], "target_missing");
    // transcript_read after an op_id the transcript (now there) lacks.
    let r = s.call(
        3,
        "transcript_read",
        json!({"file": "a.noma", "after_op_id": "x"}),
    );
    assert_eq!(r["isError"], true, "{r}");
    assert_eq!(body(&r)["code"], "unknown_op_id");
    let r = s.call(
        5,
        "patch_block_list",
        json!({"file": "a.noma", "ops": [{"op": "delete_block", "id": "nope"}]}),
    );
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(body(&r)["op_index"], 0);
    // Successes carry structuredContent too.
    let r = s.call(6, "list_ids", json!({"file": "a.noma"}));
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(body(&r)["ids"], json!(["plan", "c1"]));
    s.finish();
}

#[test]
fn before_initialize_a_notification_is_dropped_and_a_request_answered_by_its_id() {
    let dir = repo();
    let mut s = Raw::start(dir.path());
    // A notification first is dropped (rmcp alone would end the session on
    // it); the next line out answers the next request.
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    // rmcp answers a request that neither initializes nor carries its
    // revision in `_meta`, with the request's id.
    let r = s.request(1, "tools/list", json!({}));
    assert!(r["error"]["code"].is_i64(), "{r}");
    // ping is allowed, and the session still starts.
    assert!(s.request(2, "ping", json!({}))["result"].is_object());
    let init = s.request(
        3,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "t", "version": "1"}}),
    );
    assert_eq!(init["result"]["serverInfo"]["name"], "noma", "{init}");
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    assert!(s.request(4, "tools/list", json!({}))["result"]["tools"].is_array());
    s.finish();
}

#[test]
fn batches_are_refused_on_every_revision_and_bad_lines_get_no_reply() {
    let dir = repo();
    // MCP 2025-03-26 had batches; no later revision does, and no official
    // SDK sends them: one JSON-RPC object per line, on every session.
    for version in ["2025-03-26", "2025-06-18"] {
        let mut s = Raw::session(dir.path(), version);
        s.send(&json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]));
        let r = s.recv();
        assert_eq!(r["error"]["code"], -32600, "{r}");
        assert!(r["id"].is_null(), "{r}");
        let msg = r["error"]["message"].as_str().unwrap();
        assert!(msg.contains("batches are not accepted"), "{msg}");
        // Lines that are not JSON get no reply: the next line out is the
        // answer to the next request.
        s.send_line("{\"jsonrpc\": \"2.0\", \"id\": 7, ");
        s.send_line("[1, 2");
        s.send_line("\u{feff}not json at all");
        assert!(s.request(2, "ping", json!({}))["result"].is_object());
        // Well-formed JSON that is no message is answered with its id.
        s.send(&json!({"jsonrpc": "2.0", "id": 8}));
        let r = s.recv();
        assert_eq!(
            (r["id"].clone(), r["error"]["code"].clone()),
            (json!(8), json!(-32600)),
            "{r}"
        );
        s.finish();
    }
}

#[test]
fn read_doc_shows_the_unrecorded_edit_a_patch_would_be_refused_for() {
    let dir = repo();
    let d = dir.path();
    let mut s = Raw::session(d, "2025-11-25");
    // No transcript yet, then a recorded patch: nothing unrecorded.
    assert_eq!(
        body(&s.call(1, "read_doc", json!({"file": "a.noma"})))["unrecorded_edit"],
        Value::Null
    );
    let op = json!({"op": "update_attribute", "id": "c1", "key": "confidence", "value": 0.9});
    let r = s.call(2, "patch_block", json!({"file": "a.noma", "op": op}));
    assert_eq!(body(&r)["ok"], true, "{r}");
    assert_eq!(
        body(&s.call(3, "read_doc", json!({"file": "a.noma"})))["unrecorded_edit"],
        Value::Null
    );

    // A hand edit the transcript does not record.
    let edited = std::fs::read_to_string(d.join("a.noma"))
        .unwrap()
        .replace("Intro.", "Intro, by hand.");
    std::fs::write(d.join("a.noma"), &edited).unwrap();
    let read = body(&s.call(4, "read_doc", json!({"file": "a.noma"})));
    let edit = &read["unrecorded_edit"];
    assert_eq!(edit["record_command"], "noma record \"a.noma\"", "{read}");
    assert_eq!(edit["document_sha256"], read["sha256"], "{read}");
    assert_eq!(edit["line"], 1);
    assert!(edit["message"]
        .as_str()
        .unwrap()
        .contains("`noma record \"a.noma\"`"));
    // The patch it announces is indeed refused with unrecorded_edit.
    let r = s.call(5, "patch_block", json!({"file": "a.noma", "op": op}));
    assert_eq!(body(&r)["code"], "unrecorded_edit", "{r}");

    // Once a person records the edit, read_doc says nothing again.
    let out = Command::new(NOMA)
        .args(["record", "a.noma"])
        .current_dir(d)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        body(&s.call(6, "read_doc", json!({"file": "a.noma"})))["unrecorded_edit"],
        Value::Null
    );

    // A transcript whose last line is not a record: said, not hidden.
    std::fs::write(d.join("a.noma.patches"), "{not a record}\n").unwrap();
    let read = body(&s.call(7, "read_doc", json!({"file": "a.noma"})));
    assert_eq!(read["unrecorded_edit"], Value::Null);
    assert!(
        read["transcript_error"]
            .as_str()
            .is_some_and(|e| e.contains("a.noma.patches")),
        "{read}"
    );
    s.finish();
}

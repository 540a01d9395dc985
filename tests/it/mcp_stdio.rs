//! `noma mcp` driven over real stdio: a small test client speaking
//! newline-delimited JSON-RPC to the real binary in temp git repositories.
//! Every test ends by checking that each stdout line was a JSON-RPC message.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use crate::common;

const NOMA: &str = env!("CARGO_BIN_EXE_noma");
const TIMEOUT: Duration = Duration::from_secs(60);

const DOC: &str = "---\ntitle: Plan\n---\n# Intro {id=\"intro\" aliases=\"start\"}\n\nHello.\n\n::claim{id=\"c1\" confidence=0.5}\nThe sky is blue.\n::\n\n::evidence{id=\"e1\" for=\"c1\"}\nLooked up.\n::\n";

struct Repo {
    dir: tempfile::TempDir,
}

impl Repo {
    fn new() -> Repo {
        Repo {
            dir: crate::common::mcp_repo(DOC),
        }
    }
    fn path(&self) -> &Path {
        self.dir.path()
    }
    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path().join(name)).unwrap()
    }
}

struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    all: Arc<Mutex<Vec<String>>>,
    pending: HashMap<String, Value>,
    next_id: u64,
    /// The stdout reader; it ends at the server's EOF.
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    fn start(root: &Path) -> Server {
        Server::start_with(root, &[])
    }

    fn start_with(root: &Path, env: &[(&str, &str)]) -> Server {
        Server::start_negotiating(root, env, "2025-06-18")
    }

    /// Starts the server and initialises with protocol revision `version`.
    fn start_negotiating(root: &Path, env: &[(&str, &str)], version: &str) -> Server {
        let mut cmd = Command::new(NOMA);
        cmd.arg("mcp")
            .current_dir(root)
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        let all = Arc::new(Mutex::new(Vec::new()));
        let seen = all.clone();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                seen.lock().unwrap().push(line.clone());
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        let mut s = Server {
            child,
            stdin,
            lines: rx,
            all,
            pending: HashMap::new(),
            next_id: 100,
            reader: Some(reader),
        };
        let init = s.request(
            "initialize",
            json!({"protocolVersion": version, "capabilities": {},
                   "clientInfo": {"name": "test", "version": "1"}}),
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "noma", "{init}");
        assert_eq!(init["result"]["protocolVersion"], version, "{init}");
        s.send_line(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string());
        s.pending.insert("init".into(), init);
        s
    }

    fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// Waits for the response whose id is `id` (others are kept).
    fn wait_for(&mut self, id: &Value) -> Value {
        let key = id.to_string();
        if let Some(v) = self.pending.remove(&key) {
            return v;
        }
        loop {
            let line = self
                .lines
                .recv_timeout(TIMEOUT)
                .unwrap_or_else(|_| panic!("no response for id {key}"));
            let v: Value = serde_json::from_str(&line).unwrap();
            let got = v["id"].to_string();
            if got == key {
                return v;
            }
            self.pending.insert(got, v);
        }
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = json!(self.next_id);
        self.send_line(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
        );
        self.wait_for(&id)
    }

    /// Calls a tool; returns (isError, body) or panics on a JSON-RPC error.
    fn call(&mut self, tool: &str, args: Value) -> (bool, Value) {
        let r = self.request("tools/call", json!({"name": tool, "arguments": args}));
        r.get("result").unwrap_or_else(|| panic!("{tool}: {r}"));
        crate::common::tool_body(&r)
    }

    fn ok(&mut self, tool: &str, args: Value) -> Value {
        let (is_error, body) = self.call(tool, args);
        assert!(!is_error, "{tool}: {body}");
        body
    }

    fn rpc_error(&mut self, method: &str, params: Value) -> i64 {
        let r = self.request(method, params);
        r["error"]["code"].as_i64().unwrap_or_else(|| panic!("{r}"))
    }

    /// Closes stdin, waits for a clean exit, and checks stdout and stderr.
    fn finish(mut self) -> String {
        drop(self.stdin.take());
        let status = wait_timeout(&mut self.child, TIMEOUT);
        let mut err = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            std::io::Read::read_to_string(&mut e, &mut err).unwrap();
        }
        assert!(status.success(), "exit {status:?}; stderr:\n{err}");
        assert!(!err.contains("panicked"), "{err}");
        // The server has exited, so its stdout is at EOF and the reader
        // ends once it has stored the last lines.
        if let Some(reader) = self.reader.take() {
            reader.join().unwrap();
        }
        for line in self.all.lock().unwrap().iter() {
            let v: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:.200}"));
            assert_eq!(v["jsonrpc"], "2.0", "{line:.200}");
            assert!(
                v.get("result").is_some() || v.get("error").is_some() || v.get("method").is_some(),
                "{line:.200}"
            );
        }
        err
    }
}

fn wait_timeout(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let start = std::time::Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("server did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Polls `done` until it holds; panics after `limit`. The short pause
/// between polls only spares the CPU; the condition is the synchronisation.
fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !done() {
        assert!(
            start.elapsed() < limit,
            "condition not met within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn sha256_hex(s: &str) -> String {
    noma_core::doc::hash::sha256_hex(s.as_bytes())
}

#[test]
fn initialize_and_tools_list_show_every_tool_with_its_schema() {
    let repo = Repo::new();
    let mut s = Server::start(repo.path());
    let init = s.pending.remove("init").unwrap();
    let text = init["result"]["instructions"].as_str().unwrap();
    assert!(text.contains("read_doc"), "{text}");
    // A fresh repository: no hooks, empty cache.
    assert!(text.contains("hooks are not installed"), "{text}");
    assert!(text.contains("cache is cold"), "{text}");
    assert!(init["result"]["capabilities"]["tools"].is_object());

    let list = s.request("tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "read_doc",
            "list_ids",
            "validate_doc",
            "patch_block",
            "patch_block_list",
            "transcript_read",
            "describe_capabilities",
            "block_history",
            "list_changed_docs",
            "get_changed_blocks",
            "mark_reconciled",
            "clear_cache",
            "snapshot_state"
        ]
    );
    for t in tools {
        assert_eq!(t["inputSchema"]["type"], "object", "{t}");
        let props = &t["inputSchema"]["properties"];
        assert!(
            props["file"].is_object()
                || props["base_branch"].is_object()
                || ["clear_cache", "snapshot_state"].contains(&t["name"].as_str().unwrap()),
            "{t}"
        );
        assert!(t["description"].as_str().unwrap().len() > 60, "{t}");
    }
    let pb = tools.iter().find(|t| t["name"] == "patch_block").unwrap();
    assert_eq!(
        pb["inputSchema"]["properties"]["op"]["properties"]["op"]["oneOf"]
            .as_array()
            .unwrap()
            .len(),
        25
    );
    s.finish();
}

#[test]
fn instructions_have_no_hook_note_once_hooks_are_installed() {
    let repo = Repo::new();
    let out = Command::new(NOMA)
        .args(["hooks", "install"])
        .current_dir(repo.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let mut s = Server::start(repo.path());
    // Warm the cache, then a second session sees it warm.
    s.ok("read_doc", json!({"file": "a.noma"}));
    let text = s.pending.remove("init").unwrap()["result"]["instructions"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(!text.contains("hooks are not installed"), "{text}");
    s.finish();
    let mut s = Server::start(repo.path());
    let text = s.pending.remove("init").unwrap()["result"]["instructions"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(!text.contains("cache is cold"), "{text}");
    s.finish();
}

#[test]
fn read_list_validate() {
    let repo = Repo::new();
    let mut s = Server::start(repo.path());
    let doc = s.ok("read_doc", json!({"file": "a.noma"}));
    assert_eq!(doc["sha256"], sha256_hex(DOC));
    let blocks = doc["blocks"].as_array().unwrap();
    // As the reference's server: the frontmatter first, without an id.
    assert_eq!(
        blocks[0],
        json!({"type": "frontmatter", "childCount": 0, "lines": [1, 3], "patchable": false})
    );
    let intro = &blocks[1];
    assert_eq!(intro["id"], "intro");
    assert_eq!(intro["type"], "section");
    assert_eq!(intro["level"], 1);
    assert_eq!(intro["aliases"], json!(["start"]));
    assert_eq!(intro["patchable"], true);
    let para = blocks.iter().find(|b| b["type"] == "paragraph").unwrap();
    assert_eq!(para["patchable"], false);
    assert!(para.get("hash").is_none());
    let c1 = blocks.iter().find(|b| b["id"] == "c1").unwrap();
    assert_eq!(c1["name"], "claim");
    assert_eq!(c1["attrs"], json!({"confidence": 0.5}));
    assert_eq!(c1["lines"], json!([8, 10]));
    assert_eq!(
        c1["hash"],
        sha256_hex("::claim{id=\"c1\" confidence=0.5}\nThe sky is blue.\n::")
    );

    // Absolute paths inside the root work too.
    let abs = repo.path().join("a.noma").canonicalize().unwrap();
    let again = s.ok("read_doc", json!({"file": abs.to_str().unwrap()}));
    assert_eq!(again, doc);

    let ids = s.ok("list_ids", json!({"file": "a.noma"}));
    assert_eq!(ids["ids"], json!(["intro", "c1", "e1"]));
    assert_eq!(ids["aliases"], json!({"start": "intro"}));

    let v = s.ok("validate_doc", json!({"file": "a.noma"}));
    assert_eq!(v["ok"], true, "{v}");
    std::fs::write(
        repo.path().join("bad.noma"),
        "::note{id=\"x\"}\na\n::\n\n::note{id=\"x\"}\nb\n::\n",
    )
    .unwrap();
    let v = s.ok("validate_doc", json!({"file": "bad.noma"}));
    assert_eq!(v["ok"], false);
    assert!(v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .any(|d| d["code"] == "duplicate-id" && d["severity"] == "error"));

    // Missing file: a system error.
    let (is_error, body) = s.call("read_doc", json!({"file": "missing.noma"}));
    assert!(is_error);
    assert!(
        body["error"].as_str().unwrap().contains("no such file"),
        "{body}"
    );
    s.finish();
}

/// `noma replay` from the original content reproduces the document.
fn assert_replays(repo: &Repo) {
    let base = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(base.path(), DOC).unwrap();
    let replay = Command::new(NOMA)
        .args(["replay", "a.noma", "--base"])
        .arg(base.path())
        .current_dir(repo.path())
        .output()
        .unwrap();
    assert!(replay.status.success(), "{replay:?}");
}

fn transcript_lines(repo: &Repo) -> Vec<Value> {
    repo.read("a.noma.patches")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn patch_block_success_and_user_errors_are_recorded() {
    let repo = Repo::new();
    let mut s = Server::start(repo.path());
    let blocks = s.ok("read_doc", json!({"file": "a.noma"}));
    let c1_hash = blocks["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["id"] == "c1")
        .unwrap()["hash"]
        .as_str()
        .unwrap()
        .to_string();

    let r = s.ok(
        "patch_block",
        json!({"file": "a.noma", "reason": "raise",
               "actor": {"kind": "agent", "name": "tester", "model": "m"},
               "op": {"op": "update_attribute", "id": "c1", "key": "confidence",
                      "value": 0.9, "baseHash": c1_hash}}),
    );
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["post_validation"], "ok");
    let entry = &r["transcript_entry"];
    assert_eq!(entry["patch_result"], "applied");
    assert_eq!(entry["reason"], "raise");
    assert_eq!(entry["actor"]["name"], "tester");
    assert_eq!(entry["pre_sha256"], sha256_hex(DOC));
    assert!(r["diagnostics"].is_array());
    let after = repo.read("a.noma");
    assert!(after.contains("confidence=0.9"), "{after}");
    assert_eq!(entry["post_sha256"], sha256_hex(&after));
    assert_eq!(transcript_lines(&repo).len(), 1);

    // The same baseHash is now stale: user error, recorded, file unchanged.
    let r = s.ok(
        "patch_block",
        json!({"file": "a.noma", "op": {"op": "replace_block", "id": "c1",
               "content": "::claim{id=\"c1\"}\nx\n::", "baseHash": c1_hash}}),
    );
    assert_eq!(
        r,
        json!({"ok": false, "error": r["error"], "code": "sha_mismatch"})
    );
    assert_eq!(repo.read("a.noma"), after);
    let t = transcript_lines(&repo);
    assert_eq!(t.len(), 2);
    assert_eq!(t[1]["patch_result"], "rejected");
    assert_eq!(t[1]["actor"], json!({"kind": "agent", "name": "unknown"}));

    // A missing target and a stale expected_sha.
    let r = s.ok(
        "patch_block",
        json!({"file": "a.noma", "op": {"op": "delete_block", "id": "nope"}}),
    );
    assert_eq!(r["code"], "target_missing", "{r}");
    let r = s.ok(
        "patch_block",
        json!({"file": "a.noma", "expected_sha": "00000000",
               "op": {"op": "delete_block", "id": "e1"}}),
    );
    assert_eq!(r["code"], "sha_mismatch", "{r}");
    assert_eq!(repo.read("a.noma"), after);
    assert_eq!(transcript_lines(&repo).len(), 4);

    // The engine's verdict on the whole history: it replays.
    assert_replays(&repo);
    s.finish();
}

/// `x-noma/replace_lines` is what `noma record` writes for hand edits,
/// never an agent's op: over a live server `patch_block` refuses it whole
/// (alone or in a list) with `unsupported_op` and writes nothing, while
/// `describe_capabilities` names it as not accepted in patch requests.
#[test]
fn the_hand_edit_extension_op_is_refused_to_agents() {
    let repo = Repo::new();
    let mut s = Server::start(repo.path());
    let lines = json!({"op": "x-noma/replace_lines", "line": 6,
                       "old": "Hello.\n", "new": "Bye.\n"});
    let requests = [
        (
            "patch_block",
            json!({"file": "a.noma", "op": lines.clone()}),
        ),
        (
            "patch_block_list",
            json!({"file": "a.noma", "ops": [{"op": "delete_block", "id": "e1"}, lines]}),
        ),
    ];
    for (tool, args) in requests {
        let (is_error, body) = s.call(tool, args);
        assert!(is_error, "{body}");
        assert_eq!(body["code"], "unsupported_op", "{body}");
        assert_eq!(repo.read("a.noma"), DOC);
        assert!(!repo.path().join("a.noma.patches").exists());
    }
    let caps = s.ok("describe_capabilities", json!({"file": "a.noma"}));
    let ext = &caps["extension_ops"][0];
    assert_eq!(ext["op"], "x-noma/replace_lines", "{caps}");
    assert_eq!(ext["accepted_in_patch_requests"], false, "{caps}");
    s.finish();
}

#[test]
fn patch_block_list_is_atomic_and_transcript_read_pages() {
    let repo = Repo::new();
    let mut s = Server::start(repo.path());
    let r = s.ok(
        "patch_block_list",
        json!({"file": "a.noma", "ops": [
            {"op": "update_attribute", "id": "c1", "key": "confidence", "value": 0.7},
            {"op": "delete_block", "id": "nope"},
        ]}),
    );
    assert_eq!(r["ok"], false);
    assert_eq!(r["code"], "target_missing");
    assert_eq!(r["op_index"], 1);
    assert_eq!(repo.read("a.noma"), DOC);

    let r = s.ok(
        "patch_block_list",
        json!({"file": "a.noma", "ops": [
            {"op": "update_attribute", "id": "c1", "key": "confidence", "value": 0.7},
            {"op": "update_attribute", "id": "c1", "key": "confidence", "value": 0.8},
        ]}),
    );
    assert_eq!(r["ok"], true, "{r}");
    let entries = r["transcript_entries"].as_array().unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[1]["pre_sha256"], entries[0]["post_sha256"]);
    assert!(repo.read("a.noma").contains("confidence=0.8"));

    let empty = s.ok("patch_block_list", json!({"file": "a.noma", "ops": []}));
    assert_eq!(empty["ok"], false);

    let t = s.ok("transcript_read", json!({"file": "a.noma"}));
    assert_eq!(t["exists"], true);
    assert_eq!(t["total"], 4);
    assert_eq!(t["records"].as_array().unwrap().len(), 4);
    let t2 = s.ok("transcript_read", json!({"file": "a.noma", "limit": 1}));
    assert_eq!(t2["truncated"], true);
    assert_eq!(t2["records"][0], t["records"][3]);
    let third = t["records"][2]["op_id"].clone();
    let t3 = s.ok(
        "transcript_read",
        json!({"file": "a.noma", "after_op_id": third}),
    );
    assert_eq!(t3["records"].as_array().unwrap().len(), 1);
    assert_eq!(t3["records"][0], t["records"][3]);
    // A noma-only tool's failure is a tool error (isError), its code kept.
    let (is_error, unknown) = s.call(
        "transcript_read",
        json!({"file": "a.noma", "after_op_id": "zzz"}),
    );
    assert!(is_error, "{unknown}");
    assert_eq!(unknown["code"], "unknown_op_id");
    std::fs::write(repo.path().join("b.noma"), "# B\n").unwrap();
    let none = s.ok("transcript_read", json!({"file": "b.noma"}));
    assert_eq!(none["exists"], false);
    assert!(!repo.path().join("b.noma.patches").exists());
    std::fs::write(repo.path().join("b.noma.patches"), "{not json}\n").unwrap();
    let (is_error, bad) = s.call("transcript_read", json!({"file": "b.noma"}));
    assert!(is_error, "{bad}");
    assert_eq!(bad["code"], "transcript_invalid");
    assert_eq!(bad["line"], 1);
    s.finish();
}

/// `transcript_read` reads the transcript a line at a time, so
/// a transcript over the whole-file size cap is still paged; only the
/// provenance check, which needs the whole file, stays under the cap.
#[test]
fn transcript_read_pages_a_transcript_over_the_size_cap() {
    let repo = Repo::new();
    let mut s = Server::start(repo.path());
    for v in 1..=6 {
        let r = s.ok(
            "patch_block",
            json!({"file": "a.noma", "op": {"op": "update_attribute", "id": "c1",
                   "key": "confidence", "value": f64::from(v) / 10.0}}),
        );
        assert_eq!(r["ok"], true, "{r}");
    }
    let all = s.ok("transcript_read", json!({"file": "a.noma"}));
    s.finish();
    let total = all["total"].as_u64().unwrap();
    assert!(total >= 6, "{all}");
    let transcript_len = std::fs::metadata(repo.path().join("a.noma.patches"))
        .unwrap()
        .len();
    let document_len = std::fs::metadata(repo.path().join("a.noma")).unwrap().len();
    // A cap the document fits under and the transcript does not.
    let cap = (document_len * 2).max(transcript_len / 2).to_string();
    assert!(transcript_len > cap.parse().unwrap());
    let mut s = Server::start_with(repo.path(), &[("NOMA_MAX_FILE_BYTES", &cap)]);
    let page = s.ok("transcript_read", json!({"file": "a.noma", "limit": 2}));
    assert_eq!(page["total"], total, "{page}");
    assert_eq!(page["truncated"], true);
    let last = all["records"].as_array().unwrap();
    assert_eq!(page["records"], json!(last[last.len() - 2..]));
    std::fs::write(repo.path().join("a.noma.provenance"), "").unwrap();
    let (is_error, refused) = s.call("transcript_read", json!({"file": "a.noma"}));
    assert!(is_error, "{refused}");
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains("NOMA_MAX_FILE_BYTES"),
        "{refused}"
    );
    s.finish();
}

#[test]
fn describe_capabilities_absent_present_and_malformed() {
    let repo = Repo::new();
    let mut s = Server::start(repo.path());
    let d = s.ok("describe_capabilities", json!({"file": "a.noma"}));
    assert_eq!(d["exists"], false);
    assert_eq!(d["grants"], json!({}));
    std::fs::write(
        repo.path().join("a.noma.capabilities.yml"),
        "nomaAgent:\n  version: 1\n  blocks:\n    claim:\n      ops: [replace_block, update_attribute]\n  ids:\n    rename: true\n",
    )
    .unwrap();
    let d = s.ok("describe_capabilities", json!({"file": "a.noma"}));
    assert_eq!(d["exists"], true);
    assert_eq!(
        d["grants"],
        json!({"claim": ["replace_block", "update_attribute"]})
    );
    assert_eq!(d["rename_ids"], true);
    assert_eq!(d["enforcement"], "advisory");
    std::fs::write(
        repo.path().join("a.noma.capabilities.yml"),
        "nomaAgent: [1, 2\n",
    )
    .unwrap();
    let (is_error, d) = s.call("describe_capabilities", json!({"file": "a.noma"}));
    assert!(is_error, "{d}");
    assert_eq!(d["ok"], false);
    assert_eq!(d["code"], "invalid_descriptor");
    s.finish();
}

#[test]
fn protocol_errors_escapes_and_manifests() {
    let repo = Repo::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("x.noma"), DOC).unwrap();
    let mut s = Server::start(repo.path());

    // A line that is not JSON gets no reply (as in rmcp and the other
    // official SDKs: no id to answer, and no error storm); the session goes
    // on with the next request, and stderr names the dropped line.
    s.send_line("{\"jsonrpc\": \"2.0\", \"id\": 5, ");
    s.send_line("{\"jsonrpc\": \"2.0\", ");
    assert_eq!(s.rpc_error("no/such/method", json!({})), -32601);
    // tools/call without params, without a required argument, unknown tool.
    s.next_id += 1;
    let id = json!(s.next_id);
    s.send_line(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call"}).to_string());
    assert_eq!(s.wait_for(&id)["error"]["code"], -32602);
    assert_eq!(
        s.rpc_error("tools/call", json!({"name": "read_doc", "arguments": {}})),
        -32602
    );
    assert_eq!(
        s.rpc_error(
            "tools/call",
            json!({"name": "patch_block", "arguments": {"file": "a.noma"}})
        ),
        -32602
    );
    assert_eq!(
        s.rpc_error("tools/call", json!({"name": "nope", "arguments": {}})),
        -32602
    );

    // Path escapes are system errors, and nothing outside is touched.
    let escape_paths = [
        "../x.noma".to_string(),
        outside.path().join("x.noma").display().to_string(),
        "link.noma".to_string(),
        "up/x.noma".to_string(),
    ];
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(outside.path().join("x.noma"), repo.path().join("link.noma"))
            .unwrap();
        std::os::unix::fs::symlink(outside.path(), repo.path().join("up")).unwrap();
    }
    for p in &escape_paths {
        for tool in ["read_doc", "list_ids", "validate_doc", "transcript_read"] {
            let (is_error, body) = s.call(tool, json!({"file": p}));
            assert!(is_error, "{tool} {p}: {body}");
            assert_eq!(body["ok"], false);
        }
        let (is_error, body) = s.call(
            "patch_block",
            json!({"file": p, "op": {"op": "delete_block", "id": "c1"}}),
        );
        assert!(is_error, "{p}: {body}");
    }
    assert_eq!(
        std::fs::read_to_string(outside.path().join("x.noma")).unwrap(),
        DOC
    );
    assert!(!outside.path().join("x.noma.patches").exists());

    // A transcript symlinked out of the root is refused before any write.
    #[cfg(unix)]
    {
        std::fs::write(outside.path().join("t.patches"), "").unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("t.patches"),
            repo.path().join("a.noma.patches"),
        )
        .unwrap();
        let (is_error, body) = s.call(
            "patch_block",
            json!({"file": "a.noma", "op": {"op": "delete_block", "id": "e1"}}),
        );
        assert!(is_error, "{body}");
        assert_eq!(
            std::fs::read_to_string(outside.path().join("t.patches")).unwrap(),
            ""
        );
        assert_eq!(repo.read("a.noma"), DOC);
        std::fs::remove_file(repo.path().join("a.noma.patches")).unwrap();
    }

    // Book manifests: isError for every tool; patch tools name unsupported_op.
    std::fs::write(repo.path().join("book.noma.yml"), "chapters: [a.noma]\n").unwrap();
    for tool in ["read_doc", "list_ids", "validate_doc"] {
        let (is_error, body) = s.call(tool, json!({"file": "book.noma.yml"}));
        assert!(is_error, "{tool}: {body}");
    }
    let (is_error, body) = s.call(
        "patch_block",
        json!({"file": "book.noma.yml", "op": {"op": "delete_block", "id": "c1"}}),
    );
    assert!(is_error);
    assert_eq!(body["code"], "unsupported_op", "{body}");
    assert!(!repo.path().join("book.noma.yml.patches").exists());

    // Still serving.
    assert!(s.request("ping", json!({}))["result"].is_object());
    let out = s.all.clone();
    let err = s.finish();
    assert_eq!(
        err.matches("dropped a line that is not JSON").count(),
        2,
        "{err}"
    );
    // Neither malformed line was answered (id 5 or null).
    for line in out.lock().unwrap().iter() {
        let v: Value = serde_json::from_str(line).unwrap();
        let null_id = v.get("id").is_some_and(Value::is_null);
        assert!(v["id"] != json!(5) && !null_id, "{line:.200}");
    }
}

#[test]
fn huge_lines_within_the_limit_are_answered_and_longer_ones_refused() {
    let repo = Repo::new();
    let mut s = Server::start(repo.path());
    // 10 MB: within the line limit, parsed and answered (the unknown
    // argument is refused by name).
    let pad = "x".repeat(10 * 1024 * 1024);
    s.next_id += 1;
    let id = json!(s.next_id);
    let line = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "list_ids", "arguments": {"file": "a.noma", "pad": pad}}})
    .to_string();
    s.send_line(&line);
    let r = s.wait_for(&id);
    assert!(
        r.to_string().contains("unknown argument `pad`"),
        "{}",
        &r.to_string()[..300.min(r.to_string().len())]
    );
    // Over the 16 MiB limit: refused without being buffered, with an error
    // naming the limit (id null: the line is not kept), named on stderr;
    // the session goes on.
    let pad = "y".repeat(17 * 1024 * 1024);
    let big = format!("{{\"jsonrpc\":\"2.0\",\"id\":1234,\"method\":\"ping\",\"pad\":\"{pad}\"}}");
    s.send_line(&big);
    assert!(s.request("ping", json!({}))["result"].is_object());
    s.ok("read_doc", json!({"file": "a.noma"}));
    let out = s.all.clone();
    let err = s.finish();
    let limit = 16 * 1024 * 1024;
    assert!(
        err.contains(&format!(
            "refused a line of {} bytes (limit {limit})",
            big.len()
        )),
        "{err}"
    );
    let refusals: Vec<Value> = out
        .lock()
        .unwrap()
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["id"].is_null())
        .collect();
    assert_eq!(refusals.len(), 1, "{refusals:?}");
    assert_eq!(refusals[0]["error"]["code"], -32600, "{}", refusals[0]);
    let msg = refusals[0]["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains(&format!("over the limit of {limit} bytes")),
        "{msg}"
    );
}

#[test]
fn disconnect_mid_call_exits_cleanly_with_a_whole_document() {
    let repo = Repo::new();
    // Widen the window between the transcript commit and the document
    // rename, then close stdin inside it.
    let mut s = Server::start_with(repo.path(), &[("NOMA_TEST_PAUSE_BEFORE_RENAME_MS", "700")]);
    s.send_line(
        &json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
            "name": "patch_block", "arguments": {"file": "a.noma",
            "op": {"op": "update_attribute", "id": "c1", "key": "confidence", "value": 1}}}})
        .to_string(),
    );
    // Close stdin once the call is under way: its record is committed (the
    // server is then inside the widened window before the rename).
    wait_until(TIMEOUT, || {
        std::fs::read_to_string(repo.path().join("a.noma.patches")).is_ok_and(|t| t.ends_with('\n'))
    });
    s.finish();
    // The call completed before exit: document and transcript agree.
    let doc = repo.read("a.noma");
    assert!(doc.contains("confidence=1"), "{doc}");
    assert_eq!(transcript_lines(&repo).len(), 1);
    assert_replays(&repo);
    let leftovers: Vec<PathBuf> = std::fs::read_dir(repo.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().contains("tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// A long session stays healthy: a thousand mixed calls, refused ones
/// included, are all answered and the server still exits cleanly. (Its
/// memory over such a session is a figure for a bench, not a test.)
#[test]
fn a_thousand_calls_are_all_answered() {
    let repo = Repo::new();
    let mut s = Server::start(repo.path());
    for i in 0..1000 {
        match i % 4 {
            0 => {
                s.ok("read_doc", json!({"file": "a.noma"}));
            }
            1 => {
                s.ok("list_ids", json!({"file": "a.noma"}));
            }
            2 => {
                s.ok("validate_doc", json!({"file": "a.noma"}));
            }
            _ => {
                let (e, _) = s.call("read_doc", json!({"file": "../escape.noma"}));
                assert!(e);
            }
        }
    }
    s.finish();
}

#[test]
fn changed_block_tools_answer_only_the_changed_blocks() {
    let repo = Repo::new();
    let d = repo.path();
    common::git_at(d, &["checkout", "-q", "-b", "main"]);
    common::git_at(d, &["add", "-A"]);
    // a.noma is committed already (mcp_repo); anything else the test added.
    common::git_at(d, &["commit", "-q", "--allow-empty", "-m", "base"]);
    common::git_at(d, &["checkout", "-q", "-b", "work"]);
    let mut s = Server::start(d);
    // An agent patches one block through the server; the answer names it alone.
    s.ok(
        "patch_block",
        json!({"file": "a.noma", "op": {"op": "replace_block", "id": "e1",
               "content": "::evidence{id=\"e1\" for=\"c1\"}\nMeasured twice.\n::"}}),
    );
    let docs = s.ok("list_changed_docs", json!({"base_branch": "main"}));
    assert_eq!(docs["docs"][0]["path"], "a.noma", "{docs}");
    let r = s.ok(
        "get_changed_blocks",
        json!({"base_branch": "main", "include_old_source": true}),
    );
    let blocks = r["docs"][0]["blocks"].as_array().unwrap();
    assert_eq!(blocks.len(), 1, "{r}");
    assert_eq!(blocks[0]["id"], "e1");
    assert_eq!(blocks[0]["change"], "modified");
    let read = s.ok("read_doc", json!({"file": "a.noma"}));
    let e1 = read["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["id"] == "e1")
        .unwrap();
    assert_eq!(blocks[0]["sha256"], e1["hash"], "the baseHash to send next");
    // Reconciled blocks move to `skipped`, until the marks are cleared.
    s.ok(
        "mark_reconciled",
        json!({"files": ["a.noma"], "base_branch": "main"}),
    );
    let r = s.ok("get_changed_blocks", json!({"base_branch": "main"}));
    assert_eq!(r["docs"][0]["skipped"], json!(["e1"]), "{r}");
    assert_eq!(s.ok("clear_cache", json!({}))["cleared"], true);
    s.ok("snapshot_state", json!({}));
    assert!(d.join(".noma/reconciliation_state.json").is_file());
    // Failure paths: the noma-only tools answer every failure with isError
    // (an unknown base keeps its code; an escape is a system error).
    let (is_error, body) = s.call(
        "list_changed_docs",
        json!({"base_branch": "no-such-branch"}),
    );
    assert!(is_error && body["ok"] == false, "{body}");
    assert_eq!(body["code"], "invalid_request", "{body}");
    let (is_error, body) = s.call(
        "get_changed_blocks",
        json!({"base_branch": "main", "files": ["../outside.noma"]}),
    );
    assert!(is_error, "{body}");
    assert_eq!(
        s.rpc_error(
            "tools/call",
            json!({"name": "get_changed_blocks", "arguments": {}})
        ),
        -32602
    );
    s.finish();
}

/// A running server's changed-block answers come from its watched index
/// (the default): after edits, new, deleted and moved documents made behind
/// its back and after `git add`, a commit and a checkout, each answer is
/// exactly the one a server without the watcher (`NOMA_MCP_WATCH=0`, a
/// full scan per call) gives. `tests/it/changed_watch.rs` drives the index
/// itself through random steps.
#[test]
fn a_watched_server_answers_what_a_scanning_one_does() {
    let repo = Repo::new();
    let d = repo.path();
    common::git_at(d, &["checkout", "-q", "-b", "main"]);
    common::git_at(d, &["checkout", "-q", "-b", "work"]);
    let mut watched = Server::start(d);
    let mut scanning = Server::start_with(d, &[("NOMA_MCP_WATCH", "0")]);
    let mut same = |step: &str| {
        let args = json!({"base_branch": "main", "include_old_source": true});
        let w = watched.ok("get_changed_blocks", args.clone());
        let s = scanning.ok("get_changed_blocks", args);
        assert_eq!(w, s, "get_changed_blocks after {step}");
        let args = json!({"base_branch": "main"});
        let w = watched.ok("list_changed_docs", args.clone());
        let s = scanning.ok("list_changed_docs", args);
        assert_eq!(w, s, "list_changed_docs after {step}");
        w
    };
    assert_eq!(same("nothing")["docs"], json!([]));
    std::fs::write(d.join("a.noma"), DOC.replace("Looked up.", "Looked twice.")).unwrap();
    assert_eq!(same("an edit")["docs"][0]["path"], "a.noma");
    std::fs::write(d.join("b.noma"), DOC.replace("Plan", "B")).unwrap();
    assert_eq!(same("a new document")["docs"][1]["path"], "b.noma");
    std::fs::rename(d.join("b.noma"), d.join("c.noma")).unwrap();
    assert_eq!(same("a move")["docs"][1]["path"], "c.noma");
    common::git_at(d, &["add", "-A"]);
    same("git add");
    common::git_at(d, &["commit", "-q", "--no-verify", "-m", "work"]);
    same("a commit");
    std::fs::remove_file(d.join("a.noma")).unwrap();
    // git pairs the deleted a.noma with the similar c.noma: one rename.
    let r = same("a deletion");
    assert_eq!(r["docs"][0]["change"], "renamed", "{r}");
    assert_eq!(r["docs"][0]["old_path"], "a.noma", "{r}");
    common::git_at(d, &["checkout", "-q", "-f", "main"]);
    assert_eq!(same("a checkout")["docs"], json!([]));
    watched.finish();
    scanning.finish();
}

#[test]
fn input_validation_is_a_tool_error_from_2025_11_25() {
    let repo = Repo::new();
    // 2025-06-18: JSON-RPC -32602 (protocol_errors_escapes_and_manifests);
    // 2025-11-25 (SEP-1303): an isError result naming the field, so a model
    // can read it and retry. An unknown tool stays -32602.
    let mut s = Server::start_negotiating(repo.path(), &[], "2025-11-25");
    for (tool, args, field) in [
        ("read_doc", json!({}), "file"),
        ("patch_block", json!({"file": "a.noma"}), "op"),
        ("patch_block", json!({"file": 5, "op": {}}), "string"),
        (
            "transcript_read",
            json!({"file": "a.noma", "limit": "x"}),
            "expected u32",
        ),
    ] {
        let (is_error, body) = s.call(tool, args.clone());
        assert!(is_error, "{tool} {args}: {body}");
        assert_eq!(body["ok"], false, "{body}");
        let error = body["error"].as_str().unwrap();
        assert!(error.contains(tool) && error.contains(field), "{error}");
    }
    assert_eq!(
        s.rpc_error("tools/call", json!({"name": "nope", "arguments": {}})),
        -32602
    );
    // tools/call itself malformed (no params): still a protocol error.
    s.next_id += 1;
    let id = json!(s.next_id);
    s.send_line(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call"}).to_string());
    assert_eq!(s.wait_for(&id)["error"]["code"], -32602);
    // Nothing was written, and valid calls still work.
    assert_eq!(repo.read("a.noma"), DOC);
    assert!(!repo.path().join("a.noma.patches").exists());
    s.ok("read_doc", json!({"file": "a.noma"}));
    s.finish();
}

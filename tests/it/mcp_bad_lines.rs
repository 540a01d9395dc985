//! What `noma mcp` does with input that is not a message it can read
//! (decision `mcp-answers-lines-it-cannot-read`), over real pipes: a line
//! over the 16 MiB limit is refused without being buffered, with an error
//! naming the limit; a line holding invalid UTF-8 or half a surrogate pair
//! gets an error naming the problem, with its id when it has one; and the
//! session goes on. (Lines that are not JSON and batches: `mcp_protocol`.)

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

const NOMA: &str = env!("CARGO_BIN_EXE_noma");

/// Peak resident memory of process `pid` in KiB (`VmHWM`).
#[cfg(target_os = "linux")]
fn peak_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[cfg(target_os = "linux")]
#[test]
fn a_256_mib_line_is_not_buffered_and_the_session_goes_on() {
    let dir = crate::common::mcp_repo("::doc{id=\"a\"}\n");
    let mut child = Command::new(NOMA)
        .arg("mcp")
        .current_dir(dir.path())
        .env("NOMA_MCP_WATCH", "0")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut ask = |stdin: &mut std::process::ChildStdin, id: u64, method: &str, params: Value| {
        let req = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(stdin, "{req}").unwrap();
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        serde_json::from_str::<Value>(&line).unwrap()
    };
    let init = ask(
        &mut stdin,
        1,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "t", "version": "1"}}),
    );
    assert_eq!(init["result"]["serverInfo"]["name"], "noma", "{init}");
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .unwrap();
    let before = peak_kib(child.id());

    // A request whose string never ends: 256 MiB, then the newline.
    let chunk = vec![b'y'; 1024 * 1024];
    stdin
        .write_all(br#"{"jsonrpc":"2.0","id":2,"method":"ping","params":{"pad":""#)
        .unwrap();
    for _ in 0..256 {
        stdin.write_all(&chunk).unwrap();
    }
    stdin.write_all(b"\"}}\n").unwrap();
    // Its refusal, then the answer to the next request.
    let r = ask(&mut stdin, 3, "ping", json!({}));
    assert!(r["id"].is_null(), "{r}");
    assert_eq!(r["error"]["code"], -32600, "{r}");
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let r: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(r["id"], 3, "{r}");
    assert!(r["result"].is_object(), "{r}");
    // At most the 16 MiB limit (and its buffer's growth) was ever held:
    // measured +50 MiB, where buffering the line would take 256 MiB.
    let after = peak_kib(child.id());
    assert!(
        after < before + 96 * 1024,
        "peak memory grew from {before} KiB to {after} KiB"
    );

    drop(stdin);
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(status.success(), "{status:?}: {err}");
    assert!(err.contains("refused a line of 268435516 bytes"), "{err}");
}

/// `noma mcp` in a repository, initialized, over pipes.
struct Session {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    out: BufReader<std::process::ChildStdout>,
    _dir: tempfile::TempDir,
}

impl Session {
    fn start() -> Session {
        let dir = crate::common::mcp_repo("::doc{id=\"a\"}\n");
        let mut child = Command::new(NOMA)
            .arg("mcp")
            .current_dir(dir.path())
            .env("NOMA_MCP_WATCH", "0")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        let mut s = Session {
            child,
            stdin,
            out,
            _dir: dir,
        };
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params":
            {"protocolVersion": "2025-06-18", "capabilities": {},
             "clientInfo": {"name": "t", "version": "1"}}});
        s.write(init.to_string().as_bytes());
        assert_eq!(s.recv()["id"], 0);
        s.write(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        s
    }

    /// Writes `bytes` and a newline.
    fn write(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    fn recv(&mut self) -> Value {
        let mut line = String::new();
        assert!(self.out.read_line(&mut line).unwrap() > 0, "server EOF");
        serde_json::from_str(&line).unwrap()
    }

    /// The answer to `bytes`, a JSON-RPC error: its (id, code, message).
    fn refused(&mut self, bytes: &[u8]) -> (Value, i64, String) {
        self.write(bytes);
        let r = self.recv();
        let msg = r["error"]["message"]
            .as_str()
            .unwrap_or_else(|| panic!("{r}"));
        (
            r["id"].clone(),
            r["error"]["code"].as_i64().unwrap(),
            msg.to_string(),
        )
    }

    /// A ping answered: the session goes on.
    fn alive(&mut self, id: u64) {
        let ping = json!({"jsonrpc": "2.0", "id": id, "method": "ping"});
        self.write(ping.to_string().as_bytes());
        let r = self.recv();
        assert_eq!(r["id"], id, "{r}");
        assert!(r["result"].is_object(), "{r}");
    }

    fn finish(mut self) {
        drop(self.stdin);
        assert!(self.child.wait().unwrap().success());
    }
}

#[test]
fn a_20_mib_line_gets_an_error_naming_the_limit_and_the_session_goes_on() {
    let mut s = Session::start();
    let pad = "z".repeat(20 * 1024 * 1024);
    let line = format!(r#"{{"jsonrpc":"2.0","id":5,"method":"ping","params":{{"pad":"{pad}"}}}}"#);
    let (id, code, msg) = s.refused(line.as_bytes());
    assert_eq!((id, code), (Value::Null, -32600), "{msg}");
    assert!(
        msg.contains(&format!("a line of {} bytes", line.len()))
            && msg.contains("over the limit of 16777216 bytes (16 MiB)"),
        "{msg}"
    );
    s.alive(6);
    s.finish();
}

#[test]
fn undecodable_lines_get_an_error_naming_the_problem_and_the_session_goes_on() {
    let mut s = Session::start();
    // A lone high surrogate, escaped: answered with the request's id.
    let (id, code, msg) =
        s.refused(br#"{"jsonrpc":"2.0","id":7,"method":"ping","params":{"s":"\ud800"}}"#);
    assert_eq!((id, code), (json!(7), -32700), "{msg}");
    assert!(
        msg.contains(r"\ud800") && msg.contains("surrogate"),
        "{msg}"
    );
    s.alive(8);
    // A lone low surrogate after a valid pair, in a tool call's arguments.
    let call = br#"{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"read_doc","arguments":{"file":"\ud83d\ude00\udc00.noma"}}}"#;
    let (id, code, msg) = s.refused(call);
    assert_eq!((id, code), (json!("x"), -32700), "{msg}");
    assert!(msg.contains(r"\udc00"), "{msg}");
    // Invalid UTF-8 in a string: the byte and its offset are named.
    let mut bad = br#"{"jsonrpc":"2.0","id":9,"method":"ping","params":{"s":""#.to_vec();
    let at = bad.len();
    bad.extend_from_slice(b"\xff\xfe\"}}");
    let (id, code, msg) = s.refused(&bad);
    assert_eq!((id, code), (json!(9), -32700), "{msg}");
    assert!(msg.contains(&format!("byte 0xff at offset {at}")), "{msg}");
    // Invalid UTF-8 where no id can be read: answered with a null id.
    let (id, code, msg) = s.refused(b"\xc3\x28 not even json");
    assert_eq!((id, code), (Value::Null, -32700), "{msg}");
    // A notification with a lone surrogate is not answered: the next line
    // out is the ping's.
    s.write(
        br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"reason":"\udfff"}}"#,
    );
    s.alive(10);
    // An escaped backslash before `ud800` is no escape: a valid request.
    s.write(br#"{"jsonrpc":"2.0","id":11,"method":"no/such","params":{"s":"\\ud800"}}"#);
    assert_eq!(s.recv()["id"], 11);
    s.finish();
}

//! What `noma mcp` does with input that is not a message it can read, as
//! rmcp and the other official SDKs do: a line over the 16 MiB limit is
//! dropped without being buffered and without a reply, and the session
//! goes on. (Lines that are not JSON and batches: `mcp_protocol`.)

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
    // No reply to it: the next line out answers the next request.
    let r = ask(&mut stdin, 3, "ping", json!({}));
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
    assert!(err.contains("dropped a line of 268435516 bytes"), "{err}");
}

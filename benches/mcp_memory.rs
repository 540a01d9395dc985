//! Resident memory of a long `noma mcp` session (`cargo bench --bench
//! mcp_memory`, Linux): a thousand mixed tool calls on a small document,
//! with `VmRSS` and the thread count after 100 and after 1,000 calls. A leak
//! of a few kB per call shows as growth between the two; tokio may start
//! more blocking threads late in a loaded run, each with its own allocator
//! heap, so read growth together with the thread count.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

const DOC: &str = "# Intro\n\n::claim{id=\"c1\" confidence=0.5}\nThe sky is blue.\n::\n";

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` does not.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let git = Command::new("git")
        .args(["init", "-q"])
        .current_dir(dir.path())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .status()
        .unwrap();
    assert!(git.success());
    std::fs::write(dir.path().join("a.noma"), DOC).unwrap();

    let mut child = Command::new(env!("CARGO_BIN_EXE_noma"))
        .arg("mcp")
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut id = 0u64;
    // One request, then its response (the server answers in order here:
    // nothing else is in flight).
    let mut request = |method: &str, params: Value| -> Value {
        id += 1;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
        let mut answer = String::new();
        loop {
            answer.clear();
            assert!(stdout.read_line(&mut answer).unwrap() > 0, "server exited");
            let v: Value = serde_json::from_str(&answer).unwrap();
            if v["id"] == json!(id) {
                return v;
            }
        }
    };
    request(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "bench", "version": "1"}}),
    );
    let pid = child.id();
    let mut call = |i: usize| {
        let (tool, file) = match i % 4 {
            0 => ("read_doc", "a.noma"),
            1 => ("list_ids", "a.noma"),
            2 => ("validate_doc", "a.noma"),
            _ => ("read_doc", "../escape.noma"),
        };
        let r = request(
            "tools/call",
            json!({"name": tool, "arguments": {"file": file}}),
        );
        assert!(r.get("result").is_some(), "{r}");
    };
    for i in 0..100 {
        call(i);
    }
    let (rss_100, threads_100) = (status(pid, "VmRSS:"), status(pid, "Threads:"));
    for i in 100..1000 {
        call(i);
    }
    let (rss_1000, threads_1000) = (status(pid, "VmRSS:"), status(pid, "Threads:"));
    println!("noma mcp, VmRSS after 100 calls: {rss_100} kB ({threads_100} threads)");
    println!("noma mcp, VmRSS after 1000 calls: {rss_1000} kB ({threads_1000} threads)");
    let _ = child.kill();
    let _ = child.wait();
}

/// A numeric field of /proc/<pid>/status (kB for sizes), or "?" off Linux.
fn status(pid: u32, field: &str) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(field))
                .map(|v| v.trim().trim_end_matches("kB").trim().to_string())
        })
        .unwrap_or_else(|| "?".into())
}

//! A language-server client over real pipes, for the `lsp_*` tests: it
//! spawns `noma lsp` (with `NOMA_LSP_TRACE=1`: analyses logged on stderr,
//! `noma/text` answered), writes framed bytes to its stdin and reads its
//! stdout on a thread of its own. Also the client's side of a document:
//! LSP positions (UTF-16 columns; lines ending at `\n`, `\r\n` or a lone
//! `\r`) applied to its text, written apart from the server's code.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::NOMA;

/// How long any answer may take: generous, for a loaded machine and a
/// debug build; a hang still fails.
pub const BOUND: Duration = Duration::from_secs(60);

/// One framed message.
pub fn framed(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

/// A running `noma lsp`.
pub struct Lsp {
    child: Child,
    stdin: Option<ChildStdin>,
    from_server: Receiver<Value>,
    stderr: Option<JoinHandle<String>>,
    /// Messages read and not taken yet (notifications, mostly).
    pub seen: Vec<Value>,
    next_id: i64,
}

impl Lsp {
    /// Starts `noma lsp` in `dir`.
    pub fn start(dir: &Path) -> Lsp {
        let mut child = Command::new(NOMA)
            .arg("lsp")
            .current_dir(dir)
            .env("NOMA_LSP_TRACE", "1")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", dir)
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("noma lsp starts");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            loop {
                let mut len = None;
                loop {
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let line = line.trim_end();
                    if line.is_empty() {
                        break;
                    }
                    if let Some(v) = line.strip_prefix("Content-Length: ") {
                        len = Some(v.parse::<usize>().expect("a length"));
                    }
                }
                let mut body = vec![0; len.expect("the server frames its messages")];
                if r.read_exact(&mut body).is_err() {
                    return;
                }
                let v: Value = serde_json::from_slice(&body).expect("the server writes JSON");
                if tx.send(v).is_err() {
                    return;
                }
            }
        });
        let mut stderr = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s);
            s
        });
        Lsp {
            stdin: child.stdin.take(),
            child,
            from_server: rx,
            stderr: Some(stderr),
            seen: Vec::new(),
            next_id: 1,
        }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Writes `bytes` in one write.
    pub fn write(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("the server reads its input");
        stdin.flush().unwrap();
    }

    /// The frame of a notification.
    pub fn note_frame(method: &str, params: Value) -> Vec<u8> {
        let v = json!({"jsonrpc": "2.0", "method": method, "params": params});
        framed(v.to_string().as_bytes())
    }

    /// Sends a notification.
    pub fn notify(&mut self, method: &str, params: Value) {
        self.write(&Lsp::note_frame(method, params));
    }

    /// A fresh request id.
    pub fn id(&mut self) -> i64 {
        self.next_id += 1;
        self.next_id
    }

    /// Sends a request and waits for its answer (the whole response).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.id();
        let v = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.write(&framed(v.to_string().as_bytes()));
        self.answer(&json!(id))
    }

    /// Waits for the response to `id` (a `null` id for an unreadable one).
    pub fn answer(&mut self, id: &Value) -> Value {
        self.wait(|m| m.get("method").is_none() && m.get("id") == Some(id))
            .unwrap_or_else(|| panic!("no answer to request {id} within {BOUND:?}"))
    }

    /// The first message (already read or still to come) that `is`, taken
    /// out; `None` if none comes within [`BOUND`].
    pub fn wait(&mut self, is: impl Fn(&Value) -> bool) -> Option<Value> {
        if let Some(i) = self.seen.iter().position(&is) {
            return Some(self.seen.remove(i));
        }
        let deadline = Instant::now() + BOUND;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.from_server.recv_timeout(left) {
                Ok(m) if is(&m) => return Some(m),
                Ok(m) => self.seen.push(m),
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return None,
            }
        }
    }

    /// Initializes the session.
    pub fn initialize(&mut self) -> Value {
        let r = self.request("initialize", json!({"capabilities": {}}));
        self.notify("initialized", json!({}));
        r
    }

    /// The last diagnostics published for `uri` among the messages read
    /// (callers make a request first: the server publishes a document's
    /// pending analysis before it answers).
    pub fn last_diagnostics(&self, uri: &str) -> Option<Value> {
        self.seen
            .iter()
            .rev()
            .find(|m| m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == uri)
            .map(|m| m["params"]["diagnostics"].clone())
    }

    /// Whether the server is still running.
    pub fn running(&mut self) -> bool {
        self.child.try_wait().expect("wait").is_none()
    }

    /// Shuts the session down: its exit status and everything it wrote on
    /// stderr.
    pub fn finish(mut self) -> (ExitStatus, String) {
        let shut = self.request("shutdown", Value::Null);
        assert_eq!(shut["result"], Value::Null, "{shut}");
        self.notify("exit", Value::Null);
        self.close()
    }

    /// Closes stdin and waits for the server: its exit status and stderr.
    pub fn close(mut self) -> (ExitStatus, String) {
        drop(self.stdin.take());
        let status = self.child.wait().expect("the server ends");
        let stderr = self.stderr.take().unwrap().join().unwrap();
        (status, stderr)
    }
}

impl Drop for Lsp {
    fn drop(&mut self) {
        // A failed test must not leave the server running.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The client's document: text and LSP positions over it.
#[derive(Debug, Clone)]
pub struct Doc {
    /// The text.
    pub text: String,
}

impl Doc {
    /// The byte offsets where each line starts.
    pub fn line_starts(&self) -> Vec<usize> {
        let b = self.text.as_bytes();
        let mut starts = vec![0];
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                b'\r' if b.get(i + 1) == Some(&b'\n') => {
                    i += 2;
                    starts.push(i);
                }
                b'\r' | b'\n' => {
                    i += 1;
                    starts.push(i);
                }
                _ => i += 1,
            }
        }
        starts
    }

    /// The content of each line, without its end.
    pub fn lines(&self) -> Vec<&str> {
        let starts = self.line_starts();
        (0..starts.len())
            .map(|l| {
                let end = starts.get(l + 1).copied().unwrap_or(self.text.len());
                self.text[starts[l]..end].trim_end_matches(['\r', '\n'])
            })
            .collect()
    }

    /// The byte offset of `(line, utf16 column)`, which must be on a line
    /// and a character boundary.
    pub fn offset(&self, line: usize, col: usize) -> usize {
        let starts = self.line_starts();
        let content = self.lines()[line];
        let mut units = 0;
        for (i, c) in content.char_indices() {
            if units == col {
                return starts[line] + i;
            }
            units += c.len_utf16();
        }
        assert_eq!(
            units, col,
            "column {col} is inside a character or past the line"
        );
        starts[line] + content.len()
    }

    /// Each line's length in UTF-16 units.
    pub fn widths(&self) -> Vec<usize> {
        self.lines()
            .iter()
            .map(|l| l.encode_utf16().count())
            .collect()
    }

    /// The valid columns of `line` (character boundaries).
    pub fn columns(&self, line: usize) -> Vec<usize> {
        let mut out = vec![0];
        let mut units = 0;
        for c in self.lines()[line].chars() {
            units += c.len_utf16();
            out.push(units);
        }
        out
    }

    /// Replaces `(l0, c0)..(l1, c1)` by `new`, as the client does; the
    /// `contentChanges` entry for it.
    pub fn edit(&mut self, (l0, c0): (usize, usize), (l1, c1): (usize, usize), new: &str) -> Value {
        let (a, b) = (self.offset(l0, c0), self.offset(l1, c1));
        assert!(a <= b);
        self.text.replace_range(a..b, new);
        json!({"range": {"start": {"line": l0, "character": c0},
                          "end": {"line": l1, "character": c1}}, "text": new})
    }
}

/// The diagnostics `noma check --format json` gives `text` saved at
/// `path`, as (severity, code, message, 1-based line when it has one).
pub fn check_diagnostics(path: &Path, text: &str) -> Vec<(String, String, String, Option<u64>)> {
    std::fs::write(path, text).unwrap();
    let out = Command::new(NOMA)
        .args(["check", "--format", "json"])
        .arg(path)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "noma check json: {e}: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let mut found: Vec<_> = v[0]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["severity"].as_str().unwrap().to_string(),
                d["code"].as_str().unwrap().to_string(),
                d["message"].as_str().unwrap().to_string(),
                d["pos"]["line"].as_u64(),
            )
        })
        .collect();
    found.sort();
    found
}

/// The server's diagnostics in the same shape (`line` taken from the range
/// where `noma check` gives one).
pub fn lsp_diagnostics(
    diags: &Value,
    lines_of: &[(String, String, String, Option<u64>)],
) -> Vec<(String, String, String, Option<u64>)> {
    let severity = |n: i64| match n {
        1 => "error",
        2 => "warning",
        _ => "info",
    };
    let mut found: Vec<_> = diags
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            let key = (
                severity(d["severity"].as_i64().unwrap()).to_string(),
                d["code"].as_str().unwrap().to_string(),
                d["message"].as_str().unwrap().to_string(),
            );
            // Findings `noma check` gives without a line compare without one.
            let has_line = lines_of
                .iter()
                .any(|c| (&c.0, &c.1, &c.2) == (&key.0, &key.1, &key.2) && c.3.is_some());
            let line = has_line.then(|| d["range"]["start"]["line"].as_u64().unwrap() + 1);
            (key.0, key.1, key.2, line)
        })
        .collect();
    found.sort();
    found
}

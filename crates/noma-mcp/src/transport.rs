//! Newline-delimited JSON-RPC on stdin/stdout in front of `rmcp`, keeping
//! only what rmcp 3.9's stdio transport lacks (`.noma/mcp.noma`, decision
//! `mcp-bad-input-follows-rmcp`). As in rmcp and the other official SDKs
//! (modelcontextprotocol/rust-sdk#938), a line that is not JSON or is longer
//! than [`MAX_LINE`] (never buffered past it) gets no reply. Added here: each
//! dropped line is named in the notices (rmcp logs only through `tracing`); a
//! notification before `initialize` is dropped (rmcp 3.9 would end the
//! session); well-formed JSON that is no message, a batch included, gets
//! `-32600` with the id it names (rmcp's has a null id). A thread reads
//! stdin; each outgoing message is ONE line written under one lock, so
//! stdout carries JSON-RPC only. A tool result whose body the tool wrote as
//! JSON text reaches this transport [`carry`]-marked, and its text is
//! written in place (decision `read-doc-writes-its-answer`).

use std::io::{self, BufRead, Read, Write};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, GetMeta, JsonRpcMessage, ServerJsonRpcMessage,
    ServerResult,
};
use rmcp::service::RoleServer;
use rmcp::transport::Transport;
use serde_json::{json, Value};
use tokio::sync::mpsc;

/// Longest accepted request line (bytes, without the newline): rmcp's
/// `DEFAULT_MAX_LINE_LENGTH`.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// A line buffer shrinks back to this after a bigger (huge) line.
const KEEP_CAPACITY: usize = 1024 * 1024;

/// What to do with one input line.
#[derive(Debug)]
pub enum Inbound {
    /// A valid message for rmcp.
    Message(Box<ClientJsonRpcMessage>),
    /// Answer with this JSON-RPC error response; rmcp never sees the line.
    Reply(Value),
    /// No reply; the reason goes to the notices (`noma mcp`: stderr).
    Drop(String),
    /// A blank line.
    Skip,
}

/// A JSON-RPC 2.0 `-32600` (Invalid Request) response.
fn invalid_request(id: Value, message: String) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32600, "message": message}})
}

/// Classifies one line (without its newline).
pub fn classify(line: &[u8]) -> Inbound {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Inbound::Skip;
    }
    let err = match serde_json::from_slice::<ClientJsonRpcMessage>(line) {
        Ok(msg) => return Inbound::Message(Box::new(msg)),
        Err(e) => e,
    };
    let Ok(value) = serde_json::from_slice::<Value>(line) else {
        return Inbound::Drop(format!("a line that is not JSON ({err})"));
    };
    let Some(obj) = value.as_object() else {
        let why = "one JSON-RPC object per line (JSON-RPC batches are not accepted)";
        return Inbound::Reply(invalid_request(
            Value::Null,
            format!("Invalid Request: {why}"),
        ));
    };
    let id = match obj.get("id") {
        Some(v @ (Value::String(_) | Value::Number(_))) => v.clone(),
        // A notification is never answered, however broken.
        None if obj.contains_key("method") => {
            return Inbound::Drop(format!("a malformed notification ({err})"))
        }
        _ => Value::Null,
    };
    Inbound::Reply(invalid_request(id, format!("Invalid Request: {err}")))
}

/// Reads newline-terminated lines of at most `max` bytes from `input` and
/// hands each to `sink` (an oversized line as `Err(its length)`, read past
/// without being buffered), until EOF, a read error, or `sink` returns false.
pub fn read_lines<R: BufRead>(
    mut input: R,
    max: usize,
    mut sink: impl FnMut(Result<&[u8], usize>) -> bool,
) -> io::Result<()> {
    let mut line: Vec<u8> = Vec::new();
    loop {
        line.clear();
        line.shrink_to(KEEP_CAPACITY);
        let limit = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
        if input.by_ref().take(limit).read_until(b'\n', &mut line)? == 0 {
            return Ok(());
        }
        let got = if line.last() == Some(&b'\n') {
            line.pop();
            Ok(&line[..])
        } else if line.len() > max {
            let rest = input.skip_until(b'\n')?;
            Err(line.len() + rest.saturating_sub(1))
        } else {
            // EOF: an unterminated last line is still a line.
            Ok(&line[..])
        };
        if !sink(got) {
            return Ok(());
        }
    }
}

/// Where every outgoing line goes: stdout, shared by rmcp's sends and the
/// reader thread's replies.
type Out = Arc<Mutex<dyn Write + Send>>;

/// Writes one message as one line, flushed. A blocking write is the
/// backpressure: nothing queues up while the client does not read.
fn write_line<T: serde::Serialize>(out: &Out, msg: &T) -> io::Result<()> {
    let mut line = serde_json::to_vec(msg).map_err(io::Error::other)?;
    line.push(b'\n');
    write_bytes(out, &line)
}

/// Writes one whole line under the lock, flushed.
fn write_bytes(out: &Out, line: &[u8]) -> io::Result<()> {
    let mut out = out.lock().unwrap_or_else(PoisonError::into_inner);
    out.write_all(line).and_then(|()| out.flush())
}

/// This process's mark of a carried body: random, so that no text a client
/// or a document supplies can be taken for one.
fn mark() -> &'static str {
    static MARK: OnceLock<String> = OnceLock::new();
    MARK.get_or_init(|| {
        use std::hash::{BuildHasher, Hasher};
        let random = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        format!("noma-carried-json-{random:016x}")
    })
}

/// A `structuredContent` that is JSON text this crate wrote (`json`, one
/// object), carried to [`LineTransport`], which writes it as it is instead
/// of serializing a [`Value`] tree of it.
pub fn carry(json: String) -> Value {
    let mark = mark();
    let mut carried = String::with_capacity(mark.len() + json.len());
    carried.push_str(mark);
    carried.push_str(&json);
    Value::String(carried)
}

/// Takes a carried body ([`carry`]) out of `msg`, leaving the mark in its
/// place.
fn take_carried(msg: &mut ServerJsonRpcMessage) -> Option<String> {
    let JsonRpcMessage::Response(response) = msg else {
        return None;
    };
    let ServerResult::CallToolResult(result) = &mut response.result else {
        return None;
    };
    match &mut result.structured_content {
        Some(Value::String(s)) if s.starts_with(mark()) => {
            Some(std::mem::replace(s, mark().to_string()))
        }
        _ => None,
    }
}

/// `msg` as one line, a carried body written in place of its mark.
fn message_line(mut msg: ServerJsonRpcMessage) -> io::Result<Vec<u8>> {
    let carried = take_carried(&mut msg);
    let line = serde_json::to_vec(&msg).map_err(io::Error::other)?;
    let Some(carried) = carried else {
        let mut line = line;
        line.push(b'\n');
        return Ok(line);
    };
    let json = &carried.as_bytes()[mark().len()..];
    // The mark is a JSON string needing no escapes, and no other string
    // holds it (it is random), so its quoted form occurs exactly once.
    let quoted = format!("\"{}\"", mark());
    let at = memchr::memmem::rfind(&line, quoted.as_bytes())
        .ok_or_else(|| io::Error::other("a carried body lost its place"))?;
    let mut out = Vec::with_capacity(line.len() + json.len() + 1);
    out.extend_from_slice(&line[..at]);
    out.extend_from_slice(json);
    out.extend_from_slice(&line[at + quoted.len()..]);
    out.push(b'\n');
    Ok(out)
}

/// The rmcp side of the framing: messages in from the reader thread, lines
/// out to stdout.
pub struct LineTransport {
    inbound: mpsc::Receiver<ClientJsonRpcMessage>,
    out: Out,
}

impl Transport<RoleServer> for LineTransport {
    type Error = io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        std::future::ready(message_line(item).and_then(|line| write_bytes(&self.out, &line)))
    }

    fn receive(
        &mut self,
    ) -> impl std::future::Future<Output = Option<ClientJsonRpcMessage>> + Send {
        self.inbound.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inbound.close();
        Ok(())
    }
}

/// The reader thread's side: classifies each line and keeps the
/// before-`initialize` rule (see the module docs).
struct Reader {
    to_rmcp: mpsc::Sender<ClientJsonRpcMessage>,
    out: Out,
    notices: crate::Notices,
    /// A request that starts the session went to rmcp.
    started: bool,
}

impl Reader {
    /// Handles one line; false once rmcp or stdout is gone.
    fn line(&mut self, line: Result<&[u8], usize>) -> bool {
        let inbound = match line {
            Ok(bytes) => classify(bytes),
            Err(len) => Inbound::Drop(format!("a line of {len} bytes (limit {MAX_LINE})")),
        };
        match inbound {
            Inbound::Message(m) if !self.started && !self.starts(&m) => {
                self.notices.say("dropped a message sent before initialize");
                true
            }
            Inbound::Message(m) => self.to_rmcp.blocking_send(*m).is_ok(),
            Inbound::Reply(v) => write_line(&self.out, &v).is_ok(),
            Inbound::Drop(what) => {
                self.notices.say(&format!("dropped {what}; no reply"));
                true
            }
            Inbound::Skip => true,
        }
    }

    /// Before the session starts, whether `msg` may reach rmcp: requests
    /// only; `initialize` (or a request carrying its revision in `_meta`)
    /// starts the session.
    fn starts(&mut self, msg: &ClientJsonRpcMessage) -> bool {
        let ClientJsonRpcMessage::Request(req) = msg else {
            return false;
        };
        self.started = match &req.request {
            ClientRequest::InitializeRequest(_) => true,
            ClientRequest::PingRequest(_) => false,
            r => r.get_meta().protocol_version().is_some(),
        };
        true
    }
}

/// Starts the reader thread on `input` and returns the transport to give
/// rmcp, writing to `output`. The reader's EOF ends rmcp's receive loop: a
/// clean shutdown.
pub fn spawn<R, W>(input: R, output: W, notices: crate::Notices) -> io::Result<LineTransport>
where
    R: BufRead + Send + 'static,
    W: Write + Send + 'static,
{
    let out: Out = Arc::new(Mutex::new(output));
    // Small bound: the reader waits while rmcp is busy instead of queueing
    // an unbounded backlog of parsed requests.
    let (to_rmcp, inbound) = mpsc::channel::<ClientJsonRpcMessage>(16);
    let mut reader = Reader {
        to_rmcp,
        out: out.clone(),
        notices,
        started: false,
    };
    std::thread::Builder::new()
        .name("mcp-stdin".into())
        .spawn(move || {
            if let Err(e) = read_lines(input, MAX_LINE, |line| reader.line(line)) {
                reader.notices.say(&format!("reading stdin: {e}"));
            }
        })?;
    Ok(LineTransport { inbound, out })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `classify` makes of a line, in one word or its answer.
    fn kind(line: &[u8]) -> String {
        match classify(line) {
            Inbound::Message(_) => "message".into(),
            Inbound::Reply(v) => format!("{} {}", v["error"]["code"], v["id"]),
            Inbound::Drop(why) => why.split(" (").next().unwrap().into(),
            Inbound::Skip => "skip".into(),
        }
    }

    #[test]
    fn what_each_line_becomes() {
        let cases: &[(&[u8], &str)] = &[
            (br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#, "message"),
            // Unknown methods go to rmcp, which answers -32601.
            (br#"{"jsonrpc":"2.0","id":1,"method":"no/such"}"#, "message"),
            (b"  \r", "skip"),
            (
                br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
                "-32600 null",
            ),
            (br#"{"id":3}"#, "-32600 3"),
            (br#"{"jsonrpc":"1.0","id":"x"}"#, "-32600 \"x\""),
            (br#"{"method":"x"}"#, "a malformed notification"),
        ];
        let not_json = "a line that is not JSON";
        for bad in [
            &b"{"[..],
            b"\xEF\xBB\xBFnot json",
            b"{\"id\":5,",
            b"\xff\xfe",
        ] {
            assert_eq!(kind(bad), not_json, "{}", String::from_utf8_lossy(bad));
        }
        assert_eq!(kind(br#"{"id":9,"s":"\ud800"}"#), not_json);
        for (line, want) in cases {
            assert_eq!(kind(line), *want, "{}", String::from_utf8_lossy(line));
        }
        // Notifications are never answered, however broken.
        for n in [
            &br#"{"jsonrpc":"2.0","method":"tools/call","params":5}"#[..],
            br#"{"jsonrpc":"2.0","method":"notifications/initialized","params":[1]}"#,
        ] {
            assert!(!kind(n).starts_with('-'), "{}", kind(n));
        }
    }

    /// A tool-call response around `structured`, with `text` as content.
    fn response(text: &str, structured: Value) -> ServerJsonRpcMessage {
        let mut result =
            rmcp::model::CallToolResult::success(vec![rmcp::model::ContentBlock::text(text)]);
        result.structured_content = Some(structured);
        result.is_error = Some(false);
        let msg = json!({"jsonrpc": "2.0", "id": "r1", "result": result});
        serde_json::from_value(msg).unwrap()
    }

    #[test]
    fn a_carried_body_is_written_where_its_value_would_be() {
        let body = r#"{"blocks":[{"type":"list","lines":[1,2]}],"note":"\"q\" \u0001"}"#;
        let value: Value = serde_json::from_str(body).unwrap();
        // The text copy quotes the body, and the client's text may look
        // like anything; only the carried value is replaced.
        for text in [body, "short", "\"noma-carried-json-0\""] {
            let want = message_line(response(text, value.clone())).unwrap();
            let got = message_line(response(text, carry(body.to_string()))).unwrap();
            assert_eq!(
                String::from_utf8(got).unwrap(),
                String::from_utf8(want).unwrap()
            );
        }
        // A string body without this process's mark is written as a string.
        let plain = Value::String(format!("{}x", &mark()[..10]));
        let line = message_line(response("t", plain.clone())).unwrap();
        let back: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(back["result"]["structuredContent"], plain);
        assert!(line.ends_with(b"}\n") && line.iter().filter(|&&b| b == b'\n').count() == 1);
    }

    #[test]
    fn lines_are_bounded_and_reading_resumes_after_an_oversized_one() {
        let input = b"abc\n0123456789\nxy\r\n012345\ntail".to_vec();
        let mut got = Vec::new();
        read_lines(io::BufReader::with_capacity(4, &input[..]), 5, |l| {
            got.push(l.map(<[u8]>::to_vec));
            got.len() < 4
        })
        .unwrap();
        let want = [Ok(b"abc".to_vec()), Err(10), Ok(b"xy\r".to_vec()), Err(6)];
        assert_eq!(got, want);
        got.clear();
        read_lines(&b"ab\nlast"[..], 5, |l| {
            got.push(l.map(<[u8]>::to_vec));
            true
        })
        .unwrap();
        assert_eq!(got, [Ok(b"ab".to_vec()), Ok(b"last".to_vec())]);
    }
}

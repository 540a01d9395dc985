//! The stdio framing in front of `rmcp`: newline-delimited JSON-RPC on
//! stdin/stdout, with the JSON-RPC error answers rmcp's own stdio transport
//! does not give.
//!
//! Why not `rmcp::transport::stdio()`: rmcp 3.9 drops a line that is not
//! JSON without answering (its `async_rw.rs` logs "Ignoring unparsable
//! incoming message"), and answers well-formed JSON that is not a valid
//! message with `-32600` and a null id, even when the id is right there.
//! JSON-RPC 2.0 asks for `-32700` on a parse error and `-32602` on invalid
//! params, and a client waiting on an id needs the answer to carry it. So
//! each line is classified here ([`classify`]); only valid messages reach
//! rmcp, everything else is answered directly.
//!
//! Threads: one reads stdin (blocking reads, bounded lines), one writes
//! stdout. Every outgoing message, rmcp's or ours, goes through the writer
//! as ONE line, so stdout carries whole JSON-RPC lines and nothing else.
//! A line longer than [`MAX_LINE`] is skipped without being buffered and
//! answered with `-32600`; the id cannot be known without reading it.

use std::io::{self, BufRead, Write};
use std::sync::mpsc as std_mpsc;

use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ServerJsonRpcMessage};
use rmcp::service::RoleServer;
use rmcp::transport::Transport;
use serde_json::{json, Value};
use tokio::sync::mpsc;

/// Longest accepted request line (bytes, without the newline).
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// Buffers above this size are released after their line is handled, so
/// one huge request does not pin its memory for the whole session.
const KEEP_CAPACITY: usize = 1024 * 1024;

/// JSON-RPC error codes answered by the framing layer.
pub mod code {
    /// Invalid JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// Not a valid request object.
    pub const INVALID_REQUEST: i64 = -32600;
    /// Valid request, invalid parameters.
    pub const INVALID_PARAMS: i64 = -32602;
}

/// What to do with one input line.
#[derive(Debug)]
pub enum Inbound {
    /// A valid message for rmcp.
    Message(Box<ClientJsonRpcMessage>),
    /// Answer with this JSON-RPC error response; rmcp never sees the line.
    Reply(Value),
    /// Nothing to do (blank line, or a malformed notification: no answer is
    /// allowed for notifications).
    Skip,
}

/// A JSON-RPC 2.0 error response.
pub fn error_response(id: Value, code: i64, message: impl Into<String>) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message.into()}})
}

/// Methods rmcp routes to a typed request. A request naming one of them that
/// does not deserialise has bad params (an unknown method would have become
/// a `CustomRequest` and been answered `-32601` by rmcp).
const TYPED_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "tools/call",
    "tools/list",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "resources/templates/list",
    "completion/complete",
    "logging/setLevel",
];

/// Classifies one line (without its newline).
pub fn classify(line: &[u8]) -> Inbound {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Inbound::Skip;
    }
    match serde_json::from_slice::<ClientJsonRpcMessage>(line) {
        Ok(msg) => check_typed(msg),
        Err(e) if e.is_syntax() || e.is_eof() => Inbound::Reply(error_response(
            Value::Null,
            code::PARSE_ERROR,
            format!("Parse error: {e}"),
        )),
        Err(e) => shape_error(line, &e),
    }
}

/// rmcp deserialises client requests as an untagged union whose last member
/// takes any method, so `tools/call` without `params` would arrive as a
/// custom request and be answered "method not found". Catch that here.
fn check_typed(msg: ClientJsonRpcMessage) -> Inbound {
    if let ClientJsonRpcMessage::Request(req) = &msg {
        if let ClientRequest::CustomRequest(custom) = &req.request {
            if TYPED_METHODS.contains(&custom.method.as_str()) {
                let id = serde_json::to_value(&req.id).unwrap_or(Value::Null);
                return Inbound::Reply(error_response(
                    id,
                    code::INVALID_PARAMS,
                    format!("Invalid params for {}: missing or malformed", custom.method),
                ));
            }
        }
    }
    Inbound::Message(Box::new(msg))
}

/// Well-formed JSON that is not a valid message: answer with the request's
/// own id when it has one.
fn shape_error(line: &[u8], err: &serde_json::Error) -> Inbound {
    let Ok(value) = serde_json::from_slice::<Value>(line) else {
        return Inbound::Reply(error_response(
            Value::Null,
            code::INVALID_REQUEST,
            "Invalid Request",
        ));
    };
    let Some(obj) = value.as_object() else {
        // Arrays are JSON-RPC batches, which MCP does not use.
        return Inbound::Reply(error_response(
            Value::Null,
            code::INVALID_REQUEST,
            "Invalid Request: expected one JSON-RPC object per line",
        ));
    };
    let id = match obj.get("id") {
        Some(v @ (Value::String(_) | Value::Number(_))) => Some(v.clone()),
        _ => None,
    };
    let method = obj.get("method").and_then(Value::as_str);
    match (id, method) {
        (None, Some(_)) if !obj.contains_key("id") => Inbound::Skip,
        (Some(id), Some(m))
            if obj.get("jsonrpc").and_then(Value::as_str) == Some("2.0")
                && TYPED_METHODS.contains(&m) =>
        {
            Inbound::Reply(error_response(
                id,
                code::INVALID_PARAMS,
                format!("Invalid params for {m}: {err}"),
            ))
        }
        (id, _) => Inbound::Reply(error_response(
            id.unwrap_or(Value::Null),
            code::INVALID_REQUEST,
            format!("Invalid Request: {err}"),
        )),
    }
}

/// Reads newline-terminated lines of at most `max` bytes from `input` and
/// hands each to `sink` (oversized lines as `Err(len_seen)`), until EOF, a
/// read error, or `sink` returns false.
pub fn read_lines<R: BufRead>(
    mut input: R,
    max: usize,
    mut sink: impl FnMut(Result<&[u8], usize>) -> bool,
) -> io::Result<()> {
    let mut line: Vec<u8> = Vec::new();
    let mut discarding: Option<usize> = None;
    loop {
        let (used, done) = {
            let buf = match input.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if buf.is_empty() {
                // EOF: an unterminated last line is still a line.
                if !line.is_empty() && discarding.is_none() {
                    sink(Ok(&line));
                }
                return Ok(());
            }
            let nl = memchr::memchr(b'\n', buf);
            let take = nl.map_or(buf.len(), |i| i + 1);
            let chunk = &buf[..nl.unwrap_or(buf.len())];
            if let Some(seen) = discarding.as_mut() {
                *seen = seen.saturating_add(chunk.len());
            } else if line.len().saturating_add(chunk.len()) > max {
                discarding = Some(line.len() + chunk.len());
                line = Vec::new();
            } else {
                line.extend_from_slice(chunk);
            }
            (take, nl.is_some())
        };
        input.consume(used);
        if done {
            let go_on = match discarding.take() {
                Some(seen) => sink(Err(seen)),
                None => sink(Ok(&line)),
            };
            if !go_on {
                return Ok(());
            }
            line.clear();
            if line.capacity() > KEEP_CAPACITY {
                line = Vec::new();
            }
        }
    }
}

/// Serialises one message as a line.
fn encode<T: serde::Serialize>(msg: &T) -> io::Result<Vec<u8>> {
    let mut out = serde_json::to_vec(msg).map_err(io::Error::other)?;
    out.push(b'\n');
    Ok(out)
}

/// The rmcp side of the framing: messages in from the reader thread,
/// lines out to the writer thread.
pub struct LineTransport {
    inbound: mpsc::Receiver<ClientJsonRpcMessage>,
    out: std_mpsc::Sender<Vec<u8>>,
}

impl Transport<RoleServer> for LineTransport {
    type Error = io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        let sent = encode(&item).and_then(|line| {
            self.out
                .send(line)
                .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "stdout is closed"))
        });
        std::future::ready(sent)
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

/// Handles to the two I/O threads.
pub struct Stdio {
    /// Give this to rmcp.
    pub transport: LineTransport,
    /// The writer thread; it ends once every sender is dropped.
    pub writer: std::thread::JoinHandle<()>,
}

/// Starts the reader (on `input`) and writer (on `output`) threads.
pub fn spawn<R, W>(input: R, output: W) -> io::Result<Stdio>
where
    R: BufRead + Send + 'static,
    W: Write + Send + 'static,
{
    let (out_tx, out_rx) = std_mpsc::channel::<Vec<u8>>();
    // Small bound: the reader waits while rmcp is busy instead of queueing
    // an unbounded backlog of parsed requests.
    let (in_tx, in_rx) = mpsc::channel::<ClientJsonRpcMessage>(16);
    let writer = std::thread::Builder::new()
        .name("mcp-stdout".into())
        .spawn(move || write_loop(output, out_rx))?;
    let replies = out_tx.clone();
    std::thread::Builder::new()
        .name("mcp-stdin".into())
        .spawn(move || {
            let result = read_lines(input, MAX_LINE, |line| match line {
                Ok(bytes) => match classify(bytes) {
                    Inbound::Message(m) => in_tx.blocking_send(*m).is_ok(),
                    Inbound::Reply(v) => send_value(&replies, &v),
                    Inbound::Skip => true,
                },
                Err(len) => {
                    eprintln!("noma mcp: dropped a request line of {len} bytes (limit {MAX_LINE})");
                    send_value(
                        &replies,
                        &error_response(
                            Value::Null,
                            code::INVALID_REQUEST,
                            format!("Invalid Request: line longer than {MAX_LINE} bytes"),
                        ),
                    )
                }
            });
            if let Err(e) = result {
                eprintln!("noma mcp: reading stdin: {e}");
            }
            // Dropping in_tx ends rmcp's receive loop: EOF is a clean shutdown.
        })?;
    Ok(Stdio {
        transport: LineTransport {
            inbound: in_rx,
            out: out_tx,
        },
        writer,
    })
}

fn send_value(out: &std_mpsc::Sender<Vec<u8>>, v: &Value) -> bool {
    match encode(v) {
        Ok(line) => out.send(line).is_ok(),
        Err(_) => true,
    }
}

fn write_loop<W: Write>(mut output: W, lines: std_mpsc::Receiver<Vec<u8>>) {
    for line in lines {
        // A closed stdout means the client is gone; stop and let the
        // senders see the disconnect.
        if output
            .write_all(&line)
            .and_then(|()| output.flush())
            .is_err()
        {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply_code(i: Inbound) -> (Value, i64) {
        match i {
            Inbound::Reply(v) => (v["id"].clone(), v["error"]["code"].as_i64().unwrap()),
            other => panic!("expected a reply, got {other:?}"),
        }
    }

    #[test]
    fn parse_errors_get_32700_with_null_id() {
        for bad in [
            &b"{"[..],
            b"not json",
            b"{\"jsonrpc\":\"2.0\",",
            b"\xff\xfe",
        ] {
            assert_eq!(reply_code(classify(bad)), (Value::Null, -32700), "{bad:?}");
        }
    }

    #[test]
    fn shape_errors_keep_the_id() {
        // tools/call without params: rmcp would call it a custom request.
        let (id, c) = reply_code(classify(
            br#"{"jsonrpc":"2.0","id":7,"method":"tools/call"}"#,
        ));
        assert_eq!((id, c), (json!(7), -32602));
        let (id, c) = reply_code(classify(
            br#"{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"arguments":{}}}"#,
        ));
        assert_eq!((id, c), (json!("x"), -32602));
        let (id, c) = reply_code(classify(br#"[1,2]"#));
        assert_eq!((id, c), (Value::Null, -32600));
        let (_, c) = reply_code(classify(br#"{"id":3}"#));
        assert_eq!(c, -32600);
    }

    #[test]
    fn valid_messages_and_blank_lines() {
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
            Inbound::Message(_)
        ));
        // Unknown methods go to rmcp, which answers -32601.
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","id":1,"method":"no/such"}"#),
            Inbound::Message(_)
        ));
        assert!(matches!(classify(b"  \r"), Inbound::Skip));
        // Notifications are never answered, however broken.
        for n in [
            &br#"{"jsonrpc":"2.0","method":"tools/call","params":5}"#[..],
            br#"{"jsonrpc":"2.0","method":"notifications/initialized","params":[1]}"#,
            br#"{"method":"x"}"#,
        ] {
            assert!(
                !matches!(classify(n), Inbound::Reply(_)),
                "{}",
                String::from_utf8_lossy(n)
            );
        }
    }

    #[test]
    fn lines_are_bounded_and_reading_resumes_after_an_oversized_one() {
        let input = b"abc\n0123456789\nxy\r\ntail".to_vec();
        let mut got = Vec::new();
        read_lines(io::BufReader::with_capacity(4, &input[..]), 5, |l| {
            got.push(l.map(<[u8]>::to_vec));
            true
        })
        .unwrap();
        assert_eq!(
            got,
            vec![
                Ok(b"abc".to_vec()),
                Err(10),
                Ok(b"xy\r".to_vec()),
                Ok(b"tail".to_vec())
            ]
        );
    }

    #[test]
    fn sink_can_stop_reading() {
        let mut n = 0;
        read_lines(&b"a\nb\nc\n"[..], 10, |_| {
            n += 1;
            n < 2
        })
        .unwrap();
        assert_eq!(n, 2);
    }
}

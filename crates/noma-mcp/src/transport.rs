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
//! A line longer than [`MAX_LINE`] is not buffered: its bytes stream through
//! an [`IdScanner`] that picks out the top-level `"id"` member wherever it
//! sits (the TypeScript SDK writes `id` after `params`), and the line is
//! answered with `-32600` carrying that id, so the client's pending request
//! ends at once instead of at its timeout. Only when the id cannot be read
//! (not an object, no `id`, an id that is not a string or number, or the
//! line is not well-formed up to it) is the answer's id `null`.
//!
//! The framing also keeps two rules of the session that rmcp does not:
//!
//! - Before `initialize`, only `ping` (and a request carrying its protocol
//!   revision inline in `_meta`, the later revisions' way) goes to rmcp;
//!   any other request is answered `-32600` saying the session starts with
//!   `initialize`, and notifications are dropped (rmcp would end the session
//!   on them).
//! - A JSON array is a JSON-RPC batch. MCP 2025-03-26 requires servers to
//!   accept them (later revisions removed them): on a session that
//!   negotiated 2025-03-26, each member is handled as its own message and
//!   the answers go out together as one array line once all have arrived
//!   (none for a batch of notifications). On any other session a batch is
//!   refused with `-32600`.

use std::io::{self, BufRead, Write};
use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, GetMeta, ServerJsonRpcMessage, ServerResult,
};
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
        Err(e) if e.is_syntax() || e.is_eof() => {
            // A line that is JSON but for one bad escape (a lone surrogate,
            // say) still names its id: answering with it lets the client
            // match the error to its request instead of waiting for a
            // timeout, as for an oversized line.
            let mut ids = IdScanner::new();
            ids.feed(line);
            Inbound::Reply(error_response(
                ids.id().unwrap_or(Value::Null),
                code::PARSE_ERROR,
                format!("Parse error: {e}"),
            ))
        }
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

/// A line longer than the limit: how long it was and the request id read
/// from it, if any.
#[derive(Debug, Clone, PartialEq)]
pub struct Oversized {
    /// Bytes seen (without the newline).
    pub len: usize,
    /// The top-level `"id"` member (a string or a number), when readable.
    pub id: Option<Value>,
}

/// Streams the bytes of one JSON-RPC line and keeps the value of its
/// top-level `"id"` member, without buffering the line: it tracks nesting
/// depth and strings only, and captures at most [`IdScanner::MAX_ID`] bytes
/// of the id's value. Escapes inside the key are not decoded (`"\u0069d"`
/// is not taken for `"id"`); a duplicate `id` key keeps the first.
#[derive(Debug, Default)]
pub struct IdScanner {
    started: bool,
    dead: bool,
    depth: usize,
    in_str: bool,
    esc: bool,
    expect_key: bool,
    key: Option<Vec<u8>>,
    last_key_is_id: bool,
    value: Option<Vec<u8>>,
    id: Option<Value>,
}

impl IdScanner {
    /// Longest id value kept (bytes of its JSON text).
    pub const MAX_ID: usize = 1024;

    /// A scanner at the start of a line.
    pub fn new() -> IdScanner {
        IdScanner::default()
    }

    /// Feeds the next bytes of the line.
    pub fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.dead || self.id.is_some() {
                return;
            }
            self.step(b);
        }
    }

    /// The id, once found.
    pub fn id(&self) -> Option<Value> {
        self.id.clone()
    }

    fn step(&mut self, b: u8) {
        if !self.started {
            self.start(b);
            return;
        }
        if let Some(v) = self.value.as_mut() {
            if v.len() >= Self::MAX_ID {
                self.dead = true;
                return;
            }
        }
        if self.in_str {
            self.string_byte(b);
            return;
        }
        match b {
            b'"' => {
                self.in_str = true;
                if self.depth == 1 && self.expect_key {
                    self.key = Some(Vec::new());
                    self.expect_key = false;
                } else {
                    self.capture(b);
                }
            }
            b':' if self.depth == 1 => {
                if self.last_key_is_id {
                    self.value = Some(Vec::new());
                }
                self.last_key_is_id = false;
            }
            b',' | b'}' if self.depth == 1 => {
                if let Some(v) = self.value.take() {
                    // Only a string or a number is an id; the first `id` wins.
                    match serde_json::from_slice::<Value>(&v) {
                        Ok(id @ (Value::String(_) | Value::Number(_))) => self.id = Some(id),
                        _ => self.dead = true,
                    }
                    return;
                }
                if b == b'}' {
                    self.depth = 0;
                    self.dead = true;
                } else {
                    self.expect_key = true;
                }
            }
            b'{' | b'[' => {
                self.capture(b);
                self.depth += 1;
            }
            b'}' | b']' => {
                self.capture(b);
                self.depth = self.depth.saturating_sub(1);
            }
            _ => self.capture(b),
        }
    }

    /// A byte before the object: leading whitespace (and a BOM) is
    /// skipped, anything but `{` ends the scan.
    fn start(&mut self, b: u8) {
        if b.is_ascii_whitespace() || matches!(b, 0xEF | 0xBB | 0xBF) {
            return;
        }
        self.started = true;
        if b != b'{' {
            self.dead = true;
            return;
        }
        self.depth = 1;
        self.expect_key = true;
    }

    /// A byte inside a string: escapes, the closing quote (which settles
    /// whether a key was `id`), and a key's first bytes.
    fn string_byte(&mut self, b: u8) {
        self.capture(b);
        if self.esc {
            self.esc = false;
        } else if b == b'\\' {
            self.esc = true;
        } else if b == b'"' {
            self.in_str = false;
            if let Some(key) = self.key.take() {
                self.last_key_is_id = key == b"id";
            }
        } else if let Some(key) = self.key.as_mut() {
            // Three bytes are enough to tell `id` from anything else.
            if key.len() < 3 {
                key.push(b);
            }
        }
    }

    /// Appends to the id's value text while it is being read.
    fn capture(&mut self, b: u8) {
        if let Some(v) = self.value.as_mut() {
            v.push(b);
        }
    }
}

/// Reads newline-terminated lines of at most `max` bytes from `input` and
/// hands each to `sink` (oversized lines as `Err`, with the id read from
/// them), until EOF, a read error, or `sink` returns false.
pub fn read_lines<R: BufRead>(
    mut input: R,
    max: usize,
    mut sink: impl FnMut(Result<&[u8], Oversized>) -> bool,
) -> io::Result<()> {
    let mut line: Vec<u8> = Vec::new();
    let mut discarding: Option<(usize, IdScanner)> = None;
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
            if let Some((seen, scanner)) = discarding.as_mut() {
                *seen = seen.saturating_add(chunk.len());
                scanner.feed(chunk);
            } else if line.len().saturating_add(chunk.len()) > max {
                let mut scanner = IdScanner::new();
                scanner.feed(&line);
                scanner.feed(chunk);
                discarding = Some((line.len() + chunk.len(), scanner));
                line = Vec::new();
            } else {
                line.extend_from_slice(chunk);
            }
            (take, nl.is_some())
        };
        input.consume(used);
        if done {
            let go_on = match discarding.take() {
                Some((len, scanner)) => sink(Err(Oversized {
                    len,
                    id: scanner.id(),
                })),
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

/// The only MCP revision with JSON-RPC batches.
pub const BATCH_REVISION: &str = "2025-03-26";

/// What the framing knows of the session, shared by the reader thread and
/// rmcp's sends: the negotiated revision and the batches awaiting answers.
#[derive(Debug, Default)]
pub struct Session {
    version: Mutex<Option<String>>,
    batches: Mutex<Vec<Batch>>,
}

/// A batch whose requests are still being answered.
#[derive(Debug)]
struct Batch {
    /// Ids of its requests not answered yet.
    waiting: Vec<Value>,
    /// Answers so far, in the order they came.
    answers: Vec<Value>,
}

/// What [`Session::collect`] did with an outgoing message.
#[derive(Debug, PartialEq)]
pub enum Collected {
    /// Not an answer to a batch member: send it as it is.
    Pass,
    /// Kept for its batch, which still waits for other answers.
    Held,
    /// The last answer of its batch: send this array.
    Complete(Value),
}

impl Session {
    /// The revision rmcp's `initialize` answer named, once it was sent.
    pub fn version(&self) -> Option<String> {
        self.version
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Notes the negotiated revision when `msg` is the `initialize` answer.
    pub fn observe(&self, msg: &ServerJsonRpcMessage) {
        if let ServerJsonRpcMessage::Response(r) = msg {
            if let ServerResult::InitializeResult(init) = &r.result {
                *self.version.lock().unwrap_or_else(PoisonError::into_inner) =
                    Some(init.protocol_version.to_string());
            }
        }
    }

    /// Registers a batch waiting for the answers to `ids`, with the
    /// `answers` the framing already gave.
    fn hold(&self, ids: Vec<Value>, answers: Vec<Value>) {
        self.batches
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Batch {
                waiting: ids,
                answers,
            });
    }

    /// True when a pending batch waits for an answer to `id`.
    fn is_waiting(&self, id: &Value) -> bool {
        self.batches
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .any(|b| b.waiting.contains(id))
    }

    /// Routes an outgoing message: an answer to a batch member is kept
    /// until the whole batch is answered. Costs nothing beyond a lock when
    /// no batch is pending.
    pub fn collect(&self, msg: &ServerJsonRpcMessage) -> io::Result<Collected> {
        let mut batches = self.batches.lock().unwrap_or_else(PoisonError::into_inner);
        if batches.is_empty() {
            return Ok(Collected::Pass);
        }
        let id = match msg {
            ServerJsonRpcMessage::Response(r) => Some(&r.id),
            ServerJsonRpcMessage::Error(e) => e.id.as_ref(),
            _ => None,
        };
        let Some(id) = id else {
            return Ok(Collected::Pass);
        };
        let id = serde_json::to_value(id).map_err(io::Error::other)?;
        let Some(i) = batches.iter().position(|b| b.waiting.contains(&id)) else {
            return Ok(Collected::Pass);
        };
        let batch = &mut batches[i];
        batch.waiting.retain(|w| *w != id);
        batch
            .answers
            .push(serde_json::to_value(msg).map_err(io::Error::other)?);
        if !batch.waiting.is_empty() {
            return Ok(Collected::Held);
        }
        Ok(Collected::Complete(Value::Array(batches.remove(i).answers)))
    }
}

/// The rmcp side of the framing: messages in from the reader thread,
/// lines out to the writer thread.
pub struct LineTransport {
    inbound: mpsc::Receiver<ClientJsonRpcMessage>,
    out: std_mpsc::Sender<Vec<u8>>,
    session: Arc<Session>,
}

impl LineTransport {
    fn deliver(&self, item: &ServerJsonRpcMessage) -> io::Result<()> {
        self.session.observe(item);
        let line = match self.session.collect(item)? {
            Collected::Pass => encode(item)?,
            Collected::Held => return Ok(()),
            Collected::Complete(batch) => encode(&batch)?,
        };
        self.out
            .send(line)
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "stdout is closed"))
    }
}

impl Transport<RoleServer> for LineTransport {
    type Error = io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        std::future::ready(self.deliver(&item))
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

/// The reader thread's side: classifies each line, keeps the
/// before-`initialize` rule and splits batches.
struct Reader {
    to_rmcp: mpsc::Sender<ClientJsonRpcMessage>,
    replies: std_mpsc::Sender<Vec<u8>>,
    session: Arc<Session>,
    /// An `initialize` request went to rmcp.
    initialize_seen: bool,
}

impl Reader {
    /// Handles one line; false once rmcp or stdout is gone.
    fn line(&mut self, bytes: &[u8]) -> bool {
        if first_byte(bytes) == Some(b'[') {
            return self.batch(bytes);
        }
        match self.gate(classify(bytes)) {
            Inbound::Message(m) => self.to_rmcp.blocking_send(*m).is_ok(),
            Inbound::Reply(v) => send_value(&self.replies, &v),
            Inbound::Skip => true,
        }
    }

    /// The before-`initialize` rule (see the module docs).
    fn gate(&mut self, inbound: Inbound) -> Inbound {
        if self.initialize_seen {
            return inbound;
        }
        let Inbound::Message(msg) = &inbound else {
            return inbound;
        };
        let ClientJsonRpcMessage::Request(req) = msg.as_ref() else {
            eprintln!("noma mcp: dropped a notification or response sent before initialize");
            return Inbound::Skip;
        };
        match &req.request {
            ClientRequest::InitializeRequest(_) => {
                self.initialize_seen = true;
                inbound
            }
            ClientRequest::PingRequest(_) => inbound,
            r if r.get_meta().protocol_version().is_some() => inbound,
            r => Inbound::Reply(error_response(
                serde_json::to_value(&req.id).unwrap_or(Value::Null),
                code::INVALID_REQUEST,
                format!(
                    "Invalid Request: {} before initialize. A session starts with an \
                     `initialize` request, then the `notifications/initialized` notification; \
                     only `ping` may come before it",
                    r.method()
                ),
            )),
        }
    }

    /// A JSON array line: a batch (see the module docs).
    fn batch(&mut self, bytes: &[u8]) -> bool {
        let version = self.session.version();
        if version.as_deref() != Some(BATCH_REVISION) {
            let session = match version {
                Some(v) => format!("this session negotiated {v}"),
                None => "this session is not initialized".to_string(),
            };
            return send_value(
                &self.replies,
                &error_response(
                    Value::Null,
                    code::INVALID_REQUEST,
                    format!(
                        "Invalid Request: a JSON-RPC batch; MCP accepts batches only in revision \
                         {BATCH_REVISION} and {session}: send one JSON-RPC object per line"
                    ),
                ),
            );
        }
        let items = match serde_json::from_slice::<Value>(bytes) {
            Ok(Value::Array(items)) => items,
            // Not well-formed: answered as any line that is not JSON.
            _ => {
                return match classify(bytes) {
                    Inbound::Reply(v) => send_value(&self.replies, &v),
                    _ => true,
                }
            }
        };
        if items.is_empty() {
            return send_value(
                &self.replies,
                &error_response(
                    Value::Null,
                    code::INVALID_REQUEST,
                    "Invalid Request: an empty batch",
                ),
            );
        }
        let (answers, waiting, messages) = self.members(items);
        if waiting.is_empty() {
            // Notifications and refused members only: answer now (nothing
            // at all for notifications alone).
            if !answers.is_empty() && !send_value(&self.replies, &Value::Array(answers)) {
                return false;
            }
        } else {
            self.session.hold(waiting, answers);
        }
        messages
            .into_iter()
            .all(|m| self.to_rmcp.blocking_send(*m).is_ok())
    }

    /// Sorts a batch's members: the answers due now (members that are no
    /// JSON-RPC object, an `initialize`, an id already waiting, protocol
    /// errors), the request ids that wait for rmcp's answers, and the
    /// messages to hand rmcp.
    fn members(&self, items: Vec<Value>) -> BatchMembers {
        let mut answers = Vec::new();
        let mut waiting: Vec<Value> = Vec::new();
        let mut messages = Vec::new();
        for item in items {
            if !item.is_object() {
                answers.push(error_response(
                    Value::Null,
                    code::INVALID_REQUEST,
                    "Invalid Request: a batch member is not a JSON-RPC object",
                ));
                continue;
            }
            let text = serde_json::to_vec(&item).unwrap_or_default();
            match classify(&text) {
                Inbound::Reply(v) => answers.push(v),
                Inbound::Skip => {}
                Inbound::Message(m) => {
                    if let ClientJsonRpcMessage::Request(req) = m.as_ref() {
                        let id = serde_json::to_value(&req.id).unwrap_or(Value::Null);
                        let refusal = if matches!(req.request, ClientRequest::InitializeRequest(_))
                        {
                            Some("initialize must not be part of a batch")
                        } else if waiting.contains(&id) || self.session.is_waiting(&id) {
                            Some("this id is already waiting for an answer")
                        } else {
                            None
                        };
                        if let Some(why) = refusal {
                            answers.push(error_response(
                                id,
                                code::INVALID_REQUEST,
                                format!("Invalid Request: {why}"),
                            ));
                            continue;
                        }
                        waiting.push(id);
                    }
                    messages.push(m);
                }
            }
        }
        (answers, waiting, messages)
    }
}

/// A batch's members, sorted: answers due now, ids waiting, messages for
/// rmcp.
type BatchMembers = (Vec<Value>, Vec<Value>, Vec<Box<ClientJsonRpcMessage>>);

/// The first byte that is not whitespace or a BOM byte.
fn first_byte(bytes: &[u8]) -> Option<u8> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    bytes.iter().copied().find(|b| !b.is_ascii_whitespace())
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
    let session = Arc::new(Session::default());
    let mut reader = Reader {
        to_rmcp: in_tx,
        replies: out_tx.clone(),
        session: session.clone(),
        initialize_seen: false,
    };
    std::thread::Builder::new()
        .name("mcp-stdin".into())
        .spawn(move || {
            let result = read_lines(input, MAX_LINE, |line| match line {
                Ok(bytes) => reader.line(bytes),
                Err(Oversized { len, id }) => {
                    eprintln!("noma mcp: dropped a request line of {len} bytes (limit {MAX_LINE})");
                    send_value(
                        &reader.replies,
                        &error_response(
                            id.unwrap_or(Value::Null),
                            code::INVALID_REQUEST,
                            format!("Invalid Request: line longer than {MAX_LINE} bytes"),
                        ),
                    )
                }
            });
            if let Err(e) = result {
                eprintln!("noma mcp: reading stdin: {e}");
            }
            // Dropping the reader's sender ends rmcp's receive loop: EOF is
            // a clean shutdown.
        })?;
    Ok(Stdio {
        transport: LineTransport {
            inbound: in_rx,
            out: out_tx,
            session,
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
    fn a_parse_error_in_a_request_that_names_its_id_keeps_it() {
        let line = br#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"patch_block","arguments":{"content":"\ud800"}}}"#;
        assert_eq!(reply_code(classify(line)), (Value::from(9), -32700));
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
                Err(Oversized { len: 10, id: None }),
                Ok(b"xy\r".to_vec()),
                Ok(b"tail".to_vec())
            ]
        );
    }

    fn scan(line: &[u8]) -> Option<Value> {
        let whole = {
            let mut s = IdScanner::new();
            s.feed(line);
            s.id()
        };
        // Byte-at-a-time feeding (the reader's chunks split anywhere) agrees.
        let mut s = IdScanner::new();
        for b in line {
            s.feed(std::slice::from_ref(b));
        }
        assert_eq!(s.id(), whole, "{}", String::from_utf8_lossy(line));
        whole
    }

    #[test]
    fn id_scanner_finds_the_top_level_id_anywhere() {
        let cases: &[(&[u8], Option<Value>)] = &[
            // The TypeScript SDK's order: id after params.
            (
                br#"{"method":"tools/call","params":{"name":"x","arguments":{"id":"inner","s":"}{\"id\":1"}},"jsonrpc":"2.0","id":42}"#,
                Some(json!(42)),
            ),
            (br#"{"jsonrpc":"2.0","id":"req-\"7\"","method":"x"}"#, Some(json!("req-\"7\""))),
            (b"\xEF\xBB\xBF  { \"id\" : -3.5 , \"method\":\"x\"}", Some(json!(-3.5))),
            (br#"{"params":[{"id":1}],"id":2,"id":3}"#, Some(json!(2))),
            (br#"{"method":"id","idx":1,"xid":2}"#, None),
            (br#"{"id":null,"method":"x"}"#, None),
            (br#"{"id":{"a":1}}"#, None),
            (br#"{"\u0069d":5}"#, None),
            (br#"[{"id":1}]"#, None),
            (br#"{"method":"x","params":{}}"#, None),
            // Unterminated: the id is known once its value ends.
            (br#"{"id":17,"params":{"content":"xxxxxxxx"#, Some(json!(17))),
            (br#"{"params":{"content":"xx"#, None),
        ];
        for (line, want) in cases {
            assert_eq!(&scan(line), want, "{}", String::from_utf8_lossy(line));
        }
        let long_id = format!(r#"{{"id":"{}"}}"#, "a".repeat(IdScanner::MAX_ID + 1));
        assert_eq!(scan(long_id.as_bytes()), None);
    }

    #[test]
    fn an_oversized_line_carries_its_id() {
        let big = "x".repeat(100);
        let input = format!(
            "{{\"method\":\"tools/call\",\"params\":{{\"content\":\"{big}\"}},\"jsonrpc\":\"2.0\",\"id\":9}}\n{{\"id\":\"s\",\"p\":\"{big}\"}}\n{{\"p\":\"{big}\"}}\nok\n"
        );
        let mut got = Vec::new();
        read_lines(io::BufReader::with_capacity(7, input.as_bytes()), 50, |l| {
            got.push(l.map(<[u8]>::to_vec).map_err(|o| o.id));
            true
        })
        .unwrap();
        assert_eq!(
            got,
            vec![
                Err(Some(json!(9))),
                Err(Some(json!("s"))),
                Err(None),
                Ok(b"ok".to_vec())
            ]
        );
    }

    fn answer(id: i64) -> ServerJsonRpcMessage {
        ServerJsonRpcMessage::response(
            ServerResult::EmptyResult(rmcp::model::EmptyResult {}),
            rmcp::model::NumberOrString::Number(id),
        )
    }

    #[test]
    fn batch_answers_are_held_until_the_last_and_others_pass() {
        let session = Session::default();
        // No batch pending: everything passes.
        assert_eq!(session.collect(&answer(1)).unwrap(), Collected::Pass);
        let refused = error_response(Value::Null, code::INVALID_REQUEST, "x");
        session.hold(vec![json!(1), json!(2)], vec![refused.clone()]);
        assert!(session.is_waiting(&json!(2)));
        assert_eq!(session.collect(&answer(9)).unwrap(), Collected::Pass);
        assert_eq!(session.collect(&answer(2)).unwrap(), Collected::Held);
        let Collected::Complete(batch) = session.collect(&answer(1)).unwrap() else {
            panic!("the batch is complete");
        };
        let ids: Vec<&Value> = batch.as_array().unwrap().iter().map(|a| &a["id"]).collect();
        assert_eq!(ids, [&Value::Null, &json!(2), &json!(1)]);
        // The batch is gone: a later answer with a reused id passes.
        assert_eq!(session.collect(&answer(1)).unwrap(), Collected::Pass);
        assert!(!session.is_waiting(&json!(2)));
    }

    #[test]
    fn the_negotiated_revision_is_read_from_the_initialize_answer() {
        let session = Session::default();
        session.observe(&answer(1));
        assert_eq!(session.version(), None);
        let mut info = rmcp::model::InitializeResult::default();
        info.protocol_version = rmcp::model::ProtocolVersion::V_2025_03_26;
        session.observe(&ServerJsonRpcMessage::response(
            ServerResult::InitializeResult(info),
            rmcp::model::NumberOrString::Number(1),
        ));
        assert_eq!(session.version().as_deref(), Some(BATCH_REVISION));
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

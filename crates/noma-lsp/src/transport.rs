//! The stdio transport: `Content-Length` framing read by a thread of its
//! own into the server's queue, and framed answers written back.
//!
//! `lsp-server`'s message types are kept (their serde shapes are JSON-RPC's),
//! its transport is not: it ends the session on the first frame it cannot
//! read, allocates a frame's declared length before any byte of it arrives,
//! and hands messages over a zero-capacity channel, so the server never sees
//! a backlog to coalesce. Here a malformed frame becomes an item of the
//! queue (answered or logged by the server), a frame's body grows as its
//! bytes arrive and is discarded past [`MAX_BODY`], and every frame parsed
//! from one read of the pipe enters the queue at once.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::sync::{Arc, Condvar, Mutex};

use lsp_server::{ErrorCode, Message, RequestId};
use serde_json::Value;

/// The largest body read: a frame declaring more is read and thrown away
/// as it arrives, so memory stays bounded whatever the header says.
pub(crate) const MAX_BODY: usize = 32 << 20;

/// The longest header line kept; the rest of a longer one is skipped.
const MAX_HEADER_LINE: usize = 8 << 10;

/// One item of the server's queue.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// A well-formed message.
    Message(Message),
    /// A frame whose body is no JSON-RPC message: answered with an error
    /// when it is not a notification.
    Malformed {
        /// The request's id when it could be read; `None` answers with a
        /// `null` id.
        id: Option<RequestId>,
        /// The body was a notification (it has a method and no id): it gets
        /// no answer, only a log line.
        notification: bool,
        /// `ParseError` or `InvalidRequest`.
        code: ErrorCode,
        /// What was wrong.
        message: String,
    },
    /// Bytes that were no frame (a header line, a frame without
    /// `Content-Length`, an oversized body), skipped: why.
    Skipped(String),
    /// The input ended (or failed to read: why).
    End(Option<String>),
    /// A response worked out off the message loop (a hover's history),
    /// for the server to send.
    Answer(lsp_server::Response),
}

/// The queue between the reader thread and the server.
#[derive(Default)]
pub(crate) struct Queue {
    items: Mutex<VecDeque<Incoming>>,
    ready: Condvar,
}

impl Queue {
    /// Whether nothing is waiting.
    pub(crate) fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// The next item, waiting for one.
    pub(crate) fn pop(&self) -> Incoming {
        let mut items = self.lock();
        loop {
            if let Some(item) = items.pop_front() {
                return item;
            }
            items = self
                .ready
                .wait(items)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// Appends `batch` at once: the server sees the whole of it or none.
    pub(crate) fn push_all(&self, batch: impl IntoIterator<Item = Incoming>) {
        self.lock().extend(batch);
        self.ready.notify_one();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Incoming>> {
        // The reader never panics while holding the lock; a poisoned queue
        // is still a queue.
        self.items
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Starts the thread that reads `input` into a new queue until it ends.
pub(crate) fn spawn_reader(mut input: impl Read + Send + 'static) -> Arc<Queue> {
    let queue = Arc::new(Queue::default());
    let q = Arc::clone(&queue);
    std::thread::spawn(move || {
        let mut framer = Framer::default();
        let mut buf = vec![0u8; 64 << 10];
        loop {
            match input.read(&mut buf) {
                Ok(0) => break q.push_all([Incoming::End(None)]),
                Ok(n) => {
                    let items: Vec<Incoming> = framer
                        .feed(&buf[..n])
                        .into_iter()
                        .map(|f| match f {
                            Frame::Body(body) => decode(&body),
                            Frame::Oversized { len, head } => oversized(len, &head),
                            Frame::Skipped(why) => Incoming::Skipped(why),
                        })
                        .collect();
                    if !items.is_empty() {
                        q.push_all(items);
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => break q.push_all([Incoming::End(Some(e.to_string()))]),
            }
        }
    });
    queue
}

/// What the framer makes of the bytes.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Frame {
    /// A frame's body.
    Body(Vec<u8>),
    /// Bytes skipped, and why.
    Skipped(String),
    /// A body over [`MAX_BODY`], thrown away: its declared length and its
    /// first bytes (to find the request's id in).
    Oversized {
        /// The declared length.
        len: usize,
        /// Up to [`OVERSIZED_HEAD`] first bytes.
        head: Vec<u8>,
    },
}

/// How much of an oversized body is kept to find its id.
const OVERSIZED_HEAD: usize = 4 << 10;

/// Where the framer is in the stream.
#[derive(Debug, Default)]
enum State {
    /// Reading header lines.
    #[default]
    Header,
    /// Skipping the rest of an over-long header line.
    LongLine,
    /// Reading a body of this many bytes.
    Body(usize),
    /// Throwing away the rest of an oversized body: its declared length
    /// and how many bytes are left.
    Discard(usize, usize),
}

/// `Content-Length` framing, fed bytes as they arrive.
#[derive(Debug, Default)]
pub(crate) struct Framer {
    state: State,
    /// Unconsumed bytes (a partial header line or body).
    buf: Vec<u8>,
    /// The header block's `Content-Length`, once read.
    length: Option<usize>,
    /// The header block has had a line.
    in_header: bool,
}

impl Framer {
    /// The frames (and skipped stretches) `bytes` completes.
    pub(crate) fn feed(&mut self, mut bytes: &[u8]) -> Vec<Frame> {
        let mut out = Vec::new();
        loop {
            match self.state {
                State::Discard(len, left) => {
                    let n = left.min(bytes.len());
                    let keep = OVERSIZED_HEAD.saturating_sub(self.buf.len()).min(n);
                    self.buf.extend_from_slice(&bytes[..keep]);
                    bytes = &bytes[n..];
                    if n < left {
                        self.state = State::Discard(len, left - n);
                        return out;
                    }
                    let head = std::mem::take(&mut self.buf);
                    out.push(Frame::Oversized { len, head });
                    self.state = State::Header;
                }
                State::Body(len) => {
                    let n = (len - self.buf.len()).min(bytes.len());
                    self.buf.extend_from_slice(&bytes[..n]);
                    bytes = &bytes[n..];
                    if self.buf.len() < len {
                        return out;
                    }
                    out.push(Frame::Body(std::mem::take(&mut self.buf)));
                    self.state = State::Header;
                }
                State::LongLine => match memchr::memchr(b'\n', bytes) {
                    Some(at) => {
                        bytes = &bytes[at + 1..];
                        self.state = State::Header;
                    }
                    None => return out,
                },
                State::Header => {
                    let Some(at) = memchr::memchr(b'\n', bytes) else {
                        self.buf.extend_from_slice(bytes);
                        if self.buf.len() > MAX_HEADER_LINE {
                            out.push(Frame::Skipped(format!(
                                "a header line over {MAX_HEADER_LINE} bytes"
                            )));
                            self.buf.clear();
                            self.reset_header();
                            self.state = State::LongLine;
                        }
                        return out;
                    };
                    let mut line = std::mem::take(&mut self.buf);
                    if line.len() + at > MAX_HEADER_LINE {
                        out.push(Frame::Skipped(format!(
                            "a header line over {MAX_HEADER_LINE} bytes"
                        )));
                        self.reset_header();
                    } else {
                        line.extend_from_slice(&bytes[..at]);
                        self.header_line(&line, &mut out);
                    }
                    bytes = &bytes[at + 1..];
                }
            }
        }
    }

    fn reset_header(&mut self) {
        self.length = None;
        self.in_header = false;
    }

    /// One header line (without its `\n`).
    fn header_line(&mut self, line: &[u8], out: &mut Vec<Frame>) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            match self.length.take() {
                Some(len) if len > MAX_BODY => {
                    self.buf = Vec::with_capacity(OVERSIZED_HEAD);
                    self.state = State::Discard(len, len);
                }
                Some(len) => {
                    self.buf = Vec::with_capacity(len.min(64 << 10));
                    self.state = State::Body(len);
                }
                None if self.in_header => {
                    out.push(Frame::Skipped("a header without Content-Length".into()));
                }
                // A blank line between frames.
                None => {}
            }
            self.in_header = false;
            return;
        }
        // Bytes left of a header, such as a body whose frame had no
        // Content-Length, are skipped up to the next header.
        const NAME: &[u8] = b"content-length:";
        let found = line
            .windows(NAME.len())
            .position(|w| w.eq_ignore_ascii_case(NAME));
        let line = match found {
            Some(0) => line,
            Some(at) => {
                out.push(Frame::Skipped(format!("{at} bytes that are no header")));
                self.reset_header();
                &line[at..]
            }
            None => line,
        };
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            out.push(Frame::Skipped(format!(
                "{} bytes that are no header",
                line.len()
            )));
            self.reset_header();
            return;
        };
        self.in_header = true;
        let (name, value) = (&line[..colon], &line[colon + 1..]);
        if name.eq_ignore_ascii_case(b"content-length") {
            let value = std::str::from_utf8(value).unwrap_or("").trim();
            match value.parse::<usize>() {
                Ok(len) => self.length = Some(len),
                Err(_) => {
                    // Past usize (or no number): the frame cannot be read,
                    // the header block is dropped.
                    out.push(Frame::Skipped(format!(
                        "Content-Length {:?} is no length",
                        &value[..value.len().min(40)]
                    )));
                    self.length = None;
                }
            }
        }
    }
}

/// The queue item for one body.
pub(crate) fn decode(body: &[u8]) -> Incoming {
    let value = match serde_json::from_slice::<Value>(body) {
        Ok(v) => v,
        Err(e) => {
            let why = match std::str::from_utf8(body) {
                Err(_) => "invalid UTF-8".to_string(),
                Ok(_) => e.to_string(),
            };
            // The rest may still be readable, for the id to answer.
            let salvaged = String::from_utf8_lossy(body);
            let salvaged = serde_json::from_str::<Value>(&without_lone_surrogates(&salvaged)).ok();
            return malformed(salvaged.as_ref(), ErrorCode::ParseError, why);
        }
    };
    if !value.is_object() {
        // serde reads a struct from an array too: `[1, 2]` would pass as
        // a response.
        return malformed(
            Some(&value),
            ErrorCode::InvalidRequest,
            "not a JSON-RPC message: not an object".to_string(),
        );
    }
    let invalid = match serde_json::from_value::<Message>(value.clone()) {
        // `lsp-server` reads an object with an id and nothing else as a
        // response; it is none.
        Ok(Message::Response(r)) if r.result.is_none() && r.error.is_none() => {
            "neither a method nor a result nor an error".to_string()
        }
        Ok(m) => return Incoming::Message(m),
        Err(e) => e.to_string(),
    };
    malformed(
        Some(&value),
        ErrorCode::InvalidRequest,
        format!("not a JSON-RPC message: {invalid}"),
    )
}

/// The queue item for a body over [`MAX_BODY`] that began with `head`.
fn oversized(len: usize, head: &[u8]) -> Incoming {
    let keys = top_level_keys(head);
    let id = keys
        .iter()
        .find(|(k, _)| k == "id")
        .and_then(|(_, v)| serde_json::from_str::<RequestId>(v).ok());
    let notification = id.is_none() && keys.iter().any(|(k, _)| k == "method");
    Incoming::Malformed {
        id,
        notification,
        code: ErrorCode::InvalidRequest,
        message: format!("a message of {len} bytes, more than {MAX_BODY}"),
    }
}

/// The top-level keys of the JSON object `head` begins with, each with its
/// value's text when that value is a number or a string without escapes
/// and ends within `head` (else an empty text).
fn top_level_keys(head: &[u8]) -> Vec<(String, String)> {
    let text = String::from_utf8_lossy(head);
    let b = text.as_bytes();
    let mut out = Vec::new();
    let (mut depth, mut i) = (0usize, 0usize);
    // Whether the next string at depth 1 is a key.
    let mut key_next = false;
    while i < b.len() {
        match b[i] {
            b'{' | b'[' => {
                depth += 1;
                key_next = depth == 1 && b[i] == b'{';
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b',' if depth == 1 => key_next = true,
            b'"' => {
                let start = i + 1;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                if depth == 1 && key_next && i < b.len() {
                    let key = text[start..i].to_string();
                    let rest = text[i + 1..].trim_start();
                    let value = rest.strip_prefix(':').unwrap_or("").trim_start();
                    let end = if let Some(s) = value.strip_prefix('"') {
                        s.find(['"', '\\'])
                            .filter(|&e| s.as_bytes()[e] == b'"')
                            .map_or(0, |e| e + 2)
                    } else {
                        value
                            .find(|c: char| !(c.is_ascii_digit() || c == '-'))
                            .unwrap_or(0)
                    };
                    out.push((key, value[..end].to_string()));
                    key_next = false;
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

fn malformed(value: Option<&Value>, code: ErrorCode, message: String) -> Incoming {
    let id = value
        .and_then(|v| v.get("id"))
        .and_then(|id| serde_json::from_value::<RequestId>(id.clone()).ok());
    let notification = value.is_some_and(|v| v.get("method").is_some() && v.get("id").is_none());
    Incoming::Malformed {
        id,
        notification,
        code,
        message,
    }
}

/// `json` with each `\uXXXX` escape of a lone surrogate replaced by
/// `\ufffd` (pairs kept), so that the rest of the message can be read.
fn without_lone_surrogates(json: &str) -> String {
    let b = json.as_bytes();
    let escape_at = |i: usize| -> Option<u16> {
        let hex = json.get(i + 2..i + 6)?;
        (b.get(i) == Some(&b'\\') && b.get(i + 1) == Some(&b'u'))
            .then(|| u16::from_str_radix(hex, 16).ok())
            .flatten()
    };
    let mut out = String::with_capacity(json.len());
    let mut i = 0;
    let mut copied = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            i += 1;
            continue;
        }
        let Some(unit) = escape_at(i) else {
            i += 2; // any other escape, `\\` included
            continue;
        };
        let high = (0xD800..0xDC00).contains(&unit);
        let low = (0xDC00..0xE000).contains(&unit);
        if high && escape_at(i + 6).is_some_and(|u| (0xDC00..0xE000).contains(&u)) {
            i += 12;
        } else if high || low {
            out.push_str(&json[copied..i]);
            out.push_str("\\ufffd");
            i += 6;
            copied = i;
        } else {
            i += 6;
        }
    }
    out.push_str(&json[copied.min(json.len())..]);
    out
}

/// Framed messages to the client.
pub(crate) struct Writer<W: Write> {
    out: W,
}

impl<W: Write> Writer<W> {
    /// Writes to `out`.
    pub(crate) fn new(out: W) -> Writer<W> {
        Writer { out }
    }

    /// Sends `msg`.
    pub(crate) fn send(&mut self, msg: Message) -> std::io::Result<()> {
        msg.write(&mut self.out)
    }

    /// Sends an error answer to `id` (`null` when it could not be read).
    pub(crate) fn error(
        &mut self,
        id: Option<&RequestId>,
        code: ErrorCode,
        message: &str,
    ) -> std::io::Result<()> {
        let v = serde_json::json!({"jsonrpc": "2.0", "id": id,
            "error": {"code": code as i32, "message": message}});
        let body = v.to_string();
        write!(self.out, "Content-Length: {}\r\n\r\n{body}", body.len())?;
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(body: &str) -> Vec<u8> {
        format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
    }

    fn body(s: &str) -> Frame {
        Frame::Body(s.as_bytes().to_vec())
    }

    #[test]
    fn frames_split_anywhere_read_the_same() {
        let mut stream = frame("{\"a\":1}");
        stream.extend(b"Content-Type: x\r\ncontent-length:  3\r\n\r\n[1]");
        stream.extend(frame("é"));
        let whole = Framer::default().feed(&stream);
        assert_eq!(whole, vec![body("{\"a\":1}"), body("[1]"), body("é")]);
        for cut in 0..stream.len() {
            let mut f = Framer::default();
            let mut got = f.feed(&stream[..cut]);
            got.extend(f.feed(&stream[cut..]));
            assert_eq!(got, whole, "cut at {cut}");
        }
    }

    #[test]
    fn a_frame_without_length_is_skipped_up_to_the_next_header() {
        let mut stream = b"Content-Type: x\r\n\r\n{\"id\":1}".to_vec();
        stream.extend(frame("{}"));
        let got = Framer::default().feed(&stream);
        assert!(matches!(&got[0], Frame::Skipped(w) if w.contains("without Content-Length")));
        assert!(matches!(&got[1], Frame::Skipped(w) if w.contains("no header")));
        assert_eq!(got[2..], [body("{}")]);
    }

    #[test]
    fn an_oversized_body_is_discarded_as_it_arrives() {
        let mut f = Framer::default();
        let len = MAX_BODY + 10;
        let start = r#"{"jsonrpc":"2.0","params":{"id":1,"t":"a,\"id\":2"},"id":"r-9","method":"x","params":""#;
        let got = f.feed(format!("Content-Length: {len}\r\n\r\n{start}").as_bytes());
        assert!(got.is_empty());
        let chunk = vec![b' '; 1 << 20];
        let left = len - start.len();
        for _ in 0..left / chunk.len() {
            assert!(f.feed(&chunk).is_empty());
        }
        assert!(f.buf.len() <= OVERSIZED_HEAD, "only the head kept");
        let mut rest = vec![b' '; left % chunk.len()];
        rest.extend(frame("{}"));
        let got = f.feed(&rest);
        let [Frame::Oversized { len: l, head }, b] = &got[..] else {
            panic!("{got:?}");
        };
        assert_eq!((*l, b), (len, &body("{}")));
        assert_eq!(head.len(), OVERSIZED_HEAD);
        match oversized(*l, head) {
            Incoming::Malformed { id, message, .. } => {
                assert_eq!(id, Some("r-9".to_string().into()), "the top-level id");
                assert!(message.contains("more than"));
            }
            other => panic!("{other:?}"),
        }
        let note = oversized(
            len,
            br#"{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"#,
        );
        assert!(matches!(
            note,
            Incoming::Malformed {
                id: None,
                notification: true,
                ..
            }
        ));
        // A length past usize, and a long header line.
        let mut stream = b"Content-Length: 99999999999999999999999\r\n\r\n".to_vec();
        stream.extend(vec![b'x'; MAX_HEADER_LINE * 2]);
        stream.extend(b"\n");
        stream.extend(frame("{}"));
        let got = Framer::default().feed(&stream);
        assert_eq!(got.last(), Some(&body("{}")), "{got:?}");
        assert_eq!(got.len(), 4, "{got:?}");
    }

    #[test]
    fn bad_bodies_keep_their_id_when_it_can_be_read() {
        let lone = br#"{"jsonrpc":"2.0","id":7,"method":"x","params":{"t":"\ud800"}}"#;
        match decode(lone) {
            Incoming::Malformed {
                id, notification, ..
            } => {
                assert_eq!(id, Some(7.into()));
                assert!(!notification);
            }
            other => panic!("{other:?}"),
        }
        let mut bad = br#"{"jsonrpc":"2.0","id":"s","method":"x","params":"#.to_vec();
        bad.extend(b"\"\xff\"}");
        assert!(matches!(
            decode(&bad),
            Incoming::Malformed {
                id: Some(_),
                code: ErrorCode::ParseError,
                ..
            }
        ));
        let note = br#"{"jsonrpc":"2.0","method":"x","params":{"t":"\udc00"}}"#;
        assert!(matches!(
            decode(note),
            Incoming::Malformed {
                id: None,
                notification: true,
                ..
            }
        ));
        assert!(matches!(
            decode(b"not json"),
            Incoming::Malformed {
                id: None,
                notification: false,
                ..
            }
        ));
        assert!(matches!(
            decode(br#"{"id":3}"#),
            Incoming::Malformed {
                id: Some(_),
                code: ErrorCode::InvalidRequest,
                ..
            }
        ));
        assert!(matches!(
            decode(b"[1,2]"),
            Incoming::Malformed {
                id: None,
                notification: false,
                code: ErrorCode::InvalidRequest,
                ..
            }
        ));
        let pair = r#"{"t":"\ud83d\ude00 \\ud800 \ud800\u0041"}"#;
        assert_eq!(
            without_lone_surrogates(pair),
            r#"{"t":"\ud83d\ude00 \\ud800 \ufffd\u0041"}"#
        );
    }
}

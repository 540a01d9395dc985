//! Newline-delimited JSON-RPC on stdin/stdout in front of `rmcp`, keeping
//! only what rmcp 3.9's stdio transport lacks (`.noma/mcp.noma`, decision
//! `mcp-bad-input-follows-rmcp`); what each line becomes is decided in
//! the `inbound` module. As in rmcp and the other official SDKs
//! (modelcontextprotocol/rust-sdk#938), a line that is not JSON gets no
//! reply. Added here: a line longer than [`MAX_LINE`] (never buffered past
//! it) gets a `-32600` naming the limit, and a JSON line that cannot be
//! decoded (invalid UTF-8, half a surrogate pair) a `-32700` naming the
//! problem (decision `mcp-answers-lines-it-cannot-read`); each
//! dropped line is named in the notices (rmcp logs only through `tracing`); a
//! notification before `initialize` is dropped (rmcp 3.9 would end the
//! session); well-formed JSON that is no message, a batch included, gets
//! `-32600` with the id it names (rmcp's has a null id). A thread reads
//! stdin; each outgoing message is ONE line written under one lock, so
//! stdout carries JSON-RPC only.

use std::io::{self, BufRead, Read, Write};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{ClientJsonRpcMessage, ClientRequest, GetMeta, ServerJsonRpcMessage};
use rmcp::service::RoleServer;
use rmcp::transport::Transport;
use tokio::sync::mpsc;

use crate::inbound::{classify, oversized, Inbound};

/// Longest accepted request line (bytes, without the newline): rmcp's
/// `DEFAULT_MAX_LINE_LENGTH`.
pub(crate) const MAX_LINE: usize = 16 * 1024 * 1024;

/// A line buffer shrinks back to this after a bigger (huge) line.
const KEEP_CAPACITY: usize = 1024 * 1024;

/// Reads newline-terminated lines of at most `max` bytes from `input` and
/// hands each to `sink` (an oversized line as `Err(its length)`, read past
/// without being buffered), until EOF, a read error, or `sink` returns false.
pub(crate) fn read_lines<R: BufRead>(
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

/// The rmcp side of the framing: messages in from the reader thread, lines
/// out to stdout.
pub(crate) struct LineTransport {
    inbound: mpsc::Receiver<ClientJsonRpcMessage>,
    out: Out,
}

impl Transport<RoleServer> for LineTransport {
    type Error = io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        std::future::ready(write_line(&self.out, &item))
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
            Err(len) => {
                self.notices
                    .say(&format!("refused a line of {len} bytes (limit {MAX_LINE})"));
                Inbound::Reply(oversized(len, MAX_LINE))
            }
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
pub(crate) fn spawn<R, W>(input: R, output: W, notices: crate::Notices) -> io::Result<LineTransport>
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

//! What one line read from stdin becomes: a message for rmcp, a JSON-RPC
//! error reply that rmcp never sees, or nothing (a dropped line, named in
//! the notices). The rules are the module docs of [`crate::transport`];
//! the decisions are `mcp-bad-input-follows-rmcp` and
//! `mcp-answers-lines-it-cannot-read` in `.noma/mcp.noma`.

use rmcp::model::ClientJsonRpcMessage;
use serde_json::{json, Value};

/// What to do with one input line.
#[derive(Debug)]
pub(crate) enum Inbound {
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
pub(crate) fn classify(line: &[u8]) -> Inbound {
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
        if let Some(reply) = undecodable(line) {
            return reply;
        }
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

/// The answer to a line that is JSON but cannot be decoded: invalid UTF-8
/// (JSON text is UTF-8) or a `\uD800`-style escape of half a surrogate
/// pair (no string holds one). Such a line is a client's encoding bug, not
/// noise, and the client waits for its answer, so it gets a `-32700` naming
/// the problem, with the line's id when the line, repaired, names one (a
/// notification stays unanswered). `None`: the line is undecodable for
/// another reason (not JSON at all).
fn undecodable(line: &[u8]) -> Option<Inbound> {
    let (problem, repaired) = match std::str::from_utf8(line) {
        Err(e) => {
            let at = e.valid_up_to();
            let why = format!(
                "the line is not valid UTF-8 (byte 0x{:02x} at offset {at})",
                line[at]
            );
            (why, String::from_utf8_lossy(line).into_owned())
        }
        Ok(text) => {
            let (repaired, lone) = replace_lone_surrogates(text)?;
            let why = format!(
                "the line holds the escape \\u{lone:04x}, half of a UTF-16 surrogate pair, \
                 which no JSON string can decode to"
            );
            (why, repaired)
        }
    };
    let id = match serde_json::from_str::<Value>(&repaired) {
        Ok(Value::Object(obj)) => match obj.get("id") {
            Some(v @ (Value::String(_) | Value::Number(_))) => v.clone(),
            None if obj.contains_key("method") => {
                return Some(Inbound::Drop(format!("a notification: {problem}")))
            }
            _ => Value::Null,
        },
        _ => Value::Null,
    };
    Some(Inbound::Reply(json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": -32700, "message": format!("Parse error: {problem}")},
    })))
}

/// `text` with every `\uXXXX` escape of an unpaired surrogate replaced by
/// `\ufffd`, and the first such code unit; `None` when there is none.
fn replace_lone_surrogates(text: &str) -> Option<(String, u16)> {
    let unit = |b: &[u8]| -> Option<u16> {
        let hex = b.get(..4)?;
        u16::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()
    };
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let (mut first, mut copied, mut i) = (None, 0, 0);
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            i += 1;
            continue;
        }
        let Some(u) = (bytes.get(i + 1) == Some(&b'u'))
            .then(|| unit(&bytes[i + 2..]))
            .flatten()
        else {
            // Any other escape: skip the escaped character too.
            i += 2;
            continue;
        };
        let high = (0xD800..0xDC00).contains(&u);
        let low = (0xDC00..0xE000).contains(&u);
        let paired = high
            && bytes.get(i + 6) == Some(&b'\\')
            && bytes.get(i + 7) == Some(&b'u')
            && unit(&bytes[(i + 8).min(bytes.len())..])
                .is_some_and(|l| (0xDC00..0xE000).contains(&l));
        if paired {
            i += 12;
        } else if high || low {
            first.get_or_insert(u);
            out.push_str(&text[copied..i]);
            out.push_str("\\ufffd");
            i += 6;
            copied = i;
        } else {
            i += 6;
        }
    }
    out.push_str(&text[copied..]);
    first.map(|u| (out, u))
}

/// The answer to a request line of `len` bytes, over the limit: the line
/// is not kept, so its id is unknown (`null`), but the client learns why
/// its request goes unanswered rather than waiting for it.
pub(crate) fn oversized(len: usize, limit: usize) -> Value {
    invalid_request(
        Value::Null,
        format!(
            "Invalid Request: a line of {len} bytes is over the limit of {limit} bytes \
             ({} MiB); the request was not read",
            limit / (1024 * 1024)
        ),
    )
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
        for bad in [&b"{"[..], b"\xEF\xBB\xBFnot json", b"{\"id\":5,"] {
            assert_eq!(kind(bad), not_json, "{}", String::from_utf8_lossy(bad));
        }
        // Undecodable lines are answered, with their id when it can be read.
        assert_eq!(kind(b"\xff\xfe"), "-32700 null");
        assert_eq!(kind(br#"{"id":9,"s":"\ud800"}"#), "-32700 9");
        assert_eq!(kind(b"{\"id\":\"k\",\"s\":\"\xc3\"}"), "-32700 \"k\"");
        assert_eq!(
            kind(br#"{"method":"x","params":{"s":"\udc00"}}"#),
            "a notification: the line holds the escape \\udc00, half of a UTF-16 surrogate pair, which no JSON string can decode to"
        );
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

    #[test]
    fn lone_surrogate_escapes_are_replaced_and_pairs_kept() {
        let fix = |s: &str| replace_lone_surrogates(s).map(|(t, u)| (t, format!("{u:04x}")));
        assert_eq!(fix(r#"{"a":"\ud83d\ude00 \\ud800 \n"}"#), None);
        assert_eq!(
            fix(r#"["\ud800x","\udc00","\ud83d\ude00\uDBFF"]"#),
            Some((
                r#"["\ufffdx","\ufffd","\ud83d\ude00\ufffd"]"#.to_string(),
                "d800".to_string()
            ))
        );
        // A truncated escape is left for the parser to refuse.
        assert_eq!(fix(r#""\ud8"#), None);
    }
}

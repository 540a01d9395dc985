//! `noma lsp` over real pipes: input an editor or a broken client really
//! sends (completion after a multi-byte character, malformed frames and
//! bodies, lifecycle messages out of order, a huge `Content-Length`, a
//! burst of changes in one write, lone CRs) never stops the session, and
//! the next request is answered.

use serde_json::{json, Value};

use crate::lsp_client::{check_diagnostics, framed, lsp_diagnostics, Doc, Lsp};

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const NOT_INITIALIZED: i64 = -32002;

fn open(lsp: &mut Lsp, uri: &str, text: &str) {
    lsp.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "noma", "version": 1, "text": text}}),
    );
}

fn position(uri: &str, line: usize, character: usize) -> Value {
    json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": character}})
}

/// The server's text of `uri`.
fn server_text(lsp: &mut Lsp, uri: &str) -> Value {
    lsp.request("noma/text", json!({"textDocument": {"uri": uri}}))["result"].clone()
}

/// Typing `ε=` or `café="` (both end in a trigger character) asks for
/// completion after a multi-byte character: answered (nothing to offer
/// there), and a reference attribute after one still offers the ids.
#[test]
fn completion_after_a_multibyte_character_and_equals_answers() {
    let dir = tempfile::tempdir().unwrap();
    let uri = format!("file://{}/d.noma", dir.path().display());
    let mut lsp = Lsp::start(dir.path());
    lsp.initialize();
    let mut doc = Doc {
        text: "# T {id=\"t\"}\n\n\n".to_string(),
    };
    open(&mut lsp, &uri, &doc.text);
    for (version, typed) in ["ε=", "café=\"", "\r😀 ::evidence{for=\""]
        .iter()
        .enumerate()
    {
        let line = doc.lines().len() - 1;
        let end = (line, doc.widths()[line]);
        let change = doc.edit(end, end, typed);
        lsp.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version + 2}, "contentChanges": [change]}),
        );
        let line = doc.lines().len() - 1;
        let col = doc.widths()[line];
        let answer = lsp.request("textDocument/completion", position(&uri, line, col));
        assert!(answer.get("error").is_none(), "{typed}: {answer}");
        let labels: Vec<&str> = answer["result"]
            .as_array()
            .map(|items| items.iter().filter_map(|i| i["label"].as_str()).collect())
            .unwrap_or_default();
        if typed.ends_with("for=\"") {
            assert_eq!(labels, ["t"], "{answer}");
        } else {
            assert_eq!(answer["result"], Value::Null, "{typed}: {answer}");
        }
    }
    assert_eq!(server_text(&mut lsp, &uri), json!(doc.text));
    let (status, stderr) = lsp.finish();
    assert!(status.success(), "{status}: {stderr}");
}

/// Each malformed message gets an error answer (to its id when it can be
/// read) or a line on stderr, and the next request is answered.
#[test]
fn malformed_messages_get_an_answer_and_the_session_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let uri = format!("file://{}/d.noma", dir.path().display());
    let mut lsp = Lsp::start(dir.path());
    lsp.initialize();
    open(&mut lsp, &uri, "# T\n");
    let symbols = json!({"textDocument": {"uri": uri}});
    let next_is_answered = |lsp: &mut Lsp, what: &str| {
        let r = lsp.request("textDocument/documentSymbol", symbols.clone());
        assert!(r["result"].is_array(), "after {what}: {r}");
    };

    lsp.write(&framed(b"{not json"));
    let r = lsp.answer(&Value::Null);
    assert_eq!(r["error"]["code"], PARSE_ERROR, "{r}");
    next_is_answered(&mut lsp, "not JSON");

    let mut bad_utf8 =
        br#"{"jsonrpc":"2.0","id":50,"method":"textDocument/hover","params":{"x":""#.to_vec();
    bad_utf8.extend(b"\xff\xfe\"}}");
    lsp.write(&framed(&bad_utf8));
    let r = lsp.answer(&json!(50));
    assert_eq!(r["error"]["code"], PARSE_ERROR, "{r}");
    assert!(
        r["error"]["message"].as_str().unwrap().contains("UTF-8"),
        "{r}"
    );
    next_is_answered(&mut lsp, "invalid UTF-8");

    let lone =
        r#"{"jsonrpc":"2.0","id":51,"method":"workspace/symbol","params":{"query":"\ud800"}}"#;
    lsp.write(&framed(lone.as_bytes()));
    let r = lsp.answer(&json!(51));
    assert_eq!(r["error"]["code"], PARSE_ERROR, "{r}");
    next_is_answered(&mut lsp, "a lone surrogate");

    // A notification with a lone surrogate: no answer, a log line.
    let change = format!(
        r#"{{"jsonrpc":"2.0","method":"textDocument/didChange","params":{{"textDocument":{{"uri":"{uri}","version":2}},"contentChanges":[{{"text":"\udc00"}}]}}}}"#
    );
    lsp.write(&framed(change.as_bytes()));
    next_is_answered(&mut lsp, "a notification with a lone surrogate");

    // No Content-Length: skipped up to the next header.
    lsp.write(b"Content-Type: application/json\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":52,\"method\":\"shutdown\"}");
    next_is_answered(&mut lsp, "a frame without Content-Length");
    lsp.write(b"Content-Length: -3\r\n\r\n");
    lsp.write(b"garbage line\r\n");
    next_is_answered(&mut lsp, "a bad length and a garbage line");

    // Valid JSON, no JSON-RPC message; an unknown method.
    lsp.write(&framed(br#"{"jsonrpc":"2.0","id":53}"#));
    assert_eq!(lsp.answer(&json!(53))["error"]["code"], INVALID_REQUEST);
    lsp.write(&framed(b"[1,2]"));
    assert_eq!(lsp.answer(&Value::Null)["error"]["code"], INVALID_REQUEST);
    let r = lsp.request("noma/nothing", json!({}));
    assert_eq!(r["error"]["code"], -32601, "{r}");
    next_is_answered(&mut lsp, "an unknown method");

    // The document is as opened: the bad change was not applied.
    assert_eq!(server_text(&mut lsp, &uri), json!("# T\n"));
    assert!(lsp.running());
    let (status, stderr) = lsp.finish();
    assert!(status.success(), "{status}: {stderr}");
    for why in [
        "malformed message: invalid UTF-8",
        "lone",
        "without Content-Length",
        "is no length",
        "no header",
    ] {
        assert!(stderr.contains(why), "no {why:?} on stderr: {stderr}");
    }
}

/// Out-of-order lifecycle: a request before `initialize` is refused as
/// not initialized; `shutdown` right after `initialize` (before
/// `initialized`) is answered, a request after it is refused, and `exit`
/// ends the session with success.
#[test]
fn lifecycle_messages_out_of_order_are_answered() {
    let dir = tempfile::tempdir().unwrap();
    let mut lsp = Lsp::start(dir.path());
    let r = lsp.request("workspace/symbol", json!({"query": ""}));
    assert_eq!(r["error"]["code"], NOT_INITIALIZED, "{r}");
    let r = lsp.request("initialize", json!({"capabilities": {}}));
    assert!(r["result"]["capabilities"].is_object(), "{r}");
    let r = lsp.request("shutdown", Value::Null);
    assert_eq!(r["result"], Value::Null, "{r}");
    let r = lsp.request("workspace/symbol", json!({"query": ""}));
    assert_eq!(r["error"]["code"], INVALID_REQUEST, "{r}");
    lsp.notify("exit", Value::Null);
    let (status, stderr) = lsp.close();
    assert!(status.success(), "{status}: {stderr}");
}

/// `Content-Length: 1000000000` followed by that many bytes: the body is
/// thrown away as it arrives (peak memory stays under 100 MiB), the
/// request it began is refused by its id, and the next one is answered.
#[cfg(target_os = "linux")]
#[test]
fn a_huge_content_length_keeps_memory_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let mut lsp = Lsp::start(dir.path());
    lsp.initialize();
    lsp.write(b"Content-Length: 1000000000\r\n\r\n");
    let start = br#"{"jsonrpc":"2.0","id":77,"method":"workspace/symbol","params":{"query":""#;
    lsp.write(start);
    let chunk = vec![b' '; 1 << 20];
    let mut left = 1_000_000_000usize - start.len();
    while left > 0 {
        let n = left.min(chunk.len());
        lsp.write(&chunk[..n]);
        left -= n;
    }
    // Refused by its id, read from the body's first bytes.
    let r = lsp.answer(&json!(77));
    assert_eq!(r["error"]["code"], INVALID_REQUEST, "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("more than"),
        "{r}"
    );
    let r = lsp.request("workspace/symbol", json!({"query": ""}));
    assert_eq!(r["result"], json!([]), "{r}");
    let status = std::fs::read_to_string(format!("/proc/{}/status", lsp.pid())).unwrap();
    let peak_kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM");
    assert!(peak_kib < 100 * 1024, "peak RSS {peak_kib} KiB");
    let (status, stderr) = lsp.finish();
    assert!(status.success(), "{status}: {stderr}");
    assert!(stderr.contains("more than"), "{stderr}");
}

/// Twenty changes written at once are analysed at most twice (the reader
/// drains the pipe into the server's queue; a burst split across two reads
/// costs two), and the diagnostics are the last text's.
#[test]
fn a_burst_of_twenty_changes_is_analysed_at_most_twice() {
    let dir = tempfile::tempdir().unwrap();
    let uri = format!("file://{}/d.noma", dir.path().display());
    let mut lsp = Lsp::start(dir.path());
    lsp.initialize();
    let mut doc = Doc {
        text: "# T {id=\"t\"}\n\nSee [[t]].\n".to_string(),
    };
    open(&mut lsp, &uri, &doc.text);
    assert_eq!(server_text(&mut lsp, &uri), json!(doc.text));
    let mut burst = Vec::new();
    for i in 0..20 {
        let change = doc.edit((2, 6), (2, 6), "x");
        burst.extend(Lsp::note_frame(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": i + 2}, "contentChanges": [change]}),
        ));
    }
    lsp.write(&burst);
    assert_eq!(server_text(&mut lsp, &uri), json!(doc.text));
    let diags = lsp.last_diagnostics(&uri).unwrap();
    assert_eq!(diags[0]["code"], "broken-reference", "{diags}");
    let (status, stderr) = lsp.finish();
    assert!(status.success(), "{status}: {stderr}");
    let analyses = stderr.matches("noma lsp: analysed").count();
    // One for the open, at most two for the burst.
    assert!((2..=3).contains(&analyses), "{analyses} analyses: {stderr}");
}

/// Lone CRs end lines for the server as for `noma check`: after edits on
/// lines after lone CRs, the server's text is the client's and its
/// diagnostics are `noma check`'s, on the same lines.
#[test]
fn after_lone_crs_text_and_diagnostics_match_noma_check() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.noma");
    let uri = format!("file://{}", path.display());
    let mut lsp = Lsp::start(dir.path());
    lsp.initialize();
    let mut doc = Doc {
        text: "# T\r\rSee [[t]].\r::claim{id=\"c\"}\rOne.\r::\r\nEnd [[c]]\n".to_string(),
    };
    open(&mut lsp, &uri, &doc.text);
    let edits = [
        ((2, 6), (2, 7), "zz"),
        ((6, 5), (6, 6), "c2"),
        ((0, 3), (0, 3), " {id=\"t\"}\r"),
        ((1, 0), (2, 0), ""),
        ((4, 4), (4, 4), "é\r😀 [[c]]"),
    ];
    for (i, (from, to, new)) in edits.into_iter().enumerate() {
        let change = doc.edit(from, to, new);
        lsp.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": i + 2}, "contentChanges": [change]}),
        );
        assert_eq!(
            server_text(&mut lsp, &uri),
            json!(doc.text),
            "after edit {i}"
        );
        let want = check_diagnostics(&path, &doc.text);
        let got = lsp_diagnostics(&lsp.last_diagnostics(&uri).unwrap(), &want);
        assert_eq!(got, want, "after edit {i} of {:?}", doc.text);
    }
    let (status, stderr) = lsp.finish();
    assert!(status.success(), "{status}: {stderr}");
}

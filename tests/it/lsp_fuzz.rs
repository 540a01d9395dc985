//! `noma lsp` under random input over real pipes: random edits (multi-byte
//! text, CR, LF and CRLF, `::`, `{`, `"`, `=` at the cursor) in bursts,
//! random requests at random positions (past line ends, inside surrogate
//! pairs, past the text) and hostile frames. Invariants: the server never
//! exits, answers every request within the bound, keeps the client's text,
//! and publishes `noma check`'s diagnostics of it at every checkpoint.
//!
//! The seed is printed; `NOMA_LSP_FUZZ_SEED=N` replays a run.

use serde_json::{json, Value};

use crate::common::Rng;
use crate::lsp_client::{check_diagnostics, framed, lsp_diagnostics, Doc, Lsp};

const PIECES: &[&str] = &[
    "::",
    "{",
    "\"",
    "=",
    "}",
    "é",
    "😀",
    "ε",
    "café",
    "\r",
    "\n",
    "\r\n",
    "\r\n",
    "\n",
    "[[",
    "]]",
    "[[c1]]",
    "[[t]]",
    "id=\"",
    "for=\"",
    "c1",
    "x",
    " ",
    "# H ",
    "## Sub",
    "::claim{id=\"c",
    "::evidence{for=\"c1\"}\nE.\n::\n",
    "::note\r",
    "```\n",
    "---\n",
    "a",
    "=\"",
    "\t",
    "{id=\"t\"}",
];

const START: &str = "---\r\ntitle: Fuzz\r\n---\r\n# T {id=\"t\"}\n\nSee [[t]] and [[c1]], café.\n\n::claim{id=\"c1\" confidence=0.5}\nOne ε.\n::\n\n::evidence{for=\"c1\"}\nProof 😀.\n::\n";

/// Random text to type.
fn typed(rng: &mut Rng) -> String {
    (0..rng.below(4)).map(|_| *rng.pick(PIECES)).collect()
}

/// A random position of `doc`, valid (on a character boundary).
fn valid_position(rng: &mut Rng, doc: &Doc) -> (usize, usize) {
    let line = rng.below(doc.lines().len());
    let cols = doc.columns(line);
    (line, *rng.pick(&cols))
}

/// A random position for a request: usually valid, sometimes past the
/// line's end, inside a surrogate pair or past the text.
fn any_position(rng: &mut Rng, doc: &Doc) -> (u64, u64) {
    let (line, col) = valid_position(rng, doc);
    match rng.below(10) {
        0 => (line as u64, col as u64 + 1 + rng.below(5) as u64),
        1 => (
            doc.lines().len() as u64 + rng.below(3) as u64,
            rng.below(4) as u64,
        ),
        2 => (u32::MAX as u64, u32::MAX as u64),
        _ => (line as u64, col as u64),
    }
}

/// A random edit of `doc`, applied to it: the change to send.
fn random_edit(rng: &mut Rng, doc: &mut Doc) -> Value {
    let start = valid_position(rng, doc);
    let lines = doc.lines().len();
    let end = if rng.chance(50) || doc.text.len() > 3000 {
        let line = (start.0 + rng.below(3)).min(lines - 1);
        let cols = doc.columns(line);
        let col = *rng.pick(&cols);
        if (line, col) < start {
            start
        } else {
            (line, col)
        }
    } else {
        start
    };
    let new = if doc.text.len() > 3000 {
        String::new()
    } else {
        typed(rng)
    };
    doc.edit(start, end, &new)
}

/// Frames no client should send, and what each must get: an answer to
/// an id (`Some`), or nothing.
fn hostile(rng: &mut Rng, id: i64, uri: &str) -> (Vec<u8>, Option<Value>) {
    match rng.below(6) {
        0 => (framed(b"{\"jsonrpc\":\"2.0\",\"id\":"), Some(Value::Null)),
        1 => {
            let mut b = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"textDocument/hover","params":{{"t":""#
            )
            .into_bytes();
            b.extend(b"\xc3\x28\"}}");
            (framed(&b), Some(json!(id)))
        }
        2 => {
            let b = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"workspace/symbol","params":{{"query":"\ud800"}}}}"#
            );
            (framed(b.as_bytes()), Some(json!(id)))
        }
        3 => {
            let b = format!(
                r#"{{"jsonrpc":"2.0","method":"textDocument/didChange","params":{{"textDocument":{{"uri":"{uri}","version":0}},"contentChanges":[{{"text":"\udfff"}}]}}}}"#
            );
            (framed(b.as_bytes()), None)
        }
        4 => (
            b"Content-Type: x\r\n\r\n{\"jsonrpc\":\"2.0\",\"method\":\"exit\"}".to_vec(),
            None,
        ),
        _ => (
            b"\r\nnot a header\r\nContent-Length: x\r\n\r\n".to_vec(),
            None,
        ),
    }
}

#[test]
fn random_edits_requests_and_hostile_frames_never_stop_or_mislead_the_server() {
    let seed = std::env::var("NOMA_LSP_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    eprintln!("lsp fuzz: NOMA_LSP_FUZZ_SEED={seed}");
    let fail = |what: String| -> ! { panic!("{what} (NOMA_LSP_FUZZ_SEED={seed})") };
    let mut rng = Rng(seed);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fuzz.noma");
    let check_path = dir.path().join("check.noma");
    let uri = format!("file://{}", path.display());
    let mut lsp = Lsp::start(dir.path());
    lsp.initialize();
    let mut doc = Doc {
        text: START.to_string(),
    };
    lsp.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "noma", "version": 1, "text": doc.text}}),
    );
    let methods = [
        "textDocument/completion",
        "textDocument/hover",
        "textDocument/definition",
        "textDocument/references",
        "textDocument/documentSymbol",
        "workspace/symbol",
        "textDocument/codeAction",
    ];
    let (mut edits, mut requests, mut hostile_frames, mut checkpoints) = (0, 0, 0, 0);
    let mut version = 1;
    while edits < 2000 || requests < 500 {
        // A burst: several notifications in one write, some with several
        // changes each.
        let mut burst = Vec::new();
        for _ in 0..1 + rng.below(6) {
            let changes: Vec<Value> = (0..1 + rng.below(3))
                .map(|_| random_edit(&mut rng, &mut doc))
                .collect();
            edits += changes.len();
            version += 1;
            burst.extend(Lsp::note_frame(
                "textDocument/didChange",
                json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": changes}),
            ));
        }
        let mut expected = Vec::new();
        if rng.chance(15) {
            let id = lsp.id();
            let (frame, answer) = hostile(&mut rng, id, &uri);
            burst.extend(frame);
            expected.extend(answer);
            hostile_frames += 1;
        }
        lsp.write(&burst);
        for id in expected {
            let r = lsp.answer(&id);
            if r.get("error").is_none() {
                fail(format!("a hostile frame got no error: {r}"));
            }
        }
        for _ in 0..rng.below(3) {
            let method = *rng.pick(&methods);
            let (line, character) = any_position(&mut rng, &doc);
            let pos = json!({"line": line, "character": character});
            let params = match method {
                "workspace/symbol" => json!({"query": typed(&mut rng)}),
                "textDocument/documentSymbol" => json!({"textDocument": {"uri": uri}}),
                "textDocument/references" => json!({"textDocument": {"uri": uri}, "position": pos,
                    "context": {"includeDeclaration": rng.chance(50)}}),
                "textDocument/codeAction" => json!({"textDocument": {"uri": uri},
                    "range": {"start": pos, "end": pos}, "context": {"diagnostics": []}}),
                _ => json!({"textDocument": {"uri": uri}, "position": pos}),
            };
            let r = lsp.request(method, params);
            requests += 1;
            if r.get("error").is_some() {
                fail(format!("{method} at {pos} of {:?}: {r}", doc.text));
            }
        }
        if edits / 50 > checkpoints {
            checkpoints = edits / 50;
            let text = lsp.request("noma/text", json!({"textDocument": {"uri": uri}}));
            if text["result"] != json!(doc.text) {
                fail(format!(
                    "the server's text {} is not the client's {:?}",
                    text["result"], doc.text
                ));
            }
            let want = check_diagnostics(&check_path, &doc.text);
            let published = lsp.last_diagnostics(&uri).unwrap_or_else(|| json!([]));
            let got = lsp_diagnostics(&published, &want);
            if got != want {
                fail(format!(
                    "diagnostics of {:?}:\nserver {got:?}\ncheck  {want:?}",
                    doc.text
                ));
            }
            // Only the last publication matters from here on.
            lsp.seen.clear();
        }
        if !lsp.running() {
            fail("the server exited".to_string());
        }
    }
    eprintln!(
        "lsp fuzz: {edits} edits, {requests} requests, {hostile_frames} hostile frames, {checkpoints} checkpoints"
    );
    let (status, stderr) = lsp.finish();
    if !status.success() {
        fail(format!("{status}: {stderr}"));
    }
}

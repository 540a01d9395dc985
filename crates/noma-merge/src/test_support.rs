//! Fixtures the merge modules' unit tests share: a small document and
//! transcripts grown from it through the engine.

use serde_json::{json, Value};

use noma_core::doc::hash::sha256_hex;
use noma_core::transcript::split_lines;

/// A document with two notes, `a` and `b`.
pub const BASE: &str = "# T\n\n::note{id=\"a\"}\nalpha\n::\n\n::note{id=\"b\"}\nbeta\n::\n";

/// Applies `ops` from `start`, appending to transcript `t`.
pub fn extend(start: &str, t: &[u8], ops: &[Value]) -> (String, Vec<u8>) {
    let opts = noma_core::plan::Request::new(noma_core::transcript::Actor {
        kind: noma_core::transcript::ActorKind::Agent,
        name: "t".into(),
        model: None,
        version: None,
    });
    let mut p = noma_core::plan::plan(start, &Default::default(), ops, &opts);
    assert!(p.accepted);
    let (lines, _) = split_lines(t);
    let prev = lines.last().map(|l| sha256_hex(l.raw));
    let mut out = t.to_vec();
    out.extend(noma_core::plan::chain_and_serialise(&mut p.records, prev));
    (p.new_text, out)
}

/// A `replace_body` op.
pub fn body(id: &str, c: &str) -> Value {
    json!({"op": "replace_body", "id": id, "content": c})
}

/// Finds [`BASE`] by its sha256.
pub fn find(sha: &str) -> Option<String> {
    (sha256_hex(BASE.as_bytes()) == sha).then(|| BASE.to_string())
}

/// (ours doc, ours transcript, theirs doc, theirs transcript).
pub fn forked() -> (String, Vec<u8>, String, Vec<u8>) {
    let (od, ot) = extend(BASE, b"", &[body("a", "A1")]);
    let (td, tt) = extend(BASE, b"", &[body("b", "B1")]);
    (od, ot, td, tt)
}

//! `noma mcp` sizes a tool result's text copy for the client (decision
//! `mcp-text-copy-sized-for-the-client`), over real stdio: a client that
//! negotiated 2025-03-26 gets the body twice (`structuredContent` and its
//! JSON text), as before; from 2025-06-18 on a big body's text is a short
//! summary pointing to `structuredContent`, while a small one keeps its
//! JSON text; `--full-text` restores the full copy for every revision.

use serde_json::{json, Value};

use crate::common::{mcp_repo, McpClient};

/// A tool's result (not a JSON-RPC error) and its line's length.
fn call(s: &mut McpClient, tool: &str, args: Value) -> (Value, usize) {
    let (r, len) = s.request_sized("tools/call", json!({"name": tool, "arguments": args}));
    let result = r.get("result").unwrap_or_else(|| panic!("{tool}: {r}"));
    assert!(result["structuredContent"].is_object(), "{r}");
    assert_eq!(result["content"].as_array().map(Vec::len), Some(1), "{r}");
    (result.clone(), len)
}

fn text_of(result: &Value) -> &str {
    assert_eq!(result["content"][0]["type"], "text", "{result}");
    result["content"][0]["text"].as_str().unwrap()
}

/// The text content is the structured body, JSON-encoded.
fn assert_full_copy(result: &Value) {
    let text: Value = serde_json::from_str(text_of(result))
        .unwrap_or_else(|e| panic!("text is not JSON ({e}): {result}"));
    assert_eq!(text, result["structuredContent"]);
}

/// A committed document of 40 sections: read_doc's body is ~40 KB.
fn big_repo() -> tempfile::TempDir {
    mcp_repo(&noma_testutil::synth::document(40))
}

#[test]
fn a_big_result_is_sent_once_from_2025_06_18_and_twice_before() {
    let dir = big_repo();
    let doc = json!({"file": "a.noma"});
    let mut sizes = Vec::new();
    for version in ["2025-03-26", "2025-06-18", "2025-11-25"] {
        let mut s = McpClient::start_at(dir.path(), version, &[]);
        let (read, len) = call(&mut s, "read_doc", doc.clone());
        assert_eq!(read["isError"], false, "{read}");
        let blocks = read["structuredContent"]["blocks"]
            .as_array()
            .unwrap()
            .len();
        assert!(blocks > 100, "{blocks}");
        if version == "2025-03-26" {
            assert_full_copy(&read);
        } else {
            let text = text_of(&read);
            assert!(
                text.starts_with("read_doc: the full result is this answer's structuredContent"),
                "{text}"
            );
            assert!(text.contains("`noma mcp --full-text`"), "{text}");
            assert!(text.contains(&format!("blocks: {blocks} items")), "{text}");
            let sha = read["structuredContent"]["sha256"].as_str().unwrap();
            assert!(text.contains(sha), "{text}");
            assert!(text.contains("unrecorded_edit: null"), "{text}");
            assert!(text.len() < 600, "{} bytes: {text}", text.len());
        }
        // Small bodies keep their JSON text in every revision: a host that
        // shows the model only text still sees a patch's outcome and code.
        let (valid, _) = call(&mut s, "validate_doc", doc.clone());
        assert_full_copy(&valid);
        let refused = json!({"file": "a.noma", "op": {"op": "delete_block", "id": "nope"}});
        let (r, _) = call(&mut s, "patch_block", refused);
        assert_eq!(r["structuredContent"]["code"], "target_missing", "{r}");
        assert_full_copy(&r);
        let (missing, _) = call(&mut s, "read_doc", json!({"file": "nope.noma"}));
        assert_eq!(missing["isError"], true, "{missing}");
        assert_full_copy(&missing);
        s.finish();
        sizes.push(len);
    }
    // The answer is about half as big once the text copy goes.
    assert!(sizes[1] * 10 < sizes[0] * 6, "{sizes:?}");
    assert_eq!(sizes[1], sizes[2], "{sizes:?}");
}

#[test]
fn full_text_sends_the_json_copy_to_every_revision() {
    let dir = big_repo();
    for version in ["2025-03-26", "2025-06-18", "2025-11-25"] {
        let mut s = McpClient::start_at(dir.path(), version, &["--full-text"]);
        let (read, _) = call(&mut s, "read_doc", json!({"file": "a.noma"}));
        assert_full_copy(&read);
        let (log, _) = call(&mut s, "transcript_read", json!({"file": "a.noma"}));
        assert_full_copy(&log);
        s.finish();
    }
}

//! Every `noma mcp` answer can be read by a client that parses the text
//! content as JSON, as the reference's agent SDKs do (decision
//! `mcp-answers-every-client-reads`), over real stdio: `read_doc` declares
//! no output schema and sends its JSON text once, every other tool sends
//! `structuredContent` and the same body as its text, in every revision;
//! `--full-text` is accepted and changes nothing.

use std::path::Path;

use serde_json::{json, Value};

use crate::common::{mcp_repo, shared_reference, McpClient};

/// A tool's result (not a JSON-RPC error) and its line's length.
fn call(s: &mut McpClient, tool: &str, args: Value) -> (Value, usize) {
    let (r, len) = s.request_sized("tools/call", json!({"name": tool, "arguments": args}));
    let result = r.get("result").unwrap_or_else(|| panic!("{tool}: {r}"));
    assert_eq!(result["content"].as_array().map(Vec::len), Some(1), "{r}");
    (result.clone(), len)
}

/// The body as a client that reads only the text takes it (`JSON.parse`
/// of `content[0].text`), checked against `structuredContent` where the
/// result has one.
fn parsed_text(tool: &str, result: &Value) -> Value {
    assert_eq!(result["content"][0]["type"], "text", "{result}");
    let text = result["content"][0]["text"].as_str().unwrap();
    let body: Value = serde_json::from_str(text)
        .unwrap_or_else(|e| panic!("{tool}: text is not JSON ({e}): {text:.300}"));
    assert!(body.is_object(), "{tool}: {text:.300}");
    if let Some(structured) = result.get("structuredContent") {
        assert_eq!(&body, structured, "{tool}");
    }
    body
}

/// A committed document of 40 sections: read_doc's body is ~40 KB.
fn big_repo() -> tempfile::TempDir {
    mcp_repo(&noma_testutil::synth::document(40))
}

#[test]
fn every_answer_is_json_text_and_read_doc_sends_it_once_in_every_revision() {
    let dir = big_repo();
    let doc = json!({"file": "a.noma"});
    let mut sizes = Vec::new();
    for version in ["2025-03-26", "2025-06-18", "2025-11-25"] {
        let mut s = McpClient::start_at(dir.path(), version, &[]);
        let tools = s.request("tools/list", json!({}));
        let tools = tools["result"]["tools"].as_array().unwrap().clone();
        for t in &tools {
            assert_eq!(
                t.get("outputSchema").is_none(),
                t["name"] == "read_doc",
                "{}",
                t["name"]
            );
        }
        let (read, len) = call(&mut s, "read_doc", doc.clone());
        assert_eq!(read["isError"], false, "{read}");
        assert!(read.get("structuredContent").is_none(), "sent twice");
        let body = parsed_text("read_doc", &read);
        let blocks = body["blocks"].as_array().unwrap().len();
        assert!(blocks > 100, "{blocks}");
        // One copy: the line is the body, escaped once, and little more.
        let body_len = body.to_string().len();
        assert!(
            len < body_len * 13 / 10,
            "{len} bytes for a {body_len}-byte body"
        );
        sizes.push(len);
        // Big bodies of the other tools are JSON text too, beside their
        // structuredContent.
        let (log, _) = call(&mut s, "transcript_read", doc.clone());
        parsed_text("transcript_read", &log);
        let (valid, _) = call(&mut s, "validate_doc", doc.clone());
        assert!(valid["structuredContent"].is_object(), "{valid}");
        parsed_text("validate_doc", &valid);
        let refused = json!({"file": "a.noma", "op": {"op": "delete_block", "id": "nope"}});
        let (r, _) = call(&mut s, "patch_block", refused);
        assert_eq!(parsed_text("patch_block", &r)["code"], "target_missing");
        let (missing, _) = call(&mut s, "read_doc", json!({"file": "nope.noma"}));
        assert_eq!(missing["isError"], true, "{missing}");
        assert!(parsed_text("read_doc", &missing)["error"].is_string());
        s.finish();
    }
    assert!(sizes.windows(2).all(|w| w[0] == w[1]), "{sizes:?}");
}

#[test]
fn full_text_is_accepted_and_changes_nothing() {
    let dir = big_repo();
    let mut answers = Vec::new();
    for args in [&[][..], &["--full-text"][..]] {
        let mut s = McpClient::start_at(dir.path(), "2025-06-18", args);
        let (read, _) = call(&mut s, "read_doc", json!({"file": "a.noma"}));
        let (ids, _) = call(&mut s, "list_ids", json!({"file": "a.noma"}));
        answers.push((read, ids));
        s.finish();
    }
    assert_eq!(answers[0], answers[1]);
    let out = std::process::Command::new(crate::common::NOMA)
        .args(["mcp", "--full-text", "--root"])
        .arg(dir.path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    // No session follows (stdin is closed before initialize): only the note.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--full-text is deprecated and has no effect"),
        "{err}"
    );
}

/// Every read-only tool on `file` through default `noma mcp`, read as the
/// reference's SDKs read it.
fn read_through_text(root: &Path, file: &str, version: &str) -> usize {
    let mut s = McpClient::start_at(root, version, &[]);
    let doc = json!({"file": file});
    let (read, _) = call(&mut s, "read_doc", doc.clone());
    assert_eq!(read["isError"], false, "{file}: {read:.300}");
    let body = parsed_text("read_doc", &read);
    let blocks = body["blocks"].as_array().map_or(0, Vec::len);
    assert!(body["sha256"].is_string(), "{file}");
    for tool in [
        "list_ids",
        "validate_doc",
        "transcript_read",
        "describe_capabilities",
    ] {
        let (r, _) = call(&mut s, tool, doc.clone());
        parsed_text(tool, &r);
    }
    s.finish();
    blocks
}

/// The documents the reference's SDKs failed on (`agent-plan.noma`,
/// 5.6 KB, and the spec, far bigger) read through default `noma mcp`.
#[test]
fn the_reference_documents_are_read_by_a_client_that_parses_the_text() {
    let Some(reference) =
        shared_reference("the_reference_documents_are_read_by_a_client_that_parses_the_text")
    else {
        return;
    };
    let plan = std::fs::read_to_string(reference.join("noma/examples/agent-plan.noma"))
        .expect("agent-plan.noma in the reference data");
    let spec = std::fs::read_to_string(reference.join("noma/docs/spec.noma"))
        .expect("spec.noma in the reference data");
    let dir = mcp_repo(&plan);
    std::fs::write(dir.path().join("spec.noma"), &spec).unwrap();
    for version in ["2025-06-18", "2025-11-25"] {
        for (file, src) in [("a.noma", &plan), ("spec.noma", &spec)] {
            let blocks = read_through_text(dir.path(), file, version);
            assert!(src.len() > 4096 && blocks > 10, "{file}: {blocks} blocks");
        }
    }
}

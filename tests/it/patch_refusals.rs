//! How `noma patch` answers a refused op: a rejected record
//! leads with the op's own cause, even on a document with standing errors;
//! an op with a field its schema does not allow is refused unrecorded,
//! naming the field and the one it most likely meant.

use std::process::{Command, Output};

use serde_json::{json, Value};

use crate::common::{text, NOMA};

/// A document with two standing errors (a broken reference and a
/// duplicate id) and a claim `c1`.
const DOC: &str = "# Doc\n\nSee [[nowhere]].\n\n::claim{id=\"c1\"}\nBody.\n::\n\n::note{id=\"d\"}\nx\n::\n\n::note{id=\"d\"}\ny\n::\n";

fn patch(dir: &std::path::Path, op: &Value, extra: &[&str]) -> Output {
    let op = op.to_string();
    let mut args = vec!["patch", "d.noma", "--format", "json", "--op", &op];
    args.extend_from_slice(extra);
    Command::new(NOMA)
        .args(&args)
        .current_dir(dir)
        .output()
        .unwrap()
}

fn json_of(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(o)))
}

/// The first error-severity diagnostic's code of each record.
fn first_error_codes(v: &Value) -> Vec<String> {
    v["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r["diagnostics"]
                .as_array()
                .unwrap()
                .iter()
                .find(|d| d["severity"] == "error")
                .and_then(|d| d["code"].as_str())
                .unwrap_or("")
                .to_string()
        })
        .collect()
}

#[test]
fn a_rejected_record_leads_with_the_op_cause_on_a_document_with_errors() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("d.noma"), DOC).unwrap();
    let check = Command::new(NOMA)
        .args(["check", "d.noma"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(check.status.code(), Some(1), "{}", text(&check));
    let sha = |s: &str| {
        use sha2::Digest;
        format!("{:x}", sha2::Sha256::digest(s.as_bytes()))
    };
    let wrong_base = &sha("not the block")[..12];
    for (ops, want) in [
        (
            json!({"op": "delete_block", "id": "missing"}),
            vec!["target_missing"],
        ),
        (
            json!({"op": "add_block", "parent": "c1", "content": "::note{id=\"c1\"}\nx\n::"}),
            vec!["id_conflict"],
        ),
        (
            json!({"op": "replace_body", "id": "c1", "content": "z", "baseHash": wrong_base}),
            vec!["sha_mismatch"],
        ),
        (
            json!([{"op": "replace_body", "id": "c1", "content": "z"},
                   {"op": "delete_block", "id": "missing"}]),
            vec!["op_list_aborted", "target_missing"],
        ),
    ] {
        for mode in [&[][..], &["--inplace"][..]] {
            let o = patch(dir.path(), &ops, mode);
            assert_eq!(o.status.code(), Some(1), "{ops} {mode:?}: {}", text(&o));
            let v = json_of(&o);
            assert_eq!(first_error_codes(&v), want, "{ops} {mode:?}: {v:#}");
            // The standing errors are still summarised, after the cause.
            let r = &v["records"][0];
            let codes: Vec<&str> = r["diagnostics"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|d| d["code"].as_str())
                .collect();
            assert!(codes.contains(&"unchanged_diagnostics"), "{codes:?}");
            assert_eq!(r["pre_validation"], "error", "{r:#}");
        }
    }
    // The records written with --inplace read back in the same order.
    let written = std::fs::read_to_string(dir.path().join("d.noma.patches")).unwrap();
    let first: Value = serde_json::from_str(written.lines().next().unwrap()).unwrap();
    assert_eq!(first["patch_result"], "rejected");
    assert_eq!(
        first_error_codes(&json!({"records": [first]})),
        ["target_missing"]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("d.noma")).unwrap(),
        DOC
    );
}

#[test]
fn unknown_and_misspelled_op_fields_are_named_and_nothing_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("d.noma"), DOC).unwrap();
    for (op, field, meant) in [
        (
            json!({"op": "update_attribute", "id": "c1", "key": "k", "value": 1, "bogus": 1}),
            "bogus",
            None,
        ),
        (
            json!({"op": "add_block", "parent": "c1", "index": 0,
                   "content": "::note{id=\"n1\"}\nNew note.\n::"}),
            "index",
            Some("position"),
        ),
        (
            json!({"op": "move_block", "id": "c1", "parent": "doc", "postion": 0}),
            "postion",
            Some("position"),
        ),
        (
            json!({"op": "replace_body", "id": "c1", "contnet": "z"}),
            "contnet",
            Some("content"),
        ),
    ] {
        let o = patch(dir.path(), &op, &["--inplace"]);
        assert_eq!(o.status.code(), Some(2), "{op}: {}", text(&o));
        let v = json_of(&o);
        assert_eq!(v["accepted"], false, "{v:#}");
        assert_eq!(v["records"], json!([]), "{v:#}");
        assert_eq!(v["error"]["code"], "invalid_content", "{v:#}");
        let msg = v["error"]["message"].as_str().unwrap();
        assert!(msg.contains(&format!("`{field}`")), "{op}: {msg}");
        match meant {
            Some(m) => assert!(msg.contains(&format!("did you mean `{m}`")), "{op}: {msg}"),
            None => assert!(!msg.contains("did you mean"), "{op}: {msg}"),
        }
        // The human answer names the field too.
        let op_s = op.to_string();
        let h = Command::new(NOMA)
            .args(["patch", "d.noma", "--op", &op_s])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert_eq!(h.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&h.stderr).contains(&format!("`{field}`")));
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("d.noma")).unwrap(),
        DOC
    );
    assert!(!dir.path().join("d.noma.patches").exists());
    // The same op with `position` applies where it says.
    let op = json!({"op": "add_block", "parent": "c1", "position": 0,
                    "content": "::note{id=\"n1\"}\nNew note.\n::"});
    let o = patch(dir.path(), &op, &["--inplace"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = std::fs::read_to_string(dir.path().join("d.noma")).unwrap();
    assert!(
        out.contains("::claim{id=\"c1\"}\n:::note{id=\"n1\"}\nNew note.\n:::\n\nBody.\n::"),
        "{out}"
    );
}

/// Over MCP (the same engine): `patch_block` with an unknown or misspelled
/// field answers as the CLI does, and writes nothing.
#[test]
fn mcp_names_unknown_op_fields_like_the_cli() {
    let dir = crate::common::mcp_repo(DOC);
    let mut s = crate::common::McpClient::start(dir.path());
    for (op, field, meant) in [
        (
            json!({"op": "update_attribute", "id": "c1", "key": "k", "value": 1, "bogus": 1}),
            "bogus",
            None,
        ),
        (
            json!({"op": "add_block", "parent": "c1", "index": 0,
                   "content": "::note{id=\"n1\"}\nNew note.\n::"}),
            "index",
            Some("position"),
        ),
    ] {
        let (is_error, body) = s.call("patch_block", json!({"file": "a.noma", "op": op}));
        assert!(is_error, "{body}");
        assert_eq!(body["code"], "invalid_content", "{body}");
        let msg = body.to_string();
        assert!(msg.contains(&format!("`{field}`")), "{body}");
        if let Some(m) = meant {
            assert!(msg.contains(&format!("did you mean `{m}`")), "{body}");
        }
    }
    s.finish();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.noma")).unwrap(),
        DOC
    );
    assert!(!dir.path().join("a.noma.patches").exists());
}

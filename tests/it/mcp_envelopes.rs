//! `noma mcp` result envelopes for the patch tools' preconditions (issue
//! 19, points 6 and 7), over real stdio: the §3.4 precondition order when
//! the document carries an unrecorded edit, the `base_hash` argument, the
//! content cap, and `clear_cache`'s documented reach.

use std::path::Path;

use serde_json::{json, Value};

use crate::common::{mcp_repo, McpClient};

const DOC: &str = "---\ntitle: Plan\n---\n# Intro {id=\"intro\"}\n\nHello.\n\n::claim{id=\"c1\" confidence=0.5}\nThe sky is blue.\n::\n";

fn repo() -> tempfile::TempDir {
    mcp_repo(DOC)
}

fn block_hash(read: &Value, id: &str) -> String {
    read["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["id"] == id)
        .unwrap_or_else(|| panic!("{id}: {read}"))["hash"]
        .as_str()
        .unwrap()
        .to_string()
}

fn transcript_len(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("a.noma.patches"))
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

fn raise(c1_hash: Option<&str>) -> Value {
    let mut op = json!({"op": "update_attribute", "id": "c1", "key": "confidence", "value": 0.9});
    if let Some(h) = c1_hash {
        op["baseHash"] = json!(h);
    }
    op
}

#[test]
fn stale_preconditions_are_answered_before_the_unrecorded_edit() {
    let dir = repo();
    let mut s = McpClient::start(dir.path());
    let read = s.ok("read_doc", json!({"file": "a.noma"}));
    let old_c1 = block_hash(&read, "c1");
    s.ok("patch_block", json!({"file": "a.noma", "op": raise(None)}));
    assert_eq!(transcript_len(dir.path()), 1);

    // A hand edit the transcript does not explain.
    let edited = std::fs::read_to_string(dir.path().join("a.noma"))
        .unwrap()
        .replace("Hello.", "Hello, by hand.");
    std::fs::write(dir.path().join("a.noma"), &edited).unwrap();
    let read = s.ok("read_doc", json!({"file": "a.noma"}));
    let disk_sha = read["sha256"].as_str().unwrap().to_string();

    // Stale expected_sha, stale op baseHash, stale base_hash argument:
    // sha_mismatch, as normal content.
    for args in [
        json!({"file": "a.noma", "expected_sha": "00000000", "op": raise(None)}),
        json!({"file": "a.noma", "op": raise(Some(&old_c1))}),
        json!({"file": "a.noma", "base_hash": old_c1, "op": raise(None)}),
    ] {
        let (is_error, body) = s.call("patch_block", args.clone());
        assert!(!is_error, "{args}: {body}");
        assert_eq!(body["ok"], false, "{body}");
        assert_eq!(body["code"], "sha_mismatch", "{args}: {body}");
        let (is_error, body) = s.call(
            "patch_block_list",
            json!({"file": "a.noma", "expected_sha": args.get("expected_sha"),
                   "ops": [args["op"]]}),
        );
        if args.get("base_hash").is_none() {
            assert!(!is_error, "{body}");
            assert_eq!(body["code"], "sha_mismatch", "{body}");
        }
    }

    // Fresh preconditions: the unrecorded edit itself, coded, pointing at
    // `noma record`, never at a CLI flag.
    let (is_error, body) = s.call(
        "patch_block",
        json!({"file": "a.noma", "expected_sha": &disk_sha[..8], "op": raise(None)}),
    );
    assert!(!is_error, "{body}");
    assert_eq!(body["ok"], false, "{body}");
    assert_eq!(body["code"], "unrecorded_edit", "{body}");
    let msg = body["error"].as_str().unwrap();
    assert!(msg.contains("noma record \"a.noma\""), "{msg}");
    assert!(!msg.contains("--force"), "{msg}");
    let (_, body) = s.call(
        "patch_block_list",
        json!({"file": "a.noma", "ops": [raise(None)]}),
    );
    assert_eq!(body["code"], "unrecorded_edit", "{body}");

    // Nothing was written.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.noma")).unwrap(),
        edited
    );
    assert_eq!(transcript_len(dir.path()), 1);

    // The policy is in the tool description.
    let list = s.request("tools/list", json!({}));
    let pb = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "patch_block")
        .unwrap()
        .clone();
    let desc = pb["description"].as_str().unwrap();
    assert!(desc.contains("unrecorded_edit"), "{desc}");
    assert!(pb["inputSchema"]["properties"].get("base_hash").is_some());
    s.finish();
}

#[test]
fn base_hash_argument_guards_the_op() {
    let dir = repo();
    let mut s = McpClient::start(dir.path());
    let old_c1 = block_hash(&s.ok("read_doc", json!({"file": "a.noma"})), "c1");
    s.ok(
        "patch_block",
        json!({"file": "a.noma", "base_hash": old_c1, "op": raise(None)}),
    );
    let after = std::fs::read_to_string(dir.path().join("a.noma")).unwrap();
    assert!(after.contains("confidence=0.9"), "{after}");

    // The same hash is now stale: rejected (and recorded), file unchanged.
    let body = s.ok(
        "patch_block",
        json!({"file": "a.noma", "base_hash": old_c1,
               "op": {"op": "replace_body", "id": "c1", "content": "Changed.\n"}}),
    );
    assert_eq!(body["code"], "sha_mismatch", "{body}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.noma")).unwrap(),
        after
    );
    assert_eq!(transcript_len(dir.path()), 2);

    // The op's own baseHash wins over the argument.
    let fresh = block_hash(&s.ok("read_doc", json!({"file": "a.noma"})), "c1");
    let body = s.ok(
        "patch_block",
        json!({"file": "a.noma", "base_hash": old_c1,
               "op": {"op": "replace_body", "id": "c1", "content": "Changed.\n",
                      "baseHash": fresh}}),
    );
    assert_eq!(body["ok"], true, "{body}");
    s.finish();
}

#[test]
fn content_over_the_cap_is_invalid_content_and_writes_nothing() {
    let dir = repo();
    let mut s = McpClient::start(dir.path());
    let big = "x".repeat(1_000_001);
    for (tool, args) in [
        (
            "patch_block",
            json!({"file": "a.noma", "op": {"op": "replace_body", "id": "c1", "content": big}}),
        ),
        (
            "patch_block",
            json!({"file": "a.noma", "op": {"op": "replace_block", "id": "c1",
                   "content": format!("::claim{{id=\"c1\"}}\n{big}\n::")}}),
        ),
        (
            "patch_block",
            json!({"file": "a.noma", "op": {"op": "add_block", "parent": "intro",
                   "content": format!("::claim{{id=\"c2\"}}\n{big}\n::")}}),
        ),
        (
            "patch_block_list",
            json!({"file": "a.noma", "ops": [raise(None),
                   {"op": "replace_body", "id": "c1", "content": big}]}),
        ),
    ] {
        let (is_error, body) = s.call(tool, args);
        assert!(!is_error, "{body:.300}");
        assert_eq!(body["ok"], false);
        assert_eq!(body["code"], "invalid_content", "{body:.300}");
        assert!(
            body["error"].as_str().unwrap().contains("1000000"),
            "{body:.300}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.noma")).unwrap(),
        DOC
    );
    assert!(!dir.path().join("a.noma.patches").exists());

    // At the cap it applies.
    let body = s.ok(
        "patch_block",
        json!({"file": "a.noma", "op": {"op": "replace_body", "id": "c1",
               "content": format!("{}\n", "y".repeat(999_999))}}),
    );
    assert_eq!(body["ok"], true, "{body:.300}");
    s.finish();
}

/// A NUL character in an op's text used to be written into the document,
/// which every reader then refuses as binary: one malformed request locked
/// the document for `read_doc`, `patch_block` and the hooks. It is now
/// `invalid_content` (recorded as rejected), the document keeps its bytes
/// and the next patch applies.
#[test]
fn a_nul_character_in_an_op_is_refused_and_the_document_stays_usable() {
    let dir = repo();
    let mut s = McpClient::start(dir.path());
    let body = s.ok(
        "patch_block",
        json!({"file": "a.noma", "op": {"op": "replace_body", "id": "c1", "content": "a\u{0}b\n"}}),
    );
    assert_eq!(body["ok"], false, "{body}");
    assert_eq!(body["code"], "invalid_content", "{body}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.noma")).unwrap(),
        DOC
    );
    s.ok("read_doc", json!({"file": "a.noma"}));
    let body = s.ok("patch_block", json!({"file": "a.noma", "op": raise(None)}));
    assert_eq!(body["ok"], true, "{body}");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_noma"))
        .args(["check", "a.noma"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// The document tools take only `.noma` documents outside `.git`. Any file
/// in the repository used to be parsed as a document, and a patch request
/// naming `.git/config`, a transcript or a source file left a
/// `<file>.patches` beside it (and would have rewritten the file had the op
/// applied). Refused as a system error, nothing written.
#[test]
fn the_document_tools_take_only_noma_documents_outside_dot_git() {
    let dir = repo();
    std::fs::write(dir.path().join("notes.txt"), "::claim{id=\"n\"}\nx\n::\n").unwrap();
    let mut s = McpClient::start(dir.path());
    s.ok("patch_block", json!({"file": "a.noma", "op": raise(None)}));
    let before: Vec<_> = walk(dir.path());
    let op = json!({"op": "replace_body", "id": "n", "content": "y\n"});
    for file in [
        ".git/config",
        "notes.txt",
        "a.noma.patches",
        ".git/x.noma",
        ".GIT/x.noma",
    ] {
        for (tool, args) in [
            ("patch_block", json!({"file": file, "op": op})),
            ("read_doc", json!({"file": file})),
        ] {
            let (is_error, body) = s.call(tool, args);
            assert!(is_error, "{tool} {file}: {body}");
            assert_eq!(body["ok"], false, "{tool} {file}: {body}");
        }
    }
    assert_eq!(walk(dir.path()), before, "nothing written");
    s.ok("read_doc", json!({"file": "a.noma"}));
}

/// Every file under `dir` with its length, sorted.
fn walk(dir: &Path) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            if m.is_dir() {
                stack.push(e.path());
            } else {
                out.push((e.path().display().to_string(), m.len()));
            }
        }
    }
    out.sort();
    out
}

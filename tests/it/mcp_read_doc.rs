//! `read_doc` lists the blocks the reference's server lists (decision
//! `spans-match-the-reference`): the frontmatter, every node in pre-order,
//! a list's items after it, with spans that end at a section's last
//! non-blank line and hashes of the lines as in the file.

use serde_json::{json, Value};

use crate::common::{mcp_repo, McpClient};

const DOC: &str = "---\ntitle: Plan\n---\n# Plan\n\n- one\n- two\n\n::claim{id=\"c1\"}\nSky.\n::\n\n\n## Next\n\nText.\n\n";

fn sha(s: &str) -> String {
    noma_core::doc::hash::sha256_hex(s.as_bytes())
}

#[test]
fn read_doc_lists_frontmatter_and_list_items() {
    let dir = mcp_repo(DOC);
    let mut s = McpClient::start(dir.path());
    let read = s.ok("read_doc", json!({"file": "a.noma"}));
    let blocks = read["blocks"].as_array().expect("blocks");
    let summary: Vec<(String, Value, Value)> = blocks
        .iter()
        .map(|b| {
            (
                b["type"].as_str().unwrap().to_string(),
                b["lines"].clone(),
                b["childCount"].clone(),
            )
        })
        .collect();
    let want: Vec<(String, Value, Value)> = [
        ("frontmatter", [1, 3], 0),
        ("section", [4, 16], 3),
        ("list", [6, 7], 2),
        ("list_item", [6, 6], 0),
        ("list_item", [7, 7], 0),
        ("directive", [9, 11], 1),
        ("paragraph", [10, 10], 0),
        ("section", [14, 16], 1),
        ("paragraph", [16, 16], 0),
    ]
    .into_iter()
    .map(|(t, l, c)| (t.to_string(), json!(l), json!(c)))
    .collect();
    assert_eq!(summary, want, "{read}");
    for b in blocks {
        let has_id = b.get("id").is_some();
        assert_eq!(b["patchable"], json!(has_id), "{b}");
        assert_eq!(b.get("hash").is_some(), has_id, "{b}");
    }
    let lines: Vec<&str> = DOC.split('\n').collect();
    assert_eq!(blocks[1]["hash"], json!(sha(&lines[3..16].join("\n"))));
    assert_eq!(blocks[7]["id"], json!("next"));
    assert_eq!(blocks[7]["hash"], json!(sha("## Next\n\nText.")));
    assert_eq!(
        blocks[5]["hash"],
        json!(sha("::claim{id=\"c1\"}\nSky.\n::"))
    );
}

/// Big answers written as text (decision `read-doc-writes-its-answer`)
/// keep to one JSON-RPC message per line when several calls are in flight
/// at once, beside a refused request and a client id that looks like the
/// transport's mark: each id gets its own whole answer, equal to an
/// answer read alone.
#[test]
fn read_doc_answers_in_flight_together_stay_whole_and_apart() {
    let dir = mcp_repo(&noma_testutil::synth::document(60));
    let mut s = McpClient::start(dir.path());
    let alone = s.request(
        "tools/call",
        json!({"name": "read_doc", "arguments": {"file": "a.noma"}}),
    );
    let body = crate::common::tool_body(&alone).1;
    assert!(body["blocks"].as_array().expect("blocks").len() > 500);
    let ids = [
        json!("first"),
        json!("noma-carried-json-0000000000000000"),
        json!(77),
        json!("last"),
    ];
    for (i, id) in ids.iter().enumerate() {
        s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                       "params": {"name": "read_doc", "arguments": {"file": "a.noma"}}}));
        if i == 1 {
            // A batch is refused with -32600 between the calls.
            s.send(&json!([{"jsonrpc": "2.0", "id": 9, "method": "ping"}]));
        }
    }
    let mut answered = Vec::new();
    let mut refused = 0;
    while answered.len() < ids.len() {
        let line = s.recv();
        if line["error"]["code"] == -32600 {
            refused += 1;
            continue;
        }
        assert_eq!(crate::common::tool_body(&line).1, body, "{}", line["id"]);
        assert_eq!(line["result"]["isError"], false);
        answered.push(line["id"].clone());
    }
    assert_eq!(refused, 1);
    for id in &ids {
        assert!(answered.contains(id), "{id} not answered: {answered:?}");
    }
    s.stop();
}

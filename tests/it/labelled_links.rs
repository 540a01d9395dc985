//! Labelled links `[[id|label]]` end to end: a broken one fails `noma
//! check` and the hook, and a rename from the editor (`noma lsp`,
//! `textDocument/rename` on the link itself) retargets it, label kept,
//! after which `noma check`, `noma replay` and the hook pass.

use serde_json::json;

use crate::common::{assert_ran, text, Repo};
use crate::lsp_client::{Doc, Lsp};

const DOC: &str = "# Plan\n\n::claim{id=\"c1\"}\nThe sky is blue.\n::\n\n::evidence{for=\"c1\"}\nSeen.\n::\n\nSee [[c1|the claim]] and [[c1]].\n";

#[test]
fn a_broken_labelled_link_fails_check_and_the_hook() {
    let r = Repo::with_genesis_record(DOC);
    assert_ran(&r.noma(&["hooks", "install"]));
    r.write(
        "plan.noma",
        &DOC.replace("[[c1|the claim]]", "[[zz|the claim]]"),
    );
    let o = r.noma(&["check", "plan.noma"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let out = text(&o);
    assert!(
        out.contains("ERROR [broken-reference] plan.noma:11:") && out.contains("[[zz]] points at"),
        "{out}"
    );
    r.ok(&["add", "-A"]);
    let (ok, out) = r.try_commit("a broken labelled link");
    assert!(!ok, "the hook let a broken [[zz|label]] through: {out}");
    assert!(out.contains("[broken-reference]"), "{out}");
}

#[test]
fn renaming_from_the_editor_retargets_labelled_links_keeping_the_label() {
    let r = Repo::with_genesis_record(DOC);
    assert_ran(&r.noma(&["hooks", "install"]));
    let uri = format!("file://{}", r.path().join("plan.noma").display());
    let mut lsp = Lsp::start(r.path());
    lsp.initialize();
    lsp.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "noma", "version": 1, "text": DOC}}),
    );
    // The cursor on the label of `[[c1|the claim]]` (line 11, 0-based 10).
    let answer = lsp.request(
        "textDocument/rename",
        json!({"textDocument": {"uri": uri}, "position": {"line": 10, "character": 12},
               "newName": "sky"}),
    );
    assert!(answer.get("error").is_none(), "{answer}");
    let edits = answer["result"]["changes"][&uri]
        .as_array()
        .unwrap()
        .clone();
    let mut doc = Doc {
        text: DOC.to_string(),
    };
    for e in edits.iter().rev() {
        let (s, en) = (&e["range"]["start"], &e["range"]["end"]);
        let at = |p: &serde_json::Value| {
            (
                p["line"].as_u64().unwrap() as usize,
                p["character"].as_u64().unwrap() as usize,
            )
        };
        doc.edit(at(s), at(en), e["newText"].as_str().unwrap());
    }
    let want = DOC.replace("c1", "sky");
    assert_eq!(doc.text, want);
    assert!(want.contains("See [[sky|the claim]] and [[sky]]."));
    assert_eq!(r.read("plan.noma"), want);
    let (status, stderr) = lsp.finish();
    assert!(status.success(), "{status}: {stderr}");
    assert_ran(&r.noma(&["check", "plan.noma"]));
    assert_ran(&r.noma(&["replay", "plan.noma"]));
    r.commit_all("renamed from the editor");
}

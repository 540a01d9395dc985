//! `noma record` writes the narrowest op a hand edit allows, so a person's
//! edit and an agent's edit of another part of the same block merge
//! through noma's driver (installed by `noma init`) with the real `git`:
//! a body-only edit is `replace_body`, an attribute-only edit
//! `update_attribute`, and each merges with the other kind on the other
//! branch, both ways; the result replays and passes `noma reconcile`.

use crate::common::{text, Repo};

const DOC: &str = "# Plan\n\n::claim{id=\"c\" status=\"draft\"}\nThe claim.\n::\n\n::note{id=\"n\"}\nA note.\n::\n";

/// The op names of the records a branch appended after `base`'s transcript.
fn appended_ops(r: &Repo, base: &str, rev: &str) -> Vec<String> {
    let before = r.ok(&["show", &format!("{base}:plan.noma.patches")]);
    let after = r.ok(&["show", &format!("{rev}:plan.noma.patches")]);
    after.lines().collect::<Vec<_>>()[before.lines().count()..]
        .iter()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .map(|v| v["op"]["op"].as_str().unwrap().to_string())
        .collect()
}

/// On a new branch `name` from main: `edit` made by hand and recorded by
/// `noma record`, committed through the hook.
fn hand_branch(r: &Repo, name: &str, edit: impl Fn(&str) -> String) {
    r.ok(&["checkout", "-q", "-b", name, "main"]);
    r.write("plan.noma", &edit(&r.read("plan.noma")));
    let o = r.noma(&["record", "plan.noma", "--reason", "by hand"]);
    assert!(o.status.success(), "{}", text(&o));
    r.commit_all(name);
}

/// On main: the agent's `op`, committed through the hook.
fn agent_on_main(r: &Repo, op: serde_json::Value) {
    r.ok(&["checkout", "-q", "main"]);
    r.agent_patch("plan.noma", &op.to_string());
    r.commit_all("agent");
}

/// Merges `theirs` into a new branch `into` made from `from` (`git
/// merge`, noma's driver): it must complete, the document must hold
/// every string of `want`, replay, and pass `noma reconcile --base main`.
fn merges_cleanly(r: &Repo, from: &str, theirs: &str, into: &str, want: &[&str]) {
    r.ok(&["checkout", "-q", "-b", into, from]);
    let o = r.git(&["merge", "--no-edit", theirs]);
    assert!(
        o.status.success(),
        "merge {theirs} into {from}: {}",
        text(&o)
    );
    let doc = r.read("plan.noma");
    for w in want {
        assert!(
            doc.contains(w),
            "{w} missing after merging {theirs} into {from}:\n{doc}"
        );
    }
    let o = r.noma(&["replay", "plan.noma"]);
    assert!(o.status.success(), "replay: {}", text(&o));
    let o = r.noma(&["reconcile", "--base", "main"]);
    assert!(o.status.success(), "reconcile: {}", text(&o));
    r.ok(&["checkout", "-q", "main"]);
}

#[test]
fn a_recorded_body_edit_merges_with_an_agents_attribute_change_both_ways() {
    let r = Repo::with_genesis_record(DOC);
    hand_branch(&r, "A", |d| {
        d.replace("The claim.", "The claim, revised by hand.")
    });
    assert_eq!(appended_ops(&r, "main", "A"), ["replace_body"]);
    agent_on_main(
        &r,
        serde_json::json!({"op": "update_attribute", "id": "c", "key": "status", "value": "final"}),
    );
    let both = [
        "::claim{id=\"c\" status=\"final\"}",
        "The claim, revised by hand.",
    ];
    // The branch takes main in (as a PR is updated), and main takes the branch.
    merges_cleanly(&r, "A", "main", "A-updated", &both);
    merges_cleanly(&r, "main", "A", "main-merged", &both);
}

#[test]
fn a_recorded_attribute_edit_merges_with_an_agents_body_change_both_ways() {
    let r = Repo::with_genesis_record(DOC);
    hand_branch(&r, "A", |d| {
        d.replace("status=\"draft\"}", "status=\"final\" owner=\"ada\"}")
    });
    assert_eq!(appended_ops(&r, "main", "A"), ["update_attribute"; 2]);
    agent_on_main(
        &r,
        serde_json::json!({"op": "replace_body", "id": "c", "content": "The agent's claim."}),
    );
    let both = ["status=\"final\" owner=\"ada\"}", "The agent's claim."];
    merges_cleanly(&r, "A", "main", "A-updated", &both);
    merges_cleanly(&r, "main", "A", "main-merged", &both);
}

#[test]
fn a_body_and_attribute_edit_records_the_pair_and_merges_with_another_attribute() {
    let r = Repo::with_genesis_record(DOC);
    hand_branch(&r, "A", |d| {
        d.replace("status=\"draft\"", "status=\"final\"")
            .replace("The claim.", "The claim, revised.")
    });
    assert_eq!(
        appended_ops(&r, "main", "A"),
        ["update_attribute", "replace_body"]
    );
    agent_on_main(
        &r,
        serde_json::json!({"op": "update_attribute", "id": "c", "key": "confidence", "value": 0.9}),
    );
    let all = ["status=\"final\"", "confidence=0.9", "The claim, revised."];
    merges_cleanly(&r, "A", "main", "A-updated", &all);
    merges_cleanly(&r, "main", "A", "main-merged", &all);
}

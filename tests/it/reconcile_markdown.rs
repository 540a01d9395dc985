//! `noma reconcile --format markdown` (decision `pr-summary-from-records`):
//! the reviewer's summary
//! on a real branch — per document the changed blocks, the actors (agent
//! and human) and their reasons, each check's verdict — and the fold into
//! `<details>` past a size; GitHub annotations always carry `line=`.

use crate::common::{text, Repo};

const PLAN: &str = "# Plan\n\n::claim{id=\"speed\" confidence=0.5}\nFast.\n::\n\n::note{id=\"risk\"}\nUnknown.\n::\n";
const NOTES: &str = "# Notes\n\n::note{id=\"n1\"}\nFirst.\n::\n\n::note{id=\"n2\"}\nSecond.\n::\n";

/// main holds two documents with genesis records; `feature` has an agent's
/// patches on plan.noma and a human's recorded edit of notes.noma.
fn branch() -> Repo {
    let r = Repo::init();
    r.write("plan.noma", PLAN);
    r.write("docs/notes.noma", NOTES);
    for doc in ["plan.noma", "docs/notes.noma"] {
        let o = r.noma(&["record", doc, "--reason", "start the transcript"]);
        assert!(o.status.success(), "{}", text(&o));
    }
    r.commit_all("base");
    r.ok(&["checkout", "-q", "-b", "feature"]);
    let agent = |op: &str, reason: &str| {
        let o = r.noma(&[
            "patch",
            "plan.noma",
            "--inplace",
            "--actor-kind",
            "agent",
            "--actor-name",
            "writer-bot",
            "--actor-model",
            "model-x",
            "--reason",
            reason,
            "--op",
            op,
        ]);
        assert!(o.status.success(), "{}", text(&o));
    };
    agent(
        r#"{"op":"update_attribute","id":"speed","key":"confidence","value":0.9}"#,
        "benchmarked",
    );
    agent(
        r#"{"op":"replace_body","id":"risk","content":"Low | measured."}"#,
        "risk measured",
    );
    r.write(
        "docs/notes.noma",
        &NOTES.replace("Second.", "Second, corrected."),
    );
    let o = r.noma(&["record", "docs/notes.noma", "--reason", "fix a typo"]);
    assert!(o.status.success(), "{}", text(&o));
    r.commit_all("feature work");
    r
}

#[test]
fn markdown_summary_names_blocks_actors_reasons_and_verdicts() {
    let r = branch();
    let o = r.noma(&["reconcile", "--base", "main", "--format", "markdown"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let md = String::from_utf8(o.stdout).unwrap();
    insta::with_settings!({filters => vec![
        (r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "[op-id]"),
        (r"\b[0-9a-f]{8,64}\b", "[hash]"),
        (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", "[ts]"),
    ]}, {
        insta::assert_snapshot!(md);
    });
}

#[test]
fn a_long_document_section_folds_into_details() {
    let r = Repo::init();
    let doc: String = (0..12)
        .map(|i| format!("::note{{id=\"n{i}\"}}\nbody {i}\n::\n\n"))
        .collect();
    r.write("big.noma", &format!("# Big\n\n{doc}"));
    assert!(r.noma(&["record", "big.noma"]).status.success());
    r.commit_all("base");
    r.ok(&["checkout", "-q", "-b", "feature"]);
    let ops: Vec<String> = (0..12)
        .map(|i| format!(r#"{{"op":"replace_body","id":"n{i}","content":"new {i}"}}"#))
        .collect();
    let list = format!("[{}]", ops.join(","));
    let o = r.noma(&["patch", "big.noma", "--inplace", "--op", &list]);
    assert!(o.status.success(), "{}", text(&o));
    r.commit_all("feature");
    let o = r.noma(&["reconcile", "--base", "main", "--format", "markdown"]);
    let md = String::from_utf8_lossy(&o.stdout);
    assert!(
        md.contains("<details><summary>`big.noma`: 12 block(s) changed"),
        "{md}"
    );
    assert!(md.trim_end().ends_with("</details>"), "{md}");
}

#[test]
fn github_annotations_always_carry_a_line() {
    let r = branch();
    // A finding: the document breaks (a reference to nowhere), unrecorded.
    r.write("plan.noma", &format!("{PLAN}\nSee [[nowhere]].\n"));
    r.commit_all("broken");
    let o = r.noma(&["reconcile", "--base", "main", "--format", "github"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = out.lines().filter(|l| l.starts_with("::")).collect();
    assert!(!lines.is_empty(), "{out}");
    for l in lines {
        assert!(l.contains(",line="), "{l}");
    }
}

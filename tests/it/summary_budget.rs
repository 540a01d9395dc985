//! `noma reconcile --format markdown` fits a PR comment at any size: on a
//! real 1,000-document branch the summary stays under 60,000 characters,
//! documents with errors come first, and what is folded or left out is
//! counted exactly; the tables name signers and approvers, and a rebase
//! conflict shows both sides' values.

use std::path::Path;

use serde_json::{json, Value};

use crate::common::{assert_ran, keygen, text, Repo};

const DOCS: usize = 1_000;
const ERRORS: [usize; 3] = [17, 503, 998];
const WARNINGS: [usize; 2] = [250, 999];
const PLAIN: &str = "# D\n\n::note{id=\"n1\"}\none\n::\n\n::note{id=\"n2\"}\ntwo\n::\n";
const CLAIM: &str = "# D\n\n::claim{id=\"n1\" confidence=0.5}\none\n::\n";

/// A document and its transcript before and after one agent patch,
/// recorded once by the real binary (in `tpl/`, removed after): every
/// copy of them is a valid document with its history.
struct Template {
    before: (Vec<u8>, Vec<u8>),
    after: (Vec<u8>, Vec<u8>),
}

fn template(r: &Repo, name: &str, doc: &str) -> Template {
    let path = format!("tpl/{name}.noma");
    r.write(&path, doc);
    assert_ran(&r.noma(&["record", &path]));
    let read = |p: &str| std::fs::read(r.path().join(p)).unwrap();
    let tpath = format!("{path}.patches");
    let before = (read(&path), read(&tpath));
    let op = r#"{"op":"replace_body","id":"n1","content":"uno"}"#;
    let args = ["--actor-kind", "agent", "--actor-name", "bot"];
    let o = r.noma(
        &[
            &["patch", &path, "--inplace", "--reason", "r", "--op", op][..],
            &args,
        ]
        .concat(),
    );
    assert_ran(&o);
    Template {
        before,
        after: (read(&path), read(&tpath)),
    }
}

fn put(root: &Path, i: usize, (doc, transcript): &(Vec<u8>, Vec<u8>)) {
    let p = root.join(format!("docs/d{i:04}.noma"));
    std::fs::write(&p, doc).unwrap();
    std::fs::write(p.with_extension("noma.patches"), transcript).unwrap();
}

/// main holds 1,000 documents with their transcripts; `feature` patches
/// every one of them (one commit each side): five carry a warning (an
/// unsupported claim), three an error (an edit no record explains).
fn thousand_document_pr() -> Repo {
    let r = Repo::init();
    let (plain, claim) = (template(&r, "plain", PLAIN), template(&r, "claim", CLAIM));
    std::fs::remove_dir_all(r.path().join("tpl")).unwrap();
    std::fs::create_dir(r.path().join("docs")).unwrap();
    let pick = |i: usize| {
        if WARNINGS.contains(&i) {
            &claim
        } else {
            &plain
        }
    };
    for i in 0..DOCS {
        put(r.path(), i, &pick(i).before);
    }
    r.commit_all("1,000 documents");
    r.ok(&["checkout", "-q", "-b", "feature"]);
    for i in 0..DOCS {
        let (mut doc, t) = pick(i).after.clone();
        if ERRORS.contains(&i) {
            doc.extend_from_slice(b"\nAn edit no record explains.\n");
        }
        put(r.path(), i, &(doc, t));
    }
    r.commit_all("patch them all");
    r
}

/// The number in `…and N <what>` / `sections of N <what>`, 0 without one.
fn count_before(md: &str, what: &str) -> usize {
    md.find(what)
        .map(|at| {
            let digits: String = md[..at]
                .trim_end()
                .chars()
                .rev()
                .take_while(char::is_ascii_digit)
                .collect();
            digits.chars().rev().collect::<String>().parse().unwrap()
        })
        .unwrap_or(0)
}

#[test]
fn a_thousand_document_summary_fits_a_pr_comment_errors_first() {
    let r = thousand_document_pr();
    let o = r.noma(&["reconcile", "--base", "main", "--format", "markdown"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let md = String::from_utf8(o.stdout).unwrap();
    assert!(
        md.chars().count() < 60_000,
        "{} characters",
        md.chars().count()
    );
    assert!(md.starts_with("## noma: 1000 document(s) changed, 3 with errors\n"));

    // The errors are listed under the verdict, before any table.
    let table_at = md.find("| Document |").unwrap();
    for i in ERRORS {
        let at = md.find(&format!("docs/d{i:04}.noma")).unwrap();
        assert!(at < table_at, "d{i:04} is not among the top errors");
    }
    // Table rows: errors, then warnings, then passing documents.
    let rows: Vec<usize> = md
        .lines()
        .filter_map(|l| l.strip_prefix("| `docs/d"))
        .map(|l| l[..4].parse().unwrap())
        .collect();
    let expected_first: Vec<usize> = ERRORS.iter().chain(&WARNINGS).copied().collect();
    assert_eq!(rows[..5], expected_first[..], "{md}");
    let left_out = count_before(&md, "passing document(s)._");
    assert!(left_out > 0, "a table of 1,000 rows does not fit");
    assert_eq!(rows.len() + left_out, DOCS, "table rows and the count");

    // Sections: every document is shown (open or folded) or counted.
    let open = md.matches("\n### `docs/").count();
    let folded = md.matches("\n<details><summary>`docs/").count();
    let unshown = count_before(&md, "passing document(s). `noma reconcile`");
    assert!(unshown > 0, "{md}");
    assert_eq!(open + folded + unshown, DOCS);
    assert!(
        md.find("### `docs/d0017.noma`").unwrap() < md.find("<details><summary>").unwrap(),
        "sections with errors come before the folded passing ones"
    );
    // Nothing is cut mid-tag or mid-row.
    assert_eq!(folded, md.matches("</details>").count());
    for l in md.lines().filter(|l| l.starts_with('|')) {
        assert!(l.ends_with('|'), "cut row: {l}");
    }
}

const PLAN: &str = "# Plan\n\n::claim{id=\"c1\" confidence=0.5}\nOne.\n::\n\n::claim{id=\"c2\" confidence=0.5}\nTwo.\n::\n";

/// With provenance on: on `feature` the signed agent bot sets c1 (alice
/// approves it) and alice sets c2; main meanwhile set c1 otherwise.
#[test]
fn the_summary_names_signers_approvers_and_both_sides_of_a_conflict() {
    let r = Repo::with_genesis_record(PLAN);
    let (alice, alice_pub) = keygen(&r, "alice");
    let (bot, bot_pub) = keygen(&r, "bot");
    let mut config = r.read(".noma/config.yml");
    config.push_str("provenance:\n  signatures: required\n  agents_need_approval: true\n  agent_principals: [\"*@agents.example\"]\n");
    r.write(".noma/config.yml", &config);
    r.write(
        ".noma/allowed_signers",
        &format!("alice@example.com namespaces=\"noma\" {alice_pub}\nbot@agents.example namespaces=\"noma\" {bot_pub}\n"),
    );
    r.commit_all("provenance on");
    let set = |id: &str, v: f64| json!({"op": "update_attribute", "id": id, "key": "confidence", "value": v});
    let patch = |key: &Path, actor: &[&str], op: Value, reason: &str| {
        let key = key.to_str().unwrap();
        let op = op.to_string();
        let args = [
            "patch",
            "plan.noma",
            "--inplace",
            "--key",
            key,
            "--reason",
            reason,
            "--op",
            &op,
        ];
        assert_ran(&r.noma(&[&args[..], actor].concat()));
    };
    r.ok(&["checkout", "-q", "-b", "feature"]);
    patch(
        &bot,
        &["--actor-kind", "agent", "--actor-name", "bot"],
        set("c1", 0.9),
        "benchmarked | twice",
    );
    patch(
        &alice,
        &["--actor-name", "alice"],
        set("c2", 0.8),
        "reviewed",
    );
    let key = alice.to_str().unwrap();
    assert_ran(&r.noma(&["approve", "plan.noma", "--key", key, "--yes"]));
    r.commit_all("feature");
    r.ok(&["checkout", "-q", "main"]);
    patch(
        &alice,
        &["--actor-name", "alice"],
        set("c1", 0.7),
        "measured `again`",
    );
    r.commit_all("main moves");
    r.ok(&["checkout", "-q", "feature"]);

    let o = r.noma(&["reconcile", "--base", "main", "--format", "markdown"]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "a conflict is an error: {}",
        text(&o)
    );
    let md = String::from_utf8(o.stdout).unwrap();
    assert!(
        md.contains("| `c1` | `confidence=0.9` | `confidence=0.7` |"),
        "{md}"
    );
    insta::with_settings!({filters => vec![
        (r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "[op-id]"),
        (r"\b[0-9a-f]{8,64}\b", "[hash]"),
        (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", "[ts]"),
    ]}, {
        insta::assert_snapshot!(md);
    });
}

//! `noma reconcile --base main` on real repositories: per-document and
//! per-block reports, `--write` rebasing, and the output formats (SARIF
//! validated against the official 2.1.0 schema in tests/fixtures).

use crate::common::{text, Repo, NOMA};

use std::path::Path;
use std::process::Command;

/// This file's helpers on [`Repo`], a trait because inherent methods
/// would clash with other test modules' in the one test crate.
trait ReconcileRepo {
    fn new() -> Self;
    fn patch_body(&self, id: &str, body: &str);
    fn json(&self) -> (Option<i32>, serde_json::Value);
}

impl ReconcileRepo for Repo {
    fn new() -> Repo {
        let r = Repo::init();
        r.write("plan.noma", DOC);
        r.commit_all("base");
        r
    }

    fn patch_body(&self, id: &str, body: &str) {
        let op = serde_json::json!({"op": "replace_body", "id": id, "content": body}).to_string();
        let o = self.noma(&["patch", "plan.noma", "--inplace", "--op", &op]);
        assert!(o.status.success(), "patch failed: {}", text(&o));
    }

    fn json(&self) -> (Option<i32>, serde_json::Value) {
        let o = self.noma(&["reconcile", "--base", "main", "--format", "json"]);
        let v = serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", text(&o)));
        (o.status.code(), v)
    }
}

const DOC: &str = "# Plan\n\n::note{id=\"a\"}\nalpha\n::\n\n::note{id=\"b\"}\nbeta\n::\n";

/// main patched block a; `feature` patches `block` from the base.
fn diverged(block: &str) -> Repo {
    let r = Repo::new();
    r.ok(&["checkout", "-q", "-b", "feature"]);
    r.patch_body(block, "from feature");
    r.commit_all("feature");
    r.ok(&["checkout", "-q", "main"]);
    r.patch_body("a", "from main");
    r.commit_all("main");
    r.ok(&["checkout", "-q", "feature"]);
    r
}

#[test]
fn clean_branch_reports_rebasable_and_write_rebases_onto_base() {
    let r = diverged("b");
    let (code, v) = r.json();
    assert_eq!(code, Some(0), "{v:#}");
    let d = &v["documents"][0];
    assert_eq!(d["path"], "plan.noma");
    for k in ["valid", "append_only", "replays", "rebases"] {
        assert_eq!(d[k], true, "{k}: {v:#}");
    }
    assert_eq!(
        (d["branch_records"].as_u64(), d["base_records"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(d["blocks"][0]["id"], "b");
    assert_eq!(d["blocks"][0]["rebase"], "ok");

    let o = r.noma(&["reconcile", "--base", "main", "--write"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("rebased files written"), "{}", text(&o));
    let doc = r.read("plan.noma");
    assert!(
        doc.contains("from main") && doc.contains("from feature"),
        "{doc}"
    );
    // The written transcript is the branch's (committed lines untouched,
    // so the pre-commit hook accepts it) plus main's record re-applied,
    // replaying from the base document to the written bytes.
    let head_t = r.ok(&["show", "HEAD:plan.noma.patches"]);
    let main_t = r.ok(&["show", "main:plan.noma.patches"]);
    let t = r.read("plan.noma.patches");
    assert!(t.starts_with(&head_t));
    assert_eq!(t.lines().count(), head_t.lines().count() + 1);
    assert!(!t.contains(main_t.trim_end()));
    let last: serde_json::Value = serde_json::from_str(t.lines().last().unwrap()).unwrap();
    assert!(last["reason"].as_str().unwrap().contains("reconciled"));
    r.write("base.txt", DOC);
    let o = r.noma(&["replay", "plan.noma", "--base", "base.txt"]);
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn same_block_conflict_in_every_format_and_sarif_validates() {
    let r = diverged("a");
    let (code, v) = r.json();
    assert_eq!(code, Some(1), "{v:#}");
    let d = &v["documents"][0];
    assert_eq!(d["rebases"], false);
    assert_eq!(d["blocks"][0]["rebase"], "conflict");
    let f = d["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "rebase-conflict")
        .expect("a rebase-conflict finding");
    assert_eq!(f["block"], "a");

    let o = r.noma(&["reconcile", "--base", "main", "--format", "github"]);
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.lines().any(|l| l
            .starts_with("::error file=plan.noma,line=1,title=noma rebase-conflict::[block a]")),
        "{out}"
    );

    let o = r.noma(&["reconcile", "--base", "main", "--format", "sarif"]);
    assert_eq!(o.status.code(), Some(1));
    let sarif: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sarif-schema-2.1.0.json"),
        )
        .unwrap(),
    )
    .unwrap();
    // Known erratum of the official file: the `language` patterns (run,
    // toolComponent) have a stray `]`, which jsonschema's meta-validation
    // (`format: regex`) rejects. We never emit `language`, so those
    // patterns are dropped in memory; the fixture stays byte-for-byte official.
    let mut schema = schema;
    for def in ["run", "toolComponent"] {
        let lang = &mut schema["definitions"][def]["properties"]["language"];
        assert!(lang.as_object_mut().unwrap().remove("pattern").is_some());
    }
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&sarif)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}\n{sarif:#}");
    assert_eq!(sarif["runs"][0]["results"][0]["ruleId"], "rebase-conflict");
    // The schema is not vacuous: a wrong level is rejected.
    let mut bad = sarif.clone();
    bad["runs"][0]["results"][0]["level"] = "fatal".into();
    assert!(!validator.is_valid(&bad));

    // --write refuses to write a conflicting rebase.
    let before = r.read("plan.noma");
    let o = r.noma(&["reconcile", "--base", "main", "--write"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(r.read("plan.noma"), before);
}

#[test]
fn rewritten_transcript_and_unrecorded_edit_are_reported() {
    let r = Repo::new();
    r.patch_body("a", "one");
    r.commit_all("patched on main");
    r.ok(&["checkout", "-q", "-b", "feature"]);
    r.patch_body("b", "two");
    // Rewrite the first committed line, and edit the doc by hand.
    let t = r
        .read("plan.noma.patches")
        .replacen("\"one\"", "\"uno\"", 1);
    r.write("plan.noma.patches", &t);
    r.commit_all("rewritten");
    let (code, v) = r.json();
    assert_eq!(code, Some(1));
    let d = &v["documents"][0];
    assert_eq!(d["append_only"], false, "{v:#}");
    assert_eq!(d["findings"][0]["code"], "transcript-rewritten");
    assert_eq!(d["findings"][0]["line"], 1);

    let r = Repo::new();
    r.ok(&["checkout", "-q", "-b", "feature"]);
    r.patch_body("a", "one");
    r.write("plan.noma", &r.read("plan.noma").replace("beta", "BETA"));
    r.commit_all("hand edit");
    let (code, v) = r.json();
    assert_eq!(code, Some(1));
    let d = &v["documents"][0];
    assert_eq!(d["replays"], false, "{v:#}");
    let f = &d["findings"][0];
    assert_eq!(
        (f["code"].as_str(), f["block"].as_str()),
        (Some("replay-diverged"), Some("b"))
    );
}

#[test]
fn outside_a_repository_cannot_run() {
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(NOMA)
        .args(["reconcile", "--base", "main"])
        .current_dir(dir.path())
        .env("GIT_CEILING_DIRECTORIES", dir.path().parent().unwrap())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

/// A branch that only appended is checked without holding a transcript
/// (decision `reconcile-from-a-checkpoint`: its records replayed from the
/// merge base's document, the history before it replayed a line at a time
/// from the blob), and the report is the same whether git's blobs are read
/// whole or streamed through `git cat-file`, in the everyday case and when
/// main's history was broken past the hook (a changed op, a reused op_id:
/// the replay seeks back in the stream to name the first record with that
/// id).
#[test]
fn an_appending_branch_reports_the_same_read_whole_or_streamed() {
    // Each run from an empty cache, but the last, which answers from
    // what the one before remembered.
    fn run(r: &Repo, stream: bool, fresh: bool) -> serde_json::Value {
        let env = if stream {
            "NOMA_STREAM_BLOBS_OVER=0 "
        } else {
            ""
        };
        let rm = if fresh { "rm -rf .noma/cache && " } else { "" };
        let o = r.sh(&format!(
            "{rm}{env}noma reconcile --base main --format json"
        ));
        serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", text(&o)))
    }
    for broken in ["", "op", "op_id"] {
        let r = Repo::new();
        for k in 0..4 {
            r.patch_body(if k % 2 == 0 { "a" } else { "b" }, &format!("main {k}"));
        }
        let t = r.read("plan.noma.patches");
        let lines: Vec<&str> = t.lines().collect();
        match broken {
            "op" => r.write(
                "plan.noma.patches",
                &t.replacen("\"main 0\"", "\"main X\"", 1),
            ),
            "op_id" => {
                let id = |l: &str| {
                    serde_json::from_str::<serde_json::Value>(l).unwrap()["op_id"]
                        .as_str()
                        .unwrap()
                        .to_string()
                };
                r.write(
                    "plan.noma.patches",
                    &t.replace(&id(lines[2]), &id(lines[0])),
                );
            }
            _ => {}
        }
        r.ok(&["add", "-A"]);
        r.ok(&["commit", "-q", "--no-verify", "-m", "main"]);
        r.ok(&["checkout", "-q", "-b", "feature"]);
        r.patch_body("b", "feature 1");
        r.patch_body("a", "feature 2");
        r.commit_all("feature");
        let (whole, streamed) = (run(&r, false, true), run(&r, true, true));
        assert_eq!(whole, streamed, "{broken}");
        assert_eq!(whole, run(&r, false, false), "{broken}: remembered");
        let d = &whole["documents"][0];
        assert_eq!(d["replays"], broken.is_empty(), "{broken}: {whole:#}");
        assert_eq!(d["branch_records"], 2, "{broken}: {whole:#}");
        if !broken.is_empty() {
            let f = d["findings"].to_string();
            assert!(f.contains("from its start"), "{broken}: {f}");
        }
    }
}

/// A branch behind a base that moved on (main appended a record too): the
/// base's records are re-applied from the blobs as streams
/// (merge/streamed.rs). The report is the same with the blobs read whole or
/// through `git cat-file`, cold or warm, for a clean rebase and a conflict,
/// and `--write` writes what the whole reconciliation of the three
/// versions computes.
#[test]
fn a_branch_behind_a_moved_base_reports_and_writes_the_same_read_whole_or_streamed() {
    fn run(r: &Repo, env: &str, args: &str) -> std::process::Output {
        r.sh(&format!("{env}noma reconcile --base main {args}"))
    }
    let stream = "NOMA_STREAM_BLOBS_OVER=0 ";
    for clash in [false, true] {
        let r = Repo::new();
        for k in 0..4 {
            r.patch_body(if k % 2 == 0 { "a" } else { "b" }, &format!("main {k}"));
        }
        r.commit_all("main");
        r.ok(&["checkout", "-q", "-b", "feature"]);
        r.patch_body("b", "feature 1");
        r.patch_body("b", "feature 2");
        r.commit_all("feature");
        r.ok(&["checkout", "-q", "main"]);
        r.patch_body(if clash { "b" } else { "a" }, "main moves");
        r.commit_all("main moves");
        r.ok(&["checkout", "-q", "feature"]);
        let json = |env: &str, fresh: bool| {
            let rm = if fresh { "rm -rf .noma/cache && " } else { "" };
            let o = run(&r, &format!("{rm}{env}"), "--format json");
            serde_json::from_slice::<serde_json::Value>(&o.stdout)
                .unwrap_or_else(|_| panic!("{}", text(&o)))
        };
        let whole = json("", true);
        assert_eq!(whole, json(stream, true), "{clash}: streamed");
        assert_eq!(whole, json("", false), "{clash}: remembered");
        let d = &whole["documents"][0];
        assert_eq!(d["replays"], true, "{whole:#}");
        assert_eq!(
            (&d["branch_records"], &d["base_records"]),
            (&2.into(), &1.into())
        );
        assert_eq!(d["rebases"], !clash, "{whole:#}");
        if clash {
            continue;
        }
        let show = |rev: &str, p: &str| r.ok(&["show", &format!("{rev}:{p}")]);
        let mb = r.ok(&["merge-base", "main", "feature"]).trim().to_string();
        let mb_doc = show(&mb, "plan.noma");
        let mut find = |sha: &str| {
            (noma_core::doc::hash::sha256_hex(mb_doc.as_bytes()) == sha).then(|| mb_doc.clone())
        };
        let head_doc = show("feature", "plan.noma");
        let expected = noma_merge::transcript::reconcile_transcripts(
            show("feature", "plan.noma.patches").as_bytes(),
            show("main", "plan.noma.patches").as_bytes(),
            Some(show(&mb, "plan.noma.patches").as_bytes()),
            Some(&head_doc),
            &mut find,
        )
        .unwrap();
        for env in ["", stream] {
            r.ok(&["checkout", "-q", "--", "."]);
            let o = run(&r, env, "--write");
            assert!(o.status.success(), "{}", text(&o));
            assert_eq!(
                r.read("plan.noma.patches").as_bytes(),
                &expected.transcript[..]
            );
            assert_eq!(r.read("plan.noma"), expected.doc, "{env}");
        }
    }
}

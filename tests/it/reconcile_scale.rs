//! The PR check of a branch that appended reads HEAD's transcript once when
//! warm (decision `checkpoint-remembers-a-digest`) — the merge base's
//! transcript is compared by the digest its checkpoint row remembers, and
//! the branch's op_ids are looked up in the row's fingerprints — and says
//! exactly what the cold check (a fresh cache, both transcripts streamed
//! and the history replayed) says: for a clean append, and for branches
//! that rewrite a base record or reuse a base record's op_id after the row
//! was written; and the same when the base moved on (each side read once,
//! the base's records re-applied from the row).

use crate::common::{text, Repo};

const DOC: &str = "# Plan\n\n::note{id=\"a\"}\nalpha\n::\n\n::note{id=\"b\"}\nbeta\n::\n";

fn patch_body(r: &Repo, id: &str, body: &str) {
    let op = serde_json::json!({"op": "replace_body", "id": id, "content": body}).to_string();
    let o = r.noma(&["patch", "plan.noma", "--inplace", "--op", &op]);
    assert!(o.status.success(), "patch failed: {}", text(&o));
}

/// `noma reconcile --base main --format json`, from an empty cache when
/// `fresh`; its exit code and report.
fn reconcile(r: &Repo, fresh: bool) -> (Option<i32>, serde_json::Value) {
    let rm = if fresh { "rm -rf .noma/cache && " } else { "" };
    let o = r.sh(&format!("{rm}noma reconcile --base main --format json"));
    let v = serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", text(&o)));
    (o.status.code(), v)
}

/// The checkpoint rows the cache holds.
fn checkpoint_rows(r: &Repo) -> i64 {
    let db = r.path().join(".noma/cache/blocks.sqlite3");
    let c = rusqlite::Connection::open(db).expect("cache");
    c.query_row(
        "SELECT count(*) FROM histories WHERE engine LIKE '% checkpoint/1'",
        [],
        |row| row.get(0),
    )
    .expect("count")
}

fn op_id(line: &str) -> String {
    serde_json::from_str::<serde_json::Value>(line).unwrap()["op_id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// main with four records, `feature` with two more; the cache remembers
/// the checkpoint of main's transcript.
fn appended() -> Repo {
    let r = Repo::init();
    r.write("plan.noma", DOC);
    r.commit_all("base");
    for k in 0..4 {
        patch_body(&r, if k % 2 == 0 { "a" } else { "b" }, &format!("main {k}"));
    }
    r.commit_all("main");
    r.ok(&["checkout", "-q", "-b", "feature"]);
    patch_body(&r, "b", "feature 1");
    patch_body(&r, "b", "feature 2");
    r.commit_all("feature");
    r
}

#[test]
fn a_warm_appending_branch_reports_what_a_cold_check_does() {
    let r = appended();
    let cold = reconcile(&r, true);
    assert_eq!(
        checkpoint_rows(&r),
        1,
        "the cold check remembers the merge base's row"
    );
    let warm = reconcile(&r, false);
    assert_eq!(cold, warm);
    assert_eq!(warm.0, Some(0), "{:#}", warm.1);
    let d = &warm.1["documents"][0];
    assert_eq!(
        (&d["replays"], &d["branch_records"]),
        (&true.into(), &2.into())
    );
}

/// After the row was written, the branch is amended (past the hook) so
/// that its transcript `edit` returns: the warm check falls back and says
/// what the cold one says, and both refuse.
fn amended_reports_as_cold(edit: &dyn Fn(&str) -> String, what: &str) -> serde_json::Value {
    let r = appended();
    assert_eq!(reconcile(&r, true).0, Some(0));
    assert_eq!(checkpoint_rows(&r), 1);
    let t = r.read("plan.noma.patches");
    r.write("plan.noma.patches", &edit(&t));
    r.ok(&["add", "-A"]);
    r.ok(&["commit", "-q", "--amend", "--no-verify", "-m", what]);
    let warm = reconcile(&r, false);
    let cold = reconcile(&r, true);
    assert_eq!(warm, cold, "{what}");
    assert_ne!(warm.0, Some(0), "{what}: {:#}", warm.1);
    assert_eq!(
        warm.1["documents"][0]["replays"], false,
        "{what}: {:#}",
        warm.1
    );
    warm.1
}

#[test]
fn a_branch_that_rewrites_a_base_record_is_caught_warm() {
    let v = amended_reports_as_cold(
        &|t: &str| t.replacen("\"main 0\"", "\"main X\"", 1),
        "rewrites a base record",
    );
    assert_eq!(v["documents"][0]["append_only"], false, "{v:#}");
}

#[test]
fn a_branch_record_reusing_a_base_op_id_is_caught_warm() {
    amended_reports_as_cold(
        &|t: &str| {
            let lines: Vec<&str> = t.lines().collect();
            let last = lines[lines.len() - 1];
            t.replace(&op_id(last), &op_id(lines[1]))
        },
        "reuses a base op_id",
    );
}

/// A base that moved on after the row was written (main appended too):
/// warm, both sides are compared by the row's digest and the base's
/// records re-applied; the report is the cold one, for a clean
/// re-application, a conflict, and a branch that rewrote a base record.
#[test]
fn a_branch_behind_a_moved_base_reports_warm_what_cold_does() {
    for case in ["clean", "clash", "rewrite"] {
        let r = appended();
        assert_eq!(reconcile(&r, true).0, Some(0), "{case}");
        if case == "rewrite" {
            let t = r.read("plan.noma.patches");
            r.write(
                "plan.noma.patches",
                &t.replacen("\"main 0\"", "\"main X\"", 1),
            );
            r.ok(&["add", "-A"]);
            r.ok(&["commit", "-q", "--amend", "--no-verify", "-m", case]);
        }
        r.ok(&["checkout", "-q", "main"]);
        patch_body(&r, if case == "clash" { "b" } else { "a" }, "main moves");
        r.commit_all("main moves");
        r.ok(&["checkout", "-q", "feature"]);
        assert_eq!(checkpoint_rows(&r), 1, "{case}");
        let warm = reconcile(&r, false);
        let cold = reconcile(&r, true);
        assert_eq!(warm, cold, "{case}");
        let d = &warm.1["documents"][0];
        match case {
            "rewrite" => assert_eq!(d["append_only"], false, "{:#}", warm.1),
            _ => {
                if case == "clean" {
                    assert_eq!(warm.0, Some(0), "{:#}", warm.1);
                }
                assert_eq!(
                    (&d["branch_records"], &d["base_records"]),
                    (&2.into(), &1.into()),
                    "{case}"
                );
                assert_eq!(d["rebases"], case == "clean", "{:#}", warm.1);
            }
        }
    }
}

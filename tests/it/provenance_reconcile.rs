//! The warm PR check with provenance on (decision
//! `signed-check-from-a-remembered-base`): after one whole check remembered
//! the merge base's transcript and sidecar, a branch that appended signed
//! records is checked without reading either merge base file, and says
//! exactly what the whole check says. A branch that re-signs a base
//! record, drops a base approval, trusts a key it adds itself or commits
//! `.noma/cache` gets the whole check's verdict.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::common::{assert_ran, keygen, signed_policy, text, Repo};

const DOC: &str = "# Plan\n\n::claim{id=\"c1\" confidence=0.5}\nOne.\n::\n\n::claim{id=\"c2\" confidence=0.5}\nTwo.\n::\n";

struct Setup {
    r: Repo,
    person: PathBuf,
    agent: PathBuf,
}

fn set(id: &str, v: f64) -> String {
    json!({"op": "update_attribute", "id": id, "key": "confidence", "value": v}).to_string()
}

impl Setup {
    fn patch(&self, key: &Path, kind: &str, name: &str, op: &str) {
        let o = self.r.noma(&[
            "patch",
            "plan.noma",
            "--inplace",
            "--key",
            key.to_str().unwrap(),
            "--actor-kind",
            kind,
            "--actor-name",
            name,
            "--op",
            op,
        ]);
        assert_ran(&o);
    }

    /// A signed record by alice and an approved one by the agent.
    fn work(&self, v: f64) {
        self.patch(&self.person, "human", "alice", &set("c1", v));
        self.patch(&self.agent, "agent", "bot", &set("c2", v));
        let key = self.person.to_str().unwrap();
        assert_ran(
            &self
                .r
                .noma(&["approve", "plan.noma", "--key", key, "--yes"]),
        );
    }

    /// `git commit --amend --no-verify` of everything.
    fn amend(&self, what: &str) {
        self.r.ok(&["add", "-A"]);
        self.r
            .ok(&["commit", "-q", "--amend", "--no-verify", "-m", what]);
    }
}

/// main: provenance on (signatures required, agents need approval), then
/// signed and approved work; `feature`: two more signed records, the
/// agent's approved.
fn setup() -> Setup {
    let r = Repo::with_genesis_record(DOC);
    let (person, agent) = signed_policy(&r);
    r.commit_all("provenance on");
    let s = Setup { r, person, agent };
    s.work(0.6);
    s.r.commit_all("main work");
    s.r.ok(&["checkout", "-q", "-b", "feature"]);
    s.work(0.8);
    s.r.commit_all("feature work");
    s
}

/// `noma reconcile --base main --format json`, from an empty cache when
/// `fresh`; its exit code and report.
fn reconcile(r: &Repo, fresh: bool) -> (Option<i32>, Value) {
    let rm = if fresh { "rm -rf .noma/cache && " } else { "" };
    let o = r.sh(&format!("{rm}noma reconcile --base main --format json"));
    let v = serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", text(&o)));
    (o.status.code(), v)
}

/// [`reconcile`] on the warm cache with every blob streamed, as a large
/// one is: HEAD's sidecar is then read on a thread of its own while the
/// transcript is read.
fn reconcile_streamed(r: &Repo) -> (Option<i32>, Value) {
    let o = r.sh("NOMA_STREAM_BLOBS_OVER=0 noma reconcile --base main --format json");
    let v = serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", text(&o)));
    (o.status.code(), v)
}

/// The cache's rows of the engine ending in `engine`.
fn rows(r: &Repo, engine: &str) -> i64 {
    let c = rusqlite::Connection::open(r.path().join(".noma/cache/blocks.sqlite3")).unwrap();
    let like = format!("% {engine}");
    c.query_row(
        "SELECT count(*) FROM histories WHERE engine LIKE ?1",
        [like],
        |row| row.get(0),
    )
    .unwrap()
}

/// The first check against main is whole and remembers both rows.
fn remembered(s: &Setup) -> (Option<i32>, Value) {
    let cold = reconcile(&s.r, true);
    assert_eq!(cold.0, Some(0), "{:#}", cold.1);
    assert_eq!(rows(&s.r, "checkpoint/1"), 1);
    assert_eq!(rows(&s.r, "signed-base/1"), 1);
    cold
}

#[test]
fn a_warm_signed_append_reads_no_merge_base_file_and_says_what_the_whole_check_says() {
    let s = setup();
    let cold = remembered(&s);
    for f in ["plan.noma.patches", "plan.noma.provenance"] {
        let id = s.r.ok(&["rev-parse", &format!("main:{f}")]);
        let id = id.trim();
        let p =
            s.r.path()
                .join(".git/objects")
                .join(&id[..2])
                .join(&id[2..]);
        std::fs::remove_file(&p).unwrap();
    }
    let warm = reconcile(&s.r, false);
    assert_eq!(warm, cold);
    assert_eq!(reconcile_streamed(&s.r), cold, "streamed");
    let d = &warm.1["documents"][0];
    assert_eq!(d["branch_records"], 2, "{d:#}");
    let recs = d["records"].as_array().unwrap();
    assert_eq!(recs.len(), 2, "{d:#}");
    assert_eq!(recs[0]["signed_by"], "alice@example.com", "{d:#}");
    assert_eq!(recs[1]["approved_by"], "alice@example.com", "{d:#}");
}

/// After the rows were written the branch is changed by `edit` (past the
/// hook): the warm check says what a whole check from an empty cache says,
/// which names `code`.
fn changed_reports_as_whole(edit: &dyn Fn(&Setup), code: &str) {
    let s = setup();
    remembered(&s);
    edit(&s);
    let warm = reconcile(&s.r, false);
    let streamed = reconcile_streamed(&s.r);
    let cold = reconcile(&s.r, true);
    assert_eq!(warm, cold, "{code}");
    assert_eq!(streamed, cold, "{code}, streamed");
    assert_eq!(warm.0, Some(1), "{code}: {:#}", warm.1);
    assert!(warm.1.to_string().contains(code), "{code}: {:#}", warm.1);
}

/// The sidecar with main's alice-signed record's signature replaced by
/// another base record's, and the length of its lines that were main's.
fn resigned_sidecar(s: &Setup) -> (String, usize) {
    let main_side = s.r.git(&["show", "main:plan.noma.provenance"]).stdout;
    let base_lines = main_side.iter().filter(|&&b| b == b'\n').count();
    let side = s.r.read("plan.noma.provenance");
    let mut lines: Vec<String> = side.lines().map(str::to_string).collect();
    let sig = |l: &str| serde_json::from_str::<Value>(l).unwrap()["sig"].clone();
    let (first, second) = (sig(&lines[0]), sig(&lines[1]));
    assert!(first.is_string() && second.is_string(), "{side}");
    let (first, second) = (first.as_str().unwrap(), second.as_str().unwrap());
    let escaped = |v: &str| serde_json::to_string(v).unwrap();
    lines[0] = lines[0].replace(&escaped(first), &escaped(second));
    let base_len = lines[..base_lines].iter().map(|l| l.len() + 1).sum();
    let out: String = lines.iter().map(|l| format!("{l}\n")).collect();
    (out, base_len)
}

#[test]
fn a_branch_that_re_signs_a_base_record_gets_the_whole_verdict() {
    changed_reports_as_whole(
        &|s| {
            let (side, _) = resigned_sidecar(s);
            s.r.write("plan.noma.provenance", &side);
            s.amend("a base record re-signed");
        },
        "signature-invalid",
    );
}

#[test]
fn a_branch_that_drops_a_base_approval_gets_the_whole_verdict() {
    changed_reports_as_whole(
        &|s| {
            let side = s.r.read("plan.noma.provenance");
            let first = side.find("\"kind\":\"approval\"").unwrap();
            let start = side[..first].rfind('\n').map_or(0, |i| i + 1);
            let end = first + side[first..].find('\n').unwrap() + 1;
            s.r.write(
                "plan.noma.provenance",
                &format!("{}{}", &side[..start], &side[end..]),
            );
            s.amend("main's approval dropped");
        },
        "approval-missing",
    );
}

#[test]
fn a_branch_that_trusts_its_own_key_gets_the_whole_verdict() {
    changed_reports_as_whole(
        &|s| {
            let (mallory, public) = keygen(&s.r, "mallory");
            let mut signers = s.r.read(".noma/allowed_signers");
            signers.push_str(&format!(
                "mallory@example.com namespaces=\"noma\" {public}\n"
            ));
            s.r.write(".noma/allowed_signers", &signers);
            s.patch(&mallory, "human", "mallory", &set("c1", 0.1));
            s.amend("signed by a key the branch added");
        },
        "signer-not-allowed",
    );
}

#[test]
fn a_branch_that_relaxes_the_policy_gets_the_whole_verdict() {
    changed_reports_as_whole(
        &|s| {
            let config = s.r.read(".noma/config.yml");
            let relaxed =
                config.replace("agents_need_approval: true", "agents_need_approval: false");
            assert_ne!(config, relaxed);
            s.r.write(".noma/config.yml", &relaxed);
            s.patch(&s.agent, "agent", "bot", &set("c2", 0.1));
            s.amend("an unapproved agent record under a policy the branch relaxed");
        },
        "approval-missing",
    );
}

/// A forged signed-base row vouching for a re-signed base sidecar: trusted
/// as this machine's own memory while the cache is the machine's (the
/// forgery works), refused once the branch commits the cache.
#[test]
fn a_committed_cache_is_no_source_of_rows() {
    let s = setup();
    remembered(&s);
    let (side, base_len) = resigned_sidecar(&s);
    s.r.write("plan.noma.provenance", &side);
    s.amend("a base record re-signed");
    let db = s.r.path().join(".noma/cache/blocks.sqlite3");
    let c = rusqlite::Connection::open(&db).unwrap();
    let row: Vec<u8> = c
        .query_row(
            "SELECT attribution FROM histories WHERE engine LIKE '% signed-base/1'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let mut forged = row[..1].to_vec();
    forged.extend_from_slice(&(base_len as u64).to_le_bytes());
    forged.extend_from_slice(blake3::hash(&side.as_bytes()[..base_len]).as_bytes());
    forged.extend_from_slice(&row[41..]);
    c.execute(
        "UPDATE histories SET attribution = ?1 WHERE engine LIKE '% signed-base/1'",
        [&forged],
    )
    .unwrap();
    drop(c);
    assert_eq!(reconcile(&s.r, false).0, Some(0), "the forged row is read");
    s.r.ok(&["add", "-f", ".noma/cache"]);
    s.amend("commits its cache");
    let warm = reconcile(&s.r, false);
    let cold = reconcile(&s.r, true);
    assert_eq!(warm, cold);
    assert_eq!(warm.0, Some(1), "{:#}", warm.1);
    assert!(
        warm.1.to_string().contains("signature-invalid"),
        "{:#}",
        warm.1
    );
}

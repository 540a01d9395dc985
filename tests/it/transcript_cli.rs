//! `noma patch` / `noma replay` / `noma blocks` / `noma schema` driven
//! through the real binary in temp dirs.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use noma_core::doc::hash::sha256_hex;
use serde_json::{json, Value};

const DOC: &str = "# Doc\n\n::claim{id=\"c1\" confidence=0.5}\nbody one.\n::\n\n::claim{id=\"c2\" confidence=0.5}\nbody two.\n::\n";

struct Fixture {
    _dir: tempfile::TempDir,
    doc: PathBuf,
}

impl Fixture {
    fn new(text: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let doc = dir.path().join("d.noma");
        std::fs::write(&doc, text).unwrap();
        Fixture { _dir: dir, doc }
    }
    fn path(&self, name: &str) -> PathBuf {
        self.doc.with_file_name(name)
    }
    fn transcript(&self) -> PathBuf {
        self.path("d.noma.patches")
    }
    fn text(&self) -> String {
        std::fs::read_to_string(&self.doc).unwrap()
    }
    fn records(&self) -> Vec<Value> {
        let raw = std::fs::read_to_string(self.transcript()).unwrap_or_default();
        raw.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
    /// Runs `noma patch <doc> --inplace --format json --op OP <extra>`.
    fn patch(&self, op: Value, extra: &[&str]) -> (i32, Value) {
        let out = noma()
            .arg("patch")
            .arg(&self.doc)
            .args([
                "--inplace",
                "--format",
                "json",
                "--actor-kind",
                "agent",
                "--actor-name",
                "tester",
                "--op",
            ])
            .arg(op.to_string())
            .args(extra)
            .output()
            .unwrap();
        let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        (out.status.code().unwrap_or(-1), v)
    }
}

fn noma() -> Command {
    Command::cargo_bin("noma").unwrap()
}

fn set(id: &str, key: &str, value: Value) -> Value {
    json!({"op": "update_attribute", "id": id, "key": key, "value": value})
}

fn codes(r: &Value) -> Vec<String> {
    r["diagnostics"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|d| d["code"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// `noma replay DOC --base BASE` exits 1 with a report that satisfies `report`.
fn replay_diverges(doc: &Path, base: &Path, report: impl predicates::Predicate<str>) {
    noma()
        .arg("replay")
        .arg(doc)
        .arg("--base")
        .arg(base)
        .assert()
        .code(1)
        .stdout(report);
}

const REQUIRED: [&str; 14] = [
    "protocol_version",
    "tool_version",
    "op_id",
    "ts",
    "actor",
    "doc_uri",
    "pre_sha256",
    "post_sha256",
    "pre_sha",
    "post_sha",
    "op",
    "patch_result",
    "pre_validation",
    "post_validation",
];

#[test]
fn records_have_every_required_field_and_a_valid_chain() {
    let f = Fixture::new(DOC);
    let base = f.path("base.noma");
    std::fs::write(&base, DOC).unwrap();
    let (code, out) = f.patch(
        json!([
            set("c1", "confidence", json!(0.8)),
            set("c2", "confidence", json!(0.9))
        ]),
        &["--reason", "tune"],
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["records"].as_array().unwrap().len(), 2);
    let (code, _) = f.patch(set("c1", "confidence", json!(0.7)), &[]);
    assert_eq!(code, 0);
    assert!(f.text().contains("confidence=0.7"));

    let raw = std::fs::read(f.transcript()).unwrap();
    let lines: Vec<&[u8]> = raw.split_inclusive(|&b| b == b'\n').collect();
    let recs = f.records();
    assert_eq!(recs.len(), 3);
    let mut ids = std::collections::HashSet::new();
    for (i, r) in recs.iter().enumerate() {
        for field in REQUIRED {
            assert!(r.get(field).is_some(), "record {i} lacks {field}");
        }
        assert_eq!(r["protocol_version"], "1.0");
        assert!(ids.insert(r["op_id"].as_str().unwrap().to_string()));
        assert_eq!(uuid_version(r["op_id"].as_str().unwrap()), Some('4'));
        let ts = r["ts"].as_str().unwrap();
        assert_eq!(ts.len(), 24, "{ts}");
        assert!(ts.ends_with('Z') && &ts[19..20] == ".", "{ts}");
        assert!(r["doc_uri"].as_str().unwrap().starts_with("file:///"));
        assert!(r["doc_uri"].as_str().unwrap().ends_with("/d.noma"));
        assert_eq!(r["actor"], json!({"kind": "agent", "name": "tester"}));
        assert_eq!(
            &r["pre_sha256"].as_str().unwrap()[..8],
            r["pre_sha"].as_str().unwrap()
        );
        assert_eq!(
            &r["post_sha256"].as_str().unwrap()[..8],
            r["post_sha"].as_str().unwrap()
        );
        assert_eq!(r["patch_result"], "applied");
        assert_eq!(r["signature"], Value::Null);
        assert_eq!(
            r["reason"].as_str(),
            if i < 2 { Some("tune") } else { None }
        );
        if i == 0 {
            assert!(r.get("prev_entry_sha256").is_none());
            assert_eq!(
                r["pre_sha256"].as_str().unwrap(),
                sha256_hex(DOC.as_bytes())
            );
        } else {
            assert_eq!(
                r["prev_entry_sha256"].as_str().unwrap(),
                sha256_hex(lines[i - 1])
            );
            assert_eq!(r["pre_sha256"], recs[i - 1]["post_sha256"], "hash chain");
        }
    }
    assert_eq!(
        recs[2]["post_sha256"].as_str().unwrap(),
        sha256_hex(f.text().as_bytes())
    );
    noma()
        .arg("replay")
        .arg(&f.doc)
        .arg("--base")
        .arg(&base)
        .assert()
        .success()
        .stdout(predicates::str::contains("3 applied"));
}

fn uuid_version(s: &str) -> Option<char> {
    (s.len() == 36).then(|| s.chars().nth(14)).flatten()
}

#[test]
fn failing_op_aborts_the_list() {
    let f = Fixture::new(DOC);
    let (code, out) = f.patch(
        json!([
            set("c1", "confidence", json!(0.1)),
            set("nope", "x", json!(1)),
            set("c2", "confidence", json!(0.2))
        ]),
        &[],
    );
    assert_eq!(code, 1);
    assert_eq!(f.text(), DOC, "nothing may be written");
    let recs = f.records();
    assert_eq!(recs.len(), 2, "later ops are not attempted");
    assert_eq!(out["records"].as_array().unwrap().len(), 2);
    assert!(codes(&recs[0]).contains(&"op_list_aborted".into()));
    assert!(codes(&recs[1]).contains(&"target_missing".into()));
    for r in &recs {
        assert_eq!(r["patch_result"], "rejected");
        assert_eq!(r["pre_sha256"], r["post_sha256"]);
        assert_eq!(
            r["pre_sha256"].as_str().unwrap(),
            sha256_hex(DOC.as_bytes())
        );
    }
}

#[test]
fn strict_mode_blocks_on_pre_validation_errors() {
    let broken = "::claim{id=\"c1\" confidence=0.5}\nnever closed\n";
    let f = Fixture::new(broken);
    let (code, _) = f.patch(set("c1", "confidence", json!(0.6)), &["--strict"]);
    assert_eq!(code, 1);
    assert_eq!(f.text(), broken);
    let recs = f.records();
    assert_eq!(recs[0]["pre_validation"], "error");
    assert!(codes(&recs[0]).contains(&"pre_validation_blocked".into()));
    // Without --strict, pre-validation errors do not block.
    let (code, out) = f.patch(set("c1", "confidence", json!(0.6)), &[]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(f.records()[1]["patch_result"], "applied");
}

#[test]
fn expected_sha_and_base_sha_drift() {
    let f = Fixture::new(DOC);
    let (code, _) = f.patch(
        json!([
            set("c1", "confidence", json!(0.1)),
            set("c2", "confidence", json!(0.1))
        ]),
        &["--expected-sha", "00000000"],
    );
    assert_eq!(code, 1);
    assert!(f
        .records()
        .iter()
        .all(|r| codes(r).contains(&"sha_mismatch".into())));
    assert_eq!(f.text(), DOC);
    let good = sha256_hex(DOC.as_bytes())[..8].to_string();
    let other = sha256_hex(b"what the agent read");
    let (code, out) = f.patch(
        set("c1", "confidence", json!(0.1)),
        &["--expected-sha", &good, "--base-sha256", &other],
    );
    assert_eq!(code, 0, "{out}");
    let r = &f.records()[2];
    assert_eq!(r["patch_result"], "applied");
    assert_eq!(r["base_sha256"].as_str(), Some(other.as_str()));
    let drift = r["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == "base_sha_drift")
        .unwrap();
    assert_eq!(drift["severity"], "warning");
    assert_eq!(drift["phase"], "pre");
    assert_eq!(r["pre_validation"], "warn");
}

#[test]
fn noop_keeps_hashes_and_bytes() {
    let f = Fixture::new(DOC);
    let (code, _) = f.patch(set("c1", "confidence", json!(0.5)), &[]);
    assert_eq!(code, 0);
    let r = &f.records()[0];
    assert_eq!(r["patch_result"], "noop");
    assert_eq!(r["pre_sha256"], r["post_sha256"]);
    assert_eq!(f.text(), DOC);
}

#[test]
fn malformed_transcript_lines_are_named_by_line() {
    let f = Fixture::new(DOC);
    f.patch(set("c1", "confidence", json!(0.9)), &[]);
    let good = std::fs::read_to_string(f.transcript()).unwrap();
    let base = f.path("base.noma");
    std::fs::write(&base, DOC).unwrap();

    std::fs::write(f.transcript(), format!("{good}{{oops\n")).unwrap();
    replay_diverges(&f.doc, &base, predicates::str::contains("line 2"));

    let mut v: Value = serde_json::from_str(good.trim_end()).unwrap();
    v.as_object_mut().unwrap().remove("op_id");
    std::fs::write(f.transcript(), format!("{good}{v}\n")).unwrap();
    replay_diverges(
        &f.doc,
        &base,
        predicates::str::contains("line 2").and(predicates::str::contains("op_id")),
    );

    // A Phase 0 record is not a v1.0 record.
    std::fs::write(f.transcript(), format!("{{\"v\":1}}\n{good}")).unwrap();
    replay_diverges(&f.doc, &base, predicates::str::contains("line 1"));

    // A torn final line is reported, never repaired by the verifier;
    // `noma repair` moves it aside.
    let torn = format!("{good}{{\"protocol_ver");
    std::fs::write(f.transcript(), &torn).unwrap();
    replay_diverges(
        &f.doc,
        &base,
        predicates::str::contains("torn").and(predicates::str::contains("line 2")),
    );
    assert_eq!(std::fs::read_to_string(f.transcript()).unwrap(), torn);
    noma()
        .arg("repair")
        .arg(&f.doc)
        .assert()
        .success()
        .stdout(predicates::str::contains(".torn"));
    assert_eq!(std::fs::read_to_string(f.transcript()).unwrap(), good);
}

use predicates::prelude::PredicateBooleanExt;

#[test]
fn unrecorded_edit_is_refused_unless_forced_and_lag_rolls_forward() {
    let f = Fixture::new(DOC);
    f.patch(set("c1", "confidence", json!(0.9)), &[]);
    let patched = f.text();
    // A crash between the transcript commit and the rename leaves the
    // document at its pre-state and the writer's intent marker behind.
    let records = std::fs::read(f.transcript()).unwrap();
    let marker = json!({
        "transcript_len": 0,
        "append_len": records.len(),
        "append_sha256": sha256_hex(&records),
        "doc_pre_sha256": sha256_hex(DOC.as_bytes()),
        "doc_post_sha256": sha256_hex(patched.as_bytes()),
    });
    std::fs::write(f.path(".d.noma.patches.noma-intent"), marker.to_string()).unwrap();
    std::fs::write(&f.doc, DOC).unwrap();
    let (code, out) = f.patch(set("c2", "confidence", json!(0.1)), &[]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["recovery"]["rolled_forward"], 1);
    assert!(f.text().contains("confidence=0.9") && f.text().contains("confidence=0.1"));
    assert!(!f.path(".d.noma.patches.noma-intent").exists());

    // An edit no record explains.
    std::fs::write(&f.doc, f.text().replace("body one.", "body edited.")).unwrap();
    noma()
        .arg("patch")
        .arg(&f.doc)
        .args(["--inplace", "--op"])
        .arg(set("c2", "confidence", json!(0.2)).to_string())
        .assert()
        .code(1)
        .stderr(predicates::str::contains("unrecorded edit"));
    assert_eq!(f.records().len(), 2);
    let base = f.path("base.noma");
    std::fs::write(&base, DOC).unwrap();
    replay_diverges(&f.doc, &base, predicates::str::contains("block c1 changed"));
    let (code, _) = f.patch(set("c2", "confidence", json!(0.2)), &["--force"]);
    assert_eq!(code, 0);
}

#[test]
fn dry_run_out_and_book_manifest() {
    let f = Fixture::new(DOC);
    noma()
        .arg("patch")
        .arg(&f.doc)
        .arg("--op")
        .arg(set("c1", "confidence", json!(0.3)).to_string())
        .assert()
        .success()
        .stdout(predicates::str::contains(
            "+::claim{id=\"c1\" confidence=0.3",
        ));
    assert_eq!(f.text(), DOC);
    assert!(!f.transcript().exists());
    let out = f.path("new.noma");
    noma()
        .arg("patch")
        .arg(&f.doc)
        .arg("--out")
        .arg(&out)
        .arg("--op")
        .arg(set("c1", "confidence", json!(0.3)).to_string())
        .assert()
        .success();
    assert!(std::fs::read_to_string(&out)
        .unwrap()
        .contains("confidence=0.3"));
    assert_eq!(f.text(), DOC);

    let book = f.path("book.noma.yml");
    std::fs::write(&book, "title: x\nchapters: []\n").unwrap();
    let o = noma()
        .arg("patch")
        .arg(&book)
        .args(["--format", "json", "--op"])
        .arg(set("c1", "x", json!(1)).to_string())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(codes(&v["records"][0]).contains(&"unsupported_op".into()));
}

#[test]
fn capability_descriptor_is_advisory_and_shape_checked() {
    let f = Fixture::new(DOC);
    let side = f.path("d.noma.capabilities.yml");
    std::fs::write(
        &side,
        "nomaAgent:\n  version: 1\n  blocks:\n    claim:\n      ops: [replace_block]\n",
    )
    .unwrap();
    let (code, out) = f.patch(set("c1", "confidence", json!(0.2)), &[]);
    assert_eq!(code, 0, "advisory only: {out}");
    let r = &f.records()[0];
    assert_eq!(r["patch_result"], "applied");
    assert!(codes(r).contains(&"capability_not_granted".into()));
    std::fs::write(
        &side,
        "nomaAgent:\n  version: 1\n  blocks:\n    claim:\n      ops: [fly]\n",
    )
    .unwrap();
    noma()
        .arg("patch")
        .arg(&f.doc)
        .args(["--inplace", "--op"])
        .arg(set("c1", "confidence", json!(0.3)).to_string())
        .assert()
        .code(2)
        .stderr(
            predicates::str::contains("capabilities.yml")
                .and(predicates::str::contains("malformed")),
        );
}

#[test]
fn blocks_and_schemas() {
    let f = Fixture::new(DOC);
    let o = noma()
        .arg("blocks")
        .arg(&f.doc)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(o.status.success());
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let c1 = v
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["id"] == "c1")
        .unwrap();
    assert_eq!(c1["lines"], json!([3, 5]));
    assert_eq!(c1["name"], "claim");
    assert_eq!(
        c1["sha256"].as_str().unwrap(),
        sha256_hex(b"::claim{id=\"c1\" confidence=0.5}\nbody one.\n::")
    );
    for which in ["patch-op", "transcript", "capability"] {
        let o = noma().args(["schema", which]).output().unwrap();
        assert!(o.status.success());
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert!(v.is_object());
    }
    let _: &Path = f.doc.as_path();
}

use crate::common;

#[test]
fn conformance_replay_chain_fixture() {
    let Some(reference) = common::shared_reference("conformance_replay_chain_fixture") else {
        return;
    };
    let dir = reference.join("noma/conformance/patch/replay-chain");
    let input = std::fs::read_to_string(dir.join("input.noma")).unwrap();
    let expected = std::fs::read_to_string(dir.join("expected.post.noma")).unwrap();
    let f = Fixture::new(&input);
    let base = f.path("base.noma");
    std::fs::write(&base, &input).unwrap();
    noma()
        .arg("patch")
        .arg(&f.doc)
        .arg("--inplace")
        .arg("--ops")
        .arg(dir.join("patch.json"))
        .assert()
        .success();
    assert_eq!(f.text(), expected);
    let recs = f.records();
    assert_eq!(recs.len(), 3);
    assert_eq!(
        recs[2]["post_sha256"].as_str().unwrap(),
        sha256_hex(expected.as_bytes())
    );
    noma()
        .arg("replay")
        .arg(&f.doc)
        .arg("--base")
        .arg(&base)
        .assert()
        .success();
}

/// The op of a trailing rejected record is anchored by replay:
/// swapped for one that applies, or for one refused with another code,
/// replay fails naming the line.
#[test]
fn a_trailing_rejected_records_op_cannot_be_swapped() {
    use predicates::prelude::PredicateBooleanExt;
    let f = Fixture::new(DOC);
    std::fs::write(f.path("base.noma"), DOC).unwrap();
    assert_eq!(f.patch(set("c1", "confidence", json!(0.9)), &[]).0, 0);
    assert_eq!(f.patch(set("gone", "confidence", json!(0.1)), &[]).0, 1);
    noma()
        .arg("replay")
        .arg(&f.doc)
        .arg("--base")
        .arg(f.path("base.noma"))
        .assert()
        .success();
    let original = std::fs::read_to_string(f.transcript()).unwrap();
    let swap = |op: Value| {
        let mut lines: Vec<String> = original.lines().map(String::from).collect();
        let mut last: Value = serde_json::from_str(&lines[1]).unwrap();
        last["op"] = op;
        lines[1] = last.to_string();
        std::fs::write(f.transcript(), lines.join("\n") + "\n").unwrap();
    };
    for op in [
        set("c2", "confidence", json!(0.1)),
        json!({"op": "add_block", "content": "::claim{id=\"c2\"}\ndup.\n::\n"}),
    ] {
        swap(op.clone());
        replay_diverges(
            &f.doc,
            &f.path("base.noma"),
            predicates::str::contains("line 2").and(predicates::str::contains("rejected record")),
        );
    }
}

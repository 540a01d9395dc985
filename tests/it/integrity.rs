//! Transcript integrity through the real binary (the rules of
//! `.noma/transcripts.noma`): complete requests are never cut, verifiers
//! never write, tampering is named by line, malformed requests write
//! nothing, a restored document is never rolled forward, records stay
//! small, and unreadable inputs fail at once.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const NOMA: &str = env!("CARGO_BIN_EXE_noma");

const DOC: &str = "# Doc\n\n::claim{id=\"c1\" confidence=0.5}\nbody one.\n::\n\n::claim{id=\"c2\" confidence=0.5}\nbody two.\n::\n";

struct Dir {
    dir: tempfile::TempDir,
}

impl Dir {
    fn new(text: &str) -> Dir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("d.noma"), text).unwrap();
        Dir { dir }
    }
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
    fn doc(&self) -> PathBuf {
        self.path("d.noma")
    }
    fn transcript(&self) -> PathBuf {
        self.path("d.noma.patches")
    }
    fn bytes(&self, name: &str) -> Vec<u8> {
        std::fs::read(self.path(name)).unwrap_or_default()
    }
    fn noma(&self, args: &[&str]) -> Output {
        Command::new(NOMA)
            .args(args)
            .current_dir(self.dir.path())
            .output()
            .unwrap()
    }
    /// `noma patch --inplace` of one op-list; returns the exit code.
    fn patch(&self, ops: Value, extra: &[&str]) -> i32 {
        let ops = ops.to_string();
        let mut args = vec!["patch", "d.noma", "--inplace", "--op", &ops];
        args.extend_from_slice(extra);
        let o = self.noma(&args);
        o.status.code().unwrap_or(-1)
    }
    fn replay(&self, extra: &[&str]) -> Output {
        let mut args = vec!["replay", "d.noma"];
        args.extend_from_slice(extra);
        self.noma(&args)
    }
    fn lines(&self) -> Vec<Value> {
        String::from_utf8(self.bytes("d.noma.patches"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn set(id: &str, key: &str, value: Value) -> Value {
    json!({"op":"update_attribute","id":id,"key":key,"value":value})
}

#[test]
fn a_complete_rejected_op_list_survives_later_patches_and_replays() {
    let d = Dir::new(DOC);
    std::fs::copy(d.doc(), d.path("base.noma")).unwrap();
    // Op 1 of 3 fails: two records (op 0 aborted, op 1 rejected), fewer
    // than the list's three ops, exactly as §3.2 requires.
    let list = json!([
        set("c1", "n", json!(1)),
        set("nope", "n", json!(1)),
        set("c2", "n", json!(1))
    ]);
    assert_eq!(d.patch(list, &[]), 1);
    assert_eq!(d.lines().len(), 2);
    let after_list = d.bytes("d.noma.patches");
    for i in 0..3 {
        assert_eq!(d.patch(set("c2", "k", json!(i)), &[]), 0);
        let o = d.replay(&["--base", "base.noma"]);
        assert!(o.status.success(), "{}", text(&o));
    }
    let now = d.bytes("d.noma.patches");
    assert!(now.starts_with(&after_list), "the rejected list was cut");
    assert_eq!(d.lines().len(), 5);
}

#[test]
fn replay_never_changes_a_file_even_when_a_repair_is_due() {
    let d = Dir::new(DOC);
    std::fs::copy(d.doc(), d.path("base.noma")).unwrap();
    assert_eq!(d.patch(set("c1", "n", json!(1)), &[]), 0);
    let before_doc = d.bytes("d.noma");
    // A torn final line, as a crash of a foreign writer would leave.
    let mut torn = d.bytes("d.noma.patches");
    torn.extend_from_slice(b"{\"protocol_version\":\"1.0\"");
    std::fs::write(d.transcript(), &torn).unwrap();
    let o = d.replay(&["--base", "base.noma"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("line 2"), "{}", text(&o));
    assert_eq!(d.bytes("d.noma.patches"), torn);
    assert_eq!(d.bytes("d.noma"), before_doc);
    // A writer refuses and names the repair; the repair moves the bytes aside.
    assert_eq!(d.patch(set("c1", "n", json!(2)), &[]), 1);
    assert_eq!(d.bytes("d.noma.patches"), torn);
    let o = d.noma(&["repair", "d.noma"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(d
        .bytes("d.noma.patches.torn")
        .starts_with(b"{\"protocol_version\""));
    let o = d.replay(&["--base", "base.noma"]);
    assert!(o.status.success(), "{}", text(&o));
}

/// Builds a transcript of: one rejected request, then two applied ones.
fn tamper_fixture() -> Dir {
    let d = Dir::new(DOC);
    std::fs::copy(d.doc(), d.path("base.noma")).unwrap();
    assert_eq!(d.patch(set("nope", "n", json!(1)), &[]), 1);
    assert_eq!(d.patch(set("c1", "n", json!(1)), &[]), 0);
    assert_eq!(d.patch(set("c2", "n", json!(2)), &[]), 0);
    let o = d.replay(&["--base", "base.noma"]);
    assert!(o.status.success(), "{}", text(&o));
    d
}

fn raw_lines(d: &Dir) -> Vec<Vec<u8>> {
    d.bytes("d.noma.patches")
        .split_inclusive(|&b| b == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

fn edit(line: &[u8], f: impl FnOnce(&mut Value)) -> Vec<u8> {
    let mut v: Value = serde_json::from_slice(line).unwrap();
    f(&mut v);
    format!("{v}\n").into_bytes()
}

#[test]
fn each_tamper_kind_fails_replay_with_its_line() {
    let d = tamper_fixture();
    let l = raw_lines(&d);
    let op_id = serde_json::from_slice::<Value>(&l[1]).unwrap()["op_id"].clone();
    let cases: Vec<(&str, Vec<Vec<u8>>, &str)> = vec![
        (
            "drop the first record",
            vec![l[1].clone(), l[2].clone()],
            "line 1",
        ),
        (
            "duplicate the first record",
            vec![l[0].clone(), l[0].clone(), l[1].clone(), l[2].clone()],
            "line 2",
        ),
        (
            "duplicate the last record",
            vec![l[0].clone(), l[1].clone(), l[2].clone(), l[2].clone()],
            "line 4",
        ),
        (
            "duplicate op_id",
            vec![
                l[0].clone(),
                l[1].clone(),
                edit(&l[2], |v| v["op_id"] = op_id.clone()),
            ],
            "line 3",
        ),
        (
            "edited last record",
            vec![
                l[0].clone(),
                l[1].clone(),
                edit(&l[2], |v| v["patch_result"] = json!("rejected")),
            ],
            "line 3",
        ),
    ];
    let doc = d.bytes("d.noma");
    for (what, lines, want) in cases {
        let tampered = lines.concat();
        std::fs::write(d.transcript(), &tampered).unwrap();
        let o = d.replay(&["--base", "base.noma"]);
        assert_eq!(o.status.code(), Some(1), "{what}: {}", text(&o));
        assert!(
            text(&o).contains(want),
            "{what}: wanted {want}: {}",
            text(&o)
        );
        assert_eq!(d.bytes("d.noma.patches"), tampered, "{what}: replay wrote");
        assert_eq!(d.bytes("d.noma"), doc, "{what}: replay wrote");
    }
    // An empty transcript with an edited document.
    std::fs::write(d.transcript(), b"").unwrap();
    let o = d.replay(&["--base", "base.noma"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
}

#[test]
fn a_non_object_op_is_refused_and_writes_nothing() {
    let d = Dir::new(DOC);
    assert_eq!(d.patch(set("c1", "n", json!(1)), &[]), 0);
    let before = d.bytes("d.noma.patches");
    for bad in [
        json!("delete_block"),
        json!(3),
        json!(null),
        json!(true),
        json!([[1]]),
    ] {
        let o = d.noma(&[
            "patch",
            "d.noma",
            "--inplace",
            "--op",
            &json!([bad]).to_string(),
        ]);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", text(&o));
        assert!(text(&o).contains("op 0"), "{}", text(&o));
        assert_eq!(
            d.bytes("d.noma.patches"),
            before,
            "{bad}: something was recorded"
        );
    }
    // Unknown ops and wrong field types: refused the same way.
    assert_eq!(d.patch(json!({"op":"explode","id":"c1"}), &[]), 2);
    assert_eq!(d.patch(json!({"op":"delete_block","id":7}), &[]), 2);
    assert_eq!(d.bytes("d.noma.patches"), before);
    assert_eq!(d.patch(set("c1", "n", json!(2)), &[]), 0);
}

#[test]
fn a_restored_document_is_an_edit_not_a_roll_forward() {
    let d = Dir::new(DOC);
    assert_eq!(d.patch(set("c1", "n", json!(1)), &[]), 0);
    let before_last = d.bytes("d.noma");
    assert_eq!(d.patch(set("c2", "n", json!(2)), &[]), 0);
    // As `git checkout -- d.noma` to the state before the last request.
    std::fs::write(d.doc(), &before_last).unwrap();
    let o = d.noma(&[
        "patch",
        "d.noma",
        "--inplace",
        "--op",
        &set("c1", "m", json!(3)).to_string(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("unrecorded edit"), "{}", text(&o));
    assert!(!text(&o).contains("rolled forward"), "{}", text(&o));
    assert_eq!(d.bytes("d.noma"), before_last);
    // --force patches on top of the person's state; it is never replaced.
    assert_eq!(d.patch(set("c1", "m", json!(3)), &["--force"]), 0);
    let now = String::from_utf8(d.bytes("d.noma")).unwrap();
    assert!(now.contains("m=3") && !now.contains("n=2"), "{now}");
}

#[test]
fn records_of_a_document_with_twenty_thousand_warnings_stay_small() {
    let mut doc = String::new();
    for i in 0..20_000 {
        doc.push_str(&format!("::claim{{id=\"c{i}\"}}\nClaim {i}.\n::\n\n"));
    }
    let d = Dir::new(&doc);
    let o = d.noma(&["check", "d.noma", "--format", "json"]);
    let warnings = text(&o).matches("\"warning\"").count();
    assert!(warnings >= 20_000, "{warnings} warnings");
    assert_eq!(d.patch(set("c5", "n", json!(1)), &[]), 0);
    let size = d.bytes("d.noma.patches").len();
    assert!(size < 10 * 1024, "transcript grew by {size} bytes");
    let o = d.replay(&[]);
    assert!(!text(&o).contains("panicked"), "{}", text(&o));
}

#[cfg(unix)]
/// Runs `noma` with a watchdog: the process must end by itself (the
/// limit is far above the expected milliseconds; it only stops a hang).
fn run_bounded(dir: &Path, args: &[&str]) -> (Option<i32>, String, Duration) {
    let started = Instant::now();
    let mut child = Command::new(NOMA)
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let limit = Duration::from_secs(20);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let out = child.wait_with_output().unwrap();
            return (status.code(), text(&out), started.elapsed());
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("noma {args:?} did not finish within {limit:?}: it blocks on its input");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[cfg(unix)]
#[test]
fn fifos_and_devices_are_refused_at_once() {
    let d = Dir::new(DOC);
    let fifo = d.path("f.noma");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    std::fs::copy(d.doc(), d.path("g.noma")).unwrap();
    let g_fifo_transcript = d.path("g.noma.patches");
    assert!(Command::new("mkfifo")
        .arg(&g_fifo_transcript)
        .status()
        .unwrap()
        .success());
    let op = set("c1", "n", json!(1)).to_string();
    let cases: Vec<Vec<&str>> = vec![
        vec!["check", "f.noma"],
        vec!["parse", "f.noma"],
        vec!["blocks", "f.noma"],
        vec!["patch", "f.noma", "--op", &op],
        vec!["patch", "f.noma", "--inplace", "--op", &op],
        vec!["replay", "f.noma"],
        vec!["check", "/dev/zero"],
        vec!["check", "/dev/urandom"],
        vec!["patch", "/dev/zero", "--op", &op],
        vec!["replay", "d.noma", "--base", "/dev/zero"],
        vec!["patch", "g.noma", "--inplace", "--op", &op],
        vec!["patch", "d.noma", "--ops", "/dev/zero"],
    ];
    for args in cases {
        let (code, out, took) = run_bounded(d.dir.path(), &args);
        assert_eq!(code, Some(2), "{args:?}: {out}");
        assert!(!out.contains("panicked"), "{args:?}: {out}");
        eprintln!("{args:?}: exit 2 in {took:?}");
    }
}

#[test]
fn files_over_the_size_cap_are_refused_with_the_knob_named() {
    let d = Dir::new(DOC);
    let o = Command::new(NOMA)
        .args(["check", "d.noma"])
        .current_dir(d.dir.path())
        .env("NOMA_MAX_FILE_BYTES", "10")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("NOMA_MAX_FILE_BYTES"), "{}", text(&o));
}

use crate::common::{self, mcp_repo as git_repo, tool_body as body, McpClient as Mcp};

#[test]
fn mcp_refuses_non_object_ops_without_locking_the_document() {
    let repo = git_repo(DOC);
    let mut m = Mcp::start(repo.path());
    for bad in [
        json!("delete_block"),
        json!(3),
        json!([]),
        json!(null),
        json!(true),
    ] {
        let (is_error, body) = m.call("patch_block", json!({"file":"a.noma","op":bad}));
        assert!(is_error, "{bad}: {body}");
        assert_eq!(body["code"], "unsupported_op", "{body}");
        assert!(
            !repo.path().join("a.noma.patches").exists(),
            "{bad}: recorded"
        );
    }
    let (is_error, body) = m.call(
        "patch_block",
        json!({"file":"a.noma","op":set("c1","n",json!(1))}),
    );
    assert!(!is_error, "{body}");
    m.stop();
    let o = Command::new(NOMA)
        .args([
            "patch",
            "a.noma",
            "--inplace",
            "--op",
            &set("c2", "n", json!(1)).to_string(),
        ])
        .current_dir(repo.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn mcp_never_rolls_a_restored_document_forward() {
    let repo = git_repo(DOC);
    let mut m = Mcp::start(repo.path());
    let (e, b) = m.call(
        "patch_block",
        json!({"file":"a.noma","op":set("c1","n",json!(1))}),
    );
    assert!(!e, "{b}");
    let before_last = std::fs::read(repo.path().join("a.noma")).unwrap();
    let (e, b) = m.call(
        "patch_block",
        json!({"file":"a.noma","op":set("c2","n",json!(2))}),
    );
    assert!(!e, "{b}");
    std::fs::write(repo.path().join("a.noma"), &before_last).unwrap();
    let (is_error, body) = m.call(
        "patch_block",
        json!({"file":"a.noma","op":set("c1","m",json!(3))}),
    );
    // A coded refusal (normal content), not an infrastructure fault.
    assert!(!is_error, "{body}");
    assert_eq!(body["code"], "unrecorded_edit", "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("unrecorded edit"),
        "{body}"
    );
    assert_eq!(
        std::fs::read(repo.path().join("a.noma")).unwrap(),
        before_last
    );
    m.stop();
}

#[test]
fn a_thousand_concurrent_mcp_patches_all_succeed_and_replay() {
    const CLIENTS: u64 = 4;
    const CALLS: u64 = 250;
    let mut doc = String::from("# Doc\n\n");
    for b in 0..8 {
        doc.push_str(&format!("::claim{{id=\"b{b}\"}}\nBlock {b}.\n::\n\n"));
    }
    let repo = git_repo(&doc);
    std::fs::write(repo.path().join("base.noma"), &doc).unwrap();
    let root = repo.path().to_path_buf();
    let handles: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let root = root.clone();
            std::thread::spawn(move || {
                let mut m = Mcp::start(&root);
                // Every call in flight at once, then every answer.
                for i in 0..CALLS {
                    let op = set(
                        &format!("b{}", (c * CALLS + i) % 8),
                        &format!("k{c}x{i}"),
                        json!(i),
                    );
                    m.call_async(i + 1, "patch_block", json!({"file":"a.noma","op":op}));
                }
                let mut failures = Vec::new();
                for _ in 0..CALLS {
                    let r = m.recv();
                    let (is_error, body) = body(&r);
                    if is_error || body["ok"] != json!(true) {
                        failures.push(body.to_string());
                    }
                }
                m.stop();
                failures
            })
        })
        .collect();
    let failures: Vec<String> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    assert!(
        failures.is_empty(),
        "{} failed, first: {}",
        failures.len(),
        failures[0]
    );
    let transcript = std::fs::read_to_string(root.join("a.noma.patches")).unwrap();
    assert_eq!(transcript.lines().count() as u64, CLIENTS * CALLS);
    let o = Command::new(NOMA)
        .args(["replay", "a.noma", "--base", "base.noma"])
        .current_dir(&root)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let final_doc = std::fs::read_to_string(root.join("a.noma")).unwrap();
    assert_eq!(final_doc.matches("=").count() as u64, 8 + CLIENTS * CALLS);
}

#[test]
fn every_record_kind_validates_against_the_published_transcript_schema() {
    let Some(reference) = common::shared_reference(
        "every_record_kind_validates_against_the_published_transcript_schema",
    ) else {
        return;
    };
    let dir = reference.join("noma/schemas");
    let read = |name: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(dir.join(name)).unwrap()).unwrap()
    };
    let (transcript, patch_op) = (read("transcript.schema.json"), read("patch-op.schema.json"));
    let registry = jsonschema::Registry::new()
        .add(patch_op["$id"].as_str().unwrap(), patch_op.clone())
        .unwrap()
        .prepare()
        .unwrap();
    let validator = jsonschema::options()
        .with_registry(&registry)
        .build(&transcript)
        .unwrap();
    let d = Dir::new(DOC);
    let sha = noma_core::doc::hash::sha256_hex(DOC.as_bytes());
    assert_eq!(
        d.patch(
            set("c1", "n", json!(1)),
            &["--reason", "why", "--actor-kind", "agent"]
        ),
        0
    );
    assert_eq!(d.patch(set("c1", "n", json!(1)), &[]), 0); // noop
    let list = json!([set("c1", "n", json!(2)), set("nope", "n", json!(1))]);
    assert_eq!(d.patch(list, &[]), 1); // op_list_aborted + target_missing
    assert_eq!(
        d.patch(set("c2", "n", json!(1)), &["--base-sha256", &sha]),
        0
    ); // drift
    assert_eq!(
        d.patch(set("c2", "n", json!(2)), &["--expected-sha", "00000000"]),
        1
    );
    let records = d.lines();
    assert_eq!(records.len(), 6);
    for r in &records {
        let errors: Vec<String> = validator.iter_errors(r).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:?}\n{r:#}");
        assert!(r["elapsed_ms"].is_null() || r["elapsed_ms"].is_u64(), "{r}");
    }
    // Not vacuous: the old `op_list` extension is refused by the schema.
    let mut old = records[0].clone();
    old["op_list"] = json!({"id": "x", "index": 0, "len": 1});
    assert!(!validator.is_valid(&old));
}

#[test]
fn doc_uri_is_the_repository_relative_path_over_the_cli_and_mcp() {
    let repo = git_repo(DOC);
    std::fs::create_dir_all(repo.path().join("docs")).unwrap();
    std::fs::write(repo.path().join("docs/b.noma"), DOC).unwrap();
    let o = Command::new(NOMA)
        .args([
            "patch",
            "b.noma",
            "--inplace",
            "--op",
            &set("c1", "n", json!(1)).to_string(),
        ])
        .current_dir(repo.path().join("docs"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let mut m = Mcp::start(repo.path());
    let (e, b) = m.call(
        "patch_block",
        json!({"file":"a.noma","op":set("c1","n",json!(1))}),
    );
    assert!(!e, "{b}");
    m.stop();
    for (t, want) in [
        ("docs/b.noma.patches", "docs/b.noma"),
        ("a.noma.patches", "a.noma"),
    ] {
        let line = std::fs::read_to_string(repo.path().join(t)).unwrap();
        let r: Value = serde_json::from_str(line.lines().next().unwrap()).unwrap();
        assert_eq!(r["doc_uri"], want, "{t}");
    }
}

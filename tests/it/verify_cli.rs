//! End-to-end tests of `noma verify`, `noma parse` and `noma render`, driving
//! the real binary.

use std::path::{Path, PathBuf};

use assert_cmd::Command;

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

use crate::common;

/// The normative corpus, when the shared reference checkout is present.
fn reference_corpus(test: &str) -> Option<PathBuf> {
    common::shared_reference(test).map(|r| r.join("noma/conformance"))
}

fn noma() -> Command {
    let mut cmd = Command::cargo_bin("noma").expect("binary builds");
    cmd.current_dir(manifest_dir());
    cmd
}

struct Run {
    code: i32,
    stdout: String,
}

fn verify(dir: &Path) -> Run {
    let out = noma().arg("verify").arg(dir).output().expect("runs");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).expect("utf-8 output"),
    }
}

/// Splits a report into fixture lines and checks the §C.4 line format.
fn fixture_lines(stdout: &str) -> Vec<(&str, &str)> {
    let (body, summary) = stdout
        .rsplit_once("\n\n")
        .expect("blank line before summary");
    let lines: Vec<(&str, &str)> = body
        .lines()
        .map(|l| {
            let (tag, rest) = l.split_once("  ").expect("two spaces after the tag");
            assert!(["PASS", "FAIL", "SKIP"].contains(&tag), "bad tag in {l:?}");
            let path = rest.split("  \u{2014} ").next().unwrap_or(rest);
            (tag, path)
        })
        .collect();
    let passed = lines.iter().filter(|(t, _)| *t == "PASS").count();
    assert_eq!(
        summary,
        format!("{} fixtures, {passed} passed\n", lines.len())
    );
    let mut sorted: Vec<&str> = lines.iter().map(|(_, p)| *p).collect();
    sorted.sort();
    assert_eq!(
        sorted,
        lines.iter().map(|(_, p)| *p).collect::<Vec<_>>(),
        "sorted by path"
    );
    lines
}

#[test]
fn reference_corpus_passes_completely() {
    let Some(corpus) = reference_corpus("reference_corpus_passes_completely") else {
        return;
    };
    let run = verify(&corpus);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let lines = fixture_lines(&run.stdout);
    assert_eq!(
        lines.len(),
        40,
        "the v1.0 corpus has 40 fixtures:\n{}",
        run.stdout
    );
    for (tag, path) in &lines {
        assert_eq!(*tag, "PASS", "{path}:\n{}", run.stdout);
    }
    assert!(
        run.stdout.ends_with("\n\n40 fixtures, 40 passed\n"),
        "{}",
        run.stdout
    );
}

#[test]
fn reference_output_is_byte_identical_across_runs() {
    let Some(corpus) = reference_corpus("reference_output_is_byte_identical_across_runs") else {
        return;
    };
    let a = verify(&corpus);
    let b = verify(&corpus);
    assert_eq!(a.stdout, b.stdout);
    assert_eq!(a.code, b.code);
}

#[test]
fn own_corpus_passes_with_relative_paths() {
    let out = noma()
        .args(["verify", "conformance"])
        .output()
        .expect("runs");
    let stdout = String::from_utf8(out.stdout).expect("utf-8");
    let lines = fixture_lines(&stdout);
    assert!(
        lines.len() >= 100,
        "the own corpus covers every op, error code and rule: {stdout}"
    );
    for (tag, path) in &lines {
        assert_eq!(*tag, "PASS", "{path}:\n{stdout}");
        assert!(path.starts_with("conformance/"), "{path}");
    }
    assert_eq!(out.status.code(), Some(0));
    let again = noma()
        .args(["verify", "conformance"])
        .output()
        .expect("runs");
    assert_eq!(String::from_utf8_lossy(&again.stdout), stdout);
}

#[test]
fn failing_and_skipped_fixtures_exit_one() {
    let t = tempfile::tempdir().expect("tmp");
    let bad = t.path().join("valid/bad");
    std::fs::create_dir_all(&bad).expect("mkdir");
    std::fs::write(bad.join("input.noma"), "# A\n").expect("write");
    std::fs::write(bad.join("expected.ids.json"), "{broken").expect("write");
    let lonely = t.path().join("valid/lonely");
    std::fs::create_dir_all(&lonely).expect("mkdir");
    std::fs::write(lonely.join("expected.diagnostics.json"), "[]").expect("write");
    let out = Command::cargo_bin("noma")
        .expect("binary")
        .current_dir(t.path())
        .args(["verify", "."])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8(out.stdout).expect("utf-8");
    assert!(
        stdout.starts_with("FAIL  valid/bad  \u{2014} expected.ids.json is not valid JSON"),
        "{stdout}"
    );
    assert!(
        stdout.contains("\nSKIP  valid/lonely  \u{2014} missing input.noma\n"),
        "{stdout}"
    );
    assert!(stdout.ends_with("\n\n2 fixtures, 0 passed\n"), "{stdout}");
}

#[test]
fn missing_or_absent_dir_exits_two() {
    noma().args(["verify", "no/such/dir"]).assert().code(2);
    noma().arg("verify").assert().code(2);
    noma().args(["verify", "Cargo.toml"]).assert().code(2);
}

fn sample() -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().expect("tmp");
    let p = t.path().join("doc.noma");
    let src = "---\ntitle: Sample\n---\n# Plan\n\n- one\n  more\n- two\n\n|a|b|\n|---|:---:|\n|1|2|\n\n::claim{id=\"c1\" confidence=0.9}\nText.\n::\n";
    std::fs::write(&p, src).expect("write");
    (t, p)
}

#[test]
fn parse_prints_the_ast_with_spans() {
    let (_t, p) = sample();
    let out = noma().arg("parse").arg(&p).output().expect("runs");
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["type"], "document");
    assert_eq!(v["meta"]["title"], "Sample");
    assert_eq!(v["frontmatter"]["endLine"], 3);
    let plan = &v["children"][0];
    assert_eq!(plan["id"], "plan");
    assert_eq!(plan["pos"]["line"], 4);
    assert_eq!(plan["endLine"], 16);
    let list = &plan["children"][0];
    assert_eq!(
        (list["pos"]["line"].as_u64(), list["endLine"].as_u64()),
        (Some(6), Some(8))
    );
    assert_eq!(list["items"][0]["endLine"], 7);
    assert_eq!(list["items"][0]["content"], "one\n  more");
    assert_eq!(
        plan["children"][1]["align"],
        serde_json::json!([null, "center"])
    );
    let claim = &plan["children"][2];
    assert_eq!(claim["attrs"]["confidence"], 0.9);
    assert_eq!(
        (claim["pos"]["line"].as_u64(), claim["endLine"].as_u64()),
        (Some(14), Some(16))
    );
}

#[test]
fn render_to_noma_and_json() {
    let (_t, p) = sample();
    let out = noma().arg("render").arg(&p).output().expect("runs");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8(out.stdout).expect("utf-8"),
        "---\ntitle: Sample\n---\n\n# Plan\n\n- one\n  more\n- two\n\n| a   | b   |\n| --- | :---: |\n| 1   | 2   |\n\n::claim{id=\"c1\" confidence=0.9}\nText.\n::\n"
    );
    let json = noma()
        .arg("render")
        .arg(&p)
        .args(["--to", "json"])
        .output()
        .expect("runs");
    let parse = noma().arg("parse").arg(&p).output().expect("runs");
    assert_eq!(json.stdout, parse.stdout);
    noma()
        .arg("render")
        .arg(&p)
        .args(["--to", "html"])
        .assert()
        .code(2);
    noma().args(["render", "missing.noma"]).assert().code(2);
}

/// The roundtrip property and render idempotence over every example document.
#[test]
fn roundtrip_property_on_reference_documents() {
    let Some(reference) = common::shared_reference("roundtrip_property_on_reference_documents")
    else {
        return;
    };
    let mut stack = vec![reference.join("noma")];
    let mut checked = 0;
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "noma") {
                let Ok(src) = std::fs::read_to_string(&p) else {
                    continue;
                };
                let doc = noma_core::doc::parse(&src);
                let out = noma_core::doc::render::render_noma(&doc);
                let again = noma_core::doc::parse(&out);
                assert!(
                    noma_core::doc::render::structurally_equal(&doc, &again),
                    "roundtrip property fails for {}",
                    p.display()
                );
                assert_eq!(
                    noma_core::doc::render::render_noma(&again),
                    out,
                    "{}",
                    p.display()
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 20, "only {checked} documents found");
}

//! Hostile and degenerate inputs: every case ends with a clear message and a
//! defined exit code, never a panic or a hang.

use std::io::Write;
use std::time::Duration;

use assert_cmd::Command;
use predicates::prelude::*;

fn noma() -> Command {
    let mut cmd = Command::cargo_bin("noma").expect("binary builds");
    cmd.timeout(Duration::from_secs(120));
    cmd
}

fn write(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let path = dir.path().join(name);
    let mut f = std::fs::File::create(&path).expect("create");
    f.write_all(bytes).expect("write");
    path
}

/// No panic message, ever.
fn no_panic() -> impl Predicate<str> {
    predicate::str::contains("panicked").not()
}

#[test]
fn invalid_utf8_is_refused_with_its_position() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, "bad.noma", b"# Title\n\nok text \xff\xfe here\n");
    for sub in ["check", "ids", "parse"] {
        noma()
            .arg(sub)
            .arg(&path)
            .assert()
            .code(2)
            .stderr(
                predicate::str::contains("not valid UTF-8").and(predicate::str::contains("line 3")),
            )
            .stderr(no_panic());
    }
}

#[test]
fn patching_a_document_that_became_invalid_utf8_names_the_bad_byte() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, "d.noma", b"::claim{id=\"c\"}\nText.\n::\n");
    let op = r#"{"op":"update_attribute","id":"c","key":"k","value":1}"#;
    noma()
        .args(["patch", "--inplace", "--op", op])
        .arg(&path)
        .assert()
        .success();
    let transcript = dir.path().join("d.noma.patches");
    let before = std::fs::read(&transcript).unwrap();
    std::fs::write(&path, b"::claim{id=\"c\"}\nText \xff.\n::\n").unwrap();
    noma()
        .args(["patch", "--inplace", "--op", op])
        .arg(&path)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not valid UTF-8").and(predicate::str::contains("line 2")))
        .stderr(no_panic());
    assert_eq!(
        std::fs::read(&transcript).unwrap(),
        before,
        "no record written"
    );
}

#[test]
fn binary_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = b"\x7fELF\x02\x01\x01\0\0\0".to_vec();
    bytes.extend((0..4096u32).map(|i| (i * 7 % 256) as u8));
    let path = write(&dir, "a.out.noma", &bytes);
    noma()
        .arg("check")
        .arg(&path)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("binary content"))
        .stderr(no_panic());
}

#[test]
fn empty_file_is_a_valid_empty_document() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, "empty.noma", b"");
    noma()
        .arg("check")
        .arg(&path)
        .assert()
        .code(0)
        .stderr(no_panic());
    noma()
        .arg("ids")
        .arg(&path)
        .assert()
        .code(0)
        .stdout(predicate::str::contains("\"ids\": []"));
}

#[test]
fn missing_file_is_named() {
    noma()
        .args(["check", "/definitely/not/here.noma"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "/definitely/not/here.noma: no such file",
        ));
}

#[test]
fn directory_passed_as_file_is_refused() {
    // `noma check DIR` checks the documents under DIR (decision
    // `check-scope`); the commands that read one document refuse a
    // directory.
    let dir = tempfile::tempdir().unwrap();
    noma()
        .arg("parse")
        .arg(dir.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("is a directory"));
}

#[test]
fn one_bad_file_does_not_hide_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(&dir, "good.noma", b"# Fine\n\nText.\n");
    let broken = write(&dir, "broken.noma", b"::claim{id=\"x\"}\nno close\n");
    noma()
        .arg("check")
        .arg("/nope.noma")
        .arg(&good)
        .arg(&broken)
        .assert()
        .code(2)
        .stdout(predicate::str::contains("unclosed-directive"))
        .stderr(predicate::str::contains("good.noma: 0 error(s)"));
}

#[test]
fn hundred_megabyte_file_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    // ~310 bytes per section: 330,000 sections is a little over 100 MB.
    let src = noma_testutil::synth::document(330_000);
    assert!(src.len() > 100_000_000, "{}", src.len());
    let path = write(&dir, "huge.noma", src.as_bytes());
    drop(src);
    noma()
        .arg("check")
        .arg(&path)
        .assert()
        .code(0)
        .stderr(no_panic());
}

#[test]
fn directives_nested_ten_thousand_deep_do_not_overflow() {
    let dir = tempfile::tempdir().unwrap();
    let depth = 10_000;
    let mut src = String::new();
    for k in 0..depth {
        src.push_str(&":".repeat(k + 2));
        src.push_str("box\n");
    }
    src.push_str("deep text\n");
    for k in (0..depth).rev() {
        src.push_str(&":".repeat(k + 2));
        src.push('\n');
    }
    let path = write(&dir, "deep.noma", src.as_bytes());
    noma()
        .arg("check")
        .arg(&path)
        .assert()
        .code(1)
        .stdout(predicate::str::contains("nesting-too-deep"))
        .stderr(no_panic());
    for sub in ["parse", "ids"] {
        noma()
            .arg(sub)
            .arg(&path)
            .assert()
            .code(0)
            .stderr(no_panic());
    }
}

#[test]
fn ten_megabyte_lines_are_linear() {
    let dir = tempfile::tempdir().unwrap();
    let big = "a".repeat(10 << 20);
    let cases = [
        format!("# {big}\n"),
        format!("::claim{{id=\"x\" note=\"{big}\"}}\nbody\n::\n"),
        format!("| {big} | b |\n| --- | --- |\n| c | d |\n"),
        format!("{}\n", ":".repeat(10 << 20)),
        format!("::d{{{}}}\n::\n", "k=\"".repeat(2 << 20)),
        big.clone(),
    ];
    for (i, src) in cases.iter().enumerate() {
        let path = write(&dir, &format!("line{i}.noma"), src.as_bytes());
        let out = noma().arg("check").arg(&path).output().expect("runs");
        assert!(
            matches!(out.status.code(), Some(0) | Some(1)),
            "case {i}: {:?}",
            out.status
        );
        assert!(
            !String::from_utf8_lossy(&out.stderr).contains("panicked"),
            "case {i}"
        );
    }
}

#[test]
fn fifty_thousand_identical_headings_are_linear() {
    // Slug suffixing used to probe `-2`, `-3`, … afresh for every repeat:
    // quadratic, minutes for this file. The hook must not hang on it.
    let dir = tempfile::tempdir().unwrap();
    let src = "## Notes\n\ntext\n\n".repeat(50_000);
    let path = write(&dir, "same.noma", src.as_bytes());
    let out = noma()
        .timeout(Duration::from_secs(30))
        .arg("ids")
        .arg(&path)
        .output()
        .expect("runs");
    assert!(out.status.success(), "{:?}", out.status);
    let ids: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids = ids["ids"].as_array().unwrap();
    assert_eq!(ids.len(), 50_000);
    assert_eq!(ids[0], "notes");
    assert_eq!(ids[49_999], "notes-50000");
}

#[test]
fn closed_stdout_ends_quietly() {
    // `noma ids big.noma | head -c 10`: the reader leaves early.
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        &dir,
        "big.noma",
        noma_testutil::synth::document(2_000).as_bytes(),
    );
    let bin = assert_cmd::cargo::cargo_bin("noma");
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "'{}' ids '{}' | head -c 10 >/dev/null; '{}' parse '{}' | head -c 10 >/dev/null",
            bin.display(),
            path.display(),
            bin.display(),
            path.display()
        ))
        .output()
        .expect("sh runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
        "{stderr}"
    );
}

/// The size cap is checked before anything is written. A patch
/// that would carry the document over `NOMA_MAX_FILE_BYTES` is refused
/// whole (it used to be written, after which every patch and replay
/// refused the file), the transcript — over the cap, which it no longer
/// has — still replays, and the hook refuses to commit a document over
/// the cap.
#[test]
fn a_request_that_would_cross_the_size_cap_writes_nothing() {
    let r = crate::common::Repo::init();
    crate::common::assert_ran(&r.noma(&["hooks", "install"]));
    r.write("d.noma", "# P\n\n::note{id=\"a\"}\nalpha\n::\n");
    r.commit_all("base");
    let cap = "2500";
    let patch = |v: usize| {
        // The body grows: the document reaches the cap; the transcript,
        // which has no cap of its own, passes it first.
        let body = "v".repeat(150 * (v + 1));
        let op = format!(r#"{{"op":"replace_body","id":"a","content":"{body}"}}"#);
        r.cmd(
            "env",
            &[
                &format!("NOMA_MAX_FILE_BYTES={cap}"),
                crate::common::NOMA,
                "patch",
                "d.noma",
                "--inplace",
                "--op",
                &op,
            ],
        )
    };
    let mut refused = None;
    for v in 0..20 {
        let read_t =
            || std::fs::read_to_string(r.path().join("d.noma.patches")).unwrap_or_default();
        let (t, d) = (read_t(), r.read("d.noma"));
        let o = patch(v);
        if !o.status.success() {
            refused = Some(crate::common::text(&o));
            assert_eq!(read_t(), t, "the transcript changed");
            assert_eq!(r.read("d.noma"), d, "the document changed");
            break;
        }
        assert!(r.read("d.noma").len() <= 2500);
    }
    let t_len = r.read("d.noma.patches").len();
    assert!(
        t_len > 2500,
        "the transcript stayed under the cap ({t_len} bytes): the test proves nothing"
    );
    let said = refused.expect("no request was refused");
    assert!(said.contains("nothing was written"), "{said}");
    assert!(said.contains("NOMA_MAX_FILE_BYTES"), "{said}");
    let o = r.cmd(
        "env",
        &[
            &format!("NOMA_MAX_FILE_BYTES={cap}"),
            crate::common::NOMA,
            "replay",
            "d.noma",
        ],
    );
    crate::common::assert_ran(&o);
    // Past the hook: a document grown over the cap by hand.
    let mut d = r.read("d.noma");
    d.push_str(&"\npadding".repeat(400));
    r.write("d.noma", &d);
    r.ok(&["add", "-A"]);
    let o = r.cmd(
        "env",
        &[
            &format!("NOMA_MAX_FILE_BYTES={cap}"),
            "git",
            "commit",
            "-q",
            "-m",
            "too big",
        ],
    );
    assert!(!o.status.success(), "{}", crate::common::text(&o));
    assert!(
        crate::common::text(&o).contains("file-too-large"),
        "{}",
        crate::common::text(&o)
    );
}

//! `noma lsp` through a real LSP client: tests/lsp/test_noma_lsp.py runs
//! under pytest with `pytest-lsp` (pygls), comparing every answer with the
//! CLI's for the same file: diagnostics against `noma check --format
//! json` (codes, lines, severities, and exact UTF-16 ranges), symbols and
//! completion against `noma ids`, hover's baseHash against `noma blocks`,
//! definition and references on the reference's examples; in a real git
//! repository, a hand edit of a committed, transcript-guarded document is
//! `unrecorded-edit` on the changed block (as `noma hook pre-commit` says)
//! and "Record this edit" writes the record after which `noma replay` and
//! the hook pass.
//!
//! Needs a Python (`NOMA_PYTHON`, default `python3`) with `pytest-lsp`
//! (`.ci/run` installs it, pinned) and the reference's examples under
//! `../shared`. Without them the test is skipped locally and FAILS when
//! `CI` is set: the check must not pass vacuously there.

use std::path::Path;
use std::process::Command;

use crate::common::{python_with, shared_reference, NOMA};

#[test]
fn the_language_server_answers_a_real_lsp_client_as_the_cli_does() {
    let Some(python) = python_with(
        "pytest_lsp",
        "pytest-lsp",
        "the_language_server_answers_a_real_lsp_client_as_the_cli_does",
    ) else {
        return;
    };
    let Some(reference) = shared_reference("lsp_py") else {
        return;
    };
    let examples = reference.join("noma/examples");
    assert!(examples.is_dir(), "{} missing", examples.display());
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lsp");
    let scratch = tempfile::tempdir().unwrap();
    let out = Command::new(&python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp"])
        .arg(scratch.path().join("pytest"))
        .arg(&tests)
        .current_dir(&tests)
        .env("NOMA_BIN", NOMA)
        .env("NOMA_EXAMPLES", &examples)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "pytest {} failed:\n{stdout}\n{stderr}",
        tests.display()
    );
    assert!(stdout.contains(" passed"), "{stdout}");
    assert!(!stdout.contains("skipped"), "{stdout}");
}

/// `noma lsp` run with the messages `input`: its exit code and stderr.
fn lsp_with_input(input: &[u8]) -> (Option<i32>, String) {
    use std::io::Write;
    let mut child = Command::new(NOMA)
        .arg("lsp")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// One LSP message with its header.
fn framed(json: &str) -> Vec<u8> {
    format!("Content-Length: {}\r\n\r\n{json}", json.len()).into_bytes()
}

#[test]
fn a_broken_session_exits_2_with_a_message_and_a_clean_one_exits_0() {
    for input in [
        &b""[..],
        b"not a header\r\n\r\n",
        b"Content-Length: 5\r\n\r\n{bad}",
    ] {
        let (code, err) = lsp_with_input(input);
        assert_eq!(code, Some(2), "{input:?}: {err}");
        assert!(
            err.starts_with("noma lsp: ") && !err.contains("panicked"),
            "{err}"
        );
    }
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}"#;
    let inited = r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#;
    let bad_open = r#"{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"x":1}}"#;
    let shutdown = r#"{"jsonrpc":"2.0","id":2,"method":"shutdown"}"#;
    let exit = r#"{"jsonrpc":"2.0","method":"exit"}"#;
    // Gone without shutdown, after a malformed notification: exit 2.
    let mut input = [init, inited, bad_open].map(framed).concat();
    let (code, err) = lsp_with_input(&input);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("without shutdown"), "{err}");
    input.extend([shutdown, exit].map(framed).concat());
    let (code, err) = lsp_with_input(&input);
    assert_eq!(code, Some(0), "{err}");
}

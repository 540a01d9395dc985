//! Every `noma mcp` tool through the official MCP Python SDK client (the
//! `mcp` package), with its output-schema validation on:
//! tests/mcp_sdk/check_tools.py checks titles, annotations, and every
//! result's `structuredContent` against the tool's `outputSchema` (successes
//! through the SDK's own check, errors with `jsonschema`).
//!
//! Needs a Python (`NOMA_PYTHON`, default `python3`) with `mcp` installed
//! (`.ci/run` installs it). Without one the test is skipped locally and
//! FAILS when `CI` is set: the check must not pass vacuously there.

use std::path::Path;
use std::process::Command;

use crate::common::python_with;

const NOMA: &str = env!("CARGO_BIN_EXE_noma");

const DOC: &str = "# Plan {id=\"plan\"}\n\nIntro.\n\n::claim{id=\"c1\" confidence=0.5}\nThe sky is blue.\n::\n\n## Later {id=\"later\"}\n\nText.\n";

/// The work branch's version: c1 moved under `later` and edited there
/// (get_changed_blocks reports it as moved and modified).
const WORK: &str = "# Plan {id=\"plan\"}\n\nIntro, edited.\n\n## Later {id=\"later\"}\n\nText.\n\n::claim{id=\"c1\" confidence=0.5}\nThe sky is blue, mostly.\n::\n";

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .status()
        .unwrap();
    assert!(ok.success(), "git {args:?}");
}

#[test]
fn every_tool_validates_against_its_output_schema_in_the_python_sdk() {
    let Some(python) = python_with(
        "mcp, jsonschema",
        "mcp",
        "every_tool_validates_against_its_output_schema_in_the_python_sdk",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    git(d, &["init", "-q", "-b", "main"]);
    std::fs::write(d.join("a.noma"), DOC).unwrap();
    git(d, &["add", "-A"]);
    git(d, &["commit", "-qm", "one"]);
    git(d, &["checkout", "-q", "-b", "work"]);
    std::fs::write(d.join("a.noma"), WORK).unwrap();

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_sdk/check_tools.py");
    let out = Command::new(&python)
        .arg(&script)
        .arg(NOMA)
        .arg(d)
        .current_dir(d)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "{script:?} failed:\n{stdout}\n{stderr}",
        script = script.display()
    );
    assert!(stdout.contains("ok: 13 tools"), "{stdout}");
}

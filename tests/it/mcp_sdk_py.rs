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

/// The Python to run the SDK with, or why there is none.
fn python_with_mcp() -> Result<String, String> {
    let python = std::env::var("NOMA_PYTHON").unwrap_or_else(|_| "python3".into());
    let probe = Command::new(&python)
        .args([
            "-c",
            "import mcp, jsonschema; from importlib.metadata import version; print(version('mcp'))",
        ])
        .output();
    match probe {
        Ok(o) if o.status.success() => {
            eprintln!(
                "MCP Python SDK {}",
                String::from_utf8_lossy(&o.stdout).trim()
            );
            Ok(python)
        }
        Ok(o) => Err(format!(
            "{python} has no `mcp` package ({}); `{python} -m pip install mcp`",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Err(format!("cannot run {python}: {e}")),
    }
}

#[test]
fn every_tool_validates_against_its_output_schema_in_the_python_sdk() {
    let python = match python_with_mcp() {
        Ok(p) => p,
        Err(why) if std::env::var_os("CI").is_some() => {
            panic!("CI is set but the MCP Python SDK is not available: {why}")
        }
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
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

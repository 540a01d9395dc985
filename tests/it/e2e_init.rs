//! End to end with the real installer: `noma init` in a fresh repository,
//! then real `git commit`s run the installed hooks, which run the real checks.

use std::path::Path;
use std::process::{Command, Output};

const NOMA: &str = env!("CARGO_BIN_EXE_noma");

fn run(dir: &Path, home: &Path, program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", home)
        .env_remove("GIT_DIR")
        .env_remove("GIT_INDEX_FILE")
        .env_remove("GIT_WORK_TREE")
        .output()
        .expect("spawn")
}

fn all(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn init_then_commits_are_guarded() {
    let repo = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let (d, h) = (repo.path(), home.path());
    let git = |args: &[&str]| run(d, h, "git", args);
    assert!(git(&["-c", "init.defaultBranch=main", "init", "-q"])
        .status
        .success());
    git(&["config", "user.name", "Tester"]);
    git(&["config", "user.email", "t@example.com"]);

    // One command gives a working setup.
    let init = run(d, h, NOMA, &["init"]);
    assert!(init.status.success(), "{}", all(&init));
    assert!(d.join(".noma/config.yml").is_file());
    let ignore = std::fs::read_to_string(d.join(".gitignore")).unwrap();
    assert!(ignore.contains(".noma/cache/"), "{ignore}");

    // A valid document commits.
    std::fs::write(
        d.join("plan.noma"),
        "# Plan\n\n::note{id=\"n1\"}\nFirst.\n::\n",
    )
    .unwrap();
    git(&["add", "-A"]);
    let ok = git(&["commit", "-q", "-m", "valid"]);
    assert!(ok.status.success(), "{}", all(&ok));

    // An invalid one is blocked, naming file, line and rule.
    std::fs::write(d.join("bad.noma"), "::claim{id=\"x\"}\nno closing fence\n").unwrap();
    git(&["add", "bad.noma"]);
    let blocked = git(&["commit", "-q", "-m", "invalid"]);
    assert!(!blocked.status.success(), "{}", all(&blocked));
    let msg = all(&blocked);
    assert!(
        msg.contains("bad.noma") && msg.contains("unclosed-directive"),
        "{msg}"
    );

    // A patch through the tool, committed with its transcript, passes.
    git(&["rm", "-q", "--cached", "bad.noma"]);
    std::fs::remove_file(d.join("bad.noma")).unwrap();
    let patch = run(
        d,
        h,
        NOMA,
        &[
            "patch",
            "plan.noma",
            "--inplace",
            "--op",
            r#"{"op":"replace_body","id":"n1","content":"Second."}"#,
        ],
    );
    assert!(patch.status.success(), "{}", all(&patch));
    git(&["add", "-A"]);
    let ok = git(&["commit", "-q", "-m", "patched"]);
    assert!(ok.status.success(), "{}", all(&ok));

    // A hand edit outside the transcript is blocked with the block named.
    let text = std::fs::read_to_string(d.join("plan.noma")).unwrap();
    std::fs::write(
        d.join("plan.noma"),
        text.replace("Second.", "Edited by hand."),
    )
    .unwrap();
    git(&["add", "plan.noma"]);
    let blocked = git(&["commit", "-q", "-m", "hand edit"]);
    assert!(!blocked.status.success(), "{}", all(&blocked));
    assert!(all(&blocked).contains("n1"), "{}", all(&blocked));
    // ... and `noma record` makes it pass.
    let rec = run(d, h, NOMA, &["record", "plan.noma"]);
    assert!(rec.status.success(), "{}", all(&rec));
    git(&["add", "-A"]);
    let ok = git(&["commit", "-q", "-m", "recorded"]);
    assert!(ok.status.success(), "{}", all(&ok));
}

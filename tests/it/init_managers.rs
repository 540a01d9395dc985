//! `noma init` in a repository whose hook manager already runs noma
//! (lefthook, the pre-commit framework, a `core.hooksPath` directory):
//! noma's hooks are not installed a second time, the merge driver is, and
//! the output names the manager. Each commit then runs noma's check once,
//! counted by its summary line.
#![cfg(unix)]

use crate::common::{text, Repo, NOMA};

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

fn write_exec(p: &Path, body: &str) {
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, body).unwrap();
    fs::set_permissions(p, fs::Permissions::from_mode(0o755)).unwrap();
}

/// The hook a manager installs, reduced to what matters: it runs the
/// command its configuration names (lefthook and pre-commit read their
/// YAML; here the command is written out).
fn manager_hook(manager: &str) -> String {
    format!("#!/bin/sh\n# installed by {manager}\n'{NOMA}' hook pre-commit \"$@\"\n")
}

/// How many times noma's pre-commit check ran in a commit's output.
fn noma_runs(out: &str) -> usize {
    out.matches("noma pre-commit: ").count()
}

/// Commits a document and returns how often noma's check ran.
fn commit_doc(r: &Repo) -> usize {
    r.write("plan.noma", "# Plan\n\n::note{id=\"a\"}\nalpha\n::\n");
    r.ok(&["add", "-A"]);
    let o = r.git(&["commit", "-m", "plan"]);
    assert!(o.status.success(), "{}", text(&o));
    noma_runs(&text(&o))
}

#[test]
fn init_leaves_lefthook_running_noma_alone_and_noma_runs_once_per_commit() {
    let r = Repo::init();
    r.write(
        "lefthook.yml",
        "pre-commit:\n  commands:\n    noma:\n      run: noma hook pre-commit\n",
    );
    write_exec(
        &r.path().join(".git/hooks/pre-commit"),
        &manager_hook("lefthook"),
    );
    let o = r.noma(&["init", "--no-mcp"]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("lefthook already runs noma"), "{out}");
    assert!(out.contains("lefthook.yml"), "{out}");
    // lefthook's hook is untouched and nothing was chained beside it.
    assert_eq!(r.read(".git/hooks/pre-commit"), manager_hook("lefthook"));
    assert!(!r.path().join(".git/hooks/pre-commit.noma-chained").exists());
    // The merge driver, which no hook manager installs, is registered.
    assert!(r
        .ok(&["config", "merge.noma.driver"])
        .contains("merge-driver"));
    assert_eq!(commit_doc(&r), 1, "noma's check ran once");
}

#[test]
fn init_leaves_pre_commit_and_hooks_path_managers_running_noma_alone() {
    // The pre-commit framework, with this repository's shipped hook ids.
    let r = Repo::init();
    r.write(
        ".pre-commit-config.yaml",
        "repos:\n  - repo: https://example.com/noma\n    rev: v1\n    hooks:\n      - id: noma-check\n",
    );
    write_exec(
        &r.path().join(".git/hooks/pre-commit"),
        &manager_hook("pre-commit"),
    );
    let out = text(&r.noma(&["init", "--no-mcp"]));
    assert!(out.contains("pre-commit already runs noma"), "{out}");
    assert!(out.contains(".pre-commit-config.yaml"), "{out}");
    assert_eq!(commit_doc(&r), 1, "{out}");

    // A team's hooks directory (core.hooksPath) whose hook runs noma.
    let r = Repo::init();
    write_exec(
        &r.path().join(".githooks/pre-commit"),
        &manager_hook("the team"),
    );
    r.ok(&["config", "core.hooksPath", ".githooks"]);
    let out = text(&r.noma(&["init", "--no-mcp"]));
    assert!(out.contains("core.hooksPath already runs noma"), "{out}");
    assert_eq!(r.read(".githooks/pre-commit"), manager_hook("the team"));
    assert_eq!(commit_doc(&r), 1, "{out}");

    // A manager that does not run noma: noma's hook is chained after it.
    let r = Repo::init();
    r.write(
        "lefthook.yml",
        "pre-commit:\n  commands:\n    lint:\n      run: true\n",
    );
    write_exec(
        &r.path().join(".git/hooks/pre-commit"),
        "#!/bin/sh\n# installed by lefthook\nexit 0\n",
    );
    let out = text(&r.noma(&["init", "--no-mcp"]));
    assert!(!out.contains("already runs noma"), "{out}");
    assert_eq!(commit_doc(&r), 1, "{out}");
    // Reinstalling noma's own scripts is not mistaken for a manager.
    let out = text(&r.noma(&["init", "--no-mcp"]));
    assert!(!out.contains("already runs noma"), "{out}");
}

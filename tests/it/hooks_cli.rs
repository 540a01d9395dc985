//! `noma hooks` against real repositories driven by the git CLI: layouts
//! (core.hooksPath, linked worktrees, bare + GIT_DIR), chaining, --force,
//! uninstall, and hooks actually running on commit and merge.
//!
//! The hooks run `noma hook <name>`, whose checks live elsewhere; to observe
//! the hooks themselves most tests install with `--noma-path` pointing at a
//! fake `noma` that logs its arguments.
#![cfg(unix)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::common::Sandbox;

/// A [`Sandbox`] with a fake `noma` that logs its arguments and succeeds:
/// most tests install the hooks with `--noma-path` pointing at it.
fn sandbox() -> Sandbox {
    let s = Sandbox::new();
    write_exec(
        &s.fake(),
        &format!(
            "#!/bin/sh\necho \"fake-noma $*\" >> '{}'\n",
            s.log_path().display()
        ),
    );
    s
}

/// This file's helpers on [`Sandbox`], a trait because inherent methods
/// cannot be added outside `common`.
trait FakeNoma {
    fn fake(&self) -> PathBuf;
    fn log_path(&self) -> PathBuf;
    fn log(&self) -> String;
    fn commit(&self, dir: &Path, file: &str) -> Output;
    fn install_fake(&self, dir: &Path, extra: &[&str]) -> String;
    fn status_json(&self, dir: &Path) -> Value;
}

impl FakeNoma for Sandbox {
    fn fake(&self) -> PathBuf {
        self.root().join("fakebin/noma")
    }

    fn log_path(&self) -> PathBuf {
        self.root().join("calls.log")
    }

    fn log(&self) -> String {
        fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    fn commit(&self, dir: &Path, file: &str) -> Output {
        fs::write(dir.join(file), file).unwrap();
        self.git_ok(dir, &["add", file]);
        self.git(dir, &["commit", "-q", "-m", file])
    }

    fn install_fake(&self, dir: &Path, extra: &[&str]) -> String {
        let fake = self.fake();
        let mut args = vec!["hooks", "install", "--noma-path", fake.to_str().unwrap()];
        args.extend_from_slice(extra);
        self.noma_ok(dir, &args)
    }

    fn status_json(&self, dir: &Path) -> Value {
        serde_json::from_str(&self.noma_ok(dir, &["hooks", "status", "--format", "json"])).unwrap()
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn write_exec(path: &Path, body: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, body).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

fn mode(p: &Path) -> u32 {
    fs::metadata(p).unwrap().permissions().mode() & 0o777
}

fn real(p: &Path) -> PathBuf {
    p.canonicalize()
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Where git itself runs hooks from (`git rev-parse --git-path hooks`).
fn git_hooks_dir(s: &Sandbox, dir: &Path) -> PathBuf {
    let p = PathBuf::from(s.git_ok(dir, &["rev-parse", "--git-path", "hooks"]).trim());
    real(&dir.join(p))
}

#[test]
fn install_status_and_idempotent_reinstall() {
    let s = sandbox();
    let repo = s.repo("r");
    let out = s.noma_ok(&repo, &["hooks", "install"]);
    assert!(out.contains("pre-commit: installed\n"), "{out}");
    assert!(out.contains("pre-merge-commit: installed\n"), "{out}");
    let hook = repo.join(".git/hooks/pre-commit");
    assert_eq!(mode(&hook), 0o755);
    let script = fs::read_to_string(&hook).unwrap();
    assert!(script.contains("# noma-managed-hook v1 hook=pre-commit"));
    // The script names the installing binary by absolute path.
    let bin = real(Path::new(env!("CARGO_BIN_EXE_noma")));
    assert!(
        script.contains(&format!("noma='{}'", bin.display())),
        "{script}"
    );

    let human = s.noma_ok(&repo, &["hooks", "status"]);
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        human.contains(&format!("pre-commit: installed (noma {version})")),
        "{human}"
    );
    let st = s.status_json(&repo);
    assert_eq!(
        real(Path::new(st["hooks_dir"].as_str().unwrap())),
        git_hooks_dir(&s, &repo)
    );
    for h in st["hooks"].as_array().unwrap() {
        assert_eq!(h["state"], "installed");
        assert_eq!(h["version"], version);
        assert_eq!(h["current"], true);
        assert_eq!(h["chained"], Value::Null);
    }

    let out = s.noma_ok(&repo, &["hooks", "install"]);
    assert_eq!(
        out.matches("already installed; nothing to do").count(),
        2,
        "{out}"
    );
    assert_eq!(fs::read_to_string(&hook).unwrap(), script);

    let out = s.noma_ok(&repo, &["hooks", "uninstall"]);
    assert!(out.contains("pre-commit: removed\n"), "{out}");
    assert!(!hook.exists());
    let st = s.status_json(&repo);
    assert_eq!(st["hooks"][0]["state"], "not-installed");
}

#[test]
fn hooks_run_on_commit_and_merge() {
    let s = sandbox();
    let repo = s.repo("r");
    s.install_fake(&repo, &[]);
    let out = s.commit(&repo, "a.txt");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(s.log(), "fake-noma hook pre-commit\n");

    s.git_ok(&repo, &["checkout", "-q", "-b", "side"]);
    assert!(s.commit(&repo, "b.txt").status.success());
    s.git_ok(&repo, &["checkout", "-q", "main"]);
    assert!(s.commit(&repo, "c.txt").status.success());
    s.git_ok(&repo, &["merge", "-q", "--no-ff", "--no-edit", "side"]);
    assert!(
        s.log().ends_with("fake-noma hook pre-merge-commit\n"),
        "{}",
        s.log()
    );
}

#[test]
fn falls_back_to_noma_on_path_and_fails_clearly_without_it() {
    let s = sandbox();
    let repo = s.repo("r");
    let gone = s.root().join("gone/noma");
    s.noma_ok(
        &repo,
        &["hooks", "install", "--noma-path", gone.to_str().unwrap()],
    );
    fs::write(repo.join("a.txt"), "a").unwrap();
    s.git_ok(&repo, &["add", "a.txt"]);

    // Neither the recorded binary nor `noma` on PATH: the commit is refused.
    let path = std::env::var("PATH").unwrap_or_default();
    let out = s
        .cmd("git", &repo)
        .args(["commit", "-q", "-m", "a"])
        .env("PATH", &path)
        .output()
        .unwrap();
    if !std::env::split_paths(&path).any(|d| d.join("noma").exists()) {
        assert!(!out.status.success());
        let err = text(&out.stderr);
        assert!(err.contains("cannot find the noma binary"), "{err}");
        assert!(err.contains(gone.to_str().unwrap()), "{err}");
    }

    // `noma` on PATH is used instead.
    let with_fake = format!("{}:{path}", s.fake().parent().unwrap().display());
    let out = s
        .cmd("git", &repo)
        .args(["commit", "-q", "-m", "a"])
        .env("PATH", with_fake)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(s.log(), "fake-noma hook pre-commit\n");
}

#[test]
fn foreign_hook_is_chained_runs_first_and_its_failure_blocks() {
    let s = sandbox();
    let repo = s.repo("r");
    let hook = repo.join(".git/hooks/pre-commit");
    let foreign = format!(
        "#!/bin/sh\necho foreign >> '{}'\n[ -e '{}' ] || exit 0\necho 'foreign says no' >&2\nexit 7\n",
        s.log_path().display(),
        s.root().join("veto").display()
    );
    write_exec(&hook, &foreign);
    fs::set_permissions(&hook, fs::Permissions::from_mode(0o750)).unwrap();

    let out = s.install_fake(&repo, &[]);
    assert!(
        out.contains("kept as pre-commit.noma-chained and runs first"),
        "{out}"
    );
    let st = s.status_json(&repo);
    assert_eq!(st["hooks"][0]["state"], "chained");
    assert_eq!(st["hooks"][1]["state"], "installed");
    // A second install leaves the chain alone.
    let out = s.install_fake(&repo, &[]);
    assert_eq!(out.matches("already installed").count(), 2, "{out}");

    assert!(s.commit(&repo, "a.txt").status.success());
    assert_eq!(s.log(), "foreign\nfake-noma hook pre-commit\n");

    fs::write(s.root().join("veto"), "").unwrap();
    let out = s.commit(&repo, "b.txt");
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("foreign says no"));
    // noma did not run after the veto.
    assert_eq!(s.log(), "foreign\nfake-noma hook pre-commit\nforeign\n");

    let out = s.noma_ok(&repo, &["hooks", "uninstall"]);
    assert!(
        out.contains("pre-commit: removed; restored the hook from pre-commit.noma-chained"),
        "{out}"
    );
    assert_eq!(fs::read_to_string(&hook).unwrap(), foreign);
    assert_eq!(mode(&hook), 0o750);
    assert!(!repo.join(".git/hooks/pre-commit.noma-chained").exists());
    assert!(!repo.join(".git/hooks/pre-merge-commit").exists());
}

#[test]
fn force_replaces_with_backup_and_uninstall_restores() {
    let s = sandbox();
    let repo = s.repo("r");
    let hook = repo.join(".git/hooks/pre-commit");
    let foreign = format!("#!/bin/sh\necho foreign >> '{}'\n", s.log_path().display());
    write_exec(&hook, &foreign);

    let out = s.install_fake(&repo, &["--force"]);
    assert!(
        out.contains("replaced (backup: pre-commit.noma-backup)"),
        "{out}"
    );
    let st = s.status_json(&repo);
    assert_eq!(st["hooks"][0]["state"], "installed");
    assert!(st["hooks"][0]["backup"]
        .as_str()
        .unwrap()
        .ends_with("pre-commit.noma-backup"));
    assert!(s.commit(&repo, "a.txt").status.success());
    assert_eq!(
        s.log(),
        "fake-noma hook pre-commit\n",
        "foreign must not run"
    );

    s.noma_ok(&repo, &["hooks", "uninstall"]);
    assert_eq!(fs::read_to_string(&hook).unwrap(), foreign);
    assert_eq!(mode(&hook), 0o755);
    assert!(!repo.join(".git/hooks/pre-commit.noma-backup").exists());
}

#[test]
fn conflicting_leftover_refuses_without_changes() {
    let s = sandbox();
    let repo = s.repo("r");
    let hooks = repo.join(".git/hooks");
    write_exec(&hooks.join("pre-commit"), "#!/bin/sh\n");
    write_exec(
        &hooks.join("pre-commit.noma-chained"),
        "#!/bin/sh\nexit 1\n",
    );
    let out = s.noma(&repo, &["hooks", "install"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("pre-commit.noma-chained already exists"),
        "{err}"
    );
    assert!(err.contains("no hook was changed"));
    assert!(!hooks.join("pre-merge-commit").exists());
    assert_eq!(
        fs::read_to_string(hooks.join("pre-commit")).unwrap(),
        "#!/bin/sh\n"
    );
}

#[test]
fn relative_and_absolute_core_hooks_path() {
    let s = sandbox();
    let repo = s.repo("r");
    s.git_ok(&repo, &["config", "core.hooksPath", ".githooks"]);
    let sub = repo.join("deep/sub");
    fs::create_dir_all(&sub).unwrap();
    // Run from a subdirectory: the relative path is still the work tree's.
    let out = s.install_fake(&sub, &[]);
    assert!(
        out.contains("note: the hooks dir is inside the work tree"),
        "{out}"
    );
    assert!(repo.join(".githooks/pre-commit").is_file());
    assert!(!repo.join(".git/hooks/pre-commit").exists());
    let st = s.status_json(&sub);
    assert_eq!(st["core_hooks_path"], ".githooks");
    assert_eq!(
        real(Path::new(st["hooks_dir"].as_str().unwrap())),
        git_hooks_dir(&s, &repo)
    );
    assert!(s.commit(&repo, "a.txt").status.success());
    assert_eq!(s.log(), "fake-noma hook pre-commit\n");

    let shared = s.root().join("shared hooks");
    s.git_ok(
        &repo,
        &["config", "core.hooksPath", shared.to_str().unwrap()],
    );
    s.install_fake(&repo, &[]);
    assert!(shared.join("pre-merge-commit").is_file());
    assert_eq!(real(&shared), git_hooks_dir(&s, &repo));
    assert!(s.commit(&repo, "b.txt").status.success());
    assert_eq!(s.log().lines().count(), 2);
}

#[test]
fn linked_worktree_installs_into_the_common_dir() {
    let s = sandbox();
    let repo = s.repo("main");
    assert!(s.commit(&repo, "a.txt").status.success());
    s.git_ok(&repo, &["worktree", "add", "-q", "-b", "feature", "../wt"]);
    let wt = s.root().join("wt");

    let out = s.install_fake(&wt, &[]);
    assert!(out.contains("pre-commit: installed"), "{out}");
    assert!(repo.join(".git/hooks/pre-commit").is_file());
    let st = s.status_json(&wt);
    assert_eq!(st["linked_worktree"], true);
    assert_eq!(
        real(Path::new(st["hooks_dir"].as_str().unwrap())),
        real(&repo.join(".git/hooks"))
    );
    assert_eq!(
        real(Path::new(st["hooks_dir"].as_str().unwrap())),
        git_hooks_dir(&s, &wt)
    );
    // The main worktree sees the same hooks.
    assert_eq!(s.status_json(&repo)["hooks"][0]["state"], "installed");

    let out = s.commit(&wt, "b.txt");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(s.log(), "fake-noma hook pre-commit\n");
}

#[test]
fn bare_repository_and_git_dir_layout() {
    let s = sandbox();
    let bare = s.root().join("store.git");
    fs::create_dir_all(&bare).unwrap();
    s.git_ok(
        &bare,
        &["-c", "init.defaultBranch=main", "init", "-q", "--bare"],
    );

    let out = s.noma(&bare, &["hooks", "install"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("bare repository"), "{err}");
    assert!(err.contains("GIT_WORK_TREE"), "{err}");
    assert!(!bare.join("hooks/pre-commit").exists());
    let st = s.status_json(&bare);
    assert_eq!(st["bare"], true);
    assert_eq!(
        real(Path::new(st["hooks_dir"].as_str().unwrap())),
        real(&bare.join("hooks"))
    );

    // The same store used with a separate work tree (the dotfiles pattern).
    let work = s.root().join("work");
    fs::create_dir_all(&work).unwrap();
    let with_env = |mut c: Command| {
        c.env("GIT_DIR", &bare).env("GIT_WORK_TREE", &work);
        c.output().unwrap()
    };
    let fake = s.fake();
    let out = with_env(s.noma_cmd(
        &work,
        &["hooks", "install", "--noma-path", fake.to_str().unwrap()],
    ));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(bare.join("hooks/pre-commit").is_file());
    // Relative values resolve against the current directory, as in git.
    let out = s
        .noma_cmd(&work, &["hooks", "status", "--format", "json"])
        .env("GIT_DIR", "../store.git")
        .env("GIT_WORK_TREE", ".")
        .output()
        .unwrap();
    let st: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(st["bare"], false);
    assert_eq!(
        real(Path::new(st["work_tree"].as_str().unwrap())),
        real(&work)
    );
    assert_eq!(st["hooks"][0]["state"], "installed");

    fs::write(work.join("a.txt"), "a").unwrap();
    let git = |args: &[&str]| {
        let mut c = s.cmd("git", &work);
        c.args(["-c", "user.name=T", "-c", "user.email=t@example.com"])
            .args(args);
        with_env(c)
    };
    assert!(git(&["add", "a.txt"]).status.success());
    let out = git(&["commit", "-q", "-m", "a"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(s.log(), "fake-noma hook pre-commit\n");
}

#[test]
fn outside_a_repository_is_a_usage_error() {
    let s = sandbox();
    let dir = s.root().join("plain");
    fs::create_dir_all(&dir).unwrap();
    for args in [
        &["hooks", "install"][..],
        &["hooks", "status"],
        &["hooks", "uninstall"],
    ] {
        let out = s.noma(&dir, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(text(&out.stderr).contains("not in a git repository"));
    }
}

/// A `core.hooksPath` in the global git configuration names a directory
/// every repository of the user shares (a global hook manager's): noma's
/// hooks there would run in all of them. Installing refuses, changes
/// nothing and names the repository-local fix; `status` says the directory
/// is shared; `--force` installs there anyway.
#[test]
fn a_hooks_path_from_the_global_config_is_not_installed_into_silently() {
    let s = sandbox();
    let repo = s.repo("r");
    let shared = s.root().join("global-hooks");
    fs::create_dir_all(&shared).unwrap();
    write_exec(&shared.join("pre-commit"), "#!/bin/sh\nexit 0\n");
    s.git_ok(
        &repo,
        &[
            "config",
            "--global",
            "core.hooksPath",
            shared.to_str().unwrap(),
        ],
    );
    let fake = s.fake();
    let install = ["hooks", "install", "--noma-path", fake.to_str().unwrap()];
    let out = s.noma(&repo, &install);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("global git configuration") && err.contains("every repository shares"),
        "{err}"
    );
    let names = |d: &Path| -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    assert_eq!(names(&shared), ["pre-commit"], "nothing changed");
    let st = s.noma_ok(&repo, &["hooks", "status"]);
    assert!(st.contains("shared by every repository"), "{st}");
    let out = s.noma(&repo, &["init", "--no-mcp"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(names(&shared), ["pre-commit"], "init changed nothing there");

    // The fix it prints: the repository's own hooks directory.
    let fix = err
        .split("git config core.hooksPath ")
        .nth(1)
        .and_then(|r| r.split(';').next())
        .unwrap()
        .trim_matches('"')
        .to_string();
    s.git_ok(&repo, &["config", "core.hooksPath", &fix]);
    s.install_fake(&repo, &[]);
    assert!(repo.join(".git/hooks/pre-commit").is_file());
    assert_eq!(names(&shared), ["pre-commit"]);
    s.git_ok(&repo, &["config", "--unset", "core.hooksPath"]);
    s.install_fake(&repo, &["--force"]);
    assert!(shared.join("pre-merge-commit").is_file());
}

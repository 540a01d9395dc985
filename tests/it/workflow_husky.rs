//! `noma init` in a repository managed by husky 9 keeps the
//! team's hook running and adds noma's check. The husky layout is built by
//! hand (no npm): the files husky 9 writes, `core.hooksPath=.husky/_`.
#![cfg(unix)]

use crate::common::{text, Repo, NOMA};

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

/// husky 9's dispatcher, reduced to what matters here: it runs
/// `.husky/$(basename "$0")` with `sh -e` and exits 0 when there is none.
const DISPATCHER: &str = r#"#!/usr/bin/env sh
n=$(basename "$0")
s=$(dirname "$(dirname "$0")")/$n
[ ! -f "$s" ] && exit 0
export PATH="node_modules/.bin:$PATH"
sh -e "$s" "$@"
c=$?
[ $c != 0 ] && echo "husky - $n script failed (code $c)"
exit $c
"#;

const STUB: &str = "#!/usr/bin/env sh\n. \"$(dirname \"$0\")/h\"\n";

fn write_exec(p: &Path, body: &str) {
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, body).unwrap();
    fs::set_permissions(p, fs::Permissions::from_mode(0o755)).unwrap();
}

struct Husky {
    repo: Repo,
    /// Holds `noma` for PATH: husky scripts run commands from PATH.
    bin: tempfile::TempDir,
    marker: PathBuf,
}

impl Husky {
    fn new() -> Husky {
        let repo = Repo::init();
        let bin = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(NOMA, bin.path().join("noma")).unwrap();
        let marker = repo.home.path().join("team-hook-ran");
        let root = repo.path();
        write_exec(&root.join(".husky/_/h"), DISPATCHER);
        for hook in ["pre-commit", "pre-merge-commit", "commit-msg"] {
            write_exec(&root.join(".husky/_").join(hook), STUB);
        }
        fs::write(root.join(".husky/_/.gitignore"), "*\n").unwrap();
        fs::write(
            root.join(".husky/pre-commit"),
            format!("echo ran >> '{}'\n", marker.display()),
        )
        .unwrap();
        repo.ok(&["config", "core.hooksPath", ".husky/_"]);
        Husky { repo, bin, marker }
    }

    fn with_path(&self, program: &str, args: &[&str]) -> Output {
        let path = format!(
            "{}:{}",
            self.bin.path().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        std::process::Command::new(program)
            .args(args)
            .current_dir(self.repo.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", self.repo.home.path())
            .env("PATH", path)
            .env_remove("GIT_DIR")
            .env_remove("GIT_INDEX_FILE")
            .env_remove("GIT_WORK_TREE")
            .output()
            .unwrap()
    }

    fn commit(&self, msg: &str) -> (bool, String) {
        self.repo.ok(&["add", "-A"]);
        let o = self.with_path("git", &["commit", "-q", "-m", msg]);
        (o.status.success(), text(&o))
    }

    fn runs(&self) -> usize {
        fs::read_to_string(&self.marker)
            .unwrap_or_default()
            .lines()
            .count()
    }
}

#[test]
fn init_installs_through_husky_and_both_hooks_run() {
    let h = Husky::new();
    let r = &h.repo;
    let o = r.noma(&["init", "--no-mcp"]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("husky layout"), "{out}");
    let team = r.read(".husky/pre-commit");
    assert!(
        team.starts_with("echo ran >> "),
        "team line kept first: {team}"
    );
    assert_eq!(team.matches("noma hook pre-commit").count(), 1, "{team}");
    // husky's stub is untouched and nothing was renamed beside it.
    assert_eq!(r.read(".husky/_/pre-commit"), STUB);
    assert!(!r.path().join(".husky/_/pre-commit.noma-chained").exists());
    let st = text(&r.noma(&["hooks", "status"]));
    assert!(st.contains("layout: husky v9"), "{st}");
    assert!(st.contains("pre-commit: husky"), "{st}");

    // Idempotent, and no advice about scripts noma did not write there.
    assert!(r.noma(&["init", "--no-mcp"]).status.success());
    let o = r.noma(&["hooks", "install"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        !text(&o).contains("keep them out of commits"),
        "{}",
        text(&o)
    );
    assert_eq!(r.read(".husky/pre-commit"), team);

    r.write("plan.noma", "# Plan\n\n::note{id=\"a\"}\nalpha\n::\n");
    let (ok, out) = h.commit("valid");
    assert!(ok, "{out}");
    assert_eq!(h.runs(), 1, "the team's hook ran");

    r.write(
        "plan.noma",
        "# Plan\n\n::note{id=\"a\"}\nalpha\n::\n\n::note{id=\"a\"}\ndup\n::\n",
    );
    let (ok, out) = h.commit("invalid");
    assert!(!ok, "noma's check must block: {out}");
    assert!(out.contains("[duplicate-id] plan.noma:"), "{out}");
    assert_eq!(h.runs(), 2, "the team's hook ran first");

    // Uninstall removes exactly our line.
    assert!(r.noma(&["hooks", "uninstall"]).status.success());
    assert_eq!(
        r.read(".husky/pre-commit"),
        format!("echo ran >> '{}'\n", h.marker.display())
    );
}

#[test]
fn an_earlier_chained_install_is_repaired() {
    let h = Husky::new();
    let r = &h.repo;
    // What earlier versions did: the stub renamed aside, noma's script in
    // its place; husky's dispatcher then finds no `.husky/pre-commit.noma-chained`.
    let dir = r.path().join(".husky/_");
    fs::rename(dir.join("pre-commit"), dir.join("pre-commit.noma-chained")).unwrap();
    write_exec(
        &dir.join("pre-commit"),
        "#!/bin/sh\n# noma-managed-hook v1 hook=pre-commit noma=0.1.0\nexit 0\n",
    );
    let o = r.noma(&["hooks", "install"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("restored husky's"), "{}", text(&o));
    assert_eq!(r.read(".husky/_/pre-commit"), STUB);
    r.write("plan.noma", "# Plan\n");
    let (ok, out) = h.commit("valid");
    assert!(ok, "{out}");
    assert_eq!(h.runs(), 1);
}

/// A committed `.husky` that is a symlink to a directory outside the
/// repository (with husky's `core.hooksPath=.husky/_`): `noma init` and
/// `noma hooks install` refuse to write through it, name the link, and
/// leave the outside directory untouched.
#[test]
fn a_hooks_dir_linked_outside_the_repository_is_refused() {
    let h = Husky::new();
    let r = &h.repo;
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("husky");
    fs::rename(r.path().join(".husky"), &target).unwrap();
    std::os::unix::fs::symlink(&target, r.path().join(".husky")).unwrap();
    let before = fs::read(target.join("pre-commit")).unwrap();

    for args in [&["init", "--no-mcp"][..], &["hooks", "install"][..]] {
        let o = r.noma(args);
        let out = text(&o);
        assert!(!o.status.success(), "{args:?}: {out}");
        assert!(
            out.contains("resolves to") && out.contains("outside the repository"),
            "{args:?}: {out}"
        );
        assert!(out.contains(".husky"), "{args:?} names the link: {out}");
        assert_eq!(
            fs::read(target.join("pre-commit")).unwrap(),
            before,
            "{args:?} wrote through the link"
        );
        for hook in ["pre-commit", "pre-merge-commit", "commit-msg", "post-merge"] {
            let stub = fs::read_to_string(target.join("_").join(hook)).unwrap_or_default();
            assert!(!stub.contains("noma"), "{args:?} wrote {hook}: {stub}");
        }
    }

    // A link that stays inside the work tree is followed as before.
    fs::remove_file(r.path().join(".husky")).unwrap();
    fs::rename(&target, r.path().join("team-hooks")).unwrap();
    std::os::unix::fs::symlink("team-hooks", r.path().join(".husky")).unwrap();
    let o = r.noma(&["hooks", "install"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(r.read("team-hooks/pre-commit").contains("noma"));
}

//! `noma init` in real repositories driven by the git CLI: what it creates,
//! idempotence, what it never overwrites.
#![cfg(unix)]

use std::fs;
use std::path::Path;

use noma_provenance::config::{Policy, PolicyFile};

use crate::common::Sandbox;

#[test]
fn init_twice_is_idempotent() {
    let s = Sandbox::new();
    let repo = s.repo("r");
    let sub = repo.join("docs");
    fs::create_dir_all(&sub).unwrap();

    let out = s.noma_ok(&sub, &["init"]);
    assert!(out.contains(".noma/config.yml: created"), "{out}");
    assert!(
        out.contains(".gitignore: created, ignoring .noma/cache/"),
        "{out}"
    );
    assert!(out.contains("pre-commit: installed\n"), "{out}");
    assert!(out.contains("pre-merge-commit: installed\n"), "{out}");
    let config = fs::read_to_string(repo.join(".noma/config.yml")).unwrap();
    assert!(config.starts_with("# noma repository policy"));
    assert_eq!(Policy::load(&repo).unwrap().file, PolicyFile::default());
    assert!(repo.join(".git/hooks/pre-commit").is_file());
    // The merge driver is part of the one-command setup.
    assert!(out.contains("merge driver: registered"), "{out}");
    let driver = s.git_ok(&repo, &["config", "merge.noma.driver"]);
    assert!(driver.contains("merge-driver"), "{driver}");
    let attrs = fs::read_to_string(repo.join(".gitattributes")).unwrap();
    assert!(attrs.contains("*.noma merge=noma"), "{attrs}");

    let out = s.noma_ok(&repo, &["init"]);
    assert!(
        out.contains(".noma/config.yml: exists; left as is"),
        "{out}"
    );
    assert!(
        out.contains(".gitignore: already ignores .noma/cache/"),
        "{out}"
    );
    assert_eq!(
        out.matches("already installed; nothing to do").count(),
        2,
        "{out}"
    );
    assert!(out.contains("merge driver: already registered"), "{out}");
    let gitignore = fs::read_to_string(repo.join(".gitignore")).unwrap();
    assert_eq!(gitignore.matches(".noma/cache/").count(), 1, "{gitignore}");
    assert_eq!(
        fs::read_to_string(repo.join(".gitattributes")).unwrap(),
        attrs,
        "a second init adds nothing"
    );
    assert_eq!(
        fs::read_to_string(repo.join(".noma/config.yml")).unwrap(),
        config
    );

    // Git agrees: the cache is ignored, the policy is not.
    s.git_ok(&repo, &["check-ignore", "-q", ".noma/cache/blocks.db"]);
    let st = s.git_ok(&repo, &["status", "--porcelain", "--untracked-files=all"]);
    assert!(st.contains("?? .noma/config.yml"), "{st}");
    assert!(st.contains("?? .gitignore"), "{st}");
}

#[test]
fn init_keeps_existing_files_and_appends_to_gitignore() {
    let s = Sandbox::new();
    let repo = s.repo("r");
    fs::create_dir_all(repo.join(".noma")).unwrap();
    fs::write(repo.join(".noma/config.yml"), "strict: true\n").unwrap();
    fs::write(repo.join(".gitignore"), "target").unwrap();

    let out = s.noma_ok(&repo, &["init", "--no-hooks"]);
    assert!(out.contains("exists; left as is"), "{out}");
    assert!(
        out.contains(".gitignore: now ignores .noma/cache/"),
        "{out}"
    );
    assert!(out.contains("hooks: skipped"), "{out}");
    assert_eq!(
        fs::read_to_string(repo.join(".noma/config.yml")).unwrap(),
        "strict: true\n"
    );
    let gi = fs::read_to_string(repo.join(".gitignore")).unwrap();
    assert!(
        gi.starts_with("target\n") && gi.contains(".noma/cache/\n"),
        "{gi:?}"
    );
    assert!(!repo.join(".git/hooks/pre-commit").exists());
    s.git_ok(&repo, &["check-ignore", "-q", "target"]);
    // What a write leaves beside a document while it runs, or after it
    // was killed, is never picked up by `git add -A`.
    for transient in [
        "docs/.plan.noma.noma-tmp-41-x7",
        ".plan.noma.patches.noma-intent",
    ] {
        s.git_ok(&repo, &["check-ignore", "-q", "--no-index", transient]);
    }
    s.git(
        &repo,
        &["check-ignore", "-q", "--no-index", "plan.noma.patches"],
    )
    .status
    .code()
    .filter(|c| *c == 1)
    .expect("a transcript is not ignored");
    // Running it again adds nothing.
    let out = s.noma_ok(&repo, &["init", "--no-hooks"]);
    assert!(out.contains(".gitignore: already ignores"), "{out}");
    assert_eq!(fs::read_to_string(repo.join(".gitignore")).unwrap(), gi);
}

#[test]
fn init_reports_refused_hooks_after_the_other_steps() {
    let s = Sandbox::new();
    let repo = s.repo("r");
    let husky = "#!/usr/bin/env sh\n. \"$(dirname \"$0\")/_/husky.sh\"\n";
    fs::write(repo.join(".git/hooks/pre-commit"), husky).unwrap();
    let out = s.noma(&repo, &["init"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("husky"), "{err}");
    assert!(err.contains("--no-hooks"), "{err}");
    assert!(repo.join(".noma/config.yml").is_file());
    assert_eq!(
        fs::read_to_string(repo.join(".git/hooks/pre-commit")).unwrap(),
        husky
    );
    // --force replaces it, keeping a backup.
    let out = s.noma_ok(&repo, &["init", "--force"]);
    assert!(out.contains("backup: pre-commit.noma-backup"), "{out}");
}

#[test]
fn init_outside_a_repository_or_in_a_bare_one_fails() {
    let s = Sandbox::new();
    let plain = s.root().join("plain");
    fs::create_dir_all(&plain).unwrap();
    let out = s.noma(&plain, &["init"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("git init"));
    assert!(!plain.join(".noma").exists());

    let bare = s.root().join("b.git");
    fs::create_dir_all(&bare).unwrap();
    s.git_ok(&bare, &["init", "-q", "--bare"]);
    let out = s.noma(&bare, &["init"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("bare repository"));
}

fn mcp_json(repo: &Path) -> serde_json::Value {
    serde_json::from_str(&fs::read_to_string(repo.join(".mcp.json")).unwrap()).unwrap()
}

#[test]
fn init_registers_the_mcp_server_and_merges_mcp_json() {
    let s = Sandbox::new();
    let noma = env!("CARGO_BIN_EXE_noma");
    let bin_dir = Path::new(noma).parent().unwrap().to_path_buf();
    let with_path = |dir: &Path, path: &str, args: &[&str]| {
        s.cmd(noma, dir)
            .env("PATH", path)
            .args(args)
            .output()
            .unwrap()
    };
    let own_path = format!("{}:/usr/bin:/bin", bin_dir.display());

    // PATH does not lead to this binary: the committed file still names
    // the bare `noma` (never this machine's path), and init says so.
    let repo = s.repo("abs");
    let out = with_path(&repo, "/usr/bin:/bin", &["init", "--no-hooks"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains(".mcp.json: created"),
        "{}",
        text(&out.stdout)
    );
    assert!(
        text(&out.stdout).contains("put its directory on PATH"),
        "{}",
        text(&out.stdout)
    );
    let v = mcp_json(&repo);
    let entry = &v["mcpServers"]["noma"];
    assert_eq!(entry["args"], serde_json::json!(["mcp"]));
    assert_eq!(entry["command"], "noma", "{entry}");
    // Idempotent; a different existing noma entry is kept.
    let out = with_path(&repo, "/usr/bin:/bin", &["init", "--no-hooks"]);
    assert!(
        text(&out.stdout).contains(".mcp.json: already registers"),
        "{}",
        text(&out.stdout)
    );
    // A team's own entry (a wrapper, an env) is never replaced.
    fs::write(
        repo.join(".mcp.json"),
        r#"{"mcpServers": {"noma": {"command": "/opt/noma/bin/noma", "args": ["mcp", "--root", "."]}}}"#,
    )
    .unwrap();
    let before = fs::read_to_string(repo.join(".mcp.json")).unwrap();
    let out = with_path(&repo, &own_path, &["init", "--no-hooks"]);
    assert!(out.status.success());
    assert!(
        text(&out.stdout).contains("left as is"),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(fs::read_to_string(repo.join(".mcp.json")).unwrap(), before);

    // PATH finds this binary: the bare command; other servers are kept.
    let repo = s.repo("merge");
    fs::write(
        repo.join(".mcp.json"),
        r#"{"mcpServers": {"other": {"type": "stdio", "command": "other", "args": ["serve"]}}}"#,
    )
    .unwrap();
    let out = with_path(&repo, &own_path, &["init", "--no-hooks"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("added the noma server"),
        "{}",
        text(&out.stdout)
    );
    let v = mcp_json(&repo);
    assert_eq!(
        v,
        serde_json::json!({"mcpServers": {
            "other": {"type": "stdio", "command": "other", "args": ["serve"]},
            "noma": {"command": "noma", "args": ["mcp"]}
        }})
    );

    // Unparsable: left byte for byte, exit 1, the other steps still done.
    let repo = s.repo("bad");
    fs::write(repo.join(".mcp.json"), "{ \"mcpServers\": { // mine\n").unwrap();
    let out = with_path(&repo, &own_path, &["init", "--no-hooks"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains(".mcp.json") && err.contains("left untouched"),
        "{err}"
    );
    assert_eq!(
        fs::read_to_string(repo.join(".mcp.json")).unwrap(),
        "{ \"mcpServers\": { // mine\n"
    );
    assert!(repo.join(".noma/config.yml").is_file());

    // --no-mcp writes nothing.
    let repo = s.repo("none");
    let out = with_path(&repo, &own_path, &["init", "--no-hooks", "--no-mcp"]);
    assert!(out.status.success());
    assert!(!repo.join(".mcp.json").exists());
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

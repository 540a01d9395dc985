//! The block cache through the real binary and real git repositories:
//! `noma blocks [--rev]`, `noma cache stats|clear`, damaged cache files and
//! concurrent processes.

use std::path::Path;
use std::process::{Command, Output};

use assert_cmd::cargo::CommandCargoExt;
use serde_json::Value;

/// A scratch HOME and repository with a deterministic git identity.
struct Repo {
    home: tempfile::TempDir,
    dir: tempfile::TempDir,
}

impl Repo {
    fn new() -> Repo {
        let repo = Repo {
            home: tempfile::tempdir().expect("home"),
            dir: tempfile::tempdir().expect("repo dir"),
        };
        repo.git(&["init", "-q"]);
        repo.git(&["config", "user.name", "Cache Test"]);
        repo.git(&["config", "user.email", "cache@test.invalid"]);
        repo.git(&["config", "commit.gpgsign", "false"]);
        repo
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn env(&self, cmd: &mut Command) {
        cmd.env("HOME", self.home.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE");
    }

    fn git(&self, args: &[&str]) {
        let mut cmd = Command::new("git");
        cmd.args(args).current_dir(self.path());
        self.env(&mut cmd);
        let out = cmd.output().expect("git runs");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn write(&self, name: &str, content: &[u8]) {
        let p = self.path().join(name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(p, content).expect("write");
    }

    fn commit(&self, msg: &str) {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "-m", msg]);
    }

    fn noma_in(&self, cwd: &Path, args: &[&str]) -> Output {
        let mut cmd = Command::cargo_bin("noma").expect("binary");
        cmd.args(args).current_dir(cwd);
        self.env(&mut cmd);
        cmd.output().expect("noma runs")
    }

    fn noma(&self, args: &[&str]) -> Output {
        self.noma_in(self.path(), args)
    }

    fn db(&self) -> std::path::PathBuf {
        self.path().join(".noma/cache/blocks.sqlite3")
    }
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// What `noma blocks --format json` must print for `text`, computed by the
/// library without any cache.
fn expected_blocks(text: &str) -> Value {
    let doc = noma_core::doc::parse(text);
    serde_json::to_value(noma_core::doc::hash::block_hashes(text, &doc)).expect("json")
}

fn blocks_json(o: &Output) -> Value {
    assert!(o.status.success(), "noma failed: {}", stderr(o));
    serde_json::from_slice(&o.stdout).expect("json output")
}

fn stats(repo: &Repo) -> Value {
    let o = repo.noma(&["cache", "stats", "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).expect("stats json")
}

fn version(i: usize) -> String {
    let mut s = format!("# Doc v{i}\n\n::claim{{id=\"c1\"}}\nClaim text {i}.\n::\n\n");
    for k in 0..i {
        s.push_str(&format!("## Part {k}\n\nBody {k} of version {i}.\n\n"));
    }
    s
}

#[test]
fn blocks_rev_reads_committed_versions_through_the_cache() {
    let repo = Repo::new();
    repo.write("docs/a.noma", version(1).as_bytes());
    repo.commit("v1");
    repo.write("docs/a.noma", version(2).as_bytes());
    repo.commit("v2");
    repo.write("docs/a.noma", version(3).as_bytes());

    for round in 0..2 {
        let head = blocks_json(&repo.noma(&[
            "blocks",
            "docs/a.noma",
            "--rev",
            "HEAD",
            "--format",
            "json",
        ]));
        assert_eq!(head, expected_blocks(&version(2)), "round {round}");
        let prev = blocks_json(&repo.noma(&[
            "blocks",
            "docs/a.noma",
            "--rev",
            "HEAD~1",
            "--format",
            "json",
        ]));
        assert_eq!(prev, expected_blocks(&version(1)), "round {round}");
        let work = blocks_json(&repo.noma(&["blocks", "docs/a.noma", "--format", "json"]));
        assert_eq!(work, expected_blocks(&version(3)), "round {round}");
    }
    let s = stats(&repo);
    assert_eq!(s["entries"], 3, "{s}");
    assert_eq!(s["blob_ids"], 2, "{s}");
    assert_eq!(s["schema_version"], 4, "{s}");
    assert_eq!(s["backing"], "file", "{s}");
    assert!(s["size_bytes"].as_u64().unwrap_or(0) > 0, "{s}");

    // The cache ignores itself: it never shows up as untracked.
    let mut cmd = Command::new("git");
    cmd.args(["status", "--porcelain", "--untracked-files=all"])
        .current_dir(repo.path());
    repo.env(&mut cmd);
    let status = String::from_utf8_lossy(&cmd.output().expect("git").stdout).into_owned();
    assert!(!status.contains(".noma/"), "{status}");

    // From a subdirectory: `./a.noma` is cwd-relative, `a.noma` is
    // root-relative (as in git) and the error says what was meant.
    let sub = repo.path().join("docs");
    let o = repo.noma_in(
        &sub,
        &["blocks", "./a.noma", "--rev", "HEAD", "--format", "json"],
    );
    assert_eq!(blocks_json(&o), expected_blocks(&version(2)));
    let o = repo.noma_in(&sub, &["blocks", "a.noma", "--rev", "HEAD"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("HEAD:a.noma") && err.contains("./a.noma"),
        "{err}"
    );
}

#[test]
fn blocks_rev_refuses_binary_bad_revisions_and_directories() {
    let repo = Repo::new();
    repo.write("bin.noma", b"# x\n\0\x01\x02");
    repo.write("latin1.noma", b"# caf\xe9\n");
    repo.write("dir/ok.noma", b"# ok\n");
    repo.commit("odd files");
    let cases: [(&[&str], &str); 5] = [
        (&["blocks", "bin.noma", "--rev", "HEAD"], "binary"),
        (&["blocks", "latin1.noma", "--rev", "HEAD"], "UTF-8"),
        (&["blocks", "dir", "--rev", "HEAD"], "directory"),
        (
            &["blocks", "dir/ok.noma", "--rev", "nope~3"],
            "not a revision",
        ),
        (&["blocks", "missing.noma", "--rev", "HEAD"], "no such file"),
    ];
    for (args, needle) in cases {
        let o = repo.noma(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn stats_and_clear() {
    let repo = Repo::new();
    repo.write("a.noma", version(2).as_bytes());
    repo.write("b.noma", version(4).as_bytes());
    assert!(repo.noma(&["blocks", "a.noma"]).status.success());
    assert!(repo.noma(&["blocks", "b.noma"]).status.success());
    let s = stats(&repo);
    assert_eq!(s["entries"], 2, "{s}");
    let blocks = s["blocks"].as_u64().unwrap_or(0);
    assert!(blocks >= 8, "{s}");
    let human = stdout(&repo.noma(&["cache", "stats"]));
    assert!(
        human.contains("entries: 2") && human.contains("schema version: 4"),
        "{human}"
    );

    let o = repo.noma(&["cache", "clear"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("cleared 2 entries"), "{}", stdout(&o));
    let s = stats(&repo);
    assert_eq!(s["entries"], 0, "{s}");
    assert_eq!(s["blocks"], 0, "{s}");
    // Still usable after clearing.
    let o = repo.noma(&["blocks", "a.noma", "--format", "json"]);
    assert_eq!(blocks_json(&o), expected_blocks(&version(2)));
    assert_eq!(stats(&repo)["entries"], 1);
}

#[test]
fn damaged_cache_files_give_one_notice_and_correct_output() {
    let repo = Repo::new();
    repo.write("a.noma", version(3).as_bytes());
    assert!(repo.noma(&["blocks", "a.noma"]).status.success());
    let good = std::fs::read(repo.db()).expect("db exists");
    let damages: Vec<(&str, Vec<u8>)> = vec![
        (
            "garbage",
            b"this is not a database at all, just garbage bytes\n".repeat(200),
        ),
        (
            "truncated",
            good.get(..good.len() / 2).unwrap_or_default().to_vec(),
        ),
        ("header only", good.get(..100).unwrap_or_default().to_vec()),
    ];
    for (what, bytes) in damages {
        for suffix in ["-wal", "-shm"] {
            let mut p = repo.db().into_os_string();
            p.push(suffix);
            let _ = std::fs::remove_file(p);
        }
        std::fs::write(repo.db(), &bytes).expect("damage");
        let o = repo.noma(&["blocks", "a.noma", "--format", "json"]);
        assert_eq!(blocks_json(&o), expected_blocks(&version(3)), "{what}");
        let err = stderr(&o);
        assert!(err.lines().count() <= 1, "{what}: {err}");
        // A truncated file may still open and hold nothing damaged on the
        // path we read; garbage is always noticed.
        if what == "garbage" {
            assert!(err.contains("noma: note: block cache"), "{what}: {err}");
            assert!(err.contains("rebuilt"), "{what}: {err}");
        }
        // Afterwards the cache works silently.
        let o = repo.noma(&["blocks", "a.noma", "--format", "json"]);
        assert_eq!(blocks_json(&o), expected_blocks(&version(3)), "{what}");
        assert_eq!(stderr(&o), "", "{what}");
        assert_eq!(stats(&repo)["entries"], 1, "{what}");
    }

    // A zero-length file is a new, empty cache: no notice.
    std::fs::write(repo.db(), b"").expect("empty");
    let o = repo.noma(&["blocks", "a.noma", "--format", "json"]);
    assert_eq!(blocks_json(&o), expected_blocks(&version(3)));
    assert_eq!(stderr(&o), "");
}

#[test]
fn unusable_cache_directory_falls_back_with_one_notice() {
    let repo = Repo::new();
    repo.write("a.noma", version(2).as_bytes());
    // `.noma/cache` is a file: the directory cannot be created.
    repo.write(".noma/cache", b"not a directory");
    let o = repo.noma(&["blocks", "a.noma", "--format", "json"]);
    assert_eq!(blocks_json(&o), expected_blocks(&version(2)));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("in-memory"), "{err}");
    let s = stats(&repo);
    assert_eq!(s["backing"], "memory", "{s}");
}

#[test]
fn outside_a_repository_nothing_is_written() {
    let home = tempfile::tempdir().expect("home");
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join("a.noma"), version(2)).expect("write");
    let run = |args: &[&str]| {
        Command::cargo_bin("noma")
            .expect("binary")
            .args(args)
            .current_dir(dir.path())
            .env("HOME", home.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env(
                "GIT_CEILING_DIRECTORIES",
                dir.path().parent().unwrap_or(dir.path()),
            )
            .output()
            .expect("runs")
    };
    let o = run(&["blocks", "a.noma", "--format", "json"]);
    assert_eq!(blocks_json(&o), expected_blocks(&version(2)));
    assert!(!dir.path().join(".noma").exists());
    let o = run(&["cache", "stats", "--format", "json"]);
    let s: Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(s["backing"], "disabled", "{s}");
    assert!(run(&["cache", "clear"]).status.success());
}

#[test]
fn concurrent_processes_share_one_consistent_cache() {
    const PROCS: usize = 8;
    const ROUNDS: usize = 4;
    let repo = Repo::new();
    let texts: Vec<String> = (0..PROCS)
        .map(|i| noma_testutil::synth::document(20 + i * 7))
        .collect();
    for (i, t) in texts.iter().enumerate() {
        repo.write(&format!("f{i}.noma"), t.as_bytes());
    }
    repo.commit("files");
    let bin = assert_cmd::cargo::cargo_bin("noma");
    let mut children = Vec::new();
    for i in 0..PROCS {
        // Each process runs its rounds back to back, alternating working
        // file and committed blob, all at once with the others.
        let script: String = (0..ROUNDS)
            .map(|r| {
                let rev = if r % 2 == 1 { " --rev HEAD" } else { "" };
                format!(
                    "\"$NOMA\" blocks f{i}.noma --format json{rev} > out{i}-{r}.json || exit 1\n"
                )
            })
            .collect();
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(script)
            .current_dir(repo.path())
            .env("NOMA", &bin);
        repo.env(&mut cmd);
        children.push(
            cmd.stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn"),
        );
    }
    for (i, c) in children.into_iter().enumerate() {
        let o = c.wait_with_output().expect("wait");
        assert!(
            o.status.success(),
            "process {i}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&o.stderr), "", "process {i}");
    }
    for (i, t) in texts.iter().enumerate() {
        let want = expected_blocks(t);
        for r in 0..ROUNDS {
            let got: Value = serde_json::from_slice(
                &std::fs::read(repo.path().join(format!("out{i}-{r}.json"))).expect("output"),
            )
            .expect("json");
            assert_eq!(got, want, "file {i} round {r}");
        }
    }
    let s = stats(&repo);
    assert_eq!(s["entries"], PROCS as u64, "{s}");
    assert_eq!(s["blob_ids"], PROCS as u64, "{s}");
    let conn = rusqlite::Connection::open(repo.db()).expect("open");
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .expect("integrity_check");
    assert_eq!(check, "ok");
}

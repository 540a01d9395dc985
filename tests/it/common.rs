//! Shared by the integration tests that drive the real binary and the
//! `git` CLI in temporary repositories: a repository with its own HOME,
//! isolated from the machine's git configuration and environment.
#![allow(dead_code)] // not every helper is used by some test module

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The binary under test.
pub const NOMA: &str = env!("CARGO_BIN_EXE_noma");

/// `../shared/reference` (the reference implementation's checkout beside
/// this repository), or `None` with a visible `SKIP` line where a user's
/// clone does not have it; with `CI` set its absence fails the test. The
/// same rule as the crates' unit tests: one helper, `noma-testutil`.
pub fn shared_reference(test: &str) -> Option<PathBuf> {
    noma_testutil::shared_reference(test)
}

/// Runs `program` in `dir` with an environment isolated from the machine's
/// git configuration: HOME is `dir`, a committer identity comes from the
/// environment, and git never looks above `dir` for a repository.
pub fn run_at(dir: &Path, program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@e")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@e")
        .env(
            "GIT_CEILING_DIRECTORIES",
            dir.parent().unwrap_or(Path::new("/")),
        )
        .env_remove("GIT_DIR")
        .env_remove("GIT_INDEX_FILE")
        .env_remove("GIT_WORK_TREE")
        .output()
        .expect("spawn")
}

/// [`run_at`] for git, asserting success.
pub fn git_at(dir: &Path, args: &[&str]) {
    let o = run_at(dir, "git", args);
    assert!(o.status.success(), "git {args:?}: {}", text(&o));
}

/// A temporary repository (branch `main`, a committer identity, no
/// signing) with its own HOME.
pub struct Repo {
    pub dir: tempfile::TempDir,
    pub home: tempfile::TempDir,
}

/// stdout and stderr of a finished command, for assertion messages.
pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Asserts that a command succeeded, showing what it printed otherwise.
pub fn assert_ran(o: &Output) {
    assert!(o.status.success(), "{}", text(o));
}

impl Repo {
    /// `git init` with identity and no signing; nothing committed.
    pub fn init() -> Repo {
        let r = Repo {
            dir: tempfile::tempdir().unwrap(),
            home: tempfile::tempdir().unwrap(),
        };
        r.ok(&["-c", "init.defaultBranch=main", "init", "-q"]);
        r.ok(&["config", "user.name", "Tester"]);
        r.ok(&["config", "user.email", "t@example.com"]);
        r.ok(&["config", "commit.gpgsign", "false"]);
        r
    }

    /// The work tree.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Runs `program` in the work tree with the isolated environment.
    ///
    /// A binary a test has just copied can be "busy" for an instant: a
    /// process another test thread forks inherits the copy's write handle
    /// until it execs. That ends by itself, so the start is tried again
    /// (ETXTBSY fails at once; nothing ran).
    pub fn cmd(&self, program: &str, args: &[&str]) -> Output {
        let mut command = Command::new(program);
        command
            .args(args)
            .current_dir(self.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", self.home.path())
            .env("USER", "tester")
            // A developer's running agent must not sign for the tests;
            // the agent tests name their own.
            .env_remove("SSH_AUTH_SOCK")
            .env_remove("GIT_DIR")
            .env_remove("GIT_INDEX_FILE")
            .env_remove("GIT_WORK_TREE");
        let mut tries = 0;
        loop {
            match command.output() {
                Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 1000 => {
                    tries += 1;
                    std::thread::yield_now();
                }
                other => return other.unwrap(),
            }
        }
    }

    /// Runs git.
    pub fn git(&self, args: &[&str]) -> Output {
        self.cmd("git", args)
    }

    /// Runs git and asserts success; returns its output text.
    pub fn ok(&self, args: &[&str]) -> String {
        let o = self.git(args);
        assert!(o.status.success(), "git {args:?} failed:\n{}", text(&o));
        text(&o)
    }

    /// Runs the binary under test.
    pub fn noma(&self, args: &[&str]) -> Output {
        self.cmd(NOMA, args)
    }

    /// Runs `cmd` with `sh -c` in the work tree as a user would, with
    /// `noma` on PATH: how tests run the fixes the hooks print.
    pub fn sh(&self, cmd: &str) -> Output {
        let bin = Path::new(NOMA).parent().unwrap();
        let path = format!(
            "PATH={}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut o = self.cmd("env", &[&path, "sh", "-c", cmd]);
        // Name the command in the output a failing assertion shows.
        o.stderr.splice(0..0, format!("$ {cmd}\n").into_bytes());
        o
    }

    /// Writes a file (creating its directory).
    pub fn write(&self, rel: &str, content: &str) {
        let p = self.path().join(rel);
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(p, content).unwrap();
    }

    /// Reads a file of the work tree.
    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path().join(rel)).unwrap()
    }

    /// A repository after `noma init`, with `plan.noma` (`doc`) committed
    /// together with the genesis record that starts its transcript.
    pub fn with_genesis_record(doc: &str) -> Repo {
        let r = Repo::init();
        let o = r.noma(&["init"]);
        assert!(o.status.success(), "{}", text(&o));
        r.write("plan.noma", doc);
        let o = r.noma(&["record", "plan.noma"]);
        assert!(o.status.success(), "genesis: {}", text(&o));
        r.commit_all("plan, with its genesis record");
        r
    }

    /// `git add -A`, then `git commit -q -m MSG` through any installed
    /// hooks; asserts that both succeed.
    pub fn commit_all(&self, msg: &str) {
        self.ok(&["add", "-A"]);
        let o = self.git(&["commit", "-q", "-m", msg]);
        assert!(o.status.success(), "commit {msg:?} refused: {}", text(&o));
    }

    /// `git commit -q -m MSG` of what is staged: whether the hooks let it
    /// through, and what was printed.
    pub fn try_commit(&self, msg: &str) -> (bool, String) {
        let o = self.git(&["commit", "-q", "-m", msg]);
        (o.status.success(), text(&o))
    }

    /// `noma patch DOC --inplace --op OP` as the agent `bot`; asserts it ran.
    pub fn agent_patch(&self, doc: &str, op: &str) {
        let args = ["patch", doc, "--inplace", "--op", op];
        let o = self.noma(&[&args[..], &["--actor-kind", "agent", "--actor-name", "bot"]].concat());
        assert!(o.status.success(), "patch {op}: {}", text(&o));
    }
}

/// A temp dir with a private HOME, holding any number of repositories.
/// Every child runs with a clean git environment (no `GIT_*` variable, no
/// system config, no repository above the dir), so neither the user's
/// config nor an enclosing hook leaks in.
pub struct Sandbox {
    tmp: tempfile::TempDir,
}

impl Sandbox {
    /// An empty sandbox.
    pub fn new() -> Sandbox {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("home")).unwrap();
        Sandbox { tmp }
    }

    /// The sandbox directory.
    pub fn root(&self) -> &Path {
        self.tmp.path()
    }

    /// `program` in `dir` with the sandbox's environment.
    pub fn cmd(&self, program: &str, dir: &Path) -> Command {
        let mut c = Command::new(program);
        c.current_dir(dir);
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("GIT_") {
                c.env_remove(k);
            }
        }
        let home = self.root().join("home");
        c.env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CEILING_DIRECTORIES", self.root());
        c
    }

    /// Runs git in `dir`.
    pub fn git(&self, dir: &Path, args: &[&str]) -> Output {
        self.cmd("git", dir).args(args).output().unwrap()
    }

    /// Runs git in `dir`, asserting success; returns its stdout.
    pub fn git_ok(&self, dir: &Path, args: &[&str]) -> String {
        let out = self.git(dir, args);
        assert!(out.status.success(), "git {args:?}: {}", text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The binary under test in `dir`, not yet run.
    pub fn noma_cmd(&self, dir: &Path, args: &[&str]) -> Command {
        let mut c = self.cmd(NOMA, dir);
        c.args(args);
        c
    }

    /// Runs the binary under test in `dir`.
    pub fn noma(&self, dir: &Path, args: &[&str]) -> Output {
        self.noma_cmd(dir, args).output().unwrap()
    }

    /// Runs the binary under test in `dir`, asserting success; returns its stdout.
    pub fn noma_ok(&self, dir: &Path, args: &[&str]) -> String {
        let out = self.noma(dir, args);
        assert!(out.status.success(), "noma {args:?}: {}", text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `git init` of `name` in the sandbox, with identity, default branch
    /// `main` and no signing set in the repository.
    pub fn repo(&self, name: &str) -> PathBuf {
        let dir = self.root().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        self.git_ok(&dir, &["-c", "init.defaultBranch=main", "init", "-q"]);
        for (k, v) in [
            ("user.name", "Test"),
            ("user.email", "test@example.com"),
            ("init.defaultBranch", "main"),
            ("commit.gpgsign", "false"),
        ] {
            self.git_ok(&dir, &["config", k, v]);
        }
        dir
    }
}

/// A minimal `noma mcp` stdio client: one request at a time
/// ([`McpClient::call`]) or many in flight ([`McpClient::call_async`] then
/// [`McpClient::recv`]).
pub struct McpClient {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    out: std::io::BufReader<std::process::ChildStdout>,
    next_id: u64,
}

impl McpClient {
    /// Starts `noma mcp` in `root` and completes the initialize handshake.
    pub fn start(root: &Path) -> McpClient {
        McpClient::start_with(root, &[])
    }

    /// [`McpClient::start`] with more arguments (`--signing-key FILE`).
    pub fn start_with(root: &Path, args: &[&str]) -> McpClient {
        McpClient::start_at(root, "2025-06-18", args)
    }

    /// [`McpClient::start_with`], negotiating protocol revision `version`
    /// (asserted to be the one the server answers).
    pub fn start_at(root: &Path, version: &str, args: &[&str]) -> McpClient {
        use std::process::Stdio;
        let mut child = Command::new(NOMA)
            .arg("mcp")
            .args(args)
            .current_dir(root)
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let out = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut m = McpClient {
            child,
            stdin,
            out,
            next_id: 0,
        };
        let init = m.request(
            "initialize",
            serde_json::json!({"protocolVersion": version, "capabilities": {},
                   "clientInfo": {"name": "test", "version": "1"}}),
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "noma", "{init}");
        assert_eq!(init["result"]["protocolVersion"], version, "{init}");
        m.send(&serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        m
    }

    /// Writes one JSON-RPC line.
    pub fn send(&mut self, v: &serde_json::Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{v}").unwrap();
        stdin.flush().unwrap();
    }

    /// Reads the next line the server writes.
    pub fn recv(&mut self) -> serde_json::Value {
        self.recv_sized().0
    }

    /// [`McpClient::recv`] with the line's length in bytes.
    pub fn recv_sized(&mut self) -> (serde_json::Value, usize) {
        use std::io::BufRead;
        let mut line = String::new();
        assert!(self.out.read_line(&mut line).unwrap() > 0, "server EOF");
        (serde_json::from_str(&line).unwrap(), line.len())
    }

    /// Sends a request and returns its response (other lines are skipped).
    pub fn request(&mut self, method: &str, params: serde_json::Value) -> serde_json::Value {
        self.request_sized(method, params).0
    }

    /// [`McpClient::request`] with the response line's length in bytes.
    pub fn request_sized(
        &mut self,
        method: &str,
        params: serde_json::Value,
    ) -> (serde_json::Value, usize) {
        self.next_id += 1;
        let id = serde_json::json!(self.next_id);
        self.send(
            &serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        );
        loop {
            let (v, len) = self.recv_sized();
            if v["id"] == id {
                return (v, len);
            }
        }
    }

    /// Sends a `tools/call` with `id` without waiting for its answer.
    pub fn call_async(&mut self, id: u64, tool: &str, args: serde_json::Value) {
        self.send(
            &serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": args}}),
        );
    }

    /// Calls a tool and waits: (isError, parsed body).
    pub fn call(&mut self, tool: &str, args: serde_json::Value) -> (bool, serde_json::Value) {
        let r = self.request(
            "tools/call",
            serde_json::json!({"name": tool, "arguments": args}),
        );
        tool_body(&r)
    }

    /// A tool result that is not `isError`.
    pub fn ok(&mut self, tool: &str, args: serde_json::Value) -> serde_json::Value {
        let (is_error, body) = self.call(tool, args);
        assert!(!is_error, "{tool}: {body}");
        body
    }

    /// Closes stdin and waits for the server to exit.
    pub fn stop(mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }

    /// [`McpClient::stop`], asserting a clean exit.
    pub fn finish(mut self) {
        drop(self.stdin.take());
        let status = self.child.wait().unwrap();
        assert!(status.success(), "{status:?}");
    }
}

/// (isError, body) of a `tools/call` response: its `structuredContent`,
/// else its text content parsed (a big body's text is only a summary from
/// 2025-06-18 on).
pub fn tool_body(r: &serde_json::Value) -> (bool, serde_json::Value) {
    let result = r
        .get("result")
        .unwrap_or_else(|| panic!("not a tool result: {r}"));
    let body = match result.get("structuredContent") {
        Some(body) => body.clone(),
        None => serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap(),
    };
    (result["isError"] == serde_json::json!(true), body)
}

/// A temporary git repository with `doc` committed as `a.noma`, for
/// the MCP server's root.
pub fn mcp_repo(doc: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.noma"), doc).unwrap();
    // Committed, as the documents agents patch are: an uncommitted one's
    // first patch would open its transcript with a genesis record.
    for args in [
        &["init", "-q"][..],
        &["add", "a.noma"],
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@e",
            "-c",
            "commit.gpgsign=false",
            "commit",
            "-q",
            "--no-verify",
            "-m",
            "a",
        ],
    ] {
        let ok = Command::new("git")
            .args(args)
            .current_dir(dir.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", dir.path())
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE")
            .status()
            .unwrap();
        assert!(ok.success(), "git {args:?}");
    }
    dir
}

/// The `(fix: …)` command of the hook line with `code`.
pub fn fix_of(out: &str, code: &str) -> String {
    let line = out
        .lines()
        .find(|l| l.contains(&format!("[{code}]")))
        .unwrap_or_else(|| panic!("no [{code}] in:\n{out}"));
    let start = line.rfind("(fix: ").expect("a fix") + "(fix: ".len();
    line[start..line.len() - 1].to_string()
}

/// sha256 of no bytes: a genesis record's `pre_sha256`.
pub const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// Cases of a property test that builds a git repository per case: 8 (each
/// runs tens to hundreds of git and noma processes), or `PROPTEST_CASES`.
pub fn git_proptest_cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8)
}

/// Turns provenance on in `r`'s work tree (not committed): signatures
/// required, agents (`*@agents.example`) need a person's approval, and
/// `.noma/allowed_signers` lists alice@example.com and bot@agents.example
/// with keys made by [`keygen`]; returns their private key files (alice,
/// the agent).
pub fn signed_policy(r: &Repo) -> (PathBuf, PathBuf) {
    let (alice, alice_pub) = keygen(r, "alice");
    let (agent, agent_pub) = keygen(r, "bot");
    let mut config = r.read(".noma/config.yml");
    config.push_str(
        "provenance:\n  signatures: required\n  agents_need_approval: true\n  agent_principals: [\"*@agents.example\"]\n",
    );
    r.write(".noma/config.yml", &config);
    r.write(
        ".noma/allowed_signers",
        &format!(
            "alice@example.com namespaces=\"noma\" {alice_pub}\nbot@agents.example namespaces=\"noma\" {agent_pub}\n"
        ),
    );
    (alice, agent)
}

/// An Ed25519 key pair made by ssh-keygen outside the work tree (in the
/// repository's HOME); returns the private key file and the public key
/// line.
pub fn keygen(r: &Repo, name: &str) -> (PathBuf, String) {
    let path = r.home.path().join(name);
    let o = r.cmd(
        "ssh-keygen",
        &[
            "-q",
            "-t",
            "ed25519",
            "-N",
            "",
            "-C",
            name,
            "-f",
            path.to_str().unwrap(),
        ],
    );
    assert_ran(&o);
    let public = std::fs::read_to_string(path.with_extension("pub")).unwrap();
    (path, public.trim().to_string())
}

/// The Python (`NOMA_PYTHON`, default `python3`) that imports `modules`
/// (a comma-separated import list), with `dist`'s version printed; `None`
/// after a printed `SKIP` when there is none, and a panic under `CI`,
/// which must provide it (`.ci/run` installs the pinned versions).
pub fn python_with(modules: &str, dist: &str, test: &str) -> Option<String> {
    let python = std::env::var("NOMA_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = format!(
        "import {modules}; from importlib.metadata import version; print(version('{dist}'))"
    );
    let why = match Command::new(&python).args(["-c", &script]).output() {
        Ok(o) if o.status.success() => {
            eprintln!("{dist} {}", String::from_utf8_lossy(&o.stdout).trim());
            return Some(python);
        }
        Ok(o) => format!(
            "{python} cannot import {modules} ({}); `{python} -m pip install {dist}`",
            String::from_utf8_lossy(&o.stderr).trim()
        ),
        Err(e) => format!("cannot run {python}: {e}"),
    };
    assert!(
        std::env::var_os("CI").is_none(),
        "{test}: CI is set but {dist} is not available: {why}"
    );
    println!("SKIP {test}: {why}");
    None
}

/// SplitMix64, the generators' random source (`sim`, `forgery_gen`,
/// `lsp_fuzz`): the seed alone replays a run, with no dependency.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// True `percent` times in a hundred.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    /// One of `items` (not empty).
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// The number in environment variable `name`, if set; a value that is
/// not a number stops the test with its name.
pub fn env_number(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    Some(
        v.trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
    )
}

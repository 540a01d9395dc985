//! A simulator of team histories, with the real `git`, `ssh-keygen` and
//! the installed hooks and merge driver: a bare remote (GitHub, with no
//! merge driver) and three clones (alice, bob, carol) take random steps —
//! agent patches, a person's recorded edits, signed and unsigned writes,
//! approvals, `noma rm`, `git mv` of a document, new documents, a new
//! teammate's key added on main, `git merge main` into a pull request,
//! rebases, cherry-picks from another pull request, stashes — and land
//! pull requests as GitHub does (a merge commit or a squash built by plain
//! `git merge-tree`). Blocks are few, so the same block is often changed
//! on both sides.
//!
//! When a command prints a `fix:` or `next:` line (hook, driver, repair,
//! reconcile), the simulator runs the command it names, as a user would,
//! and records it in the history's log; a `::conflict` block is resolved
//! first by keeping one of its versions at random. When git stops with
//! unmerged paths that no command noma named resolved, the user does what
//! git's own message says (`git add -A`, keeping the versions git left in
//! the tree, then the operation's commit or `--continue`) and follows what
//! the hook then names; a cherry-pick that no noma message explains is
//! given up (`--abort`).
//!
//! Invariants, after every landing: every document with a transcript on
//! main replays (`noma replay --rev`); every op_id ever on a landed branch
//! is on main, as itself or as a copy (`parent_op_id`, transitively; a
//! removed document's transcript stays as its tombstone); and each open
//! pull request, after the update step (`git merge main` and the commands
//! noma names), passes `noma reconcile --base main` and merges into main
//! with plain `git merge-tree` cleanly.
//!
//! The run's seed is printed; `NOMA_SIM_SEED` replays (a number, or
//! `random`), `NOMA_SIM_HISTORIES` (default 200; 1 when a seed is given)
//! and `NOMA_SIM_STEPS` (default 30) scale it, `NOMA_SIM_THREADS` sets the
//! worker threads. History `i` of a run with seed `s` has seed `s + i`. A
//! failure prints its seed and the log: every command, its exit code, and
//! every message followed.
//!
//! Cost: keys, the remote and three clones set up by `noma init` are made
//! once per run and copied with `cp -r` per history, on `/dev/shm` when it
//! exists; git's automatic maintenance is off in them. The clones share
//! the remote's object store, so a fetch or a push is the ref updates it
//! would leave (made in process, and a fetch only when the remote
//! changed); what only reads (the index, ancestry, a revision's
//! transcripts) is read in process; an update of a branch that already
//! holds main runs no `git merge` (it would say "Already up to date"); a
//! document replays on main once per (document, transcript) bytes; a
//! landing commits, in process, the tree the PR check's `merge-tree`
//! computed. `NOMA_SIM_PROFILE=1` (with `NOMA_SIM_THREADS=1`) prints the
//! CPU each kind of command took, its hooks and drivers included.
#![cfg(unix)]

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::common::{env_number, text, Rng, NOMA};

/// The teammates, one per clone; carol's key is not trusted until a step
/// adds it on main.
const PEOPLE: [&str; 3] = ["alice", "bob", "carol"];

/// Three notes far enough apart that git's text merge of two different
/// blocks is clean; every other line names the document, so git's rename
/// detection never pairs two documents of a history as one (documents are
/// less than half alike).
fn document(name: &str) -> String {
    let prose = |part: &str| {
        (1..=4)
            .map(|i| format!("{name}: {part}, line {i}.\n\n"))
            .collect::<String>()
    };
    format!(
        "# {name}\n\n::note{{id=\"c1\"}}\none of {name}\n::\n\n## {name} A\n\n{}::note{{id=\"c2\"}}\ntwo of {name}\n::\n\n## {name} B\n\n{}::note{{id=\"c3\"}}\nthree of {name}\n::\n",
        prose("first"),
        prose("second")
    )
}

const BLOCKS: [&str; 3] = ["c1", "c2", "c3"];

/// The environment every process of a history runs in: HOME is the
/// history's directory, no system or global git configuration, git never
/// looks above it, no editor and no ssh-agent.
fn command(root: &Path, dir: &Path, program: &str) -> Command {
    let mut c = Command::new(program);
    c.current_dir(dir);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("GIT_") {
            c.env_remove(k);
        }
    }
    let bin = Path::new(NOMA).parent().unwrap();
    c.env("HOME", root)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CEILING_DIRECTORIES", root)
        .env("GIT_EDITOR", "true")
        .env("GIT_MERGE_AUTOEDIT", "no")
        .env(
            "PATH",
            format!(
                "{}:{}",
                bin.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .env_remove("SSH_AUTH_SOCK");
    c
}

/// With `NOMA_SIM_PROFILE` set (and one thread): per command (program
/// and first argument), how often it ran and the CPU seconds it and its
/// children (hooks, drivers) took.
static PROFILE: std::sync::OnceLock<Mutex<BTreeMap<String, (usize, f64)>>> =
    std::sync::OnceLock::new();

/// CPU seconds (user and system) of the waited-for children so far.
fn children_cpu() -> f64 {
    // SAFETY: getrusage writes the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(u.ru_utime) + secs(u.ru_stime)
}

fn output(mut c: Command) -> Output {
    let mut tries = 0;
    loop {
        match c.output() {
            // A binary another thread just wrote can be busy for an instant.
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 1000 => {
                tries += 1;
                std::thread::yield_now();
            }
            other => return other.expect("spawn"),
        }
    }
}

fn must(o: Output, what: &str) -> String {
    assert!(o.status.success(), "{what}: {}", text(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A directory for a history (or the template): on a memory file system
/// when there is one (`/dev/shm`), since a history is thousands of small
/// git writes and, beside another job's disk load, copying a finished
/// history took 7.8 s on the disk against 0.3 s there; else the system's
/// temp dir.
fn scratch() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(t) = tempfile::Builder::new().prefix("noma-sim").tempdir_in(shm) {
            return t;
        }
    }
    tempfile::tempdir().unwrap()
}

/// The template every history copies: `remote.git` (bare, `main` with two
/// documents and the policy) and clones `alice`, `bob`, `carol` with
/// noma's hooks and driver, plus the four keys in `keys/`. Made once per
/// run and removed with it.
fn template() -> tempfile::TempDir {
    let t = scratch();
    let root = t.path();
    let git = |dir: &Path, args: &[&str]| {
        let mut c = command(root, dir, "git");
        c.args(args);
        must(output(c), &format!("git {args:?}"))
    };
    std::fs::create_dir_all(root.join("keys")).unwrap();
    let mut signers = String::new();
    for who in ["alice", "bob", "carol", "bot"] {
        let key = root.join("keys").join(who);
        let mut c = command(root, root, "ssh-keygen");
        c.args(["-q", "-t", "ed25519", "-N", "", "-C", who, "-f"])
            .arg(&key);
        must(output(c), "ssh-keygen");
        let public = std::fs::read_to_string(key.with_extension("pub")).unwrap();
        let principal = if who == "bot" {
            "bot@agents.example".to_string()
        } else {
            format!("{who}@example.com")
        };
        let line = format!("{principal} namespaces=\"noma\" {}\n", public.trim());
        std::fs::write(root.join("keys").join(format!("{who}.line")), &line).unwrap();
        if who != "carol" {
            signers.push_str(&line);
        }
    }
    git(root, &["init", "-q", "--bare", "-b", "main", "remote.git"]);
    // No `git maintenance run --auto` or `gc --auto` after every
    // commit, merge, fetch and push (a third of a history's git
    // processes): histories are short-lived and never large.
    let remote = root.join("remote.git");
    git(&remote, &["config", "receive.autogc", "false"]);
    git(&remote, &["config", "gc.auto", "0"]);
    let a = root.join("alice");
    git(root, &["init", "-q", "-b", "main", "alice"]);
    let mut c = command(root, &a, NOMA);
    c.arg("init");
    must(output(c), "noma init");
    let mut config = std::fs::read_to_string(a.join(".noma/config.yml")).unwrap();
    config
        .push_str("provenance:\n  signatures: warn\n  agent_principals: [\"*@agents.example\"]\n");
    std::fs::write(a.join(".noma/config.yml"), config).unwrap();
    std::fs::write(a.join(".noma/allowed_signers"), signers).unwrap();
    // Main's documents start with a transcript (a genesis record
    // signed by alice): see KNOWN_GAPS for two branches starting one.
    for d in ["d1", "d2"] {
        std::fs::write(a.join(format!("{d}.noma")), document(d)).unwrap();
        let key = root.join("keys/alice");
        let mut c = command(root, &a, NOMA);
        c.args([
            "record",
            &format!("{d}.noma"),
            "--actor-name",
            "alice",
            "--key",
        ])
        .arg(&key);
        must(output(c), "noma record (genesis)");
    }
    git(&a, &["add", "-A"]);
    git(
        &a,
        &[
            "-c",
            "user.name=alice",
            "-c",
            "user.email=alice@example.com",
            "commit",
            "-q",
            "-m",
            "start",
        ],
    );
    git(&a, &["remote", "add", "origin", "../remote.git"]);
    git(&a, &["push", "-q", "origin", "main"]);
    for who in ["bob", "carol"] {
        git(root, &["clone", "-q", "remote.git", who]);
        let dir = root.join(who);
        git(&dir, &["remote", "set-url", "origin", "../remote.git"]);
        let mut c = command(root, &dir, NOMA);
        c.args(["hooks", "install"]);
        must(output(c), "noma hooks install");
    }
    for who in PEOPLE {
        let dir = root.join(who);
        git(&dir, &["config", "user.name", who]);
        git(&dir, &["config", "maintenance.auto", "false"]);
        git(&dir, &["config", "gc.auto", "0"]);
        git(
            &dir,
            &["config", "user.email", &format!("{who}@example.com")],
        );
        git(&dir, &["fetch", "-q", "origin"]);
        // One object store for the remote and the clones (see
        // `History::fetch`): the clone's objects move into the remote's,
        // and its own becomes a link to it (relative, so a copy of the
        // template links to the copy's remote).
        let objects = dir.join(".git/objects");
        let o = Command::new("cp")
            .arg("-rn")
            .arg(format!("{}/.", objects.display()))
            .arg(remote.join("objects"))
            .output()
            .expect("cp");
        must(o, "cp -rn objects");
        std::fs::remove_dir_all(&objects).unwrap();
        std::os::unix::fs::symlink("../../remote.git/objects", &objects).unwrap();
    }
    t
}

/// What a history failed on: the invariant or the step that could not
/// go on.
type R = Result<(), String>;

/// How an operation git may stop in the middle of is continued.
#[derive(Clone, Copy, PartialEq)]
enum Op {
    Merge,
    Rebase,
    CherryPick,
}

struct Clone {
    dir: PathBuf,
    /// The open pull request's branch, if any.
    pr: Option<String>,
    /// Commits not yet pushed.
    dirty: bool,
    /// Documents this pull request added (what it removes half the time).
    own_docs: Vec<String>,
    /// [`History::remote_changed`] when this clone last fetched.
    fetched: usize,
}

struct History {
    root: PathBuf,
    rng: Rng,
    log: String,
    clones: Vec<Clone>,
    next_pr: usize,
    next_doc: usize,
    counter: usize,
    carol_joined: bool,
    /// Every op_id on a landed branch, with where it was seen first.
    landed: BTreeMap<String, String>,
    /// `parent_op_id` of every record seen: a copy names its original.
    parents: BTreeMap<String, String>,
    landings: usize,
    /// How often the remote's refs changed (pushes, landings): a clone
    /// whose last fetch saw the same count has nothing to fetch.
    remote_changed: usize,
    /// `PATH DOC-BLOB TRANSCRIPT-BLOB` of every document that replayed on
    /// main.
    replayed: BTreeSet<String>,
}

impl History {
    fn new(seed: u64, dir: &Path, template: &Path) -> History {
        let root = dir.join("h");
        let o = Command::new("cp")
            .arg("-r")
            .arg(template)
            .arg(&root)
            .output()
            .expect("cp");
        must(o, "cp -r template");
        History {
            clones: PEOPLE
                .iter()
                .map(|p| Clone {
                    dir: root.join(p),
                    pr: None,
                    dirty: false,
                    own_docs: Vec::new(),
                    fetched: 0,
                })
                .collect(),
            root,
            rng: Rng(seed),
            log: String::new(),
            next_pr: 0,
            next_doc: 3,
            counter: 0,
            carol_joined: false,
            landed: BTreeMap::new(),
            parents: BTreeMap::new(),
            landings: 0,
            remote_changed: 0,
            replayed: BTreeSet::new(),
        }
    }

    fn note(&mut self, line: &str) {
        self.log.push_str(line);
        self.log.push('\n');
    }

    /// Runs `program args` in clone `k` (or the remote with `None`),
    /// logging the command, its exit code, and its output when it failed
    /// or named a fix.
    fn run_in(&mut self, k: Option<usize>, program: &str, args: &[&str]) -> Output {
        let (dir, who) = match k {
            Some(k) => (self.clones[k].dir.clone(), PEOPLE[k]),
            None => (self.root.join("remote.git"), "remote"),
        };
        let mut c = command(&self.root, &dir, program);
        c.args(args);
        let before = PROFILE.get().map(|_| children_cpu());
        let o = output(c);
        let shown = if program == NOMA { "noma" } else { program };
        if let (Some(p), Some(before)) = (PROFILE.get(), before) {
            let what = args
                .iter()
                .find(|a| !a.starts_with('-'))
                .copied()
                .unwrap_or("");
            let mut p = p.lock().unwrap();
            let e = p.entry(format!("{shown} {what}")).or_default();
            e.0 += 1;
            e.1 += children_cpu() - before;
        }
        let mut line = format!("[{who}] $ {shown}");
        for a in args {
            if a.contains([' ', '"', '{', '\'']) {
                let _ = write!(line, " '{a}'");
            } else {
                let _ = write!(line, " {a}");
            }
        }
        let code = o.status.code().unwrap_or(-1);
        let _ = write!(line, "  => {code}");
        self.note(&line);
        let out = text(&o);
        if code != 0 || out.contains("fix:") || out.contains("next:") {
            for l in out.lines().filter(|l| !l.trim().is_empty()) {
                self.note(&format!("    | {l}"));
            }
        }
        o
    }

    fn git(&mut self, k: usize, args: &[&str]) -> Output {
        self.run_in(Some(k), "git", args)
    }

    fn git_ok(&mut self, k: usize, args: &[&str]) -> Result<String, String> {
        let o = self.git(k, args);
        if o.status.success() {
            Ok(String::from_utf8_lossy(&o.stdout).into_owned())
        } else {
            Err(format!("git {args:?} failed in {}", PEOPLE[k]))
        }
    }

    fn noma(&mut self, k: usize, args: &[&str]) -> Output {
        self.run_in(Some(k), NOMA, args)
    }

    /// A shell command noma printed, run as printed; its output is logged
    /// whatever it says.
    fn sh(&mut self, k: usize, cmd: &str) -> Output {
        self.note(&format!("    following: {cmd}"));
        let o = self.run_in(Some(k), "sh", &["-c", cmd]);
        let out = text(&o);
        let shown = !o.status.success() || out.contains("fix:") || out.contains("next:");
        if !shown {
            for l in out.lines().filter(|l| !l.trim().is_empty()) {
                self.note(&format!("    | {l}"));
            }
        }
        o
    }

    /// `git fetch origin` in clone `k`, unless nothing changed in the
    /// remote since its last fetch (the template's clones have fetched).
    /// The clones share the remote's object store, so a fetch is what it
    /// leaves behind once the objects are there: each `origin/*` set to
    /// the remote's branch (no pruning, as `git fetch`), written in
    /// process; `git fetch` and `git push` between local repositories were
    /// a third of a history's processes (upload-pack, receive-pack,
    /// pack-objects, unpack-objects, rev-list per call).
    fn fetch(&mut self, k: usize) -> R {
        if self.clones[k].fetched == self.remote_changed {
            return Ok(());
        }
        let remote = git2::Repository::open_bare(self.root.join("remote.git"))
            .map_err(|e| format!("open the remote: {e}"))?;
        let clone = git2::Repository::open(&self.clones[k].dir)
            .map_err(|e| format!("open {}: {e}", PEOPLE[k]))?;
        let refs = remote
            .references_glob("refs/heads/*")
            .map_err(|e| format!("the remote's branches: {e}"))?;
        let mut set = Vec::new();
        for r in refs {
            let r = r.map_err(|e| format!("the remote's branches: {e}"))?;
            if let (Some(name), Some(id)) = (r.shorthand(), r.target()) {
                set.push(format!("origin/{name}"));
                clone
                    .reference(&format!("refs/remotes/origin/{name}"), id, true, "fetch")
                    .map_err(|e| format!("set origin/{name} in {}: {e}", PEOPLE[k]))?;
            }
        }
        self.note(&format!(
            "[{}] fetch (shared objects): {}",
            PEOPLE[k],
            set.join(" ")
        ));
        self.clones[k].fetched = self.remote_changed;
        Ok(())
    }

    /// `git push -f origin BRANCH` from clone `k` (see [`History::fetch`]):
    /// the remote's branch and the clone's `origin/BRANCH` set to the
    /// clone's.
    fn push_branch(&mut self, k: usize, branch: &str) -> R {
        let remote = git2::Repository::open_bare(self.root.join("remote.git"))
            .map_err(|e| format!("open the remote: {e}"))?;
        let clone = git2::Repository::open(&self.clones[k].dir)
            .map_err(|e| format!("open {}: {e}", PEOPLE[k]))?;
        let id = clone
            .refname_to_id(&format!("refs/heads/{branch}"))
            .map_err(|e| format!("{branch} in {}: {e}", PEOPLE[k]))?;
        remote
            .reference(&format!("refs/heads/{branch}"), id, true, "push")
            .map_err(|e| format!("push {branch}: {e}"))?;
        clone
            .reference(&format!("refs/remotes/origin/{branch}"), id, true, "push")
            .map_err(|e| format!("set origin/{branch} in {}: {e}", PEOPLE[k]))?;
        self.note(&format!(
            "[{}] push -f origin {branch} (shared objects): {id}",
            PEOPLE[k]
        ));
        self.remote_changed += 1;
        Ok(())
    }

    fn key(&self, who: &str) -> String {
        self.root.join("keys").join(who).display().to_string()
    }

    fn fresh(&mut self, k: usize) -> String {
        self.counter += 1;
        format!("{} {}", PEOPLE[k], self.counter)
    }

    /// The live documents of clone `k`'s work tree.
    /// Read from the index in process (`git ls-files -- '*.noma'`).
    fn docs(&mut self, k: usize) -> Result<Vec<String>, String> {
        let index = self.repo(k)?.index().map_err(|e| format!("index: {e}"))?;
        Ok(index
            .iter()
            .filter_map(|e| String::from_utf8(e.path).ok())
            .filter(|p| p.ends_with(".noma"))
            .collect())
    }

    /// Clone `k`'s repository, opened in process for reads that need no
    /// git process (refs, the index, ancestry).
    fn repo(&self, k: usize) -> Result<git2::Repository, String> {
        git2::Repository::open(&self.clones[k].dir).map_err(|e| format!("open {}: {e}", PEOPLE[k]))
    }

    /// Whether clone `k`'s index differs from HEAD (`git status
    /// --porcelain` after `git add -A`), read in process.
    fn staged_changes(&self, k: usize) -> Result<bool, String> {
        let repo = self.repo(k)?;
        let head = repo
            .head()
            .and_then(|h| h.peel_to_tree())
            .map_err(|e| format!("HEAD of {}: {e}", PEOPLE[k]))?;
        let diff = repo
            .diff_tree_to_index(Some(&head), None, None)
            .map_err(|e| format!("diff in {}: {e}", PEOPLE[k]))?;
        Ok(diff.deltas().len() > 0)
    }

    /// Whether clone `k`'s allowed_signers trusts `who`'s key.
    fn trusted(&self, k: usize, who: &str) -> bool {
        let signers = std::fs::read_to_string(self.clones[k].dir.join(".noma/allowed_signers"))
            .unwrap_or_default();
        signers.contains(&format!("{who}@"))
    }

    /// `--key FILE` when `who` signs this write (trusted, and a coin).
    fn signing(&mut self, k: usize, who: &str) -> Vec<String> {
        if self.trusted(k, who) && self.rng.chance(60) {
            vec!["--key".into(), self.key(who)]
        } else {
            vec!["--no-sign".into()]
        }
    }

    // ---- the steps ----

    fn step(&mut self, k: usize) -> R {
        if self.clones[k].pr.is_none() {
            if !self.carol_joined && self.rng.chance(10) {
                return self.carol_joins(k);
            }
            return self.open_pr(k);
        }
        match self.rng.below(100) {
            0..=29 => self.agent_patch(k),
            30..=41 => self.person_edit(k),
            42..=46 => self.approve(k),
            47..=49 => self.remove(k),
            50..=53 => self.rename(k),
            54..=55 => self.new_document(k),
            56..=65 => self.update(k),
            66..=71 => self.rebase(k),
            72..=76 => self.cherry_pick(k),
            77..=81 => self.stash(k),
            _ => self.land(k),
        }
    }

    fn open_pr(&mut self, k: usize) -> R {
        self.next_pr += 1;
        let name = format!("pr{}", self.next_pr);
        self.note(&format!("## {} opens {name}", PEOPLE[k]));
        self.fetch(k)?;
        self.git_ok(k, &["checkout", "-q", "-B", &name, "origin/main"])?;
        self.clones[k].pr = Some(name);
        self.clones[k].own_docs.clear();
        // Pushed at its first use: opened on GitHub.
        self.clones[k].dirty = true;
        Ok(())
    }

    /// A document and block to change in clone `k`, if it has any.
    fn target(&mut self, k: usize) -> Result<Option<(String, &'static str)>, String> {
        let docs = self.docs(k)?;
        if docs.is_empty() {
            return Ok(None);
        }
        let doc = docs[self.rng.below(docs.len())].clone();
        let block = BLOCKS[self.rng.below(BLOCKS.len())];
        Ok(Some((doc, block)))
    }

    fn agent_write(&mut self, k: usize) -> Result<bool, String> {
        let Some((doc, block)) = self.target(k)? else {
            return Ok(false);
        };
        let content = self.fresh(k);
        let op =
            serde_json::json!({"op": "replace_body", "id": block, "content": content}).to_string();
        let sign = self.signing(k, "bot");
        let mut args = vec![
            "patch",
            &doc,
            "--inplace",
            "--actor-kind",
            "agent",
            "--actor-name",
            "bot",
            "--op",
            &op,
        ];
        args.extend(sign.iter().map(String::as_str));
        let o = self.noma(k, &args);
        if !o.status.success() {
            return Err(format!("an agent's patch of {doc} was refused"));
        }
        Ok(true)
    }

    fn agent_patch(&mut self, k: usize) -> R {
        self.note(&format!("## {}: an agent patches", PEOPLE[k]));
        if self.agent_write(k)? {
            self.commit(k, "agent patch")?;
        }
        Ok(())
    }

    fn person_edit(&mut self, k: usize) -> R {
        let who = PEOPLE[k];
        self.note(&format!("## {who} edits a block and records it"));
        let Some((doc, block)) = self.target(k)? else {
            return Ok(());
        };
        let path = self.clones[k].dir.join(&doc);
        let body = self.fresh(k);
        let Some(edited) = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| set_body(&t, block, &body))
        else {
            return Ok(());
        };
        std::fs::write(&path, edited).unwrap();
        let sign = self.signing(k, who);
        let mut args = vec!["record", &doc, "--actor-name", who];
        args.extend(sign.iter().map(String::as_str));
        let o = self.noma(k, &args);
        if !o.status.success() {
            return Err(format!("noma record {doc} was refused"));
        }
        self.commit(k, "person edit")
    }

    fn approve(&mut self, k: usize) -> R {
        let who = PEOPLE[k];
        if !self.trusted(k, who) {
            return self.agent_patch(k);
        }
        self.note(&format!("## {who} approves"));
        // Only a document with a transcript has records to approve.
        let docs: Vec<String> = self
            .docs(k)?
            .into_iter()
            .filter(|d| self.clones[k].dir.join(format!("{d}.patches")).exists())
            .collect();
        if docs.is_empty() {
            return Ok(());
        }
        let doc = docs[self.rng.below(docs.len())].clone();
        let key = self.key(who);
        let o = self.noma(k, &["approve", &doc, "--yes", "--key", &key]);
        if !o.status.success() {
            return Err(format!("noma approve {doc} failed"));
        }
        self.commit(k, "approve")
    }

    fn remove(&mut self, k: usize) -> R {
        let docs = self.docs(k)?;
        // Half the time any document, which another branch may patch or
        // move; else one this pull request added.
        let any = self.rng.chance(50);
        let own: Vec<String> = docs
            .into_iter()
            .filter(|d| any || self.clones[k].own_docs.contains(d))
            .collect();
        if own.is_empty() {
            return self.new_document(k);
        }
        let who = PEOPLE[k];
        self.note(&format!("## {who} removes a document"));
        let doc = own[self.rng.below(own.len())].clone();
        let sign = self.signing(k, who);
        let mut args = vec!["rm", &doc, "--actor-name", who];
        args.extend(sign.iter().map(String::as_str));
        let o = self.noma(k, &args);
        if !o.status.success() {
            return Err(format!("noma rm {doc} was refused"));
        }
        self.commit(k, "remove")
    }

    fn rename(&mut self, k: usize) -> R {
        let Some((doc, _)) = self.target(k)? else {
            return Ok(());
        };
        self.note(&format!("## {} moves {doc}", PEOPLE[k]));
        self.next_doc += 1;
        let new = format!("m{}.noma", self.next_doc);
        for d in &mut self.clones[k].own_docs {
            if *d == doc {
                d.clone_from(&new);
            }
        }
        self.git_ok(k, &["mv", &doc, &new])?;
        for ext in [".patches", ".provenance"] {
            if self.clones[k].dir.join(format!("{doc}{ext}")).exists() {
                self.git_ok(k, &["mv", &format!("{doc}{ext}"), &format!("{new}{ext}")])?;
            }
        }
        self.commit(k, "move")
    }

    fn new_document(&mut self, k: usize) -> R {
        self.next_doc += 1;
        let name = format!("n{}", self.next_doc);
        self.note(&format!("## {} adds {name}.noma", PEOPLE[k]));
        self.clones[k].own_docs.push(format!("{name}.noma"));
        let doc = format!("{name}.noma");
        std::fs::write(self.clones[k].dir.join(&doc), document(&name)).unwrap();
        // Started with a genesis record, as main's documents are (see
        // KNOWN_GAPS): a cherry-pick may carry it to another branch.
        let who = PEOPLE[k];
        let sign = self.signing(k, who);
        let mut args = vec!["record", doc.as_str(), "--actor-name", who];
        args.extend(sign.iter().map(String::as_str));
        let o = self.noma(k, &args);
        if !o.status.success() {
            return Err(format!("noma record of the new {doc} was refused"));
        }
        self.commit(k, "new document")
    }

    /// The update step (what the update workflow runs): `git merge
    /// origin/main` and the commands noma names.
    fn update(&mut self, k: usize) -> R {
        self.note(&format!("## {} merges main into {}", PEOPLE[k], self.pr(k)));
        self.fetch(k)?;
        // Already merged (git would say "Already up to date."): nothing
        // to run.
        let merged = {
            let repo = self.repo(k)?;
            let id = |name: &str| repo.refname_to_id(name).map_err(|e| format!("{name}: {e}"));
            let (head, main) = (id("HEAD")?, id("refs/remotes/origin/main")?);
            head == main || repo.graph_descendant_of(head, main).unwrap_or(false)
        };
        if merged {
            self.note(&format!("[{}] main is already merged", PEOPLE[k]));
            return Ok(());
        }
        let o = self.git(k, &["merge", "-q", "--no-edit", "origin/main"]);
        self.clones[k].dirty = true;
        self.finish(k, Op::Merge, o)
    }

    fn rebase(&mut self, k: usize) -> R {
        self.fetch(k)?;
        // A branch that merged main is updated by merging it again (see
        // KNOWN_GAPS: a rebase dropping that merge).
        if !self
            .git_ok(k, &["rev-list", "--merges", "origin/main..HEAD"])?
            .trim()
            .is_empty()
        {
            return self.update(k);
        }
        self.note(&format!("## {} rebases {} on main", PEOPLE[k], self.pr(k)));
        let o = self.git(k, &["rebase", "-q", "origin/main"]);
        self.clones[k].dirty = true;
        self.finish(k, Op::Rebase, o)
    }

    fn cherry_pick(&mut self, k: usize) -> R {
        let others: Vec<usize> = (0..self.clones.len())
            .filter(|&j| j != k && self.clones[j].pr.is_some())
            .collect();
        if others.is_empty() {
            return self.agent_patch(k);
        }
        let j = others[self.rng.below(others.len())];
        self.push(j)?;
        let theirs = self.pr(j);
        self.note(&format!("## {} cherry-picks from {theirs}", PEOPLE[k]));
        self.fetch(k)?;
        let range = format!("origin/main..origin/{theirs}");
        let commits = self.git_ok(k, &["rev-list", "--no-merges", &range])?;
        let commits: Vec<&str> = commits.lines().collect();
        if commits.is_empty() {
            return Ok(());
        }
        let c = commits[self.rng.below(commits.len())].to_string();
        let o = self.git(k, &["cherry-pick", "-x", &c]);
        self.clones[k].dirty = true;
        self.finish(k, Op::CherryPick, o)
    }

    fn stash(&mut self, k: usize) -> R {
        self.note(&format!("## {} stashes an agent's patch", PEOPLE[k]));
        if !self.agent_write(k)? {
            return Ok(());
        }
        self.git_ok(k, &["stash", "-q"])?;
        let o = self.git(k, &["stash", "pop", "-q"]);
        if !o.status.success() {
            let advice = advice(&text(&o));
            if advice.is_empty() {
                return Err("git stash pop failed and nothing says what to do".into());
            }
            self.follow(k, &advice)?;
        }
        self.commit(k, "agent patch, stashed and popped")
    }

    /// A key for carol, committed on main and pushed (an admin's direct
    /// change): every older branch must still merge main.
    fn carol_joins(&mut self, k: usize) -> R {
        self.note(&format!("## {} adds carol's key on main", PEOPLE[k]));
        self.fetch(k)?;
        self.git_ok(k, &["checkout", "-q", "-B", "main", "origin/main"])?;
        let line = std::fs::read_to_string(self.root.join("keys/carol.line")).unwrap();
        let path = self.clones[k].dir.join(".noma/allowed_signers");
        let mut signers = std::fs::read_to_string(&path).unwrap_or_default();
        signers.push_str(&line);
        std::fs::write(&path, signers).unwrap();
        self.commit(k, "carol joins")?;
        self.push_branch(k, "main")?;
        self.carol_joined = true;
        self.after_landing()
    }

    fn pr(&self, k: usize) -> String {
        self.clones[k].pr.clone().unwrap_or_default()
    }

    fn push(&mut self, k: usize) -> R {
        if self.clones[k].dirty {
            let pr = self.pr(k);
            self.push_branch(k, &pr)?;
            self.clones[k].dirty = false;
        }
        Ok(())
    }

    /// `git add -A` and `git commit`; a refusal's fixes are run and the
    /// commit tried again.
    fn commit(&mut self, k: usize, msg: &str) -> R {
        self.git_ok(k, &["add", "-A"])?;
        if !self.staged_changes(k)? {
            return Ok(());
        }
        self.clones[k].dirty = true;
        for _ in 0..4 {
            let o = self.git(k, &["commit", "-q", "-m", msg]);
            if o.status.success() {
                return Ok(());
            }
            let advice = advice(&text(&o));
            if advice.is_empty() {
                return Err(format!("the hook refused `{msg}` and named no command"));
            }
            self.follow(k, &advice)?;
        }
        Err(format!("`{msg}` still refused after following every fix"))
    }

    /// Runs each command noma named.
    fn follow(&mut self, k: usize, todo: &[Advice]) -> R {
        for a in todo {
            if a.resolve_conflicts {
                self.resolve_conflict_blocks(k)?;
            }
            let o = self.sh(k, &a.cmd);
            if !o.status.success() {
                return Err(format!("the command noma named failed: {}", a.cmd));
            }
            // A command noma named may name the next one (`noma repair`'s
            // `next:`).
            let more = advice(&text(&o));
            if !more.is_empty() {
                self.follow(k, &more)?;
            }
        }
        Ok(())
    }

    /// Keeps one version of every `::conflict` block of the work tree's
    /// documents, at random.
    fn resolve_conflict_blocks(&mut self, k: usize) -> R {
        let docs = self.git_ok(k, &["diff", "--name-only", "HEAD", "--", "*.noma"])?;
        let untracked =
            self.git_ok(k, &["ls-files", "-o", "--exclude-standard", "--", "*.noma"])?;
        for doc in docs.lines().chain(untracked.lines()) {
            let path = self.clones[k].dir.join(doc);
            let Ok(t) = std::fs::read_to_string(&path) else {
                continue;
            };
            if !t.contains("::conflict{") {
                continue;
            }
            let ours = self.rng.chance(50);
            let side = if ours { "ours" } else { "theirs" };
            self.note(&format!(
                "    resolving the ::conflict blocks of {doc}: keeping {side}"
            ));
            let Some(resolved) = keep_side(&t, ours) else {
                return Err(format!("a ::conflict block of {doc} has no two versions"));
            };
            std::fs::write(&path, resolved).unwrap();
        }
        Ok(())
    }

    /// Carries a merge, rebase or cherry-pick to its end by the commands
    /// the messages name.
    fn finish(&mut self, k: usize, op: Op, first: Output) -> R {
        let mut out = text(&first);
        let mut ok = first.status.success();
        for _ in 0..12 {
            if op == Op::CherryPick && out.contains("is now empty") {
                // The branch has the change already.
                self.git_ok(k, &["cherry-pick", "--skip"])?;
                return Ok(());
            }
            let advice = advice(&out);
            let in_progress = self.in_progress(k, op);
            if ok && !in_progress {
                // Done; a clean rebase or cherry-pick may still have named a
                // record to commit on top.
                if !advice.is_empty() {
                    self.follow(k, &advice)?;
                    self.commit(k, "record what the merge brought")?;
                }
                return Ok(());
            }
            if !in_progress {
                return Err(format!("{} failed without stopping", op_name(op)));
            }
            if !ok && advice.is_empty() && !out.contains("CONFLICT") {
                return Err(format!(
                    "{} stopped and no message names a command",
                    op_name(op)
                ));
            }
            self.follow(k, &advice)?;
            if advice.iter().all(|a| !a.resolve_conflicts) {
                // A conflict block the driver left with no fix: resolve it
                // anyway (its documents' fix is `noma record`).
                self.resolve_conflict_blocks(k)?;
            }
            let unmerged = self.git_ok(k, &["diff", "--name-only", "--diff-filter=U"])?;
            if !unmerged.trim().is_empty() {
                if op == Op::CherryPick && advice.is_empty() {
                    // git's own conflict (a document this branch lacks):
                    // a person gives up the pick.
                    self.note("    no message names a command: the pick is given up");
                    self.git_ok(k, &["cherry-pick", "--abort"])?;
                    return Ok(());
                }
                // What git's own message says: mark them resolved (the
                // versions it left in the tree) and go on; the hook, if
                // one runs, names what is still wrong.
                self.note("    unmerged paths no message resolves: `git add -A`, as git says");
                self.git_ok(k, &["add", "-A"])?;
            }
            let o = match op {
                Op::Merge => self.git(k, &["commit", "-q", "--no-edit"]),
                Op::Rebase => self.git(k, &["rebase", "--continue"]),
                Op::CherryPick => self.git(k, &["cherry-pick", "--continue"]),
            };
            out = text(&o);
            ok = o.status.success();
        }
        Err(format!(
            "{} did not end after following every message",
            op_name(op)
        ))
    }

    fn in_progress(&self, k: usize, op: Op) -> bool {
        let git = self.clones[k].dir.join(".git");
        match op {
            Op::Merge => git.join("MERGE_HEAD").exists(),
            Op::Rebase => git.join("rebase-merge").exists() || git.join("rebase-apply").exists(),
            Op::CherryPick => git.join("CHERRY_PICK_HEAD").exists(),
        }
    }

    /// Lands clone `k`'s pull request as GitHub does: the update step,
    /// the PR check, then a merge commit or a squash of plain git's merge.
    fn land(&mut self, k: usize) -> R {
        let pr = self.pr(k);
        self.update(k)?;
        self.push(k)?;
        let tree = self.check_pr(k)?;
        let squash = self.rng.chance(40);
        self.note(&format!(
            "## {pr} lands ({})",
            if squash { "squash" } else { "merge commit" }
        ));
        // GitHub's commit of the merged tree, written in process.
        let msg = format!("land {pr}");
        let commit = (|| {
            let repo = git2::Repository::open_bare(self.root.join("remote.git"))?;
            let tree = repo.find_tree(git2::Oid::from_str(&tree)?)?;
            let mut parents = vec![repo.find_reference("refs/heads/main")?.peel_to_commit()?];
            if !squash {
                parents.push(
                    repo.find_reference(&format!("refs/heads/{pr}"))?
                        .peel_to_commit()?,
                );
            }
            let parents: Vec<&git2::Commit<'_>> = parents.iter().collect();
            let sig = git2::Signature::now("GitHub", "noreply@github.com")?;
            repo.commit(Some("refs/heads/main"), &sig, &sig, &msg, &tree, &parents)
        })()
        .map_err(|e| format!("landing {pr}: {e}"))?;
        self.note(&format!("[remote] main = {commit} ({msg})"));
        self.remote_changed += 1;
        for (id, parent, path) in self.records_at(&pr)?.0 {
            self.landed
                .entry(id.clone())
                .or_insert(format!("{pr}:{path}"));
            if let Some(p) = parent {
                self.parents.insert(id, p);
            }
        }
        // The clone's next step (opening a pull request, or an admin's
        // change on main) checks out main itself.
        self.clones[k].pr = None;
        self.clones[k].dirty = false;
        self.landings += 1;
        self.after_landing()
    }

    /// `noma reconcile --base origin/main` of clone `k`'s pushed branch,
    /// and plain git's merge of it into main: the merged tree, which a
    /// landing commits.
    fn check_pr(&mut self, k: usize) -> Result<String, String> {
        let pr = self.pr(k);
        let o = self.noma(k, &["reconcile", "--base", "origin/main"]);
        if !o.status.success() {
            let advice = advice(&text(&o));
            if advice.is_empty() {
                return Err(format!(
                    "noma reconcile --base main of {pr} fails after the update step"
                ));
            }
            // The check named the fix: a team runs it and pushes.
            self.follow(k, &advice)?;
            self.commit(k, "the PR check's fix")?;
            self.push(k)?;
            let o = self.noma(k, &["reconcile", "--base", "origin/main"]);
            if !o.status.success() {
                return Err(format!("noma reconcile of {pr} fails after its own fix"));
            }
        }
        let o = self.run_in(None, "git", &["merge-tree", "--write-tree", "main", &pr]);
        if !o.status.success() {
            return Err(format!("plain git does not merge {pr} into main cleanly"));
        }
        let out = String::from_utf8_lossy(&o.stdout);
        Ok(out.lines().next().unwrap_or_default().to_string())
    }

    /// The invariants after main moved: main replays, no landed record is
    /// lost, every open pull request updates and passes.
    fn after_landing(&mut self) -> R {
        self.note("## invariants");
        let (main, files) = self.records_at("main")?;
        let on_main: BTreeSet<&String> = main.iter().map(|(id, _, _)| id).collect();
        for (id, parent, _) in &main {
            if let Some(p) = parent {
                self.parents.insert(id.clone(), p.clone());
            }
        }
        // A copy (`parent_op_id`, of a copy …) stands for its original:
        // a record is kept when its original, or any copy of it, is on
        // main.
        let root = |id: &str| {
            let mut id = id.to_string();
            let mut hops = 0;
            while let Some(p) = self.parents.get(&id) {
                hops += 1;
                if hops > 10_000 {
                    break;
                }
                id = p.clone();
            }
            id
        };
        let kept: BTreeSet<String> = on_main.iter().map(|id| root(id)).collect();
        let lost: Vec<String> = self
            .landed
            .iter()
            .filter(|(id, _)| !kept.contains(&root(id)))
            .map(|(id, at)| format!("{id} (landed in {at})"))
            .collect();
        if !lost.is_empty() {
            return Err(format!("records landed before are not on main: {lost:?}"));
        }
        for (id, _, path) in &main {
            self.landed
                .entry(id.clone())
                .or_insert(format!("main:{path}"));
        }
        // Main replays, in the clone whose turn it was (fetched): each
        // document whose (document, transcript) blobs did not replay on
        // main before (a replay reads only those bytes).
        let k = 0;
        self.fetch(k)?;
        let blobs: BTreeMap<&str, &str> = files.iter().filter_map(|f| f.split_once('\t')).collect();
        for (doc, blob) in blobs.iter().filter(|(f, _)| f.ends_with(".noma")) {
            let Some(tblob) = blobs.get(format!("{doc}.patches").as_str()) else {
                continue;
            };
            let key = format!("{doc} {blob} {tblob}");
            if self.replayed.contains(&key) {
                continue;
            }
            let o = self.noma(k, &["replay", doc, "--rev", "origin/main"]);
            if !o.status.success() {
                return Err(format!("main's {doc} does not replay"));
            }
            self.replayed.insert(key);
        }
        for j in 0..self.clones.len() {
            if self.clones[j].pr.is_some() {
                self.update(j)?;
                self.push(j)?;
                self.check_pr(j)?;
            }
        }
        Ok(())
    }

    /// (op_id, parent_op_id, transcript) of every record of every
    /// transcript at `rev` in the remote, and the files of `rev`'s tree
    /// (`PATH\tBLOB-ID`), read in process.
    #[allow(clippy::type_complexity)]
    fn records_at(
        &mut self,
        rev: &str,
    ) -> Result<(Vec<(String, Option<String>, String)>, Vec<String>), String> {
        let repo = git2::Repository::open_bare(self.root.join("remote.git"))
            .map_err(|e| format!("open the remote: {e}"))?;
        let tree = repo
            .revparse_single(rev)
            .and_then(|o| o.peel_to_tree())
            .map_err(|e| format!("the tree of {rev}: {e}"))?;
        let mut files = Vec::new();
        tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
            if entry.kind() == Some(git2::ObjectType::Blob) {
                if let Some(name) = entry.name() {
                    files.push(format!("{dir}{name}\t{}", entry.id()));
                }
            }
            git2::TreeWalkResult::Ok
        })
        .map_err(|e| format!("the tree of {rev}: {e}"))?;
        let mut out = Vec::new();
        for f in &files {
            let Some((t, id)) = f.split_once('\t') else {
                continue;
            };
            if !t.ends_with(".noma.patches") {
                continue;
            }
            let blob = git2::Oid::from_str(id)
                .and_then(|id| repo.find_blob(id))
                .map_err(|e| format!("cannot read {rev}:{t}: {e}"))?;
            for line in String::from_utf8_lossy(blob.content()).lines() {
                let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
                    continue;
                };
                if let Some(id) = v["op_id"].as_str() {
                    let parent = v["parent_op_id"].as_str().map(str::to_string);
                    out.push((id.to_string(), parent, t.to_string()));
                }
            }
        }
        Ok((out, files))
    }
}

fn op_name(op: Op) -> &'static str {
    match op {
        Op::Merge => "git merge",
        Op::Rebase => "git rebase",
        Op::CherryPick => "git cherry-pick",
    }
}

/// A command a message named.
#[derive(Debug, PartialEq)]
struct Advice {
    cmd: String,
    /// "once no ::conflict block is left": resolve them first.
    resolve_conflicts: bool,
}

/// The commands of the `fix:` and `next:` lines of `out`, in order, each
/// once.
fn advice(out: &str) -> Vec<Advice> {
    let mut found: Vec<Advice> = Vec::new();
    for line in out.lines() {
        let (rest, paren) = if let Some(i) = line.find("(fix: ") {
            (&line[i + "(fix: ".len()..], true)
        } else if let Some(i) = line.find("fix: ") {
            (&line[i + "fix: ".len()..], false)
        } else if let Some(i) = line.find("next: ") {
            (&line[i + "next: ".len()..], false)
        } else {
            continue;
        };
        let mut rest = rest.trim_end();
        let mut resolve_conflicts = false;
        if let Some(r) = rest.strip_prefix("once no ::conflict block is left, ") {
            rest = r;
            resolve_conflicts = true;
        } else if let Some((_, r)) = rest.split_once(" is merged: ") {
            rest = r;
        }
        for cut in [", before `git commit`", " before you commit", ", then "] {
            if let Some((r, _)) = rest.split_once(cut) {
                rest = r;
            }
        }
        if paren {
            rest = rest.strip_suffix(')').unwrap_or(rest);
        }
        let cmd = rest.trim().to_string();
        if !(cmd.starts_with("noma ") || cmd.starts_with("git ")) {
            continue;
        }
        if !found.iter().any(|a| a.cmd == cmd) {
            found.push(Advice {
                cmd,
                resolve_conflicts,
            });
        }
    }
    found
}

/// `text` with block `id`'s body set to `body` (a note whose opening line
/// is `::note{id="ID"}` and whose body is the lines up to `::`).
fn set_body(text: &str, id: &str, body: &str) -> Option<String> {
    let open = format!("::note{{id=\"{id}\"");
    let start = text.find(&open)?;
    let body_start = start + text[start..].find('\n')? + 1;
    let end = body_start + text[body_start..].find("\n::\n")? + 1;
    if text[body_start..end].contains("conflict") {
        return None;
    }
    Some(format!("{}{body}\n{}", &text[..body_start], &text[end..]))
}

/// `text` with every `:::conflict` block replaced by its first (ours) or
/// second (theirs) fenced version.
fn keep_side(text: &str, ours: bool) -> Option<String> {
    let mut out = String::new();
    let mut lines = text.split_inclusive('\n');
    while let Some(line) = lines.next() {
        let colons = line.len() - line.trim_start_matches(':').len();
        if colons < 2 || !line[colons..].starts_with("conflict{") {
            out.push_str(line);
            continue;
        }
        let close = &line[..colons];
        let mut versions: Vec<String> = Vec::new();
        let mut current: Option<String> = None;
        for l in lines.by_ref() {
            match (&mut current, l.trim_end()) {
                (None, l) if l == close => break,
                (None, f) if f.starts_with("```") => current = Some(String::new()),
                (Some(_), "```") => versions.push(current.take().unwrap()),
                (Some(v), _) => v.push_str(l),
                (None, _) => {}
            }
        }
        let [first, second] = &versions[..] else {
            return None;
        };
        out.push_str(if ours { first } else { second });
    }
    Some(out)
}

/// Runs one history of `steps` steps; on failure, the report to print.
fn run_history(seed: u64, steps: usize, template: &Path) -> Result<usize, String> {
    let tmp = scratch();
    let mut h = History::new(seed, tmp.path(), template);
    let mut result = Ok(());
    for _ in 0..steps {
        let k = h.rng.below(PEOPLE.len());
        result = h.step(k);
        if result.is_err() {
            break;
        }
    }
    match result {
        Ok(()) => Ok(h.landings),
        Err(why) => {
            let kept = if std::env::var_os("NOMA_SIM_KEEP").is_some() {
                format!("the repositories are kept in {}\n", tmp.keep().display())
            } else {
                "NOMA_SIM_KEEP=1 keeps the repositories\n".to_string()
            };
            Err(format!(
                "history seed {seed} failed: {why}\n(replay: NOMA_SIM_SEED={seed} cargo test --test it sim::)\n{kept}--- log ---\n{}",
                h.log
            ))
        }
    }
}

/// The base seed: `NOMA_SIM_SEED` (a number, or `random`), else a fixed
/// one, so CI is not turned red by a draw; and whether one was given.
fn base_seed() -> (u64, bool) {
    match std::env::var("NOMA_SIM_SEED") {
        Ok(v) if v.trim() == "random" => {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            (t.as_nanos() as u64 ^ u64::from(std::process::id()), false)
        }
        Ok(v) => (
            v.trim()
                .parse()
                .unwrap_or_else(|_| panic!("NOMA_SIM_SEED={v:?} is not a number or `random`")),
            true,
        ),
        Err(_) => (DEFAULT_SEED, false),
    }
}

const DEFAULT_SEED: u64 = 1;

/// Flows the step generator does not make yet, each a product gap found by
/// this simulator and left to its own change (not an invariant relaxed):
///
/// - Two branches each starting the transcript of one committed document
///   (each one's first patch). Seeds 1, 3, 4, 5, 11 and 16 (before main's
///   documents started with a transcript): `git merge origin/main` stops
///   in the pre-merge-commit hook on `signature-invalid` for the other
///   side's records ("does not verify over this record in this document":
///   signatures bind the document's lineage, its transcript's first
///   record, which differs on the two sides) or, after a rename, on
///   `transcript-fork` at line 0; the hook's fix names no command.
/// - `git rebase origin/main` of a branch that merged main before (the
///   rebase drops the merge and re-picks the branch's commits onto main).
///   Seeds 81, 85, 125 and 175 (default run of 200, base 1): the branch's
///   merge of main resolved a same-block conflict; re-picking the
///   branch's record of that block, the document's driver rebased it onto
///   main's without a conflict while the transcript's driver reported
///   one, and no message named a command; `git add -A` and `git rebase
///   --continue` (which runs no hook) committed a transcript that does not
///   explain the document (`replay-diverged` in `noma reconcile`, whose
///   `noma record` advice is worded as prose), or (seed 85) later merges
///   of main stopped on `transcript-fork`. Such a branch is updated by
///   merging main instead. Generated again once `noma rm` removed any
///   document (200 histories, base 1): seeds 81, 85 and 175 fail the same
///   way (seed 81: the document's driver "reconciled: 1 record(s) …
///   rebased onto ours", the transcript's reported a conflict of block c2,
///   and after `git add -A` and `--continue` the PR check says
///   `replay-diverged`, naming `noma record` in prose, which would make
///   the agent's record a person's edit).
pub const KNOWN_GAPS: &str =
    "two branches starting one document's transcript; a rebase of a branch that merged main";

/// Run by `cargo test`: at the default seed all 200 histories of 30 steps
/// keep every invariant (827 landings, with `noma rm` of any document).
/// Measured (2026-11-29) on two threads of a two-core machine shared with
/// other jobs (load average 8.6 to 9.2): 178 s of CPU (90 s user, 88 s
/// system) and 5 min 30 s of wall time (`/usr/bin/time -v`); before the
/// clones shared one object store, 305 s of CPU (178 s user, 127 s
/// system; 13 min wall at load average 21 to 25); 20 histories took 33.5
/// s of CPU before, 19.8 s after (same 75 landings).
/// `NOMA_SIM_HISTORIES` scales it up.
///
/// At another base seed (`NOMA_SIM_SEED=1000 NOMA_SIM_HISTORIES=200`,
/// not the default; before the fixes of seeds 1008, 1012 and 1170 below,
/// 5 of 200 failed): seed 1062 (rename/rename and `copy-of-own-record`
/// in the PR check after the update step) is fixed below; seed 1166 (a
/// move meeting a cherry-picked record: the hook's `noma repair` fix
/// repeated) no longer fails when replayed alone
/// (`NOMA_SIM_SEED=1166`, 2026-11-29) and has no named test yet.
///
/// Fixed since the simulator found them, each with its named test: the
/// modify/delete and rename/rename stops of a move meeting a patch
/// (seeds 5, 6, 14, 22, 24, 33, 39: `rename_merge::sim_seed*`); `noma rm`
/// of any document meeting another branch's patch or `git mv` (seed 1
/// before the transcript driver named a command both ways:
/// `merge_main::merging_main_into_a_branch_that_removed_a_document_main_patched_converges`,
/// `merging_main_that_removed_a_document_the_branch_patched_converges`;
/// seeds 101, 107, 108 of base 100, a removal meeting a move:
/// `merge_main::a_removal_meeting_a_move_of_the_document_keeps_the_removal_by_the_named_command`;
/// once any document was removable, seeds 54 and 109, a document moved
/// and then removed on the branch meeting main's patch:
/// `merge_main::sim_seed_54_*`, and the other way round
/// `a_document_moved_and_removed_on_main_meets_the_branchs_patch`; seed
/// 87, a removal meeting a cherry-picked copy of the document:
/// `merge_main::sim_seed_87_*`; seed 141, a spurious `document-removed`
/// warning for a document main moved and removed:
/// `merge_main::sim_seed_141_*`; at base seed 1000, the first failures of
/// seed 1008, a removal meeting records that end where the merge base
/// did: `merge_main::sim_seed_1008_*`, and of seed 1012, a warning for an
/// edit kept under the name main moved the document to:
/// `merge_main::sim_seed_1012_*`), then keeping an edit over main's
/// removal (the merged transcript keeps the edit and main's earlier
/// records; the removal is a rejected copy): seed 1012, "theirs" of `noma
/// repair`'s whole-document conflict emptied the document without a
/// removal (`merge_main::sim_seed_1012_repair_keeps_the_edit_over_a_removal_after_a_move`),
/// seed 1170, the driver's fix named a path HEAD lacks after git's
/// rename/rename (`merge_main::sim_seed_1170_a_removal_after_a_move_meets_a_move_elsewhere`),
/// seed 1008, no command wrote main's earlier records' change into the
/// document (`merge_main::sim_seed_1008_a_kept_edit_gets_mains_earlier_records_written`),
/// seed 1062, main's copies, held by main under the name it moved the
/// document to, taken for the branch's own records after git's
/// rename/rename (`merge_main::sim_seed_1062_copies_main_made_stay_mains_after_a_rename_rename`);
/// the update
/// step's `transcript-rewritten` (seeds 9, 11, 16, 18, 20, 34, 51, 59:
/// `merge_main::merging_main_again_after_main_kept_a_rejected_copy_passes_the_pr_check`),
/// a move on main meeting a branch whose transcript succeeds the merge
/// base's only by copies (seed 105:
/// `rename_merge::sim_seed_105_a_move_on_main_meets_a_branch_that_merged_main_before`),
/// main's copy taken for the branch's own (seed 45:
/// `merge_main::a_copy_made_on_main_is_not_the_branchs_own_after_a_move`),
/// a no-op copy taken for a removed record (seed 27:
/// `merge_main::sim_seed_27_main_making_the_branchs_change_again_passes_the_pr_check`),
/// one op copied onto one state applied on one line and rejected on the
/// other under one op_id, and main's record taken for the branch's own
/// after a move (seed 85:
/// `sim_seed_85_copies_with_different_results_and_a_moved_document_pass_the_pr_check`),
/// and a fork state no commit holds (seed 119:
/// `sim_seed_119_a_fork_state_no_commit_holds_is_replayed`). Seed 85's
/// merge also names `fix: noma repair` for the document main moved (the
/// driver cannot tell whether git paired the transcripts); run after the
/// merge committed, it prints "nothing to repair" (now in the log: a
/// followed command's output is always logged).
#[test]
fn random_team_histories_keep_every_invariant() {
    let (seed, given) = base_seed();
    let histories =
        env_number("NOMA_SIM_HISTORIES").unwrap_or(if given { 1 } else { 200 }) as usize;
    let steps = env_number("NOMA_SIM_STEPS").unwrap_or(30) as usize;
    let threads = env_number("NOMA_SIM_THREADS").map_or_else(
        || {
            std::thread::available_parallelism()
                .map_or(2, |n| n.get())
                .clamp(2, 4)
        },
        |n| n as usize,
    );
    // The first failure stops the run unless NOMA_SIM_MAX_FAILURES asks
    // for more (to see several kinds at once).
    let max_failures = env_number("NOMA_SIM_MAX_FAILURES").unwrap_or(1) as usize;
    eprintln!("sim: seed {seed}, {histories} histories of {steps} steps on {threads} threads (not generated yet: {KNOWN_GAPS})");
    if std::env::var_os("NOMA_SIM_PROFILE").is_some() {
        let _ = PROFILE.set(Mutex::new(BTreeMap::new()));
    }
    let template = template();
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let failures = Mutex::new(Vec::new());
    let landings = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= histories || stop.load(Ordering::SeqCst) {
                    break;
                }
                match run_history(seed.wrapping_add(i as u64), steps, template.path()) {
                    Ok(n) => {
                        landings.fetch_add(n, Ordering::SeqCst);
                    }
                    Err(report) => {
                        let mut f = failures.lock().unwrap();
                        f.push(report);
                        if f.len() >= max_failures {
                            stop.store(true, Ordering::SeqCst);
                        }
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    if !failures.is_empty() {
        let heads: Vec<&str> = failures.iter().filter_map(|f| f.lines().next()).collect();
        panic!(
            "{} histories failed:\n{}\n\n{}",
            failures.len(),
            heads.join("\n"),
            failures.join("\n\n")
        );
    }
    if let Some(p) = PROFILE.get() {
        let mut rows: Vec<_> = p.lock().unwrap().clone().into_iter().collect();
        rows.sort_by(|a, b| b.1 .1.total_cmp(&a.1 .1));
        for (what, (n, cpu)) in rows {
            eprintln!("sim profile: {cpu:8.2} s CPU {n:6} x {what}");
        }
    }
    eprintln!(
        "sim: {histories} histories, {} landings, 0 invariant failures",
        landings.load(Ordering::SeqCst)
    );
}

/// One history at `seed` (30 steps), as the random run makes it.
fn replay_history(seed: u64) {
    let template = template();
    if let Err(report) = run_history(seed, 30, template.path()) {
        panic!("{report}");
    }
}

/// Seed 85 of the default run: main and a branch each held a merge copy
/// of one op onto one state, applied on main (its own ops had not touched
/// the block) and rejected on the branch (they had), under one op_id, so
/// the update step's merge kept the branch's line and `noma reconcile`
/// read main's as rewritten (`transcript-rewritten`); and a copy of an
/// original main holds was taken for the branch's own record after the
/// branch moved the document (`copy-of-own-record`). A rejected copy's
/// id now names its result, and an original the base holds is not the
/// branch's own.
#[test]
fn sim_seed_85_copies_with_different_results_and_a_moved_document_pass_the_pr_check() {
    replay_history(85);
}

/// Seed 119 of the default run: both sides resolved a conflict in the
/// merge commit that wrote it, so no commit held the document state their
/// common transcript ends at; the transcript driver said it was "not
/// found in the repository", kept ours and named no command, and `git
/// add -A` committed a transcript without main's records. The state is
/// now replayed from the common prefix.
#[test]
fn sim_seed_119_a_fork_state_no_commit_holds_is_replayed() {
    replay_history(119);
}

/// Found by the simulator (seed 1 of the default run): a person's first
/// `noma record` of a committed document opens its transcript with a
/// genesis record from the empty document, which `noma replay` and the
/// hook accept, but `noma reconcile --base main` replayed the branch's
/// records from the merge base's document and reported `replay-diverged`.
#[test]
fn a_first_record_of_a_committed_document_passes_the_pr_check() {
    let r = crate::common::Repo::init();
    crate::common::assert_ran(&r.noma(&["init"]));
    r.write("d.noma", &document("d"));
    r.commit_all("d");
    r.ok(&["checkout", "-q", "-b", "pr"]);
    r.write("d.noma", &set_body(&document("d"), "c2", "edited").unwrap());
    let o = r.noma(&["record", "d.noma", "--actor-name", "alice"]);
    crate::common::assert_ran(&o);
    assert!(text(&o).contains("genesis"), "{}", text(&o));
    r.commit_all("a person's edit");
    crate::common::assert_ran(&r.noma(&["replay", "d.noma"]));
    let o = r.noma(&["reconcile", "--base", "main"]);
    assert!(o.status.success(), "{}", text(&o));
    // A genesis that writes another document than the merge base's is
    // still checked from the merge base.
    r.ok(&["checkout", "-q", "-b", "other", "main"]);
    r.write("d.noma", &document("x"));
    crate::common::assert_ran(&r.noma(&["record", "d.noma", "--actor-name", "alice"]));
    r.write("d.noma", &document("d"));
    r.ok(&["add", "-A"]);
    r.ok(&[
        "commit",
        "-q",
        "--no-verify",
        "-m",
        "a transcript that starts elsewhere",
    ]);
    let o = r.noma(&["reconcile", "--base", "main"]);
    assert!(!o.status.success(), "{}", text(&o));
}

#[test]
fn advice_lines_name_the_commands_to_run() {
    let out = "noma merge-driver: d.noma: its transcript will not record how you resolve the conflict. fix: once no ::conflict block is left, noma record \"d.noma\" && git add \"d.noma\" \"d.noma.patches\", before `git commit` or `git rebase --continue` (a rebase runs no hooks)\n\
ERROR [transcript-fork] m.noma.patches:3:1: forked (fix: noma repair \"m.noma\" && git add -A -- \"m.noma\" \"m.noma.patches\")\n\
next: git add -A -- \"m.noma\"\n\
x: fix: keep one side's transcript, re-apply the other side's ops\n";
    let got = advice(out);
    assert_eq!(
        got,
        vec![
            Advice {
                cmd: "noma record \"d.noma\" && git add \"d.noma\" \"d.noma.patches\"".into(),
                resolve_conflicts: true
            },
            Advice {
                cmd: "noma repair \"m.noma\" && git add -A -- \"m.noma\" \"m.noma.patches\"".into(),
                resolve_conflicts: false
            },
            Advice {
                cmd: "git add -A -- \"m.noma\"".into(),
                resolve_conflicts: false
            },
        ]
    );
}

#[test]
fn a_conflict_block_keeps_the_chosen_version() {
    let t = "# D\n\n::note{id=\"c1\"}\n:::conflict{id=\"m\" block=\"c1\"}\nMerge conflict.\n\n```noma\npr one\n```\n\n```noma\nmain one\n```\n:::\n::\n";
    assert_eq!(
        keep_side(t, true).unwrap(),
        "# D\n\n::note{id=\"c1\"}\npr one\n::\n"
    );
    assert_eq!(
        keep_side(t, false).unwrap(),
        "# D\n\n::note{id=\"c1\"}\nmain one\n::\n"
    );
    assert_eq!(
        set_body(&document("d"), "c2", "x")
            .unwrap()
            .matches("\nx\n")
            .count(),
        1
    );
}

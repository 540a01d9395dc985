//! No write leaves the work tree and none blocks: a clone that commits a
//! document's sidecar or transcript as a symbolic link (to a file outside,
//! dangling, to `/dev/zero`), or a work tree holding a FIFO in their
//! place, makes every signed writer — `noma patch --key`, `noma record
//! --key`, `noma approve`, `noma mcp --signing-key` answering
//! `patch_block` — refuse at once, naming the path and what it is, with
//! the file outside byte for byte as it was and nothing created there. One
//! test per path kind noma writes or reads on the way: sidecar,
//! transcript, intent marker, temp file, capability file, the document,
//! and the files `noma init` and `noma reconcile --write` write.
//!
//! Every child runs under a watchdog: one still running after 10 s is
//! killed and the test fails (the property is "does not block", not a
//! wall-clock figure).
#![cfg(unix)]

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::common::{assert_ran, signed_policy, text, tool_body, Repo, NOMA};

const DOC: &str = "# Plan\n\n::claim{id=\"c1\" confidence=0.5}\nOne.\n::\n\n::claim{id=\"c2\" confidence=0.5}\nTwo.\n::\n";

/// What a bashrc holds: the bytes a redirected append would change.
const VICTIM: &str = "# the victim's shell start-up file\nexport PATH=$HOME/bin:$PATH\n";

/// How long a child may run before it counts as blocked.
const WATCHDOG: Duration = Duration::from_secs(10);

/// Runs `talk` on a started `child` in a thread; a child still running
/// after [`WATCHDOG`] is killed (by its pid) and the test fails.
fn bounded<T: Send + 'static>(child: Child, talk: impl FnOnce(Child) -> T + Send + 'static) -> T {
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(talk(child));
    });
    match rx.recv_timeout(WATCHDOG) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            panic!("the child was still running after {WATCHDOG:?}: it blocked; killed it");
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("the child's thread panicked"),
    }
}

/// A signing repository: `plan.noma` with its genesis record,
/// `signatures: required`, alice and the agent in allowed_signers, and one
/// signed agent record waiting for approval (so `approve` has work); plus
/// a directory outside the work tree holding the victim's file.
struct Fixture {
    r: Repo,
    person: PathBuf,
    agent: PathBuf,
    outside: tempfile::TempDir,
}

fn setup() -> Fixture {
    let r = Repo::with_genesis_record(DOC);
    let (person, agent) = signed_policy(&r);
    r.commit_all("provenance on");
    let o = r.sh(&format!(
        "NOMA_SIGNING_KEY='{}' noma patch plan.noma --inplace --actor-kind agent --actor-name bot --op '{}'",
        agent.display(),
        set("c1", 0.7)
    ));
    assert_ran(&o);
    commit_no_verify(&r, "an agent's signed record");
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("bashrc"), VICTIM).unwrap();
    Fixture {
        r,
        person,
        agent,
        outside,
    }
}

fn set(id: &str, v: f64) -> Value {
    json!({"op": "update_attribute", "id": id, "key": "confidence", "value": v})
}

/// Everything staged and committed past the hooks, as an attacker's
/// commit arrives in a clone.
fn commit_no_verify(r: &Repo, msg: &str) {
    r.ok(&["add", "-A"]);
    r.ok(&["commit", "-q", "--no-verify", "-m", msg]);
}

/// What a path noma writes is replaced with.
#[derive(Debug, Clone, Copy)]
enum Plant {
    /// A symbolic link to the victim's file outside the work tree.
    Outside,
    /// A symbolic link to a path outside that does not exist.
    Dangling,
    /// A symbolic link to `/dev/zero`.
    DevZero,
    /// A FIFO (git cannot commit one: it is made in the work tree).
    Fifo,
}

const PLANTS: [Plant; 4] = [Plant::Outside, Plant::Dangling, Plant::DevZero, Plant::Fifo];

/// What a refusal of `plant` says about the path.
fn says(plant: Plant) -> &'static str {
    match plant {
        Plant::Fifo => "FIFO",
        _ => "symbolic link",
    }
}

impl Fixture {
    fn victim(&self) -> PathBuf {
        self.outside.path().join("bashrc")
    }

    fn dangling_target(&self) -> PathBuf {
        self.outside.path().join("created-by-noma")
    }

    /// Replaces the work-tree file `rel` with `plant` and commits it (a
    /// FIFO stays uncommitted). A link to the victim gets the victim's
    /// file holding `rel`'s bytes first when `keep_bytes` (a transcript
    /// must still parse for a writer to append to it).
    fn plant(&self, rel: &str, plant: Plant, keep_bytes: bool) {
        let p = self.r.path().join(rel);
        if keep_bytes {
            std::fs::copy(&p, self.victim()).unwrap();
        }
        let _ = std::fs::remove_file(&p);
        let link = |to: &Path| std::os::unix::fs::symlink(to, &p).unwrap();
        match plant {
            Plant::Outside => link(&self.victim()),
            Plant::Dangling => link(&self.dangling_target()),
            Plant::DevZero => link(Path::new("/dev/zero")),
            Plant::Fifo => {
                let o = self.r.cmd("mkfifo", &[p.to_str().unwrap()]);
                assert_ran(&o);
            }
        }
        if !matches!(plant, Plant::Fifo) {
            // Forced: an attacker commits even a path .gitignore names.
            self.r.ok(&["add", "-f", rel]);
            let msg = format!("{rel} as {plant:?}");
            self.r.ok(&["commit", "-q", "--no-verify", "-m", &msg]);
        }
    }

    /// The outside directory's files and their bytes.
    fn outside_state(&self) -> Vec<(String, Vec<u8>)> {
        let mut v: Vec<_> = std::fs::read_dir(self.outside.path())
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let name = e.file_name().to_string_lossy().into_owned();
                (name, std::fs::read(e.path()).unwrap())
            })
            .collect();
        v.sort();
        v
    }

    /// Runs noma with `args` in the work tree (HOME and env as
    /// [`Repo::cmd`] sets them), under the watchdog.
    fn noma(&self, args: &[&str]) -> Output {
        let child = self
            .command(NOMA)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        bounded(child, |c| c.wait_with_output().unwrap())
    }

    fn command(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.current_dir(self.r.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", self.r.home.path())
            .env("USER", "tester")
            .env_remove("SSH_AUTH_SOCK")
            .env_remove("NOMA_SIGNING_KEY")
            .env_remove("GIT_DIR")
            .env_remove("GIT_INDEX_FILE")
            .env_remove("GIT_WORK_TREE");
        c
    }

    /// `noma mcp --signing-key <agent>` answering one `patch_block`, under
    /// the watchdog: (isError, body).
    fn mcp_patch(&self, op: Value) -> (bool, Value) {
        let mut child = self
            .command(NOMA)
            .args(["mcp", "--signing-key", self.agent.to_str().unwrap()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
        bounded(child, move |mut child| {
            // `before`: a notification sent ahead of the request.
            let mut ask = |id: u64, method: &str, params: Value, before: Option<Value>| -> Value {
                if let Some(note) = before {
                    writeln!(stdin, "{note}").unwrap();
                }
                let req = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
                writeln!(stdin, "{req}").unwrap();
                loop {
                    let mut line = String::new();
                    assert!(out.read_line(&mut line).unwrap() > 0, "server EOF");
                    let v: Value = serde_json::from_str(&line).unwrap();
                    if v["id"] == json!(id) {
                        return v;
                    }
                }
            };
            ask(
                1,
                "initialize",
                json!({"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "test", "version": "1"}}),
                None,
            );
            let r = ask(
                2,
                "tools/call",
                json!({"name": "patch_block", "arguments": {"file": "plan.noma", "op": op,
                       "actor": {"kind": "agent", "name": "bot"}}}),
                Some(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})),
            );
            drop(stdin);
            let _ = child.wait();
            tool_body(&r)
        })
    }

    /// The four signed writers, each refusing with a message naming
    /// `name` and `what`, leaving everything outside as it was.
    fn every_signed_writer_refuses(&self, name: &str, what: &str) {
        let before = self.outside_state();
        let key = self.person.to_str().unwrap();
        let refused = |label: &str, o: &Output| {
            let out = text(o);
            assert!(!o.status.success(), "{label} succeeded: {out}");
            assert!(out.contains(name) && out.contains(what), "{label}: {out}");
            assert!(!out.contains("panicked"), "{label}: {out}");
            assert_eq!(self.outside_state(), before, "{label} wrote outside");
            assert!(!self.dangling_target().exists(), "{label} created it");
        };
        let patch = self.noma(&[
            "patch",
            "plan.noma",
            "--inplace",
            "--key",
            key,
            "--actor-name",
            "alice",
            "--op",
            &set("c2", 0.9).to_string(),
        ]);
        refused("patch --key", &patch);
        refused(
            "approve",
            &self.noma(&["approve", "plan.noma", "--key", key, "--yes"]),
        );
        let (is_error, body) = self.mcp_patch(set("c2", 0.8));
        assert!(is_error, "mcp patch_block: {body}");
        assert!(body.to_string().contains(name), "mcp patch_block: {body}");
        assert_eq!(self.outside_state(), before, "mcp wrote outside");
        assert!(!self.dangling_target().exists(), "mcp created it");
        // Last: the hand edit stays unrecorded.
        let doc = self.r.read("plan.noma").replace("Two.", "Two, by hand.");
        std::fs::write(self.r.path().join("plan.noma"), doc).unwrap();
        refused(
            "record --key",
            &self.noma(&["record", "plan.noma", "--key", key]),
        );
    }
}

/// The sidecar committed as a link out (to the victim's bashrc, dangling,
/// to /dev/zero) or replaced by a FIFO: every signed writer refuses.
#[test]
fn a_linked_or_fifo_sidecar_is_refused_by_every_signed_writer() {
    for plant in PLANTS {
        let f = setup();
        f.plant("plan.noma.provenance", plant, false);
        f.every_signed_writer_refuses("plan.noma.provenance", says(plant));
        assert_eq!(std::fs::read_to_string(f.victim()).unwrap(), VICTIM);
    }
}

/// The transcript committed as a link out (to a file outside holding a
/// valid transcript, dangling, /dev/zero) or replaced by a FIFO.
#[test]
fn a_linked_or_fifo_transcript_is_refused_by_every_signed_writer() {
    for plant in PLANTS {
        let f = setup();
        f.plant("plan.noma.patches", plant, true);
        f.every_signed_writer_refuses("plan.noma.patches", says(plant));
    }
}

/// A dangling transcript link: `noma patch --inplace` (unsigned) created
/// the file it points to outside the tree; now it refuses.
#[test]
fn a_dangling_transcript_link_creates_nothing_outside() {
    let f = setup();
    f.plant("plan.noma.patches", Plant::Dangling, false);
    let o = f.noma(&[
        "patch",
        "plan.noma",
        "--inplace",
        "--no-sign",
        "--op",
        &set("c2", 0.9).to_string(),
    ]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("symbolic link"), "{}", text(&o));
    assert!(!f.dangling_target().exists());
    assert_eq!(f.r.read("plan.noma"), DOC.replace("0.5}\nOne", "0.7}\nOne"));
}

/// The intent marker beside the transcript planted as a link (out,
/// dangling) or a FIFO: a writer neither reads nor writes through it.
#[test]
fn a_linked_or_fifo_intent_marker_is_refused() {
    for plant in [Plant::Outside, Plant::Dangling, Plant::Fifo] {
        let f = setup();
        let rel = ".plan.noma.patches.noma-intent";
        f.r.write(rel, "");
        f.plant(rel, plant, false);
        let before = f.outside_state();
        let o = f.noma(&[
            "patch",
            "plan.noma",
            "--inplace",
            "--key",
            f.person.to_str().unwrap(),
            "--op",
            &set("c2", 0.9).to_string(),
        ]);
        let out = text(&o);
        assert!(!o.status.success(), "{plant:?}: {out}");
        assert!(out.contains("intent marker"), "{plant:?}: {out}");
        assert!(out.contains(says(plant)), "{plant:?}: {out}");
        assert_eq!(f.outside_state(), before, "{plant:?}");
        assert!(!f.dangling_target().exists(), "{plant:?}");
    }
}

/// A file named as a killed writer's temp file, planted as a link out: the
/// next writer removes the link (never its target) and writes its own temp
/// file beside the document, never through a link.
#[test]
fn a_planted_temp_file_link_is_removed_not_followed() {
    let f = setup();
    let rel = ".plan.noma.noma-tmp-1-0";
    std::os::unix::fs::symlink(f.victim(), f.r.path().join(rel)).unwrap();
    let o = f.noma(&[
        "patch",
        "plan.noma",
        "--inplace",
        "--key",
        f.person.to_str().unwrap(),
        "--actor-name",
        "alice",
        "--op",
        &set("c2", 0.9).to_string(),
    ]);
    assert_ran(&o);
    assert_eq!(std::fs::read_to_string(f.victim()).unwrap(), VICTIM);
    assert!(std::fs::symlink_metadata(f.r.path().join(rel)).is_err());
    assert!(f.r.read("plan.noma").contains("confidence=0.9"));
}

/// The capability descriptor is only read: a FIFO or a link to /dev/zero
/// in its place is refused at once, never waited on.
#[test]
fn a_fifo_or_device_capability_file_is_refused_without_blocking() {
    for plant in [Plant::Fifo, Plant::DevZero] {
        let f = setup();
        let rel = "plan.noma.capabilities.yml";
        f.r.write(rel, "");
        f.plant(rel, plant, false);
        let o = f.noma(&[
            "patch",
            "plan.noma",
            "--inplace",
            "--key",
            f.person.to_str().unwrap(),
            "--op",
            &set("c2", 0.9).to_string(),
        ]);
        let out = text(&o);
        assert!(!o.status.success(), "{plant:?}: {out}");
        assert!(
            out.contains(rel) && out.contains("not a regular file"),
            "{plant:?}: {out}"
        );
        let (is_error, body) = f.mcp_patch(set("c2", 0.8));
        assert!(is_error, "{plant:?}: {body}");
    }
}

/// A document that is a link (here to the victim's file outside) is read
/// but never written through: `patch --inplace` refuses before anything
/// is signed or appended.
#[test]
fn a_linked_document_is_never_written_through() {
    let f = setup();
    std::fs::write(f.victim(), DOC).unwrap();
    std::os::unix::fs::symlink(f.victim(), f.r.path().join("link.noma")).unwrap();
    let before = f.outside_state();
    let o = f.noma(&[
        "patch",
        "link.noma",
        "--inplace",
        "--key",
        f.person.to_str().unwrap(),
        "--op",
        &set("c2", 0.9).to_string(),
    ]);
    let out = text(&o);
    assert!(!o.status.success(), "{out}");
    assert!(
        out.contains("link.noma") && out.contains("symbolic link"),
        "{out}"
    );
    assert_eq!(f.outside_state(), before);
    assert!(!f.r.path().join("link.noma.provenance").exists());
    // Reading through the link still works.
    let o = f.noma(&["check", "link.noma"]);
    assert_ran(&o);
}

/// `noma init` in a clone that committed `.gitignore` as a link to the
/// victim's file, or `.noma` as a link to a directory outside: refused,
/// nothing written outside.
#[test]
fn init_writes_no_file_through_a_committed_link() {
    let r = Repo::init();
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("bashrc");
    std::fs::write(&victim, VICTIM).unwrap();
    std::os::unix::fs::symlink(&victim, r.path().join(".gitignore")).unwrap();
    r.write("a.noma", "# A\n");
    r.ok(&["add", "-A"]);
    r.ok(&["commit", "-q", "-m", "a clone with a linked .gitignore"]);
    let o = r.noma(&["init"]);
    let out = text(&o);
    assert!(!o.status.success(), "{out}");
    assert!(
        out.contains(".gitignore") && out.contains("symbolic link"),
        "{out}"
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), VICTIM);

    let r = Repo::init();
    std::os::unix::fs::symlink(outside.path(), r.path().join(".noma")).unwrap();
    let o = r.noma(&["init"]);
    let out = text(&o);
    assert!(!o.status.success(), "{out}");
    assert!(out.contains("symbolic link"), "{out}");
    let names: Vec<_> = std::fs::read_dir(outside.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["bashrc"], "init wrote into the linked directory");
}

/// `noma reconcile --write` on a branch that committed the sidecar as a
/// link to the victim's file: the base's records are rebased but the
/// sidecar union is refused, naming it; the victim's file is unchanged.
#[test]
fn reconcile_write_refuses_a_linked_sidecar() {
    let f = setup();
    let key = f.person.to_str().unwrap();
    let patch = |id: &str, v: f64| {
        let op = set(id, v).to_string();
        let args = ["patch", "plan.noma", "--inplace", "--key", key];
        assert_ran(&f.noma(&[&args[..], &["--actor-name", "alice", "--op", &op]].concat()));
    };
    f.r.ok(&["checkout", "-q", "-b", "branch"]);
    patch("c2", 0.9);
    commit_no_verify(&f.r, "branch edit");
    f.r.ok(&["checkout", "-q", "main"]);
    patch("c1", 0.1);
    commit_no_verify(&f.r, "main moved on");
    f.r.ok(&["checkout", "-q", "branch"]);
    f.plant("plan.noma.provenance", Plant::Outside, false);
    let o = f.noma(&["reconcile", "--base", "main", "--write"]);
    let out = text(&o);
    assert!(!o.status.success(), "{out}");
    assert!(
        out.contains("plan.noma.provenance") && out.contains("symbolic link"),
        "{out}"
    );
    assert_eq!(std::fs::read_to_string(f.victim()).unwrap(), VICTIM);
}

//! The forgery generator, with the real `git`, `ssh-keygen` and `noma
//! reconcile`: random honest signed histories (documents, agent patches
//! and a person's approvals, a person's patches, merges of a side branch,
//! renames, copies, new documents, `noma rm`) on one repository under
//! `signatures: required` and `agents_need_approval: true`, each of whose
//! commits must pass `noma reconcile --base main`; then, derived from those
//! commits, thousands of single mutations, each a forgery of one family
//! (a record or an approval replayed from another document, another branch
//! or another position; a stripped or swapped signature; a relabelled
//! actor kind or name; a cut or deleted tombstone; an own record relabelled
//! as a merge copy of itself), each of which must make `noma reconcile
//! --base main` exit 1 without a panic.
//!
//! The seed is printed (`NOMA_FORGERY_SEED` replays one, and
//! `NOMA_FORGERY_SEED=random` draws a new one; the default is fixed);
//! `NOMA_FORGERY_CASES` sets the mutated histories per family (default
//! 185, eleven families: 2,035 in all) and `NOMA_FORGERY_BRANCHES` the honest branches
//! (default 6). A failure names the seed, the family, the case, what was
//! mutated and the forged line, so it can become a named test.
//!
//! Cost: keys are made once, the honest histories once per test binary
//! (shared by every family's test), and each mutation is one commit
//! written by a single `git fast-import` per family (no work tree, no
//! hook: the forger commits with `--no-verify` anyway). Each mutated
//! history is then checked by the real binary, `noma reconcile --base
//! main`, in a linked work tree of its own per family whose HEAD is set to
//! the mutated commit: reconcile reads commits, not the work tree, so no
//! checkout is needed, and the exit code and stderr are the CLI's own.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use noma_core::doc::hash::sha256_hex;
use noma_core::plan::{Context, Request};
use noma_core::transcript::{Actor, PatchResult};
use serde_json::{json, Value};

use crate::common::{assert_ran, env_number, signed_policy, text, Repo, Rng, NOMA};

/// The seed the suite runs by default (see [`seed`]).
const DEFAULT_SEED: u64 = 2;

/// The run's seed: `NOMA_FORGERY_SEED` (a number, or `random` to draw one
/// from the clock), else [`DEFAULT_SEED`]. The suite's default is fixed,
/// so CI does not turn red by the draw; `NOMA_FORGERY_SEED=random` is how
/// to hunt for failures, and a seed that found one becomes a named test
/// (`forgery_honest_seed_…`).
fn seed() -> u64 {
    static SEED: OnceLock<u64> = OnceLock::new();
    *SEED.get_or_init(|| {
        std::env::var("NOMA_FORGERY_SEED").map_or_else(
            |_| DEFAULT_SEED,
            |v| match v.trim() {
                "random" => {
                    let t = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .unwrap_or_default();
                    t.as_nanos() as u64 ^ u64::from(std::process::id())
                }
                v => v.parse().unwrap_or_else(|_| {
                    panic!("NOMA_FORGERY_SEED={v:?} is not a number or `random`")
                }),
            },
        )
    })
}

/// Every document starts from this shape: a section holding notes with
/// the same ids, so an op of one document applies to another.
fn template(name: &str) -> String {
    format!(
        "# {name}\n\n::section{{id=\"s\"}}\nIntro {name}.\n\n:::note{{id=\"c1\" v=0}}\nOne {name}.\n:::\n\n:::note{{id=\"c2\" v=0}}\nTwo {name}.\n:::\n::\n"
    )
}

const FAMILIES: [&str; 11] = [
    "record-from-other-document",
    "approval-from-other-document",
    "record-from-other-branch",
    "record-from-other-position",
    "strip-signature",
    "swap-signatures",
    "relabel-actor-kind",
    "relabel-actor-name",
    "cut-tombstone",
    "delete-tombstone",
    "own-record-as-copy",
];

/// The files of one commit the checks read: documents, transcripts and
/// sidecars, by path.
#[derive(Clone)]
struct Snap {
    sha: String,
    /// The honest branch the commit is on (`main` for the base).
    branch: String,
    files: BTreeMap<String, String>,
}

/// One record of a snapshot with the sidecar lines that vouch for it.
#[derive(Clone)]
struct Src {
    doc: String,
    lineage: String,
    rec: Value,
    sigs: Vec<String>,
    approvals: Vec<String>,
}

impl Snap {
    /// The documents with a transcript (live or removed).
    fn docs(&self) -> Vec<String> {
        self.files
            .keys()
            .filter_map(|p| p.strip_suffix(".patches"))
            .map(str::to_string)
            .collect()
    }

    fn live(&self, doc: &str) -> bool {
        self.files.contains_key(doc)
    }

    fn transcript(&self, doc: &str) -> Vec<String> {
        self.files
            .get(&format!("{doc}.patches"))
            .map(|t| t.lines().map(str::to_string).collect())
            .unwrap_or_default()
    }

    fn sidecar(&self, doc: &str) -> Vec<String> {
        self.files
            .get(&format!("{doc}.provenance"))
            .map(|t| t.lines().map(str::to_string).collect())
            .unwrap_or_default()
    }

    /// The document's lineage: the op_id of its transcript's first record
    /// (kept across renames, new for a copy or a new document).
    fn lineage(&self, doc: &str) -> Option<String> {
        let first = self.transcript(doc).into_iter().next()?;
        let v: Value = serde_json::from_str(&first).ok()?;
        v["op_id"].as_str().map(str::to_string)
    }

    /// Every record of every transcript, with its signature and approval
    /// lines.
    fn records(&self) -> Vec<Src> {
        let mut out = Vec::new();
        for doc in self.docs() {
            let lineage = self.lineage(&doc).unwrap_or_default();
            let side: Vec<(String, Value)> = self
                .sidecar(&doc)
                .into_iter()
                .filter_map(|l| Some((l.clone(), serde_json::from_str(&l).ok()?)))
                .collect();
            for line in self.transcript(&doc) {
                let Ok(rec) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                let id = rec["op_id"].clone();
                let sigs = side
                    .iter()
                    .filter(|(_, v)| v["kind"] == "signature" && v["op_id"] == id)
                    .map(|(l, _)| l.clone())
                    .collect();
                let approvals = side
                    .iter()
                    .filter(|(_, v)| {
                        v["kind"] == "approval"
                            && v["op_ids"].as_array().is_some_and(|a| a.contains(&id))
                    })
                    .map(|(l, _)| l.clone())
                    .collect();
                out.push(Src {
                    doc: doc.clone(),
                    lineage: lineage.clone(),
                    rec,
                    sigs,
                    approvals,
                });
            }
        }
        out
    }
}

/// The shared world: one repository, its keys, main and the honest
/// branches' commits.
struct World {
    seed: u64,
    repo: Repo,
    main: Snap,
    /// Every commit of every honest branch (not main's).
    honest: Vec<Snap>,
    /// Every op_id main's transcripts hold: a record outside this set is a
    /// branch record, in reconcile's checked range.
    main_ids: HashSet<String>,
    /// What the generator could not do honestly (a merge that conflicted
    /// and was aborted): printed, not an error.
    notes: Vec<String>,
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| build_world(seed()))
}

/// The honest writer: `noma` subcommands as alice (a person) or bot (an
/// agent), each signing with its own key.
struct Writer<'a> {
    r: &'a Repo,
    alice: PathBuf,
    bot: PathBuf,
}

impl Writer<'_> {
    fn patch(&self, doc: &str, op: &Value, agent: bool) {
        let key = if agent { &self.bot } else { &self.alice };
        let mut args = vec!["patch", doc, "--inplace", "--key", key.to_str().unwrap()];
        if agent {
            args.extend(["--actor-kind", "agent", "--actor-name", "bot"]);
            args.extend(["--reason", "agent edit"]);
        } else {
            args.extend(["--actor-name", "alice"]);
        }
        let op = op.to_string();
        args.extend(["--op", &op]);
        let o = self.r.noma(&args);
        assert!(o.status.success(), "patch {doc} {op}: {}", text(&o));
    }

    fn approve(&self, doc: &str) {
        let o = self.r.noma(&[
            "approve",
            doc,
            "--key",
            self.alice.to_str().unwrap(),
            "--yes",
        ]);
        assert!(o.status.success(), "approve {doc}: {}", text(&o));
    }

    fn record_new(&self, doc: &str) {
        self.r.write(doc, &template(doc.trim_end_matches(".noma")));
        let o = self.r.noma(&[
            "record",
            doc,
            "--key",
            self.alice.to_str().unwrap(),
            "--actor-name",
            "alice",
        ]);
        assert!(o.status.success(), "record {doc}: {}", text(&o));
    }

    fn rm(&self, doc: &str) {
        let o = self.r.noma(&[
            "rm",
            doc,
            "--key",
            self.alice.to_str().unwrap(),
            "--actor-name",
            "alice",
            "--reason",
            "retired",
        ]);
        assert!(o.status.success(), "rm {doc}: {}", text(&o));
    }
}

/// The state of one honest branch while it is generated.
struct Branch {
    live: Vec<String>,
    /// Documents with agent records not yet approved.
    waiting: BTreeSet<String>,
    /// Blocks the branch added, per document (delete_block candidates).
    added: BTreeMap<String, Vec<String>>,
}

fn value_op(rng: &mut Rng, id: &str) -> Value {
    json!({"op": "update_attribute", "id": id, "key": "v", "value": 1 + rng.below(999)})
}

impl Branch {
    /// A random edit of `doc` that applies: an attribute change, an added
    /// note, or the deletion of a note the branch added.
    fn op(&mut self, rng: &mut Rng, doc: &str, counter: &mut usize) -> Value {
        match rng.below(4) {
            0 => {
                *counter += 1;
                let id = format!("n{counter}");
                self.added
                    .entry(doc.to_string())
                    .or_default()
                    .push(id.clone());
                json!({"op": "add_block", "parent": "s", "position": rng.below(2),
                       "content": format!(":::note{{id=\"{id}\"}}\nAdded {id}.\n:::")})
            }
            1 if self.added.get(doc).is_some_and(|a| !a.is_empty()) => {
                let list = self.added.get_mut(doc).unwrap();
                let id = list.remove(rng.below(list.len()));
                json!({"op": "delete_block", "id": id})
            }
            _ => {
                let id = rng_block(rng);
                value_op(rng, id)
            }
        }
    }

    /// Approves every document with waiting agent records (what a person
    /// does before the branch is reviewed, and before it is renamed,
    /// merged or removed).
    fn approve_all(&mut self, w: &Writer) {
        for doc in std::mem::take(&mut self.waiting) {
            w.approve(&doc);
        }
    }
}

fn rng_block(rng: &mut Rng) -> &'static str {
    ["c1", "c2"][rng.below(2)]
}

/// The commits of `rev`'s first-parent and merged history since main,
/// oldest first.
fn commits_since_main(r: &Repo, rev: &str) -> Vec<String> {
    r.ok(&["rev-list", "--reverse", &format!("main..{rev}")])
        .lines()
        .map(|l| l.trim().to_string())
        .filter(|l| l.len() == 40)
        .collect()
}

/// The documents, transcripts and sidecars of `sha`.
fn snapshot(r: &Repo, sha: &str, branch: &str) -> Snap {
    let names = r.ok(&["ls-tree", "-r", "--name-only", sha]);
    let wanted: Vec<&str> = names
        .lines()
        .filter(|p| p.ends_with(".noma") || p.ends_with(".patches") || p.ends_with(".provenance"))
        .filter(|p| !p.starts_with(".noma/"))
        .collect();
    let mut child = Command::new("git")
        .args(["cat-file", "--batch"])
        .current_dir(r.path())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", r.home.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = String::new();
    for p in &wanted {
        input.push_str(&format!("{sha}:{p}\n"));
    }
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "cat-file of {sha}");
    let mut files = BTreeMap::new();
    let mut rest = &out.stdout[..];
    for p in wanted {
        let nl = rest.iter().position(|&b| b == b'\n').unwrap();
        let header = std::str::from_utf8(&rest[..nl]).unwrap();
        let size: usize = header.rsplit(' ').next().unwrap().parse().unwrap();
        let body = &rest[nl + 1..nl + 1 + size];
        files.insert(p.to_string(), String::from_utf8(body.to_vec()).unwrap());
        rest = &rest[nl + 1 + size + 1..];
    }
    Snap {
        sha: sha.to_string(),
        branch: branch.to_string(),
        files,
    }
}

/// The world's repository, as [`Repo::init`] makes one, but under the
/// build's temporary directory: a static is never dropped, so its
/// directories outlive the test binary; each run removes those of runs
/// whose process is gone.
fn world_repo() -> Repo {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("forgery");
    std::fs::create_dir_all(&root).unwrap();
    let mine = format!("{}-", std::process::id());
    for e in std::fs::read_dir(&root).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let pid = name.split('-').next().unwrap_or_default();
        let gone = !Path::new("/proc").join(pid).exists();
        if Path::new("/proc/self").exists() && gone && !name.starts_with(&mine) {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
    let made = |what: &str| {
        tempfile::Builder::new()
            .prefix(&format!("{mine}{what}-"))
            .tempdir_in(&root)
            .unwrap()
    };
    let r = Repo {
        dir: made("repo"),
        home: made("home"),
    };
    r.ok(&["-c", "init.defaultBranch=main", "init", "-q"]);
    r.ok(&["config", "user.name", "Tester"]);
    r.ok(&["config", "user.email", "t@example.com"]);
    r.ok(&["config", "commit.gpgsign", "false"]);
    r
}

/// Commits everything through the hooks (an honest history passes them).
fn commit(r: &Repo, msg: &str) {
    r.commit_all(msg);
}

fn build_world(seed: u64) -> World {
    let mut rng = Rng(seed);
    let branches = env_number("NOMA_FORGERY_BRANCHES").unwrap_or(6) as usize;
    let started = std::time::Instant::now();
    let r = world_repo();
    assert_ran(&r.noma(&["init"]));
    let (alice, bot) = signed_policy(&r);
    r.commit_all("provenance on");
    let w = Writer { r: &r, alice, bot };
    // main: documents signed from their genesis, a person's and an
    // approved agent's records, and two tombstones.
    for doc in ["d0.noma", "d1.noma", "d2.noma", "gone.noma", "gone2.noma"] {
        w.record_new(doc);
    }
    commit(&r, "documents");
    w.patch("d0.noma", &value_op(&mut rng, "c1"), false);
    w.patch("gone.noma", &value_op(&mut rng, "c2"), false);
    w.patch("d1.noma", &value_op(&mut rng, "c2"), true);
    w.approve("d1.noma");
    w.patch("gone2.noma", &value_op(&mut rng, "c1"), true);
    w.approve("gone2.noma");
    commit(&r, "main edits");
    w.rm("gone.noma");
    w.rm("gone2.noma");
    commit(&r, "two documents retired");
    let main_sha = r.ok(&["rev-parse", "main"]).trim().to_string();

    let mut notes = Vec::new();
    let mut counter = 0usize;
    let mut names = 0usize;
    for b in 0..branches {
        let name = format!("h{b}");
        r.ok(&["checkout", "-q", "-B", &name, "main"]);
        let mut st = Branch {
            live: vec!["d0.noma".into(), "d1.noma".into(), "d2.noma".into()],
            waiting: BTreeSet::new(),
            added: BTreeMap::new(),
        };
        for step in 0..3 + rng.below(5) {
            let doc = rng.pick(&st.live).clone();
            let what = rng.below(10);
            let msg = match what {
                0..=2 => {
                    let op = st.op(&mut rng, &doc, &mut counter);
                    w.patch(&doc, &op, false);
                    format!("alice edits {doc}")
                }
                3..=5 => {
                    let op = st.op(&mut rng, &doc, &mut counter);
                    w.patch(&doc, &op, true);
                    // Approved in the same commit: every commit of an
                    // honest branch is then a history ready for review.
                    w.approve(&doc);
                    format!("bot edits {doc}")
                }
                6 => {
                    st.approve_all(&w);
                    names += 1;
                    let to = format!("r{names}.noma");
                    for suffix in ["", ".patches", ".provenance"] {
                        r.ok(&["mv", &format!("{doc}{suffix}"), &format!("{to}{suffix}")]);
                    }
                    st.live.retain(|d| *d != doc);
                    st.live.push(to.clone());
                    if let Some(a) = st.added.remove(&doc) {
                        st.added.insert(to.clone(), a);
                    }
                    format!("rename {doc} to {to}")
                }
                7 => {
                    names += 1;
                    // A new document, sometimes at a path other branches
                    // also create (another lineage under the same name).
                    let to = if rng.chance(50) && !st.live.iter().any(|d| d == "new.noma") {
                        "new.noma".to_string()
                    } else if rng.chance(50) {
                        std::fs::copy(r.path().join(&doc), r.path().join(format!("k{names}.noma")))
                            .unwrap();
                        let to = format!("k{names}.noma");
                        // `noma patch` of the uncommitted copy opens its
                        // transcript with an unsigned genesis record, which
                        // the hook refuses; `noma record` signs it.
                        let o = r.noma(&[
                            "record",
                            &to,
                            "--key",
                            w.alice.to_str().unwrap(),
                            "--actor-name",
                            "alice",
                        ]);
                        assert_ran(&o);
                        st.added
                            .insert(to.clone(), st.added.get(&doc).cloned().unwrap_or_default());
                        let op = st.op(&mut rng, &to, &mut counter);
                        w.patch(&to, &op, false);
                        st.live.push(to.clone());
                        commit(&r, &format!("copy {doc} to {to}"));
                        continue;
                    } else {
                        format!("n{names}.noma")
                    };
                    w.record_new(&to);
                    st.live.push(to.clone());
                    format!("new {to}")
                }
                8 if st.live.len() > 1 => {
                    st.approve_all(&w);
                    w.rm(&doc);
                    st.live.retain(|d| *d != doc);
                    format!("remove {doc}")
                }
                _ => {
                    // A side branch edits c1 while this one edits c2 of
                    // the same document, then merges it: the merge driver
                    // re-applies the side's records as copies.
                    st.approve_all(&w);
                    let side = format!("{name}-side{step}");
                    r.ok(&["checkout", "-q", "-b", &side]);
                    let agent = rng.chance(50);
                    w.patch(&doc, &value_op(&mut rng, "c1"), agent);
                    if agent {
                        w.approve(&doc);
                    }
                    commit(&r, &format!("side edits {doc}"));
                    r.ok(&["checkout", "-q", &name]);
                    w.patch(&doc, &value_op(&mut rng, "c2"), false);
                    commit(&r, &format!("alice edits {doc} c2"));
                    let o = r.git(&["merge", "--no-edit", &side]);
                    if !o.status.success() {
                        notes.push(format!("{name}: merge of {side} aborted: {}", text(&o)));
                        r.ok(&["merge", "--abort"]);
                    }
                    continue;
                }
            };
            commit(&r, &msg);
        }
        st.approve_all(&w);
        if r.ok(&["status", "--porcelain"]).trim().is_empty() {
            continue;
        }
        commit(&r, "approvals");
    }
    let main = snapshot(&r, &main_sha, "main");
    let main_ids = main
        .records()
        .into_iter()
        .filter_map(|s| s.rec["op_id"].as_str().map(str::to_string))
        .collect();
    let mut honest = Vec::new();
    for b in 0..branches {
        let name = format!("h{b}");
        for sha in commits_since_main(&r, &name) {
            if honest.iter().any(|s: &Snap| s.sha == sha) {
                continue;
            }
            honest.push(snapshot(&r, &sha, &name));
        }
    }
    r.ok(&["checkout", "-q", "main"]);
    eprintln!(
        "forgery seed {seed}: {} honest commits on {branches} branches built in {:.1?}",
        honest.len(),
        started.elapsed()
    );
    World {
        seed,
        repo: r,
        main,
        honest,
        main_ids,
        notes,
    }
}

/// The output of `noma reconcile --base main` with HEAD at `sha`, run in
/// the linked work tree `wt`.
fn reconcile_at(w: &World, wt: &Path, sha: &str) -> Output {
    // A linked work tree's HEAD is this one file; writing it is what
    // `git checkout --detach` does to HEAD, without touching the (empty)
    // work tree reconcile does not read.
    let gitdir = std::fs::read_to_string(wt.join(".git")).unwrap();
    let gitdir = PathBuf::from(gitdir.trim().strip_prefix("gitdir: ").unwrap());
    std::fs::write(gitdir.join("HEAD"), format!("{sha}\n")).unwrap();
    let mut c = Command::new(NOMA);
    c.args(["reconcile", "--base", "main"])
        .current_dir(wt)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", w.repo.home.path())
        .env_remove("SSH_AUTH_SOCK");
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("GIT_") && k != "GIT_CONFIG_NOSYSTEM" {
            c.env_remove(k);
        }
    }
    c.output().unwrap()
}

/// A linked work tree of the world's repository with nothing checked out,
/// for `label`'s reconcile runs.
fn worktree(w: &World, label: &str) -> PathBuf {
    let path = w.repo.home.path().join(format!("wt-{label}"));
    if !path.exists() {
        w.repo.ok(&[
            "worktree",
            "add",
            "-q",
            "--detach",
            "--no-checkout",
            path.to_str().unwrap(),
            "main",
        ]);
    }
    path
}

/// One mutated history: the files it changes on top of `base` (None
/// deletes) and what a failure report shows.
struct Case {
    base: String,
    branch: String,
    /// The mutation's sub-kind, tallied in the family's summary.
    kind: String,
    variant: String,
    /// The forged or mutated record or sidecar line, or what was deleted.
    shown: String,
    changes: BTreeMap<String, Option<String>>,
}

fn joined(lines: &[String]) -> String {
    let mut s = String::new();
    for l in lines {
        s.push_str(l);
        s.push('\n');
    }
    s
}

/// The line with `prev_entry_sha256` linking it to `prev` (the line
/// before it, or none for a first line).
fn chained(v: &mut Value, prev: Option<&String>) -> String {
    match prev {
        Some(p) => v["prev_entry_sha256"] = json!(sha256_hex(format!("{p}\n").as_bytes())),
        None => {
            if let Some(o) = v.as_object_mut() {
                o.remove("prev_entry_sha256");
            }
        }
    }
    v.to_string()
}

/// `lines` with every line from `from` on re-linked to the one before it,
/// as a forger who rewrites a line does to keep the chain.
fn rechain(lines: &mut [String], from: usize) {
    for i in from..lines.len() {
        let Ok(mut v) = serde_json::from_str::<Value>(&lines[i]) else {
            continue;
        };
        let prev = if i == 0 {
            None
        } else {
            Some(lines[i - 1].clone())
        };
        lines[i] = chained(&mut v, prev.as_ref());
    }
}

/// A derived op_id in UUID v4 layout, as the merge makes one.
fn derived_uuid(parts: &[&str]) -> String {
    let h = sha256_hex(parts.join("\n").as_bytes());
    format!(
        "{}-{}-4{}-8{}-{}",
        &h[0..8],
        &h[8..12],
        &h[13..16],
        &h[17..20],
        &h[20..32]
    )
}

/// Makes `rec` a merge copy of the op `original`, as the merge driver
/// labels one: derived op_id, `parent_op_id`, the copy reason keeping the
/// original reason.
fn label_as_copy(rec: &mut Value, original: &str) {
    let pre = rec["pre_sha256"].as_str().unwrap_or_default().to_string();
    rec["op_id"] = json!(derived_uuid(&["noma-reconcile", original, &pre]));
    rec["parent_op_id"] = json!(original);
    let why = format!(
        "reconciled: op {original} from the merged branch, rebased onto {}",
        &pre[..8.min(pre.len())]
    );
    rec["reason"] = json!(match rec["reason"].as_str() {
        Some(old) if !old.starts_with("reconciled: ") => format!("{why}; original reason: {old}"),
        _ => why,
    });
}

/// The record `src` applied to `text` (the document's current state) as
/// the engine would write it, then given `src`'s identity fields (op_id,
/// ts, actor, reason, doc_uri, op, parent_op_id): `None` when the op does
/// not apply there. Also returns the document after it (`None`: removed).
fn replayed(src: &Value, text: &str, doc_uri: &str) -> Option<(Value, Option<String>)> {
    let op = src["op"].clone();
    if op["op"] == "x-noma/remove_document" {
        let mut rec = src.clone();
        let pre = sha256_hex(text.as_bytes());
        rec["pre_sha"] = json!(&pre[..8]);
        rec["pre_sha256"] = json!(pre);
        return Some((rec, None));
    }
    let actor: Actor = serde_json::from_value(src["actor"].clone()).ok()?;
    let ctx = Context {
        doc_uri: doc_uri.to_string(),
        ..Default::default()
    };
    let plan = noma_core::plan::plan(text, &ctx, std::slice::from_ref(&op), &Request::new(actor));
    let made = plan.records.into_iter().next()?;
    if !plan.accepted || made.patch_result != PatchResult::Applied {
        return None;
    }
    let mut rec: Value = serde_json::from_str(made.to_line().trim_end()).ok()?;
    for key in [
        "op_id",
        "ts",
        "actor",
        "reason",
        "doc_uri",
        "op",
        "parent_op_id",
    ] {
        match src.get(key) {
            Some(v) if !v.is_null() => rec[key] = v.clone(),
            _ => {
                if let Some(o) = rec.as_object_mut() {
                    o.remove(key);
                }
            }
        }
    }
    Some((rec, Some(plan.new_text)))
}

/// A forgery that appends `src` (a record of another document, branch or
/// position) to live document `doc` of `snap`, verbatim or as a merge
/// copy, with the sidecar lines that vouch for it.
fn replay_case(snap: &Snap, doc: &str, src: &Src, as_copy: bool, from: &str) -> Option<Case> {
    let text = snap.files.get(doc)?;
    let mut lines = snap.transcript(doc);
    let (mut rec, new_doc) = replayed(&src.rec, text, doc)?;
    if as_copy {
        let original = src.rec["op_id"].as_str()?.to_string();
        label_as_copy(&mut rec, &original);
    }
    let line = chained(&mut rec, lines.last());
    lines.push(line.clone());
    let mut side = snap.sidecar(doc);
    for l in src.sigs.iter().chain(&src.approvals) {
        if !side.contains(l) {
            side.push(l.clone());
        }
    }
    let mut changes = BTreeMap::new();
    changes.insert(doc.to_string(), new_doc);
    changes.insert(format!("{doc}.patches"), Some(joined(&lines)));
    changes.insert(format!("{doc}.provenance"), Some(joined(&side)));
    let kind = if as_copy { "merge copy" } else { "verbatim" };
    let op = src.rec["op"]["op"].as_str().unwrap_or("?");
    // Another lineage at this very path (a document another branch
    // created under the same name).
    let other_lineage = snap.lineage(doc).is_some_and(|l| l != src.lineage);
    let same_path = if src.doc == doc && other_lineage {
        ", same path"
    } else {
        ""
    };
    Some(Case {
        base: snap.sha.clone(),
        branch: snap.branch.clone(),
        kind: format!("{kind} {op}{same_path}"),
        variant: format!(
            "{} of {} {} on {} ({from}, {}) appended to {doc}",
            kind,
            src.rec["op"]["op"].as_str().unwrap_or("?"),
            src.rec["op_id"].as_str().unwrap_or("?"),
            src.doc,
            if src.approvals.is_empty() {
                "signed"
            } else {
                "approved"
            }
        ),
        shown: line,
        changes,
    })
}

fn op_id(v: &Value) -> String {
    v["op_id"].as_str().unwrap_or_default().to_string()
}

/// The branch records (not on main) of live or removed document `doc`:
/// (line index, record).
fn range_records(w: &World, snap: &Snap, doc: &str) -> Vec<(usize, Value)> {
    snap.transcript(doc)
        .iter()
        .enumerate()
        .filter_map(|(i, l)| Some((i, serde_json::from_str::<Value>(l).ok()?)))
        .filter(|(_, v)| !w.main_ids.contains(&op_id(v)))
        .collect()
}

/// What a family's mutation is drawn from: the world, the commit it
/// starts from, that commit's live documents, and whether a replayed
/// record is labelled as a merge copy.
#[derive(Clone, Copy)]
struct Draw<'w> {
    w: &'w World,
    snap: &'w Snap,
    live: &'w [String],
    as_copy: bool,
}

/// One random mutation of `family` derived from a random honest commit
/// (or main), or `None` when the commit drawn offers none.
fn mutate(w: &World, family: &str, rng: &mut Rng) -> Option<Case> {
    let snap = if rng.chance(10) || w.honest.is_empty() {
        &w.main
    } else {
        rng.pick(&w.honest)
    };
    let live: Vec<String> = snap.docs().into_iter().filter(|d| snap.live(d)).collect();
    let as_copy = rng.chance(50);
    let d = Draw {
        w,
        snap,
        live: &live,
        as_copy,
    };
    match family {
        "record-from-other-document" | "approval-from-other-document" => {
            from_other_document(&d, family, rng)
        }
        "record-from-other-branch" => from_other_branch(&d, family, rng),
        "record-from-other-position" => from_other_position(&d, family, rng),
        "strip-signature" => strip_signature(&d, family, rng),
        "swap-signatures" => swap_signatures(&d, family, rng),
        "relabel-actor-kind" | "relabel-actor-name" => relabel_actor(&d, family, rng),
        "cut-tombstone" | "delete-tombstone" => tombstone(&d, family, rng),
        "own-record-as-copy" => own_record_as_copy(&d, family, rng),
        other => panic!("unknown family {other}"),
    }
}

/// A record, or an agent record with its approval, of another document (on this
/// commit or on main) appended to a live document, verbatim or as a merge
/// copy, with the sidecar lines that vouch for it.
fn from_other_document(d: &Draw, family: &str, rng: &mut Rng) -> Option<Case> {
    let Draw {
        w,
        snap,
        live,
        as_copy,
    } = *d;
    let doc = rng.pick(live).clone();
    let lineage = snap.lineage(&doc)?;
    let approved = family == "approval-from-other-document";
    let from = if rng.chance(50) { snap } else { &w.main };
    let srcs: Vec<Src> = from
        .records()
        .into_iter()
        .filter(|s| s.lineage != lineage && !s.sigs.is_empty())
        .filter(|s| approved != s.approvals.is_empty())
        .collect();
    if srcs.is_empty() {
        return None;
    }
    let src = rng.pick(&srcs);
    replay_case(snap, &doc, src, as_copy, &format!("from {}", from.branch))
}

/// A record of a lineage another honest branch created (a copy or a new
/// document, sometimes at the same path as one here) appended to a live
/// document, verbatim or as a merge copy.
fn from_other_branch(d: &Draw, _: &str, rng: &mut Rng) -> Option<Case> {
    let Draw {
        w,
        snap,
        live,
        as_copy,
    } = *d;
    // A record of a lineage another branch created (a copy or a
    // new document; the same path as one here, sometimes).
    let other = rng.pick(&w.honest);
    if other.branch == snap.branch {
        return None;
    }
    let doc = rng.pick(live).clone();
    let lineage = snap.lineage(&doc)?;
    let main_lineages: HashSet<String> = w
        .main
        .docs()
        .iter()
        .filter_map(|d| w.main.lineage(d))
        .collect();
    let srcs: Vec<Src> = other
        .records()
        .into_iter()
        .filter(|s| s.lineage != lineage && !main_lineages.contains(&s.lineage))
        .filter(|s| !s.sigs.is_empty())
        .collect();
    if srcs.is_empty() {
        return None;
    }
    let src = rng.pick(&srcs);
    replay_case(
        snap,
        &doc,
        src,
        as_copy,
        &format!("from branch {}", other.branch),
    )
}

/// A record of the same document appended again at its end, verbatim (a
/// repeated op_id) or as a merge copy of a record the transcript holds.
fn from_other_position(d: &Draw, _: &str, rng: &mut Rng) -> Option<Case> {
    let Draw {
        snap,
        live,
        as_copy,
        ..
    } = *d;
    let doc = rng.pick(live).clone();
    let srcs: Vec<Src> = snap
        .records()
        .into_iter()
        .filter(|s| s.doc == doc && !s.sigs.is_empty())
        .collect();
    if srcs.is_empty() {
        return None;
    }
    let src = rng.pick(&srcs);
    replay_case(snap, &doc, src, as_copy, "from an earlier line")
}

/// A branch record's signature line, or the approval naming it, removed
/// from its sidecar.
fn strip_signature(d: &Draw, _: &str, rng: &mut Rng) -> Option<Case> {
    let Draw { w, snap, .. } = *d;
    let doc = rng.pick(&snap.docs()).clone();
    let range = range_records(w, snap, &doc);
    if range.is_empty() {
        return None;
    }
    let (_, rec) = rng.pick(&range);
    // A merge copy is vouched for by its original's lines; an original on
    // main would vouch from the base, so only branch originals count.
    let origin = match rec["parent_op_id"].as_str() {
        Some(p)
            if rec["reason"]
                .as_str()
                .is_some_and(|r| r.starts_with("reconciled: ")) =>
        {
            p
        }
        _ => rec["op_id"].as_str()?,
    };
    if w.main_ids.contains(origin) {
        return None;
    }
    let id = json!(origin);
    let side = snap.sidecar(&doc);
    let parsed: Vec<Value> = side
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or(Value::Null))
        .collect();
    // What goes: its signature lines, the approvals naming it, both, or
    // the whole sidecar.
    let mode = rng.below(4);
    let drop: Vec<bool> = parsed
        .iter()
        .map(|v| {
            let approval =
                v["kind"] == "approval" && v["op_ids"].as_array().is_some_and(|a| a.contains(&id));
            let signature = v["kind"] == "signature" && v["op_id"] == id;
            match mode {
                0 => signature,
                1 => approval,
                2 => signature || approval,
                _ => true,
            }
        })
        .collect();
    if !drop.contains(&true) {
        return None;
    }
    let what = [
        "signature",
        "approval",
        "signature and approval",
        "whole sidecar",
    ][mode];
    let kept: Vec<String> = side
        .iter()
        .zip(&drop)
        .filter(|(_, d)| !**d)
        .map(|(l, _)| l.clone())
        .collect();
    let shown: Vec<String> = side
        .iter()
        .zip(&drop)
        .filter(|(_, d)| **d)
        .map(|(l, _)| l.clone())
        .collect();
    let mut changes = BTreeMap::new();
    let body = (mode < 3).then(|| joined(&kept));
    changes.insert(format!("{doc}.provenance"), body);
    Some(Case {
        base: snap.sha.clone(),
        branch: snap.branch.clone(),
        kind: format!("{what} removed"),
        variant: format!("{what} of {} removed from {doc}.provenance", op_id(rec)),
        shown: shown.join("\n"),
        changes,
    })
}

/// The `sig` of a branch record's signature line swapped with another
/// line's of the same sidecar.
fn swap_signatures(d: &Draw, _: &str, rng: &mut Rng) -> Option<Case> {
    let Draw { w, snap, .. } = *d;
    let doc = rng.pick(&snap.docs()).clone();
    let range: HashSet<String> = range_records(w, snap, &doc)
        .iter()
        .map(|(_, v)| op_id(v))
        .collect();
    let mut side = snap.sidecar(&doc);
    let parsed: Vec<Value> = side
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or(Value::Null))
        .collect();
    let sigs: Vec<usize> = (0..parsed.len())
        .filter(|&i| parsed[i]["kind"] == "signature")
        .collect();
    let mine: Vec<usize> = sigs
        .iter()
        .copied()
        .filter(|&i| range.contains(parsed[i]["op_id"].as_str().unwrap_or_default()))
        .collect();
    if mine.is_empty() || sigs.len() < 2 {
        return None;
    }
    let a = *rng.pick(&mine);
    let b = *rng.pick(&sigs);
    if parsed[a]["op_id"] == parsed[b]["op_id"] || parsed[a]["sig"] == parsed[b]["sig"] {
        return None;
    }
    let (mut va, mut vb) = (parsed[a].clone(), parsed[b].clone());
    let sa = va["sig"].take();
    va["sig"] = vb["sig"].take();
    vb["sig"] = sa;
    side[a] = va.to_string();
    side[b] = vb.to_string();
    let mut changes = BTreeMap::new();
    changes.insert(format!("{doc}.provenance"), Some(joined(&side)));
    Some(Case {
        base: snap.sha.clone(),
        branch: snap.branch.clone(),
        kind: "two sigs swapped".into(),
        variant: format!(
            "signatures of {} and {} swapped in {doc}.provenance",
            parsed[a]["op_id"], parsed[b]["op_id"]
        ),
        shown: format!("{}\n{}", side[a], side[b]),
        changes,
    })
}

/// A branch record's `actor.kind` (agent to human, or another) or
/// `actor.name` changed, the chain re-linked after it.
fn relabel_actor(d: &Draw, family: &str, rng: &mut Rng) -> Option<Case> {
    let Draw { w, snap, .. } = *d;
    let doc = rng.pick(&snap.docs()).clone();
    let range = range_records(w, snap, &doc);
    if range.is_empty() {
        return None;
    }
    let (i, rec) = rng.pick(&range).clone();
    let mut rec = rec;
    let (field, to) = if family == "relabel-actor-kind" {
        let now = rec["actor"]["kind"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let to = match now.as_str() {
            "agent" => "human",
            "human" if rng.chance(50) => "agent",
            _ => "tool",
        };
        ("kind", to.to_string())
    } else {
        let now = rec["actor"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let pool = ["alice", "alice@example.com", "bob", "bot", "mallory"];
        let to = rng.pick(&pool).to_string();
        if to == now {
            return None;
        }
        ("name", to)
    };
    let was = rec["actor"][field].clone();
    rec["actor"][field] = json!(to);
    let mut lines = snap.transcript(&doc);
    lines[i] = rec.to_string();
    rechain(&mut lines, i);
    let mut changes = BTreeMap::new();
    changes.insert(format!("{doc}.patches"), Some(joined(&lines)));
    Some(Case {
        base: snap.sha.clone(),
        branch: snap.branch.clone(),
        kind: format!("{field} {} -> {to}", was.as_str().unwrap_or("?")),
        variant: format!("{doc} line {}: actor.{field} {was} -> {to:?}", i + 1),
        shown: lines[i].clone(),
        changes,
    })
}

/// A tombstone main holds cut (the transcript truncated before its
/// removal record, sometimes with the document brought back and the
/// sidecar deleted) or deleted (its transcript, its sidecar, or both).
fn tombstone(d: &Draw, family: &str, rng: &mut Rng) -> Option<Case> {
    let Draw { w, snap, .. } = *d;
    // main's tombstones (the merge base holds their removal).
    let tombs: Vec<String> = snap
        .docs()
        .into_iter()
        .filter(|d| !snap.live(d) && w.main.files.contains_key(&format!("{d}.patches")))
        .filter(|d| !w.main.live(d))
        .collect();
    if tombs.is_empty() {
        return None;
    }
    let doc = rng.pick(&tombs).clone();
    let lines = snap.transcript(&doc);
    let mut changes = BTreeMap::new();
    let (variant, shown, kind);
    if family == "delete-tombstone" {
        let which = rng.below(3);
        if which != 1 {
            changes.insert(format!("{doc}.patches"), None);
        }
        if which != 0 && snap.files.contains_key(&format!("{doc}.provenance")) {
            changes.insert(format!("{doc}.provenance"), None);
        }
        if changes.is_empty() {
            return None;
        }
        kind = format!(
            "deleted {}",
            ["transcript", "transcript and sidecar", "sidecar"][which]
        );
        variant = format!(
            "{doc}'s tombstone deleted: {}",
            changes.keys().cloned().collect::<Vec<_>>().join(", ")
        );
        shown = lines.last().cloned().unwrap_or_default();
    } else {
        // Keep 0..n-1 lines; sometimes bring the document back
        // at the state the kept lines leave.
        let keep = rng.below(lines.len());
        let kept = &lines[..keep];
        let restore = keep > 0 && rng.chance(50);
        if keep == 0 && rng.chance(50) {
            changes.insert(format!("{doc}.patches"), Some(String::new()));
        } else {
            changes.insert(format!("{doc}.patches"), Some(joined(kept)));
        }
        if restore {
            let state = replay_text(kept)?;
            changes.insert(doc.clone(), Some(state));
        }
        let no_sidecar = rng.chance(30) && snap.files.contains_key(&format!("{doc}.provenance"));
        if no_sidecar {
            changes.insert(format!("{doc}.provenance"), None);
        }
        kind = format!(
            "cut{}{}",
            if restore { ", document restored" } else { "" },
            if no_sidecar { ", sidecar deleted" } else { "" }
        );
        variant = format!(
            "{doc}'s transcript cut to {keep} of {} line(s){}",
            lines.len(),
            if restore {
                ", the document restored"
            } else {
                ""
            }
        );
        shown = lines[keep].clone();
    }
    Some(Case {
        base: snap.sha.clone(),
        branch: snap.branch.clone(),
        kind,
        variant,
        shown,
        changes,
    })
}

/// A branch record relabelled as a merge copy of itself (derived op_id,
/// `parent_op_id` naming its own op_id, the copy reason), moved to
/// another position when it is the last record and adds a block.
fn own_record_as_copy(d: &Draw, _: &str, rng: &mut Rng) -> Option<Case> {
    let Draw { w, snap, live, .. } = *d;
    let doc = rng.pick(live).clone();
    let range: Vec<(usize, Value)> = range_records(w, snap, &doc)
        .into_iter()
        .filter(|(_, v)| v.get("parent_op_id").is_none_or(Value::is_null))
        .collect();
    if range.is_empty() {
        return None;
    }
    let (i, rec) = rng.pick(&range).clone();
    let mut lines = snap.transcript(&doc);
    let last = i + 1 == lines.len();
    let mut changes = BTreeMap::new();
    let mut moved = String::new();
    let mut copy = rec.clone();
    if last && rec["op"]["op"] == "add_block" {
        // Moved to another position among its siblings: the
        // record's position is not signed.
        let before = replay_text(&lines[..i])?;
        let now = rec["op"]["position"].as_u64().unwrap_or(0);
        let to = (rng.below(2) as u64 + now + 1) % 3;
        let mut src = rec.clone();
        src["op"]["position"] = json!(to);
        let (made, new_doc) = replayed(&src, &before, &doc)?;
        copy = made;
        changes.insert(doc.clone(), new_doc);
        moved = format!(", moved to position {to}");
    }
    label_as_copy(&mut copy, &op_id(&rec));
    // The label's free parts vary as the writers' do: the reason with or
    // without the state it was rebased onto, the op_id derived or fresh.
    let mut label = String::new();
    if rng.chance(50) {
        let why = copy["reason"].as_str().unwrap_or_default();
        if let Some((head, tail)) = why.split_once(", rebased onto ") {
            let rest = tail.split_once("; ").map(|(_, r)| format!("; {r}"));
            copy["reason"] = json!(format!("{head}{}", rest.unwrap_or_default()));
            label.push_str(", reason without the rebase");
        }
    }
    if rng.chance(50) {
        copy["op_id"] = json!(derived_uuid(&["fresh", &rng.next().to_string()]));
        label.push_str(", fresh op_id");
    }
    let prev = if i == 0 {
        None
    } else {
        Some(lines[i - 1].clone())
    };
    lines[i] = chained(&mut copy, prev.as_ref());
    rechain(&mut lines, i + 1);
    changes.insert(format!("{doc}.patches"), Some(joined(&lines)));
    Some(Case {
        base: snap.sha.clone(),
        branch: snap.branch.clone(),
        kind: format!(
            "{}{}",
            rec["op"]["op"].as_str().unwrap_or("?"),
            if moved.is_empty() { "" } else { ", moved" }
        ),
        variant: format!(
            "{doc} line {}: own {} {} relabelled as a merge copy of itself{moved}{label}",
            i + 1,
            rec["op"]["op"].as_str().unwrap_or("?"),
            op_id(&rec)
        ),
        shown: lines[i].clone(),
        changes,
    })
}

/// The document the transcript `lines` leave, replayed through the engine
/// from the empty document (`None` when a record does not reproduce).
fn replay_text(lines: &[String]) -> Option<String> {
    let mut text = String::new();
    for l in lines {
        let v: Value = serde_json::from_str(l).ok()?;
        if v["patch_result"] != "applied" {
            continue;
        }
        let actor: Actor = serde_json::from_value(v["actor"].clone()).ok()?;
        let plan = noma_core::plan::plan(
            &text,
            &Context::default(),
            std::slice::from_ref(&v["op"]),
            &Request::new(actor),
        );
        if sha256_hex(plan.new_text.as_bytes()) != v["post_sha256"].as_str()? {
            return None;
        }
        text = plan.new_text;
    }
    Some(text)
}

/// Writes every case as a commit on its base with one `git fast-import`;
/// returns the commits in order.
fn commit_cases(w: &World, family: &str, cases: &[Case]) -> Vec<String> {
    let mut stream = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        let msg = format!("forgery {family} {i}: {}\n", c.variant);
        write!(
            stream,
            "commit refs/forgery/{family}/{i}\nmark :{}\ncommitter forger <f@example.com> 1764374400 +0000\ndata {}\n{msg}from {}\n",
            i + 1,
            msg.len(),
            c.base
        )
        .unwrap();
        for (path, content) in &c.changes {
            match content {
                Some(body) => {
                    write!(stream, "M 100644 inline {path}\ndata {}\n", body.len()).unwrap();
                    stream.extend_from_slice(body.as_bytes());
                    stream.push(b'\n');
                }
                None => writeln!(stream, "D {path}").unwrap(),
            }
        }
        stream.push(b'\n');
    }
    let marks = w.repo.home.path().join(format!("marks-{family}"));
    let mut child = Command::new("git")
        .args(["fast-import", "--quiet", "--force"])
        .arg(format!("--export-marks={}", marks.display()))
        .current_dir(w.repo.path())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", w.repo.home.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&stream).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "fast-import: {}", text(&out));
    let marks = std::fs::read_to_string(marks).unwrap();
    let mut shas = vec![String::new(); cases.len()];
    for l in marks.lines() {
        let (m, sha) = l.split_once(' ').unwrap();
        let i: usize = m.trim_start_matches(':').parse().unwrap();
        shas[i - 1] = sha.to_string();
    }
    shas
}

/// The family's number: its seed stream is the run's seed mixed with it.
fn family_index(family: &str) -> u64 {
    FAMILIES.iter().position(|f| *f == family).unwrap() as u64
}

/// Generates `NOMA_FORGERY_CASES` distinct mutated histories of `family`,
/// checks each with `noma reconcile --base main`, and fails listing every
/// one that passed (or crashed) with the seed and the forged line.
fn run_family(family: &str) {
    let w = world();
    let wanted = env_number("NOMA_FORGERY_CASES").unwrap_or(185) as usize;
    let mut rng = Rng(w.seed ^ (family_index(family) + 1).wrapping_mul(0xA24B_AED4_963E_E407));
    let started = std::time::Instant::now();
    let mut cases = Vec::new();
    let mut seen = HashSet::new();
    let mut tries = 0;
    while cases.len() < wanted && tries < wanted * 50 {
        tries += 1;
        let Some(c) = mutate(w, family, &mut rng) else {
            continue;
        };
        // The same tree twice is one history, not two cases.
        let key = sha256_hex(format!("{}{:?}", c.base, c.changes).as_bytes());
        if seen.insert(key) {
            cases.push(c);
        }
    }
    let shas = commit_cases(w, family, &cases);
    let wt = worktree(w, family);
    let mut passed = Vec::new();
    let mut crashed = Vec::new();
    // Per sub-kind: (cases, passed wrongly).
    let mut tally: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for (i, (c, sha)) in cases.iter().zip(&shas).enumerate() {
        let o = reconcile_at(w, &wt, sha);
        let stderr = String::from_utf8_lossy(&o.stderr);
        let report = || {
            format!(
                "seed {} family {family} case {i} (commit {sha} on {} of {}): {}\n  mutated: {}\n  reconcile exit {:?}:\n{}",
                w.seed,
                &c.base[..10],
                c.branch,
                c.variant,
                c.shown,
                o.status.code(),
                text(&o).lines().take(12).collect::<Vec<_>>().join("\n")
            )
        };
        let t = tally.entry(&c.kind).or_default();
        t.0 += 1;
        if stderr.contains("panicked") || o.status.code() != Some(1) && o.status.code() != Some(0) {
            crashed.push(report());
        } else if o.status.code() == Some(0) {
            t.1 += 1;
            passed.push((c.kind.as_str(), report()));
        }
    }
    let table: String = tally
        .iter()
        .map(|(k, (n, p))| format!("\n  {k}: {n} case(s), {p} passed wrongly"))
        .collect();
    // One sample per sub-kind that passed, so each can become a named test.
    let mut shown_kinds = HashSet::new();
    let samples: Vec<String> = crashed
        .iter()
        .cloned()
        .chain(
            passed
                .iter()
                .filter(|(k, _)| shown_kinds.insert(*k))
                .map(|(_, r)| r.clone()),
        )
        .take(12)
        .collect();
    eprintln!(
        "forgery seed {} family {family}: {} mutated histories ({} draws), {} passed wrongly, {} crashed, in {:.1?}{table}",
        w.seed,
        cases.len(),
        tries,
        passed.len(),
        crashed.len(),
        started.elapsed()
    );
    // A family whose mutations a history offers few of (relabelling one
    // of few records) may find a few less than asked; at 90% of 185 for
    // one family the eleven still check more than 2,000 histories.
    assert!(
        cases.len() >= wanted - wanted / 10,
        "seed {}: family {family} found only {} distinct mutations in {tries} draws",
        w.seed,
        cases.len()
    );
    assert!(
        passed.is_empty() && crashed.is_empty(),
        "seed {} (NOMA_FORGERY_SEED={} replays it): family {family}: {} of {} mutated histories passed `noma reconcile --base main`, {} crashed:{table}\n\n{}",
        w.seed,
        w.seed,
        passed.len(),
        cases.len(),
        crashed.len(),
        samples.join("\n\n")
    );
}

/// The honest commits of `w` that fail `noma reconcile --base main`, each
/// with its output.
fn honest_failures(w: &World) -> Vec<String> {
    let wt = worktree(w, "honest");
    let mut failed = Vec::new();
    for s in &w.honest {
        let o = reconcile_at(w, &wt, &s.sha);
        if o.status.code() != Some(0) {
            failed.push(format!(
                "{} on {}: exit {:?}\n{}",
                s.sha,
                s.branch,
                o.status.code(),
                text(&o)
            ));
        }
    }
    eprintln!(
        "forgery seed {}: {} honest commits checked, {} failed",
        w.seed,
        w.honest.len(),
        failed.len()
    );
    assert!(w.honest.len() >= 6, "too few honest commits");
    failed
}

/// Every commit of every honest branch passes `noma reconcile --base
/// main`: the generator's histories are honest, so a family's failure is
/// the forgery's, not the history's.
#[test]
fn forgery_honest_histories_pass() {
    let w = world();
    for n in &w.notes {
        eprintln!("note: {n}");
    }
    let failed = honest_failures(w);
    assert!(
        failed.is_empty(),
        "seed {}: honest histories failed reconcile:\n{}",
        w.seed,
        failed.join("\n\n")
    );
}

/// The honest histories of a seed that once failed, in a world of their
/// own.
fn honest_at(seed: u64) {
    let w = build_world(seed);
    let failed = honest_failures(&w);
    assert!(
        failed.is_empty(),
        "seed {seed}: honest histories failed reconcile:\n{}",
        failed.join("\n\n")
    );
}

/// A document renamed, edited and then removed with `noma rm`: its
/// tombstone grew too unlike the old path's transcript for git to pair
/// them, and the old path read as removed without a record.
#[test]
fn forgery_honest_seed_1795934098645639888() {
    honest_at(1_795_934_098_645_639_888);
}

/// The same as a second seed found it.
#[test]
fn forgery_honest_seed_1795934083029468797() {
    honest_at(1_795_934_083_029_468_797);
}

#[test]
fn forgery_record_from_other_document() {
    run_family("record-from-other-document");
}

#[test]
fn forgery_approval_from_other_document() {
    run_family("approval-from-other-document");
}

#[test]
fn forgery_record_from_other_branch() {
    run_family("record-from-other-branch");
}

#[test]
fn forgery_record_from_other_position() {
    run_family("record-from-other-position");
}

#[test]
fn forgery_strip_signature() {
    run_family("strip-signature");
}

#[test]
fn forgery_swap_signatures() {
    run_family("swap-signatures");
}

#[test]
fn forgery_relabel_actor_kind() {
    run_family("relabel-actor-kind");
}

#[test]
fn forgery_relabel_actor_name() {
    run_family("relabel-actor-name");
}

#[test]
fn forgery_cut_tombstone() {
    run_family("cut-tombstone");
}

#[test]
fn forgery_delete_tombstone() {
    run_family("delete-tombstone");
}

#[test]
fn forgery_own_record_as_copy() {
    run_family("own-record-as-copy");
}

//! Randomized: over generated branch histories — agent patches,
//! recorded hand edits, moves, copies and new documents patched before
//! their first commit, and edits that break a transcript committed past
//! the hook (`--no-verify`: an unrecorded edit, a record's op changed, the
//! last record dropped, a transcript brought in from outside the
//! repository) — `noma reconcile --base main` never says "replays yes" for
//! a document whose transcript `noma replay` rejects.
//!
//! Cases default to 8 (each builds a repository and runs tens of git and
//! noma processes); `PROPTEST_CASES` overrides. A failing case is printed
//! as its steps, and its seed saved under `tests/proptest-regressions/`.

use proptest::prelude::*;

use crate::common::{assert_ran, text, Repo};

const DOC: &str = "# Plan\n\n::note{id=\"a\"}\nalpha\n::\n\n::note{id=\"b\"}\nbeta\n::\n\n::note{id=\"c\"}\ngamma\n::\n";
const IDS: [&str; 3] = ["a", "b", "c"];

/// One step on the branch; `doc` picks one of the branch's documents.
#[derive(Clone, Debug)]
enum Step {
    Patch {
        doc: usize,
        id: usize,
    },
    HandEditRecorded {
        doc: usize,
    },
    Move {
        doc: usize,
    },
    CopyAndPatch {
        doc: usize,
        id: usize,
    },
    NewAndPatch {
        id: usize,
    },
    /// Committed with `--no-verify`: an edit no record explains.
    UnrecordedEdit {
        doc: usize,
    },
    /// Committed with `--no-verify`: the last record's op body changed.
    ChangeLastOp {
        doc: usize,
    },
    /// Committed with `--no-verify`: the last line of the transcript cut.
    DropLastRecord {
        doc: usize,
    },
    /// Committed with `--no-verify`: a document patched outside the
    /// repository, brought in with its transcript.
    FromOutside,
}

fn step() -> impl Strategy<Value = Step> {
    let d = 0usize..4;
    let i = 0usize..IDS.len();
    prop_oneof![
        4 => (d.clone(), i.clone()).prop_map(|(doc, id)| Step::Patch { doc, id }),
        2 => d.clone().prop_map(|doc| Step::HandEditRecorded { doc }),
        2 => d.clone().prop_map(|doc| Step::Move { doc }),
        1 => (d.clone(), i.clone()).prop_map(|(doc, id)| Step::CopyAndPatch { doc, id }),
        1 => i.prop_map(|id| Step::NewAndPatch { id }),
        1 => d.clone().prop_map(|doc| Step::UnrecordedEdit { doc }),
        1 => d.clone().prop_map(|doc| Step::ChangeLastOp { doc }),
        1 => d.prop_map(|doc| Step::DropLastRecord { doc }),
        1 => Just(Step::FromOutside),
    ]
}

/// An agent's patch; after a broken step it may be refused (an unrecorded
/// edit stands), which the history then simply lacks.
fn patch(r: &Repo, doc: &str, id: &str, n: usize, broken: bool) {
    let op = serde_json::json!({"op": "replace_body", "id": id, "content": format!("v{n}")});
    let o = r.noma(&["patch", doc, "--inplace", "--op", &op.to_string()]);
    assert!(broken || o.status.success(), "patch {doc}: {}", text(&o));
}

/// Runs `on_main` on main (after one patch of `doc0.noma`), then `steps`
/// on the branch `feat` forked from there; returns the documents at the
/// end. Main's steps may break a transcript too: the branch then builds
/// on a merge base whose transcript does not replay.
fn run(on_main: &[Step], steps: &[Step]) -> (Repo, Vec<String>) {
    let r = Repo::init();
    assert_ran(&r.noma(&["hooks", "install"]));
    r.write("doc0.noma", DOC);
    r.commit_all("base");
    patch(&r, "doc0.noma", "a", 0, false);
    r.commit_all("patch on main");
    let mut w = Walk {
        r: &r,
        docs: vec!["doc0.noma".to_string()],
        outside: tempfile::tempdir().unwrap(),
        broken: false,
        n: 0,
    };
    w.steps(on_main);
    r.ok(&["checkout", "-q", "-b", "feat"]);
    w.steps(steps);
    let docs = w.docs;
    (r, docs)
}

/// The state of a run: the documents so far, and whether a step broke a
/// transcript (later steps may then be refused too).
struct Walk<'r> {
    r: &'r Repo,
    docs: Vec<String>,
    outside: tempfile::TempDir,
    broken: bool,
    /// Steps taken (names files and bodies uniquely).
    n: usize,
}

impl Walk<'_> {
    fn steps(&mut self, steps: &[Step]) {
        for s in steps {
            self.n += 1;
            self.step(self.n, s);
        }
    }

    fn step(&mut self, n: usize, s: &Step) {
        let (r, outside) = (self.r, self.outside.path());
        let broken = self.broken;
        let docs = &mut self.docs;
        let pick = |docs: &Vec<String>, d: usize| docs[d % docs.len()].clone();
        let mut verify = true;
        match s {
            Step::Patch { doc, id } => patch(r, &pick(docs, *doc), IDS[*id], n, broken),
            Step::HandEditRecorded { doc } => {
                let d = pick(docs, *doc);
                let before = r.read(&d);
                r.write(&d, &format!("{before}\nProse {n}.\n"));
                let o = r.noma(&["record", &d]);
                if !o.status.success() {
                    assert!(broken, "record {d}: {}", text(&o));
                    r.write(&d, &before);
                }
            }
            Step::Move { doc } => {
                let (from, to) = (pick(docs, *doc), format!("moved{n}.noma"));
                r.ok(&["mv", &from, &to]);
                r.ok(&["mv", &format!("{from}.patches"), &format!("{to}.patches")]);
                docs.retain(|d| *d != from);
                docs.push(to);
            }
            Step::CopyAndPatch { doc, id } => {
                let to = format!("copy{n}.noma");
                r.write(&to, &r.read(&pick(docs, *doc)));
                patch(r, &to, IDS[*id], n, broken);
                docs.push(to);
            }
            Step::NewAndPatch { id } => {
                let to = format!("new{n}.noma");
                r.write(&to, DOC);
                patch(r, &to, IDS[*id], n, broken);
                docs.push(to);
            }
            Step::UnrecordedEdit { doc } => {
                let d = pick(docs, *doc);
                r.write(&d, &format!("{}\nUnrecorded {n}.\n", r.read(&d)));
                verify = false;
            }
            Step::ChangeLastOp { doc } => {
                let t = format!("{}.patches", pick(docs, *doc));
                let body = r.read(&t);
                let changed = body.replacen("\"content\":\"v", "\"content\":\"w", 1);
                if changed == body {
                    return;
                }
                r.write(&t, &changed);
                verify = false;
            }
            Step::DropLastRecord { doc } => {
                let t = format!("{}.patches", pick(docs, *doc));
                let body = r.read(&t);
                let lines: Vec<&str> = body.lines().collect();
                if lines.len() < 2 {
                    return;
                }
                r.write(&t, &format!("{}\n", lines[..lines.len() - 1].join("\n")));
                verify = false;
            }
            Step::FromOutside => {
                let name = format!("outside{n}.noma");
                let p = outside.join(&name);
                std::fs::write(&p, DOC.replace("alpha", &format!("elsewhere {n}"))).unwrap();
                let op = serde_json::json!({"op": "replace_body", "id": "b", "content": "x"});
                let o = r.cmd(
                    crate::common::NOMA,
                    &[
                        "patch",
                        p.to_str().unwrap(),
                        "--inplace",
                        "--op",
                        &op.to_string(),
                    ],
                );
                assert_ran(&o);
                for f in [name.clone(), format!("{name}.patches")] {
                    std::fs::copy(outside.join(&f), r.path().join(&f)).unwrap();
                }
                docs.push(name);
                verify = false;
            }
        }
        r.ok(&["add", "-A"]);
        let msg = format!("step {n}: {s:?}");
        self.broken |= !verify;
        let (ok, out) = match verify {
            true => r.try_commit(&msg),
            false => (false, String::new()),
        };
        assert!(
            ok || self.broken,
            "{msg}: the hook refused a sound step: {out}"
        );
        if !ok {
            r.ok(&["commit", "-q", "--no-verify", "--allow-empty", "-m", &msg]);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: crate::common::git_proptest_cases(),
        max_shrink_iters: 16,
        ..ProptestConfig::default()
    })]

    #[test]
    fn reconcile_never_says_replays_for_a_transcript_replay_rejects(
        on_main in proptest::collection::vec(step(), 0..3),
        steps in proptest::collection::vec(step(), 1..6)
    ) {
        let (r, docs) = run(&on_main, &steps);
        let o = r.noma(&["reconcile", "--base", "main", "--format", "json"]);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|_| panic!("{}", text(&o)));
        for d in &docs {
            let Some(rep) = v["documents"].as_array().unwrap().iter().find(|x| x["path"] == d.as_str()) else {
                continue;
            };
            if rep["replays"] != true {
                continue;
            }
            let o = r.noma(&["replay", d]);
            prop_assert!(
                o.status.success(),
                "{d}: reconcile says it replays, noma replay rejects it: {}\non main: {on_main:?}\nsteps: {steps:?}\nreport: {rep:#}",
                text(&o)
            );
        }
    }
}

//! Randomized: three branches make random patch commits on
//! disjoint blocks (agents patching through `noma patch --inplace`, every
//! commit through the hooks), then meet main in random orders by random
//! means — `git merge`, `git rebase`, `git pull --rebase` from a clone,
//! `git cherry-pick`, and GitHub's "Update branch" (main merged into the
//! branch, then the branch merged back). Every order must converge: the
//! same document bytes (those of applying all the branches' ops in
//! sequence), a transcript that replays from the first committed content,
//! and every single-parent commit on main — including those that rebase
//! and cherry-pick create without running `pre-commit` — accepted by
//! `noma hook pre-commit` against its parent. Merge commits went through
//! `pre-merge-commit` when git made them.
//!
//! Cases default to 8 (each builds a repository and runs a few hundred git
//! and noma processes); `PROPTEST_CASES` overrides. A failing case is
//! printed as its scenario and its seed saved under
//! `tests/proptest-regressions/`.

use proptest::prelude::*;
use serde_json::{json, Value};

use crate::common::{text, Repo};

/// Block ids of the document; each belongs to at most one branch.
const IDS: [&str; 9] = ["a", "b", "c", "d", "e", "f", "g", "h", "i"];

fn base_doc() -> String {
    let mut s = String::from("# Plan\n\nSome prose.\n\n");
    for (n, id) in IDS.iter().enumerate() {
        s.push_str(&format!(
            "::note{{id=\"{id}\" k=\"v{n}\"}}\nbody {n}\n::\n\n"
        ));
    }
    s
}

/// How one branch reaches main.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Via {
    /// `git merge --no-edit` on main (`--no-ff` when set).
    Merge { no_ff: bool },
    /// `git rebase main` on the branch, then a fast-forward of main.
    Rebase,
    /// In a clone: the branch checked out, `git pull --rebase origin main`,
    /// pushed back as main.
    PullRebase,
    /// `git cherry-pick` of the branch's commits onto main.
    CherryPick,
    /// "Update branch": main merged into the branch, then the branch
    /// merged into main (`--no-ff` when set).
    UpdateThenMerge { no_ff: bool },
}

fn via() -> impl Strategy<Value = Via> {
    prop_oneof![
        any::<bool>().prop_map(|no_ff| Via::Merge { no_ff }),
        Just(Via::Rebase),
        Just(Via::PullRebase),
        Just(Via::CherryPick),
        any::<bool>().prop_map(|no_ff| Via::UpdateThenMerge { no_ff }),
    ]
}

/// The order in which the branches reach main, each by its means.
type Order = Vec<(usize, Via)>;

fn order() -> impl Strategy<Value = Order> {
    (
        Just(vec![0usize, 1, 2]).prop_shuffle(),
        proptest::collection::vec(via(), 3),
    )
        .prop_map(|(perm, vias)| perm.into_iter().zip(vias).collect())
}

#[derive(Clone, Debug)]
struct Scenario {
    /// Main's own patch commits before the branches fork (on blocks no
    /// branch touches), so that the fork point has a transcript.
    main: Vec<Value>,
    /// Per branch, its patch commits: one op each.
    branches: Vec<Vec<Value>>,
    /// At least two orders, no two the same.
    orders: Vec<Order>,
}

fn op(id: &'static str, kind: u8, word: String) -> Value {
    match kind {
        0 => json!({"op": "replace_body", "id": id, "content": word}),
        1 => json!({"op": "update_attribute", "id": id, "key": "k", "value": word}),
        _ => json!({
            "op": "replace_block",
            "id": id,
            "content": format!("::note{{id=\"{id}\" k=\"r\"}}\n{word}\n::"),
        }),
    }
}

fn branch_ops(
    ids: Vec<&'static str>,
    n: std::ops::RangeInclusive<usize>,
) -> BoxedStrategy<Vec<Value>> {
    if ids.is_empty() {
        return Just(Vec::new()).boxed();
    }
    proptest::collection::vec(
        (
            proptest::sample::select(ids),
            0..3u8,
            "[a-z]{1,8}( [a-z]{1,8}){0,2}",
        )
            .prop_map(|(id, kind, word)| op(id, kind, word)),
        n,
    )
    .boxed()
}

fn scenario() -> impl Strategy<Value = Scenario> {
    // Each block goes to branch 0, 1 or 2, or stays untouched (3).
    proptest::collection::vec(0..4usize, IDS.len())
        .prop_filter("every branch needs a block", |owner| {
            (0..3).all(|b| owner.contains(&b))
        })
        .prop_flat_map(|owner| {
            let ids = |b: usize| -> Vec<&'static str> {
                IDS.iter()
                    .zip(&owner)
                    .filter(|(_, o)| **o == b)
                    .map(|(id, _)| *id)
                    .collect()
            };
            (
                (
                    branch_ops(ids(0), 1..=3),
                    branch_ops(ids(1), 1..=3),
                    branch_ops(ids(2), 1..=3),
                ),
                branch_ops(ids(3), 0..=2),
                proptest::collection::vec(order(), 2..=3),
            )
        })
        .prop_filter("the orders must differ", |(_, _, orders)| {
            orders
                .iter()
                .enumerate()
                .all(|(i, o)| !orders[..i].contains(o))
        })
        .prop_map(|((b0, b1, b2), main, orders)| Scenario {
            main,
            branches: vec![b0, b1, b2],
            orders,
        })
}

/// Runs git in `r`, asserting success.
fn git(r: &Repo, args: &[&str]) -> String {
    r.ok(args)
}

/// One agent edit through `noma patch --inplace`, committed through the hooks.
fn patch_commit(r: &Repo, op: &Value, agent: &str, msg: &str) {
    let o = r.noma(&[
        "patch",
        "plan.noma",
        "--inplace",
        "--op",
        &op.to_string(),
        "--actor-kind",
        "agent",
        "--actor-name",
        agent,
    ]);
    assert!(o.status.success(), "patch {op}: {}", text(&o));
    git(r, &["add", "-A"]);
    git(r, &["commit", "-q", "-m", msg]);
}

/// The repository: `noma init` committed with `plan.noma` on main (its
/// first content kept untracked in `.git/base.noma` for replay), main's
/// own patch commits, and branches `b0`..`b2` forked from there (the
/// returned commit), each with its patch commits.
fn build(s: &Scenario) -> (Repo, String) {
    let r = Repo::init();
    let o = r.noma(&["init", "--no-mcp"]);
    assert!(o.status.success(), "init: {}", text(&o));
    r.write("plan.noma", &base_doc());
    r.write(".git/base.noma", &base_doc());
    git(&r, &["add", "-A"]);
    git(&r, &["commit", "-q", "-m", "base"]);
    for (n, op) in s.main.iter().enumerate() {
        patch_commit(&r, op, "agent-main", &format!("main: patch {n}"));
    }
    let base = git(&r, &["rev-parse", "HEAD"]).trim().to_string();
    for (b, ops) in s.branches.iter().enumerate() {
        git(&r, &["checkout", "-q", "-b", &format!("b{b}"), &base]);
        for (n, op) in ops.iter().enumerate() {
            patch_commit(&r, op, &format!("agent-{b}"), &format!("b{b}: patch {n}"));
        }
    }
    git(&r, &["checkout", "-q", "main"]);
    (r, base)
}

/// A clone of `origin` with the hooks and driver installed (git does not
/// clone them), for `pull --rebase`.
fn clone_of(origin: &Repo) -> Repo {
    let c = Repo {
        dir: tempfile::tempdir().unwrap(),
        home: tempfile::tempdir().unwrap(),
    };
    git(&c, &["clone", "-q", origin.path().to_str().unwrap(), "."]);
    git(&c, &["config", "user.name", "Cloner"]);
    git(&c, &["config", "user.email", "c@example.com"]);
    git(&c, &["config", "commit.gpgsign", "false"]);
    let o = c.noma(&["hooks", "install"]);
    assert!(o.status.success(), "hooks install: {}", text(&o));
    c
}

/// `git merge` into the checked-out branch; must be clean.
fn merge(r: &Repo, rev: &str, no_ff: bool) {
    let mut args = vec!["merge", "-q", "--no-edit"];
    if no_ff {
        args.push("--no-ff");
    }
    args.push(rev);
    git(r, &args);
}

/// Plays `order` on fresh copies of the branches (`o{k}-main`,
/// `o{k}-b{j}`); returns main's document bytes.
fn play(
    r: &Repo,
    clone: &Repo,
    base: &str,
    branches: &[Vec<Value>],
    (k, order): (usize, &Order),
) -> Vec<u8> {
    let main = format!("o{k}-main");
    let br = |j: usize| format!("o{k}-b{j}");
    git(r, &["branch", &main, base]);
    for j in 0..3 {
        git(r, &["branch", &br(j), &format!("b{j}")]);
    }
    git(r, &["checkout", "-q", &main]);
    for (j, via) in order {
        let b = br(*j);
        // CI's check of the branch against main passes before it meets main.
        git(r, &["checkout", "-q", &b]);
        let o = r.noma(&["reconcile", "--base", &main]);
        assert!(o.status.success(), "order {k}: reconcile {b}: {}", text(&o));
        git(r, &["checkout", "-q", &main]);
        match via {
            Via::Merge { no_ff } => merge(r, &b, *no_ff),
            Via::Rebase => {
                git(r, &["checkout", "-q", &b]);
                git(r, &["rebase", "-q", &main]);
                git(r, &["checkout", "-q", &main]);
                git(r, &["merge", "-q", "--ff-only", &b]);
            }
            Via::PullRebase => {
                git(clone, &["fetch", "-q", "origin"]);
                git(clone, &["checkout", "-q", "-B", &b, &format!("origin/{b}")]);
                git(clone, &["pull", "-q", "--rebase", "origin", &main]);
                // origin's main must not be checked out while it is pushed.
                git(r, &["checkout", "-q", "--detach"]);
                git(clone, &["push", "-q", "origin", &format!("HEAD:{main}")]);
                git(r, &["checkout", "-q", &main]);
            }
            Via::CherryPick => {
                git(r, &["cherry-pick", &format!("{base}..{b}")]);
            }
            Via::UpdateThenMerge { no_ff } => {
                git(r, &["checkout", "-q", &b]);
                merge(r, &main, false);
                git(r, &["checkout", "-q", &main]);
                merge(r, &b, *no_ff);
            }
        }
    }
    // Rebase, pull --rebase and cherry-pick commit without `pre-commit`:
    // each single-parent commit must pass it against its parent.
    let commits = git(r, &["rev-list", "--no-merges", &format!("{base}..{main}")]);
    let patches: usize = order.iter().map(|(j, _)| branches[*j].len()).sum();
    assert_eq!(
        commits.lines().count(),
        patches,
        "order {k}: main must hold each patch commit once"
    );
    for c in commits.lines() {
        git(r, &["checkout", "-q", "-f", "--detach", &format!("{c}^")]);
        git(r, &["read-tree", c]);
        let o = r.noma(&["hook", "pre-commit"]);
        assert!(
            o.status.success(),
            "order {k}: commit {c} ({}) fails pre-commit against its parent: {}",
            git(r, &["log", "-1", "--format=%s", c]).trim(),
            text(&o)
        );
    }
    git(r, &["checkout", "-q", "-f", &main]);
    assert!(
        r.git(&["diff", "--quiet", "HEAD"]).status.success(),
        "order {k}: work tree not clean: {}",
        git(r, &["status", "--short"])
    );
    let o = r.noma(&["replay", "plan.noma", "--base", ".git/base.noma"]);
    assert!(o.status.success(), "order {k}: replay: {}", text(&o));
    let o = r.noma(&["check", "plan.noma"]);
    assert!(o.status.success(), "order {k}: check: {}", text(&o));
    std::fs::read(r.path().join("plan.noma")).unwrap()
}

fn converges(s: &Scenario) {
    let all: Vec<Value> = s
        .main
        .iter()
        .chain(s.branches.iter().flatten())
        .cloned()
        .collect();
    let expect = noma_core::patch::apply_ops(&base_doc(), &all).expect("generated ops apply");
    let (r, base) = build(s);
    let clone = clone_of(&r);
    let mut first: Option<Vec<u8>> = None;
    for (k, order) in s.orders.iter().enumerate() {
        let doc = play(&r, &clone, &base, &s.branches, (k, order));
        assert_eq!(
            String::from_utf8_lossy(&doc),
            expect,
            "order {k} {order:?}: not the bytes of all ops applied in sequence"
        );
        match &first {
            None => first = Some(doc),
            Some(d) => assert_eq!(d, &doc, "order {k} differs from order 0"),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: crate::common::git_proptest_cases(),
        // A case costs about a second; keep a failing run's shrinking short.
        max_shrink_iters: 24,
        ..ProptestConfig::default()
    })]

    #[test]
    fn three_branches_converge_in_any_order(s in scenario()) {
        converges(&s);
    }
}

/// Found while writing the README: `noma reconcile` replayed a branch's
/// new records as a transcript of their own, so a branch that only
/// appended to a committed transcript failed with `replay-diverged` ("line
/// 1 is the transcript's first but carries prev_entry_sha256").
#[test]
fn reconcile_passes_a_branch_appending_to_a_committed_transcript() {
    let r = Repo::init();
    let o = r.noma(&["init", "--no-mcp"]);
    assert!(o.status.success(), "init: {}", text(&o));
    r.write("plan.noma", &base_doc());
    git(&r, &["add", "-A"]);
    git(&r, &["commit", "-q", "-m", "base"]);
    patch_commit(&r, &op("a", 0, "on main".into()), "agent-main", "main: a");
    git(&r, &["checkout", "-q", "-b", "feat"]);
    patch_commit(&r, &op("b", 0, "on feat".into()), "agent-feat", "feat: b");
    let o = r.noma(&["reconcile", "--base", "main"]);
    assert!(o.status.success(), "reconcile: {}", text(&o));
    assert!(text(&o).contains("replays yes"), "{}", text(&o));
}

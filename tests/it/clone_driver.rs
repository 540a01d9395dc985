//! Every clone guards the same way: a clone whose hooks arrive through a
//! hook manager (husky here, as `npm install` sets it up) but whose
//! `.git/config` has no `merge.noma.driver` (git does not clone it) is
//! warned once by the pre-commit hook, and the textual transcript conflict
//! its next merge makes is resolved by `noma repair`.
#![cfg(unix)]

use crate::common::{text, Repo, NOMA};

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Output;

/// husky 9's dispatcher, reduced to what matters: it runs
/// `.husky/$(basename "$0")` with `sh -e`.
const DISPATCHER: &str = r#"#!/usr/bin/env sh
n=$(basename "$0")
s=$(dirname "$(dirname "$0")")/$n
[ ! -f "$s" ] && exit 0
sh -e "$s" "$@"
"#;

const STUB: &str = "#!/usr/bin/env sh\n. \"$(dirname \"$0\")/h\"\n";

const WARNING: &str = "noma hooks install --driver-only";

/// What husky's `prepare` script does in every clone on `npm install`:
/// its ignored `.husky/_` directory, and `core.hooksPath` pointing there.
fn husky_prepare(r: &Repo) {
    let dir = r.path().join(".husky/_");
    fs::create_dir_all(&dir).unwrap();
    let exec = |name: &str, body: &str| {
        let p = dir.join(name);
        fs::write(&p, body).unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
    };
    exec("h", DISPATCHER);
    for hook in ["pre-commit", "pre-merge-commit"] {
        exec(hook, STUB);
    }
    fs::write(dir.join(".gitignore"), "*\n").unwrap();
    r.ok(&["config", "core.hooksPath", ".husky/_"]);
}

/// Runs git with `noma` on PATH, as husky's scripts find it.
fn git_with_noma(r: &Repo, args: &[&str]) -> Output {
    let bin = Path::new(NOMA).parent().unwrap();
    let path = format!(
        "PATH={}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    r.cmd("env", &[&[path.as_str(), "git"][..], args].concat())
}

fn commit(r: &Repo, msg: &str) -> String {
    r.ok(&["add", "-A"]);
    let o = git_with_noma(r, &["commit", "-q", "-m", msg]);
    assert!(o.status.success(), "commit {msg:?}: {}", text(&o));
    text(&o)
}

fn doc() -> String {
    "# Plan\n\n::note{id=\"a\"}\nalpha\n::\n\n::note{id=\"b\"}\nbeta\n::\n\n## Details\n\n::note{id=\"c\"}\ngamma\n::\n".to_string()
}

fn body_op(id: &str, body: &str) -> String {
    serde_json::json!({"op": "replace_body", "id": id, "content": body}).to_string()
}

/// The team's repository (noma set up through husky, the driver
/// registered) and a teammate's clone of it, set up by `npm install` only.
fn team_and_clone() -> (Repo, Repo) {
    let first = Repo::init();
    husky_prepare(&first);
    let o = first.noma(&["init", "--no-mcp"]);
    assert!(o.status.success(), "{}", text(&o));
    first.write("plan.noma", &doc());
    let o = first.noma(&["record", "plan.noma"]);
    assert!(o.status.success(), "{}", text(&o));
    let out = commit(&first, "plan");
    assert!(!out.contains(WARNING), "the driver is registered: {out}");

    let second = Repo::init();
    let src = first.path().display().to_string();
    fs::remove_dir(second.path().join(".git")).ok();
    fs::remove_dir_all(second.path().join(".git")).unwrap();
    let o = second.git(&["clone", "-q", &src, "."]);
    assert!(o.status.success(), "{}", text(&o));
    second.ok(&["config", "user.name", "Mate"]);
    second.ok(&["config", "user.email", "m@example.com"]);
    second.ok(&["config", "commit.gpgsign", "false"]);
    husky_prepare(&second);
    assert!(!second
        .git(&["config", "merge.noma.driver"])
        .status
        .success());
    (first, second)
}

#[test]
fn a_clone_without_the_driver_is_warned_once_by_the_hook() {
    let (_first, r) = team_and_clone();
    r.write("notes.txt", "one\n");
    let out = commit(&r, "first");
    assert!(out.contains(WARNING), "first commit warns: {out}");
    assert!(out.contains("merge.noma.driver"), "{out}");
    r.write("notes.txt", "two\n");
    let out = commit(&r, "second");
    assert!(!out.contains(WARNING), "warned once per clone: {out}");
    // The fix it names registers the driver.
    let o = r.noma(&["hooks", "install", "--driver-only"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(r.git(&["config", "merge.noma.driver"]).status.success());
}

#[test]
fn a_textual_transcript_conflict_is_resolved_by_repair() {
    let (_first, r) = team_and_clone();
    r.ok(&["checkout", "-q", "-b", "A", "main"]);
    r.agent_patch("plan.noma", &body_op("a", "ALPHA"));
    commit(&r, "A");
    r.ok(&["checkout", "-q", "-b", "B", "main"]);
    r.agent_patch("plan.noma", &body_op("c", "GAMMA"));
    commit(&r, "B");

    let o = git_with_noma(&r, &["merge", "--no-edit", "A"]);
    assert!(!o.status.success(), "a text conflict: {}", text(&o));
    assert!(text(&o).contains("plan.noma.patches"), "{}", text(&o));
    assert!(r.read("plan.noma.patches").contains("<<<<<<<"));
    // A writer names `noma repair`, not a checkout that fails on an
    // unmerged path and would drop a side's records.
    let o = r.noma(&[
        "patch",
        "plan.noma",
        "--inplace",
        "--op",
        &body_op("b", "B"),
    ]);
    assert!(!o.status.success());
    assert!(
        text(&o).contains("noma repair \"plan.noma\""),
        "{}",
        text(&o)
    );
    assert!(!text(&o).contains("git checkout"), "{}", text(&o));

    let o = r.noma(&["repair", "plan.noma"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("conflict markers resolved"),
        "{}",
        text(&o)
    );
    let t = r.read("plan.noma.patches");
    assert!(!t.contains("<<<<<<<") && !t.contains(">>>>>>>"), "{t}");
    assert_eq!(t.lines().count(), 3, "genesis, ours, theirs rebased: {t}");
    let merged = r.read("plan.noma");
    assert!(
        merged.contains("ALPHA") && merged.contains("GAMMA"),
        "{merged}"
    );
    assert!(!merged.contains("<<<<<<<"), "{merged}");
    let o = r.noma(&["replay", "plan.noma"]);
    assert!(o.status.success(), "replays: {}", text(&o));

    // The merge commit passes the hook, and the branch reconciles.
    r.ok(&["add", "plan.noma", "plan.noma.patches"]);
    let o = git_with_noma(&r, &["commit", "-q", "--no-edit"]);
    assert!(o.status.success(), "the hook passes: {}", text(&o));
    let parents = r.ok(&["log", "--format=%P", "-1"]);
    assert_eq!(parents.split_whitespace().count(), 2, "{parents}");
    let o = r.noma(&["reconcile", "--base", "main"]);
    assert!(o.status.success(), "reconcile: {}", text(&o));
}

#[test]
fn conflicted_sidecar_lines_are_unioned_and_markers_split() {
    // The marker form, when the path is no longer unmerged (staged with
    // its markers): both sides, text outside belonging to both.
    let r = Repo::init();
    r.write("plan.noma", &doc());
    let o = r.noma(&["record", "plan.noma"]);
    assert!(o.status.success(), "{}", text(&o));
    r.commit_all("plan");
    r.write(
        "plan.noma.provenance",
        "{\"a\":1}\n<<<<<<< HEAD\n{\"b\":2}\n=======\n{\"c\":3}\n{\"a\":1}\n>>>>>>> A\n",
    );
    let genesis = r.read("plan.noma.patches");
    r.agent_patch("plan.noma", &body_op("a", "ALPHA"));
    let ours = r.read("plan.noma.patches");
    let ours_doc = r.read("plan.noma");
    r.write("plan.noma", &doc());
    r.write("plan.noma.patches", &genesis);
    r.agent_patch("plan.noma", &body_op("c", "GAMMA"));
    let theirs = r.read("plan.noma.patches");
    let conflicted = format!(
        "{genesis}<<<<<<< HEAD\n{}=======\n{}>>>>>>> A\n",
        &ours[genesis.len()..],
        &theirs[genesis.len()..]
    );
    r.write("plan.noma.patches", &conflicted);
    r.write("plan.noma", &ours_doc);
    let o = r.noma(&["repair", "plan.noma"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("from the conflict markers"),
        "{}",
        text(&o)
    );
    assert_eq!(
        r.read("plan.noma.provenance"),
        "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n"
    );
    assert!(r.read("plan.noma.patches").starts_with(&ours));
    let o = r.noma(&["replay", "plan.noma"]);
    assert!(o.status.success(), "replays: {}", text(&o));
    assert_eq!(r.read("plan.noma.patches.conflicted"), conflicted);
}

/// Two agents changed one block: repair leaves the `::conflict` block the
/// driver would, and names `noma record`, after which the hook passes.
#[test]
fn a_same_block_conflict_is_left_as_the_driver_leaves_it() {
    let r = Repo::init();
    let o = r.noma(&["init", "--no-mcp"]);
    assert!(o.status.success(), "{}", text(&o));
    // What a clone has: no merge.noma section at all.
    r.ok(&["config", "--remove-section", "merge.noma"]);
    r.write("plan.noma", &doc());
    assert!(r.noma(&["record", "plan.noma"]).status.success());
    r.commit_all("plan");
    r.ok(&["checkout", "-q", "-b", "A"]);
    r.agent_patch("plan.noma", &body_op("a", "ALPHA"));
    r.commit_all("A");
    r.ok(&["checkout", "-q", "-b", "B", "main"]);
    r.agent_patch("plan.noma", &body_op("a", "AAA"));
    r.commit_all("B");
    let o = r.git(&["merge", "--no-edit", "A"]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        r.read("plan.noma.patches").contains("<<<<<<<"),
        "{}",
        text(&o)
    );

    let o = r.noma(&["repair", "plan.noma"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("noma record \"plan.noma\""),
        "{}",
        text(&o)
    );
    let merged = r.read("plan.noma");
    assert!(merged.contains(":::conflict{"), "{merged}");
    assert!(!r.read("plan.noma.patches").contains("<<<<<<<"));
    // Kept ours in place of the conflict block, recorded, committed.
    r.write("plan.noma", &doc().replace("alpha", "AAA"));
    let o = r.noma(&["record", "plan.noma"]);
    assert!(o.status.success(), "{}", text(&o));
    r.ok(&["add", "plan.noma", "plan.noma.patches"]);
    let o = r.git(&["commit", "-q", "--no-edit"]);
    assert!(o.status.success(), "the hook passes: {}", text(&o));
    assert!(r.noma(&["replay", "plan.noma"]).status.success());
}

/// Under the pre-commit framework (which sets `PRE_COMMIT` and hides a
/// passing hook's output unless the hook is `verbose`) the warning is not
/// marked shown, so it is not lost: it repeats until the driver is
/// registered. The shipped hook and the guide's local snippet are
/// `verbose`, so it is seen.
#[test]
fn under_pre_commit_the_warning_is_marked_shown_only_when_shown() {
    let (_first, r) = team_and_clone();
    let hook = || {
        let o = r.cmd("env", &["PRE_COMMIT=1", NOMA, "hook", "pre-commit"]);
        assert!(o.status.success(), "{}", text(&o));
        text(&o)
    };
    for run in ["first", "second"] {
        let out = hook();
        assert!(out.contains(WARNING), "{run} run: {out}");
        assert!(out.contains("verbose: true"), "{out}");
    }
    let warned = r.git(&["config", "noma.driverWarned"]);
    assert!(!warned.status.success(), "{}", text(&warned));
    // Outside the framework it is shown, then marked.
    let o = r.noma(&["hook", "pre-commit"]);
    assert!(text(&o).contains("Shown once per clone"), "{}", text(&o));
    assert!(r.git(&["config", "noma.driverWarned"]).status.success());
    assert!(!text(&r.noma(&["hook", "pre-commit"])).contains(WARNING));

    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let shipped = fs::read_to_string(root.join(".pre-commit-hooks.yaml")).unwrap();
    let shipped: serde_yaml_ng::Value = serde_yaml_ng::from_str(&shipped).unwrap();
    let check = shipped
        .as_sequence()
        .unwrap()
        .iter()
        .find(|h| h["id"] == "noma-check")
        .unwrap();
    assert_eq!(check["verbose"].as_bool(), Some(true), "{check:?}");
    let guide = fs::read_to_string(root.join("docs/git-workflows.md")).unwrap();
    let local = guide.find("  - repo: local").unwrap();
    let snippet = &guide[local..local + guide[local..].find("```").unwrap()];
    let check = &snippet[snippet.find("id: noma-check\n").unwrap()..];
    let check = &check[..check.find("- id:").unwrap_or(check.len())];
    assert!(check.contains("verbose: true"), "{check}");
}

/// The `block="…"` of each conflict block in `doc`, in order.
fn conflict_blocks(doc: &str) -> Vec<String> {
    doc.split(":::conflict{")
        .skip(1)
        .map(|c| {
            let at = c.find("block=\"").expect("a block attribute") + "block=\"".len();
            c[at..].split('"').next().unwrap().to_string()
        })
        .collect()
}

/// Two branches that each started the transcript of a committed document
/// (so the transcripts share no base), one block changed on both, one
/// on each side only: `noma repair` of git's textual merge leaves
/// conflict blocks for exactly the blocks the driver leaves them for, the
/// one changed on both sides (it merged from the document's base, as the
/// driver does, not from an empty one).
#[test]
fn repair_leaves_the_conflict_blocks_the_driver_leaves() {
    let r = Repo::init();
    let o = r.noma(&["init", "--no-mcp"]);
    assert!(o.status.success(), "{}", text(&o));
    r.write("plan.noma", &doc());
    r.commit_all("plan, no transcript");
    r.ok(&["checkout", "-q", "-b", "side"]);
    r.agent_patch("plan.noma", &body_op("a", "side a"));
    r.agent_patch("plan.noma", &body_op("b", "side b"));
    r.commit_all("side");
    r.ok(&["checkout", "-q", "main"]);
    r.agent_patch("plan.noma", &body_op("a", "main a"));
    r.agent_patch("plan.noma", &body_op("c", "main c"));
    r.commit_all("main");

    let o = r.git(&["merge", "--no-edit", "side"]);
    assert!(!o.status.success(), "{}", text(&o));
    let by_driver = conflict_blocks(&r.read("plan.noma"));
    assert_eq!(by_driver, ["a"], "{}", r.read("plan.noma"));
    r.ok(&["merge", "--abort"]);

    r.ok(&["config", "--remove-section", "merge.noma"]);
    let o = r.git(&["merge", "--no-edit", "side"]);
    assert!(!o.status.success(), "{}", text(&o));
    let o = r.noma(&["repair", "plan.noma"]);
    assert!(o.status.success(), "{}", text(&o));
    let repaired = r.read("plan.noma");
    assert_eq!(conflict_blocks(&repaired), by_driver, "{repaired}");
    assert!(
        repaired.contains("side b") && repaired.contains("main c"),
        "{repaired}"
    );
}

//! GitHub decides mergeability and builds `refs/pull/N/merge` with plain
//! git, never noma's merge driver. Simulated here: a bare "remote" where
//! `main` and a pull request's branch both appended agent records to one
//! transcript, and `git merge-tree --write-tree` run there without a driver
//! (GitHub's verdict) conflicts. The action's update step (mode: update,
//! what `.github/workflows/noma-update.yml` runs) then merges main into the
//! branch with the driver and pushes, after which plain git merges the pull
//! request, the action's reconcile passes on the merge ref, and main
//! replays once merged. A conflict outside what the driver merges is left
//! alone with the commands printed; a fork gets them as a comment. `gh` is
//! a stub on PATH that answers from a file and records its arguments.
#![cfg(unix)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::action_steps::{run_action, Runner};
use crate::common::{assert_ran, run_at, text, Repo, NOMA};

/// Blocks `a` and `b` far enough apart that git's text merge of the
/// document itself is clean: only the transcript conflicts as text.
const DOC: &str = "# Plan\n\n::note{id=\"a\"}\nalpha\n::\n\n## Middle\n\nSome text.\n\nMore text.\n\n::note{id=\"b\"}\nbeta\n::\n";

fn body_op(id: &str, body: &str) -> String {
    serde_json::json!({"op": "replace_body", "id": id, "content": body}).to_string()
}

/// A developer's clone (noma set up) and the bare remote it pushes to.
struct Hub {
    dev: Repo,
    remote: tempfile::TempDir,
}

impl Hub {
    /// `main` with plan.noma (and `extra` files) pushed; then branch `pr`
    /// and `main` each get an agent's patch of a different block (and the
    /// given changes of other files), both pushed.
    fn new(extra: &[(&str, &str, &str)]) -> Hub {
        Hub::with_main_op(&body_op("b", "beta, revised"), extra)
    }

    /// [`Hub::new`] with `main_op` as main's agent patch.
    fn with_main_op(main_op: &str, extra: &[(&str, &str, &str)]) -> Hub {
        let dev = Repo::with_genesis_record(DOC);
        for (path, base, _) in extra {
            dev.write(path, &format!("{base}\n"));
            dev.commit_all("another file");
        }
        let remote = tempfile::tempdir().unwrap();
        git_in(remote.path(), &["init", "-q", "--bare", "-b", "main"]);
        let url = remote.path().to_str().unwrap();
        dev.ok(&["remote", "add", "origin", url]);
        dev.ok(&["push", "-q", "origin", "main"]);
        dev.ok(&["checkout", "-q", "-b", "pr"]);
        dev.agent_patch("plan.noma", &body_op("a", "alpha, measured"));
        for (path, _, _) in extra {
            dev.write(path, "the pull request's line\n");
        }
        dev.commit_all("pr: a measured");
        dev.ok(&["push", "-q", "origin", "pr"]);
        dev.ok(&["checkout", "-q", "main"]);
        dev.agent_patch("plan.noma", main_op);
        for (path, _, main) in extra {
            dev.write(path, &format!("{main}\n"));
        }
        dev.commit_all("main: b revised");
        dev.ok(&["push", "-q", "origin", "main"]);
        Hub { dev, remote }
    }

    fn remote(&self) -> &Path {
        self.remote.path()
    }

    /// GitHub's merge of `pr` into `main`: the tree, or the conflicts.
    fn github_merge(&self) -> Result<String, String> {
        let o = run_at(
            self.remote(),
            "git",
            &["merge-tree", "--write-tree", "main", "pr"],
        );
        match o.status.code() {
            Some(0) => Ok(String::from_utf8_lossy(&o.stdout).trim().to_string()),
            Some(1) => Err(text(&o)),
            _ => panic!("merge-tree: {}", text(&o)),
        }
    }

    fn rev(&self, rev: &str) -> String {
        let o = run_at(self.remote(), "git", &["rev-parse", rev]);
        assert_ran(&o);
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    }

    /// A clone of the remote as actions/checkout makes it (`main`, every
    /// branch as origin/*), in a fresh directory.
    fn checkout(&self, dir: &tempfile::TempDir) -> PathBuf {
        let c = dir.path().join("ci");
        let remote = self.remote().to_str().unwrap();
        self.dev.ok(&["clone", "-q", remote, c.to_str().unwrap()]);
        c
    }
}

/// git in `dir` with no configuration but the repository's own (the
/// remote has no merge driver: GitHub's view).
fn git_in(dir: &Path, args: &[&str]) -> String {
    let o = run_at(dir, "git", args);
    assert!(o.status.success(), "git {args:?}: {}", text(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A stub `gh`: `pr list` and `pr view N` answer from `prs` (the
/// tab-separated lines the step's `--jq` asks for), every call is
/// appended to the log. Returns (its directory, the log's path).
fn stub_gh(dir: &Path, prs: &str) -> (PathBuf, PathBuf) {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let (list, log) = (dir.join("prs.tsv"), dir.join("gh.log"));
    std::fs::write(&list, prs).unwrap();
    let script = format!(
        "#!/bin/sh\nprintf '%s\\n' \"gh $*\" >> '{log}'\ncase \"$1 $2\" in\n  \
         'pr list') cat '{list}' ;;\n  'pr view') grep \"^$3\t\" '{list}' ;;\nesac\n",
        log = log.display(),
        list = list.display()
    );
    let gh = bin.join("gh");
    std::fs::write(&gh, script).unwrap();
    std::fs::set_permissions(&gh, std::fs::Permissions::from_mode(0o755)).unwrap();
    (bin, log)
}

/// Runs the action's update step in `dir` for `event` with `gh` answering
/// `prs`; returns the step's output and the stub's log.
fn update(r: &Repo, dir: &Path, prs: &str, event: &[(&str, &str)]) -> (Output, String) {
    let stub = tempfile::tempdir().unwrap();
    let (bin, log) = stub_gh(stub.path(), prs);
    let mut runner = Runner::new();
    runner.path.push(bin);
    let mut env = vec![
        ("REPOSITORY", "acme/plans"),
        ("SERVER_URL", "https://github.com"),
        ("GH_TOKEN", "token"),
    ];
    env.extend_from_slice(event);
    let o = runner.step(r, dir, "update", &env);
    let summary = std::fs::read_to_string(runner.file("summary.md")).unwrap_or_default();
    let mut o = o;
    o.stdout.extend_from_slice(summary.as_bytes());
    (o, std::fs::read_to_string(log).unwrap_or_default())
}

const PUSH: [(&str, &str); 2] = [("EVENT_NAME", "push"), ("REF_NAME", "main")];

#[test]
fn the_update_step_makes_a_pr_whose_transcript_both_sides_appended_mergeable_by_plain_git() {
    let hub = Hub::new(&[]);
    let conflict = hub.github_merge().expect_err("plain git must conflict");
    assert!(conflict.contains("plan.noma.patches"), "{conflict}");
    let before = hub.rev("pr");

    let tmp = tempfile::tempdir().unwrap();
    let ci = hub.checkout(&tmp);
    let (o, gh) = update(&hub.dev, &ci, "1\tmain\tpr\tfalse\n", &PUSH);
    assert_ran(&o);
    let out = text(&o);
    assert!(out.contains("merged `main` into #1 (pr)"), "{out}");
    // The hook's check ran on the merge before the push.
    let hook = "noma pre-merge-commit: 1 document(s), 1 transcript(s) checked; 0 error(s)";
    assert!(out.contains(hook), "{out}");
    assert!(
        unstopped(&out)
            .iter()
            .all(|l| !l.contains("pre-merge-commit:")),
        "the hook's output is shown with workflow commands off: {out}"
    );
    assert!(
        gh.contains("gh pr list --repo acme/plans --base main"),
        "{gh}"
    );
    assert!(!gh.contains("pr comment"), "a push comments nothing: {gh}");
    // Pushed on top of the branch: main is now its ancestor.
    git_in(
        hub.remote(),
        &["merge-base", "--is-ancestor", &before, "pr"],
    );
    git_in(hub.remote(), &["merge-base", "--is-ancestor", "main", "pr"]);
    let tree = hub.github_merge().expect("plain git merges the updated PR");

    // refs/pull/1/merge as GitHub builds it, and the Action's check on it.
    let merge = git_in(
        hub.remote(),
        &[
            "commit-tree",
            &tree,
            "-p",
            "main",
            "-p",
            "pr",
            "-m",
            "Merge #1",
        ],
    );
    let merge = merge.trim();
    git_in(hub.remote(), &["update-ref", "refs/pull/1/merge", merge]);
    let check_tmp = tempfile::tempdir().unwrap();
    let check = hub.checkout(&check_tmp);
    git_in(&check, &["fetch", "-q", "origin", "refs/pull/1/merge"]);
    git_in(&check, &["checkout", "-q", "--detach", "FETCH_HEAD"]);
    let (runner, rec, verdict) = run_action(&hub.dev, &check, "", "error");
    assert_ran(&rec);
    assert_ran(&verdict);
    let summary = std::fs::read_to_string(runner.file("summary.md")).unwrap();
    assert!(summary.contains("all checks pass"), "{summary}");

    // Nothing left to do: a second run, asked for, pushes nothing and says so.
    let tip = hub.rev("pr");
    let ask = [
        ("EVENT_NAME", "issue_comment"),
        ("PR_NUMBER", "1"),
        ("COMMENT", "/noma update"),
        ("ASSOCIATION", "COLLABORATOR"),
    ];
    let (o, gh) = update(&hub.dev, &ci, "1\tmain\tpr\tfalse\n", &ask);
    assert_ran(&o);
    assert_eq!(hub.rev("pr"), tip, "{}", text(&o));
    assert!(
        gh.contains(
            "gh pr comment 1 --repo acme/plans --body noma: #1 (pr) already contains `main`"
        ),
        "{gh}"
    );

    // The merge button: main becomes the merge, and replays.
    git_in(hub.remote(), &["update-ref", "refs/heads/main", merge]);
    let after_tmp = tempfile::tempdir().unwrap();
    let main = hub.checkout(&after_tmp);
    let doc = std::fs::read_to_string(main.join("plan.noma")).unwrap();
    assert!(doc.contains("alpha, measured") && doc.contains("beta, revised"));
    let o = run_at(&main, NOMA, &["replay", "plan.noma"]);
    assert_ran(&o);
}

#[test]
fn a_conflict_outside_what_the_driver_merges_is_left_alone_with_the_commands() {
    let hub = Hub::new(&[("notes.txt", "one line", "main's line")]);
    assert!(hub.github_merge().is_err());
    let before = hub.rev("pr");
    let tmp = tempfile::tempdir().unwrap();
    let ci = hub.checkout(&tmp);
    let (o, gh) = update(&hub.dev, &ci, "3\tmain\tpr\tfalse\n", &PUSH);
    assert_ran(&o);
    assert_eq!(hub.rev("pr"), before, "nothing pushed: {}", text(&o));
    let out = text(&o);
    for want in [
        "notes.txt",
        "git checkout pr",
        "noma hooks install --driver-only",
        "git merge origin/main",
        "git push origin pr",
    ] {
        assert!(out.contains(want), "{want}: {out}");
    }
    assert!(!gh.contains("pr comment"), "{gh}");
    // The checkout is left as it was: no merge in progress, no worktree.
    let o = run_at(&ci, "git", &["worktree", "list"]);
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 1);
}

#[test]
fn a_same_block_conflict_is_left_to_a_person() {
    // Both sides rewrote block a: the driver leaves a ::conflict block.
    let hub = Hub::with_main_op(&body_op("a", "alpha, main's way"), &[]);
    assert!(hub.github_merge().is_err());
    let before = hub.rev("pr");
    let tmp = tempfile::tempdir().unwrap();
    let ci = hub.checkout(&tmp);
    let (o, _) = update(&hub.dev, &ci, "4\tmain\tpr\tfalse\n", &PUSH);
    assert_ran(&o);
    assert_eq!(hub.rev("pr"), before, "nothing pushed: {}", text(&o));
    let out = text(&o);
    assert!(out.contains("cannot decide:\n  plan.noma\n"), "{out}");
    assert!(out.contains("git merge origin/main"), "{out}");
}

#[test]
fn a_fork_gets_the_commands_as_a_comment_and_only_members_may_ask() {
    let r = Repo::init();
    r.write("README.md", "hello\n");
    r.commit_all("start");
    let fork = "7\tmain\tfeature\ttrue\n";
    let asked = |who: &str, body: &str| {
        update(
            &r,
            r.path(),
            fork,
            &[
                ("EVENT_NAME", "issue_comment"),
                ("PR_NUMBER", "7"),
                ("COMMENT", body),
                ("ASSOCIATION", who),
            ],
        )
    };
    let (o, gh) = asked("MEMBER", "/noma update\r\n");
    assert_ran(&o);
    assert!(gh.contains("gh pr view 7 --repo acme/plans"), "{gh}");
    let comment = gh
        .split("gh pr comment 7 --repo acme/plans --body ")
        .nth(1)
        .unwrap_or_else(|| panic!("no comment: {gh}"));
    for want in [
        "from a fork",
        "`feature`",
        "git fetch https://github.com/acme/plans.git main",
        "noma hooks install --driver-only",
        "git merge FETCH_HEAD",
        "git push",
    ] {
        assert!(comment.contains(want), "{want}: {comment}");
    }

    // Someone without write access, or another comment: nothing happens.
    for (who, body) in [("NONE", "/noma update"), ("OWNER", "looks good")] {
        let (o, gh) = asked(who, body);
        assert_ran(&o);
        assert!(gh.is_empty(), "{who} {body}: {gh}");
        assert!(text(&o).contains("nothing"), "{}", text(&o));
    }
}

/// The lines of a step's log that the runner reads with workflow commands
/// on (outside every `::stop-commands::TOKEN` … `::TOKEN::` span).
fn unstopped(log: &str) -> Vec<&str> {
    let mut token: Option<String> = None;
    let mut out = Vec::new();
    for line in log.lines() {
        match &token {
            Some(t) if line == format!("::{t}::") => token = None,
            Some(_) => {}
            None => match line.strip_prefix("::stop-commands::") {
                Some(t) => token = Some(t.to_string()),
                None => out.push(line),
            },
        }
    }
    assert!(token.is_none(), "commands stay off to the end: {log}");
    out
}

/// A file name (or a record's actor name) with a newline, a `::` workflow
/// command and terminal controls reaches the update step's log with the
/// controls shown as `?` and inside a span with workflow commands off.
#[test]
fn untrusted_text_reaches_the_log_escaped_with_workflow_commands_off() {
    let name = "notes\n::warning::forged\u{1b}[8m\u{202e}.txt";
    let hub = Hub::new(&[(name, "one line", "main's line")]);
    let before = hub.rev("pr");
    let tmp = tempfile::tempdir().unwrap();
    let ci = hub.checkout(&tmp);
    let (o, _) = update(&hub.dev, &ci, "3\tmain\tpr\tfalse\n", &PUSH);
    assert_ran(&o);
    assert_eq!(hub.rev("pr"), before, "nothing pushed: {}", text(&o));
    let out = text(&o);
    assert!(
        out.contains("::warning::forged"),
        "git names the file: {out}"
    );
    assert!(
        !out.contains('\u{1b}') && !out.contains('\u{202e}'),
        "controls reach the log: {out:?}"
    );
    assert!(out.contains("forged?[8m?"), "{out:?}");
    // Outside the span the file is named only as git quotes it.
    for line in unstopped(&out) {
        assert!(
            !line.trim_start().starts_with("::") || !line.contains("forged"),
            "read as a command: {line:?}\n{out}"
        );
    }
    assert!(out.contains("\"notes\\n::warning::forged\\033[8m"), "{out}");
}

/// The workflow (and the README's copy) checks the commenter's
/// association in the job's `if:`, so nobody else's comment starts a job,
/// and queues runs per pull request in the job, so no run (a skipped one
/// included) replaces another pull request's pending update.
#[test]
fn the_update_workflow_checks_members_in_the_job_and_queues_per_pull_request() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let file = std::fs::read_to_string(root.join(".github/workflows/noma-update.yml")).unwrap();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let start = readme.find("# .github/workflows/noma-update.yml").unwrap();
    let copy = &readme[start..];
    let copy = &copy[..copy.find("```").unwrap()];
    for (name, text) in [("workflow", file.as_str()), ("README", copy)] {
        let w: serde_yaml_ng::Value = serde_yaml_ng::from_str(text).unwrap();
        assert!(
            w.get("concurrency").is_none(),
            "{name}: a workflow-wide group lets any comment's run replace a pending update"
        );
        let job = &w["jobs"]["update"];
        let cond = job["if"].as_str().unwrap();
        for want in [
            "github.event.comment.author_association",
            "\"OWNER\"",
            "\"MEMBER\"",
            "\"COLLABORATOR\"",
            "startsWith(github.event.comment.body, '/noma update')",
            "github.event_name == 'push'",
        ] {
            assert!(cond.contains(want), "{name}: {want} in {cond}");
        }
        let group = job["concurrency"]["group"].as_str().unwrap();
        assert!(
            group.contains("${{ github.event.issue.number"),
            "{name}: {group}"
        );
        assert_eq!(
            job["concurrency"]["cancel-in-progress"].as_bool(),
            Some(false),
            "{name}"
        );
    }
}

#[test]
fn a_branch_older_than_a_signer_main_added_is_updated_and_pushed() {
    use crate::merge_main::{add_signer, body_op as op, signed_patch, signed_repo};
    let (dev, alice) = signed_repo();
    let remote = tempfile::tempdir().unwrap();
    git_in(remote.path(), &["init", "-q", "--bare", "-b", "main"]);
    dev.ok(&["remote", "add", "origin", remote.path().to_str().unwrap()]);
    dev.ok(&["push", "-q", "origin", "main"]);
    dev.ok(&["checkout", "-q", "-b", "pr"]);
    signed_patch(&dev, &alice, "alice", &op("a", "alpha, measured"));
    dev.commit_all("pr: a measured");
    dev.ok(&["push", "-q", "origin", "pr"]);
    // Main moves on: carol joins and signs a record of her own.
    dev.ok(&["checkout", "-q", "main"]);
    let carol = add_signer(&dev, "carol");
    signed_patch(&dev, &carol, "carol", &op("b", "beta, by carol"));
    dev.commit_all("carol: b");
    dev.ok(&["push", "-q", "origin", "main"]);
    let hub = Hub { dev, remote };
    assert!(hub.github_merge().is_err(), "plain git must conflict");
    let before = hub.rev("pr");

    let tmp = tempfile::tempdir().unwrap();
    let ci = hub.checkout(&tmp);
    let (o, _) = update(&hub.dev, &ci, "5\tmain\tpr\tfalse\n", &PUSH);
    assert_ran(&o);
    let out = text(&o);
    assert!(out.contains("merged `main` into #5 (pr)"), "{out}");
    assert!(!out.contains("signer-not-allowed"), "{out}");
    git_in(
        hub.remote(),
        &["merge-base", "--is-ancestor", &before, "pr"],
    );
    git_in(hub.remote(), &["merge-base", "--is-ancestor", "main", "pr"]);
    hub.github_merge().expect("plain git merges the updated PR");

    // The PR check of the updated branch, trusting main's file.
    let check_tmp = tempfile::tempdir().unwrap();
    let check = hub.checkout(&check_tmp);
    git_in(&check, &["checkout", "-q", "pr"]);
    let o = run_at(&check, NOMA, &["reconcile", "--base", "origin/main"]);
    assert_ran(&o);
}

/// A merge queue: pr1 and pr2 both appended to one transcript, and GitHub
/// built pr1's entry `main+pr1` with plain git. Its entry for pr2,
/// `(main+pr1)+pr2`, conflicts. The update step on the `merge_group`
/// event merges the entry into pr2 with the driver and pushes (pr1, which
/// plain git merges with it, is left alone); then plain git builds pr2's entry cleanly,
/// the PR check passes on it against main, and it replays.
#[test]
fn a_merge_queue_entry_is_clean_after_the_workflow_runs() {
    let dev = Repo::with_genesis_record(DOC);
    let remote = tempfile::tempdir().unwrap();
    git_in(remote.path(), &["init", "-q", "--bare", "-b", "main"]);
    dev.ok(&["remote", "add", "origin", remote.path().to_str().unwrap()]);
    dev.ok(&["push", "-q", "origin", "main"]);
    for (pr, id) in [("pr1", "a"), ("pr2", "b")] {
        dev.ok(&["checkout", "-q", "-b", pr, "main"]);
        dev.agent_patch("plan.noma", &body_op(id, &format!("{id}, by {pr}")));
        dev.commit_all(pr);
        dev.ok(&["push", "-q", "origin", pr]);
    }
    let hub = Hub { dev, remote };
    // The queue's first entry, as GitHub builds it with plain git.
    let tree = git_in(hub.remote(), &["merge-tree", "--write-tree", "main", "pr1"]);
    let entry = git_in(
        hub.remote(),
        &[
            "commit-tree",
            tree.trim(),
            "-p",
            "main",
            "-p",
            "pr1",
            "-m",
            "Merge #1",
        ],
    );
    let pr1 = hub.rev("pr1");
    let queue = format!("gh-readonly-queue/main/pr-1-{pr1}");
    let queue_ref = format!("refs/heads/{queue}");
    git_in(hub.remote(), &["update-ref", &queue_ref, entry.trim()]);
    let entry2 = |hub: &Hub| {
        run_at(
            hub.remote(),
            "git",
            &["merge-tree", "--write-tree", &queue, "pr2"],
        )
    };
    assert_eq!(
        entry2(&hub).status.code(),
        Some(1),
        "plain git must conflict"
    );

    let tmp = tempfile::tempdir().unwrap();
    let ci = hub.checkout(&tmp);
    let event = [
        ("EVENT_NAME", "merge_group"),
        ("QUEUE_HEAD", queue_ref.as_str()),
        ("QUEUE_BASE", "refs/heads/main"),
    ];
    let prs = "1\tmain\tpr1\tfalse\n2\tmain\tpr2\tfalse\n";
    let (o, gh) = update(&hub.dev, &ci, prs, &event);
    assert_ran(&o);
    let out = text(&o);
    assert!(
        out.contains(&format!("merged `{queue}` into #2 (pr2)")),
        "{out}"
    );
    assert!(out.contains("#1 (pr1) merges with"), "{out}");
    assert_eq!(hub.rev("pr1"), pr1, "the queued PR is left alone");
    assert!(
        gh.contains("gh pr list --repo acme/plans --base main"),
        "{gh}"
    );
    let o = entry2(&hub);
    assert_ran(&o);
    let tree = String::from_utf8_lossy(&o.stdout).trim().to_string();
    let entry = git_in(
        hub.remote(),
        &[
            "commit-tree",
            &tree,
            "-p",
            &queue,
            "-p",
            "pr2",
            "-m",
            "Merge #2",
        ],
    );
    git_in(hub.remote(), &["update-ref", "refs/heads/q2", entry.trim()]);
    let check_tmp = tempfile::tempdir().unwrap();
    let check = hub.checkout(&check_tmp);
    git_in(&check, &["checkout", "-q", "q2"]);
    // The action's check on the entry: `merge_group` has no
    // `github.base_ref`; the base is the queue's.
    let runner = Runner::new();
    let env = [
        ("INPUT_BASE", ""),
        ("BASE_REF", ""),
        ("QUEUE_BASE", "refs/heads/main"),
        ("INPUT_FORMAT", "github"),
        ("INPUT_PATHS", ""),
    ];
    assert_ran(&runner.step(&hub.dev, &check, "reconcile", &env));
    assert_eq!(runner.outputs()["status"], "0");
    let summary = std::fs::read_to_string(runner.file("summary.md")).unwrap();
    assert!(summary.contains("all checks pass"), "{summary}");
    assert_ran(&run_at(&check, NOMA, &["replay", "plan.noma"]));
    let doc = std::fs::read_to_string(check.join("plan.noma")).unwrap();
    assert!(
        doc.contains("a, by pr1") && doc.contains("b, by pr2"),
        "{doc}"
    );
}

/// "Rebase and merge" replays the pull request's commits onto main with
/// plain git: after the update step, the pull request merges (merge
/// commit, squash) but does not rebase. Where the repository allows
/// rebase merging, the Action's check fails naming the methods that work;
/// where it does not, it says nothing.
#[test]
fn rebase_and_merge_is_refused_naming_merge_or_squash() {
    let hub = Hub::new(&[]);
    let tmp = tempfile::tempdir().unwrap();
    let ci = hub.checkout(&tmp);
    let (o, _) = update(&hub.dev, &ci, "1\tmain\tpr\tfalse\n", &PUSH);
    assert_ran(&o);
    let tree = hub.github_merge().expect("plain git merges the updated PR");
    let merge = git_in(
        hub.remote(),
        &[
            "commit-tree",
            &tree,
            "-p",
            "main",
            "-p",
            "pr",
            "-m",
            "Merge #1",
        ],
    );
    git_in(
        hub.remote(),
        &["update-ref", "refs/pull/1/merge", merge.trim()],
    );
    let check_tmp = tempfile::tempdir().unwrap();
    let check = hub.checkout(&check_tmp);
    git_in(&check, &["fetch", "-q", "origin", "refs/pull/1/merge"]);
    git_in(&check, &["checkout", "-q", "--detach", "FETCH_HEAD"]);
    for allowed in [true, false] {
        // `gh api repos/OWNER/NAME --jq .allow_rebase_merge`, answered.
        let stub = tempfile::tempdir().unwrap();
        let gh = stub.path().join("gh");
        std::fs::write(&gh, format!("#!/bin/sh\necho {allowed}\n")).unwrap();
        std::fs::set_permissions(&gh, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut runner = Runner::new();
        runner.path.push(stub.path().to_path_buf());
        let env = [
            ("REPOSITORY", "acme/plans"),
            ("GH_TOKEN", "token"),
            ("BASE_REF", "main"),
        ];
        let o = runner.step(&hub.dev, &check, "merge-method", &env);
        let out = text(&o);
        if allowed {
            assert!(!o.status.success(), "{out}");
            assert!(
                out.contains("::error title=noma::\"Rebase and merge\""),
                "{out}"
            );
            assert!(
                out.contains("\"Create a merge commit\" or \"Squash and merge\""),
                "{out}"
            );
        } else {
            assert_ran(&o);
            assert!(!out.contains("::error"), "{out}");
        }
        // The check's scratch worktree is gone.
        assert!(!git_in(&check, &["worktree", "list"]).contains("noma-rebase-check"));
    }
    // Plain git indeed cannot rebase it: what GitHub would meet.
    let o = run_at(&check, "git", &["rebase", "origin/main", "origin/pr"]);
    assert!(!o.status.success(), "{}", text(&o));
}

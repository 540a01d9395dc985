//! Git-aware `noma replay`: the base found by sha256 in the document's
//! history (the adoption case: a transcript started after the document was
//! first committed), and `noma replay --rev REV` reading only committed
//! blobs. Real `git` CLI in temp repositories.

use serde_json::Value;

use crate::common::{run_at, text, Repo, NOMA};

const DOC: &str =
    "# Plan\n\n::claim{id=\"speed\"}\nFast.\n::\n\n::claim{id=\"cost\"}\nCheap.\n::\n";

/// An agent's `replace_body` of block `id` in `plan.noma`.
fn patch(r: &Repo, id: &str, body: &str) {
    let op = serde_json::json!({"op": "replace_body", "id": id, "content": body}).to_string();
    r.agent_patch("plan.noma", &op);
}

/// `plan.noma` committed twice by hand, then a transcript started by
/// `noma patch --inplace` and committed: the transcript's first
/// `pre_sha256` is the second committed version, not the document now.
fn adopted() -> Repo {
    let r = Repo::init();
    r.write("plan.noma", DOC);
    r.commit_all("plan");
    r.write("plan.noma", &DOC.replace("Cheap.", "Cheap enough."));
    r.commit_all("hand edit");
    patch(&r, "speed", "Faster.");
    r.commit_all("agent 1");
    r
}

fn json(o: &std::process::Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(o)))
}

#[test]
fn adoption_case_replays_without_base() {
    let r = adopted();
    let o = r.noma(&["replay", "plan.noma"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = text(&o);
    assert!(out.contains("ok: replay reproduces the document"), "{out}");
    assert!(out.contains("base: sha256"), "{out}");

    let o = r.noma(&["replay", "plan.noma", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v = json(&o);
    assert_eq!(v["replay"]["ok"], true, "{v}");
    assert_eq!(v["replay"]["applied"], 1, "{v}");
    assert_eq!(v["base_lookup"]["found"], true, "{v}");
    let hand_edit = DOC.replace("Cheap.", "Cheap enough.");
    assert_eq!(
        v["base_lookup"]["sha256"],
        noma_core::doc::hash::sha256_hex(hand_edit.as_bytes()),
        "{v}"
    );

    // Another record, uncommitted: the base still comes from history and
    // the working-tree document is checked.
    patch(&r, "cost", "Cheaper.");
    let o = r.noma(&["replay", "plan.noma"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    // A hand edit after the last record diverges (exit 1), base found.
    r.write(
        "plan.noma",
        &r.read("plan.noma").replace("Faster.", "Slow."),
    );
    let o = r.noma(&["replay", "plan.noma"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("DIVERGED"), "{}", text(&o));
}

#[test]
fn a_new_transcript_finds_its_base_at_head_and_base_wins() {
    let r = Repo::init();
    r.write("plan.noma", DOC);
    r.commit_all("plan");
    patch(&r, "speed", "Faster.");
    // The transcript is new and so is its first state: git finds it at HEAD.
    let o = r.noma(&["replay", "plan.noma", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(json(&o)["base_lookup"]["found"], true);
    // `--base` still wins and is not looked up.
    std::fs::write(r.path().join("base.noma"), DOC).unwrap();
    let o = r.noma(&[
        "replay",
        "plan.noma",
        "--base",
        "base.noma",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v = json(&o);
    assert!(v.get("base_lookup").is_none(), "{v}");
    assert_eq!(v["replay"]["base"], "given", "{v}");
}

#[test]
fn without_git_or_history_the_error_names_base() {
    // Outside any repository: as before, with a hint naming --base.
    let r = adopted();
    let outside = tempfile::tempdir().unwrap();
    for f in ["plan.noma", "plan.noma.patches"] {
        std::fs::copy(r.path().join(f), outside.path().join(f)).unwrap();
    }
    let o = run_at(outside.path(), NOMA, &["replay", "plan.noma"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let out = text(&o);
    assert!(out.contains("no base"), "{out}");
    assert!(out.contains("not in a git repository"), "{out}");
    assert!(out.contains("--base PATH"), "{out}");

    // In a repository whose history lacks that version.
    let fresh = Repo::init();
    for f in ["plan.noma", "plan.noma.patches"] {
        std::fs::copy(r.path().join(f), fresh.path().join(f)).unwrap();
    }
    fresh.commit_all("copied");
    let o = fresh.noma(&["replay", "plan.noma", "--format", "json"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let v = json(&o);
    assert_eq!(v["base_lookup"]["found"], false, "{v}");
    assert_eq!(v["replay"]["ok"], false, "{v}");
}

#[test]
fn rev_replays_committed_versions_only() {
    let r = adopted();
    patch(&r, "cost", "Cheaper.");
    r.commit_all("agent 2");
    patch(&r, "speed", "Fastest.");
    r.commit_all("agent 3");
    // The working tree is broken on purpose: --rev must not read it.
    r.write("plan.noma", "# scribbled over\n");
    r.write("plan.noma.patches", "not a transcript\n");
    let o = r.noma(&["replay", "plan.noma"]);
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));

    for (rev, applied) in [("HEAD", 3), ("HEAD~1", 2), ("HEAD~2", 1)] {
        let o = r.noma(&["replay", "--rev", rev, "plan.noma", "--format", "json"]);
        assert_eq!(o.status.code(), Some(0), "{rev}: {}", text(&o));
        let v = json(&o);
        assert_eq!(v["replay"]["ok"], true, "{rev}: {v}");
        assert_eq!(v["replay"]["applied"], applied, "{rev}: {v}");
        assert_eq!(v["rev"]["document"], format!("{rev}:plan.noma"), "{v}");
        assert_eq!(v["rev"]["transcript"], format!("{rev}:plan.noma.patches"));
        assert_eq!(v["base_lookup"]["found"], true, "{v}");
    }
    let o = r.noma(&["replay", "--rev", "HEAD~1", "plan.noma"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("ok: replay reproduces"), "{}", text(&o));

    // From a subdirectory, root-relative and ./-relative paths both work.
    std::fs::create_dir_all(r.path().join("sub")).unwrap();
    for path in ["../plan.noma", "plan.noma"] {
        let o = std::process::Command::new(NOMA)
            .args(["replay", "--rev", "HEAD", path])
            .current_dir(r.path().join("sub"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{path}: {}", text(&o));
    }
}

#[test]
fn rev_detects_a_committed_divergence() {
    let r = adopted();
    // A hand edit committed without a record (hooks are not installed).
    r.write(
        "plan.noma",
        &r.read("plan.noma").replace("Faster.", "Slow."),
    );
    r.commit_all("unrecorded");
    let o = r.noma(&["replay", "--rev", "HEAD", "plan.noma"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("DIVERGED"), "{}", text(&o));
    let o = r.noma(&["replay", "--rev", "HEAD~1", "plan.noma"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

#[test]
fn rev_errors_are_usage_errors() {
    let r = adopted();
    let cases: [(&[&str], &str); 4] = [
        (
            &["replay", "--rev", "nosuchrev", "plan.noma"],
            "not a revision",
        ),
        (
            &["replay", "--rev", "HEAD", "other.noma"],
            "HEAD:other.noma: no such file",
        ),
        // The first commit has the document but no transcript yet.
        (
            &["replay", "--rev", "HEAD~2", "plan.noma"],
            "HEAD~2:plan.noma.patches: no transcript",
        ),
        (
            &[
                "replay",
                "--rev",
                "HEAD",
                "plan.noma",
                "--base",
                "plan.noma",
            ],
            "cannot be used with",
        ),
    ];
    for (args, needle) in cases {
        let o = r.noma(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(needle), "{args:?}: {}", text(&o));
    }
    let outside = tempfile::tempdir().unwrap();
    let o = run_at(
        outside.path(),
        NOMA,
        &["replay", "--rev", "HEAD", "plan.noma"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("not in a git repository"), "{}", text(&o));
}

/// `--rev` reads the transcript a line at a time from its blob:
/// the report is the same whether git's blob is read whole or streamed
/// through `git cat-file`, for a history that replays, one with a record
/// changed and one with an op_id reused (replay seeks back in the stream
/// to name the first record with that id).
#[test]
fn rev_reports_the_same_read_whole_or_streamed() {
    fn run(r: &Repo, stream: bool) -> Value {
        let env = if stream {
            "NOMA_STREAM_BLOBS_OVER=0 "
        } else {
            ""
        };
        let mut v = json(&r.sh(&format!(
            "{env}noma replay --rev HEAD plan.noma --format json"
        )));
        v["replay"]["elapsed_ms"] = Value::Null;
        v
    }
    for broken in ["", "op", "op_id"] {
        let r = adopted();
        for k in 0..4 {
            patch(
                &r,
                if k % 2 == 0 { "cost" } else { "speed" },
                &format!("v{k}"),
            );
        }
        let t = r.read("plan.noma.patches");
        let lines: Vec<&str> = t.lines().collect();
        let id = |l: &str| json_line(l)["op_id"].as_str().unwrap().to_string();
        match broken {
            "op" => r.write("plan.noma.patches", &t.replacen("\"v1\"", "\"vX\"", 1)),
            "op_id" => r.write(
                "plan.noma.patches",
                &t.replace(&id(lines[3]), &id(lines[1])),
            ),
            _ => {}
        }
        r.commit_all("more");
        let (whole, streamed) = (run(&r, false), run(&r, true));
        assert_eq!(whole, streamed, "{broken}");
        assert_eq!(
            whole["replay"]["ok"],
            broken.is_empty(),
            "{broken}: {whole:#}"
        );
        if broken == "op_id" {
            // The exact check behind the fingerprint names the first line.
            let d = whole["replay"]["divergence"].to_string();
            assert!(d.contains("repeats line 2"), "{d}");
        }
    }
}

fn json_line(l: &str) -> Value {
    serde_json::from_str(l).unwrap()
}

/// An agent's first patch of a committed document, then `git stash`: the
/// document is back at its committed state and the untracked transcript
/// stays. `noma replay` does not advise `noma record` (which would record
/// the undo as a person's edit) but names the undone record's line and
/// `git stash pop`; after that it replays.
#[test]
fn stash_after_a_first_patch_gets_a_correct_message() {
    let r = Repo::init();
    crate::common::assert_ran(&r.noma(&["init"]));
    r.write("plan.noma", "# Plan\n\n::note{id=\"a\"}\nalpha\n::\n");
    r.commit_all("plan");
    r.agent_patch(
        "plan.noma",
        r#"{"op":"replace_body","id":"a","content":"ALPHA"}"#,
    );
    r.ok(&["stash", "-q"]);
    let o = r.noma(&["replay", "plan.noma"]);
    assert!(!o.status.success());
    let out = text(&o);
    assert!(!out.contains("noma record"), "{out}");
    assert!(out.contains("line 1's record"), "{out}");
    assert!(out.contains("git stash pop"), "{out}");
    r.ok(&["stash", "pop", "-q"]);
    crate::common::assert_ran(&r.noma(&["replay", "plan.noma"]));
}

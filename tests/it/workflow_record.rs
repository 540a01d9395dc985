//! `noma record` makes every hand edit committable —
//! v1.0 ops where they reach, the extension op `x-noma/replace_lines` for
//! prose, lists, cards in an id-less grid and frontmatter — and one
//! command (`noma record`, a genesis record) starts the transcript of a new
//! or existing document under `require_transcript`. Real `git`, hooks
//! installed, every commit through the hooks.

use crate::common::{fix_of, text, Repo};

const DOC: &str = "---\ntitle: Plan\nowner: ana\n---\n# Plan\n\nThe plan has one sentence.\n\n- first item\n- second item\n\n## Overview {id=\"ov\"}\n\nOverview prose.\n\n::grid\n:::card{title=\"One\"}\nCard one.\n:::\n:::card{title=\"Two\"}\nCard two.\n:::\n::\n\n::note{id=\"n1\"}\nA note.\n::\n";

/// Hooks installed; `plan.noma` committed with a transcript that one
/// agent patch started (so its base is a committed version).
fn setup(policy: &str) -> Repo {
    let r = Repo::init();
    let o = r.noma(&["hooks", "install"]);
    assert!(o.status.success(), "{}", text(&o));
    r.write(".noma/config.yml", policy);
    r.write("plan.noma", DOC);
    r.commit_all("base");
    let op = r#"{"op":"replace_body","id":"n1","content":"An agent's note."}"#;
    let o = r.noma(&["patch", "plan.noma", "--inplace", "--op", op]);
    assert!(o.status.success(), "{}", text(&o));
    r.commit_all("agent patch");
    r
}

/// The ops the last `noma record --format json` wrote.
fn record(r: &Repo, doc: &str) -> Vec<serde_json::Value> {
    let o = r.noma(&["record", doc, "--format", "json"]);
    assert!(o.status.success(), "record: {}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["ops"].as_array().cloned().unwrap_or_default()
}

fn names(ops: &[serde_json::Value]) -> Vec<String> {
    ops.iter()
        .map(|o| o["op"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn every_kind_of_hand_edit_is_recorded_and_committable() {
    let r = setup("");
    let edits: [(&str, &str, &str); 7] = [
        ("heading rename", "# Plan\n", "# The Plan\n"),
        (
            "heading with its explicit id",
            "## Overview {id=\"ov\"}",
            "## Summary {id=\"ov\"}",
        ),
        (
            "prose sentence",
            "The plan has one sentence.",
            "The plan has a better sentence.",
        ),
        (
            "new paragraph",
            "Overview prose.\n",
            "Overview prose.\n\nA paragraph a human added.\n",
        ),
        (
            "new list item",
            "- second item\n",
            "- second item\n- third item\n",
        ),
        ("card in an id-less grid", "Card two.", "Card two, edited."),
        ("frontmatter field", "owner: ana", "owner: bo"),
    ];
    for (what, from, to) in edits {
        let before = r.read("plan.noma");
        assert!(before.contains(from), "{what}: fixture lacks {from:?}");
        r.write("plan.noma", &before.replacen(from, to, 1));
        // Unrecorded, the hook refuses and names the command that works.
        r.ok(&["add", "-A"]);
        let o = r.git(&["commit", "-q", "-m", what]);
        assert!(!o.status.success(), "{what}: unrecorded edit committed");
        assert!(text(&o).contains("noma record"), "{what}: {}", text(&o));
        let ops = record(&r, "plan.noma");
        assert!(!ops.is_empty(), "{what}: nothing recorded");
        if what == "heading with its explicit id" {
            assert_eq!(names(&ops), ["update_heading"], "{what}");
        }
        r.commit_all(what);
    }
    // The whole transcript replays from the first committed content.
    r.write(".git/base.noma", DOC);
    let o = r.noma(&["replay", "plan.noma", "--base", ".git/base.noma"]);
    assert!(o.status.success(), "replay: {}", text(&o));
    // Hand edits are attributed to a human.
    let t = r.read("plan.noma.patches");
    let humans = t
        .lines()
        .filter(|l| l.contains("\"kind\":\"human\""))
        .count();
    assert!(humans >= 7, "{t}");
    assert!(t.contains("x-noma/replace_lines"));
}

#[test]
fn text_edits_can_be_forbidden_by_policy() {
    let r = setup("record_text_edits: false\n");
    let doc = r.read("plan.noma");
    r.write("plan.noma", &doc.replace("Overview prose.", "Other prose."));
    let o = r.noma(&["record", "plan.noma"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("record_text_edits: false"),
        "{}",
        text(&o)
    );
    // A block edit is still recorded with v1.0 ops.
    r.write(
        "plan.noma",
        &doc.replace("An agent's note.", "A human's note."),
    );
    assert_eq!(names(&record(&r, "plan.noma")), ["replace_body"]);
    r.commit_all("block edit");
    // A transcript carrying the extension op (written before the policy
    // changed, or by hand) is refused by the hook.
    r.write(".noma/config.yml", "");
    r.commit_all("allow text edits");
    let doc = r.read("plan.noma");
    r.write("plan.noma", &doc.replace("Overview prose.", "Other prose."));
    record(&r, "plan.noma");
    r.write(".noma/config.yml", "record_text_edits: false\n");
    r.ok(&["add", "-A"]);
    let o = r.git(&["commit", "-q", "-m", "sneak"]);
    assert!(!o.status.success());
    assert!(text(&o).contains("transcript-extension-op"), "{}", text(&o));
}

#[test]
fn new_and_existing_documents_start_a_transcript_under_require_transcript() {
    let r = setup("");
    r.write(
        ".noma/config.yml",
        "require_transcript: [\"**/*.noma\"]\nstrict: true\n",
    );
    r.commit_all("policy");
    // An existing document without a transcript (the policy came later).
    r.write("old.noma", "# Old\n\nOld prose.\n");
    let o = r.git(&["add", "-A"]);
    assert!(o.status.success());
    let o = r.git(&["commit", "-q", "--no-verify", "-m", "before the policy"]);
    assert!(o.status.success(), "{}", text(&o));
    // A new document: refused, and the hint names the one command.
    r.write("new.noma", "# New\n\n::note{id=\"x\"}\nfirst\n::\n");
    r.ok(&["add", "-A"]);
    let o = r.git(&["commit", "-q", "-m", "new doc"]);
    assert!(!o.status.success(), "a new document without transcript");
    assert!(
        text(&o).contains("noma record \"new.noma\""),
        "{}",
        text(&o)
    );
    let o = r.noma(&["record", "new.noma"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("genesis"), "{}", text(&o));
    r.commit_all("new doc with genesis");
    // Agents patch it, even under strict: the base (empty) is known.
    let op = r#"{"op":"replace_body","id":"x","content":"second"}"#;
    let o = r.noma(&["patch", "new.noma", "--inplace", "--op", op]);
    assert!(o.status.success(), "{}", text(&o));
    r.commit_all("agent edits the new doc");
    // The existing document, touched now, needs its transcript too.
    r.write("old.noma", "# Old\n\nNewer prose.\n");
    r.ok(&["add", "-A"]);
    let o = r.git(&["commit", "-q", "-m", "old doc edit"]);
    assert!(!o.status.success());
    let o = r.noma(&["record", "old.noma"]);
    assert!(o.status.success(), "{}", text(&o));
    r.commit_all("old doc adopted");
    // Both replay from their transcripts alone: no --base.
    for doc in ["new.noma", "old.noma"] {
        let o = r.noma(&["replay", doc]);
        assert!(o.status.success(), "replay {doc}: {}", text(&o));
    }
    // Recording again with nothing changed is a no-op.
    let o = r.noma(&["record", "new.noma"]);
    assert!(text(&o).contains("nothing to record"), "{}", text(&o));
}

/// An agent's first patch of a document no commit holds opens its
/// transcript with a genesis record (decision `genesis-on-first-patch`;
/// it used to start at a state
/// no clone could find, which `strict` refused): the commit passes the
/// hook, and the transcript replays from its own content.
#[test]
fn an_agents_first_patch_of_a_new_document_starts_with_a_genesis_record() {
    let r = setup("strict: true\n");
    r.write("new.noma", "# New\n\n::note{id=\"x\"}\nfirst\n::\n");
    let op = r#"{"op":"replace_body","id":"x","content":"second"}"#;
    let o = r.noma(&["patch", "new.noma", "--inplace", "--op", op]);
    assert!(o.status.success(), "{}", text(&o));
    let t = r.read("new.noma.patches");
    let records: Vec<serde_json::Value> = t
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 2, "{t}");
    assert_eq!(records[0]["op"]["op"], "x-noma/replace_lines");
    assert_eq!(records[0]["actor"]["kind"], "tool");
    assert_eq!(records[0]["pre_sha256"], crate::common::EMPTY_SHA256);
    assert_eq!(records[1]["op"]["op"], "replace_body");
    assert_eq!(records[1]["pre_sha256"], records[0]["post_sha256"]);
    r.commit_all("new doc, patched by an agent");
    let o = r.noma(&["replay", "new.noma"]);
    assert!(o.status.success(), "{}", text(&o));
    // The next patch appends only its own record.
    let op = r#"{"op":"replace_body","id":"x","content":"third"}"#;
    let o = r.noma(&["patch", "new.noma", "--inplace", "--op", op]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(r.read("new.noma.patches").lines().count(), 3);
}

/// A hand edit of `from` → `to` in `plan.noma`, recorded and committed.
fn hand_edit(r: &Repo, from: &str, to: &str, msg: &str) {
    let before = r.read("plan.noma");
    assert!(before.contains(from), "{msg}: no {from:?} in:\n{before}");
    r.write("plan.noma", &before.replacen(from, to, 1));
    let o = r.noma(&["record", "plan.noma", "--actor-name", "ana"]);
    assert!(o.status.success(), "{msg}: record: {}", text(&o));
    r.commit_all(msg);
}

/// One agent op on `plan.noma`, committed.
fn agent_edit(r: &Repo, id: &str, body: &str) {
    let op = serde_json::json!({"op": "replace_body", "id": id, "content": body}).to_string();
    let o = r.noma(&["patch", "plan.noma", "--inplace", "--op", &op]);
    assert!(o.status.success(), "patch {id}: {}", text(&o));
    r.commit_all(&format!("agent {id}"));
}

/// Clean tree, the whole history replays from the empty document (the
/// genesis record), and the document checks.
fn assert_replays(r: &Repo, want: &[&str]) {
    assert!(
        r.git(&["diff", "--quiet", "HEAD"]).status.success(),
        "work tree not clean: {}",
        r.ok(&["status", "--short"])
    );
    let o = r.noma(&["replay", "plan.noma"]);
    assert!(o.status.success(), "replay: {}", text(&o));
    let doc = r.read("plan.noma");
    for w in want {
        assert!(doc.contains(w), "{w:?} missing:\n{doc}");
    }
    let o = r.noma(&["check", "plan.noma"]);
    assert!(o.status.success(), "check: {}", text(&o));
}

/// Hand edits recorded on two branches (genesis record included) travel
/// through `git rebase`, `git cherry-pick` and a `core.autocrlf=true` clone
/// beside agent patches: every commit passes the hooks, the transcript
/// merge driver keeps the records, and the history replays from nothing.
#[test]
fn recorded_hand_edits_travel_through_rebase_cherry_pick_and_autocrlf() {
    let r = Repo::with_genesis_record("# Plan\n\nFirst paragraph, by hand.\n\n::note{id=\"a\"}\nalpha\n::\n\nMiddle paragraph.\n\n::note{id=\"b\"}\nbeta\n::\n\nLast paragraph.\n");

    // Two branches: each mixes a recorded hand edit with an agent patch.
    r.ok(&["checkout", "-q", "-b", "feat"]);
    hand_edit(&r, "First paragraph", "The first paragraph", "feat: prose");
    agent_edit(&r, "b", "BETA");
    r.ok(&["checkout", "-q", "main"]);
    agent_edit(&r, "a", "ALPHA");
    hand_edit(
        &r,
        "Last paragraph.",
        "Last paragraph, edited.",
        "main: prose",
    );

    // A side branch whose one hand edit is cherry-picked onto main.
    r.ok(&["checkout", "-q", "-b", "side", "main~2"]);
    hand_edit(
        &r,
        "Middle paragraph.",
        "Middle paragraph, picked.",
        "side: prose",
    );
    r.ok(&["checkout", "-q", "main"]);
    let o = r.git(&["cherry-pick", "side"]);
    assert!(
        o.status.success(),
        "cherry-pick must be clean: {}",
        text(&o)
    );
    assert_replays(
        &r,
        &[
            "ALPHA",
            "Last paragraph, edited.",
            "Middle paragraph, picked.",
        ],
    );

    // The feature branch rebased onto main, then fast-forwarded into it.
    r.ok(&["checkout", "-q", "feat"]);
    let o = r.git(&["rebase", "main"]);
    assert!(o.status.success(), "rebase must be clean: {}", text(&o));
    let all = [
        "The first paragraph",
        "ALPHA",
        "BETA",
        "Middle paragraph, picked.",
        "Last paragraph, edited.",
    ];
    assert_replays(&r, &all);
    r.ok(&["checkout", "-q", "main"]);
    r.ok(&["merge", "-q", "--ff-only", "feat"]);
    assert_replays(&r, &all);

    // A Windows-style checkout records a hand edit too, byte-exact.
    let c = Repo {
        dir: tempfile::tempdir().unwrap(),
        home: tempfile::tempdir().unwrap(),
    };
    let src = r.path().to_str().unwrap().to_string();
    c.ok(&["clone", "-q", "-c", "core.autocrlf=true", &src, "."]);
    c.ok(&["config", "user.name", "Tester"]);
    c.ok(&["config", "user.email", "t@example.com"]);
    c.ok(&["config", "commit.gpgsign", "false"]);
    let o = c.noma(&["hooks", "install"]);
    assert!(o.status.success(), "{}", text(&o));
    hand_edit(&c, "by hand.", "by hand, on Windows.", "clone: prose");
    assert_replays(&c, &["on Windows."]);
    let t = c.read("plan.noma.patches");
    assert!(!t.contains('\r'), "the transcript stays LF");
    assert!(!c.read("plan.noma").contains('\r'), "the document stays LF");
}

/// Recorded hand edits beside agent patches through `git pull --rebase`
/// from a remote that gained a hand edit, and in a linked worktree (the
/// hooks and the merge driver are the main checkout's), which rebases on
/// the updated main and then merges into it with a merge commit.
#[test]
fn recorded_hand_edits_travel_through_pull_rebase_and_a_worktree() {
    let r = Repo::with_genesis_record("# Plan\n\nFirst paragraph.\n\n::note{id=\"a\"}\nalpha\n::\n\nSecond paragraph.\n\n::note{id=\"b\"}\nbeta\n::\n\nThird paragraph.\n\n::note{id=\"c\"}\ngamma\n::\n\nFourth paragraph.\n");
    let remote = r.path().join(".git").join("remote.git");
    let remote = remote.to_str().unwrap();
    r.ok(&["init", "-q", "--bare", remote]);
    r.ok(&["remote", "add", "origin", remote]);
    r.ok(&["push", "-q", "origin", "main"]);

    // A linked worktree on its own branch: a hand edit and an agent patch.
    let w = Repo {
        dir: tempfile::tempdir().unwrap(),
        home: tempfile::tempdir().unwrap(),
    };
    let wt = w.path().to_str().unwrap().to_string();
    r.ok(&["worktree", "add", "-q", "-b", "wt", &wt, "main"]);
    hand_edit(
        &w,
        "Fourth paragraph.",
        "Fourth paragraph, from the worktree.",
        "wt: prose",
    );
    agent_edit(&w, "c", "GAMMA");

    // Someone else pushes a hand edit and an agent patch to the remote.
    r.ok(&["checkout", "-q", "-b", "elsewhere"]);
    hand_edit(
        &r,
        "First paragraph.",
        "First paragraph, pushed.",
        "elsewhere: prose",
    );
    agent_edit(&r, "a", "ALPHA");
    r.ok(&["push", "-q", "origin", "elsewhere:main"]);
    r.ok(&["checkout", "-q", "main"]);
    r.ok(&["branch", "-q", "-D", "elsewhere"]);

    // Meanwhile main gained a local hand edit; pull --rebase replays it on top.
    hand_edit(
        &r,
        "Second paragraph.",
        "Second paragraph, local.",
        "main: prose",
    );
    let o = r.git(&["pull", "--rebase", "origin", "main"]);
    assert!(
        o.status.success(),
        "pull --rebase must be clean: {}",
        text(&o)
    );
    let main_has = [
        "First paragraph, pushed.",
        "ALPHA",
        "Second paragraph, local.",
    ];
    assert_replays(&r, &main_has);

    // The worktree's branch rebases onto the new main, then merges into it.
    let o = w.git(&["rebase", "main"]);
    assert!(
        o.status.success(),
        "worktree rebase must be clean: {}",
        text(&o)
    );
    let all = [
        "First paragraph, pushed.",
        "ALPHA",
        "Second paragraph, local.",
        "GAMMA",
        "Fourth paragraph, from the worktree.",
    ];
    assert_replays(&w, &all);
    hand_edit(
        &r,
        "Third paragraph.",
        "Third paragraph, after the rebase.",
        "main: more prose",
    );
    let o = r.git(&["merge", "-q", "--no-ff", "--no-edit", "wt"]);
    assert!(
        o.status.success(),
        "merge of the worktree branch must be clean: {}",
        text(&o)
    );
    let mut merged = all.to_vec();
    merged.push("Third paragraph, after the rebase.");
    assert_replays(&r, &merged);
}

/// A file name is data, never a command: the fix the hook prints for a
/// document whose name holds `$(…)`, a quote and a space runs as printed
/// and records that document, and nothing in its name is executed.
#[test]
fn the_fix_for_a_hostile_file_name_runs_as_printed_and_runs_nothing_else() {
    let name = "$(touch pwned) it's `touch pwned2`.noma";
    let r = Repo::init();
    assert!(r.noma(&["init"]).status.success());
    r.write(name, "# Plan\n\nFirst prose.\n");
    let o = r.noma(&["record", name]);
    assert!(o.status.success(), "{}", text(&o));
    r.commit_all("doc with genesis");
    r.write(name, "# Plan\n\nEdited prose.\n");
    r.ok(&["add", "-A"]);
    let (ok, out) = r.try_commit("hand edit");
    assert!(!ok, "an unrecorded edit: {out}");
    let fix = fix_of(&out, "unrecorded-edit");
    let o = r.sh(&fix);
    assert!(o.status.success(), "{}", text(&o));
    for f in ["pwned", "pwned2"] {
        assert!(!r.path().join(f).exists(), "{fix} ran a command: {f}");
    }
    let (ok, out) = r.try_commit("hand edit, recorded");
    assert!(ok, "{out}");
}

/// `noma record` reads the transcript a line at a time and never
/// holds it, so a transcript past `NOMA_MAX_FILE_BYTES` (which a transcript
/// no longer has) is recorded onto, chained to its last line; the cap
/// still guards the document.
#[test]
fn a_transcript_over_the_size_cap_is_recorded_onto() {
    let r = setup("");
    for body in ["second", "third"] {
        let op = serde_json::json!({"op": "replace_body", "id": "n1", "content": body}).to_string();
        let o = r.noma(&["patch", "plan.noma", "--inplace", "--op", &op]);
        assert!(o.status.success(), "{}", text(&o));
    }
    r.commit_all("agent patches");
    let cap = (DOC.len() + 200).to_string();
    let before = r.read("plan.noma.patches");
    assert!(
        before.len() > DOC.len() + 200,
        "the transcript is under the cap"
    );
    r.write(
        "plan.noma",
        &r.read("plan.noma")
            .replace("Overview prose.", "Overview prose, by hand."),
    );
    let record = |r: &crate::common::Repo| {
        let env = format!("NOMA_MAX_FILE_BYTES={cap}");
        r.cmd("env", &[&env, crate::common::NOMA, "record", "plan.noma"])
    };
    let o = record(&r);
    assert!(o.status.success(), "{}", text(&o));
    let after = r.read("plan.noma.patches");
    let added = after.strip_prefix(&before).expect("appended to");
    let last = before.lines().last().unwrap().to_string() + "\n";
    let rec: serde_json::Value = serde_json::from_str(added.trim_end()).unwrap();
    assert_eq!(rec["actor"]["kind"], "human");
    assert_eq!(
        rec["prev_entry_sha256"],
        noma_core::doc::hash::sha256_hex(last.as_bytes())
    );
    r.commit_all("recorded");
    // A document over the cap is still refused.
    r.write("plan.noma", &r.read("plan.noma").repeat(2));
    let o = record(&r);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("NOMA_MAX_FILE_BYTES"), "{}", text(&o));
}

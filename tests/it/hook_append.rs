//! The pre-commit hook's streamed check of an append (decision
//! `hook-streams-appends`): the committed and staged transcripts are read
//! side by side and only the new records replay. Each case runs twice, with
//! blobs read whole (small, the default) and streamed, inflated from their
//! object files (`NOMA_STREAM_BLOBS_OVER=0`), against real git; whatever the
//! stream does not accept is judged by the whole-file check, so every
//! refusal must name its cause as before.

use crate::common::{text, Repo, NOMA};

fn doc() -> String {
    let mut s = String::from("# Plan\n\n::note{id=\"a\"}\nalpha\n::\n\n");
    s.push_str("::note{id=\"b\"}\nbeta\n::\n");
    s
}

pub(crate) fn op(id: &str, body: &str) -> String {
    serde_json::json!({
        "op": "replace_block",
        "id": id,
        "content": format!("::note{{id=\"{id}\"}}\n{body}\n::"),
    })
    .to_string()
}

/// A repository whose hooks run noma with `env` set, `plan.noma` committed
/// with three records.
pub(crate) fn repo(env: &str) -> Repo {
    let r = Repo::init();
    let hook = r.path().join(".git/hooks/pre-commit");
    std::fs::create_dir_all(hook.parent().unwrap()).unwrap();
    let export = if env.is_empty() {
        String::new()
    } else {
        format!("export {env}\n")
    };
    std::fs::write(
        &hook,
        format!("#!/bin/sh\n{export}exec \"{NOMA}\" hook pre-commit\n"),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    r.write("plan.noma", &doc());
    r.commit_all("base");
    for body in ["one", "two", "three"] {
        r.agent_patch("plan.noma", &op("a", body));
    }
    r.commit_all("three records");
    r
}

pub(crate) const MODES: [&str; 2] = ["", "NOMA_STREAM_BLOBS_OVER=0"];

pub(crate) fn lines(r: &Repo) -> Vec<String> {
    r.read("plan.noma.patches")
        .lines()
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn appends_pass_including_an_amend_and_a_document_only_commit() {
    for env in MODES {
        let r = repo(env);
        r.agent_patch("plan.noma", &op("b", "BETA"));
        r.commit_all("append");
        r.agent_patch("plan.noma", &op("b", "BETA 2"));
        r.ok(&["add", "-A"]);
        let o = r.git(&["commit", "-q", "--amend", "-m", "amended"]);
        assert!(o.status.success(), "{env}: {}", text(&o));
        // The document alone changed: an unrecorded edit, named by block.
        r.write(
            "plan.noma",
            &r.read("plan.noma").replace("BETA 2", "by hand"),
        );
        r.ok(&["add", "-A"]);
        let (ok, out) = r.try_commit("hand");
        assert!(!ok, "{env}: {out}");
        assert!(out.contains("[unrecorded-edit] plan.noma"), "{env}: {out}");
    }
}

#[test]
fn a_committed_line_edited_in_the_middle_is_refused() {
    for env in MODES {
        let r = repo(env);
        r.agent_patch("plan.noma", &op("b", "BETA"));
        let mut l = lines(&r);
        l[1] = l[1].replace("\"bot\"", "\"mallory\"");
        r.write("plan.noma.patches", &l.concat());
        r.ok(&["add", "-A"]);
        let (ok, out) = r.try_commit("tamper");
        assert!(!ok, "{env}: {out}");
        assert!(out.contains("plan.noma.patches"), "{env}: {out}");
        assert!(out.contains("line 2 was rewritten"), "{env}: {out}");
    }
}

#[test]
fn a_truncated_transcript_is_refused() {
    for env in MODES {
        let r = repo(env);
        let l = lines(&r);
        r.write("plan.noma.patches", &l[..2].concat());
        r.ok(&["add", "-A"]);
        let (ok, out) = r.try_commit("cut");
        assert!(!ok, "{env}: {out}");
        assert!(out.contains("line 3 was removed"), "{env}: {out}");
        // Cut inside the last line (bytes of it kept) is no append either.
        let whole = l.concat();
        r.write("plan.noma.patches", &whole[..whole.len() - 10]);
        r.ok(&["add", "-A"]);
        let (ok, out) = r.try_commit("cut inside");
        assert!(!ok, "{env}: {out}");
    }
}

#[test]
fn crlf_and_a_torn_append_are_refused() {
    for env in MODES {
        let r = repo(env);
        r.agent_patch("plan.noma", &op("b", "BETA"));
        let l = lines(&r);
        // Every line ending converted, as a checkout with autocrlf would.
        r.write("plan.noma.patches", &l.concat().replace('\n', "\r\n"));
        r.ok(&["add", "-A"]);
        let (ok, out) = r.try_commit("crlf");
        assert!(!ok, "{env}: {out}");
        // An appended line without its newline.
        let torn = l.concat();
        r.write("plan.noma.patches", &torn[..torn.len() - 1]);
        r.ok(&["add", "-A"]);
        let (ok, out) = r.try_commit("torn");
        assert!(!ok, "{env}: {out}");
        assert!(out.contains("[transcript-torn]"), "{env}: {out}");
    }
}

#[test]
fn an_appended_record_that_does_not_replay_is_refused() {
    for env in MODES {
        let r = repo(env);
        r.agent_patch("plan.noma", &op("b", "BETA"));
        // The new record's post-state is not the staged document.
        r.write("plan.noma", &r.read("plan.noma").replace("BETA", "BETA!"));
        r.ok(&["add", "-A"]);
        let (ok, out) = r.try_commit("edited after");
        assert!(!ok, "{env}: {out}");
        assert!(out.contains("[unrecorded-edit] plan.noma"), "{env}: {out}");
        // A record appended with a chain that does not meet the committed
        // last line (a line between them was dropped on another copy).
        r.ok(&["reset", "-q", "--hard"]);
        r.agent_patch("plan.noma", &op("b", "BETA"));
        r.agent_patch("plan.noma", &op("b", "BETA 2"));
        let l = lines(&r);
        r.write("plan.noma.patches", &[&l[..3], &l[4..]].concat().concat());
        r.ok(&["add", "-A"]);
        let (ok, out) = r.try_commit("gap");
        assert!(!ok, "{env}: {out}");
        assert!(
            out.contains("[transcript-tampered] plan.noma.patches:4"),
            "{env}: {out}"
        );
    }
}

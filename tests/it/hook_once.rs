//! The pre-commit hook reads each transcript once (decision
//! `hook-remembers-transcript-ends`): the hook that accepts a transcript
//! remembers how it ends (length, BLAKE3, last line) under its blob id, so
//! the next commit's append is checked from the staged blob alone. Proved
//! by deleting the committed transcript's object: the append still passes.
//! Every refusal of `hook_append` stands with the cache warm; a row is used
//! only for the reference commit's own transcript; `noma cache clear`
//! brings back the slow path. Each case runs with blobs read whole and
//! streamed from their object files.

use std::path::PathBuf;

use crate::common::{text, Repo};
use crate::hook_append::{lines, op, repo, MODES};

/// The blob id of `plan.noma.patches` at `rev`.
fn blob(r: &Repo, rev: &str) -> String {
    r.ok(&["rev-parse", &format!("{rev}:plan.noma.patches")])
        .trim()
        .to_string()
}

fn raw(id: &str) -> Vec<u8> {
    (0..id.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&id[i..i + 2], 16).unwrap())
        .collect()
}

fn cache(r: &Repo) -> rusqlite::Connection {
    rusqlite::Connection::open(r.path().join(".noma/cache/blocks.sqlite3")).unwrap()
}

/// The BLAKE3 the cache remembers for transcript blob `id`, if any.
fn remembered(r: &Repo, id: &str) -> Option<Vec<u8>> {
    let conn = cache(r);
    let mut q = conn
        .prepare("SELECT blake3 FROM transcript_ends WHERE blob = ?1")
        .unwrap();
    let mut rows = q.query([raw(id)]).unwrap();
    rows.next().unwrap().map(|row| row.get(0).unwrap())
}

/// Deletes loose object `id` (what a hook that reads it would need);
/// returns its file and bytes, to put it back.
fn remove_object(r: &Repo, id: &str) -> (PathBuf, Vec<u8>) {
    let p = r.path().join(".git/objects").join(&id[..2]).join(&id[2..]);
    let bytes = std::fs::read(&p).unwrap();
    std::fs::remove_file(&p).unwrap();
    assert!(!r.git(&["cat-file", "-e", id]).status.success());
    (p, bytes)
}

#[test]
fn an_append_is_checked_without_the_committed_transcript() {
    for env in MODES {
        let r = repo(env);
        // The hook that accepted the transcript remembered how it ends.
        let head = blob(&r, "HEAD");
        assert!(remembered(&r, &head).is_some(), "{env}");
        remove_object(&r, &head);
        r.agent_patch("plan.noma", &op("b", "BETA"));
        r.commit_all("append, HEAD's transcript gone");
        // And so on: each accepted append is remembered for the next.
        let next = blob(&r, "HEAD");
        remove_object(&r, &next);
        r.agent_patch("plan.noma", &op("b", "BETA 2"));
        r.commit_all("append again");
        // A record that does not replay is still found from the tail.
        r.agent_patch("plan.noma", &op("a", "ALPHA"));
        r.write("plan.noma", &r.read("plan.noma").replace("ALPHA", "ALPHA!"));
        r.ok(&["add", "-A"]);
        let (ok, out) = r.try_commit("edited after");
        assert!(!ok, "{env}: {out}");
    }
}

#[test]
fn refusals_stand_with_the_cache_warm() {
    for env in MODES {
        let r = repo(env);
        let warm = |r: &Repo| assert!(remembered(r, &blob(r, "HEAD")).is_some(), "{env}");
        let refused = |r: &Repo, why: &str, expect: &str| {
            r.ok(&["add", "-A"]);
            let (ok, out) = r.try_commit(why);
            assert!(!ok, "{env} {why}: {out}");
            assert!(out.contains(expect), "{env} {why}: {out}");
            r.ok(&["reset", "-q", "--hard"]);
        };
        warm(&r);
        r.agent_patch("plan.noma", &op("b", "BETA"));
        let mut l = lines(&r);
        l[1] = l[1].replace("\"bot\"", "\"mallory\"");
        r.write("plan.noma.patches", &l.concat());
        refused(&r, "edited", "line 2 was rewritten");
        let l = lines(&r);
        r.write("plan.noma.patches", &l[..2].concat());
        refused(&r, "truncated", "line 3 was removed");
        let whole = l.concat();
        r.write("plan.noma.patches", &whole[..whole.len() - 10]);
        refused(&r, "cut inside the last line", "plan.noma.patches");
        r.agent_patch("plan.noma", &op("b", "BETA"));
        let l = lines(&r);
        r.write("plan.noma.patches", &l.concat().replace('\n', "\r\n"));
        refused(&r, "crlf", "plan.noma.patches");
        r.agent_patch("plan.noma", &op("b", "BETA"));
        let torn = lines(&r).concat();
        r.write("plan.noma.patches", &torn[..torn.len() - 1]);
        refused(&r, "torn", "[transcript-torn]");
        r.agent_patch("plan.noma", &op("b", "BETA"));
        r.write("plan.noma", &r.read("plan.noma").replace("BETA", "BETA!"));
        refused(&r, "edited after", "[unrecorded-edit] plan.noma");
        r.agent_patch("plan.noma", &op("b", "BETA"));
        r.agent_patch("plan.noma", &op("b", "BETA 2"));
        let l = lines(&r);
        r.write("plan.noma.patches", &[&l[..3], &l[4..]].concat().concat());
        refused(&r, "gap", "[transcript-tampered] plan.noma.patches:4");
        // An amend extends HEAD's parent, whose end is remembered too: its
        // records may not be cut either.
        r.agent_patch("plan.noma", &op("b", "BETA"));
        r.commit_all("append");
        warm(&r);
        r.agent_patch("plan.noma", &op("b", "BETA 2"));
        r.ok(&["add", "-A"]);
        let o = r.git(&["commit", "-q", "--amend", "-m", "amended"]);
        assert!(o.status.success(), "{env}: {}", text(&o));
        let l = lines(&r);
        r.write("plan.noma.patches", &[&l[..2], &l[3..]].concat().concat());
        r.ok(&["add", "-A"]);
        let o = r.git(&["commit", "-q", "--amend", "-m", "cut"]);
        assert!(!o.status.success(), "{env}: {}", text(&o));
        assert!(text(&o).contains("line 3 was"), "{env}: {}", text(&o));
    }
}

/// The row of an older transcript is not HEAD's: an append to that older
/// transcript, when HEAD's was rewritten (by a commit the hook did not
/// see), is judged against HEAD's. A row whose digest is wrong is
/// replaced by what the committed blob says.
#[test]
fn a_row_is_used_only_for_the_reference_transcript() {
    for env in MODES {
        let r = repo(env);
        let mut l = lines(&r);
        l[1] = l[1].replace("\"bot\"", "\"mallory\"");
        r.write("plan.noma.patches", &l.concat());
        r.ok(&["add", "-A"]);
        r.ok(&["commit", "-q", "--no-verify", "-m", "rewritten"]);
        assert!(remembered(&r, &blob(&r, "HEAD~1")).is_some(), "{env}");
        assert!(remembered(&r, &blob(&r, "HEAD")).is_none(), "{env}");
        r.ok(&["checkout", "HEAD~1", "--", "plan.noma.patches"]);
        r.agent_patch("plan.noma", &op("b", "BETA"));
        r.ok(&["add", "-A"]);
        let (ok, out) = r.try_commit("extends the remembered one");
        assert!(!ok, "{env}: {out}");
        assert!(out.contains("line 2 was rewritten"), "{env}: {out}");
        r.ok(&["reset", "-q", "--hard"]);
        // A damaged digest for HEAD's own transcript: the slow path.
        let head = blob(&r, "HEAD");
        r.agent_patch("plan.noma", &op("b", "BETA"));
        r.commit_all("append, read side by side");
        let right = blake3::hash(&r.git(&["cat-file", "blob", &head]).stdout);
        assert_eq!(
            remembered(&r, &head).as_deref(),
            Some(&right.as_bytes()[..])
        );
        cache(&r)
            .execute("UPDATE transcript_ends SET blake3 = zeroblob(32)", [])
            .unwrap();
        r.agent_patch("plan.noma", &op("b", "BETA 2"));
        r.commit_all("append, the row damaged");
        let now = blob(&r, "HEAD~1");
        let right = blake3::hash(&r.git(&["cat-file", "blob", &now]).stdout);
        assert_eq!(
            remembered(&r, &now).as_deref(),
            Some(&right.as_bytes()[..]),
            "{env}"
        );
    }
}

#[test]
fn after_cache_clear_the_committed_transcript_is_read_again() {
    for env in MODES {
        let r = repo(env);
        let head = blob(&r, "HEAD");
        let o = r.noma(&["cache", "clear"]);
        assert!(o.status.success(), "{}", text(&o));
        assert!(remembered(&r, &head).is_none(), "{env}");
        let (file, bytes) = remove_object(&r, &head);
        r.agent_patch("plan.noma", &op("b", "BETA"));
        r.ok(&["add", "-A"]);
        let (ok, out) = r.try_commit("needs the committed transcript");
        assert!(!ok, "{env}: the slow path reads it: {out}");
        std::fs::write(&file, bytes).unwrap();
        let (ok, out) = r.try_commit("it is back");
        assert!(ok, "{env}: {out}");
        // That check remembered both ends: the next needs neither blob.
        assert!(remembered(&r, &head).is_some(), "{env}");
        remove_object(&r, &head);
        remove_object(&r, &blob(&r, "HEAD"));
        r.agent_patch("plan.noma", &op("b", "BETA 2"));
        r.commit_all("append");
    }
}

/// A branch that commits the block cache brings its rows with it on
/// checkout: the hook then reads the committed transcript itself, as
/// `noma reconcile` ignores such a cache. Shown as in the fast-path test:
/// with HEAD's transcript object gone, the append is no longer accepted.
#[test]
fn a_committed_cache_is_not_trusted() {
    for env in MODES {
        let r = repo(env);
        let head = blob(&r, "HEAD");
        assert!(remembered(&r, &head).is_some(), "{env}");
        r.ok(&["add", "-f", ".noma/cache"]);
        r.ok(&["commit", "-q", "--no-verify", "-m", "a cache in the tree"]);
        assert_eq!(blob(&r, "HEAD"), head, "{env}");
        assert!(remembered(&r, &head).is_some(), "{env}");
        let (file, bytes) = remove_object(&r, &head);
        r.agent_patch("plan.noma", &op("b", "BETA"));
        r.ok(&["add", "-A"]);
        let (ok, out) = r.try_commit("the row is the branch's word");
        assert!(!ok, "{env}: the committed transcript must be read: {out}");
        std::fs::write(&file, bytes).unwrap();
        let (ok, out) = r.try_commit("it is back");
        assert!(ok, "{env}: {out}");
    }
}

//! A blobless CI clone (`git clone --filter=blob:none`): `noma reconcile`
//! fetches the blobs it reads in one batch, not one round trip per
//! missing transcript version.

use std::path::Path;

use crate::common::{assert_ran, keygen, text, Repo, NOMA};

/// `doc`'s block `id` gets `content`: from the agent `bot`, or signed by
/// alice with `key`; one commit.
fn patch_commit(r: &Repo, key: Option<&Path>, doc: &str, id: &str, content: &str) {
    let op = format!(r#"{{"op":"replace_body","id":"{id}","content":"{content}"}}"#);
    match key {
        None => r.agent_patch(doc, &op),
        Some(k) => {
            let k = k.to_str().unwrap();
            let args = [
                "patch",
                doc,
                "--inplace",
                "--key",
                k,
                "--actor-name",
                "alice",
            ];
            assert_ran(&r.noma(&[&args[..], &["--op", &op]].concat()));
        }
    }
    r.ok(&["add", "-A"]);
    r.ok(&["commit", "-q", "-m", content]);
}

/// The issue's shape: three transcripts, 86 commits; main and a feature
/// branch both append to every transcript after they part. `signed`: with
/// `signatures: required`, every record signed into its sidecar.
fn origin(signed: bool) -> Repo {
    let r = Repo::init();
    r.ok(&["config", "uploadpack.allowFilter", "true"]);
    let key = signed.then(|| {
        let (key, public) = keygen(&r, "alice");
        r.write(".noma/config.yml", "provenance:\n  signatures: required\n");
        let line = format!("alice@example.com namespaces=\"noma\" {public}\n");
        r.write(".noma/allowed_signers", &line);
        key
    });
    for d in ["a", "b", "c"] {
        let doc =
            format!("# {d}\n\n::note{{id=\"n1\"}}\none\n::\n\n::note{{id=\"n2\"}}\ntwo\n::\n");
        r.write(&format!("{d}.noma"), &doc);
        let o = r.noma(&["record", &format!("{d}.noma")]);
        assert!(o.status.success(), "{}", text(&o));
    }
    r.commit_all("base");
    let doc = |i: usize| ["a.noma", "b.noma", "c.noma"][i % 3];
    for i in 0..40 {
        patch_commit(&r, key.as_deref(), doc(i), "n1", &format!("main {i}"));
    }
    r.ok(&["checkout", "-q", "-b", "feature", "HEAD~20"]);
    for i in 0..45 {
        patch_commit(&r, key.as_deref(), doc(i), "n2", &format!("feature {i}"));
    }
    r.ok(&["checkout", "-q", "main"]);
    r
}

#[test]
fn reconcile_in_a_blobless_clone_fetches_in_one_batch() {
    fetches_in_one_batch(false);
}

/// Signed records: reconcile reads the transcripts whole and the
/// sidecars and trust settings too.
#[test]
fn a_signed_history_in_a_blobless_clone_fetches_in_one_batch() {
    fetches_in_one_batch(true);
}

fn fetches_in_one_batch(signed: bool) {
    let origin = origin(signed);
    let clone = Repo {
        dir: tempfile::tempdir().unwrap(),
        home: tempfile::tempdir().unwrap(),
    };
    let url = format!("file://{}", origin.path().display());
    let dest = clone.path().to_str().unwrap();
    origin.ok(&[
        "clone",
        "-q",
        "--filter=blob:none",
        "--no-checkout",
        &url,
        dest,
    ]);
    clone.ok(&["checkout", "-q", "-b", "feature", "origin/feature"]);
    let missing = clone.ok(&["rev-list", "--objects", "--all", "--missing=print"]);
    let missing = missing.lines().filter(|l| l.starts_with('?')).count();
    assert!(missing > 50, "the clone should lack most blobs: {missing}");

    let trace = clone.home.path().join("trace2.json");
    let env = format!("GIT_TRACE2_EVENT={}", trace.display());
    // A thread per document: each opens its own repository handle, and
    // none may fetch what the batch already did.
    let args = ["reconcile", "--base", "origin/main", "--jobs", "3"];
    let o = clone.cmd("env", &[&[env.as_str(), NOMA][..], &args[..]].concat());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // The verdicts are the full repository's.
    origin.ok(&["checkout", "-q", "feature"]);
    let full = origin.noma(&["reconcile", "--base", "main"]);
    let out = |o: &std::process::Output| String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(out(&o), out(&full));
    if signed {
        assert!(
            out(&o).contains("signed by alice@example.com"),
            "{}",
            text(&o)
        );
    }

    let events = std::fs::read_to_string(&trace).unwrap_or_default();
    let fetches = events
        .lines()
        .filter(|l| l.contains(r#""event":"cmd_name""#) && l.contains(r#""name":"fetch""#))
        .count();
    assert!(fetches <= 2, "{fetches} fetches:\n{}", text(&o));
    let left = clone.ok(&["rev-list", "--objects", "--all", "--missing=print"]);
    assert!(left.lines().filter(|l| l.starts_with('?')).count() < missing);
}

/// The usual shape of an agent's work: documents committed by hand, and
/// transcripts that begin at the first agent patch of each, so every
/// command searches the history for the committed version a transcript
/// starts from. 151 commits: 75 on main, 75 on a feature branch that
/// left main 35 commits before its tip.
fn origin_started_at_committed_documents() -> Repo {
    let r = Repo::init();
    r.ok(&["config", "uploadpack.allowFilter", "true"]);
    r.ok(&["config", "uploadpack.allowAnySHA1InWant", "true"]);
    for d in ["a", "b", "c"] {
        let doc =
            format!("# {d}\n\n::note{{id=\"n1\"}}\none\n::\n\n::note{{id=\"n2\"}}\ntwo\n::\n");
        r.write(&format!("{d}.noma"), &doc);
    }
    r.commit_all("documents, no transcript");
    let doc = |i: usize| ["a.noma", "b.noma", "c.noma"][i % 3];
    for i in 0..75 {
        patch_commit(&r, None, doc(i), "n1", &format!("main {i}"));
    }
    r.ok(&["checkout", "-q", "-b", "feature", "HEAD~35"]);
    for i in 0..75 {
        patch_commit(&r, None, doc(i), "n2", &format!("feature {i}"));
    }
    r
}

/// A fresh blobless clone of `origin` on `feature`, with the blobs of its
/// checkout only.
fn blobless_clone(origin: &Repo) -> Repo {
    let clone = Repo {
        dir: tempfile::tempdir().unwrap(),
        home: tempfile::tempdir().unwrap(),
    };
    let url = format!("file://{}", origin.path().display());
    let dest = clone.path().to_str().unwrap();
    origin.ok(&[
        "clone",
        "-q",
        "--filter=blob:none",
        "--no-checkout",
        &url,
        dest,
    ]);
    clone.ok(&["checkout", "-q", "-B", "feature", "origin/feature"]);
    clone
}

/// Runs noma with `args` in `clone` under `GIT_TRACE2_EVENT`: its output
/// and how many `git fetch` processes ran (lazy fetches of single blobs
/// included, since each is one).
fn traced(clone: &Repo, args: &[&str]) -> (std::process::Output, usize) {
    let trace = clone.home.path().join("trace2.json");
    let _ = std::fs::remove_file(&trace);
    let env = format!("GIT_TRACE2_EVENT={}", trace.display());
    let o = clone.cmd("env", &[&[env.as_str(), NOMA][..], args].concat());
    let events = std::fs::read_to_string(&trace).unwrap_or_default();
    let fetches = events
        .lines()
        .filter(|l| l.contains(r#""event":"cmd_name""#) && l.contains(r#""name":"fetch""#))
        .count();
    (o, fetches)
}

#[test]
fn every_history_command_fetches_in_at_most_two_batches() {
    let origin = origin_started_at_committed_documents();
    origin.ok(&["checkout", "-q", "feature"]);
    let commands: [&[&str]; 5] = [
        &["reconcile", "--base", "origin/main"],
        &["replay", "a.noma"],
        &["log", "a.noma"],
        &["blame", "a.noma"],
        &["log", "c.noma"],
    ];
    let mut counts = Vec::new();
    for args in commands {
        let clone = blobless_clone(&origin);
        let (o, fetches) = traced(&clone, args);
        // The same answer as in the full repository (whose base is `main`).
        let full_args: Vec<&str> = args
            .iter()
            .map(|a| if *a == "origin/main" { "main" } else { a })
            .collect();
        let full = origin.noma(&full_args);
        assert_eq!(
            o.status.code(),
            full.status.code(),
            "{args:?}: {}",
            text(&o)
        );
        assert!(o.status.success(), "{args:?}: {}", text(&o));
        // Commit ids are the same in both; replay's speed line is not.
        let out = |o: &std::process::Output| {
            (String::from_utf8_lossy(&o.stdout).lines())
                .filter(|l| !l.contains("records/s"))
                .map(|l| l.replace("origin/main", "main") + "\n")
                .collect::<String>()
        };
        assert_eq!(out(&o), out(&full), "{args:?}");
        counts.push((args.join(" "), fetches));
    }
    assert!(
        counts.iter().all(|(_, n)| *n <= 2),
        "fetches per command: {counts:?}"
    );
}

//! The merge driver against real repositories driven by the `git` CLI:
//! `noma hooks install` registers hooks and driver, branches patch one
//! document through transcripts (or by hand), and `git merge` runs
//! `noma merge-driver` for the document and its transcript.

use crate::common::{text, Repo};

/// This file's helpers on [`Repo`], a trait because inherent methods
/// would clash with other test modules' in the one test crate.
trait MergeRepo {
    fn new() -> Self;
    fn branch_patch(&self, from: &str, name: &str, ops: &[String]);
    fn op_ids(&self, rev: &str) -> Vec<String>;
}

impl MergeRepo for Repo {
    fn new() -> Repo {
        let r = Repo::init();
        let o = r.noma(&["hooks", "install"]);
        assert!(o.status.success(), "{}", text(&o));
        assert!(
            text(&o).contains("merge driver: registered"),
            "{}",
            text(&o)
        );
        r
    }

    /// Patches on a new branch `name` from `from` and commits.
    fn branch_patch(&self, from: &str, name: &str, ops: &[String]) {
        self.ok(&["checkout", "-q", "-b", name, from]);
        for op in ops {
            self.agent_patch("plan.noma", op);
        }
        self.commit_all(name);
    }

    fn op_ids(&self, rev: &str) -> Vec<String> {
        let t = self.ok(&["show", &format!("{rev}:plan.noma.patches")]);
        t.lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .map(|v| v["op_id"].as_str().unwrap_or_default().to_string())
            .collect()
    }
}

/// Three top-level directives and a section holding two more.
fn doc() -> String {
    "# Plan\n\n::note{id=\"a\"}\nalpha\n::\n\n::note{id=\"b\"}\nbeta\n::\n\n## Details\n\n::note{id=\"c\"}\ngamma\n::\n\n::note{id=\"d\"}\ndelta\n::\n".to_string()
}

fn replace_op(id: &str, body: &str) -> String {
    serde_json::json!({
        "op": "replace_block",
        "id": id,
        "content": format!("::note{{id=\"{id}\"}}\n{body}\n::"),
    })
    .to_string()
}

fn body_op(id: &str, body: &str) -> String {
    serde_json::json!({"op": "replace_body", "id": id, "content": body}).to_string()
}

/// Block id -> source hash of a document.
fn blocks(doc: &str) -> Vec<(String, String)> {
    let d = noma_core::doc::parse(doc);
    assert!(d.issues.is_empty(), "parse issues: {:?}\n{doc}", d.issues);
    noma_core::doc::hash::block_hashes(doc, &d)
        .into_iter()
        .map(|b| (b.id, b.sha256))
        .collect()
}

fn setup_transcripts() -> Repo {
    let r = Repo::new();
    r.write("plan.noma", &doc());
    r.commit_all("base");
    r
}

#[test]
fn a_transcripts_on_different_blocks_merge_cleanly_and_replay() {
    let r = setup_transcripts();
    r.write("base.noma.txt", &doc());
    r.branch_patch(
        "main",
        "A",
        &[replace_op("a", "ALPHA"), body_op("c", "GAMMA")],
    );
    r.branch_patch(
        "main",
        "B",
        &[replace_op("b", "BETA"), body_op("d", "DELTA")],
    );
    let theirs = r.op_ids("A");
    let o = r.git(&["merge", "--no-edit", "A"]);
    assert!(o.status.success(), "merge must be clean: {}", text(&o));
    assert!(r.git(&["diff", "--quiet", "HEAD"]).status.success());
    let merged = r.read("plan.noma");
    for want in ["ALPHA", "BETA", "GAMMA", "DELTA"] {
        assert!(merged.contains(want), "{want} missing:\n{merged}");
    }
    // Replays from the base to the merged bytes.
    let o = r.noma(&["replay", "plan.noma", "--base", "base.noma.txt"]);
    assert!(o.status.success(), "{}", text(&o));
    // Common prefix (none) + ours (B's two) + two reconciled records.
    let t = r.read("plan.noma.patches");
    let recs: Vec<serde_json::Value> = t
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(recs.len(), 4);
    for (rec, original) in recs[2..].iter().zip(&theirs) {
        assert_eq!(rec["parent_op_id"].as_str(), Some(original.as_str()));
        assert!(rec["reason"].as_str().unwrap().contains("reconciled"));
        assert_ne!(rec["op_id"].as_str(), Some(original.as_str()));
    }
    // The merge commit itself went through the pre-merge-commit hook.
    let log = r.ok(&["log", "--format=%P", "-1"]);
    assert_eq!(log.split_whitespace().count(), 2, "{log}");
}

#[test]
fn b_same_block_conflicts_naming_block_and_ops_and_hook_blocks_bad_resolution() {
    let r = setup_transcripts();
    r.branch_patch("main", "A", &[body_op("c", "GAMMA from A")]);
    r.branch_patch("main", "B", &[body_op("c", "GAMMA from B")]);
    let (ours, theirs) = (r.op_ids("B"), r.op_ids("A"));
    let o = r.git(&["merge", "--no-edit", "A"]);
    assert!(!o.status.success(), "must conflict: {}", text(&o));
    let out = text(&o);
    assert!(out.contains("block \"c\""), "{out}");
    assert!(out.contains(&ours[0]) && out.contains(&theirs[0]), "{out}");
    // The conflicted document still parses and holds both versions.
    let conflicted = r.read("plan.noma");
    blocks(&conflicted);
    assert!(conflicted.contains("GAMMA from A") && conflicted.contains("GAMMA from B"));
    assert!(conflicted.contains("::conflict{"), "{conflicted}");
    // A forced resolution (their document, our transcript) breaks replay.
    r.ok(&["checkout", "--theirs", "plan.noma"]);
    r.ok(&["add", "-A"]);
    let o = r.git(&["commit", "--no-edit"]);
    assert!(!o.status.success(), "must be blocked: {}", text(&o));
    assert!(text(&o).contains("commit blocked"), "{}", text(&o));
    // A textual union of both tails is an unreconciled fork.
    let union = format!(
        "{}{}",
        r.ok(&["show", "B:plan.noma.patches"]),
        r.ok(&["show", "A:plan.noma.patches"])
    );
    r.write("plan.noma.patches", &union);
    r.ok(&["add", "-A"]);
    let o = r.git(&["commit", "--no-edit"]);
    assert!(!o.status.success(), "must be blocked: {}", text(&o));
    assert!(text(&o).contains("[transcript-fork]"), "{}", text(&o));
}

#[test]
fn c_without_transcripts_blocks_merge_or_conflict_with_parsable_markers() {
    let r = Repo::new();
    r.write("plan.noma", &doc());
    r.commit_all("base");
    r.ok(&["checkout", "-q", "-b", "A"]);
    r.write(
        "plan.noma",
        &doc().replace("alpha", "ALPHA").replace("gamma", "GAMMA"),
    );
    r.commit_all("A");
    r.ok(&["checkout", "-q", "-b", "B", "main"]);
    r.write(
        "plan.noma",
        &doc().replace("beta", "BETA").replace("delta", "DELTA"),
    );
    r.commit_all("B");
    // Plain git would conflict here: the edits are on adjacent lines.
    let o = r.git(&["merge", "--no-edit", "A"]);
    assert!(o.status.success(), "{}", text(&o));
    let merged = r.read("plan.noma");
    assert_eq!(
        merged,
        doc()
            .replace("alpha", "ALPHA")
            .replace("gamma", "GAMMA")
            .replace("beta", "BETA")
            .replace("delta", "DELTA")
    );

    // Same block on both sides: markers that still parse.
    r.ok(&["checkout", "-q", "-b", "C", "main"]);
    r.write("plan.noma", &doc().replace("beta", "beta from C"));
    r.commit_all("C");
    r.ok(&["checkout", "-q", "-b", "D", "main"]);
    r.write("plan.noma", &doc().replace("beta", "beta from D"));
    r.commit_all("D");
    let o = r.git(&["merge", "--no-edit", "C"]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("block \"b\""), "{}", text(&o));
    let conflicted = r.read("plan.noma");
    let ids: Vec<String> = blocks(&conflicted).into_iter().map(|(id, _)| id).collect();
    assert!(
        ids.iter().any(|i| i.starts_with("merge-conflict-")),
        "{ids:?}"
    );
    assert!(conflicted.contains("beta from C") && conflicted.contains("beta from D"));
    assert!(!conflicted.contains("<<<<<<<"));
}

#[test]
fn d_merge_order_does_not_change_block_content() {
    for transcripts in [true, false] {
        let r = setup_transcripts();
        if transcripts {
            r.branch_patch("main", "A", &[body_op("a", "A1"), body_op("c", "C1")]);
            r.branch_patch("main", "B", &[body_op("b", "B1"), body_op("d", "D1")]);
        } else {
            r.ok(&["checkout", "-q", "-b", "A"]);
            r.write(
                "plan.noma",
                &doc().replace("alpha", "A1").replace("gamma", "C1"),
            );
            r.commit_all("A");
            r.ok(&["checkout", "-q", "-b", "B", "main"]);
            r.write(
                "plan.noma",
                &doc().replace("beta", "B1").replace("delta", "D1"),
            );
            r.commit_all("B");
        }
        r.ok(&["checkout", "-q", "-b", "BA", "B"]);
        r.ok(&["merge", "--no-edit", "A"]);
        let ba = r.read("plan.noma");
        r.ok(&["checkout", "-q", "-b", "AB", "A"]);
        r.ok(&["merge", "--no-edit", "B"]);
        let ab = r.read("plan.noma");
        let mut x = blocks(&ab);
        let mut y = blocks(&ba);
        x.sort();
        y.sort();
        assert_eq!(x, y, "transcripts={transcripts}\n{ab}\n---\n{ba}");
    }
}

#[test]
fn uninstall_removes_the_driver_registration() {
    let r = Repo::new();
    assert!(r.read(".gitattributes").contains("*.noma merge=noma"));
    let o = r.noma(&["hooks", "uninstall"]);
    assert!(o.status.success(), "{}", text(&o));
    // The line-ending rules stay: committed transcripts still need them.
    let attrs = r.read(".gitattributes");
    assert!(!attrs.contains("merge=noma"), "{attrs}");
    assert!(attrs.contains("*.noma -text"), "{attrs}");
    let o = r.git(&["config", "--get", "merge.noma.driver"]);
    assert!(!o.status.success());
}

/// The driver (like the hooks) runs the binary that registered it, else
/// `noma` on PATH: after that binary moved (an upgrade installed
/// elsewhere, a removed build), merges used to stop with "not found" and
/// a conflict in every document both branches changed.
#[test]
fn the_driver_falls_back_to_noma_on_path_when_its_binary_is_gone() {
    let r = Repo::init();
    let gone = tempfile::tempdir().unwrap();
    let copy = gone.path().join("noma");
    std::fs::copy(crate::common::NOMA, &copy).unwrap();
    let o = r.cmd(copy.to_str().unwrap(), &["hooks", "install"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(r
        .ok(&["config", "merge.noma.driver"])
        .contains(copy.to_str().unwrap()));
    r.write("plan.noma", &doc());
    r.commit_all("base");
    r.branch_patch("main", "A", &[replace_op("a", "ALPHA")]);
    r.branch_patch("main", "B", &[replace_op("b", "BETA")]);
    drop(gone);
    assert!(!copy.exists());
    let o = r.sh("git merge --no-edit A");
    assert!(o.status.success(), "merge must be clean: {}", text(&o));
    let merged = r.read("plan.noma");
    assert!(
        merged.contains("ALPHA") && merged.contains("BETA"),
        "{merged}"
    );
}

/// A `::conflict` block names the two sides as git labels them (`%X`/`%Y`,
/// git 2.44+): the merged branch in a merge, the picked commit (hash and
/// subject) in a cherry-pick, where it used to say "theirs". A subject
/// with quotes and a wikilink is made safe: the conflicted document parses,
/// and the only error is the unresolved conflict, never a broken attribute
/// or a dangling link.
#[test]
fn e_conflict_blocks_name_the_sides_as_git_labels_them() {
    let r = setup_transcripts();
    r.branch_patch("main", "tune", &[body_op("c", "GAMMA from tune")]);
    r.branch_patch("main", "other", &[body_op("c", "GAMMA from other")]);
    let o = r.git(&["merge", "--no-edit", "tune"]);
    assert!(!o.status.success(), "must conflict: {}", text(&o));
    let doc = r.read("plan.noma");
    assert!(doc.contains(r#"ours="HEAD" theirs="tune"}"#), "{doc}");
    assert!(doc.contains("the second theirs (tune)"), "{doc}");
    r.ok(&["merge", "--abort"]);

    r.ok(&["checkout", "-q", "tune"]);
    r.agent_patch("plan.noma", &body_op("c", "GAMMA again"));
    r.ok(&["add", "-A"]);
    r.ok(&["commit", "-q", "-m", "say \"hi\" to [[nowhere]]"]);
    r.ok(&["checkout", "-q", "other"]);
    let o = r.git(&["cherry-pick", "tune"]);
    assert!(!o.status.success(), "must conflict: {}", text(&o));
    let doc = r.read("plan.noma");
    let open = doc
        .lines()
        .find(|l| l.trim_start_matches(':').starts_with("conflict{"))
        .unwrap_or_else(|| panic!("no conflict block:\n{doc}"));
    assert!(open.contains("(say 'hi' to ((nowhere)))"), "{open}");
    let d = noma_core::doc::parse(&doc);
    let conflict = d
        .walk()
        .find(|n| {
            n.id.as_deref()
                .is_some_and(|i| i.starts_with("merge-conflict-"))
        })
        .unwrap_or_else(|| panic!("the conflict block does not parse:\n{doc}"));
    let theirs = conflict
        .attrs()
        .and_then(|a| a.get_str("theirs"))
        .unwrap_or("");
    assert!(theirs.contains("(say 'hi' to"), "{theirs}");
    let o = r.noma(&["check", "plan.noma", "--format", "json"]);
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let codes: Vec<&str> = report[0]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["severity"] == "error")
        .filter_map(|d| d["code"].as_str())
        .collect();
    assert_eq!(codes, ["unresolved-conflict"], "{doc}");
}

/// The everyday merge of a long transcript: main holds a few hundred
/// records, each branch appends a couple (the driver's streamed path: the
/// base's transcript is a prefix of both sides'). The merge is clean, the
/// merged transcript is ours then their records rebased, byte for byte
/// what the whole reconciliation computes from the three versions, and it
/// replays; with every blob streamed through git (the hook's reads) too.
#[test]
fn f_appends_to_a_long_transcript_merge_cleanly_as_the_whole_reconciliation_says() {
    let r = setup_transcripts();
    let history: Vec<serde_json::Value> = (0..300)
        .map(|i| serde_json::json!({"op": "update_attribute", "id": "d", "key": "n", "value": i.to_string()}))
        .collect();
    let ops = serde_json::Value::from(history).to_string();
    r.agent_patch("plan.noma", &ops);
    r.commit_all("history");
    r.branch_patch("main", "A", &[body_op("a", "ALPHA"), body_op("c", "GAMMA")]);
    r.branch_patch("main", "B", &[body_op("b", "BETA")]);
    let show = |rev: &str, path: &str| r.ok(&["show", &format!("{rev}:{path}")]);
    let (base_t, ours_t, theirs_t) = (
        show("main", "plan.noma.patches"),
        show("B", "plan.noma.patches"),
        show("A", "plan.noma.patches"),
    );
    assert!(ours_t.starts_with(&base_t) && theirs_t.starts_with(&base_t));
    let start = show("main", "plan.noma");
    let mut find = |sha: &str| {
        (noma_core::doc::hash::sha256_hex(start.as_bytes()) == sha).then(|| start.clone())
    };
    let whole = noma_merge::transcript::reconcile_transcripts(
        ours_t.as_bytes(),
        theirs_t.as_bytes(),
        Some(base_t.as_bytes()),
        None,
        &mut find,
    )
    .unwrap();
    assert!(whole.conflicts.is_empty(), "{:?}", whole.conflicts);
    assert!(whole.transcript.len() > ours_t.len());
    let base_doc = r.home.path().join("base.noma");
    std::fs::write(&base_doc, doc()).unwrap();
    let ours_commit = r.ok(&["rev-parse", "B"]).trim().to_string();
    for streamed_blobs in ["", "NOMA_STREAM_BLOBS_OVER=0 "] {
        r.ok(&["checkout", "-q", "B"]);
        r.ok(&["reset", "-q", "--hard", &ours_commit]);
        let o = r.sh(&format!("{streamed_blobs}git merge --no-edit A"));
        assert!(o.status.success(), "merge must be clean: {}", text(&o));
        let merged = r.read("plan.noma.patches");
        assert_eq!(merged.as_bytes(), &whole.transcript[..], "{streamed_blobs}");
        assert_eq!(merged.lines().count(), 300 + 3, "{streamed_blobs}");
        assert_eq!(r.read("plan.noma"), whole.doc, "{streamed_blobs}");
        let base_arg = base_doc.to_str().unwrap();
        let o = r.noma(&["replay", "plan.noma", "--base", base_arg]);
        assert!(o.status.success(), "{}", text(&o));
    }
}

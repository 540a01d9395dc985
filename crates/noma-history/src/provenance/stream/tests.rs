//! The streamed statuses are the whole check's, chunk by chunk.

use std::path::Path;

use super::*;
use crate::provenance::check::check_worktree;
use noma_provenance::tests::{agent, codes_of, every_problem, person, EVERY_PROBLEM_CODES};

/// A work tree holding `doc.noma` with the transcript `t` and the sidecar
/// `side` (its lines as given), under the policy the verification tests
/// use.
fn work_tree(dir: &Path, transcript: &[u8], side: &[u8]) -> std::path::PathBuf {
    std::fs::create_dir_all(dir.join(".noma")).unwrap();
    std::fs::write(
        dir.join(".noma/config.yml"),
        "provenance:\n  signatures: required\n  agents_need_approval: true\n  agent_principals: [\"*@agents.example\"]\n",
    )
    .unwrap();
    std::fs::write(
        dir.join(".noma/allowed_signers"),
        format!(
            "alice@example.com namespaces=\"noma\" {}\n*@agents.example namespaces=\"noma\" {}\n",
            person().public_openssh(),
            agent().public_openssh()
        ),
    )
    .unwrap();
    let doc = dir.join("doc.noma");
    std::fs::write(&doc, "").unwrap();
    std::fs::write(dir.join("doc.noma.patches"), transcript).unwrap();
    std::fs::write(dir.join("doc.noma.provenance"), side).unwrap();
    doc
}

fn streamed(doc: &Path, chunk: usize) -> (Vec<RecordStatus>, Option<Problem>) {
    let mut s = WorktreeStream::open(doc, None).unwrap();
    let mut out = Vec::new();
    s.statuses(chunk, &mut |st| {
        out.push(st);
        Ok(())
    })
    .unwrap();
    (out, s.sidecar().cloned())
}

#[test]
fn streamed_statuses_are_the_whole_checks() {
    // Copies repeating an op_id (one of an edited original), an edited
    // record, an unsigned one, a key not allowed, an approval; the
    // sidecar repeats a signature line and the approval line, and lists
    // the approval between signatures.
    let (t, side) = every_problem();
    let mut transcript = Vec::new();
    for e in &t {
        // The copies' rebased hashes get their display aliases (no
        // signature binds them), so every line parses.
        let mut r = e.record.clone();
        r.pre_sha = r.pre_sha256[..8].to_string();
        r.post_sha = r.post_sha256[..8].to_string();
        transcript.extend_from_slice(serde_json::to_string(&r).unwrap().as_bytes());
        transcript.push(b'\n');
    }
    let sig = |s: &noma_provenance::sidecar::RecordSignature| {
        SidecarEntry::Signature(s.clone()).to_line()
    };
    let approval = SidecarEntry::Approval(side.approvals[0].1.clone()).to_line();
    let mut lines: Vec<String> = side.signatures.iter().map(|(_, s)| sig(s)).collect();
    lines.insert(2, approval.clone());
    lines.push(sig(&side.signatures[0].1));
    lines.push(approval);
    let dir = tempfile::tempdir().unwrap();
    let doc = work_tree(dir.path(), &transcript, lines.concat().as_bytes());
    let whole = check_worktree(&doc, &transcript).unwrap();
    assert_eq!(whole.sidecar, None);
    assert_eq!(codes_of(&whole.records), EVERY_PROBLEM_CODES);
    assert_eq!(
        whole.records[0].approved_by.as_deref(),
        Some("alice@example.com")
    );
    for chunk in [1, 2, 3, 5, CHUNK] {
        let (st, side) = streamed(&doc, chunk);
        assert_eq!(st, whole.records, "chunk {chunk}");
        assert_eq!(side, None);
    }
    // An approval naming records of different chunks is judged once and
    // covers both.
    let (r2, r5) = (&t[1].record, &t[4].record);
    let both = person()
        .approve(
            "doc.noma",
            &[r2, r5],
            &r5.post_sha256,
            &noma_provenance::tests::lin(),
        )
        .unwrap();
    let mut more = lines.concat();
    more.push_str(&both.to_line());
    std::fs::write(dir.path().join("doc.noma.provenance"), &more).unwrap();
    let whole = check_worktree(&doc, &transcript).unwrap();
    let approved: Vec<usize> = (whole.records.iter())
        .filter(|s| s.approved_by.is_some())
        .map(|s| s.line)
        .collect();
    assert_eq!(approved, [1, 2, 5]);
    for chunk in [1, 2, 3, CHUNK] {
        assert_eq!(streamed(&doc, chunk).0, whole.records, "chunk {chunk}");
    }
    // A sidecar line that is no entry: no status, the same problem.
    let bad = format!("{}{{\"kind\":\"x\"}}\n", lines[0]);
    std::fs::write(dir.path().join("doc.noma.provenance"), &bad).unwrap();
    let whole = check_worktree(&doc, &transcript).unwrap();
    assert_eq!(streamed(&doc, 2), (Vec::new(), whole.sidecar.clone()));
    assert_eq!(whole.sidecar.unwrap().line, 2);
    // A transcript line that is no record: no status either.
    let mut broken = transcript.clone();
    broken.extend_from_slice(b"{\"not\":\"a record\"}\n");
    std::fs::write(dir.path().join("doc.noma.patches"), &broken).unwrap();
    std::fs::write(dir.path().join("doc.noma.provenance"), lines.concat()).unwrap();
    assert!(check_worktree(&doc, &broken).unwrap().records.is_empty());
    assert_eq!(streamed(&doc, 2), (Vec::new(), None));
}

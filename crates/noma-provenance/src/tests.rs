//! Verification scenarios over hand-built records: each of the five codes,
//! and signatures and approvals surviving a re-chained transcript.
#![cfg_attr(not(test), allow(unused_imports))]

use std::path::Path;

use serde_json::json;

use super::verify::{codes, verify};
use super::*;
use crate::config::Policy;
use noma_core::transcript::{parse_record, Entry};

const AGENT_KEY: &str = "-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW
QyNTUxOQAAACB9NaBZtzevaRGfBrRztSb+bQ3KTyE5LMjltqwcE8A8gAAAAJB/lI5Vf5SO
VQAAAAtzc2gtZWQyNTUxOQAAACB9NaBZtzevaRGfBrRztSb+bQ3KTyE5LMjltqwcE8A8gA
AAAEB2XRRRNXdzFwUrXLh8H1miIBwvcEjN5FhYtnErkm01En01oFm3N69pEZ8GtHO1Jv5t
DcpPITksyOW2rBwTwDyAAAAACmFnZW50QG5vbWEBAgM=
-----END OPENSSH PRIVATE KEY-----
";

/// The person who approves: alice@example.com with the test key.
pub fn person() -> Signer {
    let k = sshsig::tests::test_key();
    Signer::new(k, Some("alice@example.com".into()), None).unwrap()
}

/// The agent who signs: bot@agents.example with its own key.
pub fn agent() -> Signer {
    let k = SigningKey::from_openssh(AGENT_KEY, Path::new("agent")).unwrap();
    Signer::new(k, Some("bot@agents.example".into()), None).unwrap()
}

fn trust(signatures: &str, approval: bool) -> Trust {
    let policy = Policy::from_yaml(&format!(
        "provenance:\n  signatures: {signatures}\n  agents_need_approval: {approval}\n  agent_principals: [\"*@agents.example\"]\n"
    ))
    .unwrap();
    let signers = AllowedSigners::parse(&format!(
        "alice@example.com namespaces=\"noma\" {}\n*@agents.example namespaces=\"noma\" {}\n",
        person().key.public_openssh(),
        agent().key.public_openssh()
    ));
    Trust::new(policy, signers)
}

fn sha(n: u8) -> String {
    noma_core::doc::hash::sha256_hex(&[n])
}

/// Record `i` (1-based line): agent records unless `human`.
pub fn record(i: usize, human: bool) -> Entry {
    let (pre, post) = (sha(i as u8 - 1), sha(i as u8));
    // Each actor is named as its signer's principal's local part, so a
    // signature is no signer-mismatch.
    let (kind, name) = if human {
        ("human", "alice")
    } else {
        ("agent", "bot")
    };
    let v = json!({
        "protocol_version": "1.0", "tool_version": "0.1.0",
        "op_id": format!("00000000-0000-4000-8000-{i:012}"),
        "ts": "2026-11-26T10:00:00.000Z",
        "actor": {"kind": kind, "name": name},
        "doc_uri": "doc.noma",
        "pre_sha256": pre, "post_sha256": post,
        "pre_sha": &pre[..8], "post_sha": &post[..8],
        "op": {"op": "update_attribute", "id": "a", "key": "v", "value": i},
        "patch_result": "applied", "pre_validation": "ok", "post_validation": "ok",
        "reason": "why",
    });
    Entry {
        line: i,
        offset: 0,
        line_sha256: String::new(),
        record: parse_record(i, v.to_string().as_bytes()).unwrap(),
    }
}

/// The lineage of the transcripts here: their first record's.
pub fn lin() -> canonical::Lineage {
    canonical::Lineage::of(&record(1, false).record)
}

/// Two agent records and a human one, each signed by its own key.
fn signed() -> (Vec<Entry>, Sidecar) {
    let t = vec![record(1, false), record(2, false), record(3, true)];
    let mut side = Sidecar::default();
    for (i, e) in t.iter().enumerate() {
        let s = if i < 2 { agent() } else { person() };
        match s.sign_record(&e.record, &lin()).unwrap() {
            SidecarEntry::Signature(sig) => side.signatures.push((i + 1, sig)),
            SidecarEntry::Approval(_) => unreachable!(),
        }
    }
    (t, side)
}

fn approve(side: &mut Sidecar, by: &Signer, t: &[Entry], draft: &str) {
    let recs: Vec<&noma_core::transcript::Record> = t.iter().map(|e| &e.record).collect();
    match by.approve("doc.noma", &recs, draft, &lin()).unwrap() {
        SidecarEntry::Approval(a) => side.approvals.push((9, a)),
        SidecarEntry::Signature(_) => unreachable!(),
    }
}

/// Every problem of `st` as (line, code, level).
pub fn codes_of(st: &[RecordStatus]) -> Vec<(usize, &'static str, &'static str)> {
    st.iter()
        .flat_map(|s| &s.problems)
        .map(|p| (p.line, p.code, p.level))
        .collect()
}

#[test]
fn signed_agent_records_need_a_persons_approval() {
    let tr = trust("required", true);
    let (t, mut side) = signed();
    let st = verify(&tr, &t, 0, &side);
    assert_eq!(st[0].signed_by.as_deref(), Some("bot@agents.example"));
    assert_eq!(st[2].signed_by.as_deref(), Some("alice@example.com"));
    assert_eq!(
        codes_of(&st),
        [
            (1, codes::APPROVAL_MISSING, "error"),
            (2, codes::APPROVAL_MISSING, "error")
        ]
    );
    approve(&mut side, &person(), &t[..2], &sha(2));
    let st = verify(&tr, &t, 0, &side);
    assert_eq!(codes_of(&st), []);
    assert_eq!(st[1].approved_by.as_deref(), Some("alice@example.com"));
    // Re-chained (merge, rebase, repair): every signature and approval holds.
    let mut moved = t.clone();
    for e in &mut moved {
        e.record.prev_entry_sha256 = Some(sha(99));
        e.line += 5;
    }
    assert_eq!(codes_of(&verify(&tr, &moved, 0, &side)), []);
    // Only the range is reported.
    assert_eq!(verify(&tr, &t, 2, &side).len(), 1);
}

#[test]
fn each_forgery_has_its_code_and_line() {
    let tr = trust("required", true);
    let (t, mut side) = signed();
    approve(&mut side, &person(), &t[..2], &sha(2));
    // An edited reason, op or actor.
    for edit in 0..3 {
        let mut t2 = t.clone();
        let r = &mut t2[2].record;
        match edit {
            0 => r.reason = Some("other".into()),
            1 => r.op["value"] = json!(42),
            _ => r.actor.kind = noma_core::transcript::ActorKind::Tool,
        }
        assert_eq!(
            codes_of(&verify(&tr, &t2, 0, &side)),
            [(3, codes::INVALID, "error")],
            "edit {edit}"
        );
    }
    // An edited agent record: its signature and its approval both fail;
    // the approval binds each intent, so it still covers the other one.
    let mut t2 = t.clone();
    t2[0].record.reason = Some("other".into());
    assert_eq!(
        codes_of(&verify(&tr, &t2, 0, &side)),
        [
            (1, codes::INVALID, "error"),
            (1, codes::APPROVAL_INVALID, "error")
        ]
    );
    // An unsigned record appended.
    let mut t2 = t.clone();
    t2.push(record(4, true));
    assert_eq!(
        codes_of(&verify(&tr, &t2, 0, &side)),
        [(4, codes::UNSIGNED, "error")]
    );
    // Under warn, unsigned is a warning; a forgery stays an error.
    let warn = trust("warn", false);
    let mut t3 = t2.clone();
    t3[2].record.reason = None;
    assert_eq!(
        codes_of(&verify(&warn, &t3, 0, &side)),
        [
            (3, codes::INVALID, "error"),
            (4, codes::UNSIGNED, "warning")
        ]
    );
    // Off reports nothing.
    assert_eq!(codes_of(&verify(&trust("off", false), &t3, 0, &side)), []);
    // A key the base does not list for the principal it names.
    let stranger = Signer::new(
        SigningKey::from_openssh(AGENT_KEY, Path::new("k")).unwrap(),
        Some("alice@example.com".into()),
        None,
    )
    .unwrap();
    let mut side2 = side.clone();
    side2
        .signatures
        .retain(|(_, s)| s.op_id != t[2].record.op_id);
    if let SidecarEntry::Signature(s) = stranger.sign_record(&t[2].record, &lin()).unwrap() {
        side2.signatures.push((7, s));
    }
    // (The agent's key signing as alice: not allowed for her, and, being
    // an agent's key, needing approval whatever principal it names.)
    assert_eq!(
        codes_of(&verify(&tr, &t, 0, &side2)),
        [
            (3, codes::NOT_ALLOWED, "error"),
            (3, codes::APPROVAL_MISSING, "error")
        ]
    );
    // A signature copied from another record.
    let mut side3 = side.clone();
    side3
        .signatures
        .retain(|(_, s)| s.op_id != t[2].record.op_id);
    let mut copied = side.signatures[0].1.clone();
    copied.op_id = t[2].record.op_id.clone();
    side3.signatures.push((7, copied));
    assert_eq!(
        codes_of(&verify(&tr, &t, 0, &side3)),
        [(3, codes::INVALID, "error")]
    );
}

#[test]
fn approvals_that_do_not_hold() {
    let tr = trust("required", true);
    let (t, side) = signed();
    // Approved by an agent principal.
    let mut s = side.clone();
    approve(&mut s, &agent(), &t[..2], &sha(2));
    let st = verify(&tr, &t, 0, &s);
    assert_eq!(
        codes_of(&st),
        [
            (1, codes::APPROVAL_INVALID, "error"),
            (2, codes::APPROVAL_INVALID, "error")
        ]
    );
    assert!(st[0].problems[0].message.contains("agent principal"));
    // A draft that is not the document after the last approved record.
    let mut s = side.clone();
    approve(&mut s, &person(), &t[..2], &sha(7));
    let st = verify(&tr, &t, 0, &s);
    assert!(st[0].problems[0].message.contains("draft"), "{st:?}");
    assert_eq!(st[0].problems[0].code, codes::APPROVAL_INVALID);
    // An approval of the first record only leaves the second missing.
    let mut s = side.clone();
    approve(&mut s, &person(), &t[..1], &sha(1));
    assert_eq!(
        codes_of(&verify(&tr, &t, 0, &s)),
        [(2, codes::APPROVAL_MISSING, "error")]
    );
}

/// What a merge writes for a record of the other side: a copy with a
/// derived op_id, the original as parent, the reason saying so, rebased
/// hashes and baseHash.
fn copy_of(e: &Entry, line: usize) -> Entry {
    let mut c = e.clone();
    let r = &mut c.record;
    r.parent_op_id = Some(r.op_id.clone());
    r.reason = Some(format!(
        "reconciled: op {} from the merged branch, rebased onto {}; original reason: {}",
        r.op_id,
        &sha(50)[..8],
        r.reason.clone().unwrap_or_default()
    ));
    r.op_id = format!("00000000-0000-4000-9000-{line:012}");
    r.pre_sha256 = sha(50 + line as u8);
    r.post_sha256 = sha(60 + line as u8);
    r.op["baseHash"] = json!("rebased");
    c.line = line;
    c
}

#[test]
fn merged_copies_keep_signatures_and_approvals_and_cannot_repeat() {
    let tr = trust("required", true);
    let (t, mut side) = signed();
    approve(&mut side, &person(), &t[..2], &sha(2));
    // main's transcript after merging the branch: its own record, then
    // the branch's records as copies.
    let merged = vec![t[2].clone(), copy_of(&t[0], 2), copy_of(&t[1], 3)];
    let st = verify(&tr, &merged, 0, &side);
    assert_eq!(codes_of(&st), []);
    assert_eq!(st[1].signed_by.as_deref(), Some("bot@agents.example"));
    assert_eq!(st[2].approved_by.as_deref(), Some("alice@example.com"));
    // A copy whose op was retargeted is not what was signed.
    let mut bad = merged.clone();
    bad[1].record.op["id"] = json!("b");
    assert_eq!(
        codes_of(&verify(&tr, &bad, 0, &side)),
        [
            (2, codes::INVALID, "error"),
            (2, codes::APPROVAL_INVALID, "error")
        ]
    );
    // A copy beside its original replays a signed intent.
    let mut replayed = t.clone();
    replayed.push(copy_of(&t[2], 4));
    assert_eq!(
        codes_of(&verify(&tr, &replayed, 0, &side)),
        [(4, codes::INVALID, "error")]
    );
}

#[test]
fn a_signature_from_another_document_does_not_verify() {
    let tr = trust("required", false);
    let (t, side) = signed();
    // The same record in another document: same op_id, op, actor, ts.
    let mut elsewhere = t.clone();
    elsewhere[2].record.doc_uri = "other.noma".into();
    assert_eq!(
        codes_of(&verify(&tr, &elsewhere, 0, &side)),
        [(3, codes::INVALID, "error")]
    );
}

/// A `noma-approval/1` of `t` by `by`, as approvals were written before
/// `/2`: one subject over the records in order.
fn approve_v1(side: &mut Sidecar, by: &Signer, t: &[Entry], draft: &str) {
    let body = canonical::ApprovalBody {
        approver: by.principal.clone(),
        ts: "2026-11-26T11:00:00.000Z".into(),
        doc_uri: "doc.noma".into(),
        op_ids: t.iter().map(|e| e.record.op_id.clone()).collect(),
        subject_sha256: canonical::subject_sha256(t.iter().map(|e| &e.record)),
        intent_sha256: Vec::new(),
        draft_sha256: draft.into(),
        lineage: None,
    };
    assert_eq!(body.payload_type(), canonical::APPROVAL_PAYLOAD);
    let sig = by.key.sign(&canonical::approval_payload(&body)).unwrap();
    side.approvals.push((8, sidecar::Approval { body, sig }));
}

/// The transcript after history work: the two approved agent records in
/// the other order (the second one first), re-chained.
fn swapped(t: &[Entry]) -> Vec<Entry> {
    let mut moved = vec![t[1].clone(), t[0].clone(), t[2].clone()];
    for (i, e) in moved.iter_mut().enumerate() {
        e.line = i + 1;
        e.record.post_sha256 = sha(30 + i as u8);
    }
    moved
}

#[test]
fn an_approval_covers_each_approved_intent_in_any_order() {
    let tr = trust("required", true);
    let (t, mut side) = signed();
    approve(&mut side, &person(), &t[..2], &sha(2));
    assert_eq!(
        side.approvals[0].1.body.payload_type(),
        canonical::APPROVAL_PAYLOAD_V2
    );
    // Reordered: both covered; the draft is not checked any more (the
    // document they leave is not the one approved).
    let st = verify(&tr, &swapped(&t), 0, &side);
    assert_eq!(codes_of(&st), []);
    assert_eq!(st[0].approved_by.as_deref(), Some("alice@example.com"));
    // One approved record dropped (a conflict kept the other side): the
    // other is still covered.
    let dropped = vec![t[0].clone(), t[2].clone()];
    assert_eq!(codes_of(&verify(&tr, &dropped, 0, &side)), []);
    // All present, originals, in order: the draft is checked.
    let mut later = t.clone();
    later[1].record.post_sha256 = sha(40);
    let st = verify(&tr, &later, 0, &side);
    assert_eq!(st[0].problems[0].code, codes::APPROVAL_INVALID, "{st:?}");
    assert!(st[0].problems[0].message.contains("draft"), "{st:?}");
    // An intent count that does not match its op_ids is refused.
    side.approvals[0].1.body.intent_sha256.pop();
    let st = verify(&tr, &t, 0, &side);
    assert_eq!(st[0].problems[0].code, codes::APPROVAL_INVALID, "{st:?}");
}

#[test]
fn a_noma_approval_1_still_verifies_while_all_its_records_are_present() {
    let tr = trust("required", true);
    let (t, side) = signed();
    let mut v1 = side.clone();
    approve_v1(&mut v1, &person(), &t[..2], &sha(2));
    assert_eq!(codes_of(&verify(&tr, &t, 0, &v1)), []);
    // Its subject is in its own order: a reordering keeps it.
    assert_eq!(codes_of(&verify(&tr, &swapped(&t), 0, &v1)), []);
    // One subject over all: a dropped record leaves the other uncovered,
    // and the message says how to approve it again.
    let dropped = vec![t[0].clone(), t[2].clone()];
    let st = verify(&tr, &dropped, 0, &v1);
    assert_eq!(codes_of(&st), [(1, codes::APPROVAL_INVALID, "error")]);
    assert!(
        st[0].problems[0].message.contains("noma-approval/1")
            && st[0].problems[0].message.contains("`noma approve`"),
        "{st:?}"
    );
    // An edited record fails the subject.
    let mut edited = t.clone();
    edited[1].record.reason = Some("other".into());
    let st = verify(&tr, &edited, 0, &v1);
    assert!(st[0]
        .problems
        .iter()
        .any(|p| p.code == codes::APPROVAL_INVALID));
}

/// The problems [`every_problem`]'s history has, as [`codes_of`] lists
/// them, whatever reads it (one batch, chunks, a stream).
pub const EVERY_PROBLEM_CODES: [(usize, &str, &str); 8] = [
    (2, codes::APPROVAL_MISSING, "error"),
    (4, codes::UNSIGNED, "error"),
    (5, codes::NOT_ALLOWED, "error"),
    (5, codes::APPROVAL_MISSING, "error"),
    // The edited original is a forgery even though a faithful copy of it,
    // verified in the same batch, would verify.
    (6, codes::INVALID, "error"),
    (7, codes::INVALID, "error"),
    (7, codes::APPROVAL_MISSING, "error"),
    (8, codes::INVALID, "error"),
];

/// A history with every kind of problem: a missing approval, an unsigned
/// record, a key not allowed for its principal, an edited record, and
/// copies repeating an op_id (one beside an edited original).
pub fn every_problem() -> (Vec<Entry>, Sidecar) {
    let (mut t, mut side) = signed();
    approve(&mut side, &person(), &t[..1], &sha(1));
    t.push(record(4, true));
    let stranger = Signer::new(
        SigningKey::from_openssh(AGENT_KEY, Path::new("k")).unwrap(),
        Some("alice@example.com".into()),
        None,
    )
    .unwrap();
    let (r5, r6) = (record(5, true), record(6, true));
    for (by, r) in [(&stranger, &r5), (&person(), &r6)] {
        if let SidecarEntry::Signature(s) = by.sign_record(&r.record, &lin()).unwrap() {
            side.signatures.push((side.signatures.len() + 1, s));
        }
    }
    let mut edited = r6.clone();
    edited.record.reason = Some("other".into());
    t.extend([r5, edited, copy_of(&t[0], 7), copy_of(&r6, 8)]);
    (t, side)
}

#[test]
fn chunked_verification_finds_what_one_batch_finds() {
    let tr = trust("required", true);
    let (t, side) = every_problem();
    let all = verify::verify_chunked(&tr, &t, &side, &|_, _| true, usize::MAX);
    assert_eq!(codes_of(&all), EVERY_PROBLEM_CODES);
    for chunk in [0, 1, 2, 3, 5, 1024] {
        let st = verify::verify_chunked(&tr, &t, &side, &|_, _| true, chunk);
        assert_eq!(st, all, "chunk {chunk}");
    }
    let from_4 = verify::verify_chunked(&tr, &t, &side, &|i, _| i >= 3, 2);
    assert_eq!(from_4, all[3..]);
}

//! What a signature or an approval signs: the RFC 8785 (JCS) canonical
//! JSON of the fields it binds.
//!
//! A record's payload binds its identity and intent (`op_id`, `op`,
//! `actor`, `reason`, `doc_uri`, `ts`) and the signer's principal, never
//! its place in the hash chain (`pre_sha256`, `post_sha256`,
//! `prev_entry_sha256`): merge, rebase, `reconcile --write` and `repair`
//! re-chain records without changing what they say, and every signature
//! stays valid. A `type` member separates the two payload kinds, so a
//! record signature can never be replayed as an approval or back.
//!
//! `noma-record-signature/2` and `noma-approval/3` also bind the document's
//! [`Lineage`] (its transcript's first record), which a verifier takes
//! from the transcript the record sits in, never from the record: a
//! record or approval signed for one document does not verify in another.

use serde_json::{json, Value};

use noma_core::doc::hash::sha256_hex;
use noma_core::transcript::Record;

/// `type` of a record signature's payload.
pub const RECORD_PAYLOAD: &str = "noma-record-signature/1";
/// `type` of a record signature's payload that also binds the document's
/// [`Lineage`].
pub const RECORD_PAYLOAD_V2: &str = "noma-record-signature/2";
/// `type` of an approval's payload that binds its records as one ordered
/// subject (written before `noma-approval/2`; still verified).
pub const APPROVAL_PAYLOAD: &str = "noma-approval/1";
/// `type` of an approval's payload that binds each record's intent on its
/// own (`intent_sha256`, one per op_id), so each approved record still in
/// the transcript stays covered, in any order.
pub const APPROVAL_PAYLOAD_V2: &str = "noma-approval/2";
/// `type` of a `noma-approval/2` that also binds the document's
/// [`Lineage`].
pub const APPROVAL_PAYLOAD_V3: &str = "noma-approval/3";

/// A document's identity: its transcript's first record, by op_id and the
/// document it left. Renames, copies of the transcript, merges, rebases
/// and cherry-picks keep the first record, so they keep the lineage; a
/// document started anew (`cp` + first patch) has its own. Two documents
/// share one only when one's history is a copy of the other's from its
/// first record on, same first state included.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Lineage {
    /// The first record's op_id.
    pub genesis_op_id: String,
    /// The document after the first record.
    pub genesis_post_sha256: String,
}

impl Lineage {
    /// The lineage of a transcript whose first record is `first`.
    pub fn of(first: &Record) -> Lineage {
        Lineage {
            genesis_op_id: first.op_id.clone(),
            genesis_post_sha256: first.post_sha256.clone(),
        }
    }
}

/// The RFC 8785 canonical bytes of `value`.
pub fn canonical(value: &Value) -> Vec<u8> {
    // A serde_json::Value has only finite numbers and string keys, the
    // two things JCS refuses, so this cannot fail.
    serde_json_canonicalizer::to_vec(value).unwrap_or_default()
}

/// The op as signed: without the fields a rebase recomputes from the
/// state the op lands on (`baseHash`, an `add_block`'s sibling `position`,
/// an `x-noma/replace_lines` hunk's `line`), which are chain position, not
/// intent; its target, content and anchor text stay bound.
pub fn signed_op(op: &Value) -> Value {
    let name = op.get("op").and_then(Value::as_str).unwrap_or_default();
    let mut op = op.clone();
    if let Some(o) = op.as_object_mut() {
        o.remove("baseHash");
        match name {
            "add_block" => {
                o.remove("position");
            }
            noma_core::patch::REPLACE_LINES => {
                o.remove("line");
            }
            _ => {}
        }
    }
    op
}

/// The record a reconciled copy stands for: a merge or `reconcile
/// --write` re-applies a record of the other side as a copy whose
/// `op_id` is derived, whose `parent_op_id` names the original and whose
/// `reason` says so (keeping the original reason after `; original
/// reason: `), with the original's `actor`, `ts` and `doc_uri`. The
/// original's intent is rebuilt from it; `None` for a record that is no
/// copy.
pub fn original_of(rec: &Record) -> Option<Record> {
    let parent = rec.parent_op_id.as_deref()?;
    let reason = rec.reason.as_deref()?;
    let head = format!("reconciled: op {parent} from the merged branch");
    if !reason.starts_with(&head) {
        return None;
    }
    let mut o = rec.clone();
    o.op_id = parent.to_string();
    o.parent_op_id = None;
    o.reason = reason
        .split_once("; original reason: ")
        .map(|(_, r)| r.to_string());
    Some(o)
}

/// The op_id of the op `rec` stands for: its original's for a merge copy
/// ([`original_of`] would rebuild one), else its own.
pub fn origin_op_id(rec: &Record) -> &str {
    let copy_of = rec.parent_op_id.as_deref().filter(|parent| {
        (rec.reason.as_deref())
            .and_then(|r| r.strip_prefix("reconciled: op "))
            .and_then(|r| r.strip_prefix(*parent))
            .is_some_and(|r| r.starts_with(" from the merged branch"))
    });
    copy_of.unwrap_or(&rec.op_id)
}

/// The first 8 bytes of the BLAKE3 of an op_id: what an index of a long
/// history keeps of it (a match is a candidate, checked by the op_id).
pub fn fingerprint(op_id: &str) -> u64 {
    let h = blake3::hash(op_id.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&h.as_bytes()[..8]);
    u64::from_le_bytes(first)
}

/// The intent of a record: the fields a signature and an approval bind.
pub fn intent(rec: &Record) -> Value {
    json!({
        "op_id": rec.op_id,
        "op": signed_op(&rec.op),
        "actor": rec.actor,
        "reason": rec.reason,
        "doc_uri": rec.doc_uri,
        "ts": rec.ts,
    })
}

/// The `noma-record-signature/1` bytes `signer` signed for `rec`
/// (written before `/2`; binds no lineage, see [`record_payload_v2`]).
pub fn record_payload(rec: &Record, signer: &str) -> Vec<u8> {
    let mut v = intent(rec);
    v["type"] = json!(RECORD_PAYLOAD);
    v["signer"] = json!(signer);
    canonical(&v)
}

/// The `noma-record-signature/2` bytes `signer` signs for `rec` in the
/// document of lineage `lineage`.
pub fn record_payload_v2(rec: &Record, signer: &str, lineage: &Lineage) -> Vec<u8> {
    let mut v = intent(rec);
    v["type"] = json!(RECORD_PAYLOAD_V2);
    v["signer"] = json!(signer);
    v["lineage"] = json!(lineage);
    canonical(&v)
}

/// sha256 of one record's canonical [`intent`]: what a
/// `noma-approval/2` binds per approved record.
pub fn intent_sha256(rec: &Record) -> String {
    sha256_hex(&canonical(&intent(rec)))
}

/// The `noma-approval/1` subject: sha256 of the canonical array of the
/// approved records' intents, in the approval's order.
pub fn subject_sha256<'a>(records: impl IntoIterator<Item = &'a Record>) -> String {
    let list: Vec<Value> = records.into_iter().map(intent).collect();
    sha256_hex(&canonical(&Value::Array(list)))
}

/// The fields an approval binds (its signature aside).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ApprovalBody {
    /// The approver's principal.
    pub approver: String,
    /// When it was approved (the transcript's timestamp format).
    pub ts: String,
    /// `doc_uri` of the approved records' document.
    pub doc_uri: String,
    /// The approved records, in transcript order when approved.
    pub op_ids: Vec<String>,
    /// `noma-approval/1` only: [`subject_sha256`] of those records.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub subject_sha256: String,
    /// `noma-approval/2` only: [`intent_sha256`] of each record, one per
    /// op_id in the same order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub intent_sha256: Vec<String>,
    /// sha256 of the document after the last approved record.
    pub draft_sha256: String,
    /// `noma-approval/3` only: the lineage of the document approved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lineage: Option<Lineage>,
}

impl ApprovalBody {
    /// The payload type: `noma-approval/3` when the body binds each
    /// record's intent and the lineage, `noma-approval/2` each record's
    /// intent alone, else `noma-approval/1`.
    pub fn payload_type(&self) -> &'static str {
        if self.intent_sha256.is_empty() {
            APPROVAL_PAYLOAD
        } else if self.lineage.is_none() {
            APPROVAL_PAYLOAD_V2
        } else {
            APPROVAL_PAYLOAD_V3
        }
    }
}

/// The bytes an approver signs: the body's fields and its
/// [`ApprovalBody::payload_type`] (a `noma-approval/1` body serialises
/// exactly as before `/2` existed, so old approvals still verify).
pub fn approval_payload(body: &ApprovalBody) -> Vec<u8> {
    let mut v = serde_json::to_value(body).unwrap_or_default();
    v["type"] = json!(body.payload_type());
    canonical(&v)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 8785 §3.2.2 and Appendix B: the published examples and the
    /// number-serialisation vectors.
    #[test]
    fn rfc8785_vectors() {
        let input = r#"{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}"#;
        let v: Value = serde_json::from_str(input).unwrap();
        assert_eq!(
            String::from_utf8(canonical(&v)).unwrap(),
            r#"{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"#
        );
        // §3.2.3: keys sort by UTF-16 code units, not code points.
        let sorting = r#"{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}"#;
        let v: Value = serde_json::from_str(sorting).unwrap();
        let keys: Vec<String> =
            match serde_json::from_slice::<serde_json::Map<String, Value>>(&canonical(&v)) {
                Ok(m) => m.keys().cloned().collect(),
                Err(e) => panic!("{e}"),
            };
        assert_eq!(
            keys,
            [
                "\r",
                "1",
                "\u{80}",
                "\u{f6}",
                "\u{20ac}",
                "\u{1f600}",
                "\u{fb33}"
            ]
        );
        // Appendix B: IEEE 754 values and their canonical text.
        for (bits, want) in [
            (0x0000000000000000u64, "0"),
            (0x8000000000000000, "0"),
            (0x0000000000000001, "5e-324"),
            (0x8000000000000001, "-5e-324"),
            (0x7fefffffffffffff, "1.7976931348623157e+308"),
            (0x4340000000000000, "9007199254740992"),
            (0xc340000000000000, "-9007199254740992"),
            (0x4430000000000000, "295147905179352830000"),
            (0x44b52d02c7e14af5, "9.999999999999997e+22"),
            (0x44b52d02c7e14af6, "1e+23"),
            (0x44b52d02c7e14af7, "1.0000000000000001e+23"),
            (0x444b1ae4d6e2ef4e, "999999999999999700000"),
            (0x444b1ae4d6e2ef4f, "999999999999999900000"),
            (0x444b1ae4d6e2ef50, "1e+21"),
            (0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"),
            (0x3eb0c6f7a0b5ed8d, "0.000001"),
            (0x41b3de4355555553, "333333333.3333332"),
            (0x41b3de4355555554, "333333333.33333325"),
            (0x41b3de4355555555, "333333333.3333333"),
            (0x41b3de4355555556, "333333333.3333334"),
            (0x41b3de4355555557, "333333333.33333343"),
            (0xbecbf647612f3696, "-0.0000033333333333333333"),
            (0x43143ff3c1cb0959, "1424953923781206.2"),
        ] {
            let v = json!(f64::from_bits(bits));
            assert_eq!(String::from_utf8(canonical(&v)).unwrap(), want, "{bits:#x}");
        }
    }

    fn record() -> Record {
        noma_core::transcript::parse_record(
            1,
            br#"{"protocol_version":"1.0","tool_version":"0.1.0","op_id":"7f1c7f0e-4a8e-4b7e-9a59-0f2d9b1e8a11","ts":"2026-11-26T10:00:00.000Z","actor":{"kind":"agent","name":"bot"},"doc_uri":"doc.noma","pre_sha256":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855","post_sha256":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855","pre_sha":"e3b0c442","post_sha":"e3b0c442","op":{"op":"delete_block","id":"a"},"patch_result":"noop","pre_validation":"ok","post_validation":"ok"}"#,
        )
        .unwrap()
    }

    #[test]
    fn a_record_payload_binds_intent_and_signer_not_the_chain() {
        let r = record();
        let p = record_payload(&r, "bot@agents");
        assert_eq!(
            String::from_utf8(p.clone()).unwrap(),
            r#"{"actor":{"kind":"agent","name":"bot"},"doc_uri":"doc.noma","op":{"id":"a","op":"delete_block"},"op_id":"7f1c7f0e-4a8e-4b7e-9a59-0f2d9b1e8a11","reason":null,"signer":"bot@agents","ts":"2026-11-26T10:00:00.000Z","type":"noma-record-signature/1"}"#
        );
        let mut rechained = r.clone();
        rechained.pre_sha256 = "0".repeat(64);
        rechained.prev_entry_sha256 = Some("1".repeat(64));
        assert_eq!(record_payload(&rechained, "bot@agents"), p);
        let mut edited = r.clone();
        edited.reason = Some("x".into());
        assert_ne!(record_payload(&edited, "bot@agents"), p);
        assert_ne!(record_payload(&r, "other"), p);
        assert_ne!(subject_sha256([&r]), subject_sha256([&edited]));
        // A rebased baseHash is chain position; another target is not.
        let mut rebased = r.clone();
        rebased.op["baseHash"] = json!("abc");
        assert_eq!(record_payload(&rebased, "bot@agents"), p);
        let mut retargeted = r.clone();
        retargeted.op["id"] = json!("b");
        assert_ne!(record_payload(&retargeted, "bot@agents"), p);
    }

    #[test]
    fn a_reconciled_copy_stands_for_its_original() {
        let r = record();
        assert!(original_of(&r).is_none());
        let mut copy = r.clone();
        copy.op_id = "11111111-1111-4111-8111-111111111111".into();
        copy.parent_op_id = Some(r.op_id.clone());
        copy.reason = Some(format!(
            "reconciled: op {} from the merged branch, rebased onto 0123abcd",
            r.op_id
        ));
        let o = original_of(&copy).unwrap();
        assert_eq!(record_payload(&o, "s"), record_payload(&r, "s"));
        copy.reason = Some(format!(
            "reconciled: op {} from the merged branch, rebased onto 0123abcd; original reason: why",
            r.op_id
        ));
        assert_eq!(original_of(&copy).unwrap().reason.as_deref(), Some("why"));
        copy.reason = Some("reconciled: op other from the merged branch".into());
        assert!(original_of(&copy).is_none());
    }
}

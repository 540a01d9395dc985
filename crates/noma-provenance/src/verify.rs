//! Verifying a transcript's records against its sidecar, the base
//! revision's `.noma/allowed_signers` and its `provenance:` policy.
//!
//! For each record of the checked range: who signed it (a signature whose
//! SSHSIG verifies over the record's payload with namespace `noma`, by a
//! key the allowed-signers file lists for the claimed principal at the
//! record's time, see [`Trust::judged_at`]), and,
//! when it is an agent's record (its signer matches
//! `agent_principals`, its `actor.kind` says `agent`, or its key is listed
//! for an agent principal, whatever principal it signed as) and
//! `agents_need_approval` holds, which approval covers it. An approval
//! counts when its SSHSIG verifies and its approver is allowed and is no
//! agent principal; it covers each record whose intent it bound
//! (`noma-approval/2`: one hash per op_id, so in any order and whatever
//! other approved records history work dropped; `noma-approval/1`: one
//! subject over all of them, so only while all are present), and while
//! its records are all present, originals, in order, the document after
//! the last of them must be the draft it approved.
//!
//! Levels: `signature-invalid` (a signature that does not verify: a
//! forgery or an edited record) is an error whenever signatures are
//! checked; `unsigned-record` and `signer-not-allowed` are warnings under
//! `warn` and errors under `required`; `approval-missing` and
//! `approval-invalid` are errors under `agents_need_approval: true`.

use foldhash::HashMap;
use serde::Serialize;

use std::borrow::Cow;

use super::canonical::{
    approval_payload, intent_sha256, original_of, record_payload, record_payload_v2,
    subject_sha256, Lineage, RECORD_PAYLOAD_V2,
};
use super::sidecar::{Approval, Sidecar};
use super::signers::AllowedSigners;
use super::sshsig;
use crate::config::{Policy, SignatureLevel};
use noma_core::transcript::{ActorKind, Entry, Record};

/// The trust a verification starts from: the policy and the allowed
/// signers, both read from the base revision.
#[derive(Debug, Clone)]
pub struct Trust {
    /// The base revision's policy.
    pub policy: Policy,
    /// The base revision's `.noma/allowed_signers`.
    pub signers: AllowedSigners,
    /// A time no checked record can have been signed after, when one is
    /// known (seconds since the epoch; the check's own clock, never a
    /// committer time the branch chooses): a record is judged at its
    /// signed `ts`, but no later than this, so a record dated forward
    /// cannot borrow a key's later window.
    pub not_after: Option<u64>,
}

impl Trust {
    /// The trust in `policy` and `signers`, with no commit time known.
    pub fn new(policy: Policy, signers: AllowedSigners) -> Trust {
        Trust {
            policy,
            signers,
            not_after: None,
        }
    }

    /// The time a record or approval dated `ts` is judged at (the time
    /// `ssh-keygen -Y verify -Overify-time=` would be given): its `ts`,
    /// capped at [`Trust::not_after`]; the cap alone when `ts` does not
    /// parse; None when neither is known.
    pub fn judged_at(&self, ts: &str) -> Option<u64> {
        match (super::openssh::rfc3339_seconds(ts), self.not_after) {
            (Some(t), Some(cap)) => Some(t.min(cap)),
            (t, cap) => t.or(cap),
        }
    }

    /// Whether a verified key is an agent's: a line lists it for a
    /// principal `agent_principals` matches.
    pub fn is_agent_key(&self, key: &ssh_key::PublicKey) -> bool {
        self.signers
            .is_agent_key(key.key_data(), &|p| self.policy.is_agent_principal(p))
    }

    /// What the allowed-signers file's owner should know: skipped lines,
    /// local times, and keys listed for an agent and someone else.
    pub fn warnings(&self) -> Vec<super::signers::SignersWarning> {
        let mut out = self.signers.warnings().to_vec();
        out.extend(
            self.signers
                .agent_overlaps(&|p| self.policy.is_agent_principal(p)),
        );
        out.sort_by_key(|w| w.line);
        out
    }
}

/// One problem with one record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// `error`, `warning`, or `note` (a record older than the policy,
    /// [`codes::PRE_POLICY`]).
    pub level: &'static str,
    /// `unsigned-record`, `signature-invalid`, `signer-not-allowed`,
    /// `approval-missing` or `approval-invalid`.
    pub code: &'static str,
    /// The record's 1-based transcript line.
    pub line: usize,
    /// The record.
    pub op_id: String,
    /// What is wrong.
    pub message: String,
}

/// What verification says about one record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecordStatus {
    /// 1-based transcript line.
    pub line: usize,
    /// The record.
    pub op_id: String,
    /// Who the record says acted (`kind name`): a claim, which
    /// `signed_by` verifies or [`codes::MISMATCH`] flags.
    pub actor: String,
    /// The allowed principal whose signature verifies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signed_by: Option<String>,
    /// The record is an agent's and needs a human approval.
    pub needs_approval: bool,
    /// The approver whose approval covers it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approved_by: Option<String>,
    /// What is wrong, if anything.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<Problem>,
    /// For a merge copy, the op_id of the original it claims to stand for
    /// (a claim: the PR check asks where that original is).
    #[serde(skip)]
    pub copy_of: Option<String>,
}

/// The five codes.
pub mod codes {
    /// A record with no signature.
    pub const UNSIGNED: &str = "unsigned-record";
    /// A signature that does not verify over the record.
    pub const INVALID: &str = "signature-invalid";
    /// A valid signature by a key the base does not allow for its principal.
    pub const NOT_ALLOWED: &str = "signer-not-allowed";
    /// An agent record no approval covers.
    pub const APPROVAL_MISSING: &str = "approval-missing";
    /// An agent record covered only by approvals that do not hold.
    pub const APPROVAL_INVALID: &str = "approval-invalid";
    /// A valid signature whose principal is not the record's actor.
    pub const MISMATCH: &str = "signer-mismatch";
    /// A record older than the policy (noma-git's adoption module marks
    /// them from the repository's history).
    pub const PRE_POLICY: &str = "pre-policy-record";
    /// A record whose only valid signature is a `noma-record-signature/1`,
    /// which binds no document: it verifies, and the reviewer is told.
    pub const UNBOUND: &str = "signature-unbound";
}

/// Whether a verified principal may speak for a record's `actor.name`:
/// the name is the principal itself or its local part (before `@`),
/// compared without ASCII case. Anything else is a person or key acting
/// under another name, which the reviewer must see.
pub fn signer_matches_actor(principal: &str, actor_name: &str) -> bool {
    let local = principal.split_once('@').map_or(principal, |(l, _)| l);
    let name = actor_name.trim();
    name.eq_ignore_ascii_case(principal) || name.eq_ignore_ascii_case(local)
}

/// Whether an approval holds as a whole, with the reason when not: its
/// signature verifies, its approver is allowed and no agent principal; a
/// `noma-approval/1` binds one subject over every record it names, so
/// each must still be in the transcript; a `noma-approval/2` binds one
/// intent per op_id ([`covers`] checks each record on its own). The
/// approved draft is checked only while the approved records are all
/// present, originals, in transcript order: once history work (a merge's
/// copies, a reordering rebase, a conflict that dropped one) moved them,
/// the document they leave is not the draft the person saw, and the
/// approval vouches for their intents only.
fn check_approval(
    trust: &Trust,
    a: &Approval,
    by_op_id: &HashMap<&str, &Origin<'_>>,
    lineage: Option<&Lineage>,
) -> Result<(), ApprovalError> {
    let approver = || a.body.approver.clone();
    let key = sshsig::verify(&a.sig, &approval_payload(&a.body)).map_err(|error| {
        ApprovalError::Unverified {
            approver: approver(),
            error,
        }
    })?;
    if let Some(approved) = &a.body.lineage {
        if lineage != Some(approved) {
            return Err(ApprovalError::OtherDocument {
                approver: approver(),
                doc_uri: a.body.doc_uri.clone(),
                genesis_op_id: approved.genesis_op_id.clone(),
            });
        }
    }
    let at = trust.judged_at(&a.body.ts);
    if !trust.signers.allows_at(&a.body.approver, &key, at) {
        return Err(
            match trust.signers.window_refusal(&a.body.approver, &key, at) {
                Some(why) => ApprovalError::OutsideWindow {
                    approver: approver(),
                    why,
                },
                None => ApprovalError::NotAllowed {
                    approver: approver(),
                },
            },
        );
    }
    if trust.policy.is_agent_principal(&a.body.approver) {
        return Err(ApprovalError::ByAgent {
            approver: approver(),
        });
    }
    let named: Vec<Option<&Origin>> = (a.body.op_ids.iter())
        .map(|id| by_op_id.get(id.as_str()).copied())
        .collect();
    if a.body.intent_sha256.is_empty() {
        check_subject(a, &named)?;
    } else if a.body.intent_sha256.len() != a.body.op_ids.len() {
        return Err(ApprovalError::IntentCount {
            records: a.body.op_ids.len(),
            intents: a.body.intent_sha256.len(),
        });
    }
    let Some(all) = named.into_iter().collect::<Option<Vec<&Origin>>>() else {
        return Ok(());
    };
    let in_order = all.windows(2).all(|w| w[0].entry.line < w[1].entry.line);
    let Some(last) = all
        .last()
        .filter(|_| in_order && all.iter().all(|o| !o.is_copy))
    else {
        return Ok(());
    };
    let last = &last.entry.record.post_sha256;
    if *last != a.body.draft_sha256 {
        return Err(ApprovalError::DraftMismatch {
            approved: a.body.draft_sha256.clone(),
            found: last.clone(),
        });
    }
    Ok(())
}

/// A `noma-approval/1`'s subject: the intents of every record it names,
/// in its order (so a reordering rebase keeps it), all still present.
fn check_subject(a: &Approval, named: &[Option<&Origin<'_>>]) -> Result<(), ApprovalError> {
    let mut records = Vec::with_capacity(named.len());
    for (id, o) in a.body.op_ids.iter().zip(named) {
        let o = o.ok_or_else(|| ApprovalError::RecordGone { op_id: id.clone() })?;
        records.push(o.original.as_ref());
    }
    if subject_sha256(records) != a.body.subject_sha256 {
        return Err(ApprovalError::SubjectChanged);
    }
    Ok(())
}

/// Whether an approval that holds ([`check_approval`]) covers the record
/// `o`: a `noma-approval/2` bound the intent of o's op (its original's,
/// for a merge copy) on its own; a `noma-approval/1`'s subject bound them
/// all.
fn covers(a: &Approval, o: &Origin<'_>) -> Result<(), ApprovalError> {
    if a.body.intent_sha256.is_empty() {
        return Ok(());
    }
    let rec = o.original.as_ref();
    let at = a.body.op_ids.iter().position(|id| *id == rec.op_id);
    match at.and_then(|k| a.body.intent_sha256.get(k)) {
        Some(bound) if *bound == intent_sha256(rec) => Ok(()),
        _ => Err(ApprovalError::RecordChanged {
            op_id: rec.op_id.clone(),
        }),
    }
}

/// A record's signature verdict: the allowed principal and whether it
/// signed only a `noma-record-signature/1` (no lineage), or the code and
/// message of the problem.
type SignerVerdict = Result<(String, bool), (&'static str, String)>;

/// How one record's signatures verify: the allowed signer, or the
/// problem (the best one a signature reached: allowed, then valid but
/// not allowed, then invalid); and every key whose signature over the
/// record verifies, allowed or not.
fn record_signer(
    trust: &Trust,
    rec: &Record,
    sigs: &[(usize, &super::sidecar::RecordSignature)],
    checked: &[Result<ssh_key::PublicKey, sshsig::SigError>],
) -> (SignerVerdict, Vec<ssh_key::PublicKey>) {
    if sigs.is_empty() {
        return (
            Err((codes::UNSIGNED, "the record has no signature".into())),
            Vec::new(),
        );
    }
    let at = trust.judged_at(&rec.ts);
    let (mut worst, mut keys) = (None, Vec::new());
    for (&(_, s), result) in sigs.iter().zip(checked) {
        match result {
            Ok(key) if trust.signers.allows_at(&s.signer, key, at) => {
                keys.push(key.clone());
                return (Ok((s.signer.clone(), s.payload.is_none())), keys);
            }
            Ok(key) => {
                keys.push(key.clone());
                let fp = key.fingerprint(ssh_key::HashAlg::Sha256);
                let message = match trust.signers.window_refusal(&s.signer, key, at) {
                    Some(why) => format!("signed by {} with {fp}, but not while the key was valid for that principal: {why}", s.signer),
                    None => format!(
                        "signed by {} with {fp}, a key the base's {} does not allow for that principal",
                        s.signer,
                        super::signers::ALLOWED_SIGNERS_PATH
                    ),
                };
                worst = Some((codes::NOT_ALLOWED, message))
            }
            Err(e) => {
                if worst.is_none() {
                    worst = Some((
                        codes::INVALID,
                        format!(
                            "the signature claimed by {} does not verify over this record in this document ({e}): the record was edited, or the signature belongs to another record or another document",
                            s.signer
                        ),
                    ))
                }
            }
        }
    }
    (Err(worst.unwrap_or((codes::UNSIGNED, String::new()))), keys)
}

/// A transcript record with the original it stands for (itself, or for a
/// reconciled copy the record it was rebased from).
struct Origin<'a> {
    entry: &'a Entry,
    original: Cow<'a, Record>,
    is_copy: bool,
}

impl<'a> Origin<'a> {
    fn of(entry: &'a Entry) -> Origin<'a> {
        match original_of(&entry.record) {
            Some(o) => Origin {
                entry,
                original: Cow::Owned(o),
                is_copy: true,
            },
            None => Origin {
                entry,
                original: Cow::Borrowed(&entry.record),
                is_copy: false,
            },
        }
    }
}

/// The sidecar's approvals by the op_ids they name, each checked once,
/// lazily, when a record needs it.
struct Approvals<'a> {
    trust: &'a Trust,
    lineage: Option<&'a Lineage>,
    by_record: HashMap<&'a str, Vec<(usize, &'a Approval)>>,
    verdicts: &'a mut Verdicts,
}

/// Approvals already judged, by their index in the sidecar's approvals.
pub type Verdicts = HashMap<usize, Result<(), ApprovalError>>;

/// Why an approval does not hold, or does not cover a record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApprovalError {
    /// Its signature does not verify.
    #[error("the approval by {approver} does not verify: {error}")]
    Unverified {
        /// The principal the approval names.
        approver: String,
        /// Why the signature does not verify.
        error: sshsig::SigError,
    },
    /// It approves another document (another lineage).
    #[error("the approval by {approver} is of another document ({doc_uri}, whose first record is {genesis_op_id}), not this one")]
    OtherDocument {
        /// The principal the approval names.
        approver: String,
        /// The document the approval names.
        doc_uri: String,
        /// That document's first record.
        genesis_op_id: String,
    },
    /// Its key is listed for the approver, but not at its time.
    #[error("the approval's key is not valid for {approver} then: {why}")]
    OutsideWindow {
        /// The principal the approval names.
        approver: String,
        /// The allowed-signers window it falls outside.
        why: String,
    },
    /// Its key is not listed for the approver.
    #[error("the approval's key is not allowed for {approver} in the base's {path}", path = super::signers::ALLOWED_SIGNERS_PATH)]
    NotAllowed {
        /// The principal the approval names.
        approver: String,
    },
    /// An agent principal signed it.
    #[error("the approval is signed by {approver}, an agent principal; only a person approves")]
    ByAgent {
        /// The principal the approval names.
        approver: String,
    },
    /// It names a different number of records than it binds intents.
    #[error("the approval names {records} record(s) but binds {intents} intent(s)")]
    IntentCount {
        /// Records named.
        records: usize,
        /// Intents bound.
        intents: usize,
    },
    /// The document its records leave is not the approved draft.
    #[error("the approved draft does not match: approved sha256 {}, the document after the last approved record is {}", noma_core::transcript::short_sha(approved), noma_core::transcript::short_sha(found))]
    DraftMismatch {
        /// The approved draft's sha256.
        approved: String,
        /// The sha256 after the last approved record.
        found: String,
    },
    /// A record its subject binds is no longer in the transcript.
    #[error("the approval names record {op_id}, which is not in the transcript; a {payload} approval binds its records as one subject: run `noma approve` to approve the remaining ones again", payload = super::canonical::APPROVAL_PAYLOAD)]
    RecordGone {
        /// The missing record.
        op_id: String,
    },
    /// The records its subject binds changed.
    #[error(
        "the approved records are not the ones approved (an op, actor, reason or ts changed since)"
    )]
    SubjectChanged,
    /// The record's intent is not the one it bound.
    #[error("record {op_id} is not the one approved (its op, actor, reason or ts changed since)")]
    RecordChanged {
        /// The record.
        op_id: String,
    },
}

impl<'a> Approvals<'a> {
    fn new(
        trust: &'a Trust,
        lineage: Option<&'a Lineage>,
        sidecar: &'a Sidecar,
        verdicts: &'a mut Verdicts,
    ) -> Approvals<'a> {
        let mut by_record: HashMap<&str, Vec<(usize, &Approval)>> = HashMap::default();
        for (i, (_, a)) in sidecar.approvals.iter().enumerate() {
            for id in &a.body.op_ids {
                by_record.entry(id.as_str()).or_default().push((i, a));
            }
        }
        Approvals {
            trust,
            lineage,
            by_record,
            verdicts,
        }
    }

    /// The approver of a valid approval covering `o` (by its original's
    /// op_id), or why each approval naming it does not (empty: none names
    /// it).
    fn covering(
        &mut self,
        o: &Origin<'_>,
        by_op_id: &HashMap<&str, &Origin<'_>>,
    ) -> Result<String, Vec<String>> {
        let mut reasons = Vec::new();
        let op_id = o.original.op_id.as_str();
        for &(i, a) in self.by_record.get(op_id).map_or(&[][..], Vec::as_slice) {
            let (trust, lineage) = (self.trust, self.lineage);
            let verdict = self
                .verdicts
                .entry(i)
                .or_insert_with(|| check_approval(trust, a, by_op_id, lineage));
            match verdict.clone().and_then(|()| covers(a, o)) {
                Ok(()) => return Ok(a.body.approver.clone()),
                Err(why) => reasons.push(why.to_string()),
            }
        }
        Err(reasons)
    }
}

/// Records whose signatures are verified together: their payloads and
/// parsed signatures are held only while their chunk is judged, so a long
/// history's verification holds a bounded number of them at a time.
const VERIFY_CHUNK: usize = 1024;

/// The signatures of each record of `chunk` (indices into `origins`),
/// verified in one batch over that record's own payload; in the order of
/// `sigs` for its op_id. A repeated op_id's signatures are not verified:
/// its verdict is [`repeated`] whatever they say.
fn verify_chunk(
    lineage: Option<&Lineage>,
    origins: &[Origin<'_>],
    chunk: &[usize],
    sigs: &HashMap<&str, Vec<(usize, &super::sidecar::RecordSignature)>>,
    repeats: &HashMap<usize, usize>,
) -> Vec<Vec<Result<ssh_key::PublicKey, sshsig::SigError>>> {
    let mut counts = Vec::with_capacity(chunk.len());
    let mut armored = Vec::new();
    let mut payloads = Vec::new();
    for &n in chunk {
        let o = &origins[n];
        let rec = o.original.as_ref();
        let found = sigs.get(rec.op_id.as_str()).map_or(&[][..], Vec::as_slice);
        let found = if repeats.contains_key(&o.entry.line) {
            &[][..]
        } else {
            found
        };
        counts.push(found.len());
        for &(_, s) in found {
            armored.push(s.sig.as_str());
            payloads.push(signed_payload(rec, s, lineage));
        }
    }
    let items: Vec<(&str, &[u8])> = armored
        .iter()
        .zip(&payloads)
        .map(|(sig, p)| (*sig, p.as_slice()))
        .collect();
    let mut results = sshsig::verify_many(&items).into_iter();
    counts
        .into_iter()
        .map(|k| results.by_ref().take(k).collect())
        .collect()
}

/// The payload `s` claims to sign for `rec` in the document of lineage
/// `lineage`: by its type, `/1` when it names none; no bytes (so no
/// signature verifies) for a type noma does not know or a `/2` with no
/// lineage known.
fn signed_payload(
    rec: &Record,
    s: &super::sidecar::RecordSignature,
    lineage: Option<&Lineage>,
) -> Vec<u8> {
    match (s.payload.as_deref(), lineage) {
        (None, _) => record_payload(rec, &s.signer),
        (Some(RECORD_PAYLOAD_V2), Some(l)) => record_payload_v2(rec, &s.signer, l),
        _ => Vec::new(),
    }
}

/// Verifies `transcript[from..]` (the checked range; earlier records are
/// history approvals may still name) against `sidecar` under `trust`.
pub fn verify(
    trust: &Trust,
    transcript: &[Entry],
    from: usize,
    sidecar: &Sidecar,
) -> Vec<RecordStatus> {
    verify_where(trust, transcript, sidecar, &|i, _| i >= from)
}

/// Verifies the records of `transcript` for which `in_range(index,
/// entry)` holds (the others are history approvals may still name).
pub fn verify_where(
    trust: &Trust,
    transcript: &[Entry],
    sidecar: &Sidecar,
    in_range: &dyn Fn(usize, &Entry) -> bool,
) -> Vec<RecordStatus> {
    verify_chunked(trust, transcript, sidecar, in_range, VERIFY_CHUNK)
}

/// [`verify_where`], verifying `chunk` records' signatures at a time.
pub(super) fn verify_chunked(
    trust: &Trust,
    transcript: &[Entry],
    sidecar: &Sidecar,
    in_range: &dyn Fn(usize, &Entry) -> bool,
    chunk: usize,
) -> Vec<RecordStatus> {
    let mut verdicts = Verdicts::default();
    let lineage = transcript.first().map(|e| Lineage::of(&e.record));
    let part = Part {
        lineage: lineage.as_ref(),
        in_range,
        chunk,
    };
    verify_judged(trust, transcript, sidecar, &part, &mut verdicts)
}

/// [`verify_where`] of some of a transcript's records (not necessarily
/// from its first), whose document's lineage is `lineage`.
pub fn verify_part(
    trust: &Trust,
    lineage: Option<&Lineage>,
    records: &[Entry],
    sidecar: &Sidecar,
    in_range: &dyn Fn(usize, &Entry) -> bool,
) -> Vec<RecordStatus> {
    let mut verdicts = Verdicts::default();
    let part = Part {
        lineage,
        in_range,
        chunk: VERIFY_CHUNK,
    };
    verify_judged(trust, records, sidecar, &part, &mut verdicts)
}

/// What [`verify_judged`] checks of the records it is given.
pub struct Part<'a> {
    /// The document's lineage (its transcript's first record), which
    /// `/2` signatures and `/3` approvals must have bound.
    pub lineage: Option<&'a Lineage>,
    /// Whether a record (by index into the records given) is in the
    /// checked range.
    pub in_range: &'a dyn Fn(usize, &Entry) -> bool,
    /// How many records' signatures are verified at a time.
    pub chunk: usize,
}

/// [`verify_chunked`] of some of a transcript's records (with `part`'s
/// lineage, that of the whole transcript), with the verdicts of the
/// approvals judged before (by their index in `sidecar.approvals`), to
/// which the ones judged now are added: an approval named by records of
/// many parts of a history is judged once, with the records it names read
/// once.
pub fn verify_judged(
    trust: &Trust,
    transcript: &[Entry],
    sidecar: &Sidecar,
    part: &Part<'_>,
    verdicts: &mut Verdicts,
) -> Vec<RecordStatus> {
    let (lineage, in_range, chunk) = (part.lineage, part.in_range, part.chunk);
    let mut sigs: HashMap<&str, Vec<(usize, &super::sidecar::RecordSignature)>> =
        HashMap::default();
    for (i, (_, s)) in sidecar.signatures.iter().enumerate() {
        sigs.entry(s.op_id.as_str()).or_default().push((i, s));
    }
    let origins: Vec<Origin> = transcript.iter().map(Origin::of).collect();
    let (by_op_id, repeats) = first_carriers(&origins);
    let mut judge = Judge {
        trust,
        sigs,
        repeats,
        approvals: Approvals::new(trust, lineage, sidecar, verdicts),
    };
    let wanted: Vec<usize> = (origins.iter().enumerate())
        .filter(|(i, o)| in_range(*i, o.entry))
        .map(|(i, _)| i)
        .collect();
    let mut out = Vec::with_capacity(wanted.len());
    for chunk in wanted.chunks(chunk.max(1)) {
        let checked = verify_chunk(lineage, &origins, chunk, &judge.sigs, &judge.repeats);
        for (&n, checked) in chunk.iter().zip(checked) {
            out.push(judge.status(&origins[n], &checked, &by_op_id));
        }
    }
    out
}

/// What judging one record needs of the whole transcript and sidecar.
struct Judge<'a> {
    trust: &'a Trust,
    sigs: HashMap<&'a str, Vec<(usize, &'a super::sidecar::RecordSignature)>>,
    repeats: HashMap<usize, usize>,
    approvals: Approvals<'a>,
}

impl Judge<'_> {
    /// The status of the record `origin`, whose signatures verified as
    /// `checked` says (in the order of `sigs` for its op_id).
    fn status(
        &mut self,
        origin: &Origin<'_>,
        checked: &[Result<ssh_key::PublicKey, sshsig::SigError>],
        by_op_id: &HashMap<&str, &Origin<'_>>,
    ) -> RecordStatus {
        let (trust, prov) = (self.trust, &self.trust.policy.file.provenance);
        let e = origin.entry;
        let rec = origin.original.as_ref();
        let mut status = RecordStatus {
            line: e.line,
            op_id: e.record.op_id.clone(),
            actor: format!("{} {}", rec.actor.kind.as_str(), rec.actor.name),
            signed_by: None,
            needs_approval: false,
            approved_by: None,
            problems: Vec::new(),
            copy_of: origin.is_copy.then(|| rec.op_id.clone()),
        };
        let found = (self.sigs.get(rec.op_id.as_str())).map_or(&[][..], Vec::as_slice);
        let repeat = self.repeats.get(&e.line);
        let (signer, keys) = match repeat {
            Some(&first) => (Err(repeated(rec, first)), Vec::new()),
            None => record_signer(trust, rec, found, checked),
        };
        note_signer(&mut status, e, rec, signer, prov.signatures);
        // An agent's key needs approval whatever principal it signs as:
        // a key also listed for a person would otherwise let the agent
        // pass as that person.
        // Below `required`, a record no allowed key signed proves nobody:
        // its `actor.kind` is whatever its writer typed, so it is not
        // taken as a person's (under `required` it is an error anyway).
        let unproved = prov.signatures != SignatureLevel::Required && status.signed_by.is_none();
        status.needs_approval = prov.agents_need_approval
            && (rec.actor.kind == ActorKind::Agent
                || unproved
                || status
                    .signed_by
                    .as_deref()
                    .is_some_and(|p| trust.policy.is_agent_principal(p))
                || keys.iter().any(|k| trust.is_agent_key(k)));
        // An approval of the op covers the record that carries it first,
        // never one that only claims it.
        if status.needs_approval && repeat.is_some() {
            let (code, message) = approval_problem(&status, rec, Vec::new());
            status.problems.push(problem(e, "error", code, message));
        } else if status.needs_approval {
            match self.approvals.covering(origin, by_op_id) {
                Ok(approver) => status.approved_by = Some(approver),
                Err(reasons) => {
                    let (code, message) = approval_problem(&status, rec, reasons);
                    status.problems.push(problem(e, "error", code, message));
                }
            }
        }
        status
    }
}

/// The signature verdict of a record standing for an op that line
/// `first` already carries.
fn repeated(rec: &Record, first: usize) -> (&'static str, String) {
    (
        codes::INVALID,
        format!(
            "this record claims to stand for op {}, which line {first} already carries: one record stands for one op, so this is a replayed signed intent or a record disguised as a merge copy",
            rec.op_id
        ),
    )
}

/// Writes a record's signature verdict into its status: the verified
/// principal (and [`codes::MISMATCH`] when it is not the actor the
/// record names), or the problem at the level `signatures` gives it.
fn note_signer(
    status: &mut RecordStatus,
    e: &Entry,
    rec: &Record,
    signer: SignerVerdict,
    signatures: SignatureLevel,
) {
    match signer {
        Ok((p, unbound)) => {
            if unbound {
                let message = format!(
                    "signed by {p} as {}, which binds no document: it says the record was made on {}, which only the record claims",
                    super::canonical::RECORD_PAYLOAD,
                    rec.doc_uri
                );
                status
                    .problems
                    .push(problem(e, "warning", codes::UNBOUND, message));
            }
            if !signer_matches_actor(&p, &rec.actor.name) {
                let message = format!(
                    "signed by {p}, but the record names {} {} as its actor: the verified signer is {p}",
                    rec.actor.kind.as_str(),
                    rec.actor.name
                );
                status
                    .problems
                    .push(problem(e, "warning", codes::MISMATCH, message));
            }
            status.signed_by = Some(p)
        }
        Err((code, message)) => {
            if let Some(level) = signature_problem_level(signatures, code) {
                status.problems.push(problem(e, level, code, message));
            }
        }
    }
}

/// The level a signature problem `code` is reported at under the policy's
/// `signatures` (None: not reported). An invalid signature is an error
/// whenever signatures are checked at all.
fn signature_problem_level(signatures: SignatureLevel, code: &str) -> Option<&'static str> {
    let level = match signatures {
        SignatureLevel::Off => None,
        SignatureLevel::Warn => Some("warning"),
        SignatureLevel::Required => Some("error"),
    };
    if code == codes::INVALID {
        level.map(|_| "error")
    } else {
        level
    }
}

/// A problem of the record at `e`.
fn problem(e: &Entry, level: &'static str, code: &'static str, message: String) -> Problem {
    Problem {
        level,
        code,
        line: e.line,
        op_id: e.record.op_id.clone(),
        message,
    }
}

/// Each original op is carried by one record: a second record standing
/// for the same op (a copy of a record the transcript already has) is a
/// replay of a signed intent, not a signature of its own. Returns the
/// first carrier of each op_id, and for each later carrier's line the
/// first one's line.
fn first_carriers<'o, 'a>(
    origins: &'o [Origin<'a>],
) -> (HashMap<&'o str, &'o Origin<'a>>, HashMap<usize, usize>) {
    let mut by_op_id: HashMap<&str, &Origin> = HashMap::default();
    by_op_id.reserve(origins.len());
    let mut repeats: HashMap<usize, usize> = HashMap::default();
    for o in origins {
        match by_op_id.entry(o.original.op_id.as_str()) {
            std::collections::hash_map::Entry::Occupied(first) => {
                repeats.insert(o.entry.line, first.get().entry.line);
            }
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(o);
            }
        }
    }
    (by_op_id, repeats)
}

/// The code and message of a record that needs an approval no valid one
/// gives: missing when no approval names it, else invalid with the
/// reasons each naming one fails.
fn approval_problem(
    status: &RecordStatus,
    rec: &Record,
    reasons: Vec<String>,
) -> (&'static str, String) {
    if !reasons.is_empty() {
        return (codes::APPROVAL_INVALID, reasons.join("; "));
    }
    let who = status
        .signed_by
        .clone()
        .unwrap_or_else(|| format!("actor {}", rec.actor.name));
    if rec.actor.kind != ActorKind::Agent && status.signed_by.is_none() {
        return (
            codes::APPROVAL_MISSING,
            format!(
                "a record claiming {} {} that no allowed key signed, so nothing proves a person wrote it, and no person approved it; sign it (or have it re-made signed), or run `noma approve`",
                rec.actor.kind.as_str(),
                rec.actor.name
            ),
        );
    }
    (
        codes::APPROVAL_MISSING,
        format!("an agent record ({who}) that no person approved; run `noma approve`"),
    )
}

//! The request planner: one patch request (document text + op-list +
//! [`Request`]) → one transcript record per attempted op and the new text,
//! computed in memory. Reading, locking and writing the files, and
//! recovering from a crash, is `noma-store`'s engine around it.
//!
//! # Policy (§3.2, §3.4)
//!
//! A request whose ops are not all objects of the v1.0 catalogue with the
//! right field types is refused before anything is recorded
//! ([`check_request`]): such a request was never attempted, and a record
//! whose `op` is not an op would make the transcript unreadable. The
//! refusal still carries a §3.5 code ([`InvalidOp::code`]): `unsupported_op`
//! for an unknown op, `invalid_content` for a missing or mistyped field.
//!
//! Then, in order: a book manifest (`*.noma.yml`) rejects every op with
//! `unsupported_op`; an `expected_sha` that is not the document's 8-char
//! `pre_sha` rejects every op with `sha_mismatch`; strict mode with
//! pre-validation errors rejects every op with `pre_validation_blocked`;
//! a `base_sha256` different from `pre_sha256` adds a `base_sha_drift`
//! warning and proceeds. The ops are then applied one at a time so each
//! record carries its exact intermediate hashes (record k's `pre_sha256`
//! is record k-1's `post_sha256`). If op k fails, op k is rejected with
//! its own code, ops 0..k are rejected with `op_list_aborted`, later ops
//! are not attempted and nothing is written. Engine diagnostics carry
//! `phase: "pre"` and count towards `pre_validation`, because §4.2 makes
//! the summary derivable from the array. A capability descriptor
//! (Annex A) only ever adds advisory warnings.
//!
//! # What a record's diagnostics hold
//!
//! A record carries what the request changed, not the document's whole
//! standing report: the pre-validation diagnostics the request resolved
//! (phase `pre`), the post-validation diagnostics it introduced (phase
//! `post`), the engine's own diagnostics, and for each phase one
//! `unchanged_diagnostics` entry that counts the diagnostics present both
//! before and after, with the worst severity among them, so that
//! `pre_validation` and `post_validation` stay derivable from the array
//! (§4.2). A patch on a document with 20,000 standing warnings thus adds a
//! few hundred bytes per record, not megabytes. A rejected record lists
//! its own cause first (`target_missing`, `op_list_aborted`, …), then its
//! advisories, then the summaries, so the first error a client reads is
//! why the op was refused, not what the document already had.
//!
//! # Ids and time
//!
//! Records are stamped through a [`Stamps`] (an id source and a clock) the
//! caller chooses ([`plan_stamped`]); [`plan`] and [`plan_with`] use the
//! system's, behind the default `std-clock` feature.

use crate::diag::Diagnostic;
use crate::transcript::stamp::{Clock, IdSource};
use crate::transcript::{Actor, Record};

pub mod capability;
mod codes;
mod diagnostic_delta;
mod planner;
mod record_maker;
mod request;

pub use codes::EngineCode;
pub use diagnostic_delta::UNCHANGED_DIAGNOSTICS;
pub use planner::plan_stamped;
#[cfg(feature = "std-clock")]
pub use planner::{plan, plan_with};
pub use record_maker::chain_and_serialise;
pub use request::{check_request, InvalidOp};

/// What a writer asks of one patch request, besides the document and the
/// ops: who acts, why, against which state, and how to validate.
#[derive(Debug, Clone)]
pub struct Request {
    /// Reject the list when pre-validation has errors.
    pub strict: bool,
    /// `reason` for every record.
    pub reason: Option<String>,
    /// Who acts.
    pub actor: Actor,
    /// 8-char display hash the caller expects the document to have.
    pub expected_sha: Option<String>,
    /// Full sha256 the caller prepared the patch against.
    pub base_sha256: Option<String>,
    /// `parent_op_id` for every record.
    pub parent_op_id: Option<String>,
    /// Validator options for pre- and post-validation.
    pub validate: crate::validate::Options,
}

impl Request {
    /// Defaults with the given actor: not strict, no reason, no expected
    /// state, the validator's default options.
    pub fn new(actor: Actor) -> Self {
        Request {
            strict: false,
            reason: None,
            actor,
            expected_sha: None,
            base_sha256: None,
            parent_op_id: None,
            validate: crate::validate::Options::default(),
        }
    }
}

/// Everything a planning run needs to know about the document besides its
/// text and the ops.
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// `doc_uri` of the records.
    pub doc_uri: String,
    /// The target is a book manifest.
    pub book_manifest: bool,
    /// Parsed capability descriptor, if the sidecar exists.
    pub capability: Option<capability::CapabilityFile>,
    /// The source's sha256, when the caller already hashed exactly those
    /// bytes (recovery does, under the lock): spares hashing them again.
    pub source_sha256: Option<String>,
}

/// The computed result of a request, before anything is written.
#[derive(Debug, Clone)]
pub struct Plan {
    /// One record per attempted op (no chain hashes yet).
    pub records: Vec<Record>,
    /// The document after the list (the source itself when rejected).
    pub new_text: String,
    /// Every op was applied or noop.
    pub accepted: bool,
    /// The full post-validation of the result (phase `post`); records carry
    /// only what changed.
    pub post_diagnostics: Vec<Diagnostic>,
}

/// Where a plan's records get their `op_id` and `ts`.
#[derive(Clone, Copy)]
pub struct Stamps<'a> {
    /// The `op_id` source.
    pub ids: &'a dyn IdSource,
    /// The `ts` source.
    pub clock: &'a dyn Clock,
}

#[cfg(feature = "std-clock")]
impl Stamps<'static> {
    /// The system's random ids and clock.
    pub fn system() -> Self {
        Stamps {
            ids: &crate::transcript::stamp::RandomIds,
            clock: &crate::transcript::stamp::SystemClock,
        }
    }
}

impl std::fmt::Debug for Stamps<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Stamps(..)")
    }
}

#[cfg(test)]
mod replay_tests;

#[cfg(test)]
mod tests;

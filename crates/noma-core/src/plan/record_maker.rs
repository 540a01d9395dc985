//! The record maker: the transcript records of one request, and their
//! chain hashes and JSONL bytes.

use serde_json::Value;

use crate::diag::{Diagnostic, Phase};
use crate::doc::hash::sha256_hex;
use crate::transcript::{self, PatchResult, Record};

use super::{Context, Request, Stamps};

/// Builds the records of one request: the fields every record of the
/// request shares, and the per-op ones.
pub(super) struct RecordMaker<'a> {
    pub(super) ctx: &'a Context,
    pub(super) opts: &'a Request,
    pub(super) stamps: Stamps<'a>,
    /// Engine diagnostics of the whole request (`base_sha_drift`).
    pub(super) shared: &'a [Diagnostic],
}

impl RecordMaker<'_> {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn make(
        &self,
        op: &Value,
        pre: &str,
        post: &str,
        result: PatchResult,
        pre_part: &[Diagnostic],
        extra: Vec<Diagnostic>,
        post_part: &[Diagnostic],
        elapsed_ms: Option<u64>,
    ) -> Record {
        let mut diags = Vec::with_capacity(pre_part.len() + extra.len() + post_part.len() + 1);
        // A rejected record leads with why it was rejected: a client that
        // reads the first error must not find the standing-diagnostics
        // summary there.
        if result == PatchResult::Rejected {
            diags.extend(extra);
            diags.extend(pre_part.iter().cloned());
            diags.extend(self.shared.iter().cloned());
        } else {
            diags.extend(pre_part.iter().cloned());
            diags.extend(self.shared.iter().cloned());
            diags.extend(extra);
        }
        diags.extend(post_part.iter().cloned());
        let (op_id, ts) = transcript::stamp::stamp(self.stamps.ids, self.stamps.clock);
        Record {
            protocol_version: transcript::PROTOCOL_VERSION.into(),
            tool_version: env!("CARGO_PKG_VERSION").into(),
            op_id,
            ts,
            actor: self.opts.actor.clone(),
            doc_uri: self.ctx.doc_uri.clone(),
            pre_sha256: pre.to_string(),
            post_sha256: post.to_string(),
            pre_sha: transcript::short_sha(pre),
            post_sha: transcript::short_sha(post),
            op: op.clone(),
            patch_result: result,
            pre_validation: transcript::summary_for(&diags, Phase::Pre),
            post_validation: transcript::summary_for(&diags, Phase::Post),
            reason: self.opts.reason.clone(),
            parent_op_id: self.opts.parent_op_id.clone(),
            base_sha256: self.opts.base_sha256.clone(),
            diagnostics: Some(diags),
            elapsed_ms,
            prev_entry_sha256: None,
            signature: None,
        }
    }
}

/// Fills `prev_entry_sha256` along the batch and serialises it to JSONL.
/// `prev` is the sha256 of the transcript's current last line, if any; the
/// first line of a transcript has none (the chain rule of
/// [`transcript::replay`]).
pub fn chain_and_serialise(records: &mut [Record], mut prev: Option<String>) -> Vec<u8> {
    let mut out = Vec::new();
    for r in records.iter_mut() {
        r.prev_entry_sha256 = prev.take();
        let line = r.to_line();
        prev = Some(sha256_hex(line.as_bytes()));
        out.extend_from_slice(line.as_bytes());
    }
    out
}

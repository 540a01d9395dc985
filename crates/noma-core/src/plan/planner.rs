//! The planner: the records and the new text of one request, computed in
//! memory (no I/O), in the policy order of the module doc.

use serde_json::Value;

use crate::diag::{Diagnostic, Phase, Severity};
use crate::doc::hash::sha256_hex;
use crate::doc::reparse::Replaced;
use crate::doc::ParseMemo;
use crate::patch::{PatchError, PatchErrorCode};
use crate::transcript::{self, PatchResult, Record};

use super::capability;
use super::diagnostic_delta::{engine_diag, post_validate, standing_parts, PreValidation};
use super::record_maker::RecordMaker;
use super::{Context, Plan, Request, Stamps};

/// One applied-or-noop step of an accepted list.
struct Step {
    pre: String,
    post: String,
    result: PatchResult,
    advisories: Vec<Diagnostic>,
    elapsed_ms: Option<u64>,
}

/// Computes the records and the new text for `ops` on `source`, stamped
/// with the system's ids and clock. No I/O.
#[cfg(feature = "std-clock")]
pub fn plan(source: &str, ctx: &Context, ops: &[Value], opts: &Request) -> Plan {
    plan_with(&mut ParseMemo::new(), source, ctx, ops, opts)
}

/// [`plan`] through `memo`: every step parses through it, so the source is
/// parsed once (not at all when the caller's memo already holds it) and
/// each op's result is spliced from the tree before it.
#[cfg(feature = "std-clock")]
pub fn plan_with(
    memo: &mut ParseMemo,
    source: &str,
    ctx: &Context,
    ops: &[Value],
    opts: &Request,
) -> Plan {
    plan_stamped(memo, source, ctx, ops, opts, Stamps::system())
}

/// [`plan_with`], the records stamped through `stamps`.
pub fn plan_stamped(
    memo: &mut ParseMemo,
    source: &str,
    ctx: &Context,
    ops: &[Value],
    opts: &Request,
    stamps: Stamps<'_>,
) -> Plan {
    let pre_sha256 = source_sha256(source, ctx);
    // Book manifests are not validated (every op is rejected).
    let pre_validation = if ctx.book_manifest {
        PreValidation::default()
    } else {
        PreValidation::of(memo, source, opts)
    };
    let shared = drift_warning(opts, &pre_sha256);
    let planner = Planner {
        source,
        ops,
        opts,
        records: RecordMaker {
            ctx,
            opts,
            stamps,
            shared: &shared,
        },
        pre_sha256,
        standing: standing_parts(pre_validation.counts),
    };
    if let Some((code, message)) = planner.refusal(ctx, &pre_validation) {
        return planner.reject_all(code, &message, pre_validation);
    }
    match planner.apply_each(memo, ctx.capability.as_ref()) {
        Ok(applied) => planner.accept(applied, pre_validation),
        Err(failure) => planner.abort(failure, pre_validation),
    }
}

/// The source's sha256: the one the caller already computed, else hashed here.
fn source_sha256(source: &str, ctx: &Context) -> String {
    match &ctx.source_sha256 {
        Some(known) => {
            debug_assert_eq!(*known, sha256_hex(source.as_bytes()));
            known.clone()
        }
        None => sha256_hex(source.as_bytes()),
    }
}

/// The `base_sha_drift` warning every record carries when the caller
/// prepared the patch against another state (§3.4); empty otherwise.
fn drift_warning(opts: &Request, pre_sha256: &str) -> Vec<Diagnostic> {
    let mut shared = Vec::new();
    if let Some(base) = &opts.base_sha256 {
        if !base.eq_ignore_ascii_case(pre_sha256) {
            shared.push(engine_diag(
                Severity::Warning,
                super::EngineCode::BaseShaDrift.as_str(),
                format!(
                    "the document changed since the caller read it: base_sha256 {} but pre_sha256 {}",
                    transcript::short_sha(base),
                    transcript::short_sha(pre_sha256)
                ),
            ));
        }
    }
    shared
}

/// The states an accepted list went through.
struct Applied<'a> {
    /// One step per op.
    steps: Vec<Step>,
    /// The document after the last op.
    text: std::borrow::Cow<'a, str>,
    /// The tree of `text` and what its splice replaced, when an op changed
    /// the text.
    tree: Option<(std::sync::Arc<crate::doc::Document>, Option<Replaced>)>,
}

/// An op of the list failed: the list is rolled back.
struct Failure {
    /// 0-based position of the failed op.
    index: usize,
    /// The steps of the ops before it.
    steps: Vec<Step>,
    /// The capability advisories of the failed op.
    advisories: Vec<Diagnostic>,
    /// Why it failed.
    error: PatchError,
}

/// One request being planned: what its three outcomes (refused whole,
/// rolled back, accepted) all need.
struct Planner<'a> {
    source: &'a str,
    ops: &'a [Value],
    opts: &'a Request,
    records: RecordMaker<'a>,
    pre_sha256: String,
    /// The `(pre, post)` diagnostic parts of a request that leaves the text
    /// as it was: every pre-validation diagnostic stands.
    standing: (Vec<Diagnostic>, Vec<Diagnostic>),
}

impl<'a> Planner<'a> {
    /// Why the whole request is rejected before any op is tried, in the
    /// module doc's order (book manifest, `expected_sha`, strict mode).
    fn refusal(
        &self,
        ctx: &Context,
        pre_validation: &PreValidation,
    ) -> Option<(PatchErrorCode, String)> {
        if ctx.book_manifest {
            return Some((
                PatchErrorCode::UnsupportedOp,
                "book manifests (.noma.yml) are not patch targets in v1.0".into(),
            ));
        }
        if let Some(expected) = &self.opts.expected_sha {
            let want = expected.to_ascii_lowercase();
            if !(want.len() >= 8 && self.pre_sha256.starts_with(&want)) {
                return Some((
                    PatchErrorCode::ShaMismatch,
                    format!(
                        "expected_sha {expected} does not match the document's pre_sha {}",
                        transcript::short_sha(&self.pre_sha256)
                    ),
                ));
            }
        }
        if self.opts.strict && pre_validation.counts.error > 0 {
            return Some((
                PatchErrorCode::PreValidationBlocked,
                "strict mode: pre-validation found errors; no op was applied".into(),
            ));
        }
        None
    }

    /// A rejected record of `op` with the engine diagnostics `extra`: the
    /// document stays at its pre-state.
    fn rejected_record(&self, op: &Value, extra: Vec<Diagnostic>) -> Record {
        self.records.make(
            op,
            &self.pre_sha256,
            &self.pre_sha256,
            PatchResult::Rejected,
            &self.standing.0,
            extra,
            &self.standing.1,
            None,
        )
    }

    /// The plan of a rejected list: the text is the source, and the
    /// post-validation is the pre-validation.
    fn rejected(&self, records: Vec<Record>, pre_validation: PreValidation) -> Plan {
        Plan {
            records,
            new_text: self.source.to_string(),
            accepted: false,
            post_diagnostics: pre_validation.into_diagnostics(self.opts, Phase::Post),
        }
    }

    /// Every op rejected with the same `code` and `message` (a refusal).
    fn reject_all(
        &self,
        code: PatchErrorCode,
        message: &str,
        pre_validation: PreValidation,
    ) -> Plan {
        let list = self
            .ops
            .iter()
            .map(|op| {
                let d = engine_diag(Severity::Error, code.as_str(), message.to_string());
                self.rejected_record(op, vec![d])
            })
            .collect();
        self.rejected(list, pre_validation)
    }

    /// Applies the ops one at a time, so each step has its exact
    /// intermediate hashes; stops at the first op that fails.
    fn apply_each(
        &self,
        memo: &mut ParseMemo,
        capability: Option<&capability::CapabilityFile>,
    ) -> Result<Applied<'a>, Failure> {
        let mut steps: Vec<Step> = Vec::with_capacity(self.ops.len());
        let mut state = std::borrow::Cow::Borrowed(self.source);
        let mut state_sha = self.pre_sha256.clone();
        // The tree of the last state and what its splice replaced, when the
        // last op changed the text.
        let mut state_tree = None;
        for (index, op) in self.ops.iter().enumerate() {
            let advisories = match capability {
                Some(cap) => capability::advise(cap, &memo.parse(&state), op),
                None => Vec::new(),
            };
            let timer = Timer::start();
            let next = match crate::patch::apply_ops_with(memo, &state, std::slice::from_ref(op)) {
                Ok(next) => next,
                Err(error) => {
                    return Err(Failure {
                        index,
                        steps,
                        advisories,
                        error,
                    })
                }
            };
            let elapsed_ms = timer.elapsed_ms();
            if next == *state {
                steps.push(Step {
                    pre: state_sha.clone(),
                    post: state_sha.clone(),
                    result: PatchResult::Noop,
                    advisories,
                    elapsed_ms,
                });
                continue;
            }
            let next_sha = sha256_hex(next.as_bytes());
            steps.push(Step {
                pre: std::mem::replace(&mut state_sha, next_sha.clone()),
                post: next_sha,
                result: PatchResult::Applied,
                advisories,
                elapsed_ms,
            });
            // The next op and post-validation read this state's tree:
            // splice it from the previous one instead of parsing it all.
            state_tree = Some(memo.parse_edited(&state, &next));
            state = std::borrow::Cow::Owned(next);
        }
        Ok(Applied {
            steps,
            text: state,
            tree: state_tree,
        })
    }

    /// The plan of a list whose op failed: that op is rejected with its own
    /// code, the ops before it with `op_list_aborted`, later ops are not
    /// attempted.
    fn abort(&self, failure: Failure, pre_validation: PreValidation) -> Plan {
        let Failure {
            index: k,
            steps,
            advisories,
            error: err,
        } = failure;
        let mut list = Vec::with_capacity(k + 1);
        // Each record's own cause comes first, its advisories after.
        for (op, step) in self.ops.iter().zip(steps) {
            let mut extra = vec![engine_diag(
                Severity::Error,
                PatchErrorCode::OpListAborted.as_str(),
                format!(
                    "rolled back: op {k} of this list failed ({})",
                    err.code.as_str()
                ),
            )];
            extra.extend(step.advisories);
            list.push(self.rejected_record(op, extra));
        }
        let mut extra = vec![engine_diag(
            Severity::Error,
            err.code.as_str(),
            err.message.clone(),
        )];
        extra.extend(advisories);
        list.push(self.rejected_record(&self.ops[k], extra));
        self.rejected(list, pre_validation)
    }

    /// The plan of an accepted list: one record per step, carrying what
    /// the list changed in the validator's report.
    fn accept(&self, applied: Applied<'_>, pre_validation: PreValidation) -> Plan {
        let changed = applied
            .steps
            .iter()
            .filter(|s| s.result == PatchResult::Applied)
            .count();
        let (post_diagnostics, (pre_part, post_part)) =
            post_validate(applied.tree, changed, pre_validation, self.opts);
        let list = self
            .ops
            .iter()
            .zip(applied.steps)
            .map(|(op, s)| {
                self.records.make(
                    op,
                    &s.pre,
                    &s.post,
                    s.result,
                    &pre_part,
                    s.advisories,
                    &post_part,
                    s.elapsed_ms,
                )
            })
            .collect();
        Plan {
            records: list,
            new_text: applied.text.into_owned(),
            accepted: true,
            post_diagnostics,
        }
    }
}

/// Times one op with the monotonic clock, where the build has one: a build
/// without `std-clock` (a web build) reads no clock, and its records carry
/// no `elapsed_ms`.
struct Timer {
    #[cfg(feature = "std-clock")]
    started: std::time::Instant,
}

impl Timer {
    fn start() -> Self {
        Timer {
            #[cfg(feature = "std-clock")]
            started: std::time::Instant::now(),
        }
    }

    fn elapsed_ms(&self) -> Option<u64> {
        #[cfg(feature = "std-clock")]
        return Some(self.started.elapsed().as_millis() as u64);
        #[cfg(not(feature = "std-clock"))]
        None
    }
}

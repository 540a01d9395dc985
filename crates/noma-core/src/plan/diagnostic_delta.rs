//! What a request changed in the validator's report (the engine module
//! doc's "What a record's diagnostics hold"): the pre-validation, the
//! post-validation of an accepted list, and the `(pre, post)` diagnostic
//! parts of its records.

use crate::diag::{Diagnostic, Phase, Severity};
use crate::doc::reparse::Replaced;
use crate::doc::ParseMemo;

use super::Request;

pub(super) fn tag(mut diags: Vec<Diagnostic>, phase: Phase) -> Vec<Diagnostic> {
    for d in &mut diags {
        d.phase = Some(phase);
    }
    diags
}

pub(super) fn engine_diag(severity: Severity, code: &str, message: String) -> Diagnostic {
    let mut d = Diagnostic::new(severity, code, message);
    d.phase = Some(Phase::Pre);
    d
}

/// The code of the per-phase summary of diagnostics a request left as they were.
pub const UNCHANGED_DIAGNOSTICS: &str = "unchanged_diagnostics";

/// What a request changed in the validator's report (see the module doc):
/// `(pre, post)`, each tagged with its phase and ending with the
/// `unchanged_diagnostics` summary when anything stood unchanged.
pub(super) fn changed_diagnostics(
    pre: &[Diagnostic],
    post: &[Diagnostic],
) -> (Vec<Diagnostic>, Vec<Diagnostic>) {
    use std::collections::HashMap;
    // Positions move with any edit above them: identity is the rest.
    type Key<'a> = (Severity, &'a str, &'a str, Option<&'a str>);
    fn key(d: &Diagnostic) -> Key<'_> {
        (d.severity, &d.code, &d.message, d.node_id.as_deref())
    }
    let mut after: HashMap<Key<'_>, usize> = HashMap::new();
    for d in post {
        *after.entry(key(d)).or_default() += 1;
    }
    let mut resolved = Vec::new();
    let mut unchanged: Vec<&Diagnostic> = Vec::new();
    for d in pre {
        match after.get_mut(&key(d)) {
            Some(n) if *n > 0 => {
                *n -= 1;
                unchanged.push(d);
            }
            _ => resolved.push(d.clone()),
        }
    }
    let mut before: HashMap<Key<'_>, usize> = HashMap::new();
    for d in &unchanged {
        *before.entry(key(d)).or_default() += 1;
    }
    let mut introduced = Vec::new();
    for d in post {
        match before.get_mut(&key(d)) {
            Some(n) if *n > 0 => *n -= 1,
            _ => introduced.push(d.clone()),
        }
    }
    let standing = crate::diag::SeverityCounts::of(unchanged.iter().copied());
    let mut pre_part = tag(resolved, Phase::Pre);
    pre_part.extend(unchanged_summary(standing, Phase::Pre));
    let mut post_part = tag(introduced, Phase::Post);
    post_part.extend(unchanged_summary(standing, Phase::Post));
    (pre_part, post_part)
}

/// [`changed_diagnostics`] of a single re-validated change, from its delta
/// alone: what it removed is resolved, what it added is introduced (a
/// finding in both, as for a claim whose attribute changed, stands), and
/// the rest of the pre-validation's `standing` counts stand.
fn delta_parts(
    delta: crate::validate::Delta,
    standing: crate::diag::SeverityCounts,
    opts: &crate::validate::Options,
) -> (Vec<Diagnostic>, Vec<Diagnostic>) {
    let kept = |d: &Diagnostic| !opts.ignore_rules.contains(&d.code);
    let mut added: Vec<Diagnostic> = delta.added.into_iter().filter(kept).collect();
    let mut resolved = Vec::new();
    for gone in delta.gone.into_iter().filter(kept) {
        let same = |d: &Diagnostic| {
            (d.severity, &d.code, &d.message, &d.node_id)
                == (gone.severity, &gone.code, &gone.message, &gone.node_id)
        };
        match added.iter().position(same) {
            Some(at) => {
                added.remove(at);
            }
            None => resolved.push(gone),
        }
    }
    let gone = crate::diag::SeverityCounts::of(&resolved);
    let unchanged = crate::diag::SeverityCounts {
        error: standing.error.saturating_sub(gone.error),
        warning: standing.warning.saturating_sub(gone.warning),
        info: standing.info.saturating_sub(gone.info),
    };
    let mut pre_part = tag(resolved, Phase::Pre);
    pre_part.extend(unchanged_summary(unchanged, Phase::Pre));
    let mut post_part = tag(added, Phase::Post);
    post_part.extend(unchanged_summary(unchanged, Phase::Post));
    (pre_part, post_part)
}

/// The `unchanged_diagnostics` entry of one phase: the count of what stood
/// unchanged, at its worst severity (so the phase's summary stays
/// derivable); `None` when nothing did.
fn unchanged_summary(standing: crate::diag::SeverityCounts, phase: Phase) -> Option<Diagnostic> {
    let mut d = Diagnostic::new(
        standing.worst()?,
        UNCHANGED_DIAGNOSTICS,
        format!(
            "{} diagnostic(s) stand before and after this request and are not repeated \
             ({} error, {} warning, {} info; `noma check` lists them)",
            standing.total(),
            standing.error,
            standing.warning,
            standing.info
        ),
    );
    d.phase = Some(phase);
    Some(d)
}

/// The diagnostic parts of records whose request changed nothing: every
/// pre-validation diagnostic stands, counted once per phase.
pub(super) fn standing_parts(
    standing: crate::diag::SeverityCounts,
) -> (Vec<Diagnostic>, Vec<Diagnostic>) {
    (
        unchanged_summary(standing, Phase::Pre)
            .into_iter()
            .collect(),
        unchanged_summary(standing, Phase::Post)
            .into_iter()
            .collect(),
    )
}

/// The pre-validation of a request: the report, kept to re-validate a
/// spliced tree from, and its severity counts. Its diagnostics are built
/// only once, when the post-validation is known: on a big document the
/// list is hundreds of megabytes.
#[derive(Default)]
pub(super) struct PreValidation {
    report: crate::validate::Validation,
    pub(super) counts: crate::diag::SeverityCounts,
}

impl PreValidation {
    /// Validates `source`, whose tree stays in `memo` for the first op.
    /// This function's handle on the tree is dropped on return, before any
    /// splice, so that the splice can edit it in place.
    pub(super) fn of(memo: &mut ParseMemo, source: &str, opts: &Request) -> Self {
        let tree = memo.parse(source);
        let report = crate::validate::validate_report(&tree, &opts.validate);
        let counts = report.counts(&opts.validate);
        PreValidation { report, counts }
    }

    /// The report's diagnostics tagged with `phase`, consuming it.
    pub(super) fn into_diagnostics(self, opts: &Request, phase: Phase) -> Vec<Diagnostic> {
        tag(self.report.into_diagnostics(&opts.validate), phase)
    }
}

/// The post-validation of an accepted list (phase `post`) and the
/// `(pre, post)` diagnostic parts of its records. `tree` is the final
/// state's tree when an op changed the text; `changed` counts the ops that
/// did.
pub(super) fn post_validate(
    tree: Option<(std::sync::Arc<crate::doc::Document>, Option<Replaced>)>,
    changed: usize,
    pre_validation: PreValidation,
    opts: &Request,
) -> (Vec<Diagnostic>, (Vec<Diagnostic>, Vec<Diagnostic>)) {
    let Some((tree, replaced)) = tree else {
        // No op changed the text: it is the pre-validated source.
        let parts = standing_parts(pre_validation.counts);
        return (pre_validation.into_diagnostics(opts, Phase::Post), parts);
    };
    // A single change is re-validated from the pre-validation when it
    // allows (one report in memory, the change's delta beside it);
    // otherwise the tree is validated in full and the two lists compared.
    let delta = replaced
        .as_ref()
        .filter(|_| changed == 1)
        .and_then(|replaced| {
            crate::validate::revalidate_delta(
                &pre_validation.report,
                &tree,
                replaced,
                &opts.validate,
            )
        });
    match delta {
        Some(delta) => {
            let standing = pre_validation.counts;
            let post = pre_validation
                .report
                .apply(&delta, &tree, &opts.validate)
                .into_diagnostics(&opts.validate);
            drop(tree);
            let parts = delta_parts(delta, standing, &opts.validate);
            (tag(post, Phase::Post), parts)
        }
        None => {
            let post = tag(
                crate::validate::validate(&tree, &opts.validate),
                Phase::Post,
            );
            drop(tree);
            let pre = pre_validation.into_diagnostics(opts, Phase::Pre);
            let parts = changed_diagnostics(&pre, &post);
            (post, parts)
        }
    }
}

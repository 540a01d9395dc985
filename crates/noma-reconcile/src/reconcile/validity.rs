//! Step 1 of a document's check, validity, under the base revision's
//! policy: the options every entry point builds from a policy.

use noma_core::diag::Severity;

use super::{DocReport, Finding};
use crate::git::repo::Repo;
use crate::git::Oid;

/// The base revision's policy, which the branch's documents are validated
/// under (a branch cannot loosen its own check); the defaults when the
/// base has none or an unreadable one (the provenance check reports that).
pub(super) fn base_policy(repo: &Repo, base_tip: Oid) -> noma_provenance::config::Policy {
    let text = repo
        .blob_at(base_tip, noma_provenance::config::CONFIG_PATH)
        .ok()
        .flatten()
        .and_then(|b| String::from_utf8(b).ok())
        .unwrap_or_default();
    noma_provenance::config::Policy::from_yaml(&text).unwrap_or_else(|_| {
        noma_provenance::config::Policy::from_yaml("").expect("the default policy compiles")
    })
}

/// Step 1: HEAD's document validates; its errors and warnings become
/// findings.
pub(super) fn check_validity(
    rep: &mut DocReport,
    head_ast: &noma_core::doc::Document,
    opts: &noma_core::validate::Options,
) {
    for d in noma_core::validate::validate(head_ast, opts) {
        let level = match d.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => continue,
        };
        rep.valid &= level != "error";
        rep.findings.push(Finding {
            level,
            code: d.code,
            path: rep.path.clone(),
            line: d.pos.map(|p| p.line as usize),
            block: d.node_id,
            message: d.message,
            ours: None,
            theirs: None,
        });
    }
}

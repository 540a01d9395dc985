//! `noma patch` carried out and reported: the request's options built as
//! for every shell, the engine's outcome worded ([`super::report`]).

use std::path::Path;

use serde_json::Value;

use noma_store::engine::{self, WriteMode};

use super::report;
use crate::report::output::{Exit, Output};
use noma_git::patch::options;

/// How a command line shows the outcome.
#[derive(Debug, Clone, Copy, Default)]
pub struct View {
    /// One JSON answer instead of lines for people.
    pub json: bool,
    /// On a dry run, the whole new document instead of the diff.
    pub print_document: bool,
}

/// `noma patch`: applies `ops` to `file` as the command line's request
/// says (the options built as for every shell, in the document's work
/// tree) and reports the outcome: passed when every op applied, failed when
/// the request was rejected (or an unrecorded edit was found), not run
/// when it could not be carried out (a signing key that cannot be used).
pub fn run(file: &Path, ops: &[Value], req: options::Request, view: View) -> Output {
    let opts = match options::build(file, options::WorkTree::Discover, req) {
        Ok(o) => o,
        Err(e) => return Output::error(format!("noma patch: {e}"), Exit::NotRun),
    };
    let opts = &opts;
    let outcome = match engine::patch_file(file, ops, opts) {
        Ok(o) => o,
        Err(e) => return report::failure(&e, file, opts, view.json),
    };
    let dry = opts.write == WriteMode::DryRun;
    let accepted = outcome.accepted;
    let mut c = if view.json {
        let mut c = Output::default();
        c.json(report::outcome_json(&outcome, dry));
        c
    } else {
        // The diff is against the file as it is now: a dry run wrote nothing.
        let before = (dry && !view.print_document)
            .then(|| noma_store::fsio::read_document(file).ok())
            .flatten();
        report::human(outcome, dry, before.as_deref(), file)
    };
    if !accepted {
        c.at_least(Exit::Failed);
    }
    c
}

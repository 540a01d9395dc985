//! `noma patch`'s outcome worded: the engine's result for one request
//! ([`super::report`] holds the pieces).

use std::path::Path;

use noma_store::engine::{EngineError, Options, Outcome, WriteMode};

use super::report;
use crate::report::output::{Exit, Output};

/// How a command line shows the outcome.
#[derive(Debug, Clone, Copy, Default)]
pub struct View {
    /// One JSON answer instead of lines for people.
    pub json: bool,
    /// On a dry run, the whole new document instead of the diff.
    pub print_document: bool,
}

/// `noma patch`'s answer to the engine's `result` for `file` under `opts`:
/// passed when every op applied, failed when the request was rejected (or
/// an unrecorded edit was found), not run when it could not be carried out.
pub fn answer(
    file: &Path,
    result: Result<Outcome, EngineError>,
    opts: &Options,
    view: View,
) -> Output {
    let outcome = match result {
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

//! `noma init`'s step for a repository that already holds documents: the
//! ones without a transcript listed with what `require_transcript` does,
//! or, with `--record-existing`, their transcripts started (see
//! [`noma_git::install::adopt`]).

use std::path::Path;

use crate::report::output::{Exit, Output};
use noma_git::install::adopt::{documents_without_transcript, start_transcript};
use noma_git::record::Outcome;

/// `noma init`'s step for the documents without a transcript: nothing when
/// there are none; else their list and how to guard them, or, when
/// `record`, a started transcript for each (a document that cannot be
/// recorded is named and fails the step; the others are still started).
pub fn existing_documents(work_tree: &Path, record: bool) -> Output {
    let mut c = Output::default();
    let docs = match documents_without_transcript(work_tree) {
        Ok(d) => d,
        Err(e) => {
            c.err(format!(
                "noma init: cannot list the existing documents: {e}"
            ));
            c.at_least(Exit::NotRun);
            return c;
        }
    };
    if docs.is_empty() {
        return c;
    }
    if record {
        for doc in &docs {
            c.extend(started(work_tree, doc));
        }
        c.out("commit the documents' new .patches files with them");
        return c;
    }
    c.out(format!(
        "documents without a transcript: {} (unguarded: the hooks check their syntax, but no \
         record says who changed what, and a hand edit commits unnoticed)",
        docs.len()
    ));
    for doc in &docs {
        c.out(format!("  {doc}"));
    }
    c.out(
        "  start their transcripts: noma init --record-existing (or noma record FILE for each), \
         then commit the .patches files",
    );
    c.out(
        "  require_transcript in .noma/config.yml lists the documents that must have one; the \
         default [] requires none (require_transcript: [\"**/*.noma\"] requires all)",
    );
    c
}

/// Starts `doc`'s transcript and says so.
fn started(work_tree: &Path, doc: &str) -> Output {
    let mut c = Output::default();
    match start_transcript(work_tree, doc) {
        Ok(Outcome::Recorded { .. }) => c.out(format!(
            "{doc}: started {doc}.patches with a genesis record (from the empty document)"
        )),
        Ok(Outcome::NothingToRecord | Outcome::LineEndingsRestored { .. }) => {
            c.out(format!("{doc}: nothing to record"))
        }
        Err(e) => return failed(doc, e),
    }
    c
}

fn failed(doc: &str, e: impl std::fmt::Display) -> Output {
    Output::error(
        format!(
            "noma init: {doc}: transcript not started: {e}; fix it, then run noma record {doc}"
        ),
        Exit::Failed,
    )
}

//! `noma init` in a repository that already holds documents: the ones
//! without a transcript stay unguarded (the hooks check their syntax, but
//! with the default `require_transcript: []` nothing records who changed
//! what, and a hand edit passes), so init lists them, says what
//! `require_transcript` does, and with `--record-existing` starts their
//! transcripts as `noma record` does (a genesis record from the empty
//! document).

use std::path::Path;

use crate::console::{Console, Verdict};
use crate::git::repo::Repo;
use crate::record::{record_file_with, Outcome};
use noma_core::transcript::{Actor, ActorKind};
use noma_provenance::config::Policy;

/// The documents the hooks check that have no transcript (`<doc>.patches`)
/// beside them: tracked, or untracked and not ignored; repository-relative,
/// sorted.
pub fn documents_without_transcript(work_tree: &Path) -> Result<Vec<String>, String> {
    let repo = Repo::discover(work_tree).map_err(|e| e.to_string())?;
    let policy = Policy::load(work_tree).map_err(|e| e.to_string())?;
    let mut docs = repo
        .index_paths_ending_with(".noma")
        .map_err(|e| e.to_string())?;
    // Without git on PATH only the tracked ones are listed.
    if let Some(untracked) = repo.untracked_by_cli(&[]) {
        let untracked = untracked.map_err(|e| e.to_string())?;
        docs.extend(untracked.into_iter().map(|c| c.path));
    }
    docs.sort();
    docs.dedup();
    docs.retain(|p| {
        policy.is_checked(p)
            && work_tree.join(p).is_file()
            && !work_tree.join(format!("{p}.patches")).exists()
    });
    Ok(docs)
}

/// `noma init`'s step for the documents without a transcript: nothing when
/// there are none; else their list and how to guard them, or, when
/// `record`, a started transcript for each (a document that cannot be
/// recorded is named and fails the step; the others are still started).
pub fn existing_documents(work_tree: &Path, record: bool) -> Console {
    let mut c = Console::default();
    let docs = match documents_without_transcript(work_tree) {
        Ok(d) => d,
        Err(e) => {
            c.err(format!(
                "noma init: cannot list the existing documents: {e}"
            ));
            c.at_least(Verdict::NotRun);
            return c;
        }
    };
    if docs.is_empty() {
        return c;
    }
    if record {
        for doc in &docs {
            c.extend(start_transcript(work_tree, doc));
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

/// Starts `doc`'s transcript as `noma record` would, signed when the
/// policy asks for signatures and a key is configured.
fn start_transcript(work_tree: &Path, doc: &str) -> Console {
    let path = work_tree.join(doc);
    let step = match crate::provenance::writer::step_for(&path, None, false) {
        Ok(s) => s,
        Err(e) => return failed(doc, e),
    };
    let actor = Actor {
        kind: ActorKind::Human,
        name: crate::actor::default_name(&path),
        model: None,
        version: None,
    };
    let reason = Some("transcript started by noma init --record-existing".to_string());
    let mut c = Console::default();
    match record_file_with(&path, actor, reason, step.as_ref()) {
        Ok(Outcome::Recorded { .. }) => c.out(format!(
            "{doc}: started {doc}.patches with a genesis record (from the empty document)"
        )),
        Ok(Outcome::NothingToRecord) => c.out(format!("{doc}: nothing to record")),
        Err(e) => return failed(doc, e),
    }
    c
}

fn failed(doc: &str, e: impl std::fmt::Display) -> Console {
    Console::error(
        format!(
            "noma init: {doc}: transcript not started: {e}; fix it, then run noma record {doc}"
        ),
        Verdict::Failed,
    )
}

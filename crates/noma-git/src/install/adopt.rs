//! `noma init` in a repository that already holds documents: the ones
//! without a transcript stay unguarded (the hooks check their syntax, but
//! with the default `require_transcript: []` nothing records who changed
//! what, and a hand edit passes), so init lists them ([`documents_without_transcript`])
//! and with `--record-existing` starts their transcripts as `noma record`
//! does ([`start_transcript`]: a genesis record from the empty document).

use std::path::Path;

use crate::git::repo::Repo;
use crate::record::{record_file_with, Outcome};
use noma_core::transcript::{Actor, ActorKind};
use noma_provenance::config::Policy;

/// Why the documents could not be listed, or a transcript not started.
#[derive(Debug, thiserror::Error)]
pub enum AdoptError {
    /// The repository could not be read.
    #[error(transparent)]
    Git(#[from] crate::git::repo::GitError),
    /// The policy file could not be read.
    #[error(transparent)]
    Policy(#[from] noma_provenance::config::ConfigError),
    /// The signing key could not be loaded.
    #[error(transparent)]
    Signer(#[from] noma_provenance::SignerError),
    /// The record could not be written.
    #[error(transparent)]
    Record(#[from] crate::record::RecordError),
}

/// The documents the hooks check that have no transcript (`<doc>.patches`)
/// beside them: tracked, or untracked and not ignored; repository-relative,
/// sorted.
pub fn documents_without_transcript(work_tree: &Path) -> Result<Vec<String>, AdoptError> {
    let repo = Repo::discover(work_tree)?;
    let policy = Policy::load(work_tree)?;
    let mut docs = repo.index_paths_ending_with(".noma")?;
    // Without git on PATH only the tracked ones are listed.
    if let Some(untracked) = repo.untracked_by_cli(&[]) {
        let untracked = untracked?;
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

/// Starts `doc`'s transcript (repository-relative in `work_tree`) as
/// `noma record` would, signed when the policy asks for signatures and a
/// key is configured.
pub fn start_transcript(work_tree: &Path, doc: &str) -> Result<Outcome, AdoptError> {
    let path = work_tree.join(doc);
    let step = crate::provenance::writer::step_for(&path, None, false)?;
    let actor = Actor {
        kind: ActorKind::Human,
        name: crate::actor::default_name(&path).name,
        model: None,
        version: None,
    };
    let reason = Some("transcript started by noma init --record-existing".to_string());
    Ok(record_file_with(&path, actor, reason, step.as_ref())?)
}

//! Why a merge's files could not be merged or repaired.

use std::path::PathBuf;

/// Why the merge driver or `noma repair` could not merge a document's files.
#[derive(Debug, thiserror::Error)]
pub enum RepairError {
    /// A file could not be read or written.
    #[error("{}: {error}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        error: std::io::Error,
    },
    /// The repository could not be read.
    #[error(transparent)]
    Git(#[from] crate::git::repo::GitError),
    /// A transcript's conflict markers do not pair up.
    #[error("{}: git's conflict markers are not well nested; resolve them by hand", .0.display())]
    Unnested(PathBuf),
    /// The two sides' transcripts could not be reconciled.
    #[error("{path}: {}", messages.join("; "))]
    Unreconciled {
        /// The transcript, as shown.
        path: String,
        /// Why, one reason each.
        messages: Vec<String>,
    },
    /// The document could not be merged from the two transcripts.
    #[error("{path}: {error}")]
    Document {
        /// The transcript, as shown.
        path: String,
        /// Why.
        error: noma_merge::transcript::Unreconcilable,
    },
    /// The repository has no work tree to write into.
    #[error("a bare repository has no work tree")]
    Bare,
    /// The work tree's transcript holds records neither side committed.
    #[error("{}: holds records neither side committed (recorded since the operation stopped?); move it aside, restore the committed one (`git checkout HEAD -- {}` or the other side's) and run `noma repair` again", path.display(), noma_core::diag::shell_word(committed))]
    Uncommitted {
        /// The transcript in the work tree.
        path: PathBuf,
        /// Its repository-relative path.
        committed: String,
    },
}

impl RepairError {
    /// A file error at `path`.
    pub(crate) fn io(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> RepairError {
        let path = path.to_path_buf();
        move |error| RepairError::Io { path, error }
    }
}

//! Where a recorded document lives in its repository, and its committed
//! version: what the state to record from is found against.

use std::path::{Path, PathBuf};

use super::CannotRun;
use crate::git::repo::Repo;

/// Where the document lives in its repository.
pub(super) struct Location {
    pub(super) repo: Repo,
    /// The work tree's root (canonical).
    pub(super) root: PathBuf,
    /// The document's path relative to `root`, with `/` separators.
    pub(super) rel: String,
}

impl Location {
    pub(super) fn discover(doc_path: &Path) -> Result<Location, CannotRun> {
        let path = || doc_path.to_path_buf();
        let abs = std::fs::canonicalize(doc_path).map_err(|source| CannotRun::Unresolvable {
            path: path(),
            source,
        })?;
        let repo = Repo::discover(abs.parent().unwrap_or(Path::new("/"))).map_err(|source| {
            CannotRun::NotARepository {
                path: path(),
                source,
            }
        })?;
        let root = repo
            .workdir()
            .and_then(|w| std::fs::canonicalize(w).ok())
            .ok_or_else(|| CannotRun::Bare { path: path() })?;
        let rel = abs
            .strip_prefix(&root)
            .map_err(|_| CannotRun::OutsideRepository { path: path() })?;
        let parts: Option<Vec<&str>> = rel.components().map(|c| c.as_os_str().to_str()).collect();
        let rel = parts
            .map(|p| p.join("/"))
            .ok_or_else(|| CannotRun::NonUtf8Path { path: path() })?;
        Ok(Location { repo, root, rel })
    }

    /// The document as committed at HEAD, if it is and is text.
    pub(super) fn head_text(&self) -> Result<Option<String>, CannotRun> {
        Ok(self
            .repo
            .head_blob(&self.rel)?
            .and_then(|b| String::from_utf8(b).ok()))
    }

    /// The first version of the document in history (by content, from
    /// every commit a merge, rebase or ref names: the state may be under
    /// the document's old name, a rename, or on the branch being merged)
    /// that is text and that `wanted` takes.
    pub(super) fn find_in_history(
        &self,
        mut wanted: impl FnMut(&str) -> bool,
    ) -> Result<Option<String>, CannotRun> {
        let starts = self.repo.history_starts();
        Ok(self
            .repo
            .find_version(
                &starts,
                &[self.rel.as_str()],
                ".noma",
                crate::git::HISTORY_LIMIT,
                |b| std::str::from_utf8(b).is_ok_and(&mut wanted),
            )?
            .and_then(|b| String::from_utf8(b).ok()))
    }
}

//! What is at a path of a commit's tree, and a work tree file's blob id
//! as git would store it: what the changed-block watcher asks to work out
//! a staged path's `diff-index` line without git (on Linux, where the
//! watcher runs).

use std::path::Path;

use super::{libgit2, GitError, Oid, Repo};

/// The attributes that convert a file's bytes when git stores them.
#[cfg(target_os = "linux")]
const ATTRIBUTES: [&str; 6] = [
    "text",
    "eol",
    "crlf",
    "filter",
    "ident",
    "working-tree-encoding",
];

impl Repo {
    /// The id and git mode (octal 100644, 040000, ...) of whatever commit
    /// `commit` has at `path`, if anything.
    pub fn tree_entry_at(&self, commit: Oid, path: &str) -> Result<Option<(Oid, u32)>, GitError> {
        let tree = self.tree_of(commit)?;
        match tree.get_path(Path::new(path)) {
            Ok(e) => Ok(Some((Oid::from_raw(e.id()), e.filemode() as u32))),
            Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(None),
            Err(e) => Err(libgit2(e)),
        }
    }

    /// The blob id of the work-tree file `file` (at `path`, relative to
    /// the work tree) as git would hash it, when git stores its bytes as
    /// they are: None when a setting may convert them on the way in
    /// (`core.autocrlf`, or a `text`, `eol`, `crlf`, `filter`, `ident` or
    /// `working-tree-encoding` attribute) or the file cannot be read.
    /// `attributes` false says no attribute file applies (the caller
    /// looked), sparing libgit2's lookup, which loads the whole index.
    #[cfg(target_os = "linux")]
    pub fn unconverted_blob_id(&self, path: &str, file: &Path, attributes: bool) -> Option<Oid> {
        if self
            .config_string("core.autocrlf")
            .is_some_and(|v| !v.eq_ignore_ascii_case("false"))
        {
            return None;
        }
        let names = if attributes { &ATTRIBUTES[..] } else { &[] };
        for name in names.iter().copied() {
            let set =
                self.repo
                    .get_attr(Path::new(path), name, git2::AttrCheckFlags::FILE_THEN_INDEX);
            if !matches!(set, Ok(None)) {
                return None;
            }
        }
        git2::Oid::hash_file(git2::ObjectType::Blob, file)
            .ok()
            .map(Oid::from_raw)
    }

    /// Whether commit `commit` has anything (file, directory, link) at
    /// `path`.
    pub fn has_path_at(&self, commit: Oid, path: &str) -> Result<bool, GitError> {
        Ok(self.tree_entry_at(commit, path)?.is_some())
    }
}

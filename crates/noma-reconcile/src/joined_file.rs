//! `noma repair`'s repository part of making a joined transcript linear
//! ([`noma_merge::joined`]): the document versions its records start from
//! are looked up in the path's history.

use std::path::Path;

use noma_merge::joined::{UnjoinError, Unjoined};

use crate::git::repo::Repo;

/// [`noma_merge::joined::unjoin_file`] with the document's versions found
/// in the history of the repository holding `doc` (none outside one).
pub fn unjoin_file(doc: &Path, tpath: &Path) -> Result<Option<Unjoined>, UnjoinError> {
    let dir = doc.parent().filter(|p| !p.as_os_str().is_empty());
    let repo = Repo::discover(dir.unwrap_or(Path::new("."))).ok();
    let rel = repo.as_ref().and_then(|r| r.relative_path(doc));
    let path = rel.as_deref().unwrap_or_default();
    let mut history = |sha: &str| {
        let r = repo.as_ref()?;
        String::from_utf8(super::find_version(r, path, sha)?).ok()
    };
    noma_merge::joined::unjoin_file(doc, tpath, &mut history)
}

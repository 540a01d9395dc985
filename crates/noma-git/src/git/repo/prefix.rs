//! The first bytes of a blob, without inflating the rest: the pre-commit
//! hook looks at the start of every staged file (for a private key's
//! armour), so reading whole files would make a commit's cost
//! that of its largest file.

use std::io::Read;

use git2::ObjectType;

use super::{libgit2, GitError, Repo};
use crate::git::Oid;

impl Repo {
    /// For each blob of `ids`, whether `test` holds for its first `n`
    /// bytes (or all of it when shorter); false when it is not a blob, is
    /// missing (a staged blob is local; a missing one is git's to report)
    /// or is packed and larger than `max`. One blob's bytes are held at a
    /// time. A loose object (what `git add` writes) is streamed, so only
    /// its start is inflated whatever its size; libgit2 cannot stream a
    /// packed one, which is read whole only when at most `max` bytes (its
    /// header says how big it is first).
    pub(crate) fn test_blob_prefixes(
        &self,
        ids: &[Oid],
        n: usize,
        max: usize,
        test: impl Fn(&[u8]) -> bool,
    ) -> Result<Vec<bool>, GitError> {
        let odb = self.repo.odb().map_err(libgit2)?;
        Ok(ids
            .iter()
            .map(|id| prefix(&odb, *id, n, max).is_some_and(|b| test(&b)))
            .collect())
    }
}

fn prefix(odb: &git2::Odb<'_>, id: Oid, n: usize, max: usize) -> Option<Vec<u8>> {
    if let Ok((mut reader, size, kind)) = odb.reader(id.raw()) {
        if kind != ObjectType::Blob {
            return None;
        }
        let mut buf = Vec::with_capacity(n.min(size));
        // A corrupt object's read error is git's to report, not ours.
        let _ = (&mut reader).take(n as u64).read_to_end(&mut buf);
        return Some(buf);
    }
    let (size, kind) = odb.read_header(id.raw()).ok()?;
    if kind != ObjectType::Blob || size > max {
        return None;
    }
    let object = odb.read(id.raw()).ok()?;
    let data = object.data();
    Some(data[..n.min(data.len())].to_vec())
}

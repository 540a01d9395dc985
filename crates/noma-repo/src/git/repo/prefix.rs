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
    /// missing (a staged blob is local; a missing one is git's to report),
    /// is packed and larger than `max`, or `skip` says its first
    /// [`HEAD`] bytes are enough to pass it over (a binary file). One
    /// blob's bytes are held at a time. A loose object (what `git add`
    /// writes) is streamed, so only what is tested is inflated whatever
    /// its size; libgit2 cannot stream a packed one, which is read whole
    /// only when at most `max` bytes (its header says how big it is
    /// first).
    pub fn test_blob_prefixes(
        &self,
        ids: &[Oid],
        [n, max]: [usize; 2],
        skip: impl Fn(&[u8]) -> bool,
        test: impl Fn(&[u8]) -> bool,
    ) -> Result<Vec<bool>, GitError> {
        let odb = self.repo.odb().map_err(libgit2)?;
        Ok(ids
            .iter()
            .map(|id| prefix(&odb, *id, [n, max], &skip).is_some_and(|b| test(&b)))
            .collect())
    }
}

/// What a blob's first read holds, for [`Repo::test_blob_prefixes`]'s `skip`.
pub(super) const HEAD: usize = 8 * 1024;

fn prefix(
    odb: &git2::Odb<'_>,
    id: Oid,
    [n, max]: [usize; 2],
    skip: &dyn Fn(&[u8]) -> bool,
) -> Option<Vec<u8>> {
    if let Ok((mut reader, size, kind)) = odb.reader(id.raw()) {
        if kind != ObjectType::Blob {
            return None;
        }
        let mut buf = Vec::with_capacity(n.min(size));
        // A corrupt object's read error is git's to report, not ours.
        let _ = (&mut reader).take(HEAD.min(n) as u64).read_to_end(&mut buf);
        if skip(&buf) {
            return None;
        }
        if buf.len() == HEAD.min(n) {
            let _ = (&mut reader)
                .take((n - buf.len()) as u64)
                .read_to_end(&mut buf);
        }
        return Some(buf);
    }
    let (size, kind) = odb.read_header(id.raw()).ok()?;
    if kind != ObjectType::Blob || size > max {
        return None;
    }
    let object = odb.read(id.raw()).ok()?;
    let data = object.data();
    if skip(&data[..HEAD.min(data.len())]) {
        return None;
    }
    Some(data[..n.min(data.len())].to_vec())
}

//! The first bytes of a blob, without inflating the rest: the pre-commit
//! hook looks at the start of every staged file (a private key is known
//! by its first line), so reading whole files would make a commit's cost
//! that of its largest file.

use std::io::Read;

use git2::ObjectType;

use super::{libgit2, GitError, Repo};
use crate::git::Oid;

impl Repo {
    /// For each blob of `ids`, up to its first `n` bytes when it holds at
    /// most `max` bytes; `None` when it is larger, not a blob, or missing
    /// (a staged blob is local; a missing one is git's to report). A loose
    /// object (what `git add` writes) is streamed, so only its start is
    /// inflated; libgit2 cannot stream a packed one, which is read whole
    /// when small enough (its header says how big it is first).
    pub(crate) fn blob_prefixes(
        &self,
        ids: &[Oid],
        n: usize,
        max: usize,
    ) -> Result<Vec<Option<Vec<u8>>>, GitError> {
        let odb = self.repo.odb().map_err(libgit2)?;
        Ok(ids.iter().map(|id| prefix(&odb, *id, n, max)).collect())
    }
}

fn prefix(odb: &git2::Odb<'_>, id: Oid, n: usize, max: usize) -> Option<Vec<u8>> {
    if let Ok((mut reader, size, kind)) = odb.reader(id.raw()) {
        if kind != ObjectType::Blob || size > max {
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

//! The check of a plain append without reading either transcript whole
//! (decision `hook-streams-appends`), and without reading the committed one
//! at all when the cache remembers how it ends (decision
//! `hook-remembers-transcript-ends`).

use super::replay::{tail_records, Tail};
use super::{Finding, Guard};
use crate::git::repo::{GitError, Staged};
use crate::git::Oid;
use noma_core::transcript::prefix::{self, Extended, Extension};
use noma_core::transcript::transcript_path;

/// The check of an append that holds neither transcript (decision
/// `hook-streams-appends`): only the appended records are kept and
/// replayed, from the committed document. When the cache remembers how
/// the committed transcript ends
/// ([`crate::cache::BlockCache::transcript_end`], written by the hook
/// that accepted it), only the staged blob is read, its first bytes
/// checked against the remembered digest (decision
/// `hook-remembers-transcript-ends`); otherwise the committed and
/// staged blobs are read side by side, a buffer at a time, and how both
/// end is remembered. `Some` only when that accepts the commit (or
/// finds nothing blocking); anything else — a merge, no committed
/// transcript, a rewritten or torn committed line, a record that does
/// not replay — returns None and the whole-file check runs, which names
/// the cause as before. A stream that fails is treated the same.
pub(super) fn streamed_append(
    g: &Guard<'_>,
    staged: &Staged,
    paths: [&str; 3],
    staged_doc: &str,
) -> Result<Option<Vec<Finding>>, GitError> {
    let [path, head_path, tpath] = paths;
    let Some(reference) = g.reference.get() else {
        return Ok(None);
    };
    if g.merge.is_some() {
        return Ok(None);
    }
    let (Some(staged_id), Some(head_id)) = (
        g.repo.staged_blob_id(staged, tpath)?,
        g.repo.blob_id_at(reference, &transcript_path(head_path))?,
    ) else {
        return Ok(None);
    };
    let extended = if staged_id == head_id {
        // Unchanged: nothing appended (the document alone changed).
        None
    } else {
        let Some(x) = extended(g, head_id, staged_id, tpath)? else {
            return Ok(None);
        };
        Some(x)
    };
    let unchanged = Extension {
        lines: 0,
        last_line_sha256: None,
        tail: Vec::new(),
    };
    let ext = extended.as_ref().map_or(&unchanged, |x| &x.ext);
    let Ok(tail) = tail_records(
        path,
        tpath,
        ext.lines,
        ext.last_line_sha256.clone(),
        &ext.tail,
    ) else {
        return Ok(None);
    };
    let head_doc = g.head_state(head_path)?;
    match super::replay::verify_new(g, paths, &tail, true, head_doc.as_deref(), staged_doc)? {
        Tail::Checked(found) if found.iter().all(|f| !f.blocking) => {
            // The commit will hold the staged blob: the next one's
            // append is checked from how it ends.
            if let Some(end) = extended.as_ref().and_then(|x| x.staged.as_ref()) {
                g.cache
                    .remember_transcript_ends(&[(staged_id.as_bytes(), end)]);
            }
            Ok(Some(found))
        }
        _ => Ok(None),
    }
}

/// What staged transcript `staged_id` adds to committed `head_id`:
/// from the committed transcript's remembered end when the staged
/// blob's first bytes match it (the committed blob is not read), else
/// by reading both, remembering how the committed one ends. None when
/// it is no append or a stream fails; an error when an object file is
/// corrupt (`tpath` names it).
fn extended(
    g: &Guard<'_>,
    head_id: Oid,
    staged_id: Oid,
    tpath: &str,
) -> Result<Option<Extended>, GitError> {
    let remembered = cache_is_this_machines(g)
        .then(|| g.cache.transcript_end(head_id.as_bytes()))
        .flatten();
    if let Some(end) = remembered {
        let after = g
            .repo
            .blob_stream(staged_id)
            .and_then(|mut s| prefix::extension_after(&end, &mut s));
        match after {
            Ok(Some(x)) => return Ok(Some(x)),
            // Not an append of what the row describes (or a wrong
            // row): the transcripts themselves decide.
            Ok(None) => {}
            Err(e) => return unreadable(e, tpath),
        }
    }
    let both = g.repo.blob_stream(head_id).and_then(|mut committed| {
        let mut staged_t = g.repo.blob_stream(staged_id)?;
        prefix::extension_with_ends(&mut committed, &mut staged_t)
    });
    let x = match both {
        Ok(Some(x)) => x,
        Ok(None) => return Ok(None),
        Err(e) => return unreadable(e, tpath),
    };
    g.cache
        .remember_transcript_ends(&[(head_id.as_bytes(), &x.committed)]);
    Ok(Some(x))
}

/// False when HEAD commits the block cache (`.noma/cache`): a checkout
/// then wrote the branch's file over this machine's, and a forged row
/// could pass a rewritten history, as `noma reconcile` refuses too.
fn cache_is_this_machines(g: &Guard<'_>) -> bool {
    let dir = crate::install::init::CACHE_IGNORE.trim_end_matches('/');
    g.head
        .is_none_or(|h| !g.repo.has_path_at(h, dir).unwrap_or(true))
}

/// A stream that failed: a corrupt object file ([`std::io::ErrorKind::InvalidData`],
/// what the in-process inflater says) is an error naming `tpath`; any other
/// failure leaves the verdict to the whole-file check.
fn unreadable(e: std::io::Error, tpath: &str) -> Result<Option<Extended>, GitError> {
    if e.kind() == std::io::ErrorKind::InvalidData {
        return Err(GitError::CorruptObject {
            path: tpath.to_string(),
            message: e.to_string(),
        });
    }
    Ok(None)
}

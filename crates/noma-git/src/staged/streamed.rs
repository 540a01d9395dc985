//! The check of a plain append without reading either transcript whole
//! (issue 35).

use super::transcript::{tail_records, Tail};
use super::{Finding, Guard};
use crate::git::repo::{GitError, Staged};
use noma_core::transcript::{self, transcript_path};

impl Guard<'_> {
    /// The check of an append that holds neither transcript (issue 35):
    /// the committed and staged blobs are read side by side, a buffer at a
    /// time, and only the appended records are kept and replayed, from the
    /// committed document. `Some` only when that accepts the commit (or
    /// finds nothing blocking); anything else — a merge, no committed
    /// transcript, a rewritten or torn committed line, a record that does
    /// not replay — returns None and the whole-file check runs, which
    /// names the cause as before. A stream that fails is treated the same.
    pub(super) fn streamed_append(
        &self,
        staged: &Staged,
        paths: [&str; 3],
        staged_doc: &str,
    ) -> Result<Option<Vec<Finding>>, GitError> {
        let [path, head_path, tpath] = paths;
        let Some(reference) = self.reference.get() else {
            return Ok(None);
        };
        if self.merge.is_some() {
            return Ok(None);
        }
        let (Some(staged_id), Some(head_id)) = (
            self.repo.staged_blob_id(staged, tpath)?,
            self.repo
                .blob_id_at(reference, &transcript_path(head_path))?,
        ) else {
            return Ok(None);
        };
        let ext = if staged_id == head_id {
            // Unchanged: nothing appended (the document alone changed).
            transcript::prefix::Extension {
                lines: 0,
                last_line_sha256: None,
                tail: Vec::new(),
            }
        } else {
            let streams = self
                .repo
                .blob_stream(head_id)
                .and_then(|h| Ok((h, self.repo.blob_stream(staged_id)?)));
            let Ok((mut committed, mut staged_t)) = streams else {
                return Ok(None);
            };
            match transcript::prefix::extension(&mut committed, &mut staged_t) {
                Ok(Some(ext)) => ext,
                Ok(None) | Err(_) => return Ok(None),
            }
        };
        let Ok(tail) = tail_records(path, tpath, ext.lines, ext.last_line_sha256, &ext.tail) else {
            return Ok(None);
        };
        let head_doc = self.head_text(head_path)?;
        match self.verify_new(paths, &tail, true, head_doc.as_deref(), staged_doc)? {
            Tail::Checked(found) if found.iter().all(|f| !f.blocking) => Ok(Some(found)),
            _ => Ok(None),
        }
    }
}

//! The transcript check during a merge: the staged transcript may extend
//! either parent, succeed both ([`crate::merge::succession`]), or show a
//! fork, which is reported and never merged silently.

use super::findings::fork_finding;
use super::{Finding, Guard};
use crate::git::repo::GitError;
use crate::git::Oid;
use noma_core::diag::shell_word;
use noma_core::transcript::transcript_path;

/// A transcript and the document it replays to, either possibly absent.
pub(super) type Version = (Option<Vec<u8>>, Option<String>);

/// What the merge rules make of a staged transcript.
pub(super) enum Merged {
    /// Its new records are checked against this parent's version.
    Extends(Version),
    /// Decided without that check: accepted (None) or this finding.
    Settled(Option<Finding>),
}

/// The merged side's transcript and document, and the merge base's
/// transcript (empty when there is none).
struct Theirs {
    transcript: Option<Vec<u8>>,
    doc: Option<String>,
    base: Vec<u8>,
}

impl Guard<'_> {
    /// Which parent's version the staged transcript (`paths` = [document,
    /// its path at HEAD, transcript]) extends during the merge of `theirs`
    /// into `head`, starting with ours (`ours`): linear on ours, else on
    /// theirs; a successor of both or a fork is settled here.
    pub(super) fn merge_reference(
        &self,
        (head, theirs): (Oid, Oid),
        paths: [&str; 3],
        ours: Version,
        staged_t: &[u8],
        staged_doc: &str,
    ) -> Result<Merged, GitError> {
        let [path, _, tpath] = paths;
        let other = self.their_side(head, theirs, paths)?;
        let extends = |t: &Option<Vec<u8>>| {
            t.as_ref()
                .is_some_and(|t| t.len() > other.base.len() && t.starts_with(&other.base))
        };
        let forked = extends(&ours.0) && extends(&other.transcript);
        if self.linear_on(paths, &ours, staged_t, staged_doc)? {
            return Ok(Merged::Extends(ours));
        }
        let theirs_version = (other.transcript, other.doc);
        if self.linear_on(paths, &theirs_version, staged_t, staged_doc)? {
            return Ok(Merged::Extends(theirs_version));
        }
        let parents = [&ours.0, &theirs_version.0];
        if self.succeeds_both(path, parents, staged_t, staged_doc) {
            // Not an append to either parent, but every op of both kept
            // once and the whole replays (e.g. a merge resolved with `noma
            // reconcile`): see crate::merge::succession.
            return Ok(Merged::Settled(None));
        }
        if !forked {
            return Ok(Merged::Extends(ours));
        }
        let f = fork([path, tpath], &other.base, parents, staged_t);
        Ok(Merged::Settled(Some(f)))
    }

    /// The merged side's files and the merge base's transcript. A side or
    /// the merge base may hold the files under the name HEAD has (the
    /// other side moved them): the staged path first, then HEAD's.
    fn their_side(
        &self,
        head: Oid,
        theirs: Oid,
        [path, head_path, tpath]: [&str; 3],
    ) -> Result<Theirs, GitError> {
        let head_tpath = transcript_path(head_path);
        let at = |commit: Oid, p: &str, old: &str| -> Result<Option<Vec<u8>>, GitError> {
            match self.repo.blob_at(commit, p)? {
                Some(b) => Ok(Some(b)),
                None => self.repo.blob_at(commit, old),
            }
        };
        let transcript = at(theirs, tpath, &head_tpath)?;
        let doc = at(theirs, path, head_path)?.and_then(|b| String::from_utf8(b).ok());
        let base = match self.repo.merge_base(head, theirs) {
            Some(b) => at(b, tpath, &head_tpath)?,
            None => None,
        }
        .unwrap_or_default();
        Ok(Theirs {
            transcript,
            doc,
            base,
        })
    }

    /// Linear on top of one parent: that parent's transcript is a prefix
    /// of the staged one and the rest replays from that parent's document.
    fn linear_on(
        &self,
        paths: [&str; 3],
        (t, d): &Version,
        staged_t: &[u8],
        staged_doc: &str,
    ) -> Result<bool, GitError> {
        let Some(t) = t else { return Ok(false) };
        if !staged_t.starts_with(t) {
            return Ok(false);
        }
        Ok(self
            .verify_tail(paths, Some(t), d.as_deref(), staged_t, staged_doc)?
            .iter()
            .all(|f| !f.blocking))
    }

    /// Whether the staged transcript is a successor of both parents'
    /// transcripts under [`crate::merge::succession`] (the one rule the
    /// merge driver and `noma reconcile` use too).
    fn succeeds_both(
        &self,
        path: &str,
        parents: [&Option<Vec<u8>>; 2],
        staged_t: &[u8],
        staged_doc: &str,
    ) -> bool {
        let mut find = crate::merge::doc_finder(Some(self.repo), path, Vec::new());
        parents.iter().all(|p| {
            crate::merge::succession::check(
                p.as_deref().unwrap_or_default(),
                staged_t,
                staged_doc,
                &mut find,
            )
            .is_ok()
        })
    }
}

/// The fork finding for the parents' transcripts (`[ours, theirs]`) that
/// both extend `base`. When one side's transcript is staged already (a
/// moved transcript git did not pair, resolved by keeping one side),
/// recording the merged document on top of it is the whole fix.
fn fork(
    [path, tpath]: [&str; 2],
    base: &[u8],
    parents: [&Option<Vec<u8>>; 2],
    staged_t: &[u8],
) -> Finding {
    let [ours, theirs] = parents;
    let f = fork_finding(
        tpath,
        base,
        ours.as_deref().unwrap_or_default(),
        theirs.as_deref().unwrap_or_default(),
    );
    if !parents.iter().any(|t| t.as_deref() == Some(staged_t)) {
        return f;
    }
    f.fix(format!(
        "noma record {path_sh} && git add {path_sh} {tpath_sh}",
        path_sh = shell_word(path),
        tpath_sh = shell_word(tpath)
    ))
}

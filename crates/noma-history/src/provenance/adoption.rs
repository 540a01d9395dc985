//! Records older than the policy: what `noma replay --signatures` says
//! about the records a transcript already had when the repository turned
//! provenance on.
//!
//! "Older than the policy" is known from git, not from a record's `ts`
//! (self-declared): the adoption commit is the oldest commit on HEAD's
//! first-parent line from which on `.noma/config.yml` turns provenance on
//! without a break, and a record is pre-policy when the document's
//! transcript in that commit holds it (by op_id, a merge copy by its
//! original's). Such a record that is unsigned, or an agent's that no
//! person approved, is a note (`pre-policy-record`), not a warning or an
//! error: nobody could have signed it under a policy that did not exist.
//! Everything appended after adoption is checked as before. This is the
//! work tree's local view; `noma reconcile` never needs it, since its
//! range holds only the records the base does not have.

use std::collections::HashSet;
use std::path::Path;

use crate::git::repo::Repo;
use crate::git::Oid;
use noma_core::transcript::{parse_record, split_lines};
use noma_provenance::canonical::{origin_op_id, original_of};
use noma_provenance::config::Policy;
use noma_provenance::verify::{codes, RecordStatus};

/// The commit that turned provenance on for HEAD's history, and the
/// op_ids `doc`'s transcript held in it. `None`: not in a repository,
/// provenance is off at HEAD, or the transcript did not exist then.
fn adopted(doc: &Path) -> Option<(Oid, HashSet<String>)> {
    let dir = doc.parent().filter(|p| !p.as_os_str().is_empty());
    let repo = Repo::discover(dir.unwrap_or(Path::new("."))).ok()?;
    let rel = repo.relative_path(doc)?;
    // Most commits leave the policy file as it was: parse a blob once.
    let mut last: Option<(Option<Oid>, bool)> = None;
    let mut on = |c: Oid| {
        let id = repo
            .blob_id_at(c, noma_provenance::config::CONFIG_PATH)
            .ok()
            .flatten();
        if let Some((_, verdict)) = last.filter(|(seen, _)| *seen == id) {
            return verdict;
        }
        let text = id
            .and_then(|id| repo.blob(id).ok())
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        let verdict = Policy::from_yaml(&text).is_ok_and(|p| !p.file.provenance.is_off());
        last = Some((id, verdict));
        verdict
    };
    let mut at = repo.head_commit().filter(|c| on(*c))?;
    for _ in 0..crate::git::HISTORY_LIMIT {
        match repo.first_parent(at) {
            Some(p) if on(p) => at = p,
            _ => break,
        }
    }
    let bytes = repo.blob_at(at, &format!("{rel}.patches")).ok()??;
    let (lines, _) = split_lines(&bytes);
    let ids = lines
        .iter()
        .filter_map(|l| parse_record(l.number, l.raw).ok())
        .map(|r| original_of(&r).map_or(r.op_id, |o| o.op_id))
        .collect();
    Some((at, ids))
}

/// Marks, in `statuses` (one per record of `transcript`, `doc`'s work-tree
/// transcript, in order), the records older than the policy: their
/// `unsigned-record` and `approval-missing` become notes with
/// [`codes::PRE_POLICY`]. Git is read only when such a problem exists.
pub(crate) fn mark_pre_policy(doc: &Path, transcript: &[u8], statuses: &mut [RecordStatus]) {
    mark_pre_policy_of(doc, statuses, || {
        let (lines, _) = split_lines(transcript);
        (lines.iter())
            .map(|l| parse_record(l.number, l.raw).ok())
            .map(|r| r.map(|r| origin_op_id(&r).to_string()))
            .collect()
    });
}

/// [`mark_pre_policy`] for statuses of any of the transcript's records:
/// `origins` gives, one per status in order, the op_id its record stands
/// for ([`origin_op_id`]; None: a record that does not parse, where the
/// marking stops). It is called only when a status has such a problem.
pub(crate) fn mark_pre_policy_of(
    doc: &Path,
    statuses: &mut [RecordStatus],
    origins: impl FnOnce() -> Vec<Option<String>>,
) {
    PrePolicy::new(doc).mark(statuses, origins)
}

/// [`mark_pre_policy_of`] for statuses handed on a part at a time: git is
/// read once, when the first part that needs it is marked.
pub struct PrePolicy<'d> {
    doc: &'d Path,
    adopted: Option<Option<(Oid, HashSet<String>)>>,
}

impl<'d> PrePolicy<'d> {
    /// Nothing looked up yet for `doc`.
    pub(crate) fn new(doc: &'d Path) -> PrePolicy<'d> {
        PrePolicy { doc, adopted: None }
    }

    /// Marks `statuses` as [`mark_pre_policy_of`] does.
    pub(crate) fn mark(
        &mut self,
        statuses: &mut [RecordStatus],
        origins: impl FnOnce() -> Vec<Option<String>>,
    ) {
        let old = |c: &str| c == codes::UNSIGNED || c == codes::APPROVAL_MISSING;
        if !statuses
            .iter()
            .flat_map(|s| &s.problems)
            .any(|p| old(p.code))
        {
            return;
        }
        let doc = self.doc;
        let Some((commit, ids)) = self.adopted.get_or_insert_with(|| adopted(doc)) else {
            return;
        };
        let short: String = commit.to_string().chars().take(8).collect();
        for (s, id) in statuses.iter_mut().zip(origins()) {
            let Some(id) = id else { return };
            if !ids.contains(&id) {
                continue;
            }
            for p in s.problems.iter_mut().filter(|p| old(p.code)) {
                p.level = "note";
                p.message = format!(
                    "older than the policy: the transcript already held this record when commit {short} turned provenance on ({}), so it is not checked",
                    p.code
                );
                p.code = codes::PRE_POLICY;
            }
        }
    }
}

//! `noma changed`'s questions, each answered in one call: the changed
//! blocks, the changed documents, marking blocks reconciled, writing the
//! committable snapshot, clearing the marks.

use serde::Serialize;

use super::{
    ChangedBlocks, ChangedDoc, ChangedDocs, ChangesError, Cleared, Marked, Query, Snapshot,
};
use crate::cache::BlockCache;
use crate::git::repo::Repo;

/// What is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ask {
    /// The blocks changed since the merge base with a base.
    Blocks(Query),
    /// Only the changed documents with block counts.
    Docs(Query),
    /// Mark the changed blocks of `files` (all when empty) reconciled.
    Mark {
        /// The base branch.
        base: String,
        /// Repository-relative documents.
        files: Vec<String>,
    },
    /// Write `.noma/reconciliation_state.json`.
    Snapshot,
    /// Delete the local reconciliation marks.
    Clear,
}

impl Ask {
    /// Whether answering reads the block cache (the marks and the
    /// snapshot do not).
    pub fn uses_cache(&self) -> bool {
        !matches!(self, Ask::Snapshot | Ask::Clear)
    }
}

/// The answer, serialised as the underlying query's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Answer {
    /// To [`Ask::Blocks`].
    Blocks(ChangedBlocks),
    /// To [`Ask::Docs`].
    Docs(ChangedDocs),
    /// To [`Ask::Mark`].
    Marked(Marked),
    /// To [`Ask::Snapshot`].
    Snapshot(Snapshot),
    /// To [`Ask::Clear`].
    Cleared(Cleared),
}

impl Answer {
    /// Problems that did not stop the query.
    pub fn notices(&self) -> &[String] {
        match self {
            Answer::Blocks(r) => &r.notices,
            Answer::Docs(d) => &d.notices,
            Answer::Marked(m) => &m.notices,
            Answer::Snapshot(s) => &s.notices,
            Answer::Cleared(_) => &[],
        }
    }
}

/// Answers `ask` in `repo`, reading blocks through `cache`.
pub fn answer(repo: &Repo, ask: Ask, cache: &BlockCache) -> Result<Answer, ChangesError> {
    Ok(match ask {
        Ask::Blocks(q) => Answer::Blocks(super::changed_blocks(repo, &q, cache)?),
        Ask::Docs(q) => Answer::Docs(
            // list_changed_docs has no filters; with filters, summarise the query.
            if q.files.is_empty() && q.exclude_patterns.is_empty() && !q.bypass_cache {
                super::list_changed_docs(repo, &q.base, cache)?
            } else {
                super::changed_blocks(repo, &q, cache)?.into()
            },
        ),
        Ask::Mark { base, files } => {
            Answer::Marked(super::mark_reconciled(repo, &base, &files, cache)?)
        }
        Ask::Snapshot => Answer::Snapshot(super::snapshot_state(repo)?),
        Ask::Clear => Answer::Cleared(super::clear_cache(repo)?),
    })
}

/// The documents of a changed-blocks answer, with their counts (what
/// [`super::list_changed_docs`] answers).
impl From<ChangedBlocks> for ChangedDocs {
    fn from(r: ChangedBlocks) -> ChangedDocs {
        ChangedDocs {
            base: r.base,
            merge_base: r.merge_base,
            docs: r
                .docs
                .into_iter()
                .map(|d| ChangedDoc {
                    path: d.path,
                    old_path: d.old_path,
                    change: d.change,
                    counts: d.counts,
                    outside_blocks_changed: d.outside_blocks_changed,
                    error: d.error,
                })
                .collect(),
            notices: r.notices,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_serialise_as_the_query_answers_and_read_as_before() {
        let cleared = Answer::Cleared(Cleared { cleared: true });
        assert_eq!(
            serde_json::to_string(&cleared).unwrap(),
            r#"{"cleared":true}"#
        );
        let marked = Answer::Marked(Marked {
            updated: 3,
            docs: 1,
            notices: vec!["n".into()],
        });
        assert_eq!(marked.notices(), ["n".to_string()]);
        assert!(!Ask::Clear.uses_cache() && Ask::Docs(Query::default()).uses_cache());
    }
}

//! `noma reconcile`'s documents checked on several threads (decision
//! `reconcile-checks-documents-in-parallel`): each thread opens its own
//! repository handle and takes the next unchecked document; the reports
//! are put back in the documents' order.

use std::path::{Path, PathBuf};

use super::{Branch, DocReport, ReconcileError};
use crate::cache::BlockCache;
use crate::git::repo::Repo;
use crate::git::Oid;

/// How `noma reconcile` runs its checks.
#[derive(Debug, Clone, Copy)]
pub struct Run {
    /// Write the rebased documents and transcripts into the work tree
    /// (`--write`); the documents are then checked one after another.
    pub write: bool,
    /// At most this many documents checked at once, each thread with its
    /// own repository handle (`--jobs`; 1 checks them in order on the
    /// calling thread). None: the machine's processors, at most
    /// [`AUTO_JOBS_AT_MOST`], one per [`AUTO_DOCS_PER_THREAD`] documents.
    pub jobs: Option<std::num::NonZeroUsize>,
}

/// Threads used at most when no number is given: past a few, the checks
/// wait on the cache's lock and the object store more than they gain.
pub const AUTO_JOBS_AT_MOST: usize = 8;

/// Documents a thread should have to check before another is started when
/// no number is given: a thread opens its own repository handle, so a few
/// documents are cheaper checked in line.
pub const AUTO_DOCS_PER_THREAD: usize = 16;

impl Run {
    /// Threads for `docs` documents.
    pub(super) fn threads(&self, docs: usize) -> usize {
        if self.write {
            return 1;
        }
        let n = match self.jobs {
            Some(n) => n.get().min(docs),
            None => std::thread::available_parallelism()
                .map_or(1, usize::from)
                .min(AUTO_JOBS_AT_MOST)
                .min(docs.div_ceil(AUTO_DOCS_PER_THREAD)),
        };
        n.max(1)
    }
}

/// Every document's check, `threads` at a time: each thread takes the
/// next unchecked document until none is left.
pub(super) fn in_parallel(
    branch: &Branch<'_>,
    start: &Path,
    docs: &[String],
    threads: usize,
) -> Vec<Result<Option<DocReport>, ReconcileError>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let next = AtomicUsize::new(0);
    let work = |b: &Branch<'_>| {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(path) = docs.get(i) else {
                return done;
            };
            done.push((i, b.check_document(path)));
        }
    };
    let parts = branch.parts();
    let mut done: Vec<_> = std::thread::scope(|s| {
        let helpers: Vec<_> = (1..threads)
            .map(|_| {
                s.spawn(|| match Repo::discover(start) {
                    Ok(repo) => work(&parts.clone().on(&repo)),
                    // This thread checks nothing; the others take its share.
                    Err(_) => Vec::new(),
                })
            })
            .collect();
        let mut all = work(branch);
        for h in helpers {
            match h.join() {
                Ok(d) => all.extend(d),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        all
    });
    done.sort_unstable_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// A [`Branch`] without its repository handle, which cannot cross
/// threads: another thread opens its own and checks the same branch.
#[derive(Clone)]
struct Parts<'r> {
    cache: Option<&'r BlockCache>,
    moved: std::collections::HashMap<String, String>,
    base_moved: std::sync::OnceLock<std::collections::HashMap<String, String>>,
    oids: [Oid; 3],
    base_rev: &'r str,
    write: bool,
    workdir: Option<PathBuf>,
    provenance_off: bool,
    policy: noma_provenance::config::Policy,
}

impl<'r> Parts<'r> {
    /// The branch's checks, reading through `repo`.
    fn on(self, repo: &'r Repo) -> Branch<'r> {
        let [head, base_tip, merge_base] = self.oids;
        Branch {
            repo,
            cache: self.cache,
            moved: self.moved,
            base_moved: self.base_moved,
            head,
            base_tip,
            merge_base,
            base_rev: self.base_rev,
            write: self.write,
            workdir: self.workdir,
            provenance_off: self.provenance_off,
            policy: self.policy,
        }
    }
}

impl<'r> Branch<'r> {
    /// What another thread needs to check this branch's documents.
    fn parts(&self) -> Parts<'r> {
        Parts {
            cache: self.cache,
            moved: self.moved.clone(),
            base_moved: self.base_moved.clone(),
            oids: [self.head, self.base_tip, self.merge_base],
            base_rev: self.base_rev,
            write: self.write,
            workdir: self.workdir.clone(),
            provenance_off: self.provenance_off,
            policy: self.policy.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_follow_the_number_given_the_documents_and_write() {
        let jobs = |n| Some(std::num::NonZeroUsize::new(n).expect("non-zero"));
        let run = |write, jobs| Run { write, jobs };
        assert_eq!(run(false, jobs(4)).threads(100), 4);
        assert_eq!(run(false, jobs(4)).threads(3), 3, "no idle thread");
        assert_eq!(run(false, jobs(4)).threads(0), 1);
        assert_eq!(run(true, jobs(4)).threads(100), 1, "--write: in order");
        assert_eq!(run(false, jobs(1)).threads(100), 1);
        let auto = run(false, None);
        assert_eq!(auto.threads(AUTO_DOCS_PER_THREAD), 1, "a few: in line");
        assert!(auto.threads(10_000) <= AUTO_JOBS_AT_MOST);
        assert!(auto.threads(10_000) >= 1);
    }
}

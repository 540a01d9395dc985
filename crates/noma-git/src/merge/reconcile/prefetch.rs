//! In a partial clone, the blobs the check of a branch reads, fetched in
//! one batch before it reads them ([`Repo::prefetch_blobs`]): without it
//! every missing transcript version was one round trip to the remote.

use crate::git::repo::Repo;
use crate::git::Oid;
use noma_core::transcript::transcript_path;

/// Commits per side whose document versions are fetched: the records a
/// check replays start at states the branch's or the base's commits wrote.
const RANGE_COMMITS: usize = 2_000;

/// Fetches what checking `docs` (the paths the branch changed, old names
/// included) reads at `[merge base, HEAD, base tip]`: each document, its
/// transcript and its sidecar, the trust settings at the base, and the
/// document's versions in the commits either side added. A full clone
/// runs nothing; a failed fetch only leaves the blobs to be fetched one
/// by one as they are read.
pub(super) fn prefetch(repo: &Repo, [merge_base, head, base_tip]: [Oid; 3], docs: &[String]) {
    if repo.promisor_remote().is_none() {
        return;
    }
    let mut ids = repo
        .blobs_since(&[head, base_tip], merge_base, docs, RANGE_COMMITS)
        .unwrap_or_default();
    let id = |c: Oid, p: &str| repo.blob_id_at(c, p).ok().flatten();
    for d in docs {
        let files = [
            d.clone(),
            transcript_path(d),
            noma_provenance::sidecar::sidecar_rel(d),
        ];
        for c in [merge_base, head, base_tip] {
            ids.extend(files.iter().filter_map(|p| id(c, p)));
        }
    }
    for p in [
        noma_provenance::config::CONFIG_PATH,
        noma_provenance::ALLOWED_SIGNERS_PATH,
    ] {
        ids.extend(id(base_tip, p));
    }
    // Best effort: the reads that follow fetch whatever is still missing.
    let _ = repo.prefetch_blobs(ids);
}

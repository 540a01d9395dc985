//! In a partial clone, the blobs the check of a branch reads, fetched in
//! at most two batches before it reads them ([`Repo::prefetch_blobs`]):
//! without them every missing version was one round trip to the remote.

use std::collections::{BTreeSet, HashSet};

use crate::git::repo::Repo;
use crate::git::Oid;
use noma_core::doc::hash::{sha256_hex, EMPTY_SHA256};
use noma_core::transcript::{parse_record, split_lines, transcript_path, PatchResult};

/// Commits per side whose document versions are fetched: the records a
/// check replays start at states the branch's or the base's commits wrote.
const RANGE_COMMITS: usize = 2_000;

/// Fetches what checking `docs` (the paths the branch changed, old names
/// included) reads at `[merge base, HEAD, base tip]`: each document, its
/// transcript and its sidecar, the trust settings at the base, and the
/// document's versions in the commits either side added. Then, for a
/// transcript that starts at a state none of those versions is (one an
/// agent began at a document committed earlier), the document's versions
/// in the history the search for that state walks. A full clone runs
/// nothing; a failed fetch only leaves the blobs to be fetched one by
/// one as they are read.
pub(super) fn prefetch(repo: &Repo, [merge_base, head, base_tip]: [Oid; 3], docs: &[String]) {
    if repo.promisor_remote().is_none() {
        return;
    }
    let range = repo
        .commits_since(&[head, base_tip], merge_base, RANGE_COMMITS)
        .unwrap_or_default();
    let paths: Vec<&str> = docs.iter().map(String::as_str).collect();
    let mut ids = repo.blobs_at_paths(&range, &paths).unwrap_or_default();
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

    let searched: Vec<&str> = (docs.iter())
        .filter(|d| starts_elsewhere(repo, d, &range, [merge_base, head, base_tip]))
        .map(String::as_str)
        .collect();
    if !searched.is_empty() {
        let more = repo
            .history_blobs_at(&searched, crate::git::HISTORY_LIMIT)
            .unwrap_or_default();
        let _ = repo.prefetch_blobs(more);
    }
}

/// Whether a version of `doc`'s transcript at one of `at` starts at a
/// document state that is neither the empty document nor one of `doc`'s
/// versions in `range`: the check will search history for it. Reads only
/// what the first batch brought.
fn starts_elsewhere(repo: &Repo, doc: &str, range: &[Oid], at: [Oid; 3]) -> bool {
    let tpath = transcript_path(doc);
    let starts: BTreeSet<String> = (at.iter())
        .filter_map(|c| repo.blob_at(*c, &tpath).ok().flatten())
        .filter_map(|t| first_pre(&t))
        .filter(|p| p != EMPTY_SHA256)
        .collect();
    if starts.is_empty() {
        return false;
    }
    let known: HashSet<String> = (repo.blobs_at_paths(range, &[doc]).unwrap_or_default())
        .into_iter()
        .filter_map(|id| repo.blob(id).ok())
        .map(|b| sha256_hex(&b))
        .collect();
    starts.iter().any(|s| !known.contains(s))
}

/// The `pre_sha256` of a transcript's first applied record.
fn first_pre(t: &[u8]) -> Option<String> {
    let (lines, _) = split_lines(t);
    lines.iter().find_map(|l| {
        parse_record(l.number, l.raw)
            .ok()
            .filter(|r| r.patch_result == PatchResult::Applied)
            .map(|r| r.pre_sha256)
    })
}

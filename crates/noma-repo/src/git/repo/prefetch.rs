//! Missing blobs of a partial clone, fetched in one batch.
//!
//! A `git clone --filter=blob:none` (common in CI) holds only the blobs it
//! checked out. Every other blob [`Repo::blob`] reads is asked of the
//! `git` CLI, which fetches it from the promisor remote: one round trip
//! per blob. A caller that knows which blobs it will read asks for them
//! all first, through the same command git itself runs when it fetches
//! missing objects in bulk (`promisor-remote.c`), so the reads after it
//! are local.

use std::collections::BTreeSet;
use std::io::Write;
use std::process::{Command, Stdio};

use super::{GitError, Repo};
use crate::git::Oid;

impl Repo {
    /// The promisor remote of a partial clone: `extensions.partialClone`
    /// (older gits' `git clone --filter`), else the first remote with
    /// `remote.<name>.promisor` set (what newer gits write); None in a
    /// full clone.
    pub fn promisor_remote(&self) -> Option<String> {
        let config = self.repo.config().ok()?;
        if let Ok(r) = config.get_string("extensions.partialclone") {
            return Some(r).filter(|r| !r.is_empty());
        }
        let mut names = Vec::new();
        config
            .entries(Some(r"^remote\..*\.promisor$"))
            .ok()?
            .for_each(|e| names.extend(e.name().map(str::to_string)))
            .ok()?;
        names
            .into_iter()
            .filter(|n| config.get_bool(n).unwrap_or(false))
            .find_map(|n| {
                Some(
                    n.strip_prefix("remote.")?
                        .strip_suffix(".promisor")?
                        .to_string(),
                )
            })
    }

    /// Fetches every blob of `ids` that this partial clone lacks, in one
    /// `git fetch` from its promisor remote; returns how many were asked
    /// for (0 in a full clone, or when none is missing, without running
    /// git). A failure leaves the blobs to be fetched one by one when
    /// read, as before.
    pub fn prefetch_blobs(&self, ids: impl IntoIterator<Item = Oid>) -> Result<usize, GitError> {
        let Some(remote) = self.promisor_remote() else {
            return Ok(0);
        };
        let odb = self.repo.odb().map_err(super::libgit2)?;
        let missing: BTreeSet<Oid> = ids
            .into_iter()
            .filter(|id| !id.is_zero() && !odb.exists(id.raw()))
            .collect();
        if missing.is_empty() {
            return Ok(0);
        }
        let failed = |message: String| GitError::Command {
            command: "fetch",
            message,
        };
        let mut child = Command::new("git")
            .arg("--git-dir")
            .arg(self.repo.path())
            .args(["-c", "fetch.negotiationAlgorithm=noop", "fetch"])
            .arg(&remote)
            .args([
                "--no-tags",
                "--no-write-fetch-head",
                "--recurse-submodules=no",
                "--filter=blob:none",
                "--quiet",
                "--stdin",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| failed(format!("could not run git: {e}")))?;
        let list: String = missing.iter().map(|id| format!("{id}\n")).collect();
        // A git that exits early closes the pipe; its status says why.
        let _ = child
            .stdin
            .take()
            .map(|mut stdin| stdin.write_all(list.as_bytes()));
        let out = child
            .wait_with_output()
            .map_err(|e| failed(format!("could not wait for git: {e}")))?;
        if !out.status.success() {
            return Err(failed(format!(
                "{} ({})",
                String::from_utf8_lossy(&out.stderr).trim(),
                out.status
            )));
        }
        Ok(missing.len())
    }
}

impl Repo {
    /// Whether this is a partial clone and it lacks the blob `id`: a read
    /// of it would be one round trip to the promisor remote. The object
    /// database is asked first: a full clone has every blob, so it never
    /// reads its config here.
    pub fn lacks_blob(&self, id: Oid) -> bool {
        !id.is_zero()
            && self.repo.odb().is_ok_and(|odb| !odb.exists(id.raw()))
            && self.promisor_remote().is_some()
    }

    /// The blobs at `paths` in each of `commits`, each once.
    pub fn blobs_at_paths(
        &self,
        commits: &[Oid],
        paths: &[&str],
    ) -> Result<BTreeSet<Oid>, GitError> {
        let mut out = BTreeSet::new();
        for c in commits {
            for p in paths {
                out.extend(self.blob_id_at(*c, p)?);
            }
        }
        Ok(out)
    }

    /// The blobs of files named with `suffix` that each of `commits` adds
    /// or changes against its first parent, each once: what a search by
    /// content under any name reads.
    pub fn blobs_changed_in(
        &self,
        commits: &[Oid],
        suffix: &str,
    ) -> Result<BTreeSet<Oid>, GitError> {
        let mut out = BTreeSet::new();
        for c in commits {
            out.extend(self.changed_blobs(*c, suffix)?);
        }
        Ok(out)
    }

    /// `since` and every commit reachable from `tips` but not from
    /// `since` (at most `max_commits` of them): the commits a check of
    /// what a branch and its base added reads.
    pub fn commits_since(
        &self,
        tips: &[Oid],
        since: Oid,
        max_commits: usize,
    ) -> Result<Vec<Oid>, GitError> {
        let mut walk = self.repo.revwalk().map_err(super::libgit2)?;
        for t in tips {
            walk.push(t.raw()).map_err(super::libgit2)?;
        }
        walk.hide(since.raw()).map_err(super::libgit2)?;
        let mut commits = vec![since];
        for id in walk.take(max_commits) {
            commits.push(Oid::from_raw(id.map_err(super::libgit2)?));
        }
        Ok(commits)
    }

    /// The first-parent line of `tip` down to the first commit `hidden`
    /// reaches, that commit excluded, newest first: one walk, where
    /// asking each commit's merge base with `hidden` walks once per
    /// commit.
    pub fn first_parents_since(&self, tip: Oid, hidden: Oid) -> Result<Vec<Oid>, GitError> {
        let mut walk = self.repo.revwalk().map_err(super::libgit2)?;
        walk.simplify_first_parent().map_err(super::libgit2)?;
        walk.push(tip.raw()).map_err(super::libgit2)?;
        walk.hide(hidden.raw()).map_err(super::libgit2)?;
        walk.map(|id| id.map(Oid::from_raw).map_err(super::libgit2))
            .collect()
    }

    /// The blobs at `paths` in the history a search by content walks
    /// ([`Repo::find_version`] from [`Repo::history_starts`], at most
    /// `max_commits` commits), each once.
    pub fn history_blobs_at(
        &self,
        paths: &[&str],
        max_commits: usize,
    ) -> Result<BTreeSet<Oid>, GitError> {
        let walk = self.walk(&self.history_starts(), max_commits)?;
        self.blobs_at_paths(&walk, paths)
    }
}

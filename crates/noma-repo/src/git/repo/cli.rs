//! The listings `git` itself answers faster than libgit2 (it spreads a
//! work tree's `lstat`s over threads): staged and work-tree changes by
//! `git diff-index` and untracked files by `git ls-files`, each None when
//! the `git` command cannot run, so the caller asks libgit2 instead.

use std::process::{Command, Stdio};

use super::{utf8, ChangeKind, GitError, Repo, StagedChange};
use crate::git::Oid;

impl Repo {
    /// `git diff-index --cached -M HEAD`; None when git cannot be run.
    pub(super) fn staged_by_cli(&self, head: Oid) -> Option<Result<Vec<StagedChange>, GitError>> {
        let out = Command::new("git")
            .arg("--git-dir")
            .arg(self.repo.path())
            .args(["diff-index", "--cached", "--raw", "-z", "-M", "--no-abbrev"])
            .arg(head.to_string())
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .ok()?;
        if !out.status.success() {
            return None;
        }
        Some(parse_raw_diff(&out.stdout))
    }

    /// Paths matching `pathspecs` whose working-tree content differs from
    /// `commit` (through the index's stat data, like `git status`), plus
    /// untracked, not ignored files as additions. Renames are detected
    /// between tracked paths (`git mv`, edited or not: git's `-M`, 50%
    /// similarity) when both the old and the new path match `pathspecs`; an
    /// untracked file is never the new side of a rename (git does not pair
    /// it either until it is added). None when the `git` CLI cannot run; the
    /// caller then asks libgit2.
    ///
    /// Why the CLI: this is one `lstat` per tracked file, which git spreads
    /// over threads (`core.preloadIndex`) and libgit2 does on one.
    pub fn worktree_changes_by_cli(
        &self,
        commit: Oid,
        pathspecs: &[String],
    ) -> Option<Result<Vec<StagedChange>, GitError>> {
        let mut out = match self.tracked_changes_by_cli(commit, pathspecs)? {
            Ok(v) => v,
            Err(e) => return Some(Err(e)),
        };
        match self.untracked_by_cli(pathspecs)? {
            Ok(v) => out.extend(v),
            Err(e) => return Some(Err(e)),
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Some(Ok(out))
    }

    /// `git <args> -- <pathspecs>` on this repository (None when bare).
    fn git_command(&self, args: &[&str], pathspecs: &[String]) -> Option<Command> {
        let workdir = self.repo.workdir()?;
        let mut cmd = Command::new("git");
        cmd.arg("--git-dir")
            .arg(self.repo.path())
            .arg("--work-tree")
            .arg(workdir)
            .current_dir(workdir)
            .args(args)
            .arg("--")
            .args(pathspecs)
            .stdin(Stdio::null())
            .stderr(Stdio::null());
        Some(cmd)
    }

    /// Runs `git <args> -- <pathspecs>` on this repository; None when git
    /// cannot run or fails.
    fn git_output(&self, args: &[&str], pathspecs: &[String]) -> Option<Vec<u8>> {
        let out = self.git_command(args, pathspecs)?.output().ok()?;
        out.status.success().then_some(out.stdout)
    }

    /// The two processes of [`Repo::worktree_changes_by_cli`], started
    /// together and left running, so the caller can do other work (read
    /// the index) while git scans; [`WorktreeScan::finish`] collects them.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub fn start_worktree_scan(&self, commit: Oid, pathspecs: &[String]) -> WorktreeScan {
        let commit = commit.to_string();
        let spawn = |args: &[&str]| {
            self.git_command(args, pathspecs)?
                .stdout(Stdio::piped())
                .spawn()
                .ok()
        };
        WorktreeScan {
            tracked: spawn(&diff_index_args(&commit)),
            untracked: spawn(&UNTRACKED_ARGS),
        }
    }

    /// The tracked half of [`Repo::worktree_changes_by_cli`]: `git
    /// diff-index -M` of `commit` against the working tree through the
    /// index, in git's order.
    pub fn tracked_changes_by_cli(
        &self,
        commit: Oid,
        pathspecs: &[String],
    ) -> Option<Result<Vec<StagedChange>, GitError>> {
        let commit = commit.to_string();
        let tracked = self.git_output(&diff_index_args(&commit), pathspecs)?;
        Some(parse_raw_diff(&tracked))
    }

    /// The untracked half of [`Repo::worktree_changes_by_cli`]: untracked,
    /// not ignored files as additions (new id zero), in git's order.
    pub fn untracked_by_cli(
        &self,
        pathspecs: &[String],
    ) -> Option<Result<Vec<StagedChange>, GitError>> {
        let untracked = self.git_output(&UNTRACKED_ARGS, pathspecs)?;
        Some(parse_untracked(&untracked))
    }
}

/// The arguments of `git diff-index` of `commit` against the work tree
/// through the index, raw, renames paired: a work-tree listing's tracked
/// half.
fn diff_index_args(commit: &str) -> [&str; 6] {
    ["diff-index", "--raw", "-z", "-M", "--no-abbrev", commit]
}

/// The arguments of a work-tree listing's untracked half.
const UNTRACKED_ARGS: [&str; 4] = ["ls-files", "-z", "--others", "--exclude-standard"];

/// A work-tree listing's tracked (`diff-index`) and untracked halves.
pub type WorktreeListing = (Vec<StagedChange>, Vec<StagedChange>);

/// The two `git` processes of a work-tree listing, running (see
/// [`Repo::start_worktree_scan`]). Dropped unfinished, it ends them.
#[derive(Debug)]
pub struct WorktreeScan {
    tracked: Option<std::process::Child>,
    untracked: Option<std::process::Child>,
}

impl WorktreeScan {
    /// Waits for both processes: the answers of
    /// [`Repo::tracked_changes_by_cli`] and [`Repo::untracked_by_cli`];
    /// None when either could not run or failed.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub fn finish(mut self) -> Option<Result<WorktreeListing, GitError>> {
        let output = |child: Option<std::process::Child>| {
            let out = child?.wait_with_output().ok()?;
            out.status.success().then_some(out.stdout)
        };
        // Read one after the other: the second blocks on a full pipe at
        // worst, and goes on once it is read.
        let tracked = output(self.tracked.take());
        let untracked = output(self.untracked.take());
        let (tracked, untracked) = (tracked?, untracked?);
        Some(parse_raw_diff(&tracked).and_then(|t| Ok((t, parse_untracked(&untracked)?))))
    }
}

impl Drop for WorktreeScan {
    fn drop(&mut self) {
        for child in [self.tracked.take(), self.untracked.take()]
            .into_iter()
            .flatten()
        {
            let mut child = child;
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// `git ls-files -z --others` output as additions (new id zero).
fn parse_untracked(bytes: &[u8]) -> Result<Vec<StagedChange>, GitError> {
    let mut out = Vec::new();
    for raw in bytes.split(|b| *b == 0).filter(|p| !p.is_empty()) {
        out.push(StagedChange {
            kind: ChangeKind::Added,
            path: utf8(raw)?,
            old_path: None,
            new_id: Some(Oid::zero()),
            old_id: None,
            new_link: false,
        });
    }
    Ok(out)
}

/// Parses `git diff-index --raw -z` output:
/// `:<mode> <mode> <old> <new> <status>\0<path>\0` (`<src>\0<dst>\0` for
/// renames and copies). Sorted by path.
fn parse_raw_diff(bytes: &[u8]) -> Result<Vec<StagedChange>, GitError> {
    let mut fields = bytes.split(|b| *b == 0);
    let mut out = Vec::new();
    let bad = |what: &str| GitError::UnparsableOutput {
        command: "diff-index",
        what: what.to_string(),
    };
    while let Some(meta) = fields.next() {
        if meta.is_empty() {
            continue;
        }
        let meta = std::str::from_utf8(meta).map_err(|_| bad("header is not text"))?;
        let meta = meta.strip_prefix(':').ok_or_else(|| bad(meta))?;
        let parts: Vec<&str> = meta.split(' ').collect();
        let [_, new_mode, old_hex, new_hex, status] = parts[..] else {
            return Err(bad(meta));
        };
        let new_link = new_mode == "120000";
        let new_id = new_hex.parse::<Oid>().map_err(|_| bad(meta))?;
        let old_id =
            Some(old_hex.parse::<Oid>().map_err(|_| bad(meta))?).filter(|id| !id.is_zero());
        let mut next_path = || -> Result<String, GitError> {
            utf8(fields.next().ok_or_else(|| bad("missing path"))?)
        };
        let (kind, path, old_path, new_id) = match status.as_bytes().first() {
            Some(b'A') | Some(b'C') => {
                if status.starts_with('C') {
                    next_path()?; // the copy source stays as it is
                }
                (ChangeKind::Added, next_path()?, None, Some(new_id))
            }
            Some(b'D') => (ChangeKind::Deleted, next_path()?, None, None),
            Some(b'R') => {
                let old = next_path()?;
                (ChangeKind::Renamed, next_path()?, Some(old), Some(new_id))
            }
            Some(b'M') | Some(b'T') => (ChangeKind::Modified, next_path()?, None, Some(new_id)),
            // U (unmerged) and X never come with --cached against a tree
            // for stage 0; skip the path rather than guess.
            _ => {
                next_path()?;
                continue;
            }
        };
        out.push(StagedChange {
            kind,
            path,
            old_path,
            new_id,
            old_id,
            new_link,
        });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_diff_parsing() {
        let z = "0000000000000000000000000000000000000000";
        let a = "1111111111111111111111111111111111111111";
        let raw = format!(
            ":100644 100644 {a} {a} M\0m.noma\0:000000 100644 {z} {a} A\0a.noma\0\
             :100644 000000 {a} {z} D\0d.noma\0:100644 100644 {a} {a} R087\0old.noma\0new.noma\0\
             :100644 100644 {a} {a} C075\0src.noma\0copy.noma\0"
        );
        let got = parse_raw_diff(raw.as_bytes()).unwrap();
        let kinds: Vec<_> = got
            .iter()
            .map(|c| (c.kind, c.path.as_str(), c.old_path.as_deref()))
            .collect();
        assert_eq!(
            kinds,
            [
                (ChangeKind::Added, "a.noma", None),
                (ChangeKind::Added, "copy.noma", None),
                (ChangeKind::Deleted, "d.noma", None),
                (ChangeKind::Modified, "m.noma", None),
                (ChangeKind::Renamed, "new.noma", Some("old.noma")),
            ]
        );
        assert!(got[2].new_id.is_none());
        for bad in [
            ":100644 M\0x\0",
            ":1 2 3 4 M",
            "no colon\0x\0",
            ":100644 100644 zz zz M\0x\0",
        ] {
            assert!(parse_raw_diff(bad.as_bytes()).is_err(), "{bad:?}");
        }
        assert_eq!(parse_raw_diff(b"").unwrap(), vec![]);
    }
}

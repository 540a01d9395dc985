//! Repository layout: discovery, hooks directory resolution (core.hooksPath,
//! linked worktrees, bare GIT_DIR layouts).
//!
//! Git decides where hooks live as follows, and so do we:
//! - `core.hooksPath` when set: `~/` is expanded; a relative value is taken
//!   relative to the directory hooks run in, i.e. the root of the work tree
//!   (of the worktree being used, for a linked worktree), or the git dir of
//!   a bare repository;
//! - otherwise `hooks/` in the *common* git dir, which linked worktrees share
//!   with the main one.
//!
//! Discovery honours `GIT_DIR`, `GIT_WORK_TREE`, `GIT_CEILING_DIRECTORIES`
//! and friends the way the git CLI does ([`Layout::from_env`]).

use std::path::{Component, Path, PathBuf};

/// Where a repository keeps its pieces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// The git dir of the worktree in use (`.git`, or
    /// `.git/worktrees/<name>` for a linked worktree).
    pub git_dir: PathBuf,
    /// The git dir shared by all worktrees (equals `git_dir` unless linked).
    pub common_dir: PathBuf,
    /// Root of the work tree; `None` for a bare repository.
    pub work_tree: Option<PathBuf>,
    /// Whether this is a linked worktree (`git worktree add`).
    pub linked_worktree: bool,
    /// `core.hooksPath` as configured (after `~` expansion), if set.
    pub hooks_path_config: Option<PathBuf>,
    /// Where `core.hooksPath` is set when that is outside this repository's
    /// own configuration (`global`, `xdg`, `system`): its hooks directory
    /// is then shared by every repository of the user or machine.
    pub hooks_path_shared: Option<&'static str>,
    /// The directory git runs hooks from.
    pub hooks_dir: PathBuf,
}

/// Why a repository layout cannot be determined.
#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    /// No repository at or above the start directory (or `GIT_DIR` is wrong).
    #[error("not in a git repository ({0}); run `git init` first, or run noma inside a repository's work tree")]
    NotARepository(String),
    /// The repository configuration cannot be read or is unusable.
    #[error("cannot read the git configuration: {0}")]
    Config(String),
}

impl Layout {
    /// Discovers the repository containing `start`, ignoring `GIT_DIR` and
    /// the other git environment variables.
    pub fn discover(start: &Path) -> Result<Layout, LayoutError> {
        let repo = git2::Repository::open_ext(
            start,
            git2::RepositoryOpenFlags::empty(),
            std::iter::empty::<&std::ffi::OsStr>(),
        )
        .map_err(|e| LayoutError::NotARepository(e.message().to_string()))?;
        Layout::of(&repo)
    }

    /// Discovers the repository the git CLI would use here: `GIT_DIR` and
    /// `GIT_WORK_TREE` when set, otherwise a search upwards from the current
    /// directory (bounded by `GIT_CEILING_DIRECTORIES`).
    pub fn from_env() -> Result<Layout, LayoutError> {
        let repo = git2::Repository::open_from_env()
            .map_err(|e| LayoutError::NotARepository(e.message().to_string()))?;
        // libgit2 ignores GIT_WORK_TREE when core.bare is true and resolves a
        // relative one against the git dir; git uses it in both cases and
        // resolves it against the current directory (the bare-store +
        // separate-work-tree set-up depends on this).
        if let Some(wt) = std::env::var_os("GIT_WORK_TREE").filter(|v| !v.is_empty()) {
            let wt = std::path::absolute(Path::new(&wt))
                .map_err(|e| LayoutError::NotARepository(format!("GIT_WORK_TREE: {e}")))?;
            repo.set_workdir(&wt, false)
                .map_err(|e| LayoutError::NotARepository(e.message().to_string()))?;
        }
        Layout::of(&repo)
    }

    fn of(repo: &git2::Repository) -> Result<Layout, LayoutError> {
        let git_dir = clean(repo.path());
        let common_dir = clean(repo.commondir());
        let work_tree = repo.workdir().map(clean);
        let config = repo
            .config()
            .map_err(|e| LayoutError::Config(e.message().to_string()))?;
        let hooks_path_config = match config.get_path("core.hooksPath") {
            Ok(p) => Some(p),
            Err(e) if e.code() == git2::ErrorCode::NotFound => None,
            Err(e) => {
                return Err(LayoutError::Config(format!(
                    "core.hooksPath: {}",
                    e.message()
                )))
            }
        };
        let hooks_path_shared = match config.get_entry("core.hooksPath") {
            Ok(e) if hooks_path_config.is_some() => match e.level() {
                git2::ConfigLevel::Global => Some("global"),
                git2::ConfigLevel::XDG => Some("xdg"),
                git2::ConfigLevel::System | git2::ConfigLevel::ProgramData => Some("system"),
                _ => None,
            },
            _ => None,
        };
        if hooks_path_config
            .as_ref()
            .is_some_and(|p| p.as_os_str().is_empty())
        {
            return Err(LayoutError::Config(
                "core.hooksPath is set but empty; unset it or name a directory".to_string(),
            ));
        }
        let hooks_dir = resolve_hooks_dir(
            hooks_path_config.as_deref(),
            work_tree.as_deref(),
            &git_dir,
            &common_dir,
        );
        Ok(Layout {
            linked_worktree: repo.is_worktree(),
            git_dir,
            common_dir,
            work_tree,
            hooks_path_config,
            hooks_path_shared,
            hooks_dir,
        })
    }

    /// Whether the repository has no work tree (hooks such as `pre-commit`
    /// never run there).
    pub fn is_bare(&self) -> bool {
        self.work_tree.is_none()
    }

    /// Where the hooks directory really is when it is named inside the work
    /// tree but a link on the way leads outside it (husky's `.husky/_` with
    /// `.husky` a committed symlink): the link, and where the directory
    /// resolves. A commit can carry such a link, so writing through it
    /// would let a repository write hooks anywhere. None when no link in
    /// the work tree part of the path leads out (a hooks path the user
    /// configured outside the repository is theirs to choose).
    pub fn hooks_dir_link_escape(&self) -> Option<(PathBuf, PathBuf)> {
        let wt = self.work_tree.as_deref()?;
        let rest = self.hooks_dir.strip_prefix(wt).ok()?;
        let real_wt = wt.canonicalize().ok()?;
        let mut at = wt.to_path_buf();
        let mut link = None;
        for c in rest.components() {
            at.push(c);
            match std::fs::symlink_metadata(&at) {
                Ok(m) if m.file_type().is_symlink() => {
                    link.get_or_insert_with(|| at.clone());
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
        let link = link?;
        let resolved = resolve_existing(&self.hooks_dir)?;
        (!resolved.starts_with(&real_wt)).then_some((link, resolved))
    }

    /// Whether the hooks directory lies inside the work tree but outside the
    /// git dirs, i.e. its files may be committed (a shared `.githooks/`).
    pub fn hooks_dir_in_work_tree(&self) -> bool {
        match &self.work_tree {
            Some(wt) => {
                self.hooks_dir.starts_with(wt)
                    && !self.hooks_dir.starts_with(&self.git_dir)
                    && !self.hooks_dir.starts_with(&self.common_dir)
            }
            None => false,
        }
    }
}

/// The hooks directory git uses, given the configured `core.hooksPath`
/// (already `~`-expanded), the work tree root (if any), the git dir of the
/// worktree in use and the common git dir.
pub fn resolve_hooks_dir(
    configured: Option<&Path>,
    work_tree: Option<&Path>,
    git_dir: &Path,
    common_dir: &Path,
) -> PathBuf {
    match configured {
        Some(p) if p.is_absolute() => clean(p),
        // Relative: git runs hooks from the work tree root, or from the git
        // dir of a bare repository, and resolves the path from there.
        Some(p) => clean(&work_tree.unwrap_or(git_dir).join(p)),
        None => clean(&common_dir.join("hooks")),
    }
}

/// `p` with its deepest existing ancestor resolved (links, `..`) and the
/// rest, which does not exist yet, appended.
fn resolve_existing(p: &Path) -> Option<PathBuf> {
    let mut tail = Vec::new();
    let mut at = p;
    loop {
        if let Ok(real) = at.canonicalize() {
            return Some(tail.iter().rev().fold(real, |acc, c| acc.join(c)));
        }
        tail.push(at.file_name()?.to_os_string());
        at = at.parent()?;
    }
}

/// Drops `.` components and trailing slashes (libgit2 reports directories
/// as `/repo/.git/`). `..` is kept: resolving it lexically is wrong across
/// symlinks.
fn clean(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        if c != Component::CurDir {
            out.push(c.as_os_str());
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_hooks_dir_is_in_the_common_dir() {
        let d = resolve_hooks_dir(
            None,
            Some(Path::new("/wt")),
            Path::new("/repo/.git/worktrees/wt/"),
            Path::new("/repo/.git/"),
        );
        assert_eq!(d, PathBuf::from("/repo/.git/hooks"));
    }

    #[test]
    fn relative_hooks_path_resolves_against_the_work_tree_or_bare_git_dir() {
        let git = Path::new("/repo/.git");
        let rel = Path::new("./.githooks/");
        assert_eq!(
            resolve_hooks_dir(Some(rel), Some(Path::new("/wt")), git, git),
            PathBuf::from("/wt/.githooks")
        );
        assert_eq!(
            resolve_hooks_dir(Some(rel), None, Path::new("/srv/r.git"), git),
            PathBuf::from("/srv/r.git/.githooks")
        );
        assert_eq!(
            resolve_hooks_dir(Some(Path::new("/abs/h")), Some(Path::new("/wt")), git, git),
            PathBuf::from("/abs/h")
        );
        // `..` survives: lexical resolution would be wrong across symlinks.
        assert_eq!(
            resolve_hooks_dir(Some(Path::new("../h")), Some(Path::new("/wt")), git, git),
            PathBuf::from("/wt/../h")
        );
    }

    #[test]
    fn discover_plain_and_bare_repositories() {
        let tmp = tempfile::tempdir().unwrap();
        let work = tmp.path().join("work");
        let repo = git2::Repository::init(&work).unwrap();
        std::fs::create_dir_all(work.join("sub/dir")).unwrap();
        let l = Layout::discover(&work.join("sub/dir")).unwrap();
        let real = |p: &Path| p.canonicalize().unwrap();
        assert_eq!(real(l.work_tree.as_deref().unwrap()), real(&work));
        assert_eq!(real(&l.hooks_dir), real(&work.join(".git/hooks")));
        assert!(!l.linked_worktree && !l.is_bare() && !l.hooks_dir_in_work_tree());

        repo.config()
            .unwrap()
            .set_str("core.hooksPath", ".githooks")
            .unwrap();
        let l = Layout::discover(&work).unwrap();
        assert_eq!(l.hooks_path_config, Some(PathBuf::from(".githooks")));
        assert!(l.hooks_dir.ends_with(".githooks") && l.hooks_dir_in_work_tree());

        let bare = tmp.path().join("bare.git");
        git2::Repository::init_bare(&bare).unwrap();
        let l = Layout::discover(&bare).unwrap();
        assert!(l.is_bare());
        assert_eq!(real(&l.hooks_dir), real(&bare.join("hooks")));

        let none = tmp.path().join("none");
        std::fs::create_dir_all(&none).unwrap();
        // The temp dir may itself sit inside a repository; only assert when not.
        if git2::Repository::discover(&none).is_err() {
            assert!(matches!(
                Layout::discover(&none),
                Err(LayoutError::NotARepository(_))
            ));
        }
    }
}

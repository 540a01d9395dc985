//! Committed file versions: `REV:path` → blob bytes and blob id.
//!
//! Paths follow git's `REV:path` rule: relative to the repository root,
//! except that a path starting with `./` or `../` is relative to the current
//! directory; an absolute path must lie inside the working tree.

use std::path::{Component, Path, PathBuf};

use git2::{ObjectType, Repository, RepositoryOpenFlags};

/// A file as committed at some revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RevFile {
    /// Blob id, lowercase hex.
    pub oid: String,
    /// `REV:path` with the path relative to the repository root.
    pub spec: String,
    /// The path relative to the repository root, `/`-separated.
    pub path: String,
    /// The blob's bytes.
    pub bytes: Vec<u8>,
}

/// Why a committed file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    /// No repository around the current directory.
    #[error("not in a git repository ({0}); run `git init` first, or run noma inside a repository's work tree")]
    NoRepository(String),
    /// The revision does not name a commit or tree.
    #[error("{}", super::revision::unknown(rev, hint))]
    BadRevision {
        /// The revision as given.
        rev: String,
        /// `"; did you mean …?"` or where to list the names.
        hint: String,
    },
    /// The path is outside the working tree (or relative in a bare repo).
    #[error("{0}: outside the repository's working tree")]
    OutsideRepository(String),
    /// No such path at that revision.
    #[error("{spec}: no such file at that revision{hint}")]
    NotFound {
        /// `REV:path`.
        spec: String,
        /// A suggestion (the cwd-relative reading) or empty.
        hint: String,
    },
    /// The path names a directory, symlink or submodule.
    #[error("{spec}: is a {what}, not a file")]
    NotAFile {
        /// `REV:path`.
        spec: String,
        /// "directory", "symbolic link" or "submodule".
        what: &'static str,
    },
    /// The blob is not document text.
    #[error(transparent)]
    NotText(#[from] noma_core::doc::source::SourceError),
    /// Any other git failure.
    #[error("git: {0}")]
    Git(String),
}

/// The working-tree root of the repository containing `start` (honouring
/// `GIT_DIR`/`GIT_WORK_TREE` as git does), or `None` outside a repository
/// or in a bare one.
pub fn worktree_root(start: &Path) -> Option<PathBuf> {
    let repo = open(start).ok()?;
    repo.workdir().map(Path::to_path_buf)
}

/// Reads `path` as committed at `rev`, resolving the path from `cwd`.
pub fn read_rev_path(cwd: &Path, rev: &str, path: &Path) -> Result<RevFile, BlobError> {
    let repo = open(cwd)?;
    let (id, mut file) = locate(&repo, cwd, rev, path)?;
    file.bytes = super::stream::blob_content(&repo, id)
        .map_err(|e| BlobError::Git(e.message().to_string()))?;
    Ok(file)
}

/// Where `path` is committed at `rev` ([`read_rev_path`]'s checks), without
/// reading the blob: a [`RevFile`] whose bytes are empty, with its id.
pub fn locate_rev_path(cwd: &Path, rev: &str, path: &Path) -> Result<RevFile, BlobError> {
    let repo = open(cwd)?;
    locate(&repo, cwd, rev, path).map(|(_, f)| f)
}

fn locate(
    repo: &Repository,
    cwd: &Path,
    rev: &str,
    path: &Path,
) -> Result<(git2::Oid, RevFile), BlobError> {
    let rel = repo_relative(repo, cwd, path)?;
    let rel_shown = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/");
    let spec = format!("{rev}:{rel_shown}");
    let tree = repo
        .revparse_single(rev)
        .map_err(|_| BlobError::BadRevision {
            rev: rev.to_string(),
            hint: super::revision::hint(repo, rev),
        })?
        .peel_to_tree()
        .map_err(|e| BlobError::Git(format!("`{rev}`: {}", e.message())))?;
    let entry = match tree.get_path(&rel) {
        Ok(e) => e,
        Err(e) if e.code() == git2::ErrorCode::NotFound => {
            return Err(BlobError::NotFound {
                hint: cwd_hint(repo, cwd, path, &tree, rev),
                spec,
            })
        }
        Err(e) => return Err(BlobError::Git(e.message().to_string())),
    };
    match entry.kind() {
        Some(ObjectType::Blob) if entry.filemode() == 0o120000 => {
            return Err(BlobError::NotAFile {
                spec,
                what: "symbolic link",
            })
        }
        Some(ObjectType::Blob) => {}
        Some(ObjectType::Tree) => {
            return Err(BlobError::NotAFile {
                spec,
                what: "directory",
            })
        }
        _ => {
            return Err(BlobError::NotAFile {
                spec,
                what: "submodule",
            })
        }
    }
    let file = RevFile {
        oid: entry.id().to_string(),
        spec,
        path: rel_shown,
        bytes: Vec::new(),
    };
    Ok((entry.id(), file))
}

/// Like [`read_rev_path`], refusing binary and non-UTF-8 blobs; returns the
/// file and its text.
pub fn read_rev_text(cwd: &Path, rev: &str, path: &Path) -> Result<(RevFile, String), BlobError> {
    let mut file = read_rev_path(cwd, rev, path)?;
    noma_core::doc::source::decode(&file.spec, &file.bytes)?;
    let bytes = std::mem::take(&mut file.bytes);
    // Checked by `decode` just above.
    let text = String::from_utf8(bytes).map_err(|e| BlobError::Git(e.to_string()))?;
    Ok((file, text))
}

fn open(start: &Path) -> Result<Repository, BlobError> {
    Repository::open_ext(
        start,
        RepositoryOpenFlags::FROM_ENV,
        &[] as &[&std::ffi::OsStr],
    )
    .map_err(|e| BlobError::NoRepository(e.message().to_string()))
}

/// `path` relative to the repository root under git's `REV:path` rule.
fn repo_relative(repo: &Repository, cwd: &Path, path: &Path) -> Result<PathBuf, BlobError> {
    let shown = || path.display().to_string();
    let cwd_relative = matches!(
        path.components().next(),
        Some(Component::CurDir | Component::ParentDir)
    );
    if path.is_absolute() {
        // Measured from the working tree root, both sides canonical so that
        // symlinked temp dirs (macOS /tmp) compare equal.
        let root = canonical_workdir(repo).ok_or_else(|| BlobError::OutsideRepository(shown()))?;
        let abs = canonicalize_lenient(path);
        let rel = abs
            .strip_prefix(&root)
            .map_err(|_| BlobError::OutsideRepository(shown()))?;
        return normalize(&[], rel).ok_or_else(|| BlobError::OutsideRepository(shown()));
    }
    if cwd_relative {
        let root = canonical_workdir(repo).ok_or_else(|| BlobError::OutsideRepository(shown()))?;
        let here = canonicalize_lenient(cwd);
        let prefix = here
            .strip_prefix(&root)
            .map_err(|_| BlobError::OutsideRepository(shown()))?;
        let base: Vec<Component<'_>> = prefix.components().collect();
        return normalize(&base, path).ok_or_else(|| BlobError::OutsideRepository(shown()));
    }
    normalize(&[], path).ok_or_else(|| BlobError::OutsideRepository(shown()))
}

/// Joins `base` and `rel` lexically; `None` if `..` climbs above the root
/// or nothing is left.
fn normalize(base: &[Component<'_>], rel: &Path) -> Option<PathBuf> {
    let mut parts: Vec<&std::ffi::OsStr> = base
        .iter()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(*s),
            _ => None,
        })
        .collect();
    for c in rel.components() {
        match c {
            Component::Normal(s) => parts.push(s),
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    if parts.is_empty() {
        return None;
    }
    Some(parts.iter().collect())
}

fn canonical_workdir(repo: &Repository) -> Option<PathBuf> {
    repo.workdir().map(canonicalize_lenient)
}

/// Canonical form of `p`, or of its nearest existing ancestor joined with
/// the rest (the file may exist only in history).
fn canonicalize_lenient(p: &Path) -> PathBuf {
    let mut tail = Vec::new();
    let mut cur = p;
    loop {
        if let Ok(c) = cur.canonicalize() {
            let mut out = c;
            out.extend(tail.iter().rev());
            return out;
        }
        match (cur.parent(), cur.file_name()) {
            (Some(parent), Some(name)) => {
                tail.push(name.to_os_string());
                cur = parent;
            }
            _ => return p.to_path_buf(),
        }
    }
}

/// When a root-relative path is missing but the cwd-relative reading
/// exists at that revision, say so (git gives the same hint).
fn cwd_hint(
    repo: &Repository,
    cwd: &Path,
    path: &Path,
    tree: &git2::Tree<'_>,
    rev: &str,
) -> String {
    if path.is_absolute() || path.components().next() == Some(Component::CurDir) {
        return String::new();
    }
    let dotted = Path::new(".").join(path);
    match repo_relative(repo, cwd, &dotted) {
        Ok(rel) if tree.get_path(&rel).is_ok() => format!(
            " (paths are relative to the repository root; did you mean ./{} i.e. {rev}:{}?)",
            path.display(),
            rel.display()
        ),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_follows_git_rules() {
        let base: Vec<Component<'_>> = Path::new("docs/sub").components().collect();
        assert_eq!(
            normalize(&base, Path::new("../a.noma")),
            Some(PathBuf::from("docs/a.noma"))
        );
        assert_eq!(
            normalize(&[], Path::new("./x/./y.noma")),
            Some(PathBuf::from("x/y.noma"))
        );
        assert_eq!(normalize(&[], Path::new("../escape")), None);
        assert_eq!(normalize(&[], Path::new(".")), None);
    }
}

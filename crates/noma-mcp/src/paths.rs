//! Workspace containment: every path an MCP client names is resolved inside
//! the repository root, and nothing outside it is ever read or written.
//!
//! Rules, in order:
//! - the argument must be non-empty and free of NUL bytes;
//! - a relative path is taken relative to the root (never the server's
//!   current directory); an absolute path is accepted when it lies inside
//!   the root;
//! - any `..` component is refused outright, even one that would stay
//!   inside: the rule is simple to state and leaves nothing to argue about;
//! - symlinks are resolved (`canonicalize`), and the resolved path must
//!   still lie inside the canonical root, so a link pointing out is refused;
//! - a path that does not exist yet is accepted when its deepest existing
//!   ancestor resolves inside the root (the missing tail is appended), so a
//!   caller gets "not found" rather than "escape" for a typo.
//!
//! The document tools then take only `.noma` files outside `.git`
//! ([`super::Context::doc_path`]).
//!
//! The returned path is the resolved one: the engine then writes the real
//! file (its atomic rename replaces the file, not a link to it). Paths the
//! tools derive from it (the transcript `<doc>.patches`, the capability
//! sidecar) go through [`Workspace::contain`] too, so a planted symlink
//! next to a document cannot redirect a transcript append outside the root.
//!
//! A client racing the server by swapping directories for symlinks between
//! the check and the use is out of scope: the stdio binding runs as the
//! caller's own user (§B.2), so such a client could write there anyway.

use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};

/// Why a path was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum PathError {
    /// Empty argument or NUL byte.
    #[error("invalid path {0:?}")]
    Invalid(String),
    /// A `..` component.
    #[error("path {0:?} contains `..`; give a path inside the repository root")]
    ParentComponent(String),
    /// The path (after resolving symlinks) lies outside the root.
    #[error("path {path:?} resolves outside the repository root {root}")]
    Escape {
        /// The path as given.
        path: String,
        /// The root.
        root: String,
    },
    /// The file system refused to resolve it.
    #[error("cannot resolve {path:?}: {message}")]
    Io {
        /// The path as given.
        path: String,
        /// The error.
        message: String,
    },
}

/// The repository root every tool path is confined to.
#[derive(Debug, Clone)]
pub(crate) struct Workspace {
    root: PathBuf,
}

impl Workspace {
    /// A workspace rooted at `root` (canonicalised; it must exist).
    pub(crate) fn new(root: &Path) -> io::Result<Workspace> {
        Ok(Workspace {
            root: root.canonicalize()?,
        })
    }

    /// The canonical root.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves a client-supplied path inside the root (see the module doc).
    pub(crate) fn resolve(&self, raw: &str) -> Result<PathBuf, PathError> {
        if raw.is_empty() || raw.contains('\0') {
            return Err(PathError::Invalid(raw.to_string()));
        }
        let given = Path::new(raw);
        if given.components().any(|c| c == Component::ParentDir) {
            return Err(PathError::ParentComponent(raw.to_string()));
        }
        let joined = if given.is_absolute() {
            given.to_path_buf()
        } else {
            self.root.join(given)
        };
        self.contain_as(&joined, raw)
    }

    /// Checks a path the server derived itself (absolute, no `..`): it must
    /// resolve inside the root. Returns the resolved path.
    pub(crate) fn contain(&self, path: &Path) -> Result<PathBuf, PathError> {
        let shown = path.display().to_string();
        if path.components().any(|c| c == Component::ParentDir) {
            return Err(PathError::ParentComponent(shown));
        }
        self.contain_as(path, &shown)
    }

    /// The path relative to the root, for messages and outputs.
    pub(crate) fn relative<'a>(&self, path: &'a Path) -> &'a Path {
        path.strip_prefix(&self.root).unwrap_or(path)
    }

    fn contain_as(&self, path: &Path, shown: &str) -> Result<PathBuf, PathError> {
        let resolved = resolve_existing_prefix(path).map_err(|e| PathError::Io {
            path: shown.to_string(),
            message: e.to_string(),
        })?;
        if resolved.starts_with(&self.root) {
            Ok(resolved)
        } else {
            Err(PathError::Escape {
                path: shown.to_string(),
                root: self.root.display().to_string(),
            })
        }
    }
}

/// Canonicalises the longest existing prefix of `path` and appends the
/// missing tail unchanged. A dangling symlink counts as existing-but-broken:
/// its target is unknown, so it is an error rather than a "new file".
fn resolve_existing_prefix(path: &Path) -> io::Result<PathBuf> {
    let mut tail: Vec<OsString> = Vec::new();
    let mut cur = path.to_path_buf();
    let mut retries = 0;
    loop {
        match cur.canonicalize() {
            Ok(mut base) => {
                for part in tail.iter().rev() {
                    base.push(part);
                }
                return Ok(base);
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                match std::fs::symlink_metadata(&cur) {
                    Ok(m) if m.file_type().is_symlink() => {
                        return Err(io::Error::new(
                            io::ErrorKind::NotFound,
                            "dangling symbolic link",
                        ));
                    }
                    // Created between the two calls (a concurrent writer's
                    // first transcript append): resolve it again.
                    Ok(_) if retries < 8 => {
                        retries += 1;
                        continue;
                    }
                    _ => {}
                }
                let Some(name) = cur.file_name().map(|n| n.to_os_string()) else {
                    return Err(e);
                };
                tail.push(name);
                if !cur.pop() {
                    return Err(e);
                }
            }
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn setup() -> (tempfile::TempDir, Workspace) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("repo");
        fs::create_dir_all(root.join("docs")).unwrap();
        fs::write(root.join("docs/a.noma"), "# A\n").unwrap();
        fs::write(tmp.path().join("outside.noma"), "# X\n").unwrap();
        let ws = Workspace::new(&root).unwrap();
        (tmp, ws)
    }

    #[test]
    fn relative_and_absolute_inside_are_accepted() {
        let (_t, ws) = setup();
        let want = ws.root().join("docs/a.noma");
        assert_eq!(ws.resolve("docs/a.noma").unwrap(), want);
        assert_eq!(ws.resolve("./docs/a.noma").unwrap(), want);
        assert_eq!(ws.resolve(want.to_str().unwrap()).unwrap(), want);
    }

    #[test]
    fn parent_components_are_refused_even_when_inside() {
        let (_t, ws) = setup();
        for p in ["../outside.noma", "docs/../docs/a.noma", "docs/.."] {
            assert!(
                matches!(ws.resolve(p), Err(PathError::ParentComponent(_))),
                "{p}"
            );
        }
        let abs = format!("{}/docs/../docs/a.noma", ws.root().display());
        assert!(matches!(
            ws.resolve(&abs),
            Err(PathError::ParentComponent(_))
        ));
    }

    #[test]
    fn absolute_outside_is_refused() {
        let (t, ws) = setup();
        let out = t.path().join("outside.noma");
        assert!(matches!(
            ws.resolve(out.to_str().unwrap()),
            Err(PathError::Escape { .. })
        ));
        assert!(matches!(
            ws.resolve("/etc/passwd"),
            Err(PathError::Escape { .. })
        ));
        // A sibling whose name merely starts with the root's name is outside.
        let sibling = t.path().join("repo-other");
        fs::create_dir_all(&sibling).unwrap();
        assert!(matches!(
            ws.resolve(sibling.join("x.noma").to_str().unwrap()),
            Err(PathError::Escape { .. })
        ));
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_escaping_the_root_are_refused() {
        let (t, ws) = setup();
        let root = ws.root().to_path_buf();
        std::os::unix::fs::symlink(t.path().join("outside.noma"), root.join("link.noma")).unwrap();
        std::os::unix::fs::symlink(t.path(), root.join("up")).unwrap();
        assert!(matches!(
            ws.resolve("link.noma"),
            Err(PathError::Escape { .. })
        ));
        assert!(matches!(
            ws.resolve("up/outside.noma"),
            Err(PathError::Escape { .. })
        ));
        // A new file under an escaping directory link is refused too.
        assert!(matches!(
            ws.resolve("up/new.noma"),
            Err(PathError::Escape { .. })
        ));
        // A link that stays inside resolves to its target.
        std::os::unix::fs::symlink(root.join("docs/a.noma"), root.join("in.noma")).unwrap();
        assert_eq!(ws.resolve("in.noma").unwrap(), root.join("docs/a.noma"));
        // A dangling link is an error, not a new file.
        std::os::unix::fs::symlink(root.join("nowhere"), root.join("dangling.noma")).unwrap();
        assert!(matches!(
            ws.resolve("dangling.noma"),
            Err(PathError::Io { .. })
        ));
        // Derived paths are checked the same way.
        std::os::unix::fs::symlink(t.path().join("x.patches"), root.join("docs/a.noma.patches"))
            .unwrap();
        assert!(matches!(
            ws.contain(&root.join("docs/a.noma.patches")),
            Err(PathError::Io { .. }) | Err(PathError::Escape { .. })
        ));
        fs::write(t.path().join("x.patches"), "").unwrap();
        assert!(matches!(
            ws.contain(&root.join("docs/a.noma.patches")),
            Err(PathError::Escape { .. })
        ));
    }

    #[test]
    fn missing_files_inside_resolve_for_a_clear_not_found() {
        let (_t, ws) = setup();
        assert_eq!(
            ws.resolve("docs/new/deeper.noma").unwrap(),
            ws.root().join("docs/new/deeper.noma")
        );
    }

    #[test]
    fn empty_and_nul_are_invalid() {
        let (_t, ws) = setup();
        assert!(matches!(ws.resolve(""), Err(PathError::Invalid(_))));
        assert!(matches!(ws.resolve("a\0b"), Err(PathError::Invalid(_))));
    }
}

//! Git configuration files and attributes, for the installers in
//! `crate::hooks`: read, set and remove keys of one config file, and ask
//! git how attributes resolve for a path.

use std::path::Path;

use super::repo::{libgit2, GitError};

/// The string value of `key` in the config file at `path`; None when the
/// file or the key is absent or unreadable.
pub fn get(path: &Path, key: &str) -> Option<String> {
    git2::Config::open(path).ok()?.get_string(key).ok()
}

/// git's `user.name` as seen from `start`: the repository's config (with
/// its global and system layers) when `start` is inside one, the global and
/// system config otherwise; None when unset or empty.
pub fn user_name(start: &Path) -> Option<String> {
    let cfg = match git2::Repository::discover(start) {
        Ok(repo) => repo.config().ok()?,
        Err(_) => git2::Config::open_default().ok()?,
    };
    let name = cfg.get_string("user.name").ok()?;
    let name = name.trim();
    (!name.is_empty()).then(|| name.to_string())
}

/// git's `user.name` outside any repository: the global and system
/// configuration's.
pub fn user_name_outside() -> Option<String> {
    git2::Config::open_default()
        .ok()?
        .get_string("user.name")
        .ok()
}

/// Sets each `(key, value)` in the config file at `path` (created if
/// absent).
pub fn set(path: &Path, entries: &[(&str, &str)]) -> Result<(), GitError> {
    let mut cfg = git2::Config::open(path).map_err(libgit2)?;
    for (k, v) in entries {
        cfg.set_str(k, v).map_err(libgit2)?;
    }
    Ok(())
}

/// Removes `key` from the config file at `path`.
pub fn remove(path: &Path, key: &str) -> Result<(), GitError> {
    git2::Config::open(path)
        .map_err(libgit2)?
        .remove(key)
        .map_err(libgit2)?;
    Ok(())
}

/// For each of `paths` (relative to the work tree), whether git resolves
/// its `text` attribute to unset (`-text`, `binary`, or a macro that
/// unsets it): git will never convert its line endings. Opened by git dir
/// (GIT_DIR / GIT_WORK_TREE layouts have no `.git` in the work tree);
/// `.gitattributes` files first, then the index, as git does on checkout.
pub fn text_unset(git_dir: &Path, work_tree: &Path, paths: &[&str]) -> Result<Vec<bool>, GitError> {
    let repo = git2::Repository::open(git_dir).map_err(libgit2)?;
    repo.set_workdir(work_tree, false).map_err(libgit2)?;
    paths
        .iter()
        .map(|p| {
            let v = repo
                .get_attr_bytes(Path::new(p), "text", git2::AttrCheckFlags::FILE_THEN_INDEX)
                .map_err(libgit2)?;
            Ok(git2::AttrValue::from_bytes(v) == git2::AttrValue::False)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_get_remove_and_attributes() {
        let dir = tempfile::tempdir().unwrap();
        git2::Repository::init(dir.path()).unwrap();
        let cfg = dir.path().join(".git/config");
        set(&cfg, &[("merge.x.driver", "cmd %O"), ("merge.x.name", "x")]).unwrap();
        assert_eq!(get(&cfg, "merge.x.driver").as_deref(), Some("cmd %O"));
        remove(&cfg, "merge.x.driver").unwrap();
        assert_eq!(get(&cfg, "merge.x.driver"), None);
        std::fs::write(dir.path().join(".gitattributes"), "*.a -text\n*.b binary\n").unwrap();
        let got = text_unset(&dir.path().join(".git"), dir.path(), &["f.a", "f.b", "f.c"]).unwrap();
        assert_eq!(got, [true, true, false]);
    }
}

//! Where the server may write: rename and "Record this edit" patch a
//! document and append its transcript, so they act only on a file inside
//! a workspace root the client named, reached without a link. A linked
//! directory in a repository (committed, or made by a tool) would
//! otherwise let an edit land anywhere the link points.

use std::path::{Component, PathBuf};

use lsp_types::Url;

/// The workspace roots of an `initialize` request's params: its
/// `workspaceFolders`, else `rootUri`, else `rootPath`. Empty when the
/// client names none.
pub(crate) fn roots(init: &serde_json::Value) -> Vec<PathBuf> {
    let path_of = |v: &serde_json::Value| {
        v.as_str()
            .and_then(|s| Url::parse(s).ok())
            .and_then(|u| u.to_file_path().ok())
    };
    let folders: Vec<PathBuf> = init["workspaceFolders"]
        .as_array()
        .map(|fs| fs.iter().filter_map(|f| path_of(&f["uri"])).collect())
        .unwrap_or_default();
    if !folders.is_empty() {
        return folders;
    }
    if let Some(root) = path_of(&init["rootUri"]) {
        return vec![root];
    }
    init["rootPath"]
        .as_str()
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .into_iter()
        .collect()
}

/// `uri`'s file when the server may write it: inside one of `roots` (or,
/// when the client named none, the directory the server was started in),
/// named without `.` or `..`, with no symbolic link from the root down to
/// the file itself. Otherwise why not.
pub(crate) fn writable(uri: &Url, roots: &[PathBuf]) -> Result<PathBuf, WriteRefused> {
    let path = uri
        .to_file_path()
        .map_err(|()| WriteRefused::NotAFile(uri.clone()))?;
    if path
        .components()
        .any(|c| matches!(c, Component::CurDir | Component::ParentDir))
    {
        return Err(WriteRefused::DotSegment(path));
    }
    let cwd;
    let roots = if roots.is_empty() {
        cwd = std::env::current_dir().map_err(WriteRefused::NoRoot)?;
        std::slice::from_ref(&cwd)
    } else {
        roots
    };
    let Some((root, rest)) = roots
        .iter()
        .find_map(|r| Some((r, path.strip_prefix(r).ok()?)))
    else {
        return Err(WriteRefused::Outside {
            path,
            roots: roots.to_vec(),
        });
    };
    let mut at = root.clone();
    for c in rest.components() {
        at.push(c);
        let is_link = std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink());
        if is_link {
            return Err(WriteRefused::Link(at));
        }
    }
    Ok(path)
}

/// Why the server does not write a document.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WriteRefused {
    #[error("{0} is not a file URI")]
    NotAFile(Url),
    #[error("{} names `.` or `..`: write refused", .0.display())]
    DotSegment(PathBuf),
    #[error("no workspace root: {0}")]
    NoRoot(std::io::Error),
    #[error("{} is outside the workspace ({}): the language server writes only documents inside it", path.display(), shown(roots))]
    Outside { path: PathBuf, roots: Vec<PathBuf> },
    #[error("{} is a symbolic link: the language server does not write through links (open the file at its real path, inside the workspace)", .0.display())]
    Link(PathBuf),
}

fn shown(roots: &[PathBuf]) -> String {
    roots
        .iter()
        .map(|r| r.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn roots_come_from_folders_then_root_uri_then_root_path() {
        let v = serde_json::json!({
            "workspaceFolders": [{"uri": "file:///w/a", "name": "a"}, {"uri": "file:///w/b", "name": "b"}],
            "rootUri": "file:///r"
        });
        assert_eq!(roots(&v), [PathBuf::from("/w/a"), PathBuf::from("/w/b")]);
        let v = serde_json::json!({"workspaceFolders": null, "rootUri": "file:///r"});
        assert_eq!(roots(&v), [PathBuf::from("/r")]);
        let v = serde_json::json!({"rootPath": "/p"});
        assert_eq!(roots(&v), [PathBuf::from("/p")]);
        assert!(roots(&serde_json::json!({})).is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn only_files_inside_a_root_reached_without_links_are_writable() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("ws");
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(root.join("docs")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(root.join("docs/a.noma"), "# A\n").unwrap();
        std::fs::write(outside.join("b.noma"), "# B\n").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("linked")).unwrap();
        std::os::unix::fs::symlink(outside.join("b.noma"), root.join("b.noma")).unwrap();
        let roots = [root.clone()];
        let uri = |p: &Path| Url::from_file_path(p).unwrap();

        let ok = root.join("docs/a.noma");
        assert_eq!(writable(&uri(&ok), &roots).unwrap(), ok);
        let err = writable(&uri(&outside.join("b.noma")), &roots).unwrap_err();
        assert!(matches!(err, WriteRefused::Outside { .. }), "{err}");
        assert!(err.to_string().contains("outside the workspace"), "{err}");
        let err = writable(&uri(&root.join("linked/b.noma")), &roots).unwrap_err();
        assert!(
            err.to_string().contains("linked is a symbolic link"),
            "{err}"
        );
        let err = writable(&uri(&root.join("b.noma")), &roots).unwrap_err();
        assert!(
            err.to_string().contains("b.noma is a symbolic link"),
            "{err}"
        );
        let dotdot = Url::parse(&format!("{}/docs/../../outside/b.noma", uri(&root))).unwrap();
        assert!(writable(&dotdot, &roots).is_err());
        let http = Url::parse("https://example.com/a.noma").unwrap();
        assert!(writable(&http, &roots)
            .unwrap_err()
            .to_string()
            .contains("not a file URI"));
    }
}

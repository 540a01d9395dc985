//! Where a document is, as a transcript record names it (`doc_uri`, §5.2).
//! Paths are made absolute and symlinks resolved on the real file system,
//! so this lives here and not in `noma-core`.

use std::path::Path;

use percent_encoding::{percent_encode, AsciiSet, CONTROLS};

/// Bytes that must be escaped in the path of a `file://` URI (RFC 3986
/// `pchar` plus `/`); everything non-ASCII is always escaped.
const PATH_ESCAPE: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'[')
    .add(b'\\')
    .add(b']')
    .add(b'^')
    .add(b'`')
    .add(b'{')
    .add(b'|')
    .add(b'}');

/// The `file://` URI of `path`, made absolute (symlinks resolved when the
/// file exists) and percent-encoded.
pub fn doc_uri(path: &Path) -> String {
    let abs = std::fs::canonicalize(path)
        .or_else(|_| std::path::absolute(path))
        .unwrap_or_else(|_| path.to_path_buf());
    #[cfg(unix)]
    let bytes: Vec<u8> = {
        use std::os::unix::ffi::OsStrExt;
        abs.as_os_str().as_bytes().to_vec()
    };
    #[cfg(not(unix))]
    let bytes: Vec<u8> = {
        let s = abs.to_string_lossy().replace('\\', "/");
        if s.starts_with('/') {
            s.into_bytes()
        } else {
            format!("/{s}").into_bytes()
        }
    };
    format!("file://{}", percent_encode(&bytes, PATH_ESCAPE))
}

/// The `doc_uri` of a record: inside a repository whose work-tree root is
/// `root`, the document's path relative to it with `/` separators (the
/// same in every clone, and no home directory leaks into shared history;
/// §5.2 asks only for a string); elsewhere its `file://` URI.
pub fn portable_doc_uri(root: Option<&Path>, path: &Path) -> String {
    let abs = std::fs::canonicalize(path)
        .or_else(|_| std::path::absolute(path))
        .unwrap_or_else(|_| path.to_path_buf());
    let root = root.and_then(|r| std::fs::canonicalize(r).ok());
    match root.as_deref().and_then(|r| abs.strip_prefix(r).ok()) {
        Some(rel) if !rel.as_os_str().is_empty() => rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/"),
        _ => doc_uri(path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doc_uri_is_repository_relative_inside_a_repository() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("docs")).unwrap();
        let doc = dir.path().join("docs/a.noma");
        std::fs::write(&doc, "x").unwrap();
        assert_eq!(portable_doc_uri(Some(dir.path()), &doc), "docs/a.noma");
        assert!(portable_doc_uri(None, &doc).starts_with("file:///"));
        let elsewhere = tempfile::tempdir().unwrap();
        assert!(portable_doc_uri(Some(elsewhere.path()), &doc).starts_with("file:///"));
    }

    #[test]
    fn uri_escapes_reserved_bytes() {
        let uri = doc_uri(Path::new("/tmp/a b#c%.noma"));
        assert!(uri.starts_with("file:///"), "{uri}");
        assert!(uri.ends_with("/a%20b%23c%25.noma"), "{uri}");
    }
}

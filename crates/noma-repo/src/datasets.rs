//! The files a document's `::dataset{src=...}` blocks name, as a commit
//! or the index holds them: read before validation, so that the hooks and
//! `noma reconcile` validate with the datasets being committed or
//! merged (decision `one-validation-configuration`), never the working
//! tree's.

use std::collections::HashMap;

use crate::git::repo::GitError;

/// Each local `src=` of a document, read (one blob each; nothing for a
/// document without local dataset sources).
#[derive(Debug, Default)]
pub struct Datasets {
    /// `src` as written → its bytes (`None`: not there).
    files: HashMap<String, Option<Vec<u8>>>,
}

impl Datasets {
    /// Reads the `src=` files of `doc` (at repository path `doc_path`)
    /// through `blob`, which gives a repository path's bytes.
    pub fn read(
        doc_path: &str,
        doc: &noma_core::doc::Document,
        mut blob: impl FnMut(&str) -> Result<Option<Vec<u8>>, GitError>,
    ) -> Result<Self, GitError> {
        let mut files = HashMap::new();
        for node in doc.walk().filter(|n| n.is_directive("dataset")) {
            let Some(src) = node.attrs().and_then(|a| a.get_str("src")) else {
                continue;
            };
            if src.contains("://") || files.contains_key(src) {
                continue;
            }
            let bytes = match repo_path(doc_path, src) {
                Some(p) => blob(&p)?,
                None => None,
            };
            files.insert(src.to_string(), bytes);
        }
        Ok(Datasets { files })
    }
}

/// `src` relative to the directory of the document at `doc_path`, as a
/// path of the repository; `None` when it leaves the repository.
fn repo_path(doc_path: &str, src: &str) -> Option<String> {
    if src.starts_with('/') {
        return None;
    }
    let mut parts: Vec<&str> = doc_path.split('/').collect();
    parts.pop();
    for part in src.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

impl noma_core::validate::DatasetFiles for Datasets {
    fn readable(&self, src: &str) -> bool {
        matches!(self.files.get(src), Some(Some(_)))
    }

    fn read_small(&self, src: &str, max: u64) -> Option<String> {
        let bytes = self.files.get(src)?.as_ref()?;
        if bytes.len() as u64 > max {
            return None;
        }
        String::from_utf8(bytes.clone()).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_resolve_beside_the_document_and_stay_inside() {
        assert_eq!(
            repo_path("docs/a.noma", "d.csv").as_deref(),
            Some("docs/d.csv")
        );
        assert_eq!(
            repo_path("docs/a.noma", "./x/../d.csv").as_deref(),
            Some("docs/d.csv")
        );
        assert_eq!(
            repo_path("docs/a.noma", "../d.csv").as_deref(),
            Some("d.csv")
        );
        assert_eq!(repo_path("a.noma", "../d.csv"), None);
        assert_eq!(repo_path("a.noma", "/etc/passwd"), None);
    }
}

//! The document a tool names: resolved inside the repository root
//! ([`super::paths`]), refused when it is a book manifest (§B.7:
//! `isError: true`), inside `.git` or no `.noma` file; read, and validated
//! with its dataset directory.

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::Deserialize;

use super::registry::ToolError;
use super::Context;
use noma_store::engine;

/// The `file` argument shared by the read-only tools.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct FileArgs {
    /// The .noma file's path.
    pub file: String,
}

impl Context {
    /// Resolves a `file` argument: inside the root, not a book manifest.
    /// `tool` names the caller in the refusal.
    pub(crate) fn doc_path(&self, file: &str, tool: &str) -> Result<PathBuf, ToolError> {
        let manifest = || ToolError::System {
            error: format!(
                "book manifests (.noma.yml) are not valid targets for {tool}; give a .noma document"
            ),
            code: tool
                .starts_with("patch")
                .then(|| "unsupported_op".to_string()),
        };
        if engine::is_book_manifest(Path::new(file)) {
            return Err(manifest());
        }
        let path = self.workspace.resolve(file).map_err(ToolError::system)?;
        if engine::is_book_manifest(&path) {
            return Err(manifest());
        }
        // Only documents: a request naming another file (`.git/config`, a
        // transcript, a source file) would be parsed as a document and, on
        // a patch, rewritten, with a `<file>.patches` left beside it.
        let inside_git = self
            .workspace
            .relative(&path)
            .components()
            .any(|c| c.as_os_str().eq_ignore_ascii_case(".git"));
        if inside_git {
            return Err(ToolError::system(format!(
                "{file}: inside .git; give a .noma document in the work tree"
            )));
        }
        if path.extension().is_none_or(|e| e != "noma") {
            return Err(ToolError::system(format!(
                "{file}: not a .noma document; {tool} reads and patches only .noma files"
            )));
        }
        Ok(path)
    }

    /// A path the tools derive from a document (transcript, sidecar) must
    /// stay inside the root too.
    pub(crate) fn derived(&self, path: &Path) -> Result<PathBuf, ToolError> {
        self.workspace.contain(path).map_err(ToolError::system)
    }

    /// A path as the tools show it: relative to the root.
    pub(crate) fn shown(&self, path: &Path) -> String {
        self.workspace.relative(path).display().to_string()
    }
}

/// The document's text.
pub(crate) fn read_source(path: &Path) -> Result<String, ToolError> {
    noma_store::fsio::read_document(path).map_err(ToolError::system)
}

/// Validator options for the document at `path`, built from its work
/// tree's policy as `noma check`, the hooks and the language server build
/// them (datasets read beside it); a malformed policy file is an error.
pub(crate) fn validate_options(path: &Path) -> Result<noma_core::validate::Options, ToolError> {
    noma_provenance::config::validate_options_for(path, &Default::default())
        .map_err(ToolError::system)
}

//! The validator (§4.4). STUB — being replaced by the validator work.

use std::path::PathBuf;

use crate::diag::{Diagnostic, Severity};
use crate::doc::Document;

/// Options for one validation run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Rule codes to drop (`--ignore-rule`); unknown codes yield `unknown-ignore-rule`.
    pub ignore_rules: Vec<String>,
    /// Profile override (`--profile`); otherwise frontmatter `profile:`/`profiles:`.
    pub profile: Option<String>,
    /// Directory that `::dataset{src=...}` paths are relative to (None = skip loading).
    pub base_dir: Option<PathBuf>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            ignore_rules: Vec::new(),
            profile: None,
            base_dir: None,
        }
    }
}

/// Validates a parsed document. Parse issues come first, as errors.
pub fn validate(doc: &Document, _opts: &Options) -> Vec<Diagnostic> {
    doc.issues
        .iter()
        .map(|i| Diagnostic::new(Severity::Error, i.code, i.message.clone()).at_line(i.line))
        .collect()
}

//! The hook's verdict while typing: the blocks of the open text that
//! differ from the transcript's last state are edits the pre-commit hook
//! will refuse as `unrecorded-edit` until they are recorded.
//!
//! The transcript's state and the recording come from the caller (the
//! binary wires them to `noma record`'s own code), so this crate stays a
//! layer over the core that knows no git.

use std::collections::HashMap;
use std::path::Path;

use lsp_types::{DiagnosticSeverity, NumberOrString};
use noma_core::doc::hash::{block_hashes, sha256_hex};
use noma_core::doc::lines::{uniform_eol, with_line_endings, Eol};
use noma_core::doc::parse;

use crate::analysis::Analysis;

/// The code of the diagnostics on edits not in the transcript (the
/// hook's).
pub const UNRECORDED: &str = "unrecorded-edit";

/// The command the "Record this edit" code action runs.
pub const RECORD_COMMAND: &str = "noma.record";

/// What the server needs of the repository.
pub trait Guard {
    /// The transcript's last state of the document at `path`: the text
    /// `noma record` diffs the file against; `None` when the document has
    /// no transcript (nothing to guard) or it cannot be rebuilt.
    fn last_state(&self, path: &Path) -> Option<String>;
    /// Records the edit of the file at `path` as `noma record` does: a
    /// short report, or why it could not.
    fn record(&self, path: &Path) -> Result<String, String>;
    /// The last `limit` changes of block `id` of the document at `path`,
    /// newest first, one Markdown line each (op, actor, time, signer,
    /// approver, commit), as `noma log --block` lists them; empty when
    /// the block has no recorded history.
    fn history(&self, path: &Path, id: &str, limit: usize) -> Vec<String>;
    /// Renames block `from` to `to` in the saved file at `path` as `noma
    /// patch` applies a `rename_id` op (references updated, the record
    /// appended to the transcript): the document's new text, or why not.
    fn rename(&self, path: &Path, from: &str, to: &str) -> Result<String, String>;
    /// The signature and approval problems of the transcript's records
    /// (as `noma replay --signatures` reports them), under the work
    /// tree's policy; empty when there are none or no policy asks.
    fn provenance(&self, path: &Path) -> Vec<RecordProblem>;
}

/// A record's signature or approval problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordProblem {
    /// An error (the hook or the PR check refuses it), else a warning.
    pub error: bool,
    /// `unsigned-record`, `signature-invalid`, `signer-not-allowed`,
    /// `approval-missing`, `approval-invalid` or `signer-mismatch`.
    pub code: String,
    /// The record's 1-based transcript line.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// The transcript's last state, as block hashes.
#[derive(Debug, Clone)]
pub struct Expected {
    sha256: String,
    blocks: Vec<(String, String)>,
    /// Its line endings, when of one kind: a text saved with the other
    /// kind is compared as if it had them (`noma record` gives them back).
    eol: Option<Eol>,
    /// The records' provenance problems.
    pub problems: Vec<RecordProblem>,
}

impl Expected {
    /// The state `text` (the transcript's last state).
    pub fn of(text: &str) -> Expected {
        let doc = parse(text);
        Expected {
            sha256: sha256_hex(text.as_bytes()),
            eol: uniform_eol(text.as_bytes()),
            blocks: block_hashes(text, &doc)
                .into_iter()
                .map(|b| (b.id, b.sha256))
                .collect(),
            problems: Vec::new(),
        }
    }
}

/// `unrecorded-edit` diagnostics for the open text against `expected`:
/// one on each changed or new block (on its id), one per removed block
/// and, when the text differs outside every block, one on the first line.
/// A text saved with other line endings than the state's is compared by
/// its lines, and the line endings named on the first line.
pub fn unrecorded(a: &Analysis, expected: &Expected) -> Vec<lsp_types::Diagnostic> {
    if sha256_hex(a.text.as_bytes()) == expected.sha256 {
        return Vec::new();
    }
    let first_line = a.index.line_range(&a.text, 0);
    // Only the terminators change: the tree's line spans hold for both.
    let resaved = expected.eol.and_then(|e| with_line_endings(e, &a.text));
    let text = resaved
        .as_ref()
        .map_or(a.text.as_str(), |(_, t)| t.as_str());
    let only_eol = sha256_hex(text.as_bytes()) == expected.sha256;
    let eol_note = resaved.as_ref().map(|(saved, _)| {
        let (saved, recorded) = (saved.name(), saved.other().name());
        let then = if only_eol {
            "; nothing else changed"
        } else {
            " and records only the blocks changed"
        };
        diagnostic(
            first_line,
            format!(
                "the document is saved with {saved} line endings where its transcript's state has {recorded} (\"Record this edit\" gives it back its {recorded}{then})"
            ),
        )
    });
    if only_eol {
        return eol_note.into_iter().collect();
    }
    let now: HashMap<String, String> = block_hashes(text, &a.doc)
        .into_iter()
        .map(|b| (b.id, b.sha256))
        .collect();
    let before: HashMap<&str, &str> = expected
        .blocks
        .iter()
        .map(|(i, s)| (i.as_str(), s.as_str()))
        .collect();
    let mut out = Vec::new();
    for def in a.definitions() {
        let what = match before.get(def.id.as_str()) {
            Some(sha) if now.get(&def.id).map(String::as_str) == Some(*sha) => continue,
            Some(_) => "changed",
            None => "new",
        };
        out.push(diagnostic(
            def.range,
            format!("block {} is {what} outside its transcript", def.id),
        ));
    }
    for (id, _) in &expected.blocks {
        if !now.contains_key(id) {
            out.push(diagnostic(
                first_line,
                format!("block {id} was removed outside its transcript"),
            ));
        }
    }
    if out.is_empty() {
        out.push(diagnostic(
            first_line,
            "the document differs from its transcript's last state".to_string(),
        ));
    }
    out.extend(eol_note);
    out
}

/// The transcript's provenance problems, on the document's first line (a
/// record belongs to the document, not to one block), each naming its
/// transcript line.
pub fn provenance(a: &Analysis, expected: &Expected) -> Vec<lsp_types::Diagnostic> {
    let first_line = a.index.line_range(&a.text, 0);
    expected
        .problems
        .iter()
        .map(|p| lsp_types::Diagnostic {
            range: first_line,
            severity: Some(if p.error {
                DiagnosticSeverity::ERROR
            } else {
                DiagnosticSeverity::WARNING
            }),
            code: Some(NumberOrString::String(p.code.clone())),
            source: Some("noma".to_string()),
            message: format!("transcript line {}: {}", p.line, p.message),
            ..Default::default()
        })
        .collect()
}

fn diagnostic(range: lsp_types::Range, what: String) -> lsp_types::Diagnostic {
    lsp_types::Diagnostic {
        range,
        severity: Some(DiagnosticSeverity::ERROR),
        code: Some(NumberOrString::String(UNRECORDED.to_string())),
        source: Some("noma".to_string()),
        message: format!(
            "{what}: the pre-commit hook refuses it until it is recorded \
             (the \"Record this edit\" action, or noma record)"
        ),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(text: &str, expected: &Expected) -> Vec<String> {
        let a = Analysis::new(text.to_string(), &noma_core::validate::Options::default());
        unrecorded(&a, expected)
            .into_iter()
            .map(|d| d.message)
            .collect()
    }

    /// A CRLF save is named as such, and only the block edited is
    /// reported (before, every block was).
    #[test]
    fn a_save_with_other_line_endings_names_them_and_the_edited_block() {
        let lf = "# T\n\n::note{id=\"a\"}\nalpha\n::\n\n::note{id=\"b\"}\nbeta\n::\n";
        let expected = Expected::of(lf);
        let crlf = lf.replace('\n', "\r\n");
        // The blocks an LF edit names (the note and its section).
        let plain = messages(&lf.replace("beta", "BETA"), &expected);
        assert!(
            plain.iter().any(|m| m.starts_with("block b is changed")),
            "{plain:?}"
        );
        assert!(
            !plain.iter().any(|m| m.starts_with("block a ")),
            "{plain:?}"
        );
        let m = messages(&crlf.replace("beta", "BETA"), &expected);
        assert_eq!(m.len(), plain.len() + 1, "{m:?}");
        assert_eq!(m[..plain.len()], plain[..], "{m:?}");
        assert!(
            m[plain.len()].starts_with("the document is saved with CRLF line endings where its transcript's state has LF (\"Record this edit\" gives it back its LF and records only the blocks changed)"),
            "{m:?}"
        );
        let m = messages(&crlf, &expected);
        assert_eq!(m.len(), 1, "{m:?}");
        assert!(
            m[0].contains("gives it back its LF; nothing else changed"),
            "{m:?}"
        );
        // The other way round, and the same line endings.
        let m = messages(lf, &Expected::of(&crlf));
        assert!(
            m.len() == 1
                && m[0]
                    .contains("saved with LF line endings where its transcript's state has CRLF"),
            "{m:?}"
        );
        assert!(messages(&crlf, &Expected::of(&crlf)).is_empty());
    }
}

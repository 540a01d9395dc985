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
use noma_core::doc::hash::{block_digests, block_digests_reusing, BlockDigest};
use noma_core::doc::lines::{uniform_eol, with_line_endings, Eol};
use noma_core::doc::{parse, Node};

use crate::analysis::Analysis;

/// The code of the diagnostics on edits not in the transcript (the
/// hook's).
pub(crate) const UNRECORDED: &str = "unrecorded-edit";

/// The command the "Record this edit" code action runs.
pub(crate) const RECORD_COMMAND: &str = "noma.record";

/// Why the repository side could not record or rename: the implementor's
/// error, shown to the editor's user as it displays.
pub type GuardError = Box<dyn std::error::Error + Send + Sync>;

/// What the server needs of the repository.
pub trait Guard {
    /// The transcript's last state of the document at `path`: the text
    /// `noma record` diffs the file against; `None` when the document has
    /// no transcript (nothing to guard) or it cannot be rebuilt.
    fn last_state(&self, path: &Path) -> Option<String>;
    /// Records the edit of the file at `path` as `noma record` does: a
    /// short report, or why it could not.
    fn record(&self, path: &Path) -> Result<String, GuardError>;
    /// The last `limit` changes of block `id` of the document at `path`,
    /// newest first, one Markdown line each (op, actor, time, signer,
    /// approver, commit), as `noma log --block` lists them; empty when
    /// the block has no recorded history.
    fn history(&self, path: &Path, id: &str, limit: usize) -> Vec<String>;
    /// Renames block `from` to `to` in the saved file at `path` as `noma
    /// patch` applies a `rename_id` op (references updated, the record
    /// appended to the transcript): the document's new text, or why not.
    fn rename(&self, path: &Path, from: &str, to: &str) -> Result<String, GuardError>;
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

/// The transcript's last state, as block digests: read once per
/// transcript change (open, save, record, rename), not per keystroke.
#[derive(Debug, Clone)]
pub(crate) struct Expected {
    text: String,
    /// Each block id's digest (the last block of an id, as a map of the
    /// state's blocks has it).
    blocks: HashMap<String, [u8; 32]>,
    /// The state's block ids in document order.
    order: Vec<String>,
    /// Its line endings, when of one kind: a text saved with the other
    /// kind is compared as if it had them (`noma record` gives them back).
    eol: Option<Eol>,
    /// The records' provenance problems.
    pub problems: Vec<RecordProblem>,
}

impl Expected {
    /// The state `text` (the transcript's last state).
    pub(crate) fn of(text: &str) -> Expected {
        let doc = parse(text);
        let mut blocks = HashMap::new();
        let mut order = Vec::new();
        for (id, digest, _) in block_digests(text, &doc) {
            blocks.insert(id.clone(), digest);
            order.push(id);
        }
        Expected {
            text: text.to_string(),
            eol: uniform_eol(text.as_bytes()),
            blocks,
            order,
            problems: Vec::new(),
        }
    }
}

/// The block digests of an analysed text, kept from one keystroke to the
/// next so that only the blocks an edit touched are hashed again.
#[derive(Debug, Clone, Default)]
pub(crate) struct Blocks(Vec<BlockDigest>);

/// Where the text changed since the last [`Blocks`]: its bytes before
/// `start` and from `end` on (in the new text) are the old text's, the
/// latter shifted by the change of length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Changed {
    /// First byte that may differ.
    pub start: usize,
    /// End of the bytes that may differ, in the new text.
    pub end: usize,
    /// The new text's length.
    pub len: usize,
    /// The old text's length.
    pub old_len: usize,
}

impl Changed {
    /// The range `start..end` of a text of `old_len` bytes replaced by
    /// `inserted` bytes.
    pub(crate) fn edit(start: usize, end: usize, inserted: usize, old_len: usize) -> Changed {
        Changed {
            start,
            end: start + inserted,
            len: old_len - (end - start) + inserted,
            old_len,
        }
    }

    /// `old` replaced by `new` as a whole: what lies between their common
    /// prefix and suffix.
    pub(crate) fn between(old: &str, new: &str) -> Changed {
        let (a, b) = (old.as_bytes(), new.as_bytes());
        let prefix = common_prefix(a, b);
        let suffix = common_suffix(&a[prefix..], &b[prefix..]);
        Changed {
            start: prefix,
            end: b.len() - suffix,
            len: b.len(),
            old_len: a.len(),
        }
    }

    /// This change followed by `next` (made on its result).
    pub(crate) fn then(self, next: Changed) -> Changed {
        // The bytes after this window, where `next` leaves them: moved by
        // its change of length, unless it rewrote them (then its own end
        // is the later one).
        let moved = (self.end + next.len).saturating_sub(next.old_len);
        Changed {
            start: self.start.min(next.start),
            end: moved.max(next.end),
            len: next.len,
            old_len: self.old_len,
        }
    }
}

/// Length of the common prefix of `a` and `b`, a page at a time.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const STEP: usize = 4096;
    let n = a.len().min(b.len());
    let mut at = 0;
    while at + STEP <= n && a[at..at + STEP] == b[at..at + STEP] {
        at += STEP;
    }
    at + a[at..n]
        .iter()
        .zip(&b[at..n])
        .take_while(|(x, y)| x == y)
        .count()
}

/// Length of the common suffix of `a` and `b`, a page at a time.
fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    const STEP: usize = 4096;
    let n = a.len().min(b.len());
    let (ea, eb) = (a.len(), b.len());
    let mut at = 0;
    while at + STEP <= n && a[ea - at - STEP..ea - at] == b[eb - at - STEP..eb - at] {
        at += STEP;
    }
    at + a[..ea - at]
        .iter()
        .rev()
        .zip(b[..eb - at].iter().rev())
        .take(n - at)
        .take_while(|(x, y)| x == y)
        .count()
}

impl Blocks {
    /// Every block of `a` hashed.
    pub(crate) fn of(a: &Analysis) -> Blocks {
        Blocks(block_digests_reusing(&a.text, &a.doc, |_| None))
    }

    /// The blocks of `a`, whose text is the one `old` was taken of with
    /// `changed` made to it: a block wholly before or after the change
    /// (the two bytes after its last line too, its terminator's kind)
    /// keeps its digest when the old text had a block over the same
    /// lines there.
    pub(crate) fn after(a: &Analysis, old: &Blocks, changed: Changed) -> Blocks {
        let shift = |at: usize| at + changed.old_len - changed.len;
        Blocks(block_digests_reusing(&a.text, &a.doc, |(from, to)| {
            if to + 2 <= changed.start {
                old.find((from, to))
            } else if from >= changed.end && changed.end <= changed.len {
                old.find((shift(from), shift(to)))
            } else {
                None
            }
        }))
    }

    /// The digest of the block over `bytes`, if there is one.
    fn find(&self, bytes: (usize, usize)) -> Option<[u8; 32]> {
        let at = self.0.partition_point(|b| b.bytes.0 < bytes.0);
        self.0[at..]
            .iter()
            .take_while(|b| b.bytes.0 == bytes.0)
            .find(|b| b.bytes == bytes)
            .map(|b| b.digest)
    }
}

/// `unrecorded-edit` diagnostics for the open text (its block digests
/// `blocks`) against `expected`: one on each changed or new block (on its
/// id), one per removed block and, when the text differs outside every
/// block, one on the first line. A text saved with other line endings
/// than the state's is compared by its lines, and the line endings named
/// on the first line.
pub(crate) fn unrecorded(
    a: &Analysis,
    blocks: &Blocks,
    expected: &Expected,
) -> Vec<lsp_types::Diagnostic> {
    if a.text == expected.text {
        return Vec::new();
    }
    let first_line = a.index.line_range(&a.text, 0);
    // Only the terminators change: the tree's line spans hold for both.
    let resaved = expected.eol.and_then(|e| with_line_endings(e, &a.text));
    let only_eol = resaved.as_ref().is_some_and(|(_, t)| *t == expected.text);
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
    // A resaved text is rare (a whole-file conversion): hashed whole.
    let resaved_blocks = resaved
        .as_ref()
        .map(|(_, t)| block_digests_reusing(t, &a.doc, |_| None));
    let digests = resaved_blocks.as_deref().unwrap_or(&blocks.0);
    let nodes: Vec<&Node> = a.doc.walk().filter(|n| n.id.is_some()).collect();
    // An id defined twice compares its last block, as a map of the
    // blocks would.
    let mut last: HashMap<&str, usize> = HashMap::with_capacity(nodes.len());
    for (i, n) in nodes.iter().enumerate() {
        last.insert(n.id.as_deref().unwrap_or_default(), i);
    }
    let mut out = Vec::new();
    for node in &nodes {
        let id = node.id.as_deref().unwrap_or_default();
        let now = last
            .get(id)
            .and_then(|&i| digests.get(i))
            .map(|b| &b.digest);
        let what = match expected.blocks.get(id) {
            Some(d) if now == Some(d) => continue,
            Some(_) => "changed",
            None => "new",
        };
        out.push(diagnostic(
            a.definition_of(node).range,
            format!("block {id} is {what} outside its transcript"),
        ));
    }
    for id in &expected.order {
        if !last.contains_key(id.as_str()) {
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
pub(crate) fn provenance(a: &Analysis, expected: &Expected) -> Vec<lsp_types::Diagnostic> {
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
        unrecorded(&a, &Blocks::of(&a), expected)
            .into_iter()
            .map(|d| d.message)
            .collect()
    }

    use noma_testutil::Rng;

    /// Keystrokes (bursts of range edits, and whole-text changes) on a
    /// document with a transcript: the digests kept from one keystroke to
    /// the next, with only the touched blocks hashed, equal the digests
    /// of the whole text, and so do the diagnostics. Seed: the
    /// `NOMA_TEST_SEED` variable, else a fixed one; it is printed.
    #[test]
    fn digests_kept_across_keystrokes_equal_a_fresh_hash() {
        let seed = std::env::var("NOMA_TEST_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0x9e37_79b9_7f4a_7c15_u64);
        println!("seed {seed}");
        let mut rng = Rng(seed.max(1));
        let start = "\u{feff}---\ntitle: T\n---\n\n# T\n\n## A\n\n::claim{id=\"c1\"}\nOne [[c2]].\n::\n\n::evidence{id=\"e1\" for=\"c1\"}\r\nRun.\r\n::\n\n## B\n\n::claim{id=\"c2\"}\nTwo.\n::\n\n::note{id=\"n\"}\ra\r::\n";
        let expected = Expected::of(start);
        let pieces = [
            "x",
            "\n",
            "\r\n",
            "\r",
            "::",
            "::claim{id=\"c9\"}\n",
            "## C\n",
            "# ",
            "c1",
            "",
            "\u{feff}",
            "é",
        ];
        let options = noma_core::validate::Options::default();
        let mut a = Analysis::new(start.to_string(), &options);
        let mut blocks = Blocks::of(&a);
        for step in 0..400 {
            let mut text = a.text.clone();
            let mut changed: Option<Changed> = None;
            for _ in 0..1 + rng.below(3) {
                let c = if rng.below(8) == 0 {
                    // A whole-text change: a copy with one piece dropped in.
                    let mut new = text.clone();
                    let at = rng.below(new.len() + 1);
                    let at = (0..=at)
                        .rev()
                        .find(|&i| new.is_char_boundary(i))
                        .unwrap_or(0);
                    new.insert_str(at, pieces[rng.below(pieces.len())]);
                    let c = Changed::between(&text, &new);
                    text = new;
                    c
                } else {
                    let mut start = rng.below(text.len() + 1);
                    while !text.is_char_boundary(start) {
                        start -= 1;
                    }
                    let mut end = (start + rng.below(12)).min(text.len());
                    while !text.is_char_boundary(end) {
                        end -= 1;
                    }
                    let piece = pieces[rng.below(pieces.len())];
                    let c = Changed::edit(start, end, piece.len(), text.len());
                    text.replace_range(start..end, piece);
                    c
                };
                changed = Some(changed.map_or(c, |old| old.then(c)));
            }
            let changed = changed.expect("one change at least");
            assert_eq!(changed.len, text.len(), "seed {seed} step {step}");
            let next = Analysis::new(text, &options);
            let kept = Blocks::after(&next, &blocks, changed);
            let fresh = Blocks::of(&next);
            assert_eq!(kept.0, fresh.0, "seed {seed} step {step}: {:?}", next.text);
            assert_eq!(
                unrecorded(&next, &kept, &expected),
                unrecorded(&next, &fresh, &expected),
                "seed {seed} step {step}"
            );
            a = next;
            blocks = kept;
            if step % 50 == 49 {
                // Back to the recorded state now and then: nothing to report.
                let c = Changed::between(&a.text, start);
                a = Analysis::new(start.to_string(), &options);
                blocks = Blocks::after(&a, &blocks, c);
                assert!(unrecorded(&a, &blocks, &expected).is_empty(), "seed {seed}");
            }
        }
    }

    /// The old per-keystroke comparison (sha256 of every block of the
    /// whole text) names the same blocks as the digests kept.
    #[test]
    fn the_verdict_is_the_one_block_hashes_give() {
        let recorded = "# T\n\n## A\n\n::claim{id=\"a\"}\nx\n::\n\n## B\n\n::claim{id=\"b\"}\ny\n::\n\n::note{id=\"a\"}\nz\n::\n";
        let expected = Expected::of(recorded);
        for text in [
            recorded.replace("y\n", "Y\n"),
            recorded.replace("z\n", "Z\n"),
            recorded.replace("## B\n\n::claim{id=\"b\"}\ny\n::\n", ""),
            recorded.replace("x\n", "x\n::claim{id=\"n\"}\nq\n::\n"),
            format!("{recorded}\n"),
        ] {
            let a = Analysis::new(text.clone(), &noma_core::validate::Options::default());
            let now: HashMap<String, String> = noma_core::doc::hash::block_hashes(&a.text, &a.doc)
                .into_iter()
                .map(|b| (b.id, b.sha256))
                .collect();
            let listed = noma_core::doc::hash::block_hashes(recorded, &parse(recorded));
            let before: HashMap<String, String> = listed
                .iter()
                .map(|b| (b.id.clone(), b.sha256.clone()))
                .collect();
            let mut want: Vec<String> = a
                .definitions()
                .iter()
                .filter(|d| before.get(&d.id) != now.get(&d.id))
                .map(|d| d.id.clone())
                .collect();
            want.extend(
                listed
                    .iter()
                    .filter(|b| !now.contains_key(&b.id))
                    .map(|b| format!("{} removed", b.id)),
            );
            let got: Vec<String> = unrecorded(&a, &Blocks::of(&a), &expected)
                .into_iter()
                .filter_map(|d| {
                    let m = d.message.strip_prefix("block ")?;
                    let (id, rest) = m.split_once(' ')?;
                    Some(if rest.starts_with("was removed") {
                        format!("{id} removed")
                    } else {
                        id.to_string()
                    })
                })
                .collect();
            assert_eq!(got, want, "{text:?}");
        }
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

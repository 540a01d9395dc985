//! `noma record`: turn a hand edit into ops and append them to the
//! transcript as `actor.kind = "human"` records.
//!
//! The previous state is the transcript's last applied `post_sha256`. The
//! transcript stores ops, not texts, so that state is rebuilt: from HEAD's
//! committed document when its sha256 is one the transcript passes through
//! (the first `pre_sha256` or any applied `post_sha256`), else from the
//! first such version in the path's git history, then by re-applying the
//! remaining records (every intermediate hash checked).
//!
//! The edit is expressed first by rounds of v1.0 block ops (delete_block,
//! replace_block on the innermost changed directives, update_heading,
//! add_block), each round re-diffing the result against the file, so
//! coarser replacements happen only when finer ones do not suffice. What
//! no v1.0 op reaches (prose in a section, paragraphs, list items, tables
//! and cards outside addressable directives, frontmatter, layout) is then
//! recorded as line hunks with the extension op
//! [`noma_core::patch::REPLACE_LINES`], unless the policy's
//! `record_text_edits: false` forbids it; then those lines are named.
//!
//! **Genesis.** A transcript with no applied record starts with one
//! record from the empty document (`pre_sha256` = sha256 of no bytes) to
//! the document, one `x-noma/replace_lines` op: the transcript then
//! replays from its own content (§5.5) without any committed base, which
//! is what a new document under `require_transcript` needs. When the file
//! differs from its committed version, the genesis record reaches the
//! committed version and the edit since is recorded after it.
//!
//! Records are planned by the engine against the previous state and
//! appended under the transcript lock in one write; the document itself is
//! not rewritten (it already holds the result).

use noma_core::diag::shell_word;
use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde_json::{json, Value};

use crate::config::Policy;
use crate::git::repo::Repo;
use noma_core::doc::ast::{Document, Node, NodeKind};
use noma_core::doc::hash::sha256_hex;
use noma_core::doc::lines;
use noma_core::patch::REPLACE_LINES;
use noma_core::transcript::{self, Actor, PatchResult, Record};
use noma_store::engine::{self, Context, Options};
use noma_store::fsio;

/// What `record` did.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum Outcome {
    /// The file is already the transcript's last state.
    NothingToRecord,
    /// Records were appended.
    Recorded {
        /// The ops, in order.
        ops: Vec<Value>,
        /// The transcript written to.
        transcript: String,
        /// The records start the transcript from the empty document.
        genesis: bool,
    },
}

/// Why a hand edit could not be recorded.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The command cannot run (unreadable file, not a repository, I/O).
    #[error("{0}")]
    Usage(String),
    /// The edit or the transcript cannot be turned into records.
    #[error("{0}")]
    Check(String),
}

/// A hand edit that only text ops could record, under a policy with
/// `record_text_edits: false` ([`edit_ops`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "lines {first}-{last} of the file cannot be expressed as block ops (a change outside any directive with an id, e.g. prose in a section, or blank-line layout) ({config} has record_text_edits: false, so only v1.0 block ops may record it)",
    config = crate::config::CONFIG_PATH
)]
pub struct TextEditsOff {
    /// First changed line (1-based) of the edited file.
    pub first: usize,
    /// Last changed line (1-based) of the edited file.
    pub last: usize,
}

/// Records the hand edit of `doc_path`.
pub fn record_file(
    doc_path: &Path,
    actor: Actor,
    reason: Option<String>,
) -> Result<Outcome, RecordError> {
    record_file_with(doc_path, actor, reason, None)
}

/// [`record_file`], with a step run on the records before they are
/// appended (a signer's, see [`engine::Options::before_append`]).
pub fn record_file_with(
    doc_path: &Path,
    actor: Actor,
    reason: Option<String>,
    before_append: Option<&engine::BeforeAppend>,
) -> Result<Outcome, RecordError> {
    let usage = |e: String| RecordError::Usage(e);
    let text = noma_store::fsio::read_document(doc_path).map_err(|e| usage(e.to_string()))?;
    let tpath = engine::default_transcript_path(doc_path);
    let t_bytes = match fsio::read_regular(&tpath) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(usage(format!("{}: {e}", tpath.display()))),
    };
    if let Some(join) = crate::merge::unjoin::find_join(&t_bytes) {
        let advice = crate::merge::unjoin::advice(&doc_path.to_string_lossy(), join);
        return Err(RecordError::Check(format!("{}: {advice}", tpath.display())));
    }
    let parsed = transcript::parse_transcript(&t_bytes)
        .map_err(|e| RecordError::Check(format!("{}: {e}", tpath.display())))?;
    if parsed.torn_tail.is_some() {
        return Err(RecordError::Check(format!(
            "{}: the last line is torn; run `noma repair {}` first",
            tpath.display(),
            shell_word(&doc_path.to_string_lossy())
        )));
    }
    let applied: Vec<&Record> = parsed
        .entries
        .iter()
        .map(|e| &e.record)
        .filter(|r| r.patch_result == PatchResult::Applied)
        .collect();
    let doc_sha = sha256_hex(text.as_bytes());
    if applied.last().is_some_and(|r| r.post_sha256 == doc_sha) {
        return Ok(Outcome::NothingToRecord);
    }
    let place = Place::discover(doc_path)?;
    let policy = Policy::load(&place.root).map_err(|e| usage(e.to_string()))?;
    let text_edits = policy.file.record_text_edits;
    // No applied record: start the transcript with a genesis record, to
    // the committed version first when the file has changed since. A
    // policy without text edits starts from the committed version instead
    // (found again in history by replay and the hooks).
    let head = if applied.is_empty() {
        place.head_text()?
    } else {
        None
    };
    let (prev, genesis) = match (applied.is_empty(), text_edits, head) {
        (false, ..) => (place.previous_state(&applied)?, None),
        (true, true, head) => (
            String::new(),
            Some(head.filter(|h| *h != text).unwrap_or_else(|| text.clone())),
        ),
        (true, false, Some(head)) if head != text => (head, None),
        (true, false, _) => {
            return Err(RecordError::Check(format!(
                "starting a transcript with a genesis record needs {REPLACE_LINES}, which {} forbids (record_text_edits: false); an empty transcript is a valid start instead: touch \"{}\"",
                crate::config::CONFIG_PATH,
                tpath.display()
            )))
        }
    };
    if prev == text {
        return Ok(Outcome::NothingToRecord);
    }
    let from = genesis.as_deref().unwrap_or(&prev);
    if noma_core::doc::lines::is_crlf_conversion(from.as_bytes(), text.as_bytes()) {
        // Recording it would commit every line anew, with CRLF.
        return Err(RecordError::Check(format!(
            "{}: differs from {} only by CRLF line endings: git converted it at checkout (core.autocrlf) before the `-text` rules kept documents byte-exact; `noma hooks install` restores the committed bytes (nothing was recorded)",
            doc_path.display(),
            if genesis.is_some() { "its committed version" } else { "the state its transcript ends at" },
        )));
    }
    let mut ops = Vec::new();
    let mut from = prev.as_str();
    if let Some(start) = &genesis {
        ops.push(noma_core::patch::genesis_op(start));
        from = start;
    }
    ops.extend(edit_ops(from, &text, text_edits).map_err(|e| RecordError::Check(e.to_string()))?);
    let genesis = genesis.is_some();

    let mut opts = Options::new(actor);
    opts.reason = reason.or_else(|| genesis.then(|| "start of the transcript".to_string()));
    let ctx = Context {
        doc_uri: noma_store::uri::portable_doc_uri(Some(&place.root), doc_path),
        ..Context::default()
    };
    let mut locked = lock_unchanged(doc_path, &tpath, &t_bytes, &text)?;
    let mut plan = engine::plan(&prev, &ctx, &ops, &opts);
    check_plan(&plan, &text)?;
    before(before_append, doc_path, &plan.records)?;
    let last_line = parsed.entries.last().map(|e| e.line_sha256.clone());
    let bytes = engine::chain_and_serialise(&mut plan.records, last_line);
    // The document already holds the edit: the request changes no bytes
    // of it, so the marker's pre- and post-state are the same.
    engine::commit_request(&mut locked, &bytes, &doc_sha, &doc_sha, None)
        .map_err(|e| usage(format!("{}: cannot append: {e}", tpath.display())))?;
    Ok(Outcome::Recorded {
        ops,
        transcript: tpath.display().to_string(),
        genesis,
    })
}

/// The planned records must reproduce the file and bring in no error.
fn check_plan(plan: &engine::Plan, text: &str) -> Result<(), RecordError> {
    if !plan.accepted || plan.new_text != text {
        return Err(RecordError::Check(
            "the engine did not reproduce the file with the computed ops; nothing was recorded"
                .into(),
        ));
    }
    if let Some(why) = introduced_errors(&plan.records) {
        // Hooks do not run during a rebase, so this is the last guard
        // before, say, an unresolved `::conflict` block enters history as
        // an edit.
        return Err(RecordError::Check(format!(
            "the edit introduces {why}; fix the document and record again (nothing was recorded)"
        )));
    }
    Ok(())
}

/// Whether a patch of `doc_path` should open its transcript `tpath` with a
/// genesis record ([`engine::Options::genesis`]): the transcript has no
/// line yet, the document is in a git work tree whose HEAD does not hold
/// its bytes at its path (a new or copied document, or one edited since
/// it was committed), and the policy allows the extension op. A
/// transcript that starts at a committed document needs no genesis: its
/// first state is found in history by content.
pub fn first_patch_needs_genesis(doc_path: &Path, tpath: &Path) -> bool {
    if std::fs::metadata(tpath).is_ok_and(|m| m.len() > 0) {
        return false;
    }
    let Ok(place) = Place::discover(doc_path) else {
        return false;
    };
    if !Policy::load(&place.root).is_ok_and(|p| p.file.record_text_edits) {
        return false;
    }
    let Ok(bytes) = fsio::read_regular(doc_path) else {
        return false;
    };
    match place.repo.head_blob(&place.rel) {
        Ok(Some(committed)) => committed != bytes,
        Ok(None) => true,
        Err(_) => false,
    }
}

/// Runs the caller's step on the records before they are appended.
fn before(
    step: Option<&engine::BeforeAppend>,
    doc_path: &Path,
    records: &[Record],
) -> Result<(), RecordError> {
    match step {
        Some(engine::BeforeAppend(step)) => step(doc_path, records)
            .map_err(|e| RecordError::Usage(format!("{}: cannot sign: {e}", doc_path.display()))),
        None => Ok(()),
    }
}

/// Locks the transcript for the append and checks, under the lock, that
/// neither file changed since they were read (nobody patched meanwhile)
/// and no interrupted write is pending.
fn lock_unchanged(
    doc_path: &Path,
    tpath: &Path,
    t_bytes: &[u8],
    text: &str,
) -> Result<fsio::LockedTranscript, RecordError> {
    let usage = |e: String| RecordError::Usage(e);
    let mut locked = fsio::LockedTranscript::open(tpath)
        .map_err(|e| usage(format!("{}: cannot open: {e}", tpath.display())))?;
    if fsio::Intent::read(tpath)
        .map_err(|e| usage(e.to_string()))?
        .is_some()
    {
        return Err(RecordError::Check(format!(
            "an interrupted write of {} is pending; run `noma repair {}` first",
            tpath.display(),
            shell_word(&doc_path.to_string_lossy())
        )));
    }
    let now = locked
        .read_all()
        .map_err(|e| usage(format!("{}: {e}", tpath.display())))?;
    let again = noma_store::fsio::read_document(doc_path).map_err(|e| usage(e.to_string()))?;
    if now != t_bytes || again != text {
        return Err(RecordError::Check(
            "the document or its transcript changed while recording; run noma record again".into(),
        ));
    }
    Ok(locked)
}

/// The validation errors the records say their ops introduced, as one
/// line (`None` when there are none).
fn introduced_errors(records: &[Record]) -> Option<String> {
    let errors: Vec<String> = records
        .iter()
        .flat_map(|r| r.diagnostics.iter().flatten())
        .filter(|d| {
            d.phase == Some(noma_core::diag::Phase::Post)
                && d.severity == noma_core::diag::Severity::Error
                && d.code != engine::UNCHANGED_DIAGNOSTICS
        })
        .map(|d| match d.pos {
            Some(p) => format!("[{}] line {}: {}", d.code, p.line, d.message),
            None => format!("[{}] {}", d.code, d.message),
        })
        .collect();
    let first = errors.first()?;
    Some(format!(
        "{} validation error(s), first {first}",
        errors.len()
    ))
}

/// Where the document lives in its repository.
struct Place {
    repo: Repo,
    /// The work tree's root (canonical).
    root: std::path::PathBuf,
    /// The document's path relative to `root`, with `/` separators.
    rel: String,
}

impl Place {
    fn discover(doc_path: &Path) -> Result<Place, RecordError> {
        let usage = |e: String| RecordError::Usage(format!("{}: {e}", doc_path.display()));
        let abs = std::fs::canonicalize(doc_path).map_err(|e| usage(e.to_string()))?;
        let repo = Repo::discover(abs.parent().unwrap_or(Path::new("/")))
            .map_err(|e| usage(e.to_string()))?;
        let root = repo
            .workdir()
            .and_then(|w| std::fs::canonicalize(w).ok())
            .ok_or_else(|| usage("bare repository: no working tree".into()))?;
        let rel = abs
            .strip_prefix(&root)
            .map_err(|_| usage("outside the repository".into()))?;
        let parts: Option<Vec<&str>> = rel.components().map(|c| c.as_os_str().to_str()).collect();
        let rel = parts
            .map(|p| p.join("/"))
            .ok_or_else(|| usage("path is not valid UTF-8".into()))?;
        Ok(Place { repo, root, rel })
    }

    /// The document as committed at HEAD, if it is and is text.
    fn head_text(&self) -> Result<Option<String>, RecordError> {
        Ok(self
            .repo
            .head_blob(&self.rel)
            .map_err(|e| RecordError::Usage(e.to_string()))?
            .and_then(|b| String::from_utf8(b).ok()))
    }

    /// Rebuilds the text at the transcript's last applied state.
    fn previous_state(&self, applied: &[&Record]) -> Result<String, RecordError> {
        let (repo, rel) = (&self.repo, &self.rel);
        let head = self.head_text()?;
        let Some(first) = applied.first() else {
            return Err(RecordError::Check(format!(
                "{rel}: the transcript has no applied record"
            )));
        };
        // sha256 -> index of the next record to re-apply from that state.
        let mut resume: HashMap<&str, usize> = HashMap::new();
        resume.insert(first.pre_sha256.as_str(), 0);
        for (i, r) in applied.iter().enumerate() {
            resume.insert(r.post_sha256.as_str(), i + 1);
        }
        // A genesis record starts from the empty document: no lookup.
        let mut start = if first.pre_sha256 == noma_core::doc::hash::EMPTY_SHA256 {
            Some(String::new())
        } else {
            head.filter(|h| resume.contains_key(sha256_hex(h.as_bytes()).as_str()))
        };
        if start.is_none() {
            // By content, from every commit a merge, rebase or ref names:
            // the state may be under the document's old name (a rename)
            // or on the branch being merged.
            let starts = repo.history_starts();
            start = repo
                .find_version(
                    &starts,
                    &[rel.as_str()],
                    ".noma",
                    crate::git::HISTORY_LIMIT,
                    |b| {
                        std::str::from_utf8(b).is_ok()
                            && resume.contains_key(sha256_hex(b).as_str())
                    },
                )
                .map_err(|e| RecordError::Usage(e.to_string()))?
                .and_then(|b| String::from_utf8(b).ok());
        }
        let Some(mut text) = start else {
            return Err(RecordError::Check(format!(
                "{rel}: cannot rebuild the transcript's last state: no committed version of the document has sha256 {} (the first applied record's pre_sha256) or any later recorded state",
                first.pre_sha256
            )));
        };
        let from = resume
            .get(sha256_hex(text.as_bytes()).as_str())
            .copied()
            .unwrap_or(0);
        for r in applied.iter().skip(from) {
            let next = noma_core::patch::apply_one(&text, &r.op).map_err(|e| {
                RecordError::Check(format!(
                    "re-applying record {} failed: {} ({})",
                    r.op_id,
                    e.code.as_str(),
                    e.message
                ))
            })?;
            if sha256_hex(next.as_bytes()) != r.post_sha256 {
                return Err(RecordError::Check(format!(
                    "re-applying record {} does not reproduce its post_sha256; run noma replay",
                    r.op_id
                )));
            }
            text = next;
        }
        Ok(text)
    }
}

/// An addressable node as the differ sees it.
struct Block {
    directive: bool,
    section_title: Option<String>,
    parent: Option<String>,
    /// Position among the parent's children.
    index: usize,
    text: String,
    heading: String,
}

fn blocks_of(src: &str, doc: &Document) -> (Vec<String>, HashMap<String, Block>) {
    let all = lines::split(src.strip_prefix('\u{feff}').unwrap_or(src));
    let mut order = Vec::new();
    let mut map = HashMap::new();
    // Explicit stack: documents can nest deeply.
    let mut stack: Vec<(Option<&str>, &[Node], usize)> = vec![(None, &doc.children, 0)];
    while let Some((parent, kids, i)) = stack.pop() {
        let Some(node) = kids.get(i) else { continue };
        stack.push((parent, kids, i + 1));
        if let Some(id) = &node.id {
            let (s, e) = (node.span.start, node.span.end);
            map.insert(
                id.to_string(),
                Block {
                    directive: matches!(node.kind, NodeKind::Directive { .. }),
                    section_title: match &node.kind {
                        NodeKind::Section { title, .. } => Some(title.to_string()),
                        _ => None,
                    },
                    parent: parent.map(str::to_string),
                    index: i,
                    text: lines::slice_joined(&all, s, e),
                    heading: lines::slice_joined(&all, s, s),
                },
            );
            order.push(id.to_string());
        }
        if !node.children().is_empty() {
            stack.push((node.id.as_deref().or(parent), node.children(), 0));
        }
    }
    (order, map)
}

/// Ops that turn `old` into exactly `new`: v1.0 block ops first, then
/// (when `text_edits`) `x-noma/replace_lines` hunks for the rest; without
/// `text_edits`, an explanation of which lines no block op reaches.
pub fn edit_ops(old: &str, new: &str, text_edits: bool) -> Result<Vec<Value>, TextEditsOff> {
    let (mut ops, cur) = block_ops(old, new);
    if cur == new {
        return Ok(ops);
    }
    if !text_edits {
        return Err(unexpressible(&cur, new));
    }
    ops.extend(line_hunks(&cur, new));
    Ok(ops)
}

/// The `x-noma/replace_lines` ops, top to bottom, that turn `cur` into
/// `new`: one per run of changed lines of a line diff. Each op's `line`
/// counts in the text the previous ops left, so they apply in order.
fn line_hunks(cur: &str, new: &str) -> Vec<Value> {
    let a: Vec<&str> = cur.split_inclusive('\n').collect();
    let b: Vec<&str> = new.split_inclusive('\n').collect();
    let mut ops = Vec::new();
    let mut push = |mut old: std::ops::Range<usize>, mut newr: std::ops::Range<usize>| {
        // A pure insertion takes one unchanged neighbour line along, so
        // its `old` is text a merge can find again (`patch::relocate`).
        if old.is_empty() && old.start > 0 {
            (old.start, newr.start) = (old.start - 1, newr.start - 1);
        } else if old.is_empty() && old.end < a.len() {
            (old.end, newr.end) = (old.end + 1, newr.end + 1);
        }
        ops.push(json!({
            "op": REPLACE_LINES,
            "line": newr.start + 1,
            "old": a[old].concat(),
            "new": b[newr].concat(),
        }));
    };
    // Positions are counted from the ops' lengths: a Delete's `new_index`
    // is not always the position in `new` (similar 2.7, Myers).
    let (mut oi, mut ni) = (0, 0);
    let mut hunk: Option<(std::ops::Range<usize>, std::ops::Range<usize>)> = None;
    for op in similar::capture_diff_slices(similar::Algorithm::Myers, &a, &b) {
        let (ol, nl) = (op.old_range().len(), op.new_range().len());
        let (o, n) = (oi..oi + ol, ni..ni + nl);
        (oi, ni) = (o.end, n.end);
        if let similar::DiffOp::Equal { .. } = op {
            if let Some((o, n)) = hunk.take() {
                push(o, n);
            }
            continue;
        }
        hunk = Some(match hunk.take() {
            Some((ho, hn)) => (ho.start..o.end, hn.start..n.end),
            None => (o, n),
        });
    }
    if let Some((o, n)) = hunk {
        push(o, n);
    }
    ops
}

/// Rounds of v1.0 block ops from `old` towards `new`: the ops and the
/// text they reach (equal to `new` when block ops suffice).
fn block_ops(old: &str, new: &str) -> (Vec<Value>, String) {
    let mut cur = old.to_string();
    let mut ops: Vec<Value> = Vec::new();
    let (new_order, nb) = blocks_of(new, &noma_core::doc::parse(new));
    for _round in 0..32 {
        if cur == new {
            break;
        }
        let (cur_order, cb) = blocks_of(&cur, &noma_core::doc::parse(&cur));
        let differs = |id: &str| match (cb.get(id), nb.get(id)) {
            (Some(a), Some(b)) => a.text != b.text,
            _ => true,
        };
        let mut round: Vec<Value> = Vec::new();
        // Removed directives (outermost only: deleting the parent takes the children).
        for id in &cur_order {
            let Some(b) = cb.get(id) else { continue };
            let parent_gone = b.parent.as_ref().is_some_and(|p| !nb.contains_key(p));
            if !nb.contains_key(id) && b.directive && !parent_gone {
                round.push(json!({"op": "delete_block", "id": id}));
            }
        }
        // Changed headings and innermost changed directives.
        let changed: HashSet<&str> = cur_order
            .iter()
            .filter(|id| nb.contains_key(id.as_str()) && differs(id))
            .map(String::as_str)
            .collect();
        let has_changed_descendant = |id: &str| {
            nb.iter().any(|(k, b)| {
                let mut p = b.parent.as_deref();
                let mut depth = 0;
                while let Some(pp) = p {
                    if pp == id {
                        return changed.contains(k.as_str()) || !cb.contains_key(k);
                    }
                    depth += 1;
                    if depth > 256 {
                        break;
                    }
                    p = nb.get(pp).and_then(|b| b.parent.as_deref());
                }
                false
            }) || cb
                .iter()
                .any(|(k, b)| b.parent.as_deref() == Some(id) && !nb.contains_key(k))
        };
        for id in &cur_order {
            if !changed.contains(id.as_str()) {
                continue;
            }
            let (Some(c), Some(n)) = (cb.get(id), nb.get(id)) else {
                continue;
            };
            if let (Some(_), Some(title)) = (&c.section_title, &n.section_title) {
                if c.heading != n.heading {
                    round.push(json!({"op": "update_heading", "id": id, "title": title}));
                }
            } else if c.directive && n.directive && !has_changed_descendant(id) {
                round.push(json!({"op": "replace_block", "id": id, "content": n.text}));
            }
        }
        // Added directives whose parent exists, in document order.
        for id in &new_order {
            let Some(n) = nb.get(id) else { continue };
            if cb.contains_key(id) || !n.directive {
                continue;
            }
            if let Some(p) = &n.parent {
                if cb.contains_key(p) {
                    round.push(json!({"op": "add_block", "parent": p, "position": n.index, "content": n.text}));
                }
            }
        }
        // Coarsen when nothing fine-grained is left: replace outermost changed directives.
        if round.is_empty() {
            for id in &cur_order {
                let (Some(c), Some(n)) = (cb.get(id), nb.get(id)) else {
                    continue;
                };
                let parent_changed = c
                    .parent
                    .as_deref()
                    .is_some_and(|p| changed.contains(p) && cb.get(p).is_some_and(|b| b.directive));
                if changed.contains(id.as_str()) && c.directive && n.directive && !parent_changed {
                    round.push(json!({"op": "replace_block", "id": id, "content": n.text}));
                }
            }
        }
        if round.is_empty() {
            break;
        }
        let before = cur.clone();
        for op in round {
            // An op the engine refuses is left to the line hunks.
            let Ok(next) = noma_core::patch::apply_one(&cur, &op) else {
                return (ops, cur);
            };
            cur = next;
            ops.push(op);
        }
        if cur == before {
            break;
        }
    }
    (ops, cur)
}

/// Names the line range where `got` (best effort) and `want` still differ.
fn unexpressible(got: &str, want: &str) -> TextEditsOff {
    let a: Vec<&str> = got.split('\n').collect();
    let b: Vec<&str> = want.split('\n').collect();
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let suffix = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take_while(|(x, y)| x == y)
        .count()
        .min(a.len().min(b.len()) - prefix);
    let first = prefix + 1;
    let last = b.len().saturating_sub(suffix).max(first);
    TextEditsOff { first, last }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(old: &str, new: &str) -> Vec<Value> {
        let ops = edit_ops(old, new, true).unwrap();
        assert_eq!(noma_core::patch::apply_ops(old, &ops).unwrap(), new);
        ops
    }

    const BASE: &str = "# Plan\n\n::note{id=\"a\"}\nalpha\n::\n\n::note{id=\"b\"}\nbeta\n::\n";

    #[test]
    fn replace_delete_add_and_heading() {
        let ops = roundtrip(BASE, &BASE.replace("alpha", "ALPHA"));
        assert_eq!(ops.len(), 1);
        assert_eq!(ops[0]["op"], "replace_block");
        let ops = roundtrip(BASE, "# Plan\n\n::note{id=\"a\"}\nalpha\n::\n");
        assert_eq!(ops[0]["op"], "delete_block");
        let ops = roundtrip(BASE, &format!("{BASE}\n::note{{id=\"c\"}}\ngamma\n::\n"));
        assert_eq!(ops[0]["op"], "add_block");
    }

    #[test]
    fn prose_outside_directives_is_refused_with_lines_when_text_edits_are_off() {
        let old = "# Plan\n\nsome prose\n";
        let err = edit_ops(old, "# Plan\n\nother prose\n", false).unwrap_err();
        assert_eq!((err.first, err.last), (3, 3));
        let err = err.to_string();
        assert!(err.contains("lines 3-3"), "{err}");
        assert!(err.contains("record_text_edits: false"), "{err}");
    }

    #[test]
    fn hand_edits_outside_blocks_become_line_hunks_after_block_ops() {
        let old =
            "---\ntitle: A\n---\n# Plan\n\nsome prose\n\n- one\n\n::note{id=\"a\"}\nalpha\n::\n";
        let new = "---\ntitle: B\n---\n# Plan\n\nother prose\n\nA new paragraph.\n\n- one\n- two\n\n::note{id=\"a\"}\nALPHA\n::\n";
        let ops = roundtrip(old, new);
        let names: Vec<&str> = ops.iter().filter_map(|o| o["op"].as_str()).collect();
        assert_eq!(names[0], "replace_block", "{ops:?}");
        assert!(names[1..].iter().all(|n| *n == REPLACE_LINES), "{ops:?}");
        // One hunk per run of changed lines, each carrying the old text.
        assert_eq!(ops[1]["old"], "title: A\n");
        assert_eq!(ops[1]["line"], 2);
        assert!(ops.len() >= 4, "{ops:?}");
    }

    #[test]
    fn line_hunks_apply_in_order_for_random_edits() {
        use proptest::prelude::*;
        let line = prop_oneof![
            Just("a\n"),
            Just("b\n"),
            Just("\n"),
            Just("c\r\n"),
            Just("d")
        ];
        let text = proptest::collection::vec(line, 0..12).prop_map(|v| v.concat());
        proptest!(|(old in text.clone(), new in text)| {
            let ops = line_hunks(&old, &new);
            prop_assert_eq!(noma_core::patch::apply_ops(&old, &ops).unwrap(), new);
            // Every hunk of a non-empty text carries `old` lines a merge
            // can find again (an insertion takes a neighbour along).
            prop_assert!(old.is_empty() || ops.iter().all(|o| o["old"] != ""), "{:?}", ops);
        });
    }
}

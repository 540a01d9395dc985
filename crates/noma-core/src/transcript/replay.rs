//! Replay (§5.5): re-apply every applied record's op from a base and check
//! that the transcript, its hash chain and the document on disk agree.
//!
//! Checks, in file order: no torn final line; each line is a valid v1.0
//! record; the chain rules of [`Chain`] (first line unchained, a later
//! line's chain, where present, names the line before, unique `op_id`s);
//! every record's
//! `pre_sha256` is the current replay state (the base's, when `--base` is
//! given; the empty document's for a genesis record; otherwise the first
//! record's, which must then be the document itself); an applied record changes the
//! document and re-applying its op yields its `post_sha256`; a rejected
//! record's op, re-applied to the state it was tried on, is refused again
//! with its recorded code (or, rolled back with its list, applies);
//! finally the
//! state the records leave is the document on disk. The first failure
//! stops the replay and is named by line and op_id. Replay reads; it never
//! changes a file.

use serde::Serialize;

use super::{parse_record, short_sha, PatchResult, Record};
use crate::doc::hash::{block_hashes, sha256_hex, BlockHash, EMPTY_SHA256};
use crate::doc::ParseMemo;

mod via;
use via::WalkChecks;
pub use via::{replay_reader_via, replay_reader_via_trees, Finder, Trees, Waypoint};

/// Where the replay started from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BaseSource {
    /// `--base PATH`.
    Given,
    /// The document itself (its sha equals the first applied record's pre_sha256).
    Document,
    /// No applied records: nothing to replay.
    NotNeeded,
    /// The empty document: the first applied record is a genesis record
    /// (`pre_sha256` is sha256 of no bytes, see `noma record`).
    Genesis,
}

/// A block whose source hash differs between expected and actual text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BlockDiff {
    /// Canonical id.
    pub id: String,
    /// `changed`, `missing` (only in expected) or `extra` (only in actual).
    pub change: &'static str,
    /// Block sha256 in the expected text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_sha256: Option<String>,
    /// Block sha256 in the actual text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actual_sha256: Option<String>,
}

/// The first place replay and transcript disagree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Divergence {
    /// 1-based transcript line (0 when the problem is not one line).
    pub line: usize,
    /// op_id of the record, when a record is involved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub op_id: Option<String>,
    /// What disagrees.
    pub message: String,
    /// The sha256 the transcript promises, when one applies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_sha256: Option<String>,
    /// The sha256 replay observed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actual_sha256: Option<String>,
    /// Blocks whose hashes differ (when both texts are known).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub blocks: Vec<BlockDiff>,
}

impl Divergence {
    /// Whether the records replay but leave other bytes than the
    /// document's: an edit made after the last record, which `noma record`
    /// turns into records (every other divergence names its record).
    pub fn is_unrecorded_edit(&self) -> bool {
        self.op_id.is_none() && self.expected_sha256.is_some()
    }
}

/// The result of a replay.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Everything verified.
    pub ok: bool,
    /// Records read.
    pub records: usize,
    /// Applied records re-applied.
    pub applied: usize,
    /// Rejected records (audit only).
    pub rejected: usize,
    /// Noop records (audit only).
    pub noop: usize,
    /// Where replay started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base: Option<BaseSource>,
    /// sha256 of the replayed final state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub final_sha256: Option<String>,
    /// The first disagreement, when `ok` is false.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub divergence: Option<Divergence>,
    /// Wall time in milliseconds.
    pub elapsed_ms: f64,
}

impl Report {
    /// Before the first record.
    fn nothing_yet() -> Report {
        Report {
            ok: false,
            records: 0,
            applied: 0,
            rejected: 0,
            noop: 0,
            base: None,
            final_sha256: None,
            divergence: None,
            elapsed_ms: 0.0,
        }
    }
}

/// Compares the block hashes of two texts by id.
pub fn diff_blocks(expected: &str, actual: &str) -> Vec<BlockDiff> {
    let e = block_hashes(expected, &crate::doc::parse(expected));
    let a = block_hashes(actual, &crate::doc::parse(actual));
    diff_hashes(&e, &a)
}

/// [`diff_blocks`] of two texts' block tables ([`block_hashes`]), for a
/// caller that has them already: the expected text's blocks in its order
/// (`changed` or `missing`), then the actual text's new ones (`extra`).
pub fn diff_hashes(e: &[BlockHash], a: &[BlockHash]) -> Vec<BlockDiff> {
    let amap: std::collections::HashMap<&str, &str> = a
        .iter()
        .map(|b| (b.id.as_str(), b.sha256.as_str()))
        .collect();
    let emap: std::collections::HashMap<&str, &str> = e
        .iter()
        .map(|b| (b.id.as_str(), b.sha256.as_str()))
        .collect();
    let mut out = Vec::new();
    for b in e {
        match amap.get(b.id.as_str()) {
            Some(sha) if *sha == b.sha256 => {}
            Some(sha) => out.push(BlockDiff {
                id: b.id.clone(),
                change: "changed",
                expected_sha256: Some(b.sha256.clone()),
                actual_sha256: Some((*sha).to_string()),
            }),
            None => out.push(BlockDiff {
                id: b.id.clone(),
                change: "missing",
                expected_sha256: Some(b.sha256.clone()),
                actual_sha256: None,
            }),
        }
    }
    for b in a {
        if !emap.contains_key(b.id.as_str()) {
            out.push(BlockDiff {
                id: b.id.clone(),
                change: "extra",
                expected_sha256: None,
                actual_sha256: Some(b.sha256.clone()),
            });
        }
    }
    out
}

/// Replays `transcript` (raw bytes) from `base` (or from `document` when its
/// sha is the first applied record's pre_sha256) and checks the result
/// against `document`, the text on disk.
pub fn replay(transcript: &[u8], base: Option<&str>, document: &str) -> Report {
    replay_after(None, transcript, base, document)
}

/// The `pre_sha256` of the first applied record of `transcript`: the state
/// replay starts from. None when no record up to the first applied one
/// can be read (replay reports that line) or none is applied.
pub fn first_applied_pre_sha256(transcript: &[u8]) -> Option<String> {
    first_pre(&mut SliceLines::new(transcript))
}

/// [`first_applied_pre_sha256`] of a transcript read from `reader`, up to
/// its first applied record only.
pub fn first_applied_pre_sha256_in(reader: &mut dyn Rewind) -> Option<String> {
    let start = reader.stream_position().ok()?;
    first_pre(&mut ReaderLines { reader, start })
}

fn first_pre(lines: &mut dyn Lines) -> Option<String> {
    let mut raw = Vec::new();
    let mut number = 0;
    loop {
        match lines.next_line(&mut raw).ok()? {
            Next::Line => number += 1,
            Next::Torn(_) | Next::End => return None,
        }
        let rec = parse_record(number, &raw).ok()?;
        if rec.patch_result == PatchResult::Applied {
            return Some(rec.pre_sha256);
        }
    }
}

/// Where a replayed slice of a transcript starts in its file: what the
/// hooks replay is the part a commit appends to the committed transcript.
#[derive(Debug, Clone, Copy, Default)]
pub struct Continuation<'a> {
    /// sha256 of the raw line before the slice (the chain's anchor).
    pub prev_line_sha256: &'a str,
    /// Number of lines before the slice.
    pub lines_before: usize,
}

/// [`replay`] of the lines a transcript gained after its first
/// `after.lines_before` lines (`None`: the whole file). The slice's first
/// record must chain onto `after.prev_line_sha256`, and line numbers in
/// the report are the file's.
pub fn replay_after(
    after: Option<Continuation<'_>>,
    transcript: &[u8],
    base: Option<&str>,
    document: &str,
) -> Report {
    replay_lines(after, &mut SliceLines::new(transcript), base, document)
}

/// [`replay`] of a transcript read a line at a time from `reader`: memory
/// follows the longest record and the document, not the transcript's
/// length (a million records). A read error ends the replay as
/// a divergence on the line it struck.
pub fn replay_reader(reader: &mut dyn Rewind, base: Option<&str>, document: &str) -> Report {
    // A source that cannot say where it is cannot be re-read for the
    // exact op_id check: report it on the first line.
    let start = match reader.stream_position() {
        Ok(s) => s,
        Err(e) => {
            let mut r = replay_lines(None, &mut SliceLines::new(&[]), base, document);
            r.ok = false;
            r.divergence = Some(*div(1, None, format!("cannot read the transcript: {e}")));
            return r;
        }
    };
    replay_lines(None, &mut ReaderLines { reader, start }, base, document)
}

/// [`replay_reader`] with op_ids fingerprinted by `fingerprint` (tests
/// force collisions with a tiny one).
#[cfg(any(test, feature = "testing"))]
pub fn replay_reader_fingerprinted(
    reader: &mut dyn Rewind,
    (base, document): (Option<&str>, &str),
    fingerprint: fn(&str) -> u64,
) -> Report {
    let start = reader
        .stream_position()
        .expect("a cursor knows its position");
    let mut lines = ReaderLines { reader, start };
    replay_lines_with(None, &mut lines, (base, document), fingerprint)
}

/// [`replay_after`] with op_ids fingerprinted by `fingerprint`.
#[cfg(any(test, feature = "testing"))]
pub fn replay_after_fingerprinted(
    after: Option<Continuation<'_>>,
    transcript: &[u8],
    (base, document): (Option<&str>, &str),
    fingerprint: fn(&str) -> u64,
) -> Report {
    let mut lines = SliceLines::new(transcript);
    replay_lines_with(after, &mut lines, (base, document), fingerprint)
}

fn replay_lines(
    after: Option<Continuation<'_>>,
    lines: &mut dyn Lines,
    base: Option<&str>,
    document: &str,
) -> Report {
    replay_lines_with(after, lines, (base, document), op_id_fingerprint)
}

fn replay_lines_with(
    after: Option<Continuation<'_>>,
    lines: &mut dyn Lines,
    texts: (Option<&str>, &str),
    fingerprint: fn(&str) -> u64,
) -> Report {
    // Timing reads the system clock, which a build without `std-clock`
    // (a web build) has none of: there `elapsed_ms` stays 0.
    #[cfg(feature = "std-clock")]
    let started = std::time::Instant::now();
    let mut report = Report::nothing_yet();
    let result = run(after, lines, texts, fingerprint, &mut report);
    report.ok = result.is_ok();
    report.divergence = result.err().map(|d| *d);
    #[cfg(feature = "std-clock")]
    {
        report.elapsed_ms = (started.elapsed().as_secs_f64() * 1e6).round() / 1e3;
    }
    report
}

/// What the next read of a transcript found.
enum Next {
    /// A complete line, `\n` included, in the buffer.
    Line,
    /// Bytes after the last `\n` (an interrupted append): not a record.
    Torn(usize),
    /// The end of the transcript.
    End,
}

/// Where replay reads a transcript's lines from, one at a time.
trait Lines {
    /// Puts the next line into `buf` (cleared first).
    fn next_line(&mut self, buf: &mut Vec<u8>) -> std::io::Result<Next>;

    /// The 0-based index, among the first `count` lines of the source,
    /// of the first one whose record has `op_id`; the next
    /// [`Lines::next_line`] goes on where it was.
    fn find_op_id(&mut self, op_id: &str, count: usize) -> std::io::Result<Option<usize>>;
}

/// Lines of bytes already in memory: the whole slice and what is left.
struct SliceLines<'a>(&'a [u8], &'a [u8]);

impl<'a> SliceLines<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        SliceLines(bytes, bytes)
    }
}

impl Lines for SliceLines<'_> {
    fn next_line(&mut self, buf: &mut Vec<u8>) -> std::io::Result<Next> {
        buf.clear();
        if self.1.is_empty() {
            return Ok(Next::End);
        }
        let Some(nl) = memchr::memchr(b'\n', self.1) else {
            let torn = self.1.len();
            self.1 = &[];
            return Ok(Next::Torn(torn));
        };
        buf.extend_from_slice(&self.1[..=nl]);
        self.1 = &self.1[nl + 1..];
        Ok(Next::Line)
    }

    fn find_op_id(&mut self, op_id: &str, count: usize) -> std::io::Result<Option<usize>> {
        Ok(self
            .0
            .split_inclusive(|b| *b == b'\n')
            .take(count)
            .position(|raw| record_op_id(raw).as_deref() == Some(op_id)))
    }
}

/// A transcript source that can be read again from where replay started
/// (the exact check behind a fingerprint hit, [`Chain`]).
pub trait Rewind: std::io::BufRead + std::io::Seek {}

impl<T: std::io::BufRead + std::io::Seek> Rewind for T {}

/// Lines read from a file as replay goes.
struct ReaderLines<'r> {
    reader: &'r mut dyn Rewind,
    /// Where the replayed lines start in the file.
    start: u64,
}

impl Lines for ReaderLines<'_> {
    fn next_line(&mut self, buf: &mut Vec<u8>) -> std::io::Result<Next> {
        buf.clear();
        self.reader.read_until(b'\n', buf)?;
        Ok(match buf.last() {
            None => Next::End,
            Some(b'\n') => Next::Line,
            Some(_) => Next::Torn(buf.len()),
        })
    }

    fn find_op_id(&mut self, op_id: &str, count: usize) -> std::io::Result<Option<usize>> {
        use std::io::SeekFrom;
        let resume = self.reader.stream_position()?;
        self.reader.seek(SeekFrom::Start(self.start))?;
        let mut buf = Vec::new();
        let mut found = None;
        for index in 0..count {
            buf.clear();
            if self.reader.read_until(b'\n', &mut buf)? == 0 {
                break;
            }
            if record_op_id(&buf).as_deref() == Some(op_id) {
                found = Some(index);
                break;
            }
        }
        self.reader.seek(SeekFrom::Start(resume))?;
        Ok(found)
    }
}

/// The op_id of a raw transcript line (None when it has none).
fn record_op_id(raw: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct OpId {
        op_id: String,
    }
    serde_json::from_slice::<OpId>(raw).ok().map(|r| r.op_id)
}

/// The document the records of `transcript` leave, replayed from
/// `base` (or from their genesis record): the text the next record
/// starts from. `Ok(None)` when no applied record and no base fix a
/// text; `Err` where the records do not replay.
pub fn state_after(
    transcript: &[u8],
    base: Option<&str>,
) -> Result<Option<String>, Box<Divergence>> {
    let mut report = Report::nothing_yet();
    let (state, _) = walk(
        None,
        &mut SliceLines::new(transcript),
        (base, ""),
        (None, op_id_fingerprint, None),
        None,
        &mut report,
    )?;
    Ok(state.text)
}

fn run(
    after: Option<Continuation<'_>>,
    lines: &mut dyn Lines,
    (base, document): (Option<&str>, &str),
    fingerprint: fn(&str) -> u64,
    report: &mut Report,
) -> Result<(), Box<Divergence>> {
    let lines_before = after.map_or(0, |a| a.lines_before);
    let (state, number) = walk(
        after,
        lines,
        (base, document),
        (None, fingerprint, None),
        None,
        report,
    )?;
    // The file line of the last record, 0 when the slice held none.
    state.finish(if number > lines_before { number } else { 0 }, report)
}

/// Checks every line of `lines`; the state they leave and the file line
/// of the last one. With `trees`, the state keeps the waypoint's tree there.
fn walk<'a>(
    after: Option<Continuation<'_>>,
    lines: &mut dyn Lines,
    (base, document): (Option<&'a str>, &'a str),
    (via, fingerprint, mut find): WalkChecks<'_, '_, '_>,
    trees: Option<Trees>,
    report: &mut Report,
) -> Result<(State<'a>, usize), Box<Divergence>> {
    let lines_before = after.map_or(0, |a| a.lines_before);
    let mut state = State {
        base,
        document,
        memo: ParseMemo::new(),
        doc_sha: sha256_hex(document.as_bytes()),
        lines_before,
        sha: base.map(|b| sha256_hex(b.as_bytes())),
        text: base.map(str::to_string),
        aborted: None,
        applied_at_via: 0,
        trees,
    };
    let mut chain = Chain {
        prev_line_sha256: after.map(|a| a.prev_line_sha256.to_string()),
        ..Chain::with_fingerprint(fingerprint)
    };
    let mut number = lines_before;
    let mut raw = Vec::new();
    loop {
        let next = lines
            .next_line(&mut raw)
            .map_err(|e| div(number + 1, None, format!("cannot read the transcript: {e}")))?;
        match next {
            Next::End => break,
            Next::Torn(len) => return Err(torn(number + 1, len)),
            Next::Line => number += 1,
        }
        let rec = parse_record(number, &raw).map_err(|e| div(e.line(), None, e.to_string()))?;
        report.records += 1;
        if let Some(find) = find.take() {
            state.start_at(find, &rec.pre_sha256);
        }
        let seen = number - lines_before - 1;
        let mut earlier = |id: &str| {
            let found = lines.find_op_id(id, seen)?;
            Ok(found.map(|index| lines_before + index + 1))
        };
        chain
            .check(number, &raw, &rec, &mut earlier)
            .map_err(|e| div(number, Some(&rec.op_id), e.to_string()))?;
        state.check_start(number, &rec)?;
        if rec.patch_result != PatchResult::Rejected {
            state.aborted = None;
        }
        match rec.patch_result {
            PatchResult::Rejected => {
                state.check_rejected(number, &rec)?;
                report.rejected += 1;
            }
            PatchResult::Noop => {
                state.check_noop(number, &rec)?;
                report.noop += 1;
            }
            PatchResult::Applied => {
                state.step_applied(number, &rec, report)?;
                report.applied += 1;
            }
        }
        state.check_via(number, via, report.applied)?;
    }
    if let Some(w) = via.filter(|w| w.line > number) {
        return Err(div(
            number + 1,
            None,
            format!("the transcript ends before line {}", w.line),
        ));
    }
    Ok((state, number))
}

/// The divergence of a last line without its newline.
fn torn(line: usize, len: usize) -> Box<Divergence> {
    div(
        line,
        None,
        format!(
            "torn final line ({len} bytes without a newline): not a record; a writer \
             (`noma patch`, `noma repair`) removes it when an interrupted noma write explains it"
        ),
    )
}

/// A divergence on `line` (of the record `op_id`), without hashes or blocks.
fn div(line: usize, op_id: Option<&str>, message: String) -> Box<Divergence> {
    Box::new(Divergence {
        line,
        op_id: op_id.map(str::to_string),
        message,
        expected_sha256: None,
        actual_sha256: None,
        blocks: Vec::new(),
    })
}

/// `d` with the sha256 the transcript promises and the one replay observed.
fn with_shas(mut d: Box<Divergence>, expected: &str, actual: &str) -> Box<Divergence> {
    d.expected_sha256 = Some(expected.to_string());
    d.actual_sha256 = Some(actual.to_string());
    d
}

/// The replayed state, record by record, and what it is checked against.
struct State<'a> {
    /// `--base`, when given.
    base: Option<&'a str>,
    /// The document on disk.
    document: &'a str,
    /// The tree of the state's text, which the next record's op reads.
    memo: ParseMemo,
    /// sha256 of `document`.
    doc_sha: String,
    /// Lines of the file before the replayed slice.
    lines_before: usize,
    /// The sha256 of the state the next record must start from: the base's
    /// when one is given, otherwise the first record's pre-state.
    sha: Option<String>,
    /// The state's text, materialised at the first applied record.
    text: Option<String>,
    /// Inside a rolled-back op-list: the text its ops so far led to (the
    /// state the list's next op was tried on).
    aborted: Option<String>,
    /// Applied records up to the [`Waypoint`], when one was passed.
    applied_at_via: usize,
    /// The trees handed out, when the caller asked for them.
    trees: Option<Trees>,
}

/// Refusal codes that depend on the op alone (§3.5), which re-applying a
/// rejected record's op must reproduce. `sha_mismatch`,
/// `pre_validation_blocked` and `unsupported_op` refuse a whole request
/// (an `expected_sha`, strict mode, a book manifest) whatever its ops are.
const OP_REFUSALS: [&str; 5] = [
    "target_missing",
    "parent_missing",
    "id_conflict",
    "invalid_content",
    "id_attribute_protected",
];

/// The §3.5 code a rejected record was refused with: its last error
/// diagnostic whose code is a patch error code.
fn refusal_code(rec: &Record) -> Option<&str> {
    rec.diagnostics
        .as_deref()?
        .iter()
        .rev()
        .filter(|d| d.severity == crate::diag::Severity::Error)
        .map(|d| d.code.as_str())
        .find(|c| OP_REFUSALS.contains(c) || *c == "op_list_aborted")
}

impl State<'_> {
    /// Every record starts from the replayed state (the first one fixes it
    /// when there is no base).
    fn check_start(&mut self, line: usize, rec: &Record) -> Result<(), Box<Divergence>> {
        let expected = self.sha.get_or_insert_with(|| rec.pre_sha256.clone());
        if *expected == rec.pre_sha256 {
            return Ok(());
        }
        let first = line == self.lines_before + 1;
        let what = match (first, self.base.is_some()) {
            (true, true) if self.lines_before == 0 => "the first record does not start from the base (--base is not the state the transcript begins at)",
            // A continuation (the hook): the base is the previous commit's document.
            (true, true) => "the first new record does not start from the document committed before it (it was made on another version of the document)",
            _ => "pre_sha256 is not the replayed state (an edit happened that no record explains, or the base is wrong)",
        };
        Err(with_shas(
            div(line, Some(&rec.op_id), what.into()),
            &rec.pre_sha256,
            expected,
        ))
    }

    /// A noop's op is checked when the state's text is known: it must
    /// apply and change nothing.
    fn check_noop(&mut self, line: usize, rec: &Record) -> Result<(), Box<Divergence>> {
        if let Some(current) = self.text.as_deref() {
            let same = crate::patch::apply_ops_with(
                &mut self.memo,
                current,
                std::slice::from_ref(&rec.op),
            )
            .is_ok_and(|next| next == current);
            if !same {
                return Err(div(
                    line,
                    Some(&rec.op_id),
                    format!(
                        "the {} op of this noop record does not leave the document unchanged",
                        rec.op_name()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// A rejected record's op is re-applied to the state it was tried on
    /// when that state is known: an op refused on its own merits must be
    /// refused again with the recorded code, and an op rolled back with
    /// its list (`op_list_aborted`) must apply, onto the ops before it in
    /// the list. So a rejected record's op cannot be swapped for one that
    /// applies or fails differently, even on the last line.
    fn check_rejected(&mut self, line: usize, rec: &Record) -> Result<(), Box<Divergence>> {
        let aborted = self.aborted.take();
        let Some(code) = refusal_code(rec) else {
            return Ok(());
        };
        let current = match (aborted.as_deref(), self.text.as_deref()) {
            (Some(t), _) | (None, Some(t)) => t,
            (None, None) if self.doc_sha == rec.pre_sha256 => self.document,
            (None, None) => return Ok(()),
        };
        let result =
            crate::patch::apply_ops_with(&mut self.memo, current, std::slice::from_ref(&rec.op));
        let problem = match (code, result) {
            ("op_list_aborted", Ok(next)) => {
                self.aborted = Some(next);
                return Ok(());
            }
            (_, Err(e)) if e.code.as_str() == code => return Ok(()),
            ("op_list_aborted", Err(e)) => format!(
                "the {} op of this rolled-back record does not apply ({}), but its list recorded it as applied before a later op failed",
                rec.op_name(),
                e.code.as_str()
            ),
            (_, Ok(_)) => format!(
                "the {} op of this rejected record applies, but the record says it was refused with {code}",
                rec.op_name()
            ),
            (_, Err(e)) => format!(
                "the {} op of this rejected record is refused with {}, but the record says {code}",
                rec.op_name(),
                e.code.as_str()
            ),
        };
        Err(div(line, Some(&rec.op_id), problem))
    }

    /// The state's text before the first applied record `rec`: the base,
    /// the empty document of a genesis record, or the document itself when
    /// it is the record's pre-state.
    fn materialise(
        &mut self,
        line: usize,
        rec: &Record,
        report: &mut Report,
    ) -> Result<(), Box<Divergence>> {
        if self.text.is_none() && rec.pre_sha256 == EMPTY_SHA256 {
            report.base = Some(BaseSource::Genesis);
            self.text = Some(String::new());
        }
        if self.text.is_none() {
            if self.doc_sha != rec.pre_sha256 {
                return Err(with_shas(
                    div(
                        line,
                        Some(&rec.op_id),
                        format!(
                            "no base: the first applied record starts from sha256 {} ({}), but the document is at {}; pass --base PATH with that content",
                            rec.pre_sha256,
                            short_sha(&rec.pre_sha256),
                            short_sha(&self.doc_sha)
                        ),
                    ),
                    &rec.pre_sha256,
                    &self.doc_sha,
                ));
            }
            report.base = Some(BaseSource::Document);
            self.text = Some(self.document.to_string());
        }
        Ok(())
    }

    /// Re-applies an applied record's op: it must change the document and
    /// reproduce the record's `post_sha256`, which becomes the state.
    fn step_applied(
        &mut self,
        line: usize,
        rec: &Record,
        report: &mut Report,
    ) -> Result<(), Box<Divergence>> {
        if rec.pre_sha256 == rec.post_sha256 {
            return Err(div(
                line,
                Some(&rec.op_id),
                "an applied record must change the document (pre_sha256 equals post_sha256)".into(),
            ));
        }
        self.materialise(line, rec, report)?;
        let current = self.text.as_deref().unwrap_or_default();
        let next = match super::reapply::reapply(&mut self.memo, current, rec) {
            Ok(next) => next,
            Err(super::reapply::ReapplyError::Fails(e)) => {
                return Err(div(
                    line,
                    Some(&rec.op_id),
                    format!(
                        "re-applying the {} op failed: {} ({})",
                        rec.op_name(),
                        e.code.as_str(),
                        e.message
                    ),
                ))
            }
            Err(super::reapply::ReapplyError::Differs(left)) => {
                let mut d = with_shas(
                    div(
                        line,
                        Some(&rec.op_id),
                        format!("re-applying the {} op does not reproduce post_sha256; blocks listed are those the replayed op changed", rec.op_name()),
                    ),
                    &rec.post_sha256,
                    &left.sha256,
                );
                d.blocks = diff_blocks(current, &left.text);
                return Err(d);
            }
        };
        // The next record's op reads this state's tree: splice it from
        // the current one (a 3 MB document then costs milliseconds per
        // record, not a full parse).
        self.memo.parse_edited(current, &next.text);
        self.text = Some(next.text);
        self.sha = Some(next.sha256);
        Ok(())
    }

    /// After the last record (on file line `last`): the state the records
    /// leave must be the document on disk.
    fn finish(self, last: usize, report: &mut Report) -> Result<(), Box<Divergence>> {
        if self.base.is_some() && report.base.is_none() {
            report.base = Some(BaseSource::Given);
        }
        let Some(final_sha) = self.sha else {
            // No record and no base: nothing to compare the document with.
            report.base = Some(BaseSource::NotNeeded);
            report.final_sha256 = Some(self.doc_sha);
            return Ok(());
        };
        if report.applied == 0 && self.base.is_none() {
            report.base = Some(BaseSource::NotNeeded);
        }
        report.final_sha256 = Some(final_sha.clone());
        if final_sha != self.doc_sha {
            let message = if report.applied == 0 {
                "the document is not the state the transcript's records leave (no applied record explains the difference)"
            } else {
                "the replayed final state is not the document on disk (it was edited after the last record)"
            };
            let mut d = with_shas(div(last, None, message.into()), &final_sha, &self.doc_sha);
            if let Some(t) = self.text.as_deref() {
                d.blocks = diff_blocks(t, self.document);
            }
            return Err(d);
        }
        Ok(())
    }
}

/// The chain rules every transcript line obeys (§5.3 `prev_entry_sha256`,
/// §5.2 `op_id`):
///
/// - the first line carries no `prev_entry_sha256` (absent or `null`): a
///   transcript starts with its first record, so a first line that chains
///   to something means records before it were removed;
/// - a later line that carries one must name the sha256 of the previous
///   raw line (including its `\n`); a later line without one is accepted,
///   as §5.3 makes the field optional (the reference's writers omit it);
/// - every `op_id` is unique in the file.
///
/// Together with replay (each record starts from the state the one before
/// left) a fully chained file leaves only the last line's non-semantic
/// fields (`ts`, `reason`, messages) without tamper evidence inside the
/// file. A chain-less line's own non-semantic fields, and state-neutral
/// records (rejected, noop) next to it, have none inside the file; the
/// hooks anchor committed lines through git.
#[derive(Debug)]
pub struct Chain {
    prev_line_sha256: Option<String>,
    /// A 64-bit fingerprint of every op_id seen: 8 bytes a record (a
    /// million records stay within ~30 MB). A fingerprint seen
    /// before is only a suspicion: the earlier lines are searched for the
    /// id itself before a repeat is reported.
    op_ids: std::collections::HashSet<u64>,
    fingerprint: fn(&str) -> u64,
}

impl Default for Chain {
    fn default() -> Self {
        Chain::with_fingerprint(op_id_fingerprint)
    }
}

/// The fingerprint [`Chain`] remembers an op_id by: the first 64 bits of
/// its BLAKE3 digest.
pub fn op_id_fingerprint(op_id: &str) -> u64 {
    let digest = blake3::hash(op_id.as_bytes());
    let mut key = [0u8; 8];
    key.copy_from_slice(&digest.as_bytes()[..8]);
    u64::from_le_bytes(key)
}

/// A transcript line that breaks the chain rules ([`Chain::check`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChainError {
    /// The first line carries `prev_entry_sha256`.
    #[error("line {line} is the transcript's first but carries prev_entry_sha256: the records before it were removed")]
    FirstLineChains {
        /// 1-based line number.
        line: usize,
    },
    /// `prev_entry_sha256` is not the sha256 of the line before.
    #[error("prev_entry_sha256 does not match line {previous} (the chain is broken: a line was changed, removed or inserted)")]
    Broken {
        /// 1-based number of the line it should match.
        previous: usize,
    },
    /// The earlier lines could not be read again to check an op_id.
    #[error(
        "cannot read the transcript again to check this op_id against the earlier lines: {message}"
    )]
    Unreadable {
        /// The read error.
        message: String,
    },
    /// An `op_id` seen on an earlier line.
    #[error("op_id {op_id} repeats line {first} (op_ids are unique per record, §5.2)")]
    RepeatedOpId {
        /// The repeated id.
        op_id: String,
        /// 1-based line where it first appeared.
        first: usize,
    },
}

/// Finds the first earlier line (1-based, the file's) whose record has the
/// given op_id; [`Chain::check`] asks it only on a fingerprint hit.
pub type EarlierLine<'a> = dyn FnMut(&str) -> std::io::Result<Option<usize>> + 'a;

impl Chain {
    /// A chain that fingerprints op_ids with `fingerprint` (tests give a
    /// tiny one to force collisions).
    pub fn with_fingerprint(fingerprint: fn(&str) -> u64) -> Self {
        Chain {
            prev_line_sha256: None,
            op_ids: Default::default(),
            fingerprint,
        }
    }

    /// Checks line `number` (raw bytes with `\n`) and its parsed record
    /// against the lines before it; `earlier` searches those lines for an
    /// op_id whose fingerprint was seen.
    pub fn check(
        &mut self,
        number: usize,
        raw: &[u8],
        rec: &super::Record,
        earlier: &mut EarlierLine<'_>,
    ) -> Result<(), ChainError> {
        match (&rec.prev_entry_sha256, &self.prev_line_sha256) {
            (Some(_), None) => return Err(ChainError::FirstLineChains { line: number }),
            (Some(claimed), Some(actual)) if claimed != actual => {
                return Err(ChainError::Broken {
                    previous: number - 1,
                })
            }
            _ => {}
        }
        if !self.op_ids.insert((self.fingerprint)(&rec.op_id)) {
            match earlier(&rec.op_id) {
                Ok(Some(first)) => {
                    return Err(ChainError::RepeatedOpId {
                        op_id: rec.op_id.clone(),
                        first,
                    })
                }
                Ok(None) => {}
                Err(e) => {
                    return Err(ChainError::Unreadable {
                        message: e.to_string(),
                    })
                }
            }
        }
        self.prev_line_sha256 = Some(sha256_hex(raw));
        Ok(())
    }
}

/// The line number of the last record of `transcript` that starts from
/// the state `document` is in: the document went back to a state the
/// transcript already passed (that record's change, and its successors',
/// undone, e.g. by `git stash`), or `None`.
pub fn last_record_starting_at(transcript: &[u8], document: &[u8]) -> Option<usize> {
    let sha = crate::doc::hash::sha256_hex(document);
    let (lines, _) = super::split_lines(transcript);
    lines.iter().rev().find_map(|l| {
        let r = super::parse_record(l.number, l.raw).ok()?;
        (r.pre_sha256 == sha).then_some(l.number)
    })
}

#[cfg(test)]
mod undone_tests {
    use super::last_record_starting_at;

    #[test]
    fn the_last_record_starting_at_a_state_is_found() {
        let pre = crate::doc::hash::sha256_hex(b"a\n");
        let line = |n: u32| {
            let v = serde_json::json!({
                "protocol_version": "1.0", "tool_version": "t", "op_id": format!("00000000-0000-4000-8000-00000000000{n}"),
                "ts": "2026-01-01T00:00:00Z", "actor": {"kind": "agent", "name": "x"},
                "doc_uri": "d.noma", "pre_sha256": pre, "post_sha256": pre,
                "pre_sha": &pre[..8], "post_sha": &pre[..8],
                "op": {"op": "delete_block", "id": "b"}, "patch_result": "noop",
                "pre_validation": "ok",
                "post_validation": "ok"
            });
            format!("{v}\n")
        };
        let t = format!("{}{}", line(1), line(2));
        assert_eq!(last_record_starting_at(t.as_bytes(), b"a\n"), Some(2));
        assert_eq!(last_record_starting_at(t.as_bytes(), b"b\n"), None);
    }
}

//! A replay that passes through a known state ([`replay_reader_via`]).

use super::{
    div, op_id_fingerprint, walk, with_shas, Divergence, ReaderLines, Report, Rewind, State,
};
use crate::doc::hash::sha256_hex;
use crate::doc::Document;
use std::sync::Arc;

/// Gives a document's text by its sha256 (the state a replay starts from).
pub type Finder<'a> = dyn FnMut(&str) -> Option<String> + 'a;

/// A state a replay must pass through: the one the records up to file
/// line `line` leave has sha256 `sha256` (a transcript that extends
/// another one whose records are known to end at a given document).
#[derive(Debug, Clone, Copy)]
pub struct Waypoint<'a> {
    /// 1-based file line after which the state is checked.
    pub line: usize,
    /// sha256 (hex) that state must have.
    pub sha256: &'a str,
}

/// [`replay_reader`](super::replay_reader) that also checks the state after `via.line` (a
/// divergence on that line when it is another, or when the transcript
/// ends before it): one replay where two (the lines up to the waypoint
/// to its document, then the rest from there) would parse that document
/// twice. The base is `find`'s text for the first record's `pre_sha256`
/// (every record up to the first applied one starts there), looked up
/// as the replay reaches it rather than by reading that record first.
/// Also returns the number of applied records up to the waypoint.
pub fn replay_reader_via(
    reader: &mut dyn Rewind,
    find: &mut Finder<'_>,
    via: Waypoint<'_>,
    document: &str,
) -> (Report, usize) {
    let (report, applied, _) = via_walk(reader, find, via, document, None);
    (report, applied)
}

/// The trees of the two states a [`replay_reader_via_trees`] passed
/// through, each exactly [`crate::doc::parse`] of that state's text: a
/// caller that compares the waypoint's blocks with the document's, or
/// validates the document, need not parse either text again.
#[derive(Debug, Clone, Default)]
pub struct Trees {
    /// The state after the waypoint's line, when an applied record (or a
    /// found first state) gave it a text.
    pub via: Option<Arc<Document>>,
    /// The document, when the replay held nothing against it and ended at
    /// a text.
    pub last: Option<Arc<Document>>,
}

/// [`replay_reader_via`], also handing out the trees it built of the
/// waypoint's state and of the document ([`Trees`]).
pub fn replay_reader_via_trees(
    reader: &mut dyn Rewind,
    find: &mut Finder<'_>,
    via: Waypoint<'_>,
    document: &str,
) -> (Report, usize, Trees) {
    via_walk(reader, find, via, document, Some(Trees::default()))
}

/// [`replay_reader_via`], keeping the trees when `trees` is given.
fn via_walk(
    reader: &mut dyn Rewind,
    find: &mut Finder<'_>,
    via: Waypoint<'_>,
    document: &str,
    trees: Option<Trees>,
) -> (Report, usize, Trees) {
    let Ok(start) = reader.stream_position() else {
        return (
            super::replay_reader(reader, None, document),
            0,
            Trees::default(),
        );
    };
    let mut lines = ReaderLines { reader, start };
    let mut report = Report::nothing_yet();
    let mut applied_before = 0;
    let mut kept = Trees::default();
    let result = walk(
        None,
        &mut lines,
        (None, document),
        (Some(via), op_id_fingerprint, Some(find)),
        trees,
        &mut report,
    )
    .and_then(|(mut state, number)| {
        applied_before = state.applied_at_via;
        let mut trees = state.trees.take();
        if let (Some(t), Some(text)) = (trees.as_mut(), state.text.as_deref()) {
            // The tree the last record's op spliced, unless a later
            // rejected or noop record's check left another in the memo.
            t.last = Some(state.memo.parse(text));
        }
        state.finish(number, &mut report)?;
        kept = trees.unwrap_or_default();
        Ok(())
    });
    report.ok = result.is_ok();
    report.divergence = result.err().map(|d| *d);
    (report, applied_before, kept)
}

/// What [`walk`] checks besides each record: a state to pass through,
/// the op_id fingerprint, and the finder of the first record's state.
pub(super) type WalkChecks<'w, 'f, 'g> = (
    Option<Waypoint<'w>>,
    fn(&str) -> u64,
    Option<&'f mut Finder<'g>>,
);

impl State<'_> {
    /// Starts from `find`'s text for the first record's `pre_sha256`, when
    /// it knows one.
    pub(super) fn start_at(&mut self, find: &mut Finder<'_>, pre_sha256: &str) {
        if let Some(text) = find(pre_sha256) {
            self.sha = Some(sha256_hex(text.as_bytes()));
            self.text = Some(text);
        }
    }

    /// After line `line` (with `applied` records applied so far): the
    /// state is the waypoint's when `via` is at that line.
    pub(super) fn check_via(
        &mut self,
        line: usize,
        via: Option<Waypoint<'_>>,
        applied: usize,
    ) -> Result<(), Box<Divergence>> {
        let Some(w) = via.filter(|w| w.line == line) else {
            return Ok(());
        };
        self.applied_at_via = applied;
        let actual = self.sha.as_deref().unwrap_or_default();
        if actual == w.sha256 {
            if let (Some(t), Some(text)) = (self.trees.as_mut(), self.text.as_deref()) {
                // Held here, the tree is copied by the next record's
                // splice instead of edited in place: still less than a
                // parse.
                t.via = Some(self.memo.parse(text));
            }
            return Ok(());
        }
        Err(with_shas(
            div(
                line,
                None,
                "the state the records up to this line leave is not the expected document".into(),
            ),
            w.sha256,
            actual,
        ))
    }
}

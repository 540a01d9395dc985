//! The transcript merge driver's everyday case without holding a transcript
//! (decision `merge-driver-appends`): the merge base's transcript (`%O`) is
//! a byte prefix of ours (`%A`) and of theirs (`%B`), each side having
//! appended records. Only what the sides appended is held; the merged
//! transcript keeps ours as a byte prefix, so it is written by appending to
//! `%A`.
//!
//! The answer must be [`noma_merge::transcript::reconcile_transcripts`]'s, byte
//! for byte, so both run [`noma_merge::transcript::rebase_tails`] on the same
//! records; what the whole path learns from the common prefix is learnt
//! here in one pass over the base, a line at a time:
//!
//! - every base record parses (the whole path refuses a transcript with a
//!   bad line, so one found here hands over to it);
//! - no base record has the origin of one of their appended records (then
//!   the whole path's identity sets, asked only about their records, say
//!   what the tails alone say; a hit hands over);
//! - the base's last applied record, whose `post_sha256` is where the
//!   common prefix ends when the tails share no applied record.
//!
//! A base that is a prefix of both sides is in both transcripts, so no
//! base record can be one their side removed, and the common prefix is
//! not empty (no genesis records to pair up). Anything else (an empty or
//! torn base, a torn or unreadable appended line, a document state not
//! found, a side that does not replay) returns None, and the whole path
//! runs and says why.
//!
//! The three transcripts are [`Source`]s: the driver's are the files git
//! hands over; `noma reconcile` of a base that moved on reads blobs
//! (`git cat-file` past a size, see [`crate::git::stream`]).

use std::collections::HashSet;
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use noma_core::doc::hash::sha256_hex;
use noma_core::transcript::prefix::{self, Extension};
use noma_core::transcript::{parse_record, split_lines, PatchResult, Record};

use super::FileMerge;
use crate::git::repo::Repo;
use crate::git::Oid;
use noma_merge::lineage::origin;
use noma_merge::transcript::{
    last_applied_post, rebase_tails, start_doc, Merged, Reconciled, Tails,
};

/// One transcript, read from its start each time it is opened (the base
/// is read twice).
pub(super) trait Source {
    /// A new stream of its bytes; None when it cannot be read.
    fn open(&self) -> Option<Box<dyn Read + '_>>;
}

/// Bytes already read (the document driver finds the transcripts whole in
/// history): streamed, the shared history is checked a line at a time
/// instead of parsed into records and kept.
impl Source for &[u8] {
    fn open(&self) -> Option<Box<dyn Read + '_>> {
        Some(Box::new(*self))
    }
}

impl Source for &Path {
    fn open(&self) -> Option<Box<dyn Read + '_>> {
        Some(Box::new(File::open(self).ok()?))
    }
}

/// A blob of a repository.
pub(super) struct Blob<'r>(pub &'r Repo, pub Oid);

impl Source for Blob<'_> {
    fn open(&self) -> Option<Box<dyn Read + '_>> {
        Some(Box::new(self.0.blob_stream(self.1).ok()?))
    }
}

/// The everyday merge reconciled from the sides' tails.
#[derive(Debug, Clone)]
pub(super) struct Streamed {
    /// What to append to ours to make the merged transcript.
    pub append: Vec<u8>,
    /// The reconciliation; its `transcript` is left empty (ours, then
    /// `append`).
    pub reconciled: Reconciled,
    /// How ours extends the base: its line count and last line, and what
    /// ours appended.
    pub ours: Extension,
}

/// [`super::merge_transcript`]'s answer for the transcript files `[base,
/// ours, theirs]` when the base is a prefix of both, with `content` the
/// bytes to append to ours. None: the whole path decides.
pub(super) fn merge_transcript_files(
    [base, ours, theirs]: [&Path; 3],
    find_doc: &mut dyn FnMut(&str) -> Option<String>,
) -> Option<FileMerge> {
    let s = reconcile_streams([&base, &ours, &theirs], None, find_doc)?;
    Some(super::reconciled_transcript(
        &s.reconciled.conflicts,
        s.append,
    ))
}

/// [`noma_merge::transcript::reconcile_transcripts`] of `[base, ours, theirs]`
/// read as streams; see the module's doc.
pub(super) fn reconcile_streams(
    [base, ours, theirs]: [&dyn Source; 3],
    fallback_doc: Option<&str>,
    find_doc: &mut dyn FnMut(&str) -> Option<String>,
) -> Option<Streamed> {
    // Theirs first: the base is searched for their records' origins.
    let theirs_ext = prefix::extension(&mut base.open()?, &mut theirs.open()?).ok()??;
    let theirs_all = tail_records(&theirs_ext.tail, theirs_ext.lines)?;
    let needles: HashSet<&str> = theirs_all.iter().map(origin).collect();
    let mut checked = Checked::new(base.open()?, &needles);
    let ours_ext = prefix::extension(&mut checked, &mut ours.open()?).ok()??;
    let base_end = checked.finish()?;
    rebase_sides(
        [ours_ext, theirs_ext],
        theirs_all,
        base_end,
        fallback_doc,
        find_doc,
    )
}

/// [`reconcile_streams`] when the base transcript is a proved checkpoint
/// row (`p`, replayed to the document whose sha256 is `base_doc_sha256`):
/// each side is read once and the base not at all — the sides' first
/// bytes are compared by the row's digest, and their records' origins
/// looked up in its fingerprints (one that may be there hands over to
/// the whole-file path).
pub(super) fn reconcile_proved(
    p: &super::proved::Proved,
    base_doc_sha256: String,
    [ours, theirs]: [&dyn Source; 2],
    fallback_doc: Option<&str>,
    find_doc: &mut dyn FnMut(&str) -> Option<String>,
) -> Option<Streamed> {
    let theirs_ext = p.extension_of(&mut theirs.open()?).ok()??;
    let theirs_all = tail_records(&theirs_ext.tail, theirs_ext.lines)?;
    if theirs_all.iter().any(|r| p.may_hold(origin(r))) {
        return None;
    }
    let ours_ext = p.extension_of(&mut ours.open()?).ok()??;
    // The proved history replays to the base document, so its last
    // applied record's post_sha256 is that document's sha256.
    let base_end = Some(base_doc_sha256);
    rebase_sides(
        [ours_ext, theirs_ext],
        theirs_all,
        base_end,
        fallback_doc,
        find_doc,
    )
}

/// The rest of [`reconcile_streams`] once both sides' extensions of the
/// base are known (`base_end`: the base's last applied post_sha256).
fn rebase_sides(
    [ours_ext, theirs_ext]: [Extension; 2],
    theirs_all: Vec<Record>,
    base_end: Option<String>,
    fallback_doc: Option<&str>,
    find_doc: &mut dyn FnMut(&str) -> Option<String>,
) -> Option<Streamed> {
    if ours_ext.lines == 0 {
        return None; // no common line: genesis records may pair up
    }
    let ours_all = tail_records(&ours_ext.tail, ours_ext.lines)?;
    let (olines, _) = split_lines(&ours_ext.tail);
    let (tlines, _) = split_lines(&theirs_ext.tail);
    let common = (olines.iter().zip(&tlines))
        .take_while(|(a, b)| a.raw == b.raw)
        .count();
    let (onew, tnew) = (&ours_all[common..], &theirs_all[common..]);
    let prefix_end = last_applied_post(&ours_all[..common]).or(base_end);
    let start = start_doc(prefix_end, [onew, tnew], fallback_doc, find_doc).ok()?;
    let ours_origins: HashSet<&str> = ours_all.iter().map(origin).collect();
    let last_line = olines.last().map(|l| sha256_hex(l.raw));
    let tails = Tails {
        onew,
        tnew,
        our_last_line: last_line.or_else(|| ours_ext.last_line_sha256.clone()),
        our_genesis: false,
        ours_all: &ours_origins,
        in_base: &HashSet::new(),
    };
    let rebased = rebase_tails(&tails, &start).ok()?;
    let append = match rebased.merged {
        Merged::Ours => Vec::new(),
        Merged::OursThen(records) => records,
        // Ours is a line prefix of theirs: theirs is ours and the rest.
        Merged::Theirs => theirs_ext.tail.strip_prefix(&ours_ext.tail[..])?.to_vec(),
    };
    Some(Streamed {
        append,
        reconciled: rebased.reconciled,
        ours: ours_ext,
    })
}

/// The records of a side's `tail` (after `before` lines of the base); None
/// when a line is torn or does not parse.
fn tail_records(tail: &[u8], before: usize) -> Option<Vec<Record>> {
    let (lines, torn) = split_lines(tail);
    if torn.is_some() {
        return None;
    }
    (lines.iter())
        .map(|l| parse_record(before + l.number, l.raw).ok())
        .collect()
}

/// The base transcript as [`prefix::extension`] reads it, each complete
/// line parsed as it passes (see the module's doc). A line that does not
/// parse, or whose origin is among `needles`, ends the read with an error.
struct Checked<'n, R> {
    inner: R,
    needles: &'n HashSet<&'n str>,
    /// The start of a line that spans reads.
    line: Vec<u8>,
    lines: usize,
    /// The last applied record's `post_sha256`.
    last_applied_post: Option<String>,
}

impl<'n, R: Read> Checked<'n, R> {
    fn new(inner: R, needles: &'n HashSet<&'n str>) -> Self {
        Checked {
            inner,
            needles,
            line: Vec::new(),
            lines: 0,
            last_applied_post: None,
        }
    }

    fn check(&mut self, raw: &[u8]) -> io::Result<()> {
        self.lines += 1;
        let hand_over = |why: &str| io::Error::other(format!("line {}: {why}", self.lines));
        let r = parse_record(self.lines, raw).map_err(|_| hand_over("not a record"))?;
        if self.needles.contains(origin(&r)) {
            return Err(hand_over("an op their side appended"));
        }
        if r.patch_result == PatchResult::Applied {
            self.last_applied_post = Some(r.post_sha256);
        }
        Ok(())
    }

    /// The base's last applied `post_sha256` (None inside when it has no
    /// applied record); None when it ends in a torn line.
    fn finish(self) -> Option<Option<String>> {
        self.line.is_empty().then_some(self.last_applied_post)
    }
}

impl<R: Read> Read for Checked<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        let mut rest = &buf[..n];
        while let Some(at) = memchr::memchr(b'\n', rest) {
            let (head, tail) = rest.split_at(at + 1);
            if self.line.is_empty() {
                self.check(head)?;
            } else {
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(head);
                self.check(&line)?;
                line.clear();
                self.line = line; // its buffer, for the next long line
            }
            rest = tail;
        }
        self.line.extend_from_slice(rest);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use proptest::prelude::*;
    use serde_json::{json, Value};

    use super::super::{merge_transcript, Versions};
    use super::*;
    use noma_merge::test_support::{body, BASE};
    use noma_merge::transcript::{reconcile_transcripts, Unreconcilable};

    /// Applies `ops` one at a time from `doc`, appending every record (a
    /// rejected op's too) to `t`; each document passed through joins `docs`.
    fn grow(doc: &mut String, t: &mut Vec<u8>, ops: &[Value], docs: &mut Vec<String>) {
        let opts = noma_core::plan::Request::new(noma_core::transcript::Actor {
            kind: noma_core::transcript::ActorKind::Agent,
            name: "t".into(),
            model: None,
            version: None,
        });
        for op in ops {
            let mut p =
                noma_core::plan::plan(doc, &Default::default(), std::slice::from_ref(op), &opts);
            let (lines, _) = split_lines(t);
            let prev = lines.last().map(|l| sha256_hex(l.raw));
            t.extend(noma_core::plan::chain_and_serialise(&mut p.records, prev));
            *doc = p.new_text;
            docs.push(doc.clone());
        }
    }

    /// The three transcripts written as git hands them to the driver.
    fn files(bt: &[u8], ot: &[u8], tt: &[u8]) -> (tempfile::TempDir, [PathBuf; 3]) {
        let dir = tempfile::tempdir().expect("tempdir");
        let paths = ["base", "ours", "theirs"].map(|n| dir.path().join(n));
        for (p, b) in paths.iter().zip([bt, ot, tt]) {
            std::fs::write(p, b).expect("writes");
        }
        (dir, paths)
    }

    fn finder(docs: &[String]) -> impl FnMut(&str) -> Option<String> + '_ {
        |sha: &str| {
            docs.iter()
                .find(|d| sha256_hex(d.as_bytes()) == sha)
                .cloned()
        }
    }

    /// The streamed reconciliation and the whole one of the same merge.
    fn both(
        [bt, ot, tt]: [&[u8]; 3],
        docs: &[String],
    ) -> (Option<Streamed>, Result<Reconciled, Unreconcilable>) {
        let (_dir, p) = files(bt, ot, tt);
        let [b, o, t] = [p[0].as_path(), p[1].as_path(), p[2].as_path()];
        let streamed = reconcile_streams([&b, &o, &t], None, &mut finder(docs));
        // The same read from bytes in memory (the document driver's way).
        let from_bytes = reconcile_streams([&bt, &ot, &tt], None, &mut finder(docs));
        assert_eq!(
            format!(
                "{:?}",
                from_bytes.as_ref().map(|s| (&s.append, &s.reconciled.doc))
            ),
            format!(
                "{:?}",
                streamed.as_ref().map(|s| (&s.append, &s.reconciled.doc))
            )
        );
        let whole = reconcile_transcripts(ot, tt, Some(bt), None, &mut finder(docs));
        (streamed, whole)
    }

    /// What the driver writes and says, both ways: (streamed, whole).
    fn driven([bt, ot, tt]: [&[u8]; 3], docs: &[String]) -> (Option<FileMerge>, FileMerge) {
        let (_dir, p) = files(bt, ot, tt);
        let streamed = merge_transcript_files([&p[0], &p[1], &p[2]], &mut finder(docs));
        let versions = Versions {
            base: Some(bt.to_vec()),
            ours: Some(ot.to_vec()),
            theirs: Some(tt.to_vec()),
        };
        (streamed, merge_transcript(&versions, &mut finder(docs)))
    }

    fn op() -> impl Strategy<Value = Value> {
        let id = |i: usize| ["a", "b"][i];
        prop_oneof![
            // Applied, or a noop when the body is already that.
            4 => (0..2usize, 0..3usize).prop_map(move |(b, v)| body(id(b), ["one", "two", "alpha"][v])),
            2 => (0..2usize, 0..2usize).prop_map(move |(b, v)| {
                let value = ["v1", "v2"][v];
                json!({"op": "update_attribute", "id": id(b), "key": "k", "value": value})
            }),
            2 => (0..3usize).prop_map(|p| {
                let mut op = json!({"op": "add_block", "parent": "t", "content": "::note{id=\"n\"}\nn\n::"});
                if p < 2 {
                    op["position"] = p.into();
                }
                op
            }),
            1 => Just(json!({"op": "rename_id", "from": "a", "to": "z"})),
            // Rejected: no such block.
            1 => Just(body("zz", "x")),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]
        /// Base, records both sides share, then each side's own: the
        /// streamed path is taken and says what the whole path says.
        #[test]
        fn the_streamed_merge_is_the_whole_merge(
            filler in 0usize..80,
            base in proptest::collection::vec(op(), 0..3),
            shared in proptest::collection::vec(op(), 0..3),
            ours in proptest::collection::vec(op(), 0..4),
            theirs in proptest::collection::vec(op(), 0..4),
        ) {
            let (mut doc, mut t, mut docs) = (BASE.to_string(), Vec::new(), vec![BASE.to_string()]);
            // Many records, so that lines span the reads of the base.
            let fill: Vec<Value> = (0..=filler)
                .map(|i| json!({"op": "update_attribute", "id": "b", "key": "n", "value": i.to_string()}))
                .collect();
            grow(&mut doc, &mut t, &fill, &mut docs);
            grow(&mut doc, &mut t, &base, &mut docs);
            let bt = t.clone();
            grow(&mut doc, &mut t, &shared, &mut docs);
            let (mut od, mut ot) = (doc.clone(), t.clone());
            grow(&mut od, &mut ot, &ours, &mut docs);
            let (mut td, mut tt) = (doc, t);
            grow(&mut td, &mut tt, &theirs, &mut docs);
            let sides = [&bt[..], &ot, &tt];
            let (streamed, whole) = both(sides, &docs);
            let whole = whole.expect("the whole path reconciles");
            let s = streamed.expect("the streamed path is taken");
            prop_assert_eq!([&ot[..], &s.append].concat(), whole.transcript.clone());
            prop_assert_eq!(&s.reconciled.doc, &whole.doc);
            prop_assert_eq!(&s.reconciled.conflicts, &whole.conflicts);
            prop_assert_eq!(&s.reconciled.rebased, &whole.rebased);
            prop_assert_eq!(&s.reconciled.ours_doc, &whole.ours_doc);
            prop_assert_eq!(&s.reconciled.theirs_doc, &whole.theirs_doc);
            prop_assert_eq!(
                (s.reconciled.ours_new, s.reconciled.theirs_new),
                (whole.ours_new, whole.theirs_new)
            );
            let (fs, fw) = driven(sides, &docs);
            let fs = fs.expect("the driver streams");
            prop_assert_eq!([&ot[..], &fs.content].concat(), fw.content);
            prop_assert_eq!(
                (fs.clean, fs.method, fs.messages, fs.resolved_by_recording),
                (fw.clean, fw.method, fw.messages, fw.resolved_by_recording)
            );
        }
    }

    /// A base, and ours and theirs each one record on.
    fn forked() -> (Vec<u8>, Vec<u8>, Vec<u8>, Vec<String>) {
        let (mut doc, mut bt, mut docs) = (BASE.to_string(), Vec::new(), vec![BASE.to_string()]);
        grow(
            &mut doc,
            &mut bt,
            &[body("a", "A0"), body("b", "B0")],
            &mut docs,
        );
        let (mut od, mut ot) = (doc.clone(), bt.clone());
        grow(&mut od, &mut ot, &[body("a", "A1")], &mut docs);
        let (mut td, mut tt) = (doc, bt.clone());
        grow(&mut td, &mut tt, &[body("b", "B1")], &mut docs);
        (bt, ot, tt, docs)
    }

    #[test]
    fn the_plain_fork_streams_and_appends_one_record() {
        let (bt, ot, tt, docs) = forked();
        let (s, whole) = both([&bt, &ot, &tt], &docs);
        let s = s.expect("streamed");
        assert_eq!(split_lines(&s.append).0.len(), 1);
        assert_eq!([&ot[..], &s.append].concat(), whole.unwrap().transcript);
    }

    /// Their appended record carries the op_id of a base record (the op
    /// twice): the whole path's identity sets skip it, so the streamed
    /// path must hand over rather than carry it.
    #[test]
    fn a_base_record_with_their_origin_hands_over() {
        let (bt, ot, tt, docs) = forked();
        let base_id = parse_record(1, split_lines(&bt).0[0].raw).unwrap().op_id;
        let their_line = split_lines(&tt).0.last().unwrap().raw;
        let their_id = parse_record(1, their_line).unwrap().op_id;
        let tt = String::from_utf8(tt.clone())
            .unwrap()
            .replace(&their_id, &base_id);
        let (s, whole) = both([&bt, &ot, tt.as_bytes()], &docs);
        let whole = whole.expect("reconciles");
        assert!(whole.rebased.is_empty(), "{:?}", whole.rebased);
        assert!(
            s.is_none(),
            "the streamed path carried an op the base holds"
        );
    }

    /// Every other case hands over to the whole path.
    #[test]
    fn anything_else_hands_over() {
        let (bt, ot, tt, docs) = forked();
        let streams =
            |b: &[u8], o: &[u8], t: &[u8], docs: &[String]| both([b, o, t], docs).0.is_some();
        assert!(streams(&bt, &ot, &tt, &docs));
        // A base line that is no record: the whole path refuses it.
        let bad = [b"{}\n", &bt[..]].concat();
        let with = |t: &[u8]| [b"{}\n", t].concat();
        assert!(!streams(&bad, &with(&ot), &with(&tt), &docs));
        assert!(both([&bad, &with(&ot), &with(&tt)], &docs).1.is_err());
        // No base (genesis records may pair up), a torn side, a base that
        // is no prefix (a cherry-pick), a state not found.
        assert!(!streams(b"", &ot, &tt, &docs));
        assert!(!streams(&bt, &ot, &tt[..tt.len() - 1], &docs));
        assert!(!streams(&bt[..bt.len() - 1], &ot, &tt, &docs));
        assert!(!streams(&ot, &bt, &tt, &docs));
        assert!(!streams(&bt, &ot, &tt, &[]));
        // A side whose appended line does not parse.
        assert!(!streams(&bt, &ot, &[&bt[..], b"{}\n"].concat(), &docs));
    }
}

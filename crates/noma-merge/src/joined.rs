//! Unjoining transcripts that two branches' records were *joined* into line
//! by line: what a merge without noma's driver leaves when the conflict is
//! resolved by keeping both sides (a clone where `noma hooks install` never
//! ran, GitHub's web conflict editor, `git merge-file --union`).
//!
//! Such a transcript is a common prefix `P`, then one branch's records `X`
//! chained onto `P`, then the other branch's records `Y`, whose first line
//! chains onto `P`'s last line again (or, when the branches started the
//! transcript separately, chains onto nothing). It does not replay: `Y`
//! starts from the state `P` ends at, not from where `X` leaves the
//! document. [`unjoin`] makes it linear the way the merge driver would
//! have: `P` and `X` stay byte for byte, and `Y` is rebased onto `X` as
//! reconciled copies ([`crate::transcript`]), deterministically, so that
//! `noma repair` and the hook compute the same bytes. Doing so to the
//! files, under the transcript's lock, is `noma-reconcile`'s
//! `joined_file`.

use std::io::BufRead;

use crate::transcript::{reconcile_transcripts, replay_records, Reconciled, Unreconcilable};
use noma_core::doc::hash::{sha256_hex, EMPTY_SHA256};
use noma_core::transcript::{parse_record, split_lines, PatchResult, Record};

/// Where a joined transcript splits (byte offsets into it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Join {
    /// Length of the common prefix `P`.
    pub common: usize,
    /// Where the second branch's records `Y` start (`P` and `X` end).
    pub second: usize,
    /// 1-based line of `Y`'s first record.
    pub second_line: usize,
}

/// Finds the join in `t`: the first record that does not follow the line
/// before it but an earlier line (or, not first, nothing), with every
/// record after it following line to line. A record follows the line
/// before when its `prev_entry_sha256` names that line or, carrying none
/// (§5.3 makes it optional), when it starts from the state that line's
/// record leaves. A chain-less break joins after the last earlier line
/// whose record leaves the state it starts from (none: the branches each
/// started the transcript, from the state its first record starts from).
/// None for a transcript that follows throughout, that breaks any other
/// way (an edited line, an edit no record explains), or that holds a torn
/// or unreadable line.
pub fn find_join(t: &[u8]) -> Option<Join> {
    let (lines, torn) = split_lines(t);
    if torn.is_some() {
        return None;
    }
    let mut scan = JoinScan::default();
    for l in &lines {
        let rec = parse_record(l.number, l.raw);
        let link = rec.as_ref().map(Link::of).map_err(|_| ());
        scan.line(l.raw.len(), &sha256_hex(l.raw), link);
    }
    scan.finish(false, &mut &t[..]).ok()?
}

/// What [`JoinScan`] reads of a record: its chain link and its states.
#[derive(Debug, Clone, Copy)]
pub struct Link<'r> {
    /// `prev_entry_sha256`, when the record carries one.
    pub prev_entry_sha256: Option<&'r str>,
    /// The state the record starts from.
    pub pre_sha256: &'r str,
    /// The state the record leaves.
    pub post_sha256: &'r str,
}

impl<'r> Link<'r> {
    /// The link of `rec`.
    pub fn of(rec: &'r Record) -> Self {
        Link {
            prev_entry_sha256: rec.prev_entry_sha256.as_deref(),
            pre_sha256: &rec.pre_sha256,
            post_sha256: &rec.post_sha256,
        }
    }
}

/// [`find_join`] fed a line at a time, for a reader that never holds the
/// transcript: it keeps the last line's sha256 and state and
/// the first break only. The prefix a break joins onto is looked for only
/// when the break is the one join candidate, by reading the lines before
/// it again ([`JoinScan::finish`]).
#[derive(Debug, Default)]
pub struct JoinScan {
    /// Lines fed, and their bytes.
    lines: usize,
    offset: usize,
    /// The sha256 of the last line fed.
    prev_sha: Option<String>,
    /// The state the last line's record leaves (None: no record).
    prev_post: Option<String>,
    /// The first record that does not follow the line before it.
    first_break: Option<Break>,
    /// A second break, or an unreadable line after the first: no join.
    impossible: bool,
}

/// Where a record breaks the chain, and what it follows instead.
#[derive(Debug)]
struct Break {
    /// 0-based line index, and where the line starts.
    index: usize,
    offset: usize,
    claimed: Option<String>,
    /// The state the record starts from (what a chain-less break follows).
    pre: String,
}

impl JoinScan {
    /// Feeds the next complete line: its length, its sha256 and its
    /// record's [`Link`], or `Err(())` when the line is no record (then
    /// there is no join, unless it is the first line, which [`find_join`]
    /// never needs).
    pub fn line(&mut self, len: usize, sha: &str, link: Result<Link<'_>, ()>) {
        let index = self.lines;
        self.lines += 1;
        if index > 0 && !self.impossible {
            match link {
                Err(()) => self.impossible = true,
                Ok(l) if self.follows(&l) => {}
                Ok(_) if self.first_break.is_some() => self.impossible = true,
                Ok(l) => {
                    self.first_break = Some(Break {
                        index,
                        offset: self.offset,
                        claimed: l.prev_entry_sha256.map(str::to_string),
                        pre: l.pre_sha256.to_string(),
                    })
                }
            }
        }
        self.prev_sha = Some(sha.to_string());
        self.prev_post = link.ok().map(|l| l.post_sha256.to_string());
        self.offset += len;
    }

    /// Whether a record linked by `l` follows the line fed before it.
    fn follows(&self, l: &Link<'_>) -> bool {
        match l.prev_entry_sha256 {
            Some(claimed) => Some(claimed) == self.prev_sha.as_deref(),
            None => Some(l.pre_sha256) == self.prev_post.as_deref(),
        }
    }

    /// The join the lines fed make, as [`find_join`] finds it in the same
    /// bytes (`torn`: bytes followed the last line). `again` reads the
    /// transcript from its start, up to the break only.
    pub fn finish(self, torn: bool, again: &mut dyn BufRead) -> std::io::Result<Option<Join>> {
        let Some(b) = self.first_break.filter(|_| !torn && !self.impossible) else {
            return Ok(None);
        };
        let common = match b.claimed.as_deref() {
            None => unchained_prefix(&b, again)?,
            Some(claimed) => chained_prefix(&b, claimed, again)?,
        };
        Ok(common.map(|common| Join {
            common,
            second: b.offset,
            second_line: b.index + 1,
        }))
    }
}

/// The length of `P` for a break that chains onto `claimed`: up to the
/// first line before the one before the break whose sha256 it names.
fn chained_prefix(
    b: &Break,
    claimed: &str,
    again: &mut dyn BufRead,
) -> std::io::Result<Option<usize>> {
    let (mut buf, mut common) = (Vec::new(), 0);
    for _ in 0..b.index.saturating_sub(1) {
        buf.clear();
        if again.read_until(b'\n', &mut buf)? == 0 {
            break;
        }
        common += buf.len();
        if sha256_hex(&buf) == claimed {
            return Ok(Some(common));
        }
    }
    Ok(None)
}

/// The length of `P` for a chain-less break: up to the last line before
/// the one before the break whose record leaves the state the break
/// starts from; else empty when the transcript's first record starts
/// there too (or its first line is no record: nothing says otherwise).
/// None: the state comes from nowhere in the transcript, an edit that no
/// record explains rather than a join.
fn unchained_prefix(b: &Break, again: &mut dyn BufRead) -> std::io::Result<Option<usize>> {
    let (mut buf, mut read) = (Vec::new(), 0);
    let (mut common, mut starts_there) = (None, false);
    for index in 0..b.index {
        buf.clear();
        if again.read_until(b'\n', &mut buf)? == 0 {
            break;
        }
        read += buf.len();
        let rec = parse_record(index + 1, &buf).ok();
        if index == 0 {
            starts_there = rec.as_ref().is_none_or(|r| r.pre_sha256 == b.pre);
        }
        if index + 1 < b.index && rec.is_some_and(|r| r.post_sha256 == b.pre) {
            common = Some(read);
        }
    }
    Ok(common.or(starts_there.then_some(0)))
}

/// Rebases the second branch's records of the joined transcript `t` onto
/// the first's (see the module docs). `fallback_doc` is used when no record
/// was applied before the join; `find_doc` returns a document version by
/// sha256 (from history, say). The result's `transcript` keeps `P` and `X`
/// as its byte prefix, and its `doc` is what it replays to; conflicting ops
/// are in `conflicts` and left out.
pub fn unjoin(
    t: &[u8],
    join: Join,
    fallback_doc: Option<&str>,
    find_doc: &mut dyn FnMut(&str) -> Option<String>,
) -> Result<Reconciled, Unreconcilable> {
    let (prefix, first) = (&t[..join.common], &t[..join.second]);
    let mut second = prefix.to_vec();
    second.extend_from_slice(&t[join.second..]);
    // The state `P` ends at is usually a committed version; when it is not,
    // `P` leads there from the state it starts at.
    let common = crate::lineage::records(prefix)
        .map_err(|v| Unreconcilable::new(format!("the common records cannot be read ({v})")))?;
    let mut find = |sha: &str| {
        find_doc(sha).or_else(|| {
            let first = common
                .iter()
                .find(|r| r.patch_result == PatchResult::Applied)?;
            let start = first.pre_sha256.as_str();
            let doc = if start == EMPTY_SHA256 {
                String::new()
            } else {
                find_doc(start).or_else(|| {
                    fallback_doc
                        .filter(|d| sha256_hex(d.as_bytes()) == start)
                        .map(str::to_string)
                })?
            };
            let end = replay_records(&doc, &common).ok()?;
            (sha256_hex(end.as_bytes()) == sha).then_some(end)
        })
    };
    reconcile_transcripts(first, &second, Some(prefix), fallback_doc, &mut find)
}

/// The advice for the joined transcript of the document `doc`, which does
/// not replay because of `join`.
pub fn advice(doc: &str, join: Join) -> String {
    format!(
        "its records from line {} on are another branch's, joined after this branch's (a merge without noma's merge driver kept both sides): run `noma repair {}`, which rebases them as the driver would have",
        join.second_line,
        noma_core::diag::shell_word(doc)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{body, extend, find, BASE};
    use noma_core::transcript::replay;

    /// `P` (one record), then `X` and `Y` from the state `P` ends at.
    fn joined() -> (Vec<u8>, Vec<u8>, usize) {
        let (d1, p) = extend(BASE, b"", &[body("a", "A1")]);
        let (_, px) = extend(&d1, &p, &[body("a", "A2"), body("a", "A3")]);
        let (_, py) = extend(&d1, &p, &[body("b", "B1")]);
        let mut t = px.clone();
        t.extend_from_slice(&py[p.len()..]);
        (t, px, p.len())
    }

    #[test]
    fn a_union_of_two_branches_is_found_and_made_linear() {
        let (t, px, common) = joined();
        let join = find_join(&t).expect("a join");
        assert_eq!((join.common, join.second), (common, px.len()));
        assert_eq!(join.second_line, 4);
        let r = unjoin(&t, join, None, &mut find).unwrap();
        assert!(r.conflicts.is_empty(), "{:?}", r.conflicts);
        assert!(r.transcript.starts_with(&px));
        assert_eq!(r.rebased.len(), 1);
        assert!(r.doc.contains("A3") && r.doc.contains("B1"), "{}", r.doc);
        let rep = replay::replay(&r.transcript, Some(BASE), &r.doc);
        assert!(rep.divergence.is_none(), "{:?}", rep.divergence);
        // Deterministic: the hook recomputes what `noma repair` wrote.
        let again = unjoin(&t, join, None, &mut find).unwrap();
        assert_eq!(again.transcript, r.transcript);
        // Linear transcripts, and the linearized one, have no join.
        assert_eq!(find_join(&px), None);
        assert_eq!(find_join(&r.transcript), None);
    }

    #[test]
    fn separate_starts_and_edited_lines() {
        // Two branches that each started the transcript: `P` is empty.
        let (_, x) = extend(BASE, b"", &[body("a", "A1")]);
        let (_, y) = extend(BASE, b"", &[body("b", "B1")]);
        let t = [x.clone(), y].concat();
        let join = find_join(&t).expect("a join");
        assert_eq!((join.common, join.second), (0, x.len()));
        let r = unjoin(&t, join, Some(BASE), &mut find).unwrap();
        assert!(r.doc.contains("A1") && r.doc.contains("B1"), "{}", r.doc);
        // A record edited in place breaks the chain once, onto nothing
        // earlier: not a join.
        let (_, t) = extend(
            BASE,
            b"",
            &[body("a", "A1"), body("b", "B1"), body("a", "A2")],
        );
        let edited = String::from_utf8(t).unwrap().replacen("B1", "BX", 1);
        assert_eq!(find_join(edited.as_bytes()), None);
        // Two joins (three branches): not this shape.
        let (t, px, common) = joined();
        let three = [t.clone(), t[common..px.len()].to_vec()].concat();
        assert_eq!(find_join(&three), None);
    }

    /// `t` with no `prev_entry_sha256` on any line, as the reference's
    /// writers leave it.
    fn chainless(t: &[u8]) -> Vec<u8> {
        split_lines(t)
            .0
            .iter()
            .map(|l| {
                let mut v: serde_json::Value = serde_json::from_slice(l.raw).unwrap();
                v.as_object_mut().unwrap().remove("prev_entry_sha256");
                format!("{v}\n").into_bytes()
            })
            .collect::<Vec<_>>()
            .concat()
    }

    #[test]
    fn chain_less_records_follow_by_state() {
        // A linear chain-less transcript is no join.
        let (_, t) = extend(BASE, b"", &[body("a", "A1"), body("b", "B1")]);
        assert_eq!(find_join(&chainless(&t)), None);
        // Two branches' chain-less records joined: `P` ends where the
        // second branch's first record starts from.
        let (t, px, common) = joined();
        let bare = chainless(&t);
        let bare_px = chainless(&px);
        let join = find_join(&bare).expect("a join");
        assert_eq!(join.second, bare_px.len());
        assert_eq!(join.common, chainless(&t[..common]).len());
        let r = unjoin(&bare, join, None, &mut find).unwrap();
        assert!(r.doc.contains("A3") && r.doc.contains("B1"), "{}", r.doc);
        // A record after an edit that no record explains: not a join.
        let (d1, p) = extend(BASE, b"", &[body("a", "A1")]);
        let (_, q) = extend(&d1.replace("beta", "hand"), b"", &[body("a", "A2")]);
        assert_eq!(find_join(&chainless(&[p, q].concat())), None);
    }

    /// [`JoinScan`] over the lines of `t`, as a streaming reader feeds it.
    fn scanned(t: &[u8]) -> Option<Join> {
        let (lines, torn) = split_lines(t);
        let mut scan = JoinScan::default();
        for l in &lines {
            let record = parse_record(l.number, l.raw);
            let link = record.as_ref().map(Link::of).map_err(|_| ());
            scan.line(l.raw.len(), &sha256_hex(l.raw), link);
        }
        scan.finish(torn.is_some(), &mut &t[..]).unwrap()
    }

    /// The line-at-a-time scan finds the join [`find_join`] finds, over
    /// transcripts made of linear runs, joins of two and three branches,
    /// separate starts, records edited in place, unchained, duplicated or
    /// unreadable lines and torn tails.
    #[test]
    fn the_join_scan_finds_what_find_join_finds() {
        use proptest::prelude::*;
        let (d1, p) = extend(BASE, b"", &[body("a", "A1"), body("b", "B1")]);
        let (_, px) = extend(&d1, &p, &[body("a", "A2"), body("a", "A3")]);
        let (_, py) = extend(&d1, &p, &[body("b", "B2"), body("b", "B3")]);
        let (_, fresh) = extend(BASE, b"", &[body("b", "F1")]);
        let pieces: Vec<Vec<u8>> = [p.clone(), px[p.len()..].to_vec(), py[p.len()..].to_vec()]
            .into_iter()
            .chain([fresh, b"{not json}\n".to_vec()])
            .chain(split_lines(&px).0.iter().map(|l| l.raw.to_vec()))
            .collect();
        let kinds = [std::cell::Cell::new(0), std::cell::Cell::new(0)];
        // Half the cases start from the join of both branches, so each run
        // checks joins as well as the random orders (which alone made one
        // rarely enough that a run of 256 cases could miss it).
        let orders = prop_oneof![
            Just(vec![0, 1, 2]),
            proptest::collection::vec(0..pieces.len(), 0..5)
        ];
        proptest!(|(order in orders,
                    edit in proptest::option::of(0usize..12),
                    torn in any::<bool>())| {
            let mut t: Vec<u8> = order.iter().flat_map(|&i| pieces[i].clone()).collect();
            if let Some(at) = edit {
                let text = String::from_utf8(t).unwrap();
                t = match text.match_indices("A").nth(at) {
                    Some((i, _)) => format!("{}X{}", &text[..i], &text[i + 1..]),
                    None => text,
                }
                .into_bytes();
            }
            if torn {
                t.extend_from_slice(b"{\"op_id\"");
            }
            let want = find_join(&t);
            let k = &kinds[usize::from(want.is_some())];
            k.set(k.get() + 1);
            prop_assert_eq!(scanned(&t), want);
        });
        assert!(kinds.iter().all(|k| k.get() > 0), "{kinds:?}");
    }
}

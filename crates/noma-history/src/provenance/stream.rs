//! `noma replay --signatures` without holding the history: the statuses
//! [`super::check::check_worktree`] gives, handed on a chunk of records at
//! a time, in line order.
//!
//! The transcript is streamed once to index it (each line's offset and
//! the fingerprint of the op it stands for) and to learn that every line
//! is a record (else there is no status, as in the whole check); the
//! sidecar is streamed once to check that it parses and to index its
//! signatures by op_id fingerprint (approvals, which name other records,
//! are kept whole). Each chunk of records is then read again by offset
//! with the few records its statuses depend on (every record standing
//! for one of its ops, and those named by an approval of one of them,
//! see [`super::check::check_worktree_shown`]) and only those ops'
//! signatures, and verified as the whole check does
//! ([`super::verify::verify_where`]). An approval is judged once, in the
//! first chunk that needs it; later chunks reuse its verdict and do not
//! read the records it names again.
//! A fingerprint is only a candidate: every record and signature it finds
//! is checked by the op_id itself.

use std::collections::HashSet;
use std::fs::File;
use std::io::{BufRead, Read, Seek, SeekFrom};
use std::path::Path;

use super::adoption::PrePolicy;
use super::check::{sidecar_problem, worktree_trust};
use super::Error;

/// Why the caller's step over the statuses stopped them.
pub type Stop = Box<dyn std::error::Error + Send + Sync>;
use noma_core::transcript::{parse_record, Entry};
use noma_provenance::canonical::Lineage;
use noma_provenance::canonical::{fingerprint, origin_op_id};
use noma_provenance::sidecar::{sidecar_path, Approval, Sidecar, SidecarEntry, SidecarError};
use noma_provenance::signers::SignersWarning;
use noma_provenance::verify::{verify_judged, Part, Problem, RecordStatus, Trust, Verdicts};
use noma_store::engine::default_transcript_path;

/// Records verified, and their statuses handed on, at a time.
pub const CHUNK: usize = 1024;

/// Where a line is in its file.
#[derive(Debug, Clone, Copy)]
struct Span {
    offset: u64,
    len: u64,
}

/// A document's work-tree transcript and sidecar, indexed for
/// [`WorktreeStream::statuses`].
pub struct WorktreeStream<'d> {
    trust: Trust,
    /// Where the policy and the allowed signers were read (as
    /// [`super::check::WorktreeReport::trust`] names it).
    pub trust_source: String,
    /// None when a line is no record (then no status).
    records: Option<Records>,
    side: Result<SideIndex, Problem>,
    pre: PrePolicy<'d>,
    /// The approvals judged so far, by their index in the sidecar.
    verdicts: Verdicts,
}

/// The transcript, indexed.
struct Records {
    file: File,
    /// Every line.
    lines: Vec<Span>,
    /// (fingerprint of the op each line stands for, its index), sorted.
    by_origin: Vec<(u64, usize)>,
    /// The document's lineage (its first record), read with the first
    /// chunk.
    lineage: Option<Lineage>,
}

impl<'d> WorktreeStream<'d> {
    /// Reads and indexes `doc`'s transcript (`transcript`, or the document
    /// path plus `.patches`) and its sidecar, trusting the work tree's
    /// policy and allowed signers. Err: what cannot be read.
    pub fn open(doc: &'d Path, transcript: Option<&Path>) -> Result<WorktreeStream<'d>, Error> {
        let tpath = transcript
            .map(Path::to_path_buf)
            .unwrap_or_else(|| default_transcript_path(doc));
        let mut reader = noma_store::fsio::open_lines(&tpath).map_err(Error::io(&tpath))?;
        let indexed = index_lines(&mut reader).map_err(Error::io(&tpath))?;
        let (trust, root) = worktree_trust(doc)?;
        let side = SideIndex::read(&sidecar_path(doc))?;
        let file = reader.into_inner();
        Ok(WorktreeStream {
            trust_source: super::check::trust_source(&root),
            trust,
            records: indexed.map(|(lines, by_origin)| Records {
                file,
                lines,
                by_origin,
                lineage: None,
            }),
            side,
            pre: PrePolicy::new(doc),
            verdicts: Verdicts::default(),
        })
    }

    /// The sidecar's problem, when it does not parse (then no record has
    /// a status).
    pub fn sidecar(&self) -> Option<&Problem> {
        self.side.as_ref().err()
    }

    /// What the allowed-signers file's owner should know.
    pub fn warnings(&self) -> Vec<SignersWarning> {
        self.trust.warnings()
    }

    /// Hands each record's status to `each`, in line order, verifying
    /// `chunk` records at a time. Err: a record that cannot be read again
    /// as it was indexed, or what `each` returned.
    pub fn statuses(
        &mut self,
        chunk: usize,
        each: &mut dyn FnMut(RecordStatus) -> Result<(), Stop>,
    ) -> Result<(), Error> {
        let WorktreeStream {
            trust,
            records,
            side,
            pre,
            verdicts,
            ..
        } = self;
        let (Some(records), Ok(side)) = (records, side) else {
            return Ok(());
        };
        let n = records.lines.len();
        let mut start = 0;
        while start < n {
            let end = (start + chunk.max(1)).min(n);
            let (mut statuses, origins) =
                records.chunk_statuses(trust, side, verdicts, start..end)?;
            pre.mark(&mut statuses, || origins);
            for s in statuses {
                each(s).map_err(Error::Stopped)?;
            }
            start = end;
        }
        Ok(())
    }
}

impl Records {
    /// The statuses of the records on the lines `range` (0-based), and the
    /// op each stands for.
    #[allow(clippy::type_complexity)]
    fn chunk_statuses(
        &mut self,
        trust: &Trust,
        side: &SideIndex,
        verdicts: &mut Verdicts,
        range: std::ops::Range<usize>,
    ) -> Result<(Vec<RecordStatus>, Vec<Option<String>>), Error> {
        if self.lineage.is_none() && !self.lines.is_empty() {
            let first = read_run(&mut self.file, &self.lines, 0..1)?;
            self.lineage = first.first().map(|e| Lineage::of(&e.record));
        }
        let shown = read_run(&mut self.file, &self.lines, range.clone())?;
        let origins: Vec<Option<String>> = (shown.iter())
            .map(|e| Some(origin_op_id(&e.record).to_string()))
            .collect();
        let shown_ops: HashSet<&str> = origins.iter().flatten().map(String::as_str).collect();
        let naming = side.approvals_naming(&shown_ops);
        let mut ops: HashSet<&str> = shown_ops.clone();
        let unjudged = naming.iter().filter(|k| !verdicts.contains_key(k));
        ops.extend(
            unjudged.flat_map(|&k| side.approvals[k].1.body.op_ids.iter().map(String::as_str)),
        );
        let mut entries = self.related(&ops, &range)?;
        let chunk_side = Sidecar {
            signatures: side.signatures_of(&shown_ops)?,
            approvals: naming.iter().map(|&k| side.approvals[k].clone()).collect(),
        };
        // The verdicts by the chunk's approval indices, and back.
        let mut local: Verdicts = (naming.iter().enumerate())
            .filter_map(|(j, k)| Some((j, verdicts.get(k)?.clone())))
            .collect();
        entries.extend(shown);
        entries.sort_by_key(|e| e.line);
        let (first, last) = (range.start + 1, range.end);
        let in_range = |_: usize, e: &Entry| (first..=last).contains(&e.line);
        let part = Part {
            lineage: self.lineage.as_ref(),
            in_range: &in_range,
            chunk: CHUNK,
        };
        let statuses = verify_judged(trust, &entries, &chunk_side, &part, &mut local);
        verdicts.extend(local.into_iter().map(|(j, v)| (naming[j], v)));
        Ok((statuses, origins))
    }

    /// The records outside `range` that stand for one of `ops`, read by
    /// offset.
    fn related(
        &mut self,
        ops: &HashSet<&str>,
        range: &std::ops::Range<usize>,
    ) -> Result<Vec<Entry>, Error> {
        let mut wanted: Vec<usize> = Vec::new();
        for op in ops {
            let fp = fingerprint(op);
            let from = self.by_origin.partition_point(|&(f, _)| f < fp);
            let same = self.by_origin[from..].iter().take_while(|&&(f, _)| f == fp);
            wanted.extend(same.map(|&(_, i)| i).filter(|i| !range.contains(i)));
        }
        // Two ops may share a fingerprint: each line is read once.
        wanted.sort_unstable();
        wanted.dedup();
        let mut out = Vec::with_capacity(wanted.len());
        for i in wanted {
            let e = read_run(&mut self.file, &self.lines, i..i + 1)?;
            out.extend(
                e.into_iter()
                    .filter(|e| ops.contains(origin_op_id(&e.record))),
            );
        }
        Ok(out)
    }
}

/// Each complete line's span and the fingerprints of the ops the lines
/// stand for (sorted, with the line index); None when a line is no
/// record.
#[allow(clippy::type_complexity)]
fn index_lines(
    reader: &mut impl BufRead,
) -> std::io::Result<Option<(Vec<Span>, Vec<(u64, usize)>)>> {
    let (mut raw, mut lines, mut by_origin) = (Vec::new(), Vec::new(), Vec::new());
    let mut offset = 0u64;
    loop {
        raw.clear();
        let n = reader.read_until(b'\n', &mut raw)?;
        // The end, or a torn last line: no record (as the whole check
        // splits the bytes).
        if n == 0 || raw.last() != Some(&b'\n') {
            break;
        }
        let Ok(rec) = parse_record(lines.len() + 1, &raw) else {
            return Ok(None);
        };
        by_origin.push((fingerprint(origin_op_id(&rec)), lines.len()));
        lines.push(Span {
            offset,
            len: n as u64,
        });
        offset += n as u64;
    }
    by_origin.sort_unstable();
    Ok(Some((lines, by_origin)))
}

/// The records on the consecutive lines `range` (0-based), read in one
/// piece by offset.
fn read_run(
    file: &mut File,
    lines: &[Span],
    range: std::ops::Range<usize>,
) -> Result<Vec<Entry>, Error> {
    let changed = || Error::Changed("transcript");
    let spans = lines.get(range.clone()).ok_or_else(changed)?;
    let (Some(a), Some(b)) = (spans.first(), spans.last()) else {
        return Ok(Vec::new());
    };
    let mut bytes = vec![0u8; (b.offset + b.len - a.offset) as usize];
    file.seek(SeekFrom::Start(a.offset))
        .and_then(|_| file.read_exact(&mut bytes))
        .map_err(|error| Error::Reread {
            what: "transcript",
            error,
        })?;
    let mut out = Vec::with_capacity(spans.len());
    for (i, s) in range.zip(spans) {
        let at = (s.offset - a.offset) as usize;
        let raw = &bytes[at..at + s.len as usize];
        let record = parse_record(i + 1, raw).map_err(|_| changed())?;
        out.push(Entry {
            line: i + 1,
            offset: s.offset as usize,
            line_sha256: String::new(),
            record,
        });
    }
    Ok(out)
}

/// The sidecar, checked whole and indexed: signatures by the fingerprint
/// of their op_id, approvals kept (with the ops they name).
struct SideIndex {
    file: Option<File>,
    /// (fingerprint of the op_id, 1-based line, span), sorted.
    signatures: Vec<(u64, usize, Span)>,
    approvals: Vec<(usize, Approval)>,
    /// The approvals (indices) naming each op_id, in sidecar order.
    naming: std::collections::HashMap<String, Vec<usize>>,
}

impl SideIndex {
    /// The sidecar at `path` (absent: empty); Ok(Err) when it does not
    /// parse, as [`Sidecar::parse`] would say.
    fn read(path: &Path) -> Result<Result<SideIndex, Problem>, Error> {
        let mut index = SideIndex {
            file: None,
            signatures: Vec::new(),
            approvals: Vec::new(),
            naming: Default::default(),
        };
        let mut reader = match noma_store::fsio::open_lines(path) {
            Ok(r) => r,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Ok(index)),
            Err(e) => return Err(Error::io(path)(e)),
        };
        match index.scan(&mut reader) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Ok(Err(sidecar_problem(e))),
            Err(e) => return Err(Error::io(path)(e)),
        }
        index
            .signatures
            .sort_unstable_by_key(|&(fp, line, _)| (fp, line));
        index.file = Some(reader.into_inner());
        Ok(Ok(index))
    }

    /// Reads every line as [`Sidecar::parse`] does (a repeated approval
    /// line counts once; repeated signature lines are dropped when read
    /// again), indexing them.
    fn scan(&mut self, reader: &mut impl BufRead) -> std::io::Result<Result<(), SidecarError>> {
        let (mut raw, mut offset, mut number) = (Vec::new(), 0u64, 0usize);
        let mut seen: HashSet<Vec<u8>> = HashSet::new();
        loop {
            raw.clear();
            let n = reader.read_until(b'\n', &mut raw)?;
            if n == 0 {
                return Ok(Ok(()));
            }
            number += 1;
            let span = Span {
                offset,
                len: n as u64,
            };
            offset += n as u64;
            let body = raw.strip_suffix(b"\n").unwrap_or(&raw);
            let body = body.strip_suffix(b"\r").unwrap_or(body);
            if body.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let torn = raw.last() != Some(&b'\n');
            let entry = match serde_json::from_slice::<SidecarEntry>(body) {
                Ok(e) => e,
                // A torn last line that is no entry is skipped.
                Err(_) if torn => return Ok(Ok(())),
                Err(e) => {
                    return Ok(Err(SidecarError {
                        line: number,
                        message: e.to_string(),
                    }))
                }
            };
            match entry {
                SidecarEntry::Signature(s) => {
                    self.signatures.push((fingerprint(&s.op_id), number, span))
                }
                SidecarEntry::Approval(a) => {
                    if !seen.insert(body.to_vec()) {
                        continue;
                    }
                    let k = self.approvals.len();
                    for id in &a.body.op_ids {
                        self.naming.entry(id.clone()).or_default().push(k);
                    }
                    self.approvals.push((number, a));
                }
            }
        }
    }

    /// The approvals (indices) naming one of `ops`, in sidecar order.
    fn approvals_naming(&self, ops: &HashSet<&str>) -> Vec<usize> {
        let mut ks: Vec<usize> = (ops.iter())
            .filter_map(|op| self.naming.get(*op))
            .flatten()
            .copied()
            .collect();
        ks.sort_unstable();
        ks.dedup();
        ks
    }

    /// The signatures of `ops`, in sidecar order, each line once.
    fn signatures_of(
        &self,
        ops: &HashSet<&str>,
    ) -> Result<Vec<(usize, noma_provenance::sidecar::RecordSignature)>, Error> {
        let mut found: Vec<(usize, Span)> = Vec::new();
        for op in ops {
            let fp = fingerprint(op);
            let from = self.signatures.partition_point(|&(f, _, _)| f < fp);
            let same = self.signatures[from..].iter().take_while(|s| s.0 == fp);
            found.extend(same.map(|&(_, line, span)| (line, span)));
        }
        found.sort_unstable_by_key(|&(line, _)| line);
        let Some(file) = self.file.as_ref().filter(|_| !found.is_empty()) else {
            return Ok(Vec::new());
        };
        let changed = |_| Error::Changed("sidecar");
        let mut out = Vec::with_capacity(found.len());
        let mut seen: HashSet<Vec<u8>> = HashSet::new();
        // Lines next to each other (a writer appends a request's
        // signatures together) are read in one piece.
        let mut i = 0;
        while i < found.len() {
            let mut j = i + 1;
            while j < found.len() && found[j].1.offset == found[j - 1].1.offset + found[j - 1].1.len
            {
                j += 1;
            }
            let start = found[i].1.offset;
            let mut bytes =
                vec![0u8; (found[j - 1].1.offset + found[j - 1].1.len - start) as usize];
            let mut f = file;
            f.seek(SeekFrom::Start(start))
                .and_then(|_| f.read_exact(&mut bytes))
                .map_err(|error| Error::Reread {
                    what: "sidecar",
                    error,
                })?;
            for &(line, span) in &found[i..j] {
                let at = (span.offset - start) as usize;
                let raw = &bytes[at..at + span.len as usize];
                let body = raw.strip_suffix(b"\n").unwrap_or(raw);
                let body = body.strip_suffix(b"\r").unwrap_or(body);
                if !seen.insert(body.to_vec()) {
                    continue;
                }
                match serde_json::from_slice::<SidecarEntry>(body).map_err(changed)? {
                    SidecarEntry::Signature(s) if ops.contains(s.op_id.as_str()) => {
                        out.push((line, s))
                    }
                    _ => {}
                }
            }
            i = j;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests;

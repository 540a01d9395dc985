//! The warm PR check with provenance on (decision
//! `signed-check-from-a-remembered-base`): HEAD's transcript and sidecar
//! are each read once, the merge base's not at all, and only the branch's
//! records are verified.
//!
//! The whole check ([`crate::provenance::check::branch_check`]) treats the
//! merge base's records as history: it verifies the records HEAD adds and
//! those whose sidecar lines the branch changed. What the merge base's
//! part adds to its report is therefore nothing when (a) every base record
//! is history (no two carry the same op: a second would stay in range),
//! (b) HEAD's sidecar is the merge base's plus appended lines, (c) no
//! appended line names a base record, and (d) no base line (transcript or
//! sidecar) names a branch record. A whole check that ran against this
//! merge base remembers (a), the base sidecar's digest and the
//! fingerprints of every op_id its lines name (a "signed-base" row, beside
//! the transcript's checkpoint row, [`super::super::proved`]); a warm check
//! proves (b)-(d) from HEAD's bytes and the two rows, and any doubt (a
//! fingerprint hit, a line that does not parse) hands over to the whole
//! check. The trust (`.noma/config.yml`, `.noma/allowed_signers`) must be
//! the same blobs at the merge base, the base revision and HEAD, so
//! nothing the row stands for was judged under other settings.

use std::io::{self, Read};

use super::super::checkpoint::{self, TranscriptIds};
use super::super::proved::{Builder, Proved, Tee};
use super::{Appended, Branch, DocFiles};
use crate::cache::BlockCache;
use crate::git::stream::BlobStream;
use crate::git::Oid;
use crate::provenance::check::{signer_warnings, trust_from, BranchCheck, SidecarsRead};
use noma_core::doc::hash::sha256_hex;
use noma_core::transcript::replay;
use noma_core::transcript::replay::op_id_fingerprint;
use noma_core::transcript::{parse_record, split_lines, transcript_path, Entry};
use noma_provenance::canonical::origin_op_id;
use noma_provenance::sidecar::{sidecar_rel, Sidecar};
use noma_provenance::verify::verify_part;
use noma_provenance::ALLOWED_SIGNERS_PATH;

/// The sidecar key of a merge base without a sidecar.
const NO_SIDECAR: &[u8] = b"none";

/// The row's encoding version, its first byte.
const VERSION: u8 = 1;

/// What a whole check learned about a merge base's signed history: its
/// sidecar's length and BLAKE3 digest, and the fingerprints of the op_ids
/// the sidecar's lines name. Written only when every line of the merge
/// base's transcript is a record and no two stand for the same op, and the
/// sidecar parses and ends with a whole line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SignedBase {
    len: u64,
    digest: [u8; 32],
    named: Vec<u64>,
}

impl SignedBase {
    /// The row for the merge base's transcript and sidecar bytes; None
    /// when the whole check must always run for them. `replayed`: replay
    /// already parsed every transcript line as a record, so a plain line
    /// gives its op_id without a second parse ([`plain_origin`]).
    /// `extended`: the parse of a sidecar whose first bytes are `sidecar`,
    /// whose first lines are then its entries, parsed already.
    pub(super) fn build(
        transcript: &[u8],
        sidecar: &[u8],
        replayed: bool,
        extended: Option<&Sidecar>,
    ) -> Option<SignedBase> {
        let (lines, torn) = split_lines(transcript);
        if torn.is_some() {
            return None;
        }
        let mut origins = foldhash::HashSet::default();
        origins.reserve(lines.len());
        for l in lines {
            let origin = match replayed.then(|| plain_origin(l.raw)).flatten() {
                Some(op_id) => op_id_fingerprint(op_id),
                None => op_id_fingerprint(origin_op_id(&parse_record(l.number, l.raw).ok()?)),
            };
            // A 64-bit collision only costs the row.
            if !origins.insert(origin) {
                return None;
            }
        }
        if !(sidecar.is_empty() || sidecar.ends_with(b"\n")) {
            return None;
        }
        let mut named = match extended {
            // Every line of `sidecar` is one of the parse's first lines,
            // and parsed: each line the parse skipped (blank, or repeated)
            // is skipped by a parse of `sidecar` alone too.
            Some(parsed) => named_op_ids(parsed, memchr::memchr_iter(b'\n', sidecar).count()),
            None => named_op_ids(&Sidecar::parse(sidecar).ok()?, usize::MAX),
        };
        named.sort_unstable();
        named.dedup();
        Some(SignedBase {
            len: sidecar.len() as u64,
            digest: *blake3::hash(sidecar).as_bytes(),
            named,
        })
    }

    /// Whether a line of the merge base's sidecar may name `op_id`.
    fn may_name(&self, op_id: &str) -> bool {
        self.named.binary_search(&op_id_fingerprint(op_id)).is_ok()
    }

    /// The bytes `head` appends to the remembered sidecar, read once;
    /// None when its first bytes are not the remembered ones.
    fn appended(&self, head: &mut dyn Read) -> io::Result<Option<Vec<u8>>> {
        // Hashed as it streams: the merge base's part is never held.
        // In BLAKE3's own large reads (io::copy's 8 KiB left its wide
        // SIMD path idle: a third of the hashing time).
        let mut hasher = blake3::Hasher::new();
        let mut base = head.take(self.len);
        hasher.update_reader(&mut base)?;
        let copied = self.len - base.limit();
        if copied != self.len || *hasher.finalize().as_bytes() != self.digest {
            return Ok(None);
        }
        let mut rest = Vec::new();
        head.read_to_end(&mut rest)?;
        Ok(Some(rest))
    }

    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(41 + 8 * self.named.len());
        out.push(VERSION);
        out.extend_from_slice(&self.len.to_le_bytes());
        out.extend_from_slice(&self.digest);
        for f in &self.named {
            out.extend_from_slice(&f.to_le_bytes());
        }
        out
    }

    fn decode(bytes: &[u8]) -> Option<SignedBase> {
        let (&version, rest) = bytes.split_first()?;
        if version != VERSION || rest.len() < 40 || (rest.len() - 40) % 8 != 0 {
            return None;
        }
        let u64_at = |b: &[u8]| b.try_into().ok().map(u64::from_le_bytes);
        let named: Vec<u64> = rest[40..].chunks_exact(8).filter_map(u64_at).collect();
        named.windows(2).all(|w| w[0] < w[1]).then_some(())?;
        Some(SignedBase {
            len: u64_at(&rest[..8])?,
            digest: rest[8..40].try_into().ok()?,
            named,
        })
    }
}

/// The op_id of a record line (one that parses as a record) read without
/// parsing it, when that is certain: the line has one `op_id"` (a key: a
/// quote inside a string is escaped), in the plain `"op_id":"…"` form
/// without escapes, and no merge copy's reason (whose origin is its
/// parent's op). None: parse it.
fn plain_origin(line: &[u8]) -> Option<&str> {
    const KEY: &[u8] = b"op_id\"";
    let finder = memchr::memmem::Finder::new(KEY);
    let mut keys = finder.find_iter(line);
    let at = keys.next().filter(|&at| at > 0 && line[at - 1] == b'"')?;
    if keys.next().is_some()
        || memchr::memmem::find(line, b"reconciled: op ").is_some()
        || memchr::memmem::find(line, b"\\u").is_some()
    {
        return None;
    }
    let value = line[at + KEY.len()..].strip_prefix(b":\"")?;
    let value = &value[..memchr::memchr(b'"', value)?];
    if value.contains(&b'\\') {
        return None;
    }
    std::str::from_utf8(value).ok()
}

/// The fingerprints of the op_ids a sidecar's first `lines` lines name: a
/// signature its record, an approval every record it approves.
fn named_op_ids(side: &Sidecar, lines: usize) -> Vec<u64> {
    let signed = (side.signatures.iter())
        .filter(|(n, _)| *n <= lines)
        .map(|(_, s)| s.op_id.as_str());
    let approved = (side.approvals.iter())
        .filter(|(n, _)| *n <= lines)
        .flat_map(|(_, a)| a.body.op_ids.iter().map(String::as_str));
    signed.chain(approved).map(op_id_fingerprint).collect()
}

/// The cache key of a merge base's transcript and sidecar blobs.
fn key(transcript: Oid, sidecar: Option<Oid>) -> (Vec<u8>, Vec<u8>) {
    let side = sidecar.map_or(NO_SIDECAR.to_vec(), |s| s.as_bytes().to_vec());
    (transcript.as_bytes().to_vec(), side)
}

impl Branch<'_> {
    /// The merge base's, the base revision's and HEAD's trust settings are
    /// the same blobs.
    fn trust_unchanged(&self) -> bool {
        [noma_provenance::config::CONFIG_PATH, ALLOWED_SIGNERS_PATH]
            .iter()
            .all(|p| {
                let id = |c| self.repo.blob_id_at(c, p).ok();
                let mb = id(self.merge_base);
                mb.is_some() && mb == id(self.base_tip) && mb == id(self.head)
            })
    }

    /// [`Branch::appended_records`] with provenance on: the branch's record
    /// count and its records' check, when the base revision left the
    /// transcript alone and the module's conditions hold. The first check
    /// against a merge base returns None: the whole check that follows
    /// remembers the transcript's checkpoint and the sidecar.
    pub(super) fn signed_appended(
        &self,
        [path, old]: [&str; 2],
        mb_doc: &str,
        head_doc: &str,
    ) -> Option<Appended> {
        let cache = self.cache?;
        if path != old || !self.trust_unchanged() {
            return None;
        }
        let id = |c, p: &str| self.repo.blob_id_at(c, p).ok().flatten();
        let (tpath, spath) = (transcript_path(path), sidecar_rel(path));
        let ids = TranscriptIds {
            merge_base: id(self.merge_base, &tpath)?,
            head: id(self.head, &tpath)?,
            base: id(self.base_tip, &tpath)?,
        };
        if ids.base != ids.merge_base {
            return None;
        }
        let (t, s) = key(ids.merge_base, id(self.merge_base, &spath));
        let row = cache
            .signed_base_known(&t, &s)
            .and_then(|b| SignedBase::decode(&b));
        let proved = checkpoint::remembered(Some(cache), ids.merge_base, mb_doc);
        // Cold: the whole check that follows writes both rows from its own
        // replay ([`Branch::remember_signed_base`]), not a second one here.
        let (Some(row), Some(proved)) = (row, proved) else {
            return None;
        };
        let held = |op: &str| proved.may_hold(op) || row.may_name(op);
        let side = match id(self.head, &spath) {
            Some(h) => Some(self.repo.blob_stream(h).ok()?),
            None if row.len == 0 => None,
            None => return None,
        };
        let appended = |side: Option<BlobStream>| match side {
            Some(mut s) => row.appended(&mut s).ok().flatten(),
            None => Some(Vec::new()),
        };
        // A sidecar too big to have been read whole is hashed on another
        // thread while this one reads the transcript: the two reads are
        // the whole cost of a large history's check.
        let ((count, entries), appended) = std::thread::scope(|s| {
            let (side, reading) = match side {
                Some(stream) if !stream.is_whole() => {
                    (None, Some(s.spawn(|| appended(Some(stream)))))
                }
                side => (side, None),
            };
            let branch = self.branch_entries(&proved, ids.head, [mb_doc, head_doc], &held);
            let appended = match reading {
                Some(h) => h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
                None => appended(side),
            };
            Some((branch?, appended?))
        })?;
        let side = Sidecar::parse(&appended).ok()?;
        if (side.signatures.iter().map(|(_, s)| &s.op_id))
            .chain(side.approvals.iter().flat_map(|(_, a)| &a.body.op_ids))
            .any(|op| held(op))
        {
            return None; // the branch re-signs or re-approves a base record
        }
        // The tail starts after the first record, which names the
        // document's lineage.
        let first = self.repo.blob_stream(ids.head).ok().and_then(|s| {
            let mut r = std::io::BufReader::new(s);
            noma_core::transcript::genesis::first_record_in(&mut r)
                .ok()
                .flatten()
        });
        let lineage = first.map(|r| noma_provenance::canonical::Lineage::of(&r));
        let check = self.judge(&tpath, (lineage.as_ref(), &entries), &side)?;
        Some(Appended::Signed(count, Box::new(check)))
    }

    /// The branch's records in HEAD's transcript `head` (their count and
    /// entries), when it extends the proved history `proved`, they replay
    /// from `mb_doc` to `head_doc`, and none (nor its parent) may be one
    /// `held` names.
    fn branch_entries(
        &self,
        proved: &Proved,
        head: Oid,
        [mb_doc, head_doc]: [&str; 2],
        held: &dyn Fn(&str) -> bool,
    ) -> Option<(usize, Vec<Entry>)> {
        let ext = proved
            .extension_of(&mut self.repo.blob_stream(head).ok()?)
            .ok()??;
        let lines = checkpoint::tail_replays(&ext, [mb_doc, head_doc])?;
        let mut entries = Vec::with_capacity(lines.len());
        for l in &lines {
            let record = parse_record(l.number, l.raw).ok()?;
            let ops = [Some(record.op_id.as_str()), record.parent_op_id.as_deref()];
            if ops.into_iter().flatten().any(held) {
                return None; // a base line may name it: the whole check says what that means
            }
            entries.push(Entry {
                line: ext.lines + l.number,
                offset: usize::try_from(proved.len).ok()? + l.offset,
                line_sha256: String::new(),
                record,
            });
        }
        Some((lines.len(), entries))
    }

    /// The branch's records `entries` verified against the lines HEAD's
    /// sidecar appends (`side`), trusting the base revision, as
    /// [`crate::provenance::check::branch_check`] reports them. None when
    /// the trust cannot be read: the whole check names that.
    fn judge(
        &self,
        tpath: &str,
        (lineage, entries): (Option<&noma_provenance::canonical::Lineage>, &[Entry]),
        side: &Sidecar,
    ) -> Option<BranchCheck> {
        let blob = |p: &str| self.repo.blob_at(self.base_tip, p).ok().flatten();
        let mut trust = trust_from(
            blob(noma_provenance::config::CONFIG_PATH).as_deref(),
            || blob(ALLOWED_SIGNERS_PATH),
        )
        .ok()??;
        // The check's own clock, not HEAD's committer time, which the
        // branch chooses (see `judged_at`).
        trust.not_after = Some(noma_provenance::signers::now());
        let records = verify_part(&trust, lineage, entries, side, &|_, _| true);
        Some(BranchCheck::located(
            signer_warnings(&trust),
            records,
            tpath,
        ))
    }

    /// After a whole check with provenance on: remembers the merge base's
    /// signed-base row (see [`SignedBase::build`]) when the cache has none,
    /// and the transcript's checkpoint ([`remember_checkpoint`]) when that
    /// check found HEAD's transcript an append of the merge base's that
    /// replays (`replays`: its history check replayed it whole then).
    /// `read`: the sidecars the signature check read, so that the merge
    /// base's is neither read nor parsed again.
    pub(super) fn remember_signed_base(
        &self,
        [path, old]: [&str; 2],
        files: &DocFiles,
        replays: bool,
        read: Option<SidecarsRead>,
    ) {
        let replayed = replays
            && !files.prefix().is_empty()
            && files.head_t.is_some()
            && files.head_transcript().starts_with(files.prefix());
        let Some(cache) = self.cache.filter(|_| !self.provenance_off && path == old) else {
            return;
        };
        let (Some(mb_t), Ok(Some(t_id))) = (
            files.mb_t.as_deref(),
            self.repo.blob_id_at(self.merge_base, &files.tpath),
        ) else {
            return;
        };
        if replayed {
            remember_checkpoint(cache, t_id, mb_t, files.mb_doc.as_deref());
        }
        let Ok(s_id) = self.repo.blob_id_at(self.merge_base, &sidecar_rel(path)) else {
            return;
        };
        let (t, s) = key(t_id, s_id);
        if cache.signed_base_known(&t, &s).is_some() {
            return;
        }
        let (side, head) = match (read, s_id) {
            (Some(read), _) => (read.merge_base, read.head),
            (None, Some(s)) => match self.repo.blob(s) {
                Ok(b) => (b, None),
                Err(_) => return,
            },
            (None, None) => (Vec::new(), None),
        };
        if let Some(row) = SignedBase::build(mb_t, &side, replayed, head.as_ref()) {
            cache.remember_signed_base(&t, &s, &row.encode());
        }
    }
}

/// The checkpoint rows (replay and [`super::super::proved::Proved`]) of the merge base's
/// transcript `mb_t` (blob `id`) and document `mb_doc`, built from the
/// bytes the whole check holds, after that check replayed HEAD's
/// transcript from its first state to HEAD's document and the branch's
/// records from `mb_doc` (so the history alone replays to it: the same
/// proof as [`checkpoint::appended_records`]' cold path, without its
/// second replay). Not when the history has no applied record: its first
/// state is then chosen by the branch's records.
fn remember_checkpoint(cache: &BlockCache, id: Oid, mb_t: &[u8], mb_doc: Option<&[u8]>) {
    let Some(mb_doc) = mb_doc.and_then(|d| std::str::from_utf8(d).ok()) else {
        return;
    };
    let doc_sha = sha256_hex(mb_doc.as_bytes());
    if cache.checkpoint_known(id.as_bytes(), &doc_sha).is_some()
        || replay::first_applied_pre_sha256(mb_t).is_none()
    {
        return;
    }
    let mut builder = Builder::default();
    let mut tee = Tee {
        inner: mb_t,
        builder: &mut builder,
    };
    if io::copy(&mut tee, &mut io::sink()).is_err() {
        return;
    }
    if let Some(p) = builder.finish() {
        cache.remember_replay(id.as_bytes(), &doc_sha);
        cache.remember_checkpoint(id.as_bytes(), &doc_sha, &p.encode());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(op: &str, parent: Option<&str>, reason: &str) -> String {
        let (pre, post) = ("0".repeat(64), "1".repeat(64));
        let mut v = serde_json::json!({
            "protocol_version": "1.0", "tool_version": "0.1.0",
            "op_id": op, "ts": "2026-11-28T00:00:00.000Z",
            "actor": {"kind": "human", "name": "alice"}, "doc_uri": "d.noma",
            "pre_sha256": pre, "post_sha256": post,
            "pre_sha": &pre[..8], "post_sha": &post[..8],
            "op": {"op": "update_attribute", "id": "a", "key": "v", "value": 1},
            "patch_result": "applied", "pre_validation": "ok", "post_validation": "ok",
            "reason": reason,
        });
        if let Some(p) = parent {
            v["parent_op_id"] = p.into();
        }
        format!("{v}\n")
    }

    fn id(k: u32) -> String {
        format!("00000000-0000-4000-8000-{k:012}")
    }

    #[test]
    fn a_row_is_built_only_for_a_history_that_is_all_history() {
        let (a, b, c) = (id(1), id(2), id(3));
        let sig = format!(
            "{{\"kind\":\"signature\",\"op_id\":\"{a}\",\"signer\":\"a@x\",\"sig\":\"s\"}}\n"
        );
        let t = line(&a, None, "why") + &line(&b, None, "why");
        let row = SignedBase::build(t.as_bytes(), sig.as_bytes(), true, None).expect("row");
        assert!(row.may_name(&a) && !row.may_name(&b));
        assert_eq!(SignedBase::decode(&row.encode()), Some(row.clone()));
        assert_eq!(SignedBase::decode(&row.encode()[1..]), None);
        let mut head = format!("{sig}more\n");
        let got = row.appended(&mut head.as_bytes()).unwrap();
        assert_eq!(got.as_deref(), Some(&b"more\n"[..]));
        head.replace_range(0..1, "[");
        assert_eq!(row.appended(&mut head.as_bytes()).unwrap(), None);
        // Shorter than the merge base's sidecar: no extension of it.
        assert_eq!(row.appended(&mut &sig.as_bytes()[..3]).unwrap(), None);
        // Two records for one op (the second a merge copy of the first):
        // the whole check keeps the second in range.
        let copy = line(
            &c,
            Some(a.as_str()),
            &format!("reconciled: op {a} from the merged branch"),
        );
        let twice = line(&a, None, "why") + &copy;
        for replayed in [false, true] {
            assert!(SignedBase::build(twice.as_bytes(), b"", replayed, None).is_none());
        }
        // Two records with one op_id, read without a parse.
        let dup = line(&a, None, "why") + &line(&a, None, "again");
        assert_eq!(
            plain_origin(line(&a, None, "why").as_bytes()),
            Some(a.as_str())
        );
        assert!(SignedBase::build(dup.as_bytes(), b"", true, None).is_none());
        assert_eq!(plain_origin(copy.as_bytes()), None);
        // A sidecar that does not parse, or ends mid-line.
        assert!(SignedBase::build(t.as_bytes(), b"junk\n", true, None).is_none());
        assert!(SignedBase::build(t.as_bytes(), sig.trim_end().as_bytes(), true, None).is_none());
        assert!(SignedBase::build(b"not a record\n", b"", false, None).is_none());
    }

    /// The row built from the parse of a sidecar that extends the merge
    /// base's (HEAD's, which the signature check parsed) is the one the
    /// merge base's own parse gives: its blank and repeated lines, and
    /// the appended lines' op_ids, change nothing.
    #[test]
    fn a_row_from_the_extending_sidecars_parse_is_the_merge_bases() {
        let ids: Vec<String> = (1..=6).map(id).collect();
        let sig = |op: &str| {
            format!(
                "{{\"kind\":\"signature\",\"op_id\":\"{op}\",\"signer\":\"a@x\",\"sig\":\"s\"}}\n"
            )
        };
        let approval = |ops: &[&String]| {
            let entry = serde_json::json!({
                "kind": "approval", "approver": "b@x", "ts": "2026-11-28T00:00:00.000Z",
                "doc_uri": "d.noma", "op_ids": ops, "draft_sha256": "0".repeat(64), "sig": "s",
            });
            format!("{entry}\n")
        };
        let t: String = ids[..3].iter().map(|a| line(a, None, "why")).collect();
        let base = sig(&ids[0]) + "\n" + &sig(&ids[1]) + &sig(&ids[0]) + &approval(&[&ids[2]]);
        let head = base.clone() + &sig(&ids[3]) + &sig(&ids[0]) + &approval(&[&ids[4], &ids[5]]);
        let parsed = Sidecar::parse(head.as_bytes()).expect("the head sidecar parses");
        let alone = SignedBase::build(t.as_bytes(), base.as_bytes(), true, None).expect("row");
        let reused = SignedBase::build(t.as_bytes(), base.as_bytes(), true, Some(&parsed));
        assert_eq!(reused.as_ref(), Some(&alone));
        assert!(alone.may_name(&ids[0]) && alone.may_name(&ids[2]));
        for later in &ids[3..] {
            assert!(!alone.may_name(later), "{later} is the branch's");
        }
    }
}

//! The transcript read for a history: streamed once, a line at a time,
//! while replay attributes its records ([`attributed`]); afterwards only
//! the lines an answer shows (and the few their signatures depend on) are
//! read again, by offset ([`read_entries`]). No record is held past its
//! line, so memory follows the document and the answer, not the history.
//! Where the attribution of a transcript stopped (its length, the hash of
//! those bytes, the replayed state and what was learned) is kept per
//! transcript path ([`Tail`]): a transcript that grew by a record or a
//! commit's worth is hashed up to there, checked, and only its new lines
//! are replayed.

use std::collections::HashSet;
use std::fs::File;
use std::io::{BufRead, Read, Seek, SeekFrom};
use std::path::Path;

use super::attribute::{Attribution, Attributor, LineRef};
use super::error::TraceError;
use super::{HistoryError, Inputs};
use crate::cache::BlockCache;
use crate::history_replay::{find_in_repo_history, wanted_base};
use noma_core::doc::hash::sha256_hex;
use noma_core::transcript::{parse_record, Entry, PatchResult};
use noma_provenance::canonical::fingerprint;
use noma_provenance::canonical::origin_op_id;

/// What replay learns about the transcript and the document: from the
/// block cache when these exact contents were attributed before, else by
/// streaming the transcript (then stored). Keyed by the BLAKE3 hashes the
/// answer's key was made of, so a cached attribution reads nothing more.
pub(super) fn attributed(
    cache: &BlockCache,
    doc: &Path,
    inputs: &Inputs,
    hash: &str,
) -> Result<Attribution, HistoryError> {
    let text_hash = blake3::hash(inputs.text.as_bytes()).to_hex();
    if let Some(found) = cache
        .history_known(hash, &text_hash)
        .and_then(|b| Attribution::decode(&b))
    {
        return Ok(found);
    }
    let path_key = tail_key(&inputs.tpath);
    let tail = cache.tail_known(&path_key).and_then(|b| Tail::decode(&b));
    let resumed = tail.is_some();
    let found = match replay_stream(doc, inputs, hash, tail) {
        // A stored state that does not go on (a damaged row): from the start.
        Err(_) if resumed => replay_stream(doc, inputs, hash, None),
        other => other,
    };
    let (found, tail) =
        found.map_err(|e| HistoryError(format!("{}: {e}", inputs.tpath.display())))?;
    cache.remember_history(hash, &text_hash, &found.encode());
    if let Some(tail) = tail {
        cache.remember_tail(&path_key, &tail.encode(&found));
    }
    Ok(found)
}

/// The tail row's key: the BLAKE3 of the transcript's path as given.
fn tail_key(tpath: &Path) -> String {
    let path = tpath.canonicalize().unwrap_or_else(|_| tpath.to_path_buf());
    blake3::hash(path.as_os_str().as_encoded_bytes())
        .to_hex()
        .to_string()
}

/// Where the attribution of a transcript stopped: the length of its
/// complete lines then, their BLAKE3, the state their applied records
/// replayed to (None: none applied yet) and what was learned (its lines
/// included).
pub(super) struct Tail {
    len: u64,
    prefix: [u8; 32],
    state: Option<String>,
    found: Attribution,
}

/// The first bytes of a tail row.
const TAIL_MAGIC: &[u8] = b"noma-tail-1\n";

impl Tail {
    /// The row: the magic, the length, the hash, the state (a flag, its
    /// length and bytes), then the attribution's own row.
    fn encode(&self, found: &Attribution) -> Vec<u8> {
        let state = self.state.as_deref().unwrap_or("");
        let mut out = Vec::with_capacity(64 + state.len());
        out.extend_from_slice(TAIL_MAGIC);
        out.extend_from_slice(&self.len.to_le_bytes());
        out.extend_from_slice(&self.prefix);
        out.push(u8::from(self.state.is_some()));
        out.extend_from_slice(&(state.len() as u64).to_le_bytes());
        out.extend_from_slice(state.as_bytes());
        out.extend_from_slice(&found.encode());
        out
    }

    /// A tail from its row; None for any other bytes.
    fn decode(bytes: &[u8]) -> Option<Tail> {
        let r = bytes.strip_prefix(TAIL_MAGIC)?;
        let len = u64::from_le_bytes(r.get(..8)?.try_into().ok()?);
        let prefix: [u8; 32] = r.get(8..40)?.try_into().ok()?;
        let has_state = *r.get(40)? == 1;
        let state_len =
            usize::try_from(u64::from_le_bytes(r.get(41..49)?.try_into().ok()?)).ok()?;
        let state = r.get(49..49usize.checked_add(state_len)?)?;
        let state = has_state
            .then(|| String::from_utf8(state.to_vec()).ok())
            .flatten();
        if has_state && state.is_none() {
            return None;
        }
        let found = Attribution::decode(r.get(49 + state_len..)?)?;
        Some(Tail {
            len,
            prefix,
            state,
            found,
        })
    }
}

/// Replays the transcript a line at a time (from where `tail` stopped,
/// when the transcript's first bytes are still the ones it hashed); Err
/// when a line is no record, when the records do not replay, or when the
/// bytes read are not the ones hashed to `hash`. Also gives where this
/// attribution stopped (None: nothing to go on from).
fn replay_stream(
    doc: &Path,
    inputs: &Inputs,
    hash: &str,
    tail: Option<Tail>,
) -> Result<(Attribution, Option<Tail>), TraceError> {
    let mut reader = noma_store::fsio::open_lines(&inputs.tpath)?;
    let mut hasher = blake3::Hasher::new();
    let (mut raw, mut lines) = (Vec::new(), Vec::new());
    let mut attributor: Option<Attributor> = None;
    let mut offset = 0u64;
    if let Some(tail) = tail {
        // Hashed, not parsed: its lines are the tail's.
        let n = std::io::copy(&mut (&mut reader).take(tail.len), &mut hasher)?;
        if n != tail.len || hasher.clone().finalize().as_bytes() != &tail.prefix {
            return Err(TraceError::Foreign);
        }
        let mut found = tail.found;
        lines = std::mem::take(&mut found.lines);
        attributor = tail.state.map(|state| Attributor::resume(found, state));
        offset = tail.len;
    }
    // The hash of the complete lines (a torn last line is not part of
    // where the attribution stopped).
    let prefix: [u8; 32];
    loop {
        raw.clear();
        let n = reader.read_until(b'\n', &mut raw)?;
        // The end, or a torn last line: no record (as replay reads it).
        if n == 0 || raw.last() != Some(&b'\n') {
            prefix = *hasher.clone().finalize().as_bytes();
            hasher.update(&raw);
            break;
        }
        hasher.update(&raw);
        let index = lines.len();
        let rec = parse_record(index + 1, &raw)?;
        lines.push(LineRef {
            offset,
            len: n as u64,
            origin: fingerprint(origin_op_id(&rec)),
        });
        offset += n as u64;
        if rec.patch_result != PatchResult::Applied {
            continue;
        }
        let a = match &mut attributor {
            Some(a) => a,
            None => attributor.insert(Attributor::new(base_text(doc, inputs, &rec.pre_sha256)?)),
        };
        a.applied(index, index + 1, &rec)?;
    }
    if hasher.finalize().to_hex().as_str() != hash {
        return Err(TraceError::Changed);
    }
    let (found, state) = attributor
        .unwrap_or_else(|| Attributor::new(None))
        .finish_with_state(lines);
    let tail = Tail {
        len: offset,
        prefix,
        state,
        found: Attribution::default(),
    };
    Ok((found, Some(tail)))
}

/// The text replay starts from, found as `noma replay` finds it, for a
/// transcript whose first applied record starts from `first_pre`.
fn base_text(doc: &Path, inputs: &Inputs, first_pre: &str) -> Result<Option<String>, TraceError> {
    let text = &inputs.text;
    match wanted_base(Some(first_pre), text) {
        None if first_pre == sha256_hex(text.as_bytes()) => Ok(Some(text.to_string())),
        None => Ok(None),
        Some(sha) => match find_in_repo_history(inputs.repo(doc), doc, Some(&inputs.tpath), &sha) {
            (Some(found), _) => Ok(Some(found)),
            (None, searched) => Err(TraceError::NoBase {
                doc: doc.to_path_buf(),
                sha,
                searched,
            }),
        },
    }
}

/// The records on the lines `indices` (0-based, any order) of the
/// transcript `file`, in line order, read by offset.
pub(super) fn read_entries(
    file: &mut File,
    lines: &[LineRef],
    indices: impl IntoIterator<Item = usize>,
) -> Result<Vec<Entry>, TraceError> {
    let mut indices: Vec<usize> = indices.into_iter().collect();
    indices.sort_unstable();
    indices.dedup();
    let mut out = Vec::with_capacity(indices.len());
    let mut raw = Vec::new();
    for index in indices {
        let at = lines.get(index).ok_or(TraceError::NoSuchLine)?;
        raw.clear();
        file.seek(SeekFrom::Start(at.offset))
            .and_then(|_| (&mut *file).take(at.len).read_to_end(&mut raw))?;
        let record = parse_record(index + 1, &raw)?;
        out.push(Entry {
            line: index + 1,
            offset: at.offset as usize,
            line_sha256: String::new(),
            record,
        });
    }
    Ok(out)
}

/// The records that stand for one of the ops `ops` (by op_id, a merge
/// copy by its original's), in line order: the lines whose fingerprint
/// matches, read again and checked by the op_id itself.
pub(super) fn related(
    file: &mut File,
    lines: &[LineRef],
    ops: &HashSet<String>,
) -> Result<Vec<Entry>, TraceError> {
    let wanted: HashSet<u64> = ops.iter().map(|o| fingerprint(o)).collect();
    let candidates = (lines.iter().enumerate())
        .filter(|(_, l)| wanted.contains(&l.origin))
        .map(|(i, _)| i);
    let mut found = read_entries(file, lines, candidates)?;
    found.retain(|e| ops.contains(origin_op_id(&e.record)));
    Ok(found)
}

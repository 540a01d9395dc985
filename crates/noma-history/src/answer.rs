//! Finished answers (`noma blame`, one `noma log` question) kept in the
//! block cache, so a repeated query reads and hashes its inputs and one
//! row, and parses, replays, verifies and walks nothing.
//!
//! An answer depends on the transcript's bytes, the document's bytes, the
//! sidecar, the work tree's `.noma/config.yml` and `.noma/allowed_signers`
//! (signer, approver, whether approval is needed), and the history
//! reachable from HEAD (each record's commit, the base replay starts from,
//! records older than the policy): the key is the BLAKE3 hash of the
//! transcript and the BLAKE3 hash of all the rest (files by their hash,
//! HEAD by its commit id) and of the question. Content, never sizes or
//! times: a transcript rewritten in place, or extended, is another key.
//! BLAKE3 rather than sha256 because the warm query's cost is hashing the
//! transcript: streamed, ~10 ms for 66 MB against ~200 ms.

use std::io::Read;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::HistoryError;
use crate::cache::BlockCache;
use crate::git::repo::Repo;
use noma_provenance::config::CONFIG_PATH;
use noma_provenance::signers::ALLOWED_SIGNERS_PATH;

/// Answers larger than this are not stored: printing them costs more than
/// computing them again saves.
const MAX_ANSWER_BYTES: usize = 4 << 20;

/// The key of `question` about `doc` whose transcript hashes to
/// `transcript` ([`file_hash`]) and whose text is `text`: the transcript's
/// hash, and the hash of every other input and the question. None when
/// an input cannot be read (then nothing is cached).
pub(super) fn key(
    doc: &Path,
    transcript: &str,
    text: &str,
    question: &str,
) -> Option<(String, String)> {
    let dir = doc
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let root = crate::git::blob::worktree_root(dir).unwrap_or_else(|| dir.to_path_buf());
    let head = Repo::discover(dir)
        .ok()
        .and_then(|r| r.head_commit())
        .map(|o| o.to_string())
        .unwrap_or_default();
    let mut parts = vec![
        question.to_string(),
        blake3::hash(text.as_bytes()).to_hex().to_string(),
        format!("head {head}"),
    ];
    for path in [
        noma_provenance::sidecar::sidecar_path(doc),
        root.join(CONFIG_PATH),
        root.join(ALLOWED_SIGNERS_PATH),
    ] {
        parts.push(file_hash(&path).ok()?.unwrap_or_else(|| "-".to_string()));
    }
    let rest = blake3::hash(parts.join("\n").as_bytes())
        .to_hex()
        .to_string();
    Some((transcript.to_string(), rest))
}

/// A file's BLAKE3 hash (hex), read a block at a time (a 66 MB transcript
/// is never held); None when it does not exist.
pub(super) fn file_hash(path: &Path) -> std::io::Result<Option<String>> {
    let mut file = match noma_store::fsio::open_lines(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut hasher = blake3::Hasher::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                hasher.update(&buf[..n]);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Some(hasher.finalize().to_hex().to_string()))
}

/// The answer stored under `key`, else `compute`'s (then stored). A row
/// that does not decode is computed again.
pub(super) fn cached<T: Serialize + DeserializeOwned>(
    cache: &BlockCache,
    key: Option<&(String, String)>,
    compute: impl FnOnce() -> Result<T, HistoryError>,
) -> Result<T, HistoryError> {
    let Some((t, rest)) = key else {
        return compute();
    };
    let stored = cache.answer_known(t, rest);
    if let Some(found) = stored.and_then(|b| serde_json::from_slice(&b).ok()) {
        return Ok(found);
    }
    let answer = compute()?;
    if let Ok(bytes) = serde_json::to_vec(&answer) {
        if bytes.len() <= MAX_ANSWER_BYTES {
            cache.remember_answer(t, rest, &bytes);
        }
    }
    Ok(answer)
}

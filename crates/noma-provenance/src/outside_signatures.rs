//! Signatures made outside noma (`ssh-keygen -Y sign -n noma`, a key held
//! by ssh-agent): the exact bytes a record's signature covers, and
//! importing such a signature into the sidecar once it verifies.

use std::path::{Path, PathBuf};

use noma_core::transcript::{self, Record};
use noma_store::engine::default_transcript_path;

use super::{canonical, sidecar, sshsig, Sidecar, SidecarEntry};

/// Why a record's payload cannot be given, or a signature not imported.
#[derive(Debug, thiserror::Error)]
pub enum OutsideError {
    /// A file could not be read or written.
    #[error("{}: {error}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        error: std::io::Error,
    },
    /// The transcript could not be locked, or the sidecar read back.
    #[error("{0}")]
    Unnamed(std::io::Error),
    /// The transcript does not parse.
    #[error("{}: {error}", path.display())]
    Transcript {
        /// The transcript.
        path: PathBuf,
        /// Why it does not parse.
        error: transcript::ReadError,
    },
    /// The transcript holds no such record.
    #[error("{}: no record {op_id}", path.display())]
    NoRecord {
        /// The transcript.
        path: PathBuf,
        /// The record asked for.
        op_id: String,
    },
    /// The signature verifies over neither payload.
    #[error("{}: {error}", path.display())]
    Unverified {
        /// The signature's file.
        path: PathBuf,
        /// Why it does not verify over the current payload.
        error: sshsig::SigError,
    },
    /// The sidecar no longer parses after the append.
    #[error("{}: {error}", path.display())]
    Sidecar {
        /// The sidecar.
        path: PathBuf,
        /// Why it does not parse.
        error: sidecar::SidecarError,
    },
}

fn io_at(path: &Path) -> impl FnOnce(std::io::Error) -> OutsideError + '_ {
    |error| OutsideError::Io {
        path: path.to_path_buf(),
        error,
    }
}

/// The record `op_id` of `file`'s transcript and the transcript's lineage.
fn find_record(file: &Path, op_id: &str) -> Result<(Record, canonical::Lineage), OutsideError> {
    let tpath = default_transcript_path(file);
    let bytes = noma_store::fsio::read_regular(&tpath).map_err(io_at(&tpath))?;
    let parsed =
        transcript::parse_transcript(&bytes).map_err(|error| OutsideError::Transcript {
            path: tpath.clone(),
            error,
        })?;
    let lineage = parsed
        .entries
        .first()
        .map(|e| canonical::Lineage::of(&e.record));
    let record = parsed
        .entries
        .into_iter()
        .map(|e| e.record)
        .find(|r| r.op_id == op_id);
    match (record, lineage) {
        (Some(r), Some(l)) => Ok((r, l)),
        _ => Err(OutsideError::NoRecord {
            path: tpath,
            op_id: op_id.to_string(),
        }),
    }
}

/// The bytes `signer`'s signature of record `op_id` of `file`'s transcript
/// covers (RFC 8785 JSON, `noma-record-signature/2`).
pub fn payload(file: &Path, op_id: &str, signer: &str) -> Result<Vec<u8>, OutsideError> {
    find_record(file, op_id).map(|(r, l)| canonical::record_payload_v2(&r, signer, &l))
}

/// Adds the armored signature in `sig` of record `op_id` by `signer` to
/// `file`'s sidecar, after checking it verifies over the record's payload
/// (`/2`, or `/1` for a signature made over an older payload); returns the
/// sidecar's path.
pub fn import(file: &Path, op_id: &str, signer: &str, sig: &Path) -> Result<PathBuf, OutsideError> {
    let (r, lineage) = find_record(file, op_id)?;
    let armored = std::fs::read_to_string(sig).map_err(io_at(sig))?;
    let v2 = sshsig::verify(
        &armored,
        &canonical::record_payload_v2(&r, signer, &lineage),
    );
    let payload = match v2 {
        Ok(_) => Some(canonical::RECORD_PAYLOAD_V2.to_string()),
        Err(e) => {
            sshsig::verify(&armored, &canonical::record_payload(&r, signer)).map_err(|_| {
                OutsideError::Unverified {
                    path: sig.to_path_buf(),
                    error: e,
                }
            })?;
            None
        }
    };
    let entry = SidecarEntry::Signature(sidecar::RecordSignature {
        op_id: op_id.to_string(),
        signer: signer.to_string(),
        sig: armored,
        payload,
    });
    let tpath = default_transcript_path(file);
    let locked = noma_store::fsio::LockedTranscript::open(&tpath).map_err(OutsideError::Unnamed)?;
    let side = sidecar::sidecar_path(file);
    sidecar::append(&side, &[entry]).map_err(io_at(&side))?;
    drop(locked);
    // Parse back: the sidecar must stay readable.
    let bytes = noma_store::fsio::read_regular(&side).map_err(OutsideError::Unnamed)?;
    Sidecar::parse(&bytes).map_err(|error| OutsideError::Sidecar {
        path: side.clone(),
        error,
    })?;
    Ok(side)
}

//! Signatures made outside noma (`ssh-keygen -Y sign -n noma`, a key held
//! by ssh-agent): the exact bytes a record's signature covers, and
//! importing such a signature into the sidecar once it verifies.

use std::path::{Path, PathBuf};

use noma_core::transcript::{self, Record};
use noma_store::engine::default_transcript_path;

use super::{canonical, sidecar, sshsig, Sidecar, SidecarEntry};

/// The record `op_id` of `file`'s transcript and the transcript's lineage.
fn find_record(file: &Path, op_id: &str) -> Result<(Record, canonical::Lineage), String> {
    let tpath = default_transcript_path(file);
    let bytes =
        noma_store::fsio::read_regular(&tpath).map_err(|e| format!("{}: {e}", tpath.display()))?;
    let parsed =
        transcript::parse_transcript(&bytes).map_err(|e| format!("{}: {e}", tpath.display()))?;
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
        _ => Err(format!("{}: no record {op_id}", tpath.display())),
    }
}

/// The bytes `signer`'s signature of record `op_id` of `file`'s transcript
/// covers (RFC 8785 JSON, `noma-record-signature/2`).
pub fn payload(file: &Path, op_id: &str, signer: &str) -> Result<Vec<u8>, String> {
    find_record(file, op_id).map(|(r, l)| canonical::record_payload_v2(&r, signer, &l))
}

/// Adds the armored signature in `sig` of record `op_id` by `signer` to
/// `file`'s sidecar, after checking it verifies over the record's payload
/// (`/2`, or `/1` for a signature made over an older payload); returns the
/// sidecar's path.
pub fn import(file: &Path, op_id: &str, signer: &str, sig: &Path) -> Result<PathBuf, String> {
    let (r, lineage) = find_record(file, op_id)?;
    let armored = std::fs::read_to_string(sig).map_err(|e| format!("{}: {e}", sig.display()))?;
    let v2 = sshsig::verify(
        &armored,
        &canonical::record_payload_v2(&r, signer, &lineage),
    );
    let payload = match v2 {
        Ok(_) => Some(canonical::RECORD_PAYLOAD_V2.to_string()),
        Err(e) => {
            sshsig::verify(&armored, &canonical::record_payload(&r, signer))
                .map_err(|_| format!("{}: {e}", sig.display()))?;
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
    let locked = noma_store::fsio::LockedTranscript::open(&tpath).map_err(|e| e.to_string())?;
    let side = sidecar::sidecar_path(file);
    sidecar::append(&side, &[entry]).map_err(|e| format!("{}: {e}", side.display()))?;
    drop(locked);
    // Parse back: the sidecar must stay readable.
    let bytes = noma_store::fsio::read_regular(&side).map_err(|e| e.to_string())?;
    Sidecar::parse(&bytes).map_err(|e| format!("{}: {e}", side.display()))?;
    Ok(side)
}

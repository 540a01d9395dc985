//! The provenance sidecar `<doc>.provenance`, beside the document and its
//! transcript `<doc>.patches`: JSON Lines, one signature or approval per
//! line, read as a *set* (order and repeats carry no meaning).
//!
//! ```text
//! {"kind":"signature","op_id":"…","signer":"bot@agents.example","sig":"-----BEGIN SSH SIGNATURE-----\n…"}
//! {"kind":"approval","approver":"alice@example.com","ts":"…","doc_uri":"doc.noma","op_ids":["…"],"intent_sha256":["…"],"draft_sha256":"…","sig":"-----BEGIN SSH SIGNATURE-----\n…"}
//! ```
//!
//! Why a separate file: the protocol reserves the record's `signature`
//! field and makes v1.0 writers emit `null`, and a signature inside a
//! record would change the line every later record chains to. Why a set:
//! each line stands alone (it names the record by `op_id`), so git's
//! `merge=union` driver merges two branches' sidecars line by line
//! without conflicts, a cherry-pick carries its lines, and a duplicated
//! line after a union is harmless. `sig` is the armored SSHSIG exactly as
//! `ssh-keygen -Y sign -n noma` writes it (`jq -r .sig` gives a file
//! `ssh-keygen -Y verify` reads).

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::canonical::ApprovalBody;

/// The sidecar of a document path: `<doc>.provenance`.
pub fn sidecar_path(doc: &Path) -> PathBuf {
    let mut name = doc
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(".provenance");
    doc.with_file_name(name)
}

/// The sidecar of a repository-relative document path.
pub fn sidecar_rel(doc: &str) -> String {
    format!("{doc}.provenance")
}

/// One record's signature.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordSignature {
    /// The signed record.
    pub op_id: String,
    /// The principal the signer claims (looked up in allowed_signers).
    pub signer: String,
    /// Armored SSHSIG over [`super::canonical::record_payload`] (absent
    /// `type`) or, when `type` is `noma-record-signature/2`,
    /// [`super::canonical::record_payload_v2`]. The type is inside the
    /// signed bytes, so editing it here only makes the signature fail.
    pub sig: String,
    /// The payload type, absent for `noma-record-signature/1`.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub payload: Option<String>,
}

/// A human approval of agent records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approval {
    /// What it binds.
    #[serde(flatten)]
    pub body: ApprovalBody,
    /// Armored SSHSIG over [`super::canonical::approval_payload`].
    pub sig: String,
}

/// One sidecar line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum SidecarEntry {
    /// A record's signature.
    Signature(RecordSignature),
    /// An approval.
    Approval(Approval),
}

impl SidecarEntry {
    /// The entry as one JSONL line with its `\n`.
    pub fn to_line(&self) -> String {
        let mut s = serde_json::to_string(self).unwrap_or_default();
        s.push('\n');
        s
    }
}

/// A sidecar line that is not an entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct SidecarError {
    /// 1-based line.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// A parsed sidecar.
#[derive(Debug, Clone, Default)]
pub struct Sidecar {
    /// Signatures with their 1-based lines.
    pub signatures: Vec<(usize, RecordSignature)>,
    /// Approvals with their 1-based lines.
    pub approvals: Vec<(usize, Approval)>,
}

impl Sidecar {
    /// Parses sidecar bytes; the first bad line is an error. A last line
    /// without its newline that is no entry is an append a kill cut short:
    /// writers sync signatures before the records they sign, so it can only
    /// sign records that were never appended, and it is skipped (the next
    /// writer cuts it off).
    pub fn parse(bytes: &[u8]) -> Result<Sidecar, SidecarError> {
        let mut out = Sidecar::default();
        let mut seen = std::collections::HashSet::new();
        let (mut lines, torn) = noma_core::transcript::split_lines(bytes);
        if let Some(t) = torn {
            if serde_json::from_slice::<SidecarEntry>(t).is_ok() {
                lines.push(noma_core::transcript::RawLine {
                    number: lines.len() + 1,
                    offset: bytes.len() - t.len(),
                    raw: t,
                });
            }
        }
        for l in lines {
            let body = l.raw.strip_suffix(b"\n").unwrap_or(l.raw);
            let body = body.strip_suffix(b"\r").unwrap_or(body);
            if body.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            // A set: a line repeated by a union merge counts once.
            if !seen.insert(body) {
                continue;
            }
            let entry: SidecarEntry = serde_json::from_slice(body).map_err(|e| SidecarError {
                line: l.number,
                message: e.to_string(),
            })?;
            match entry {
                SidecarEntry::Signature(s) => out.signatures.push((l.number, s)),
                SidecarEntry::Approval(a) => out.approvals.push((l.number, a)),
            }
        }
        Ok(out)
    }
}

/// Appends `entries` to the sidecar at `path` in one write and syncs it.
/// Writers call this under the transcript's lock *before* appending the
/// records they sign: a kill in between leaves signatures of records that
/// never existed (ignored), never a record whose signature was lost.
///
/// The sidecar is opened as every file noma writes
/// ([`noma_store::fsio::contain::open_write`]): a symbolic link (a clone
/// can commit one to `~/.bashrc`), a FIFO or a device in its place is
/// refused before a byte is written.
pub fn append(path: &Path, entries: &[SidecarEntry]) -> std::io::Result<()> {
    if entries.is_empty() {
        return Ok(());
    }
    let mut buf = String::new();
    for e in entries {
        buf.push_str(&e.to_line());
    }
    use noma_store::fsio::contain;
    let mut f = contain::open_write(path, contain::WriteMode::Append)?;
    // A sidecar left torn by an earlier kill gets its line cut off first,
    // so the new entries stay whole lines. Only the tail is read: a
    // signed write costs the same at a thousand records as at millions.
    if let Some(cut) = torn_tail_start(&mut f)? {
        f.set_len(cut)?;
    }
    f.write_all(buf.as_bytes())?;
    f.sync_all()
}

/// Where the last line of `f` starts when it has no `\n` (a torn
/// append), read backwards from the end a block at a time; `None` when
/// the file is empty or ends its last line.
fn torn_tail_start(f: &mut std::fs::File) -> std::io::Result<Option<u64>> {
    use std::io::{Read, Seek, SeekFrom};
    const BLOCK: u64 = 64 * 1024;
    let len = f.metadata()?.len();
    let mut end = len;
    let mut buf = vec![0u8; BLOCK.min(len) as usize];
    while end > 0 {
        let start = end.saturating_sub(BLOCK);
        let chunk = &mut buf[..(end - start) as usize];
        f.seek(SeekFrom::Start(start))?;
        f.read_exact(chunk)?;
        if end == len && chunk.last() == Some(&b'\n') {
            return Ok(None);
        }
        if let Some(i) = memchr::memrchr(b'\n', chunk) {
            return Ok(Some(start + i as u64 + 1));
        }
        end = start;
    }
    Ok((len > 0).then_some(0))
}

/// Adds to the sidecar at `path` the lines of `other` (another branch's
/// sidecar) it does not have: the set union a `merge=union` merge makes.
/// Nothing is written when `other` is absent or adds nothing.
pub fn union_into_file(path: &Path, other: Option<Vec<u8>>) -> std::io::Result<()> {
    let Some(other) = other else {
        return Ok(());
    };
    let mine = match noma_store::fsio::read_regular(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e),
    };
    let have: std::collections::HashSet<&[u8]> = mine.split(|&b| b == b'\n').collect();
    let mut out = mine.clone();
    if !out.is_empty() && !out.ends_with(b"\n") {
        out.push(b'\n');
    }
    for line in other.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        if !have.contains(line) {
            out.extend_from_slice(line);
            out.push(b'\n');
        }
    }
    if out == mine {
        return Ok(());
    }
    noma_store::fsio::atomic_write(path, &out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip_as_a_set_and_bad_lines_are_named() {
        let s = SidecarEntry::Signature(RecordSignature {
            op_id: "x".into(),
            signer: "a@b".into(),
            sig: "-----BEGIN SSH SIGNATURE-----\nAA\n-----END SSH SIGNATURE-----\n".into(),
        });
        let a = SidecarEntry::Approval(Approval {
            body: ApprovalBody {
                approver: "h@b".into(),
                ts: "t".into(),
                doc_uri: "d.noma".into(),
                op_ids: vec!["x".into()],
                subject_sha256: "s".into(),
                intent_sha256: Vec::new(),
                draft_sha256: "d".into(),
            },
            sig: "sig".into(),
        });
        let line = a.to_line();
        assert!(
            line.starts_with("{\"kind\":\"approval\",\"approver\""),
            "{line}"
        );
        let bytes = format!("{}{}{}", s.to_line(), line, s.to_line());
        let p = Sidecar::parse(bytes.as_bytes()).unwrap();
        assert_eq!(p.signatures.len(), 1);
        assert_eq!(p.approvals.len(), 1);
        assert_eq!(p.approvals[0].0, 2);
        let e =
            Sidecar::parse(format!("{}{{\"kind\":\"x\"}}\n", s.to_line()).as_bytes()).unwrap_err();
        assert_eq!(e.line, 2);
        assert_eq!(Sidecar::parse(b"{}\n").unwrap_err().line, 1);
        // A torn last line is skipped; a whole entry without its newline counts.
        let torn = format!("{}{{\"kind\":\"signa", s.to_line());
        assert_eq!(Sidecar::parse(torn.as_bytes()).unwrap().signatures.len(), 1);
        let unterminated = line.trim_end();
        assert_eq!(
            Sidecar::parse(unterminated.as_bytes())
                .unwrap()
                .approvals
                .len(),
            1
        );
    }

    #[test]
    fn union_adds_only_missing_lines() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("d.noma.provenance");
        union_into_file(&p, None).unwrap();
        assert!(!p.exists());
        std::fs::write(&p, "a\nb\n").unwrap();
        union_into_file(&p, Some(b"b\nc\n".to_vec())).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"a\nb\nc\n");
    }

    #[test]
    fn the_torn_tail_is_found_across_read_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("d.noma.provenance");
        let line = |n: usize| format!("{}\n", "x".repeat(n));
        // (file, where a torn tail starts): whole lines, a torn tail
        // longer than a block, one shorter, a file that is one torn line.
        let whole = line(70_000) + &line(10);
        let long_torn = line(10) + &"y".repeat(150_000);
        let short_torn = line(150_000) + "zz";
        let cases: [(&str, Option<u64>); 5] = [
            ("", None),
            (&whole, None),
            (&long_torn, Some(11)),
            (&short_torn, Some(150_001)),
            ("no newline at all", Some(0)),
        ];
        for (content, want) in cases {
            std::fs::write(&p, content).unwrap();
            let mut f = std::fs::File::open(&p).unwrap();
            assert_eq!(torn_tail_start(&mut f).unwrap(), want, "{}", content.len());
        }
    }

    #[test]
    fn append_ends_a_torn_line_first() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("d.noma.provenance");
        let e = SidecarEntry::Signature(RecordSignature {
            op_id: "x".into(),
            signer: "a".into(),
            sig: "s".into(),
        });
        append(&p, std::slice::from_ref(&e)).unwrap();
        std::fs::write(&p, format!("{}{{\"kind\":", e.to_line())).unwrap();
        append(&p, std::slice::from_ref(&e)).unwrap();
        let bytes = std::fs::read(&p).unwrap();
        assert_eq!(bytes, format!("{0}{0}", e.to_line()).into_bytes());
        assert_eq!(Sidecar::parse(&bytes).unwrap().signatures.len(), 1);
        // A torn line longer than the block read back, and one with no
        // line before it at all.
        let long = "x".repeat(200 * 1024);
        std::fs::write(&p, format!("{}{long}", e.to_line())).unwrap();
        append(&p, std::slice::from_ref(&e)).unwrap();
        assert_eq!(
            std::fs::read(&p).unwrap(),
            format!("{0}{0}", e.to_line()).into_bytes()
        );
        std::fs::write(&p, &long).unwrap();
        append(&p, std::slice::from_ref(&e)).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), e.to_line().into_bytes());
        assert_eq!(
            sidecar_path(Path::new("a/d.noma")),
            Path::new("a/d.noma.provenance")
        );
    }
}

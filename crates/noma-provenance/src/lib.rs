//! Provenance: signed transcript records and human approval of agent
//! edits (the design and its threat model are in
//! `.noma/provenance.noma`). Everything here works on bytes and files:
//! no repository, no cache (reading them is `noma-git`'s job).
//!
//! - [`canonical`]: the RFC 8785 payloads a signature and an approval bind;
//! - [`sshsig`]: SSHSIG sign/verify (namespace `noma`, Ed25519 keys from
//!   files or the running ssh-agent);
//! - [`signers`]: `.noma/allowed_signers` in git's format, each line read
//!   as OpenSSH reads it ([`openssh`]);
//! - [`sidecar`]: `<doc>.provenance`, the set of signatures and approvals
//!   beside the transcript;
//! - [`verify`]: what each record's signature and approval say, by code;
//! - [`approval`]: the records waiting for a person's approval, and the
//!   approval written;
//! - [`config`]: the repository policy (`.noma/config.yml`), whose
//!   `provenance:` section verification reads.
//!
//! [`Signer`] is what writers (`noma patch`, `noma record`, `noma mcp`,
//! `noma approve`) hold: a key and the principal it signs as.

use std::path::{Path, PathBuf};

use noma_core::transcript::Record;

pub mod approval;
pub mod canonical;
pub mod config;
pub mod openssh;
pub mod outside_signatures;
pub mod sidecar;
pub mod sidecar_change;
pub mod signers;
pub mod sshsig;
pub mod verify;

pub use sidecar::{sidecar_path, Sidecar, SidecarEntry};
pub use signers::{AllowedSigners, ALLOWED_SIGNERS_PATH};
pub use sshsig::{KeyError, SigningKey, NAMESPACE};
pub use verify::{Problem, RecordStatus, Trust};

/// Environment variable naming the signing key file.
pub const KEY_ENV: &str = "NOMA_SIGNING_KEY";
/// Environment variable naming the principal to sign as.
pub const PRINCIPAL_ENV: &str = "NOMA_SIGNING_PRINCIPAL";

/// A key and the principal it signs as.
#[derive(Debug)]
pub struct Signer {
    key: SigningKey,
    /// The principal (as listed in `.noma/allowed_signers`).
    pub principal: String,
}

/// Why no signer could be set up.
#[derive(Debug, thiserror::Error)]
pub enum SignerError {
    /// The key file is unusable.
    #[error(transparent)]
    Key(#[from] KeyError),
    /// No principal for the key.
    #[error("{path}: no principal for this key: list it in {ALLOWED_SIGNERS_PATH} (`PRINCIPAL namespaces=\"noma\" {public}`) or set {PRINCIPAL_ENV}")]
    NoPrincipal {
        /// The key file.
        path: PathBuf,
        /// Its public key.
        public: String,
    },
    /// The key is listed, but not for now: rotated out, or not yet in.
    #[error("{path}: no principal for this key now: {why}")]
    OutsideWindow {
        /// The key file.
        path: PathBuf,
        /// The line and its window.
        why: String,
    },
}

impl Signer {
    /// The public half of the key, as an allowed-signers line names it.
    pub fn public_openssh(&self) -> String {
        self.key.public_openssh()
    }

    /// A signer for `key`, as the principal `principal` when given, else
    /// `NOMA_SIGNING_PRINCIPAL`, else the first literal principal the
    /// allowed-signers file at `signers` (when it exists) lists for the key
    /// on a line valid now (a line noma cannot use is skipped, never an
    /// error).
    pub fn new(
        key: SigningKey,
        principal: Option<String>,
        signers: Option<&Path>,
    ) -> Result<Signer, SignerError> {
        let principal = match principal.or_else(|| std::env::var(PRINCIPAL_ENV).ok()) {
            Some(p) if !p.is_empty() => p,
            _ => {
                let text = signers
                    .and_then(|p| noma_store::fsio::read_regular(p).ok())
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .unwrap_or_default();
                let signers = AllowedSigners::parse(&text);
                let now = signers::now();
                match signers.principal_of(key.public_key(), now) {
                    Some(p) => p,
                    None => {
                        return Err(match signers.outside_window(key.public_key(), now) {
                            Some(why) => SignerError::OutsideWindow {
                                path: key.path.clone(),
                                why,
                            },
                            None => SignerError::NoPrincipal {
                                path: key.path.clone(),
                                public: key.public_openssh(),
                            },
                        })
                    }
                }
            }
        };
        Ok(Signer { key, principal })
    }

    /// The sidecar entry signing `rec`, a record of the document of
    /// lineage `lineage` (`noma-record-signature/2`).
    pub fn sign_record(
        &self,
        rec: &Record,
        lineage: &canonical::Lineage,
    ) -> Result<SidecarEntry, SignerError> {
        let sig = self
            .key
            .sign(&canonical::record_payload_v2(rec, &self.principal, lineage))?;
        Ok(SidecarEntry::Signature(sidecar::RecordSignature {
            op_id: rec.op_id.clone(),
            signer: self.principal.clone(),
            sig,
            payload: Some(canonical::RECORD_PAYLOAD_V2.to_string()),
        }))
    }

    /// The public half of the signing key.
    pub fn public_key(&self) -> &ssh_key::PublicKey {
        self.key.public_key()
    }

    /// The sidecar entries signing each of `records`, records of the
    /// document of lineage `lineage`.
    pub fn sign_records(
        &self,
        records: &[Record],
        lineage: &canonical::Lineage,
    ) -> Result<Vec<SidecarEntry>, SignerError> {
        records
            .iter()
            .map(|r| self.sign_record(r, lineage))
            .collect()
    }

    /// A `noma-approval/3` of `records` (in transcript order) of the
    /// document of lineage `lineage`, whose last one leaves the document
    /// at `draft_sha256`: each record's intent is bound on its own, so the
    /// approval keeps covering each one still in the transcript, wherever
    /// history work moves it, and only in that document.
    pub fn approve(
        &self,
        doc_uri: &str,
        records: &[&Record],
        draft_sha256: &str,
        lineage: &canonical::Lineage,
    ) -> Result<SidecarEntry, SignerError> {
        let body = canonical::ApprovalBody {
            approver: self.principal.clone(),
            ts: noma_core::transcript::now_ts(),
            doc_uri: doc_uri.to_string(),
            op_ids: records.iter().map(|r| r.op_id.clone()).collect(),
            subject_sha256: String::new(),
            intent_sha256: records
                .iter()
                .map(|r| canonical::intent_sha256(r))
                .collect(),
            draft_sha256: draft_sha256.to_string(),
            lineage: Some(lineage.clone()),
        };
        let sig = self.key.sign(&canonical::approval_payload(&body))?;
        Ok(SidecarEntry::Approval(sidecar::Approval { body, sig }))
    }
}

/// Where a writer's signing key comes from, in order: the command line's
/// `--key FILE`, `NOMA_SIGNING_KEY`, then (only when `use_git` — the
/// policy asks for signatures, so a repository without provenance pays no
/// lookup) git's `user.signingkey` when `gpg.format` is `ssh`. None: no
/// key is configured, nothing is signed.
pub fn key_source(
    flag: Option<&Path>,
    use_git: bool,
    git: &dyn Fn(&str) -> Option<String>,
) -> Option<KeySource> {
    if let Some(p) = flag {
        return Some(KeySource::File(p.to_path_buf()));
    }
    if let Some(p) = std::env::var_os(KEY_ENV).filter(|v| !v.is_empty()) {
        return Some(KeySource::File(PathBuf::from(p)));
    }
    if !use_git || git("gpg.format").as_deref() != Some("ssh") {
        return None;
    }
    let key = git("user.signingkey")?;
    // git also accepts a literal public key (`key::ssh-ed25519 AAAA…`),
    // signed with through ssh-agent.
    if let Some(literal) = key.strip_prefix("key::") {
        return Some(KeySource::Literal(literal.to_string()));
    }
    Some(KeySource::File(match key.strip_prefix("~/") {
        Some(rest) => std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_default()
            .join(rest),
        None => PathBuf::from(key),
    }))
}

/// Where a signing key is: a file (a private key, or a public key the
/// ssh-agent signs with), or git's literal `key::ssh-ed25519 AAAA…`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// A key file.
    File(PathBuf),
    /// A public key given inline (git's `user.signingkey = key::…`).
    Literal(String),
}

impl KeySource {
    /// The key, ready to sign.
    pub fn load(&self) -> Result<SigningKey, KeyError> {
        match self {
            KeySource::File(path) => SigningKey::load(path),
            KeySource::Literal(text) => {
                SigningKey::from_openssh(text, Path::new("git config user.signingkey"))
            }
        }
    }
}

/// Verification scenarios and their fixtures, shared with `noma-git`'s
/// tests through the `test-support` feature.
#[cfg(any(test, feature = "test-support"))]
#[allow(dead_code)]
pub mod tests;

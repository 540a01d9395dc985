//! Why a provenance step on a work tree could not be taken.

use std::path::PathBuf;

use noma_provenance::config::{PolicyError, CONFIG_PATH};

/// Why a work tree's provenance could not be read, checked or written.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be read or written.
    #[error("{}: {error}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        error: std::io::Error,
    },
    /// The work tree's policy file does not parse.
    #[error("{CONFIG_PATH}: {0}")]
    Policy(PolicyError),
    /// The transcript does not parse.
    #[error("{}: {error}", path.display())]
    Transcript {
        /// The transcript.
        path: PathBuf,
        /// Why it does not parse.
        error: noma_core::transcript::ReadError,
    },
    /// A file indexed once no longer holds what was indexed.
    #[error("the {0} changed while it was read; run the check again")]
    Changed(&'static str),
    /// A file indexed once cannot be read again.
    #[error("the {what} cannot be read again: {error}")]
    Reread {
        /// `transcript` or `sidecar`.
        what: &'static str,
        /// What the system said.
        error: std::io::Error,
    },
    /// A verdict query is not three tab-separated fields.
    #[error("{0:?}: expected PRINCIPAL<TAB>TIME<TAB>PUBLIC KEY")]
    Query(String),
    /// A verdict query's time does not read.
    #[error("{0:?}: not a YYYYMMDD[HHMM[SS]][Z] time")]
    Time(String),
    /// A verdict query's key does not read.
    #[error("{key:?}: {error}")]
    Key {
        /// The key as given.
        key: String,
        /// Why it does not read.
        error: ssh_key::Error,
    },
    /// The approver's key could not be loaded.
    #[error(transparent)]
    Signer(#[from] noma_provenance::SignerError),
    /// No key to approve with.
    #[error("no signing key: pass --key FILE, set NOMA_SIGNING_KEY, or configure git's user.signingkey with gpg.format=ssh")]
    NoSigningKey,
    /// The approver is an agent principal.
    #[error("{principal} is an agent principal (agent_principals in {CONFIG_PATH}): only a person approves, so an approval signed with this key would never count; nothing was written")]
    AgentApprover {
        /// The approver's principal.
        principal: String,
    },
    /// The allowed signers do not list the approver's key.
    #[error("{} does not list this key ({fingerprint}) for {principal}: an approval signed with it would never count; nothing was written (list `{principal} namespaces=\"noma\" {key}` there on the base branch, or approve with a listed key)", noma_provenance::ALLOWED_SIGNERS_PATH)]
    KeyNotListed {
        /// The approver's principal.
        principal: String,
        /// The key's SHA256 fingerprint.
        fingerprint: String,
        /// The key in OpenSSH form.
        key: String,
    },
    /// The document has no transcript: no record waits.
    #[error("{}: no transcript ({}), so no record waits for approval; start one with `noma record {}` (agents' `noma patch --inplace` and MCP edits record themselves)", doc.display(), transcript.display(), doc.display())]
    NoTranscript {
        /// The document.
        doc: PathBuf,
        /// Its transcript's path.
        transcript: PathBuf,
    },
    /// The transcript holds no record to approve.
    #[error("{}: no record to approve", .0.display())]
    NothingToApprove(PathBuf),
    /// The waiting records, or the approval, could not be found or written.
    #[error(transparent)]
    Approval(#[from] noma_provenance::approval::ApprovalError),
    /// The caller's step over the statuses stopped.
    #[error(transparent)]
    Stopped(Box<dyn std::error::Error + Send + Sync>),
}

impl Error {
    /// A file error at `path`.
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.into();
        move |error| Error::Io { path, error }
    }
}

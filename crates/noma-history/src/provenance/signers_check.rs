//! `noma provenance check-signers` and the signers part of `noma hooks
//! status`: a work tree's `.noma/allowed_signers` read as `ssh-keygen -Y
//! verify` reads it, with what its owner should know (skipped lines,
//! times without a zone, agent keys also listed for someone else), and
//! the verdicts `ssh-keygen -Y verify` would give.

use std::path::{Path, PathBuf};

use ssh_key::PublicKey;

use noma_provenance::config::{Policy, CONFIG_PATH};
use noma_provenance::openssh::parse_absolute_time;
use noma_provenance::signers::{AllowedSigners, SignersWarning, ALLOWED_SIGNERS_PATH};
use noma_provenance::verify::Trust;

/// An allowed-signers file, read.
#[derive(Debug)]
pub struct SignersCheck {
    /// The file read.
    pub path: PathBuf,
    /// Lines noma uses.
    pub usable: usize,
    /// Everything worth a warning.
    pub warnings: Vec<SignersWarning>,
    signers: AllowedSigners,
}

/// Reads `file`, or the allowed-signers file of the work tree holding
/// `dir`, with that work tree's policy (its `agent_principals` name the
/// agents). `Ok(None)`: no file was named and the work tree has none.
pub fn load(file: Option<&Path>, dir: &Path) -> Result<Option<SignersCheck>, super::Error> {
    let root = crate::git::blob::worktree_root(dir).unwrap_or_else(|| dir.to_path_buf());
    let path = file.map_or_else(|| root.join(ALLOWED_SIGNERS_PATH), Path::to_path_buf);
    let bytes = match noma_store::fsio::read_regular(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && file.is_none() => return Ok(None),
        Err(e) => return Err(super::Error::io(&path)(e)),
    };
    let config = match noma_store::fsio::read_regular(&root.join(CONFIG_PATH)) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(_) => String::new(),
    };
    let policy = Policy::from_yaml(&config).map_err(super::Error::Policy)?;
    let signers = AllowedSigners::parse(&String::from_utf8_lossy(&bytes));
    let trust = Trust::new(policy, signers);
    Ok(Some(SignersCheck {
        path,
        usable: trust.signers.len(),
        warnings: trust.warnings(),
        signers: trust.signers,
    }))
}

impl SignersCheck {
    /// The verdict for one query `PRINCIPAL<TAB>TIME<TAB>PUBLIC KEY`
    /// (TIME as `ssh-keygen -Overify-time=` takes it): whether
    /// `ssh-keygen -Y verify -n noma -I PRINCIPAL` accepts a signature by
    /// that key at that time.
    pub fn verdict(&self, query: &str) -> Result<bool, super::Error> {
        let mut parts = query.splitn(3, '\t');
        let (Some(principal), Some(time), Some(key)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(super::Error::Query(query.to_string()));
        };
        let (at, _) =
            parse_absolute_time(time).ok_or_else(|| super::Error::Time(time.to_string()))?;
        let key = PublicKey::from_openssh(key.trim()).map_err(|error| super::Error::Key {
            key: key.to_string(),
            error,
        })?;
        Ok(self.signers.allows_at(principal, &key, Some(at)))
    }
}

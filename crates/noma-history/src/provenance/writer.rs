//! How writers (`noma patch`, `noma record`, `noma mcp`) find their key
//! and sign what they append.
//!
//! A key is configured by `--key FILE`, else `NOMA_SIGNING_KEY`, else —
//! only when the repository's policy turns provenance on — git's
//! `user.signingkey` with `gpg.format=ssh`. With none of these (and
//! always with `--no-sign`) nothing is looked up beyond the policy file
//! and nothing is signed: the write path is what it was.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use noma_core::transcript::Record;
use noma_provenance::{key_source, sidecar, Signer, SignerError, ALLOWED_SIGNERS_PATH};
use noma_store::engine::BeforeAppend;

use crate::git::repo::Repo;
use noma_provenance::config::Policy;

/// The step a writer runs on its records before appending them: their
/// signatures appended to the document's sidecar, synced, before the
/// records themselves (so a kill between the two leaves a signature of a
/// record that never was, never a record whose signature was lost).
pub fn signing_step(signer: Arc<Signer>) -> BeforeAppend {
    BeforeAppend(Arc::new(
        move |doc: &Path, records: &[Record], first: Option<&Record>| {
            let Some(first) = first else {
                return Ok(());
            };
            let lineage = noma_provenance::canonical::Lineage::of(first);
            let entries = signer
                .sign_records(records, &lineage)
                .map_err(|e| std::io::Error::other(e.to_string()))?;
            let path = sidecar::sidecar_path(doc);
            // The engine names the transcript; the refusal is the sidecar's.
            sidecar::append(&path, &entries)
                .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))
        },
    ))
}

/// The signer a writer of `doc` uses: from `flag` (`--key`), the
/// environment, or git when the repository's policy asks for signatures.
/// `Ok(None)`: no key is configured.
pub fn writer_signer(doc: &Path, flag: Option<&Path>) -> Result<Option<Signer>, SignerError> {
    signer_in(root_of(doc).as_deref(), flag)
}

/// The signer of an approval of `doc`: approving is signing, so git's
/// `user.signingkey` (with `gpg.format=ssh`) is asked whatever the
/// policy says.
pub fn approver_signer(doc: &Path, flag: Option<&Path>) -> Result<Option<Signer>, SignerError> {
    signer_where(root_of(doc).as_deref(), flag, true)
}

/// The work tree holding `doc`, if any.
fn root_of(doc: &Path) -> Option<PathBuf> {
    let dir = doc
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    crate::git::blob::worktree_root(dir)
}

/// [`writer_signer`] for the repository whose work tree is `root`.
pub fn signer_in(root: Option<&Path>, flag: Option<&Path>) -> Result<Option<Signer>, SignerError> {
    signer_where(root, flag, false)
}

fn signer_where(
    root: Option<&Path>,
    flag: Option<&Path>,
    always_git: bool,
) -> Result<Option<Signer>, SignerError> {
    let policy_on = || {
        root.is_some_and(|r| {
            noma_provenance::config::Policy::load(r).is_ok_and(|p| !p.file.provenance.is_off())
        })
    };
    let git = |key: &str| -> Option<String> {
        crate::git::repo::Repo::discover(root?)
            .ok()?
            .config_string(key)
    };
    signer_with(root, flag, || always_git || policy_on(), git)
}

/// The signer from `flag`, the environment, or (when `use_git` says so,
/// asked only when no key was named) git's configuration read by `git`.
fn signer_with(
    root: Option<&Path>,
    flag: Option<&Path>,
    use_git: impl FnOnce() -> bool,
    git: impl Fn(&str) -> Option<String>,
) -> Result<Option<Signer>, SignerError> {
    let explicit =
        flag.is_some() || std::env::var_os(noma_provenance::KEY_ENV).is_some_and(|v| !v.is_empty());
    // git's key is used only where the policy turns provenance on (or for
    // an approval); the policy is asked only when no key was named.
    let use_git = !explicit && use_git();
    let Some(source) = key_source(flag, use_git, &git) else {
        return Ok(None);
    };
    let key = source.load()?;
    let signers: Option<PathBuf> = root.map(|r| r.join(ALLOWED_SIGNERS_PATH));
    Signer::new(key, None, signers.as_deref()).map(Some)
}

/// The `before_append` step for a writer's command line: `None` with
/// `--no-sign` or when no key is configured.
pub fn step_for(
    doc: &Path,
    flag: Option<&Path>,
    no_sign: bool,
) -> Result<Option<BeforeAppend>, SignerError> {
    if no_sign {
        return Ok(None);
    }
    Ok(writer_signer(doc, flag)?.map(|s| signing_step(Arc::new(s))))
}

/// [`step_for`] with what the caller already read: the work tree `root`,
/// its repository and its policy (a request reads each once).
pub fn step_in<'r>(
    root: Option<&Path>,
    repo: impl Fn() -> Option<&'r Repo>,
    policy: impl FnOnce() -> Option<&'r Policy>,
    flag: Option<&Path>,
    no_sign: bool,
) -> Result<Option<BeforeAppend>, SignerError> {
    if no_sign {
        return Ok(None);
    }
    let signer = signer_with(
        root,
        flag,
        || policy().is_some_and(|p| !p.file.provenance.is_off()),
        |key| repo()?.config_string(key),
    )?;
    Ok(signer.map(|s| signing_step(Arc::new(s))))
}

//! A private key staged for commit (`private-key-staged`): the signing
//! walk-throughs create keys, and `git add -A` in the directory holding
//! one would publish it with the next push. Every staged file added or
//! changed is looked at, whatever its name, by its first bytes only: a PEM
//! or OpenSSH private key starts with its armour line.

use super::{Finding, Guard};
use crate::git::repo::{GitError, Staged};
use crate::git::Oid;
use noma_core::diag::shell_word;

/// Bytes read from the start of each staged file: the longest armour line
/// below fits.
const PREFIX: usize = 64;

/// Larger files are not private keys (an 8192-bit RSA key in PEM is about
/// 6.5 KB), and are not read at all.
const MAX_KEY_BYTES: usize = 16 * 1024;

/// Whether `head`, a file's first bytes, opens a private key: an OpenSSH,
/// PKCS#1/#8 (RSA, EC, DSA, encrypted) or PGP private key armour line.
pub(crate) fn is_private_key(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let text = text.trim_start_matches('\u{feff}').trim_start();
    let Some(rest) = text.strip_prefix("-----BEGIN ") else {
        return false;
    };
    let label = rest.split("-----").next().unwrap_or_default();
    label.ends_with("PRIVATE KEY") || label == "PGP PRIVATE KEY BLOCK"
}

/// A finding per staged private key.
pub(super) fn private_keys(g: &Guard<'_>, staged: &Staged) -> Result<Vec<Finding>, GitError> {
    let files: Vec<(&str, Oid)> = staged
        .changes
        .iter()
        .filter(|ch| !ch.new_link)
        .filter_map(|ch| Some((ch.path.as_str(), ch.new_id.filter(|id| !id.is_zero())?)))
        .collect();
    let ids: Vec<Oid> = files.iter().map(|(_, id)| *id).collect();
    let heads = g.repo.blob_prefixes(&ids, PREFIX, MAX_KEY_BYTES)?;
    Ok(files
        .iter()
        .zip(heads)
        .filter(|(_, head)| head.as_deref().is_some_and(is_private_key))
        .map(|((path, _), _)| key_finding(path))
        .collect())
}

fn key_finding(path: &str) -> Finding {
    Finding::error(
        "private-key-staged",
        path,
        None,
        "this file is a private key: committed, every clone (and the remote) gets it. Keep \
         signing keys outside the repository (e.g. ~/.ssh/noma_agent)"
            .to_string(),
    )
    .fix(format!(
        "git rm --cached {}, move the key out of the work tree (or add it to .gitignore), and \
         commit again",
        shell_word(path)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_key_armour_is_recognised_and_public_keys_are_not() {
        for key in [
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn",
            "-----BEGIN RSA PRIVATE KEY-----\n",
            "-----BEGIN EC PRIVATE KEY-----\n",
            "-----BEGIN PRIVATE KEY-----\n",
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\n",
            "\u{feff}\n-----BEGIN DSA PRIVATE KEY-----\n",
            "-----BEGIN PGP PRIVATE KEY BLOCK-----\n",
        ] {
            assert!(is_private_key(key.as_bytes()), "{key}");
        }
        for not in [
            "ssh-ed25519 AAAAC3Nz agent@example",
            "-----BEGIN PUBLIC KEY-----\n",
            "-----BEGIN CERTIFICATE-----\n",
            "-----BEGIN SSH SIGNATURE-----\n",
            "# -----BEGIN OPENSSH PRIVATE KEY----- (docs quoting it)\n",
            "",
        ] {
            assert!(!is_private_key(not.as_bytes()), "{not}");
        }
    }
}

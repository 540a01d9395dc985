//! SSHSIG signatures (OpenSSH's `PROTOCOL.sshsig`, what `ssh-keygen -Y
//! sign` writes and git uses for signed commits) with namespace `noma`,
//! over Ed25519 keys read from OpenSSH key files.
//!
//! Keys come from files only: the ssh-agent protocol has no client crate
//! of the field's standing (RustCrypto's `ssh-key` reads and signs with
//! key files), so a public-key file or an encrypted private key is
//! refused with advice instead of being half-supported. The private key
//! is read into memory (zeroised on drop by `ssh-key`) and never written.

use std::path::{Path, PathBuf};

use curve25519_dalek::constants::ED25519_BASEPOINT_POINT;
use curve25519_dalek::edwards::{CompressedEdwardsY, EdwardsPoint};
use curve25519_dalek::scalar::Scalar;
use curve25519_dalek::traits::{IsIdentity, VartimeMultiscalarMul};
use sha2::{Digest, Sha512};
use ssh_key::{HashAlg, LineEnding, PrivateKey, PublicKey, SshSig};

/// The SSHSIG namespace of every noma signature.
pub const NAMESPACE: &str = "noma";

/// Why a signing key cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The file cannot be read.
    #[error("{path}: cannot read the signing key: {source}")]
    Io {
        /// The key file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A public key where a private key is needed.
    #[error("{path}: is a public key; noma signs with the private key file (signing through ssh-agent is not supported), e.g. --key ~/.ssh/id_ed25519")]
    PublicKeyOnly {
        /// The key file.
        path: PathBuf,
    },
    /// A passphrase-protected key.
    #[error("{path}: the key is passphrase-protected; noma cannot prompt for it (use an unencrypted key kept for signing, or ssh-agent-free tooling)")]
    Encrypted {
        /// The key file.
        path: PathBuf,
    },
    /// Not an Ed25519 key.
    #[error("{path}: a {algorithm} key; noma signs with Ed25519 keys (ssh-keygen -t ed25519)")]
    NotEd25519 {
        /// The key file.
        path: PathBuf,
        /// What it is.
        algorithm: String,
    },
    /// Not an OpenSSH private key.
    #[error("{path}: not an OpenSSH private key: {reason}")]
    Malformed {
        /// The key file.
        path: PathBuf,
        /// The parser's reason.
        reason: String,
    },
}

/// A private key ready to sign.
pub struct SigningKey {
    key: PrivateKey,
    /// Where it was read from (for messages).
    pub path: PathBuf,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print key material.
        f.debug_struct("SigningKey")
            .field("path", &self.path)
            .field("public", &self.public_openssh())
            .finish()
    }
}

impl SigningKey {
    /// Reads an unencrypted OpenSSH Ed25519 private key file.
    pub fn load(path: &Path) -> Result<SigningKey, KeyError> {
        let text = std::fs::read_to_string(path).map_err(|source| KeyError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        SigningKey::from_openssh(&text, path)
    }

    /// Parses key text read from `path`.
    pub fn from_openssh(text: &str, path: &Path) -> Result<SigningKey, KeyError> {
        let path = path.to_path_buf();
        if PublicKey::from_openssh(text.trim()).is_ok() {
            return Err(KeyError::PublicKeyOnly { path });
        }
        let key = PrivateKey::from_openssh(text).map_err(|e| KeyError::Malformed {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        if key.is_encrypted() {
            return Err(KeyError::Encrypted { path });
        }
        if key.algorithm() != ssh_key::Algorithm::Ed25519 {
            return Err(KeyError::NotEd25519 {
                path,
                algorithm: key.algorithm().to_string(),
            });
        }
        Ok(SigningKey { key, path })
    }

    /// The public key in `ssh-ed25519 AAAA…` form (no comment).
    pub fn public_openssh(&self) -> String {
        public_openssh(self.key.public_key())
    }

    /// The public key.
    pub fn public_key(&self) -> &PublicKey {
        self.key.public_key()
    }

    /// An armored SSHSIG (`-----BEGIN SSH SIGNATURE-----`) of `payload`
    /// in namespace `noma`, as `ssh-keygen -Y sign -n noma` writes it.
    pub fn sign(&self, payload: &[u8]) -> Result<String, ssh_key::Error> {
        self.key
            .sign(NAMESPACE, HashAlg::Sha512, payload)?
            .to_pem(LineEnding::LF)
    }
}

/// `ssh-ed25519 AAAA…` without the comment.
pub fn public_openssh(key: &PublicKey) -> String {
    let mut k = key.clone();
    k.set_comment("");
    k.to_openssh().unwrap_or_default().trim().to_string()
}

/// Why a signature does not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SigError {
    /// Not an armored SSHSIG.
    #[error("not an SSH signature: {0}")]
    Malformed(String),
    /// Made for another namespace (e.g. `git`, `file`).
    #[error("signed in namespace {0:?}, not \"noma\"")]
    Namespace(String),
    /// The signature does not match the payload and its key.
    #[error("the signature does not match the signed fields")]
    Mismatch,
}

/// Verifies an armored SSHSIG over `payload` in namespace `noma`; returns
/// the key that made it (whose trust is the caller's question).
pub fn verify(armored: &str, payload: &[u8]) -> Result<PublicKey, SigError> {
    let sig = SshSig::from_pem(armored).map_err(|e| SigError::Malformed(e.to_string()))?;
    if sig.namespace() != NAMESPACE {
        return Err(SigError::Namespace(sig.namespace().to_string()));
    }
    let key = PublicKey::new(sig.public_key().clone(), "");
    key.verify(NAMESPACE, payload, &sig)
        .map_err(|_| SigError::Mismatch)?;
    Ok(key)
}

/// Below this many signatures a failing batch is verified one by one
/// rather than split again.
const SMALLEST_BATCH: usize = 8;

/// One Ed25519 SSHSIG ready for batch verification.
struct Batched {
    /// Index in the caller's list.
    item: usize,
    /// Index of its key in [`verify_many`]'s distinct keys.
    key: usize,
    /// R, the signature's first half (compressed).
    r: CompressedEdwardsY,
    /// s, the second half, checked canonical.
    s: Scalar,
    /// H(R || A || M): the challenge, as Ed25519 computes it.
    h: Scalar,
}

/// Whether every signature of `batch` verifies, in one multiscalar
/// multiplication: with random-looking 128-bit weights z_i (derived from
/// every input, as ed25519-dalek's `verify_batch` derives them, so a
/// forger cannot choose signatures whose errors cancel),
/// `-(Σ z_i s_i) B + Σ z_i R_i + Σ_A (Σ_{i signed by A} z_i h_i) A = 0`.
/// This is `verify_batch`'s equation with the terms of each distinct key
/// gathered into one: a transcript signed by a few keys costs about one
/// point per signature instead of two.
fn batch_holds(batch: &[Batched], keys: &[EdwardsPoint]) -> bool {
    let mut seed = blake3::Hasher::new_derive_key("noma 2026-11-26 SSHSIG Ed25519 batch weights");
    for b in batch {
        seed.update(b.r.as_bytes());
        seed.update(b.s.as_bytes());
        seed.update(b.h.as_bytes());
        seed.update(keys[b.key].compress().as_bytes());
    }
    let mut weights = seed.finalize_xof();
    let mut basepoint = Scalar::ZERO;
    let mut per_key = vec![Scalar::ZERO; keys.len()];
    let mut zs = Vec::with_capacity(batch.len());
    for b in batch {
        let mut z = [0u8; 16];
        weights.fill(&mut z);
        let z = Scalar::from(u128::from_le_bytes(z));
        basepoint -= z * b.s;
        per_key[b.key] += z * b.h;
        zs.push(z);
    }
    let rs = batch.iter().map(|b| b.r.decompress());
    let sum = EdwardsPoint::optional_multiscalar_mul(
        std::iter::once(basepoint).chain(zs).chain(per_key),
        std::iter::once(Some(ED25519_BASEPOINT_POINT))
            .chain(rs)
            .chain(keys.iter().map(|k| Some(*k))),
    );
    sum.is_some_and(|p| p.is_identity())
}

/// Marks every signature of `batch` that verifies: the whole batch at
/// once, else each half, down to [`SMALLEST_BATCH`], so k forgeries among
/// n signatures cost about k·log(n) batches, not n single checks.
fn verify_split(batch: &[Batched], keys: &[EdwardsPoint], ok: &mut [bool]) {
    if batch.len() <= SMALLEST_BATCH {
        for b in batch {
            ok[b.item] = batch_holds(std::slice::from_ref(b), keys);
        }
    } else if batch_holds(batch, keys) {
        for b in batch {
            ok[b.item] = true;
        }
    } else {
        let (a, b) = batch.split_at(batch.len() / 2);
        verify_split(a, keys, ok);
        verify_split(b, keys, ok);
    }
}

/// [`verify`] of many (armored SSHSIG, payload) pairs, all Ed25519
/// signatures in namespace `noma` in one batch (a batch that fails is
/// split to find the signatures that do not verify); each result is
/// what [`verify`] says: a signature the batch does not vouch for is
/// verified alone, for its own error.
pub fn verify_many(items: &[(&str, &[u8])]) -> Vec<Result<PublicKey, SigError>> {
    let mut keys: Vec<EdwardsPoint> = Vec::new();
    let mut key_bytes: Vec<[u8; 32]> = Vec::new();
    let mut signers: Vec<Option<PublicKey>> = vec![None; items.len()];
    let mut batch = Vec::with_capacity(items.len());
    for (i, (armored, payload)) in items.iter().enumerate() {
        let Some(sig) = SshSig::from_pem(armored)
            .ok()
            .filter(|sig| sig.namespace() == NAMESPACE)
        else {
            continue;
        };
        let (Some(a), Ok(raw), Ok(data)) = (
            sig.public_key().ed25519(),
            <[u8; 64]>::try_from(sig.signature_bytes()),
            SshSig::signed_data(NAMESPACE, sig.hash_alg(), payload),
        ) else {
            continue;
        };
        // One decompression per distinct key, not per signature.
        let key = match key_bytes.iter().position(|k| *k == a.0) {
            Some(k) => k,
            None => match CompressedEdwardsY(a.0).decompress() {
                Some(point) => {
                    keys.push(point);
                    key_bytes.push(a.0);
                    keys.len() - 1
                }
                None => continue,
            },
        };
        let (r, s) = raw.split_at(32);
        let Some(s) = Option::<Scalar>::from(Scalar::from_canonical_bytes(
            s.try_into().unwrap_or_default(),
        )) else {
            continue;
        };
        let h: [u8; 64] = Sha512::new()
            .chain_update(r)
            .chain_update(a.0)
            .chain_update(&data)
            .finalize()
            .into();
        let h = Scalar::from_bytes_mod_order_wide(&h);
        batch.push(Batched {
            item: i,
            key,
            r: CompressedEdwardsY(r.try_into().unwrap_or_default()),
            s,
            h,
        });
        signers[i] = Some(PublicKey::new(sig.public_key().clone(), ""));
    }
    let mut ok = vec![false; items.len()];
    verify_split(&batch, &keys, &mut ok);
    signers
        .into_iter()
        .zip(ok)
        .zip(items)
        .map(|((signer, ok), (armored, payload))| match signer {
            Some(key) if ok => Ok(key),
            _ => verify(armored, payload),
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A fixed Ed25519 key for tests (generated with `ssh-keygen -t
    /// ed25519 -N ""`; it guards nothing).
    pub(crate) const TEST_KEY: &str = "-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW
QyNTUxOQAAACCAi+89LE/CgVEBpXsFcW3DiX/tqslJxFgUmKmHT/68EgAAAJD4oedV+KHn
VQAAAAtzc2gtZWQyNTUxOQAAACCAi+89LE/CgVEBpXsFcW3DiX/tqslJxFgUmKmHT/68Eg
AAAEBWX9YOetQXP0F/V4lFKc1x6PBGKBtlmmvji0g8mzbhkYCL7z0sT8KBUQGlewVxbcOJ
f+2qyUnEWBSYqYdP/rwSAAAACXRlc3RAbm9tYQECAwQ=
-----END OPENSSH PRIVATE KEY-----
";

    pub(crate) fn test_key() -> SigningKey {
        SigningKey::from_openssh(TEST_KEY, Path::new("test")).unwrap()
    }

    #[test]
    fn signs_and_verifies_and_refuses_what_it_must() {
        let k = test_key();
        let sig = k.sign(b"payload").unwrap();
        assert!(sig.starts_with("-----BEGIN SSH SIGNATURE-----\n"));
        let who = verify(&sig, b"payload").unwrap();
        assert_eq!(public_openssh(&who), k.public_openssh());
        assert_eq!(verify(&sig, b"payloae"), Err(SigError::Mismatch));
        assert!(matches!(
            verify("junk", b"payload"),
            Err(SigError::Malformed(_))
        ));
        let other_ns = k
            .key
            .sign("git", HashAlg::Sha512, b"payload")
            .unwrap()
            .to_pem(LineEnding::LF)
            .unwrap();
        assert_eq!(
            verify(&other_ns, b"payload"),
            Err(SigError::Namespace("git".into()))
        );
        let public = k.public_openssh();
        assert!(matches!(
            SigningKey::from_openssh(&public, Path::new("k.pub")),
            Err(KeyError::PublicKeyOnly { .. })
        ));
        assert!(matches!(
            SigningKey::from_openssh("nonsense", Path::new("k")),
            Err(KeyError::Malformed { .. })
        ));
        assert!(!format!("{k:?}").contains("PRIVATE"));
    }

    #[test]
    fn many_at_once_says_what_one_by_one_says() {
        let k = test_key();
        // A second signer, so one batch gathers the terms of two keys.
        let other = SigningKey {
            key: PrivateKey::from(ssh_key::private::Ed25519Keypair::from_seed(&[7; 32])),
            path: PathBuf::from("other"),
        };
        let payloads: Vec<Vec<u8>> = (0..300).map(|i| format!("p{i}").into_bytes()).collect();
        let sigs: Vec<String> = payloads
            .iter()
            .enumerate()
            .map(|(i, p)| if i % 3 == 0 { &other } else { &k }.sign(p).unwrap())
            .collect();
        let mut items: Vec<(&str, &[u8])> = sigs
            .iter()
            .zip(&payloads)
            .map(|(s, p)| (s.as_str(), p.as_slice()))
            .collect();
        assert!(verify_many(&items).iter().all(Result::is_ok));
        // One forged payload in the first batch, one junk signature.
        items[7].1 = b"forged";
        items[280].0 = "junk";
        let got = verify_many(&items);
        for (i, r) in got.iter().enumerate() {
            assert_eq!(r.is_ok(), i != 7 && i != 280, "{i}");
        }
        assert_eq!(got[7], Err(SigError::Mismatch));
        assert_eq!(
            public_openssh(got[9].as_ref().unwrap()),
            other.public_openssh()
        );
        // A signature moved to another payload of the same signer fails
        // alone, the others still verify.
        items[10].0 = items[11].0;
        let got = verify_many(&items);
        assert_eq!(got[10], Err(SigError::Mismatch));
        assert!(got[11].is_ok() && got[12].is_ok());
    }
}

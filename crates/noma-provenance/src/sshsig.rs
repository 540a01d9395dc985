//! SSHSIG signatures (OpenSSH's `PROTOCOL.sshsig`, what `ssh-keygen -Y
//! sign` writes and git uses for signed commits) with namespace `noma`,
//! over Ed25519 keys.
//!
//! A key is a private key file, or — as git does with
//! `user.signingkey` — a public key (a `.pub` file or git's literal
//! `key::ssh-ed25519 AAAA…`) whose private half the running ssh-agent
//! (`SSH_AUTH_SOCK`) holds; the agent then signs, and noma never sees the
//! private key. A file key is read into memory (zeroised on drop by
//! `ssh-key`); no private key material is ever written.

use std::path::{Path, PathBuf};

use ssh_key::{HashAlg, LineEnding, PrivateKey, PublicKey, SshSig};

/// The SSHSIG namespace of every noma signature.
pub const NAMESPACE: &str = "noma";

/// The environment variable naming the ssh-agent's socket.
pub const AGENT_ENV: &str = "SSH_AUTH_SOCK";

/// Why a signing key cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The file cannot be read.
    #[error(
        "{path}: cannot read the signing key: {source}; check the path, or make a key with \
         `ssh-keygen -t ed25519 -f {path}`"
    )]
    Io {
        /// The key file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A public key, to sign through ssh-agent, with no agent running.
    #[error("{path}: is a public key, so noma signs through ssh-agent, but {AGENT_ENV} is not set: start ssh-agent and `ssh-add` the private key, or pass the private key file (--key ~/.ssh/id_ed25519)")]
    NoAgent {
        /// The key file.
        path: PathBuf,
    },
    /// The running ssh-agent does not hold the key.
    #[error("{path}: ssh-agent ({socket}) does not hold this key ({public}): `ssh-add` its private key, or pass the private key file")]
    AgentLacksKey {
        /// The key file.
        path: PathBuf,
        /// The agent's socket.
        socket: PathBuf,
        /// The public key asked for.
        public: String,
    },
    /// The ssh-agent cannot be reached or refused to sign.
    #[error("{path}: ssh-agent ({socket}): {reason}")]
    Agent {
        /// The key file.
        path: PathBuf,
        /// The agent's socket.
        socket: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// A passphrase-protected key.
    #[error("{path}: the key is passphrase-protected and noma cannot prompt for it: `ssh-add` it to ssh-agent and pass its public key (--key KEY.pub)")]
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

/// A key ready to sign.
pub struct SigningKey {
    holder: Holder,
    public: PublicKey,
    /// Where it was read from (for messages).
    pub path: PathBuf,
}

/// Who holds the private half.
enum Holder {
    /// Read from a key file.
    File(Box<PrivateKey>),
    /// The ssh-agent listening on this socket.
    Agent(PathBuf),
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
    /// Reads an unencrypted OpenSSH Ed25519 private key file, or a public
    /// key file whose private half the running ssh-agent holds.
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
        if let Ok(public) = PublicKey::from_openssh(text.trim()) {
            let socket = std::env::var_os(AGENT_ENV).filter(|v| !v.is_empty());
            let socket = socket.ok_or(KeyError::NoAgent { path: path.clone() })?;
            return SigningKey::in_agent(public, PathBuf::from(socket), path);
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
        Ok(SigningKey {
            public: key.public_key().clone(),
            holder: Holder::File(Box::new(key)),
            path,
        })
    }

    /// The Ed25519 key `public` (read from `path`), signed with by the
    /// ssh-agent on `socket`, which must hold it.
    pub fn in_agent(
        public: PublicKey,
        socket: PathBuf,
        path: PathBuf,
    ) -> Result<SigningKey, KeyError> {
        if public.algorithm() != ssh_key::Algorithm::Ed25519 {
            return Err(KeyError::NotEd25519 {
                path,
                algorithm: public.algorithm().to_string(),
            });
        }
        let held = agent(&socket, &path)?
            .list_all_identities()
            .map_err(|e| agent_error(&socket, &path, e))?;
        // A certificate for the key holds it too: the agent signs with the
        // key underneath.
        if !held
            .iter()
            .any(|id| <&ssh_key::public::KeyData>::from(id) == public.key_data())
        {
            return Err(KeyError::AgentLacksKey {
                public: public_openssh(&public),
                socket,
                path,
            });
        }
        Ok(SigningKey {
            holder: Holder::Agent(socket),
            public,
            path,
        })
    }

    /// The public key in `ssh-ed25519 AAAA…` form (no comment).
    pub fn public_openssh(&self) -> String {
        public_openssh(&self.public)
    }

    /// The public key.
    pub fn public_key(&self) -> &PublicKey {
        &self.public
    }

    /// An armored SSHSIG (`-----BEGIN SSH SIGNATURE-----`) of `payload`
    /// in namespace `noma`, as `ssh-keygen -Y sign -n noma` writes it.
    pub fn sign(&self, payload: &[u8]) -> Result<String, KeyError> {
        let failed = |e: ssh_key::Error| KeyError::Malformed {
            path: self.path.clone(),
            reason: e.to_string(),
        };
        let sig = match &self.holder {
            Holder::File(key) => key
                .sign(NAMESPACE, HashAlg::Sha512, payload)
                .map_err(failed)?,
            Holder::Agent(socket) => {
                let data = SshSig::signed_data(NAMESPACE, HashAlg::Sha512, payload)
                    .map_err(|e| agent_error(socket, &self.path, e))?;
                let raw = agent(socket, &self.path)?
                    .sign(&self.public, &data)
                    .map_err(|e| agent_error(socket, &self.path, e))?;
                let sig = SshSig::new(
                    self.public.key_data().clone(),
                    NAMESPACE,
                    HashAlg::Sha512,
                    raw,
                )
                .map_err(|e| agent_error(socket, &self.path, e))?;
                // What an agent returns is checked before it is written:
                // a wrong signature would fail every later check.
                self.public
                    .verify(NAMESPACE, payload, &sig)
                    .map_err(|e| agent_error(socket, &self.path, e))?;
                sig
            }
        };
        sig.to_pem(LineEnding::LF).map_err(failed)
    }
}

/// A connection to the ssh-agent on `socket`.
fn agent(socket: &Path, path: &Path) -> Result<ssh_agent_client_rs::Client, KeyError> {
    ssh_agent_client_rs::Client::connect(socket).map_err(|e| agent_error(socket, path, e))
}

fn agent_error(socket: &Path, path: &Path, e: impl std::fmt::Display) -> KeyError {
    KeyError::Agent {
        path: path.to_path_buf(),
        socket: socket.to_path_buf(),
        reason: e.to_string(),
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

/// Signatures verified together before one is verified alone: Ed25519
/// batch verification costs about half a single verification each.
const BATCH: usize = 256;

/// [`verify`] of many (armored SSHSIG, payload) pairs. Ed25519 signatures
/// in namespace `noma` are verified in batches; a batch that fails is
/// verified signature by signature, so each result is what [`verify`]
/// says.
pub fn verify_many(items: &[(&str, &[u8])]) -> Vec<Result<PublicKey, SigError>> {
    let mut out: Vec<Option<Result<PublicKey, SigError>>> = vec![None; items.len()];
    // (index, key, signed data, signature) of each batchable signature.
    let mut batch = Vec::new();
    let mut keys: Vec<([u8; 32], ed25519_dalek::VerifyingKey)> = Vec::new();
    for (i, (armored, payload)) in items.iter().enumerate() {
        let parsed = SshSig::from_pem(armored)
            .ok()
            .filter(|sig| sig.namespace() == NAMESPACE);
        let Some(sig) = parsed else { continue };
        // One decompression per distinct key, not per signature.
        let key = sig.public_key().ed25519().and_then(|k| {
            if let Some((_, v)) = keys.iter().find(|(bytes, _)| *bytes == k.0) {
                return Some(*v);
            }
            let v = ed25519_dalek::VerifyingKey::from_bytes(&k.0).ok()?;
            keys.push((k.0, v));
            Some(v)
        });
        let raw = ed25519_dalek::Signature::from_slice(sig.signature_bytes()).ok();
        let data = SshSig::signed_data(NAMESPACE, sig.hash_alg(), payload).ok();
        if let (Some(key), Some(raw), Some(data)) = (key, raw, data) {
            batch.push((
                i,
                PublicKey::new(sig.public_key().clone(), ""),
                key,
                data,
                raw,
            ));
        }
    }
    for chunk in batch.chunks(BATCH) {
        let msgs: Vec<&[u8]> = chunk.iter().map(|c| c.3.as_slice()).collect();
        let sigs: Vec<ed25519_dalek::Signature> = chunk.iter().map(|c| c.4).collect();
        let keys: Vec<ed25519_dalek::VerifyingKey> = chunk.iter().map(|c| c.2).collect();
        if ed25519_dalek::verify_batch(&msgs, &sigs, &keys).is_ok() {
            for c in chunk {
                out[c.0] = Some(Ok(c.1.clone()));
            }
        }
    }
    out.into_iter()
        .zip(items)
        .map(|(done, (armored, payload))| done.unwrap_or_else(|| verify(armored, payload)))
        .collect()
}

#[cfg(any(test, feature = "test-support"))]
#[allow(dead_code)]
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
        let Holder::File(key) = &k.holder else {
            unreachable!("test_key is a file key")
        };
        let other_ns = key
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
            SigningKey::in_agent(
                PublicKey::from_openssh(&public).unwrap(),
                PathBuf::from("/nonexistent/agent.sock"),
                PathBuf::from("k.pub")
            ),
            Err(KeyError::Agent { .. })
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
        let payloads: Vec<Vec<u8>> = (0..300).map(|i| format!("p{i}").into_bytes()).collect();
        let sigs: Vec<String> = payloads.iter().map(|p| k.sign(p).unwrap()).collect();
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
    }
}

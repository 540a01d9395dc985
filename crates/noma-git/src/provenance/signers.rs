//! `.noma/allowed_signers`, in git's and `ssh-keygen -Y verify`'s
//! allowed-signers format (ssh-keygen(1), ALLOWED SIGNERS):
//!
//! ```text
//! # principals          options            key
//! alice@example.com     namespaces="noma"  ssh-ed25519 AAAA…
//! *@agents.example      namespaces="git,noma" ssh-ed25519 AAAA… ci-bot
//! ```
//!
//! Principals are a comma-separated pattern list (`*`, `?`, `!` negation,
//! optionally in double quotes); a `namespaces` option limits a key to
//! the listed namespace patterns, and a key without it signs for any
//! namespace, as in OpenSSH. `cert-authority` lines name CA keys, which
//! never match a plain key's signature (noma does not verify
//! certificates). `valid-after` / `valid-before` are refused with the
//! line: honouring them needs a trusted signing time, which a record's
//! self-declared `ts` is not.

use ssh_key::public::KeyData;
use ssh_key::PublicKey;

use super::sshsig::NAMESPACE;

/// Path of the file relative to the repository root.
pub const ALLOWED_SIGNERS_PATH: &str = ".noma/allowed_signers";

/// One usable line.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Line {
    principals: String,
    namespaces: Option<String>,
    cert_authority: bool,
    /// The key (compared by its data, the comment aside).
    key: KeyData,
}

/// A parsed allowed-signers file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowedSigners {
    lines: Vec<Line>,
}

/// A line that is not an allowed-signers entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{ALLOWED_SIGNERS_PATH} line {line}: {message}")]
pub struct SignersError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// Splits off the next whitespace-delimited token, keeping double-quoted
/// runs (which may hold spaces and commas) inside it.
fn token(s: &str) -> Option<(&str, &str)> {
    let s = s.trim_start();
    if s.is_empty() {
        return None;
    }
    let mut quoted = false;
    for (i, c) in s.char_indices() {
        match c {
            '"' => quoted = !quoted,
            c if c.is_whitespace() && !quoted => return Some((&s[..i], &s[i..])),
            _ => {}
        }
    }
    Some((s, ""))
}

fn is_key_type(t: &str) -> bool {
    t.starts_with("ssh-") || t.starts_with("ecdsa-") || t.starts_with("sk-")
}

/// Splits an option list at commas outside double quotes.
fn options(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut quoted) = (0, false);
    for (i, c) in s.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

impl AllowedSigners {
    /// Parses the file's text; the first bad line is an error.
    pub fn parse(text: &str) -> Result<AllowedSigners, SignersError> {
        let mut lines = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let err = |message: String| SignersError {
                line: i + 1,
                message,
            };
            let l = raw.trim();
            if l.is_empty() || l.starts_with('#') {
                continue;
            }
            let (principals, rest) = token(l).ok_or_else(|| err("empty".into()))?;
            let (mut next, mut rest) =
                token(rest).ok_or_else(|| err("no public key after the principals".into()))?;
            let (mut namespaces, mut cert_authority) = (None, false);
            if !is_key_type(next) {
                for opt in options(next) {
                    let (name, value) = match opt.split_once('=') {
                        Some((n, v)) => (n, Some(v.trim_matches('"'))),
                        None => (opt, None),
                    };
                    match (name.to_ascii_lowercase().as_str(), value) {
                        ("cert-authority", None) => cert_authority = true,
                        ("namespaces", Some(v)) => namespaces = Some(v.to_string()),
                        ("valid-after" | "valid-before", _) => {
                            return Err(err(format!(
                                "option {name} is not supported (a record's ts is self-declared, so no trusted signing time exists to compare it with)"
                            )))
                        }
                        _ => return Err(err(format!("unknown option {opt:?}"))),
                    }
                }
                (next, rest) =
                    token(rest).ok_or_else(|| err("no public key after the options".into()))?;
            }
            let (blob, _comment) =
                token(rest).ok_or_else(|| err(format!("no key data after {next}")))?;
            let key = PublicKey::from_openssh(&format!("{next} {blob}"))
                .map_err(|e| err(format!("bad public key: {e}")))?;
            lines.push(Line {
                principals: principals.trim_matches('"').to_string(),
                namespaces,
                cert_authority,
                key: key.key_data().clone(),
            });
        }
        Ok(AllowedSigners { lines })
    }

    /// Whether `key` may sign for `principal` in namespace `noma`
    /// (`ssh-keygen -Y verify -n noma -I principal`).
    pub fn allows(&self, principal: &str, key: &PublicKey) -> bool {
        let key = key.key_data();
        self.lines.iter().any(|l| {
            !l.cert_authority
                && &l.key == key
                && pattern_list_matches(&l.principals, principal)
                && l.namespaces
                    .as_deref()
                    .is_none_or(|ns| pattern_list_matches(ns, NAMESPACE))
        })
    }

    /// The first principal named literally (no wildcard) for `key` with
    /// the `noma` namespace: who a signer with that key says it is.
    pub fn principal_of(&self, key: &PublicKey) -> Option<String> {
        let key = key.key_data();
        self.lines
            .iter()
            .filter(|l| !l.cert_authority && &l.key == key)
            .filter(|l| {
                l.namespaces
                    .as_deref()
                    .is_none_or(|ns| pattern_list_matches(ns, NAMESPACE))
            })
            .flat_map(|l| l.principals.split(','))
            .find(|p| !p.starts_with('!') && !p.contains(['*', '?']))
            .map(str::to_string)
    }

    /// Number of usable lines.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// True when no line names a key.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }
}

/// OpenSSH's `match_pattern_list`: true when some pattern matches and no
/// negated (`!`) pattern does.
fn pattern_list_matches(list: &str, s: &str) -> bool {
    let mut matched = false;
    for p in list.split(',') {
        let p = p.trim();
        if let Some(neg) = p.strip_prefix('!') {
            if wildcard(neg.as_bytes(), s.as_bytes()) {
                return false;
            }
        } else if wildcard(p.as_bytes(), s.as_bytes()) {
            matched = true;
        }
    }
    matched
}

/// `*` (any run) and `?` (any one byte) matching, iteratively.
fn wildcard(p: &[u8], s: &[u8]) -> bool {
    let (mut pi, mut si) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        if pi < p.len() && (p[pi] == b'?' || p[pi] == s[si]) {
            pi += 1;
            si += 1;
        } else if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, si));
            pi += 1;
        } else if let Some((sp, ss)) = star {
            pi = sp + 1;
            si = ss + 1;
            star = Some((sp, ss + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provenance::sshsig::tests::test_key;

    #[test]
    fn parses_git_allowed_signers_and_matches_like_ssh_keygen() {
        let k = test_key();
        let pk = k.public_openssh();
        let text = format!(
            "# comment\n\nalice@example.com namespaces=\"noma\" {pk} alice's laptop\n\"*@agents.example,!evil@agents.example\" namespaces=\"git,no*\" {pk}\ngit-only@example.com namespaces=\"git\" {pk}\nany@example.com {pk}\nca@example.com cert-authority {pk}\n"
        );
        let s = AllowedSigners::parse(&text).unwrap();
        assert_eq!(s.len(), 5);
        let key = k.public_key();
        assert!(s.allows("alice@example.com", key));
        assert!(s.allows("bot@agents.example", key));
        assert!(!s.allows("evil@agents.example", key));
        assert!(!s.allows("git-only@example.com", key));
        assert!(s.allows("any@example.com", key));
        assert!(!s.allows("ca@example.com", key));
        assert!(!s.allows("mallory@example.com", key));
        assert_eq!(s.principal_of(key).as_deref(), Some("alice@example.com"));
        let other = ssh_key::PublicKey::from_openssh(
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFxZ1qvERxUWNq0OrF6nzUIAVwLIKpQj490RP58Hq0td",
        )
        .unwrap();
        assert!(!s.allows("alice@example.com", &other));
        assert_eq!(s.principal_of(&other), None);
    }

    #[test]
    fn bad_lines_are_named() {
        let e = AllowedSigners::parse("ok\n").unwrap_err();
        assert_eq!(e.line, 1);
        let e = AllowedSigners::parse("# c\na@b ssh-ed25519 notbase64!\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(
            e.to_string().contains(".noma/allowed_signers line 2"),
            "{e}"
        );
        let e = AllowedSigners::parse(
            "a@b valid-after=\"20260101\" ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFxZ1qvERxUWNq0OrF6nzUIAVwLIKpQj490RP58Hq0td\n",
        )
        .unwrap_err();
        assert!(e.message.contains("valid-after"), "{e}");
    }

    #[test]
    fn wildcards() {
        assert!(wildcard(b"*@a.example", b"x@a.example"));
        assert!(wildcard(b"a?c", b"abc"));
        assert!(!wildcard(b"a?c", b"ac"));
        assert!(wildcard(b"*", b""));
        assert!(!wildcard(b"*@a", b"x@b"));
        assert!(wildcard(b"**a*b", b"xxaxxb"));
    }
}

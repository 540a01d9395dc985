//! A private key staged for commit (`private-key-staged`): the signing
//! walk-throughs create keys, and `git add -A` in the directory holding
//! one would publish it with the next push. Every staged file added or
//! changed is looked at, whatever its name, over its first [`SCAN`] bytes:
//! a key may sit after a comment, inside a larger file, or in UTF-16.
//! This is a guard for the keys noma's own workflows make, not a general
//! secret scanner (docs/git-workflows.md shows how to chain gitleaks or
//! detect-secrets).

use aho_corasick::AhoCorasick;

use super::{Finding, Guard};
use crate::git::repo::{GitError, Staged};
use crate::git::Oid;
use noma_core::diag::shell_word;

/// Bytes read from the start of each staged file.
const SCAN: usize = 4 * 1024 * 1024;

/// A packed blob larger than this is not read at all (libgit2 cannot
/// stream one; staged blobs are loose, so this bounds only odd cases).
const MAX_PACKED: usize = 64 * 1024 * 1024;

/// Where each armour starts: PEM / PKCS#8 / OpenSSH / PGP (`-----BEGIN `),
/// RFC 4716 SSH2 (`---- BEGIN SSH2 `) and PuTTY (`PuTTY-User-Key-File-`).
const OPENERS: [&str; 3] = ["-----BEGIN ", "---- BEGIN SSH2 ", "PuTTY-User-Key-File-"];

/// The longest armour line read (PuTTY's names the key's algorithm).
const HEAD_LINE: usize = 128;

/// Within this many bytes after an armour line a key's body starts.
const BODY_WITHIN: usize = 1024;

/// A key's body: a line starting with at least this many base64 bytes.
const BODY_RUN: usize = 32;

/// The openers in ASCII (pattern `i`), UTF-16LE (`i + 3`) and UTF-16BE
/// (`i + 6`).
fn openers() -> &'static AhoCorasick {
    static AC: std::sync::OnceLock<AhoCorasick> = std::sync::OnceLock::new();
    AC.get_or_init(|| {
        let wide = |be: bool| {
            OPENERS.map(|o| {
                o.bytes()
                    .flat_map(|b| if be { [0, b] } else { [b, 0] })
                    .collect::<Vec<u8>>()
            })
        };
        let mut all: Vec<Vec<u8>> = OPENERS.iter().map(|o| o.as_bytes().to_vec()).collect();
        all.extend(wide(false));
        all.extend(wide(true));
        AhoCorasick::new(all).expect("fixed patterns build")
    })
}

/// Whether `bytes`, a file's first bytes, hold a private key: an OpenSSH,
/// PKCS#1/#8 (RSA, EC, DSA, encrypted), PGP, SSH2 or PuTTY private key's
/// armour at the start of a line (or of a quoted string, as in a JSON
/// credentials file), followed by the key's base64 body; in UTF-8/ASCII or
/// UTF-16 (either byte order). An armour line quoted in prose, or one with
/// no key after it, is not a key.
pub(crate) fn is_private_key(bytes: &[u8]) -> bool {
    let mut wide = [false; 2];
    for m in openers().find_overlapping_iter(bytes) {
        match m.pattern().as_usize() / 3 {
            0 if armour_at(bytes, m.start()) => return true,
            0 => {}
            n => wide[n - 1] = true,
        }
    }
    // UTF-16: read the code units that are ASCII (others become a byte no
    // armour holds) and look again.
    wide.iter()
        .zip([false, true])
        .filter(|(hit, _)| **hit)
        .any(|(_, be)| {
            (0..2).any(|shift| {
                let narrow: Vec<u8> = bytes[shift..]
                    .chunks_exact(2)
                    .filter_map(|u| {
                        let unit = if be { [u[0], u[1]] } else { [u[1], u[0]] };
                        match unit {
                            [0xfe, 0xff] => None,
                            [0, lo] if lo < 0x80 => Some(lo),
                            _ => Some(0xff),
                        }
                    })
                    .collect();
                openers()
                    .find_overlapping_iter(&narrow)
                    .any(|m| m.pattern().as_usize() < 3 && armour_at(&narrow, m.start()))
            })
        })
}

/// Whether `head`, a file's first bytes, shows a binary file (an image,
/// an archive), which is not read further: a NUL byte, as git decides,
/// unless the text is UTF-16 (a byte-order mark, or NULs in the high
/// byte of most code units on one side).
pub(crate) fn is_binary(head: &[u8]) -> bool {
    if !head.contains(&0) || head.starts_with(&[0xff, 0xfe]) || head.starts_with(&[0xfe, 0xff]) {
        return false;
    }
    let units = head.len() / 2;
    let zeros = |parity: usize| {
        head.iter()
            .skip(parity)
            .step_by(2)
            .filter(|&&b| b == 0)
            .count()
    };
    // UTF-16 without a mark: mostly ASCII, so one side is mostly zeros.
    !(units > 0 && (zeros(0) * 4 >= units * 3 || zeros(1) * 4 >= units * 3))
}

/// Whether the opener at `at` in `text` is a private key's armour: at a
/// line's start (after blanks or a byte-order mark) or after a quote,
/// naming a private key, with a base64 body soon after.
fn armour_at(text: &[u8], at: usize) -> bool {
    // Blanks only since the line's start (or a byte-order mark), or the
    // opening quote of a string value (a JSON credentials file, an env
    // file): not prose quoting the armour. Read back over blanks only, so
    // a long line costs no more than a short one.
    let mut i = at;
    while i > 0 && matches!(text[i - 1], b' ' | b'\t') {
        i -= 1;
    }
    let before = &text[..i];
    let bom = "\u{feff}".as_bytes();
    let lead_ok = before.is_empty()
        || matches!(before.last(), Some(b'\n' | b'"' | b'\''))
        || before == bom
        || before.ends_with(&[&b"\n"[..], bom].concat());
    if !lead_ok {
        return false;
    }
    // The armour line ends at a newline or at an escaped one (`\n`).
    let rest = &text[at..];
    let Some(head_end) = rest
        .iter()
        .take(HEAD_LINE)
        .position(|&b| b == b'\n' || b == b'\\')
    else {
        return false;
    };
    let head = String::from_utf8_lossy(&rest[..head_end]);
    let head = head.trim_end();
    let names_private = if let Some(label) = head.strip_prefix("-----BEGIN ") {
        label
            .strip_suffix("-----")
            .is_some_and(|l| l.ends_with("PRIVATE KEY") || l == "PGP PRIVATE KEY BLOCK")
    } else if let Some(label) = head.strip_prefix("---- BEGIN SSH2 ") {
        label
            .strip_suffix(" ----")
            .is_some_and(|l| l.ends_with("PRIVATE KEY"))
    } else if let Some(rest) = head.strip_prefix("PuTTY-User-Key-File-") {
        rest.split_once(": ").is_some_and(|(v, alg)| {
            !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) && !alg.is_empty()
        })
    } else {
        false
    };
    names_private && has_body(&rest[head_end..])
}

/// Whether a line (split at newlines, or at the two characters `\n` of an
/// escaped string) starting with [`BODY_RUN`] base64 bytes begins within
/// [`BODY_WITHIN`] bytes of `after`.
fn has_body(after: &[u8]) -> bool {
    let window = &after[..after.len().min(BODY_WITHIN)];
    let mut lines: Vec<&[u8]> = Vec::new();
    for line in window.split(|&b| b == b'\n') {
        let mut part = line;
        while let Some(i) = part.windows(2).position(|w| w == b"\\n") {
            lines.push(&part[..i]);
            part = &part[i + 2..];
        }
        lines.push(part);
    }
    lines.iter().any(|l| {
        let l = l.trim_ascii_start();
        l.len() >= BODY_RUN
            && l[..BODY_RUN]
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
    })
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
    let keys = g
        .repo
        .test_blob_prefixes(&ids, [SCAN, MAX_PACKED], is_binary, is_private_key)?;
    Ok(files
        .iter()
        .zip(keys)
        .filter(|(_, key)| *key)
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

    const BODY: &str = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n";

    fn utf16(text: &str, be: bool) -> Vec<u8> {
        let mut out = if be {
            vec![0xfe, 0xff]
        } else {
            vec![0xff, 0xfe]
        };
        for u in text.encode_utf16() {
            out.extend(if be { u.to_be_bytes() } else { u.to_le_bytes() });
        }
        out
    }

    #[test]
    fn private_key_armour_is_recognised_and_public_keys_are_not() {
        for head in [
            "-----BEGIN OPENSSH PRIVATE KEY-----\n",
            "-----BEGIN RSA PRIVATE KEY-----\r\n",
            "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,0A1B2C3D4E5F60718293A4B5C6D7E8F9\n\n",
            "-----BEGIN EC PRIVATE KEY-----\n",
            "-----BEGIN PRIVATE KEY-----\n",
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\n",
            "\u{feff}\n-----BEGIN DSA PRIVATE KEY-----\n",
            "-----BEGIN PGP PRIVATE KEY BLOCK-----\nComment: x\n\n",
            "# my deploy key\n  -----BEGIN OPENSSH PRIVATE KEY-----\n",
            "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\nComment: \"rsa-key-20261129\"\n",
            "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: k\nPublic-Lines: 2\n",
            "{\"type\": \"service_account\", \"private_key\": \"-----BEGIN PRIVATE KEY-----\\n",
        ] {
            let key = format!("{head}{BODY}");
            assert!(is_private_key(key.as_bytes()), "{key}");
            let late = format!("{}\n{key}", "prose ".repeat(3000));
            assert!(is_private_key(late.as_bytes()), "after 18 KB: {head}");
            for be in [false, true] {
                assert!(is_private_key(&utf16(&late, be)), "UTF-16 (be {be}): {head}");
            }
        }
        for not in [
            "ssh-ed25519 AAAAC3Nz agent@example",
            "-----BEGIN PUBLIC KEY-----\n",
            "-----BEGIN CERTIFICATE-----\n",
            "-----BEGIN SSH SIGNATURE-----\n",
            "---- BEGIN SSH2 PUBLIC KEY ----\n",
            "# -----BEGIN OPENSSH PRIVATE KEY----- (docs quoting it)\n",
            "How to spot a key: -----BEGIN OPENSSH PRIVATE KEY-----\n",
            "`PuTTY-User-Key-File-3: ssh-ed25519`\n",
            "",
        ] {
            let text = format!("{not}{BODY}");
            assert!(!is_private_key(text.as_bytes()), "{not}");
            assert!(!is_private_key(&utf16(&text, false)), "UTF-16: {not}");
        }
        // A binary file is passed over; UTF-16 text is not.
        assert!(is_binary(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"));
        assert!(!is_binary(b"plain text"));
        assert!(!is_binary(&utf16("# key\n", false)));
        let unmarked = &utf16("# key, with no byte-order mark\n", true)[2..];
        assert!(!is_binary(unmarked));
        // An armour line with no key after it (documentation showing the
        // shape) is not a key.
        let shape = "-----BEGIN OPENSSH PRIVATE KEY-----\n...\n-----END OPENSSH PRIVATE KEY-----\n";
        assert!(!is_private_key(shape.as_bytes()));
    }
}

//! The pre-commit hook refuses a staged private key, whatever its name
//! (`private-key-staged`), with `git rm --cached` as the fix: the signing
//! walk-throughs create keys, and `git add -A` beside one would commit it.
//! The keys are real `ssh-keygen` keys.

use crate::common::{text, Repo};

/// `ssh-keygen` writing a key of `kind` (`ed25519`, `rsa`, `ecdsa`) at
/// `rel` in the work tree; `pem` asks for the PEM (PKCS#1/SEC1) format.
fn keygen(r: &Repo, rel: &str, kind: &str, pem: bool) {
    if let Some(dir) = std::path::Path::new(rel).parent() {
        std::fs::create_dir_all(r.path().join(dir)).unwrap();
    }
    let mut args = vec![
        "-q",
        "-t",
        kind,
        "-N",
        "",
        "-C",
        "bot@agents.example",
        "-f",
        rel,
    ];
    if pem {
        args.extend(["-m", "PEM"]);
    }
    let o = r.cmd("ssh-keygen", &args);
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn a_staged_private_key_blocks_the_commit_whatever_its_name() {
    let r = Repo::init();
    assert!(r.noma(&["init", "--no-mcp"]).status.success());
    r.commit_all("setup");
    keygen(&r, "agent_key", "ed25519", false);
    keygen(&r, "notes/backup.txt", "rsa", true);
    keygen(&r, "ec", "ecdsa", false);
    r.write("plan.noma", "# Plan\n\n::note{id=\"a\"}\nalpha\n::\n");
    r.ok(&["add", "-A"]);
    let (ok, out) = r.try_commit("with keys");
    assert!(!ok, "{out}");
    for key in ["agent_key", "notes/backup.txt", "ec"] {
        let line = out
            .lines()
            .find(|l| l.contains("[private-key-staged]") && l.contains(&format!(" {key}:")))
            .unwrap_or_else(|| panic!("{key} not named:\n{out}"));
        assert!(
            line.contains(&format!("git rm --cached \"{key}\"")),
            "{line}"
        );
    }
    // Public keys are not refused.
    assert!(!out.contains("agent_key.pub"), "{out}");

    // The fix the hook names: the keys leave the index, the commit passes.
    r.ok(&[
        "rm",
        "-q",
        "--cached",
        "agent_key",
        "notes/backup.txt",
        "ec",
    ]);
    let (ok, out) = r.try_commit("without keys");
    assert!(ok, "{out}");
}

#[test]
fn a_quoted_armour_line_is_not_a_key() {
    let r = Repo::init();
    assert!(r.noma(&["init", "--no-mcp"]).status.success());
    // Documents quoting the armour line in a sentence, or showing a key's
    // shape with no key in it.
    r.write(
        "doc.md",
        "How to spot a key: -----BEGIN OPENSSH PRIVATE KEY-----\n",
    );
    r.write(
        "shape.md",
        "```\n-----BEGIN OPENSSH PRIVATE KEY-----\n...\n-----END OPENSSH PRIVATE KEY-----\n```\n",
    );
    r.ok(&["add", "-A"]);
    let (ok, out) = r.try_commit("docs");
    assert!(ok, "{out}");
}

/// A PuTTY key as puttygen writes it (format 3; the values are made up).
const PPK: &str = "PuTTY-User-Key-File-3: ssh-ed25519\r\nEncryption: none\r\nComment: eddsa-key-20261129\r\nPublic-Lines: 2\r\nAAAAC3NzaC1lZDI1NTE5AAAAIFxZ1qvERxUWNq0OrF6nzUIAVwLIKpQj490RP58H\r\nq0td\r\nPrivate-Lines: 1\r\nAAAAIGJ5dGVzIG9mIGEgcHJpdmF0ZSBrZXkgZm9yIGEgdGVzdCBvbmx5IQ==\r\nPrivate-MAC: 5d1a7a0b6f3c2e9d8a4b1c0f7e6d5c4b3a2918f7e6d5c4b3a2918f7e6d5c4b3\r\n";

/// An SSH2 (RFC 4716 armour, ssh.com) private key (the body is made up,
/// after the format's magic).
const SSH2: &str = "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\nComment: \"rsa-key-20261129\"\nP2/56wAAAi4AAAA3aWYtbW9kbntzaWdue3JzYS1wa2NzMS1zaGExfSxlbmNyeXB0e3JzYS1w\na2NzMXYyLW9hZXB9fQAAAARub25lAAAB3wAAAdsAAAARAQABAAAH/i7JmFP9hQ==\n---- END SSH2 ENCRYPTED PRIVATE KEY ----\n";

/// A key anywhere in the first megabytes of a file, in any of the
/// formats people keep keys in, is refused: after a comment line, after
/// 17 KB of text, a PuTTY `.ppk`, an SSH2 key, a key saved as UTF-16 (as
/// PowerShell's `>` writes it) and one in a JSON credentials file.
#[test]
fn a_key_inside_a_file_or_in_another_format_blocks_the_commit() {
    let r = Repo::init();
    assert!(r.noma(&["init", "--no-mcp"]).status.success());
    r.commit_all("setup");
    keygen(&r, "k/ed", "ed25519", false);
    keygen(&r, "k/rsa", "rsa", true);
    let ed = r.read("k/ed");
    let rsa = r.read("k/rsa");
    std::fs::remove_dir_all(r.path().join("k")).unwrap();
    r.write(
        "commented",
        &format!("# the deploy key, do not share\n{ed}"),
    );
    let prose = "Notes from the meeting, line after line of them.\n".repeat(17 * 1024 / 48 + 1);
    assert!(prose.len() > 17 * 1024);
    r.write("notes/long.md", &format!("{prose}\n{rsa}\nMore notes.\n"));
    r.write("win/agent.ppk", PPK);
    r.write("win/id_rsa_ssh2", SSH2);
    let mut utf16 = vec![0xff, 0xfe];
    for u in format!("# key\r\n{ed}").encode_utf16() {
        utf16.extend(u.to_le_bytes());
    }
    std::fs::write(r.path().join("win/key-utf16.txt"), utf16).unwrap();
    let pem = rsa.trim_end().replace('\n', "\\n");
    r.write(
        "creds.json",
        &format!("{{\n  \"type\": \"service_account\",\n  \"private_key\": \"{pem}\\n\"\n}}\n"),
    );
    r.ok(&["add", "-A"]);
    let (ok, out) = r.try_commit("with keys");
    assert!(!ok, "{out}");
    for key in [
        "commented",
        "notes/long.md",
        "win/agent.ppk",
        "win/id_rsa_ssh2",
        "win/key-utf16.txt",
        "creds.json",
    ] {
        assert!(
            out.lines()
                .any(|l| l.contains("[private-key-staged]") && l.contains(&format!(" {key}:"))),
            "{key} not named:\n{out}"
        );
    }
}

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
fn a_large_file_or_a_quoted_armour_line_is_not_a_key() {
    let r = Repo::init();
    assert!(r.noma(&["init", "--no-mcp"]).status.success());
    // A document quoting the armour line after other text, and a file
    // larger than any key that starts with it (only its size is read).
    r.write(
        "doc.md",
        "How to spot a key: -----BEGIN OPENSSH PRIVATE KEY-----\n",
    );
    let big = format!(
        "-----BEGIN OPENSSH PRIVATE KEY-----\n{}",
        "A".repeat(64 * 1024)
    );
    r.write("big.txt", &big);
    r.ok(&["add", "-A"]);
    let (ok, out) = r.try_commit("docs");
    assert!(ok, "{out}");
}

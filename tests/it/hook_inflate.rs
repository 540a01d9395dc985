//! The pre-commit hook inflates the staged transcript in-process (decision
//! `hook-inflates-in-process`): a loose object (what `git add` writes) or a
//! whole object in a pack (what it writes for a file over
//! `core.bigFileThreshold`) is read from the object file, without a `git
//! cat-file` process; a corrupt one is refused, never accepted. Blobs are
//! streamed (`NOMA_STREAM_BLOBS_OVER=0`), as a large transcript is.

#![cfg(unix)]

use std::path::{Path, PathBuf};

use crate::common::{text, Repo};
use crate::hook_append::{op, repo};

/// A repository whose hook streams blobs and runs noma with a `git` on
/// PATH that logs each `cat-file` it is asked for (then runs the real
/// one); the log's path.
fn logged_repo() -> (Repo, PathBuf) {
    let bin = tempfile::tempdir().unwrap().keep();
    let log = bin.join("cat-file.log");
    let real = std::process::Command::new("sh")
        .args(["-c", "command -v git"])
        .output()
        .unwrap();
    let real = String::from_utf8(real.stdout).unwrap().trim().to_string();
    let shim = bin.join("git");
    std::fs::write(
        &shim,
        format!(
            "#!/bin/sh\ncase \" $* \" in *\" cat-file \"*) echo \"$*\" >>'{}';; esac\nexec '{real}' \"$@\"\n",
            log.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).unwrap();
    let r = repo(&format!(
        "NOMA_STREAM_BLOBS_OVER=0 PATH='{}':\"$PATH\"",
        bin.display()
    ));
    (r, log)
}

/// The object file holding `id`: its loose file, else the pack whose
/// index lists it; and whether it is loose.
fn object_file(r: &Repo, id: &str) -> (PathBuf, bool) {
    let objects = r.path().join(".git/objects");
    let loose = objects.join(&id[..2]).join(&id[2..]);
    if loose.exists() {
        return (loose, true);
    }
    for e in std::fs::read_dir(objects.join("pack")).unwrap() {
        let idx = e.unwrap().path();
        if idx.extension().is_none_or(|e| e != "idx") {
            continue;
        }
        let listed = r.cmd(
            "sh",
            &["-c", &format!("git show-index <'{}'", idx.display())],
        );
        if text(&listed).contains(id) {
            return (idx.with_extension("pack"), false);
        }
    }
    panic!("{id} is in no object file");
}

fn staged_transcript(r: &Repo) -> String {
    r.ok(&["rev-parse", ":plan.noma.patches"])
        .trim()
        .to_string()
}

fn cat_files(log: &Path) -> String {
    std::fs::read_to_string(log).unwrap_or_default()
}

/// Loose and packed, an append is checked with no `git cat-file`, and a
/// rewritten committed line is still refused.
#[test]
fn a_staged_transcript_is_inflated_without_git() {
    for packed in [false, true] {
        let (r, log) = logged_repo();
        if packed {
            r.ok(&["config", "core.bigFileThreshold", "100"]);
        }
        r.agent_patch("plan.noma", &op("b", "BETA"));
        r.ok(&["add", "-A"]);
        let (_, loose) = object_file(&r, &staged_transcript(&r));
        assert_eq!(loose, !packed);
        let _ = std::fs::remove_file(&log);
        let (ok, out) = r.try_commit("append");
        assert!(ok, "packed {packed}: {out}");
        assert_eq!(cat_files(&log), "", "packed {packed}");
        r.agent_patch("plan.noma", &op("b", "BETA 2"));
        let t = r.read("plan.noma.patches");
        let mut lines: Vec<&str> = t.lines().collect();
        let edited = lines[1].replace("\"bot\"", "\"b0t\"");
        lines[1] = &edited;
        r.write("plan.noma.patches", &(lines.join("\n") + "\n"));
        r.ok(&["add", "-A"]);
        let (ok, out) = r.try_commit("edited a committed line");
        assert!(!ok, "packed {packed}: {out}");
        assert!(
            out.contains("transcript-tampered"),
            "packed {packed}: {out}"
        );
    }
}

/// A staged transcript whose object file was damaged after `git add` is
/// refused with an error that says so, loose or packed.
#[test]
fn a_corrupt_staged_transcript_is_refused() {
    for packed in [false, true] {
        let (r, _log) = logged_repo();
        if packed {
            r.ok(&["config", "core.bigFileThreshold", "100"]);
        }
        r.agent_patch("plan.noma", &op("b", "BETA"));
        r.ok(&["add", "-A"]);
        let (file, _) = object_file(&r, &staged_transcript(&r));
        let mut bytes = std::fs::read(&file).unwrap();
        // Inside the compressed bytes (a pack's last 20 bytes are its
        // checksum, which git does not read while streaming).
        let at = bytes.len() - 40;
        bytes[at] ^= 0x55;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::write(&file, &bytes).unwrap();
        let (ok, out) = r.try_commit("append, its object damaged");
        assert!(!ok, "packed {packed}: {out}");
        assert!(out.contains("corrupt"), "packed {packed}: {out}");
    }
}

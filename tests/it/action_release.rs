//! The action's release binary: at a release tag, whose commit carries
//! `release-checksums/<tag>.sha256` (the release workflow commits it and
//! tags that commit), the `release` step downloads the archive for the
//! runner, checks it against that file and installs it, so the compiling
//! step is skipped; a mismatch fails the job; any other ref, a tag without
//! the file, or an archive that cannot be downloaded compiles. The release
//! is a local directory reached through the `release-url` input (file://).
#![cfg(unix)]

use std::path::Path;
use std::process::{Command, Output};

use crate::action_steps::Runner;
use crate::common::{assert_ran, text, Repo};

const TAG: &str = "v9.9.9";
const TARGET: &str = "x86_64-unknown-linux-gnu";

/// A release directory `<dir>/<tag>/noma-<tag>-<target>.tar.gz` whose
/// `noma` prints `says`; returns the archive's sha256.
fn publish(dir: &Path, says: &str) -> String {
    let name = format!("noma-{TAG}-{TARGET}");
    let stage = dir.join("stage").join(&name);
    std::fs::create_dir_all(&stage).unwrap();
    let exe = stage.join("noma");
    std::fs::write(&exe, format!("#!/bin/sh\necho '{says}'\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let tag_dir = dir.join("releases").join(TAG);
    std::fs::create_dir_all(&tag_dir).unwrap();
    let archive = tag_dir.join(format!("{name}.tar.gz"));
    let o = Command::new("tar")
        .arg("czf")
        .arg(&archive)
        .arg("-C")
        .arg(dir.join("stage"))
        .arg(&name)
        .output()
        .unwrap();
    assert_ran(&o);
    let o = Command::new("sha256sum").arg(&archive).output().unwrap();
    assert_ran(&o);
    String::from_utf8_lossy(&o.stdout)[..64].to_string()
}

/// The action's checkout at `TAG`: `release-checksums/TAG.sha256` as the
/// release workflow writes it (`sha256sum noma-*`).
fn action_at_tag(dir: &Path, linux_sum: &str) {
    let sums = dir.join("release-checksums");
    std::fs::create_dir_all(&sums).unwrap();
    let other = "0".repeat(64);
    std::fs::write(
        sums.join(format!("{TAG}.sha256")),
        format!(
            "{other}  noma-{TAG}-aarch64-apple-darwin.tar.gz\n\
             {linux_sum}  noma-{TAG}-{TARGET}.tar.gz\n\
             {other}  noma-{TAG}-x86_64-pc-windows-msvc.zip\n"
        ),
    )
    .unwrap();
}

/// Runs the release step for the action at `action` named by `action_ref`.
fn release_step(action: &Path, releases: &Path, action_ref: &str) -> (Runner, Output) {
    let r = Repo::init();
    let runner = Runner::new();
    let root = runner.file("noma-action");
    let url = format!("file://{}", releases.display());
    let o = runner.step(
        &r,
        r.path(),
        "release",
        &[
            ("ACTION_PATH", action.to_str().unwrap()),
            ("ACTION_REF", action_ref),
            ("ACTION_REPOSITORY", "acme/noma"),
            ("SERVER_URL", "https://github.invalid"),
            ("INPUT_RELEASE_URL", &url),
            ("ROOT", root.to_str().unwrap()),
        ],
    );
    (runner, o)
}

fn installed(runner: &Runner) -> Option<String> {
    runner.outputs().get("installed").cloned()
}

#[test]
fn a_release_tag_uses_the_checksummed_release_binary_and_skips_compiling() {
    let (action, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let sum = publish(dir.path(), "noma 9.9.9 (release)");
    action_at_tag(action.path(), &sum);
    let (runner, o) = release_step(action.path(), &dir.path().join("releases"), TAG);
    assert_ran(&o);
    assert_eq!(installed(&runner).as_deref(), Some("true"), "{}", text(&o));
    let bin = runner.file("noma-action/bin/noma");
    let ran = Command::new(&bin).output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&ran.stdout),
        "noma 9.9.9 (release)\n"
    );
    assert!(text(&o).contains("noma 9.9.9 (release)"), "smoke-tested");

    // The compiling step runs only when the release step installed nothing.
    let action_yml: serde_yaml_ng::Value = serde_yaml_ng::from_str(
        &std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("action.yml")).unwrap(),
    )
    .unwrap();
    let steps = action_yml["runs"]["steps"].as_sequence().unwrap();
    let install = steps
        .iter()
        .find(|s| s["id"].as_str() == Some("install"))
        .unwrap();
    let cond = install["if"].as_str().unwrap();
    assert!(
        cond.contains("steps.release.outputs.installed != 'true'"),
        "{cond}"
    );
    assert!(install["run"].as_str().unwrap().contains("cargo install"));
}

#[test]
fn a_release_archive_that_does_not_match_the_committed_checksum_fails_the_job() {
    let (action, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let sum = publish(dir.path(), "noma 9.9.9 (release)");
    action_at_tag(action.path(), &sum);
    // The asset replaced on the release after the tag was made.
    let evil = publish(dir.path(), "something else");
    assert_ne!(sum, evil);
    let (runner, o) = release_step(action.path(), &dir.path().join("releases"), TAG);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let out = text(&o);
    assert!(
        out.contains("::error title=noma::checksum mismatch"),
        "{out}"
    );
    assert!(out.contains(&sum) && out.contains(&evil), "{out}");
    assert!(
        out.contains(&format!("release-checksums/{TAG}.sha256")),
        "{out}"
    );
    assert_eq!(installed(&runner), None);
    assert!(!runner.file("noma-action/bin/noma").exists());
}

#[test]
fn other_refs_and_missing_checksums_or_assets_compile() {
    let (action, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let releases = dir.path().join("releases");
    let sum = publish(dir.path(), "noma 9.9.9 (release)");
    // An untagged ref (a branch, a commit, `uses: ./`), even with the file.
    action_at_tag(action.path(), &sum);
    let sha = "0123456789abcdef0123456789abcdef01234567";
    for r in ["main", sha, "", "v9.9.9/../x"] {
        let (runner, o) = release_step(action.path(), &releases, r);
        assert_ran(&o);
        assert_eq!(installed(&runner).as_deref(), Some("false"), "{r}");
        assert!(text(&o).contains("not a release tag"), "{}", text(&o));
    }
    // A tag whose commit has no checksums (made by hand, or older).
    let bare = tempfile::tempdir().unwrap();
    let (runner, o) = release_step(bare.path(), &releases, TAG);
    assert_ran(&o);
    assert_eq!(installed(&runner).as_deref(), Some("false"));
    assert!(
        text(&o).contains("has no release-checksums/"),
        "{}",
        text(&o)
    );
    // The checksum is there but the release has no such asset.
    std::fs::remove_dir_all(&releases).unwrap();
    let (runner, o) = release_step(action.path(), &releases, TAG);
    assert_ran(&o);
    assert_eq!(installed(&runner).as_deref(), Some("false"));
    assert!(text(&o).contains("could not download"), "{}", text(&o));
}

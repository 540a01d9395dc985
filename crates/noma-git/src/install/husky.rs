//! Installing through husky instead of beside it.
//!
//! husky points `core.hooksPath` at its own directory. Since v9 that is
//! `.husky/_`, holding one-line stubs (`.husky/_/pre-commit`) that source
//! the dispatcher `.husky/_/h`, which runs the team's script
//! `.husky/$(basename "$0")`. Renaming a stub aside (our usual chaining)
//! makes `$0` end in `.noma-chained`, the dispatcher finds no such script
//! and exits 0: the team's hook silently stops running. Up to v8,
//! `core.hooksPath` is `.husky` itself and the team's scripts are the hooks
//! (they source `.husky/_/husky.sh`).
//!
//! Either way the team's script is `<husky dir>/<hook>`, committed and
//! shared, so noma adds one line to it: `noma hook <hook>` (from PATH, as
//! every command in a husky script; husky puts `node_modules/.bin` first).
//! The line carries [`super::MARKER`] so uninstall removes exactly it. The
//! stubs and the dispatcher, which husky regenerates, are never edited
//! (a missing v9 stub is written the way husky writes it).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::{HookName, HooksError, MARKER};

/// A husky set-up serving a hooks directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Husky {
    /// 9 (`core.hooksPath` = `<dir>/_` with the dispatcher `h`) or 8
    /// (`core.hooksPath` = `<dir>` with `_/husky.sh`).
    pub version: u8,
    /// The directory of the team's scripts (`.husky`).
    pub dir: PathBuf,
    /// The hooks directory git runs (`.husky/_` for v9).
    pub hooks_dir: PathBuf,
}

impl Husky {
    /// The team's script for `hook` (`.husky/pre-commit`).
    pub(crate) fn script(&self, hook: HookName) -> PathBuf {
        self.dir.join(hook.as_str())
    }

    /// One line for `noma hooks status`.
    pub fn describe(&self) -> String {
        match self.version {
            9 => format!(
                "husky v9 ({} dispatches to {}/<hook>)",
                self.hooks_dir.display(),
                self.dir.display()
            ),
            _ => format!("husky v4-8 (hooks are {}/<hook>)", self.dir.display()),
        }
    }
}

/// The stub husky 9 writes for each hook in `.husky/_`.
pub const V9_STUB: &str = "#!/usr/bin/env sh\n. \"$(dirname \"$0\")/h\"\n";

/// The header of a script husky 4-8 expects.
const V8_HEADER: &str = "#!/usr/bin/env sh\n. \"$(dirname -- \"$0\")/_/husky.sh\"\n";

/// Recognises husky's layout from the hooks directory git uses.
pub fn detect(hooks_dir: &Path) -> Option<Husky> {
    if hooks_dir.file_name().is_some_and(|n| n == "_") && hooks_dir.join("h").is_file() {
        let dir = hooks_dir.parent()?.to_path_buf();
        return Some(Husky {
            version: 9,
            dir,
            hooks_dir: hooks_dir.to_path_buf(),
        });
    }
    if hooks_dir.join("_").join("husky.sh").is_file() {
        return Some(Husky {
            version: 8,
            dir: hooks_dir.to_path_buf(),
            hooks_dir: hooks_dir.to_path_buf(),
        });
    }
    None
}

/// The line we add to the team's script.
pub(crate) fn line(hook: HookName) -> String {
    format!("noma hook {hook} {MARKER}")
}

/// Whether `script` runs `noma hook <hook>` (ours, or a line the team
/// wrote itself, e.g. from the README).
pub(crate) fn runs_noma(script: &str, hook: HookName) -> bool {
    script.lines().any(|l| {
        let code = l.split('#').next().unwrap_or_default();
        let words: Vec<&str> = code.split_whitespace().collect();
        words.windows(3).any(|w| {
            w[0].trim_matches(['"', '\'']).ends_with("noma")
                && w[1] == "hook"
                && w[2] == hook.as_str()
        })
    })
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> HooksError + '_ {
    move |source| HooksError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn read_opt(path: &Path) -> Result<Option<String>, HooksError> {
    match noma_store::fsio::read_regular(path) {
        Ok(b) => Ok(Some(String::from_utf8_lossy(&b).into_owned())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_err(path)(e)),
    }
}

/// What [`install`] did for one hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HuskyInstall {
    /// The team's script.
    pub script: PathBuf,
    /// The script was created (it did not exist).
    pub created: bool,
    /// The line was added (false: the script already ran noma).
    pub added: bool,
    /// Advice worth printing.
    pub notes: Vec<String>,
}

/// Makes the team's script for `hook` run `noma hook <hook>` after its
/// own commands (appended; `sh -e` stops at the first failing command, so a
/// failing team check still blocks first). Idempotent.
pub(crate) fn install(h: &Husky, hook: HookName) -> Result<HuskyInstall, HooksError> {
    let script = h.script(hook);
    let mut notes = Vec::new();
    let stub = h.hooks_dir.join(hook.as_str());
    repair_chained(&stub, &mut notes)?;
    if h.version == 9 && fs::symlink_metadata(&stub).is_err() {
        // husky 9 writes a stub for every hook it knows; without one git
        // never runs the team's script for this hook.
        write_mode(&stub, V9_STUB.as_bytes(), 0o755)?;
        notes.push(format!(
            "wrote husky's stub {} (it was missing)",
            stub.display()
        ));
    }
    let existing = read_opt(&script)?;
    let (text, created) = match existing {
        Some(t) if runs_noma(&t, hook) => {
            return Ok(HuskyInstall {
                script,
                created: false,
                added: false,
                notes,
            })
        }
        Some(mut t) => {
            if !t.is_empty() && !t.ends_with('\n') {
                t.push('\n');
            }
            if last_command_is_exit(&t) {
                notes.push(format!(
                    "{} ends with `exit`; the noma line after it never runs: move it above",
                    script.display()
                ));
            }
            (t, false)
        }
        None if h.version == 9 => (String::new(), true),
        None => (V8_HEADER.to_string(), true),
    };
    let mut text = text;
    text.push_str(&line(hook));
    text.push('\n');
    if created {
        write_mode(&script, text.as_bytes(), 0o755)?;
    } else {
        // In place: the team's script keeps its mode and owner.
        noma_store::fsio::contain::write_file(&script, text.as_bytes()).map_err(io_err(&script))?;
    }
    Ok(HuskyInstall {
        script,
        created,
        added: true,
        notes,
    })
}

fn last_command_is_exit(text: &str) -> bool {
    text.lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty() && !l.starts_with('#'))
        .is_some_and(|l| l == "exit" || l.starts_with("exit "))
}

/// An earlier noma (before husky was recognised) renamed husky's stub to
/// `<hook>.noma-chained` and put its script in its place, which silenced
/// the team's hook: put the stub back.
fn repair_chained(stub: &Path, notes: &mut Vec<String>) -> Result<(), HooksError> {
    let chained = super::sibling(stub, super::CHAINED_SUFFIX);
    if fs::symlink_metadata(&chained).is_err() {
        return Ok(());
    }
    let ours = read_opt(stub)?.is_some_and(|s| super::parse_marker(s.as_bytes()).is_some());
    if ours {
        fs::rename(&chained, stub).map_err(io_err(&chained))?;
        notes.push(format!(
            "restored husky's {} from {} (an earlier install had silenced it)",
            stub.display(),
            chained.display()
        ));
    }
    Ok(())
}

#[cfg(unix)]
fn write_mode(path: &Path, bytes: &[u8], mode: u32) -> Result<(), HooksError> {
    use std::os::unix::fs::PermissionsExt;
    noma_store::fsio::contain::write_file(path, bytes).map_err(io_err(path))?;
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).map_err(io_err(path))
}

#[cfg(not(unix))]
fn write_mode(path: &Path, bytes: &[u8], _mode: u32) -> Result<(), HooksError> {
    noma_store::fsio::contain::write_file(path, bytes).map_err(io_err(path))
}

/// Removes our line from the team's script for `hook`; a script left with
/// nothing but husky's header is removed. Returns whether anything changed.
pub(crate) fn uninstall(h: &Husky, hook: HookName) -> Result<bool, HooksError> {
    let script = h.script(hook);
    let Some(text) = read_opt(&script)? else {
        return Ok(false);
    };
    let ours = line(hook);
    let kept: Vec<&str> = text.lines().filter(|l| l.trim() != ours).collect();
    if kept.len() == text.lines().count() {
        return Ok(false);
    }
    let rest = kept.join("\n");
    let header_only = rest
        .lines()
        .all(|l| l.trim().is_empty() || V8_HEADER.lines().any(|h| h == l));
    if header_only {
        fs::remove_file(&script).map_err(io_err(&script))?;
    } else {
        noma_store::fsio::contain::write_file(&script, (rest + "\n").as_bytes())
            .map_err(io_err(&script))?;
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_v9_and_v8() {
        let tmp = tempfile::tempdir().unwrap();
        let v9 = tmp.path().join("a/.husky/_");
        fs::create_dir_all(&v9).unwrap();
        assert_eq!(detect(&v9), None);
        fs::write(v9.join("h"), "").unwrap();
        let h = detect(&v9).unwrap();
        assert_eq!((h.version, h.dir.clone()), (9, tmp.path().join("a/.husky")));
        let v8 = tmp.path().join("b/.husky");
        fs::create_dir_all(v8.join("_")).unwrap();
        fs::write(v8.join("_/husky.sh"), "").unwrap();
        assert_eq!(detect(&v8).unwrap().version, 8);
        assert_eq!(detect(tmp.path()), None);
    }

    #[test]
    fn install_appends_once_and_uninstall_restores() {
        let tmp = tempfile::tempdir().unwrap();
        let hooks = tmp.path().join(".husky/_");
        fs::create_dir_all(&hooks).unwrap();
        fs::write(hooks.join("h"), "").unwrap();
        let h = detect(&hooks).unwrap();
        let team = tmp.path().join(".husky/pre-commit");
        fs::write(&team, "npm test").unwrap();
        let r = install(&h, HookName::PreCommit).unwrap();
        assert!(r.added && !r.created, "{r:?}");
        let text = fs::read_to_string(&team).unwrap();
        assert_eq!(text, format!("npm test\n{}\n", line(HookName::PreCommit)));
        assert!(hooks.join("pre-commit").is_file(), "missing stub written");
        let r = install(&h, HookName::PreCommit).unwrap();
        assert!(!r.added);
        assert_eq!(fs::read_to_string(&team).unwrap(), text);
        assert!(uninstall(&h, HookName::PreCommit).unwrap());
        assert_eq!(fs::read_to_string(&team).unwrap(), "npm test\n");
        // A script noma created is removed again.
        let r = install(&h, HookName::PreMergeCommit).unwrap();
        assert!(r.created);
        uninstall(&h, HookName::PreMergeCommit).unwrap();
        assert!(!tmp.path().join(".husky/pre-merge-commit").exists());
    }

    #[test]
    fn a_line_the_team_wrote_counts() {
        assert!(runs_noma(
            "npx lint\nnoma hook pre-commit\n",
            HookName::PreCommit
        ));
        assert!(runs_noma(
            "'/opt/noma' hook pre-commit",
            HookName::PreCommit
        ));
        assert!(!runs_noma("# noma hook pre-commit", HookName::PreCommit));
        assert!(!runs_noma(
            "noma hook pre-merge-commit",
            HookName::PreCommit
        ));
    }
}

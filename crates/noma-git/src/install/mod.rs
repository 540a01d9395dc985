//! Git hook installation: `noma hooks install | uninstall | status` and the
//! repository set-up behind `noma init` ([`init`]).
//!
//! We install `pre-commit` and `pre-merge-commit`, small POSIX sh scripts
//! rendered from `hooks/hook.sh.in` that run `noma hook <name>`. Each carries
//! the marker line `# noma-managed-hook v<template> hook=<name> noma=<version>`
//! so we never mistake someone else's hook for ours.
//!
//! Hook directory: wherever git runs hooks from, see [`crate::git::layout`]
//! (`core.hooksPath`, the common dir of linked worktrees, `GIT_DIR`).
//!
//! Existing hooks are never clobbered:
//! - by default a foreign hook is *chained*: renamed to
//!   `<hook>.noma-chained` in the same directory and run first by our script,
//!   with the same arguments, stdin and environment; its failure fails the
//!   hook with its exit status and noma does not run. It keeps its mode, so a
//!   non-executable hook stays as inert as git left it. Caveat: it now runs
//!   as `$0 = …/<hook>.noma-chained`, which breaks scripts that derive the
//!   hook name from `$0`; husky's are such scripts, so a husky hook found
//!   outside husky's own layout is refused (use the snippet below instead,
//!   or `--force`).
//! - husky's own layout (`core.hooksPath` = `.husky/_` with the dispatcher
//!   `h`, or v4-8's `.husky` with `_/husky.sh`) is recognised and installed
//!   *through*: `noma hook <name>` is appended to the team's `.husky/<name>`
//!   and nothing is renamed, see [`husky`].
//! - with `--force` a foreign hook is moved to `<hook>.noma-backup` and
//!   replaced (not run).
//! - `uninstall` removes our script and renames the backup, else the chained
//!   hook, back into place: the bytes, mode and symlink-ness are what they
//!   were. A foreign hook at the hook path is left alone.
//! - an install that would have to overwrite an existing `.noma-chained` or
//!   `.noma-backup` file refuses instead, and changes nothing.
//! - a `core.hooksPath` from the global or system git configuration is a
//!   directory every repository shares: [`install_in`] refuses it unless
//!   `--force`, and names the repository-local fix.
//!
//! The script runs the absolute path of the binary that installed it (so a
//! hook works without PATH set up, e.g. from GUIs), falling back to `noma` on
//! PATH; if neither exists it fails with a message rather than let the commit
//! through unchecked.
//!
//! # Using a hook manager instead
//!
//! [pre-commit](https://pre-commit.com) (`.pre-commit-config.yaml`; the
//! second hook needs `pre-commit install --hook-type pre-merge-commit`):
//!
//! ```yaml
//! repos:
//!   - repo: https://github.com/<owner>/noma
//!     rev: v0.1.0
//!     hooks:
//!       - id: noma-check
//!       - id: noma-check-merge
//! ```
//!
//! [lefthook](https://lefthook.dev) (`lefthook.yml`):
//!
//! ```yaml
//! pre-commit:
//!   commands:
//!     noma:
//!       run: noma hook pre-commit
//! pre-merge-commit:
//!   commands:
//!     noma:
//!       run: noma hook pre-merge-commit
//! ```
//!
//! [husky](https://typicode.github.io/husky/): `noma hooks install` (and
//! `noma init`) recognise its layout and append these lines themselves
//! ([`husky`]); by hand it is the same, one line per hook file:
//!
//! ```sh
//! echo "noma hook pre-commit" >> .husky/pre-commit
//! echo "noma hook pre-merge-commit" >> .husky/pre-merge-commit
//! ```

pub mod adopt;
pub mod attributes;
pub mod clone_check;
mod driver;
pub mod husky;
pub mod init;
pub mod managers;

pub use driver::*;

use crate::git;
use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// The hook script template (placeholders `@HOOK@`, `@NOMA@`, `@VERSION@`,
/// `@TEMPLATE@`).
const TEMPLATE: &str = include_str!("../../../../hooks/hook.sh.in");

/// Version of the script template; bump when its behaviour changes.
pub const TEMPLATE_VERSION: u32 = 1;

/// Start of the marker line that identifies our scripts.
pub const MARKER: &str = "# noma-managed-hook";

/// Suffix of a foreign hook we run before ours.
pub const CHAINED_SUFFIX: &str = ".noma-chained";

/// Suffix of a foreign hook replaced by `--force`.
pub const BACKUP_SUFFIX: &str = ".noma-backup";

/// How much of a hook file we read to classify it.
const SNIFF_LIMIT: u64 = 64 * 1024;

/// The hooks we install.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookName {
    /// Runs before `git commit` records a commit.
    PreCommit,
    /// Runs before `git merge` records a merge commit.
    PreMergeCommit,
}

impl HookName {
    /// Every hook we install, in order.
    pub const ALL: [HookName; 2] = [HookName::PreCommit, HookName::PreMergeCommit];

    /// The hook's file name.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            HookName::PreCommit => "pre-commit",
            HookName::PreMergeCommit => "pre-merge-commit",
        }
    }
}

impl std::fmt::Display for HookName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The binary the hooks should run: the one running now.
pub fn current_noma() -> io::Result<PathBuf> {
    std::env::current_exe()
}

/// Renders the script for `hook`, running `noma` (an absolute path).
pub(crate) fn render(hook: HookName, noma: &Path) -> Vec<u8> {
    let text = TEMPLATE
        .replace("@HOOK@", hook.as_str())
        .replace("@VERSION@", env!("CARGO_PKG_VERSION"))
        .replace("@TEMPLATE@", &TEMPLATE_VERSION.to_string());
    let quoted = shell_quote(&path_bytes(noma));
    let mut out = Vec::with_capacity(text.len() + quoted.len());
    // The path may not be UTF-8, so it is spliced in as bytes.
    let mut parts = text.split("@NOMA@");
    if let Some(first) = parts.next() {
        out.extend_from_slice(first.as_bytes());
    }
    for part in parts {
        out.extend_from_slice(&quoted);
        out.extend_from_slice(part.as_bytes());
    }
    out
}

#[cfg(unix)]
fn path_bytes(p: &Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    p.as_os_str().as_bytes().to_vec()
}

#[cfg(not(unix))]
fn path_bytes(p: &Path) -> Vec<u8> {
    // Git for Windows runs hooks with its own sh, which wants `/` paths.
    p.to_string_lossy().replace('\\', "/").into_bytes()
}

/// Quotes bytes as one POSIX sh word: `'…'`, with `'` written as `'\''`.
pub(crate) fn shell_quote(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len() + 2);
    out.push(b'\'');
    for &b in raw {
        if b == b'\'' {
            out.extend_from_slice(b"'\\''");
        } else {
            out.push(b);
        }
    }
    out.push(b'\'');
    out
}

/// What the marker line of one of our scripts says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    /// Template version (`v1`).
    pub template: Option<u32>,
    /// Hook name (`hook=`).
    pub hook: Option<String>,
    /// Version of noma that wrote it (`noma=`).
    pub version: Option<String>,
}

/// Finds and parses our marker line among the first lines of a script.
pub(crate) fn parse_marker(script: &[u8]) -> Option<Marker> {
    let head = String::from_utf8_lossy(script.get(..script.len().min(4096))?);
    let line = head.lines().take(10).find(|l| l.starts_with(MARKER))?;
    let mut m = Marker {
        template: None,
        hook: None,
        version: None,
    };
    for word in line[MARKER.len()..].split_whitespace() {
        if let Some(v) = word.strip_prefix("hook=") {
            m.hook = Some(v.to_string());
        } else if let Some(v) = word.strip_prefix("noma=") {
            m.version = Some(v.to_string());
        } else if let Some(v) = word.strip_prefix('v') {
            m.template = v.parse().ok();
        }
    }
    Some(m)
}

/// A hook manager that generated a foreign hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Manager {
    /// husky (its scripts find their hook by `$0`: they cannot be chained).
    Husky,
    /// The pre-commit framework.
    PreCommit,
    /// lefthook.
    Lefthook,
}

impl Manager {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Manager::Husky => "husky",
            Manager::PreCommit => "pre-commit",
            Manager::Lefthook => "lefthook",
        }
    }

    fn sniff(script: &[u8]) -> Option<Manager> {
        let text = String::from_utf8_lossy(script).to_ascii_lowercase();
        // husky 9's stubs do not name husky: `. "$(dirname "$0")/h"`.
        if text.contains("husky") || text.contains("dirname \"$0\")/h\"") {
            Some(Manager::Husky)
        } else if text.contains("lefthook") {
            Some(Manager::Lefthook)
        } else if text.contains("pre-commit.com") || text.contains("generated by pre-commit") {
            Some(Manager::PreCommit)
        } else {
            None
        }
    }
}

/// What occupies a hook path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// Nothing.
    Absent,
    /// Our script.
    Ours {
        /// Its marker.
        marker: Marker,
        /// Byte-identical to what this binary would install.
        current: bool,
        /// Has an execute bit (git ignores hooks that do not).
        executable: bool,
    },
    /// Anything else (file, symlink, directory).
    Foreign {
        /// The hook manager that wrote it, if recognisable.
        manager: Option<Manager>,
    },
    /// husky's layout: the hook runs the team's script, which runs noma
    /// when `runs_noma`.
    Husky {
        /// The team's script (`.husky/<hook>`).
        script: PathBuf,
        /// The script runs `noma hook <hook>`.
        runs_noma: bool,
    },
}

/// The state of one hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookStatus {
    /// Which hook.
    pub hook: HookName,
    /// Its path.
    pub path: PathBuf,
    /// What is there.
    pub state: State,
    /// A foreign hook we run first, if present.
    pub chained: Option<PathBuf>,
    /// A foreign hook `--force` replaced, if present.
    pub backup: Option<PathBuf>,
}

impl HookStatus {
    /// One word: `not-installed`, `installed`, `chained`, `foreign` or
    /// `husky` (installed through husky's script).
    pub fn label(&self) -> &'static str {
        match (&self.state, &self.chained) {
            (
                State::Husky {
                    runs_noma: true, ..
                },
                _,
            ) => "husky",
            (State::Husky { .. }, _) => "not-installed",
            (State::Absent, _) => "not-installed",
            (State::Ours { .. }, Some(_)) => "chained",
            (State::Ours { .. }, None) => "installed",
            (State::Foreign { .. }, _) => "foreign",
        }
    }
}

pub(crate) fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    path.with_file_name(name)
}

fn exists(path: &Path) -> bool {
    // symlink_metadata: a dangling symlink still occupies the name.
    fs::symlink_metadata(path).is_ok()
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> HooksError + '_ {
    move |source| HooksError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Inspects one hook in `hooks_dir`; `noma` is the binary an install would
/// use (to tell whether our script is current).
pub(crate) fn inspect(
    hooks_dir: &Path,
    hook: HookName,
    noma: &Path,
) -> Result<HookStatus, HooksError> {
    let path = hooks_dir.join(hook.as_str());
    let present = |p: PathBuf| exists(&p).then_some(p);
    let chained = present(sibling(&path, CHAINED_SUFFIX));
    let backup = present(sibling(&path, BACKUP_SUFFIX));
    if let Some(h) = husky::detect(hooks_dir) {
        let script = h.script(hook);
        let runs_noma = match fs::read(&script) {
            Ok(b) => husky::runs_noma(&String::from_utf8_lossy(&b), hook),
            Err(e) if e.kind() == io::ErrorKind::NotFound => false,
            Err(e) => return Err(io_err(&script)(e)),
        };
        return Ok(HookStatus {
            hook,
            path,
            state: State::Husky { script, runs_noma },
            chained,
            backup,
        });
    }
    let state = match fs::symlink_metadata(&path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => State::Absent,
        Err(e) => return Err(io_err(&path)(e)),
        // Ours are always plain files; a symlink or directory is someone else's.
        Ok(meta) if !meta.file_type().is_file() => State::Foreign { manager: None },
        Ok(meta) => {
            let mut head = Vec::new();
            fs::File::open(&path)
                .and_then(|f| f.take(SNIFF_LIMIT).read_to_end(&mut head))
                .map_err(io_err(&path))?;
            match parse_marker(&head) {
                Some(marker) => State::Ours {
                    marker,
                    current: head == render(hook, noma),
                    executable: is_executable(&meta),
                },
                None => State::Foreign {
                    manager: Manager::sniff(&head),
                },
            }
        }
    };
    Ok(HookStatus {
        hook,
        path,
        state,
        chained,
        backup,
    })
}

/// Inspects every hook we install.
pub fn status(hooks_dir: &Path, noma: &Path) -> Result<Vec<HookStatus>, HooksError> {
    HookName::ALL
        .iter()
        .map(|&h| inspect(hooks_dir, h, noma))
        .collect()
}

#[cfg(unix)]
fn is_executable(meta: &fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_meta: &fs::Metadata) -> bool {
    true
}

/// Why hooks cannot be installed or removed.
#[derive(Debug, thiserror::Error)]
pub enum HooksError {
    /// Installing would lose or break an existing hook; nothing was changed.
    #[error("{}", .0.join("\n"))]
    Conflict(Vec<String>),
    /// A file operation failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
}

/// Options of [`install`].
#[derive(Debug, Clone)]
pub struct InstallOptions {
    /// Replace a foreign hook (keeping it as `<hook>.noma-backup`) instead of
    /// chaining it.
    pub force: bool,
    /// The binary the scripts run (absolute).
    pub noma: PathBuf,
}

/// What [`install`] did to one hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Installed {
    /// Nothing was there; our script is.
    Fresh,
    /// A foreign hook was moved aside and is run first.
    Chained {
        /// Where it is now.
        kept: PathBuf,
    },
    /// A foreign hook was replaced (`--force`).
    Replaced {
        /// Where it is now.
        backup: PathBuf,
    },
    /// Our script was there but differed (older version, other binary,
    /// lost its execute bit); rewritten.
    Updated,
    /// Our script was already there, identical.
    Unchanged,
    /// husky's layout: the team's script runs noma (see [`husky`]).
    ViaHusky {
        /// The team's script.
        script: PathBuf,
        /// It was created.
        created: bool,
        /// Our line was added (false: it already ran noma).
        added: bool,
    },
}

/// The outcome for one hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstallReport {
    /// Which hook.
    pub hook: HookName,
    /// Its path.
    pub path: PathBuf,
    /// What was done.
    pub outcome: Installed,
    /// Advice worth printing (a hook manager is in use, a chained hook
    /// found from an earlier install, …).
    pub note: Option<String>,
}

/// Installs every hook into the directory git runs `layout`'s hooks from.
/// A `core.hooksPath` set outside the repository (the global or system git
/// configuration) names a directory every repository shares: noma's hooks
/// there would run in all of them, so that is refused, changing nothing,
/// unless `opts.force`. The fix it prints gives the repository its own
/// hooks directory. A hooks directory named inside the work tree that a
/// link leads outside it is refused, `force` or not
/// ([`git::layout::Layout::hooks_dir_link_escape`]).
pub fn install_in(
    layout: &git::layout::Layout,
    opts: &InstallOptions,
) -> Result<Vec<InstallReport>, HooksError> {
    if let (Some(level), false) = (layout.hooks_path_shared, opts.force) {
        let own = layout.common_dir.join("hooks");
        return Err(HooksError::Conflict(vec![format!(
            "core.hooksPath is set in the {level} git configuration to {}, a hooks directory \
             every repository shares: noma's hooks there would run in all of them. To install \
             for this repository only, give it its own hooks directory first (it then runs \
             its own hooks instead of the shared ones): git config core.hooksPath \"{}\"; or \
             rerun with --force to install into the shared directory",
            layout.hooks_dir.display(),
            own.display()
        )]));
    }
    if let Some((link, resolved)) = layout.hooks_dir_link_escape() {
        return Err(HooksError::Conflict(vec![format!(
            "the hooks directory {} resolves to {}, outside the repository, through the link \
             {}: noma writes hooks only inside the repository. Replace the link with a \
             directory (or point core.hooksPath at a directory inside the work tree), then \
             run this again",
            layout.hooks_dir.display(),
            resolved.display(),
            link.display()
        )]));
    }
    install(&layout.hooks_dir, opts)
}

/// Installs every hook into `hooks_dir` (created if missing). All-or-nothing
/// with respect to conflicts: if any hook would need a forbidden overwrite,
/// nothing is changed and [`HooksError::Conflict`] lists why.
pub(crate) fn install(
    hooks_dir: &Path,
    opts: &InstallOptions,
) -> Result<Vec<InstallReport>, HooksError> {
    if let Some(h) = husky::detect(hooks_dir) {
        return install_via_husky(hooks_dir, &h);
    }
    let statuses = status(hooks_dir, &opts.noma)?;
    let conflicts: Vec<String> = statuses
        .iter()
        .filter_map(|s| conflict(s, opts.force))
        .collect();
    if !conflicts.is_empty() {
        return Err(HooksError::Conflict(conflicts));
    }
    fs::create_dir_all(hooks_dir).map_err(io_err(hooks_dir))?;
    statuses
        .into_iter()
        .map(|s| install_hook(s, opts))
        .collect()
}

/// husky's layout: every hook goes into the team's script (see [`husky`]).
fn install_via_husky(hooks_dir: &Path, h: &husky::Husky) -> Result<Vec<InstallReport>, HooksError> {
    HookName::ALL
        .iter()
        .map(|&hook| {
            let r = husky::install(h, hook)?;
            Ok(InstallReport {
                hook,
                path: hooks_dir.join(hook.as_str()),
                outcome: Installed::ViaHusky {
                    script: r.script,
                    created: r.created,
                    added: r.added,
                },
                note: (!r.notes.is_empty()).then(|| r.notes.join("; ")),
            })
        })
        .collect()
}

/// Why the hook `s` cannot be installed without an overwrite `force`
/// does not allow (or, under `force`, without losing a backup).
fn conflict(s: &HookStatus, force: bool) -> Option<String> {
    let State::Foreign { manager } = s.state else {
        return None;
    };
    let name = s.hook;
    if force {
        return s.backup.as_ref().map(|b| {
            format!(
                "{name}: a foreign hook is installed and {} already holds an earlier \
                 backup; move one of them away first",
                b.display()
            )
        });
    }
    if manager == Some(Manager::Husky) {
        return Some(format!(
            "{name}: {} is generated by husky, which cannot be chained (its scripts \
             find their hook by file name); add `noma hook {name}` to \
             .husky/{name} instead, or use --force to replace it",
            s.path.display()
        ));
    }
    s.chained.as_ref().map(|c| {
        format!(
            "{name}: a foreign hook is installed and {} already exists; move one of \
             them away first, or use --force to replace the hook (keeping a backup)",
            c.display()
        )
    })
}

/// Writes our script for the hook `s` (already checked for conflicts).
fn install_hook(s: HookStatus, opts: &InstallOptions) -> Result<InstallReport, HooksError> {
    let script = render(s.hook, &opts.noma);
    let mut note = None;
    let outcome = match s.state {
        State::Ours {
            current: true,
            executable: true,
            ..
        } => Installed::Unchanged,
        // Not reached: install() takes the husky path before.
        State::Husky { .. } => Installed::Unchanged,
        State::Ours { .. } => {
            write_script(&s.path, &script)?;
            Installed::Updated
        }
        State::Absent => {
            if let Some(c) = &s.chained {
                note = Some(format!("runs the existing {} first", c.display()));
            }
            write_script(&s.path, &script)?;
            Installed::Fresh
        }
        State::Foreign { manager } => {
            let (outcome, n) = replace_foreign(&s.path, manager, &script, opts.force)?;
            note = n;
            outcome
        }
    };
    Ok(InstallReport {
        hook: s.hook,
        path: s.path,
        outcome,
        note,
    })
}

/// Moves the foreign hook at `path` aside (chained, or a backup under
/// `force`) and puts our `script` in its place; with the note to print
/// when a hook manager made it.
fn replace_foreign(
    path: &Path,
    manager: Option<Manager>,
    script: &[u8],
    force: bool,
) -> Result<(Installed, Option<String>), HooksError> {
    let aside = sibling(path, if force { BACKUP_SUFFIX } else { CHAINED_SUFFIX });
    // Stage our script first so the hook path is empty only
    // for the instant between two renames.
    let tmp = stage_script(path, script)?;
    let moved = fs::rename(path, &aside)
        .and_then(|()| fs::rename(&tmp, path))
        .map_err(io_err(path));
    if moved.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    moved?;
    if force {
        return Ok((Installed::Replaced { backup: aside }, None));
    }
    let note = manager.map(|m| {
        format!(
            "this hook comes from {}; adding noma to its configuration is \
             the cleaner set-up (see docs/git-workflows.md in noma's repository)",
            m.as_str()
        )
    });
    Ok((Installed::Chained { kept: aside }, note))
}

/// Writes `bytes` to a temp file next to `path` with mode 0755, synced;
/// returns the temp path.
fn stage_script(path: &Path, bytes: &[u8]) -> Result<PathBuf, HooksError> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = path.with_file_name(format!(".{name}.noma-tmp-{}", std::process::id()));
    let write = || -> io::Result<()> {
        // The hooks directory may be in the work tree (core.hooksPath):
        // a temp name planted there as a link is refused, not followed.
        let replace = noma_store::fsio::contain::WriteMode::Replace;
        let mut f = noma_store::fsio::contain::open_write(&tmp, replace)?;
        f.write_all(bytes)?;
        set_executable(&f)?;
        f.sync_all()
    };
    if let Err(e) = write() {
        let _ = fs::remove_file(&tmp);
        return Err(io_err(&tmp)(e));
    }
    Ok(tmp)
}

/// Atomically puts our script at `path` (a crash leaves the old file or
/// the new one, never half a script).
fn write_script(path: &Path, bytes: &[u8]) -> Result<(), HooksError> {
    let tmp = stage_script(path, bytes)?;
    fs::rename(&tmp, path).map_err(|e| {
        let _ = fs::remove_file(&tmp);
        io_err(path)(e)
    })
}

#[cfg(unix)]
fn set_executable(f: &fs::File) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    // Explicit: the umask may have stripped bits at creation.
    f.set_permissions(fs::Permissions::from_mode(0o755))
}

#[cfg(not(unix))]
fn set_executable(_f: &fs::File) -> io::Result<()> {
    Ok(())
}

/// What [`uninstall`] did to one hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Removed {
    /// Our script was removed; `restored` is the foreign hook put back.
    Removed {
        /// The file renamed back to the hook path, if any.
        restored: Option<PathBuf>,
    },
    /// Our script was not there but a kept foreign hook was; put back.
    RestoredLeftover {
        /// The file renamed back to the hook path.
        from: PathBuf,
    },
    /// A foreign hook is installed; left alone.
    LeftForeign,
    /// Nothing to do.
    NotInstalled,
}

/// The outcome for one hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UninstallReport {
    /// Which hook.
    pub hook: HookName,
    /// Its path.
    pub path: PathBuf,
    /// What was done.
    pub outcome: Removed,
    /// Files left in place that the user may want to look at.
    pub note: Option<String>,
}

/// Removes our hooks from `hooks_dir` and restores what was there before.
pub fn uninstall(hooks_dir: &Path) -> Result<Vec<UninstallReport>, HooksError> {
    let mut reports = Vec::new();
    if let Some(h) = husky::detect(hooks_dir) {
        for hook in HookName::ALL {
            let removed = husky::uninstall(&h, hook)?;
            reports.push(UninstallReport {
                hook,
                path: hooks_dir.join(hook.as_str()),
                outcome: if removed {
                    Removed::Removed { restored: None }
                } else {
                    Removed::NotInstalled
                },
                note: removed
                    .then(|| format!("removed noma's line from {}", h.script(hook).display())),
            });
        }
        return Ok(reports);
    }
    // `noma` only matters for `current`, which uninstall ignores.
    for s in status(hooks_dir, Path::new(""))? {
        // The backup is what sat at the hook path just before our script;
        // a chained hook is older still (or is the same generation).
        let (restore, other) = match (s.backup.clone(), s.chained.clone()) {
            (Some(b), c) => (Some(b), c),
            (None, c) => (c, None),
        };
        let mut note = other.map(|o| format!("left {} in place", o.display()));
        let outcome = match (&s.state, restore) {
            (State::Ours { .. }, Some(from)) => {
                // One rename replaces our script: the hook path is never empty.
                fs::rename(&from, &s.path).map_err(io_err(&from))?;
                Removed::Removed {
                    restored: Some(from),
                }
            }
            (State::Ours { .. }, None) => {
                fs::remove_file(&s.path).map_err(io_err(&s.path))?;
                Removed::Removed { restored: None }
            }
            (State::Absent, Some(from)) => {
                fs::rename(&from, &s.path).map_err(io_err(&from))?;
                Removed::RestoredLeftover { from }
            }
            (State::Absent, None) => Removed::NotInstalled,
            // Not reached: uninstall() takes the husky path before.
            (State::Husky { .. }, _) => Removed::NotInstalled,
            (State::Foreign { .. }, kept) => {
                if let Some(k) = kept {
                    note = Some(format!(
                        "{} exists but the hook path holds a foreign hook; left both alone",
                        k.display()
                    ));
                }
                Removed::LeftForeign
            }
        };
        reports.push(UninstallReport {
            hook: s.hook,
            path: s.path,
            outcome,
            note,
        });
    }
    Ok(reports)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noma() -> PathBuf {
        PathBuf::from("/opt/it's/noma")
    }

    fn opts(force: bool) -> InstallOptions {
        InstallOptions {
            force,
            noma: noma(),
        }
    }

    #[test]
    fn render_has_marker_and_quoted_binary() {
        let s = String::from_utf8(render(HookName::PreMergeCommit, &noma())).unwrap();
        assert!(s.starts_with("#!/bin/sh\n# noma-managed-hook v1 hook=pre-merge-commit noma="));
        assert!(s.contains("noma='/opt/it'\\''s/noma'\n"));
        assert!(s.contains("exec \"$noma\" hook pre-merge-commit \"$@\""));
        for p in ["@HOOK@", "@NOMA@", "@VERSION@", "@TEMPLATE@"] {
            assert!(!s.contains(p), "unreplaced {p}");
        }
        let m = parse_marker(s.as_bytes()).unwrap();
        assert_eq!(m.template, Some(TEMPLATE_VERSION));
        assert_eq!(m.hook.as_deref(), Some("pre-merge-commit"));
        assert_eq!(m.version.as_deref(), Some(env!("CARGO_PKG_VERSION")));
        assert_eq!(parse_marker(b"#!/bin/sh\necho hi\n"), None);
        assert_eq!(parse_marker(b""), None);
    }

    #[test]
    fn managers_are_recognised() {
        assert_eq!(
            Manager::sniff(b"#!/usr/bin/env sh\n. \"$(dirname \"$0\")/_/husky.sh\"\n"),
            Some(Manager::Husky)
        );
        assert_eq!(
            Manager::sniff(b"# File generated by pre-commit: https://pre-commit.com\n"),
            Some(Manager::PreCommit)
        );
        assert_eq!(Manager::sniff(b"exit 0\n"), None);
    }

    #[cfg(unix)]
    fn mode(p: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    #[cfg(unix)]
    fn install_creates_dir_is_idempotent_and_uninstalls_cleanly() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("does/not/exist");
        let r = install(&dir, &opts(false)).unwrap();
        assert!(r.iter().all(|r| r.outcome == Installed::Fresh));
        assert_eq!(mode(&dir.join("pre-commit")), 0o755);
        let st = status(&dir, &noma()).unwrap();
        assert!(st.iter().all(|s| s.label() == "installed"));
        let r = install(&dir, &opts(false)).unwrap();
        assert!(r.iter().all(|r| r.outcome == Installed::Unchanged));
        // Another binary: our script is outdated and gets rewritten.
        let other = InstallOptions {
            force: false,
            noma: PathBuf::from("/elsewhere/noma"),
        };
        assert!(matches!(
            status(&dir, &other.noma).unwrap()[0].state,
            State::Ours { current: false, .. }
        ));
        let r = install(&dir, &other).unwrap();
        assert!(r.iter().all(|r| r.outcome == Installed::Updated));
        let r = uninstall(&dir).unwrap();
        assert!(r
            .iter()
            .all(|r| r.outcome == Removed::Removed { restored: None }));
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 0);
        let r = uninstall(&dir).unwrap();
        assert!(r.iter().all(|r| r.outcome == Removed::NotInstalled));
    }

    #[test]
    #[cfg(unix)]
    fn foreign_hooks_are_chained_or_backed_up_and_restored() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let hook = dir.join("pre-commit");
        let body = b"#!/bin/sh\nexit 3\n";
        fs::write(&hook, body).unwrap();
        fs::set_permissions(&hook, fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::symlink("elsewhere", dir.join("pre-merge-commit")).unwrap();

        let r = install(dir, &opts(false)).unwrap();
        assert_eq!(
            r[0].outcome,
            Installed::Chained {
                kept: dir.join("pre-commit.noma-chained")
            }
        );
        assert_eq!(status(dir, &noma()).unwrap()[1].label(), "chained");
        // The chained hook's exit status is the hook's.
        let out = std::process::Command::new("sh")
            .arg(&hook)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(3));

        uninstall(dir).unwrap();
        assert_eq!(fs::read(&hook).unwrap(), body);
        assert_eq!(mode(&hook), 0o700);
        let link = dir.join("pre-merge-commit");
        assert_eq!(fs::read_link(&link).unwrap(), PathBuf::from("elsewhere"));

        let r = install(dir, &opts(true)).unwrap();
        assert_eq!(
            r[0].outcome,
            Installed::Replaced {
                backup: dir.join("pre-commit.noma-backup")
            }
        );
        // Forced again over a new foreign hook: the old backup would be lost.
        fs::write(&hook, b"#!/bin/sh\n").unwrap();
        let err = install(dir, &opts(true)).unwrap_err();
        assert!(matches!(err, HooksError::Conflict(ref c) if c.len() == 1));
        fs::remove_file(&hook).unwrap();
        install(dir, &opts(true)).unwrap();
        uninstall(dir).unwrap();
        assert_eq!(fs::read(&hook).unwrap(), body);
        assert!(!exists(&dir.join("pre-commit.noma-backup")));
    }

    #[test]
    fn husky_hooks_are_refused_without_force_and_nothing_changes() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        fs::write(
            dir.join("pre-merge-commit"),
            b"#!/bin/sh\n. \"$0/../h\" # husky\n",
        )
        .unwrap();
        let err = install(dir, &opts(false)).unwrap_err().to_string();
        assert!(err.contains("husky") && err.contains(".husky/pre-merge-commit"));
        assert!(!exists(&dir.join("pre-commit")), "all-or-nothing");
    }

    #[test]
    fn merge_driver_registration_is_idempotent_and_reversible() {
        let dir = tempfile::tempdir().unwrap();
        let git = dir.path().join(".git");
        fs::create_dir_all(&git).unwrap();
        fs::write(git.join("config"), "[core]\n\tbare = false\n").unwrap();
        let attrs = dir.path().join(".gitattributes");
        fs::write(&attrs, "*.png binary\n*.noma text eol=lf").unwrap();
        let c = install_merge_driver(&git, dir.path(), &noma()).unwrap();
        assert!(c.config);
        assert_eq!(c.attributes.len(), 3);
        let s = merge_driver_status(&git, dir.path()).unwrap();
        assert!(s.ours && s.attributes == [true; 3], "{s:?}");
        let text = fs::read_to_string(&attrs).unwrap();
        assert!(
            text.starts_with("*.png binary\n*.noma text eol=lf\n# noma"),
            "{text}"
        );
        // Second install: nothing to do.
        assert_eq!(
            install_merge_driver(&git, dir.path(), &noma()).unwrap(),
            DriverChange::default()
        );
        assert_eq!(fs::read_to_string(&attrs).unwrap(), text);
        let u = uninstall_merge_driver(&git, dir.path(), true).unwrap();
        assert!(u.config);
        assert_eq!(u.attributes.len(), 3);
        assert_eq!(
            fs::read_to_string(&attrs).unwrap(),
            "*.png binary\n*.noma text eol=lf\n"
        );
        let s = merge_driver_status(&git, dir.path()).unwrap();
        assert!(s.driver.is_none() && !s.ours && s.attributes == [false; 3]);
    }

    #[test]
    fn an_older_install_gains_the_sidecar_line_once() {
        let dir = tempfile::tempdir().unwrap();
        let git = dir.path().join(".git");
        fs::create_dir_all(&git).unwrap();
        fs::write(git.join("config"), "").unwrap();
        let attrs = dir.path().join(".gitattributes");
        let older = format!("{ATTRIBUTE_MARKER}\n*.noma merge=noma\n*.noma.patches merge=noma\n");
        fs::write(&attrs, &older).unwrap();
        let c = install_merge_driver(&git, dir.path(), &noma()).unwrap();
        assert_eq!(
            c.attributes,
            vec!["*.noma.provenance merge=union".to_string()]
        );
        let text = fs::read_to_string(&attrs).unwrap();
        assert_eq!(
            text,
            format!("{older}{ATTRIBUTE_MARKER}\n*.noma.provenance merge=union\n")
        );
        install_merge_driver(&git, dir.path(), &noma()).unwrap();
        assert_eq!(fs::read_to_string(&attrs).unwrap(), text);
        uninstall_merge_driver(&git, dir.path(), true).unwrap();
        assert!(!attrs.exists());
    }

    #[test]
    fn routed_patterns_name_the_lines_in_force_in_order() {
        let mut s = DriverStatus {
            driver: None,
            ours: false,
            attributes: [false; 3],
            foreign_attributes: Vec::new(),
        };
        assert!(s.routed_patterns().is_empty());
        s.attributes = [true, false, true];
        assert_eq!(s.routed_patterns(), ["*.noma", "*.noma.provenance"]);
    }

    #[test]
    fn foreign_merge_attribute_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let git = dir.path().join(".git");
        fs::create_dir_all(&git).unwrap();
        fs::write(git.join("config"), "").unwrap();
        let attrs = dir.path().join(".gitattributes");
        fs::write(&attrs, "*.noma merge=union\n").unwrap();
        let c = install_merge_driver(&git, dir.path(), &noma()).unwrap();
        assert_eq!(
            c.attributes,
            vec![
                "*.noma.patches merge=noma".to_string(),
                "*.noma.provenance merge=union".to_string()
            ]
        );
        assert!(c.notes.iter().any(|n| n.contains("merge=union")), "{c:?}");
        uninstall_merge_driver(&git, dir.path(), true).unwrap();
        assert_eq!(fs::read_to_string(&attrs).unwrap(), "*.noma merge=union\n");
    }
}

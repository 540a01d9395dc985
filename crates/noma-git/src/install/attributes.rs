//! `.gitattributes` rules that keep documents and transcripts byte-exact
//! through checkout and commit, whatever `core.autocrlf` / `core.eol` say.
//!
//! A transcript records the sha256 of the document's bytes before and after
//! each op. Git for Windows defaults to `core.autocrlf=true`, which checks
//! text files out with CRLF line endings: the checked-out document then no
//! longer has the bytes its transcript promises and every `noma patch`
//! refuses. We unset git's `text` attribute (`-text`) for `*.noma` and
//! `*.noma.patches`:
//! - `-text` tells git never to convert line endings in either direction,
//!   so the working tree holds exactly the committed bytes on every
//!   platform and under every `core.autocrlf` / `core.eol` / `text=auto`;
//! - `text eol=lf` would also check LF out, but it *normalises on commit*:
//!   a document saved with CRLF would be committed with other bytes than
//!   the ones on disk (and than the ones its transcript hashed);
//! - `binary` also unsets `diff` and `merge`, which would hide diffs and
//!   override the merge driver.
//!
//! `-text` leaves `diff` alone (git still shows text diffs) and does not
//! touch `merge=noma`.

use std::io;
use std::path::Path;

use super::HooksError;

/// The rules we add, one per pattern.
pub const EOL_LINES: [&str; 2] = ["*.noma -text", "*.noma.patches -text"];

/// The comment written above the rules we add.
pub const EOL_MARKER: &str =
    "# noma: documents and transcripts stay byte-exact through checkout (added by `noma init`)";

/// Paths the status check asks git about, one per [`EOL_LINES`] entry.
const PROBES: [&str; 2] = ["noma-probe.noma", "noma-probe.noma.patches"];

/// Whether the rules are in force for the repository at a work tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EolStatus {
    /// Per [`EOL_LINES`] entry: git's effective `text` attribute for a
    /// root-level file of that kind is unset (no conversion).
    pub byte_exact: [bool; 2],
    /// Per [`EOL_LINES`] entry: our exact line is in `.gitattributes`
    /// (it may be overridden by a later rule).
    pub lines: [bool; 2],
}

impl EolStatus {
    /// Both kinds of file are byte-exact.
    pub fn ok(&self) -> bool {
        self.byte_exact.iter().all(|b| *b)
    }

    /// The [`EOL_LINES`] not in force (missing or overridden), in order.
    pub fn missing_lines(&self) -> Vec<&'static str> {
        EOL_LINES
            .iter()
            .zip(self.byte_exact)
            .filter(|(_, ok)| !ok)
            .map(|(l, _)| *l)
            .collect()
    }
}

/// What [`install_eol_rules`] did.
#[derive(Debug)]
pub struct EolInstall {
    /// What [`ensure_eol_rules`] changed.
    pub change: EolChange,
    /// The files whose committed bytes were restored ([`restore_converted`]),
    /// or why they could not be checked; `None` when the rules are not in
    /// force (a later rule overrides them), so nothing was restored.
    pub restored: Option<Result<Vec<String>, HooksError>>,
}

/// What [`ensure_eol_rules`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EolChange {
    /// Lines appended to `.gitattributes`.
    pub added: Vec<String>,
    /// Advice worth printing.
    pub notes: Vec<String>,
}

fn attrs_path(work_tree: &Path) -> std::path::PathBuf {
    work_tree.join(".gitattributes")
}

/// The work tree's `.gitattributes` (empty when absent), read without
/// ever blocking.
pub(super) fn read(work_tree: &Path) -> Result<String, HooksError> {
    let path = attrs_path(work_tree);
    // Never blocks: a FIFO or device in its place is refused at once.
    let read = noma_store::fsio::read_regular(&path).and_then(|b| {
        String::from_utf8(b).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
    });
    match read {
        Ok(s) => Ok(s),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(HooksError::Io { path, source: e }),
    }
}

/// Reports whether documents and transcripts are byte-exact in the
/// repository with git dir `git_dir` and work tree `work_tree`, as git
/// resolves the attributes (so `binary`, macros and later overriding rules
/// count).
pub fn eol_status(git_dir: &Path, work_tree: &Path) -> Result<EolStatus, HooksError> {
    let text = read(work_tree)?;
    let mut status = EolStatus {
        byte_exact: [false; 2],
        lines: [false; 2],
    };
    for (i, want) in EOL_LINES.iter().enumerate() {
        status.lines[i] = text.lines().any(|l| l.trim() == *want);
    }
    let unset = crate::git::config::text_unset(git_dir, work_tree, &PROBES).map_err(|e| {
        HooksError::Io {
            path: attrs_path(work_tree),
            source: io::Error::other(e.detail()),
        }
    })?;
    for (i, u) in unset.into_iter().enumerate() {
        status.byte_exact[i] = u;
    }
    Ok(status)
}

/// Appends the [`EOL_LINES`] that are not in force to `.gitattributes`
/// (created if absent), under [`EOL_MARKER`]. Idempotent: a rule already
/// in force (ours, or the team's own `-text` / `binary`) is not added
/// again, and the team's other lines are never touched. When our own line
/// is present but a later rule overrides it, nothing is appended: a note
/// says which.
pub(crate) fn ensure_eol_rules(git_dir: &Path, work_tree: &Path) -> Result<EolChange, HooksError> {
    let status = eol_status(git_dir, work_tree)?;
    let mut change = EolChange::default();
    let mut missing = Vec::new();
    for (i, line) in EOL_LINES.iter().enumerate() {
        if status.byte_exact[i] {
            continue;
        }
        if status.lines[i] {
            change.notes.push(format!(
                "`{line}` is in .gitattributes but a later rule overrides it; move it to the end"
            ));
            continue;
        }
        missing.push(*line);
    }
    if missing.is_empty() {
        return Ok(change);
    }
    let path = attrs_path(work_tree);
    let mut text = read(work_tree)?;
    // Keep the file's own line ending style (a CRLF checkout of it).
    let nl = if text.contains("\r\n") { "\r\n" } else { "\n" };
    if !text.is_empty() && !text.ends_with('\n') {
        text.push_str(nl);
    }
    if !text.lines().any(|l| l.trim() == EOL_MARKER) {
        text.push_str(EOL_MARKER);
        text.push_str(nl);
    }
    for l in missing {
        text.push_str(l);
        text.push_str(nl);
        change.added.push(l.to_string());
    }
    noma_store::fsio::atomic_write(&path, text.as_bytes())
        .map_err(|source| HooksError::Io { path, source })?;
    Ok(change)
}

/// The tracked documents and transcripts whose checked-out bytes are their
/// staged version with CRLF line endings and nothing else changed: what a
/// `core.autocrlf=true` checkout made of them before the rules were in
/// force. With each, the staged bytes. A file that differs in any other
/// way holds a person's edit and is not listed.
pub(crate) fn converted_files(work_tree: &Path) -> Result<Vec<(String, Vec<u8>)>, HooksError> {
    converted_in(&open(work_tree)?, work_tree)
}

/// Adds the rules ([`ensure_eol_rules`]) and, once they are in force,
/// gives the checked-out files git converted before them their committed
/// bytes back ([`restore_converted`]): what `noma hooks install` and
/// `noma init` do for line endings.
pub fn install_eol_rules(git_dir: &Path, work_tree: &Path) -> Result<EolInstall, HooksError> {
    let change = ensure_eol_rules(git_dir, work_tree)?;
    let in_force = eol_status(git_dir, work_tree).is_ok_and(|s| s.ok());
    let restored = in_force.then(|| restore_converted(work_tree));
    Ok(EolInstall { change, restored })
}

/// Whether `.gitattributes` is committed (or staged) in `work_tree`'s
/// repository: other clones have its lines too.
pub fn gitattributes_committed(work_tree: &Path) -> bool {
    crate::git::repo::Repo::discover(work_tree)
        .and_then(|r| r.index_blob(".gitattributes"))
        .is_ok_and(|blob| blob.is_some())
}

/// The paths of [`converted_files`]; none when they cannot be listed
/// (a status report, which must not fail on it).
pub fn converted_paths(work_tree: &Path) -> Vec<String> {
    converted_files(work_tree)
        .unwrap_or_default()
        .into_iter()
        .map(|(p, _)| p)
        .collect()
}

fn converted_in(
    repo: &crate::git::repo::Repo,
    work_tree: &Path,
) -> Result<Vec<(String, Vec<u8>)>, HooksError> {
    let mut found = Vec::new();
    let transcripts = noma_core::transcript::transcript_path(".noma");
    for suffix in [".noma", transcripts.as_str()] {
        for path in repo
            .index_paths_ending_with(suffix)
            .map_err(repo_err(work_tree))?
        {
            let Ok(now) = noma_store::fsio::read_regular(&work_tree.join(&path)) else {
                continue;
            };
            let Some(staged) = repo.index_blob(&path).map_err(repo_err(work_tree))? else {
                continue;
            };
            if noma_core::doc::lines::is_crlf_conversion(&staged, &now) {
                found.push((path, staged));
            }
        }
    }
    Ok(found)
}

/// Gives the [`converted_files`] their staged bytes back and renews their
/// index stat data (a rewritten file of another size otherwise shows as
/// modified). Returns the paths restored. Call it once the rules are in
/// force: until then git would convert them again at checkout.
pub(crate) fn restore_converted(work_tree: &Path) -> Result<Vec<String>, HooksError> {
    let repo = open(work_tree)?;
    let mut restored = Vec::new();
    for (path, staged) in converted_in(&repo, work_tree)? {
        let file = work_tree.join(&path);
        noma_store::fsio::atomic_write(&file, &staged)
            .map_err(|source| HooksError::Io { path: file, source })?;
        restored.push(path);
    }
    if !restored.is_empty() {
        repo.restage(&restored).map_err(repo_err(work_tree))?;
    }
    Ok(restored)
}

fn open(work_tree: &Path) -> Result<crate::git::repo::Repo, HooksError> {
    crate::git::repo::Repo::discover(work_tree).map_err(repo_err(work_tree))
}

fn repo_err(work_tree: &Path) -> impl Fn(crate::git::repo::GitError) -> HooksError + '_ {
    move |e| HooksError::Io {
        path: work_tree.to_path_buf(),
        source: io::Error::other(e.detail()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn repo() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let o = std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(o.status.success());
        dir
    }

    #[test]
    fn appends_once_keeps_team_rules_and_reports() {
        let dir = repo();
        let attrs = dir.path().join(".gitattributes");
        fs::write(&attrs, "* text=auto\n*.png binary").unwrap();
        assert!(!eol_status(&dir.path().join(".git"), dir.path())
            .unwrap()
            .ok());
        let c = ensure_eol_rules(&dir.path().join(".git"), dir.path()).unwrap();
        assert_eq!(c.added, EOL_LINES);
        let text = fs::read_to_string(&attrs).unwrap();
        assert!(
            text.starts_with("* text=auto\n*.png binary\n# noma"),
            "{text}"
        );
        let s = eol_status(&dir.path().join(".git"), dir.path()).unwrap();
        assert!(s.ok() && s.lines == [true, true], "{s:?}");
        assert_eq!(
            ensure_eol_rules(&dir.path().join(".git"), dir.path()).unwrap(),
            EolChange::default()
        );
        assert_eq!(fs::read_to_string(&attrs).unwrap(), text);
    }

    #[test]
    fn missing_lines_name_the_rules_not_in_force() {
        let s = |byte_exact| EolStatus {
            byte_exact,
            lines: [false; 2],
        };
        assert!(s([true, true]).missing_lines().is_empty());
        assert_eq!(s([true, false]).missing_lines(), ["*.noma.patches -text"]);
        assert_eq!(s([false, false]).missing_lines(), EOL_LINES);
    }

    #[test]
    fn installing_the_rules_restores_what_autocrlf_converted_once_in_force() {
        use noma_testutil::git;
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        git(d, &["init", "-q", "-b", "main"]);
        git(d, &["config", "core.autocrlf", "true"]);
        fs::write(d.join("a.noma"), "# A\n\nbody\n").unwrap();
        git(d, &["add", "-A"]);
        git(d, &["commit", "-q", "-m", "one"]);
        fs::remove_file(d.join("a.noma")).unwrap();
        git(d, &["checkout", "--", "a.noma"]);
        assert_eq!(fs::read(d.join("a.noma")).unwrap(), b"# A\r\n\r\nbody\r\n");
        assert_eq!(converted_paths(d), ["a.noma"]);
        let done = install_eol_rules(&d.join(".git"), d).unwrap();
        assert_eq!(done.change.added, EOL_LINES);
        assert_eq!(done.restored.unwrap().unwrap(), ["a.noma"]);
        assert_eq!(fs::read(d.join("a.noma")).unwrap(), b"# A\n\nbody\n");
        assert!(converted_paths(d).is_empty());
        // Overridden by a later rule: the rules are not in force, nothing is restored.
        let attrs = d.join(".gitattributes");
        let text = fs::read_to_string(&attrs).unwrap() + "*.noma text eol=crlf\n";
        fs::write(&attrs, text).unwrap();
        let done = install_eol_rules(&d.join(".git"), d).unwrap();
        assert!(
            done.change.added.is_empty() && done.restored.is_none(),
            "{done:?}"
        );
    }

    #[test]
    fn rules_in_force_are_not_duplicated_and_overrides_are_noted() {
        let dir = repo();
        let attrs = dir.path().join(".gitattributes");
        // The team's own `binary` already keeps documents byte-exact.
        fs::write(&attrs, "*.noma binary\n").unwrap();
        let c = ensure_eol_rules(&dir.path().join(".git"), dir.path()).unwrap();
        assert_eq!(c.added, ["*.noma.patches -text"]);
        // A later rule turning conversion back on: noted, not duplicated.
        let text = fs::read_to_string(&attrs).unwrap() + "*.patches text eol=crlf\n";
        fs::write(&attrs, &text).unwrap();
        assert!(!eol_status(&dir.path().join(".git"), dir.path())
            .unwrap()
            .ok());
        let c = ensure_eol_rules(&dir.path().join(".git"), dir.path()).unwrap();
        assert!(c.added.is_empty() && c.notes.len() == 1, "{c:?}");
        assert_eq!(fs::read_to_string(&attrs).unwrap(), text);
    }
}

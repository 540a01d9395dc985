//! `noma init`: set a repository up for noma. Every step is idempotent and
//! never overwrites what the user wrote:
//! 1. `.noma/config.yml` with the documented defaults, commented (kept if it
//!    exists);
//! 2. `.noma/cache/` in the root `.gitignore` (appended once; the file is
//!    created if absent);
//! 3. the git hooks ([`super::install`]), unless asked not to;
//! 4. MCP registration: reserved for issue 5 ([`register_mcp`]).

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::config::{PolicyFile, CONFIG_PATH};
use crate::git::layout::Layout;

use super::{HooksError, InstallOptions, InstallReport};

/// The `.gitignore` entry for the block cache.
pub const CACHE_IGNORE: &str = ".noma/cache/";

/// Options of [`init`].
#[derive(Debug, Clone)]
pub struct InitOptions {
    /// Install the git hooks.
    pub hooks: bool,
    /// Passed to the hook install: replace foreign hooks (with a backup).
    pub force: bool,
    /// The binary the hooks run.
    pub noma: PathBuf,
}

/// Whether a step changed anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// The file was created.
    Created,
    /// The file existed and was extended.
    Updated,
    /// Already as wanted; nothing written.
    Unchanged,
}

/// What [`init`] did.
#[derive(Debug)]
pub struct InitReport {
    /// Repository root (the work tree).
    pub root: PathBuf,
    /// `.noma/config.yml`.
    pub config: Change,
    /// `.gitignore`.
    pub gitignore: Change,
    /// The hooks directory and the per-hook outcome, or the reason they
    /// were not installed; `None` when hooks were not requested.
    pub hooks: Option<(PathBuf, Result<Vec<InstallReport>, HooksError>)>,
}

/// Why `noma init` cannot run at all.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    /// A bare repository has no work tree to hold `.noma/`.
    #[error("{} is a bare repository: noma init needs a work tree", .0.display())]
    Bare(PathBuf),
    /// A file operation failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
}

/// Runs every step of `noma init` in the repository `layout` describes.
/// Hook conflicts do not abort the other steps: they come back in
/// [`InitReport::hooks`].
pub fn init(layout: &Layout, opts: &InitOptions) -> Result<InitReport, InitError> {
    let root = layout
        .work_tree
        .clone()
        .ok_or_else(|| InitError::Bare(layout.git_dir.clone()))?;
    let config = write_default_policy(&root)?;
    let gitignore = ensure_ignored(&root.join(".gitignore"), CACHE_IGNORE)?;
    let hooks = opts.hooks.then(|| {
        let result = super::install(
            &layout.hooks_dir,
            &InstallOptions {
                force: opts.force,
                noma: opts.noma.clone(),
            },
        );
        (layout.hooks_dir.clone(), result)
    });
    register_mcp(&root);
    Ok(InitReport {
        root,
        config,
        gitignore,
        hooks,
    })
}

/// ISSUE 5 HOOK: register the noma MCP server for agents (`.mcp.json`).
/// Called by [`init`] after the hooks; deliberately does nothing yet.
pub fn register_mcp(_root: &Path) {}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> InitError + '_ {
    move |source| InitError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Creates `<root>/.noma/config.yml` with [`policy_template`] unless it
/// exists (never overwritten, even if empty or invalid).
pub fn write_default_policy(root: &Path) -> Result<Change, InitError> {
    let path = root.join(CONFIG_PATH);
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(io_err(dir))?;
    }
    // create_new: a file that appears concurrently is kept, not replaced.
    match fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
    {
        Ok(mut f) => {
            f.write_all(policy_template().as_bytes())
                .and_then(|()| f.sync_all())
                .map_err(io_err(&path))?;
            Ok(Change::Created)
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(Change::Unchanged),
        Err(e) => Err(io_err(&path)(e)),
    }
}

/// The commented default policy file. Values come from
/// [`PolicyFile::default`], so the text cannot drift from the code.
pub fn policy_template() -> String {
    let mut out = String::from(
        "# noma repository policy, read by the git hooks (`noma hook`).\n\
         # Written by `noma init` with the defaults; edit freely.\n",
    );
    let defaults = serde_json::to_value(PolicyFile::default()).unwrap_or_default();
    let Some(fields) = defaults.as_object() else {
        return out;
    };
    for (key, value) in fields {
        let doc = match key.as_str() {
            "include" => {
                "Which .noma files the hooks check (globs relative to the repository root)."
            }
            "exclude" => "Files matching these globs are not checked.",
            "require_transcript" => {
                "Documents matching these globs must carry a transcript (<doc>.patches)."
            }
            "strict" => "Treat validator warnings as errors in the hooks.",
            "ignore_rules" => "Validator rule codes the hooks ignore.",
            _ => "",
        };
        out.push('\n');
        if !doc.is_empty() {
            out.push_str("# ");
            out.push_str(doc);
            out.push('\n');
        }
        // JSON scalars and arrays are valid YAML flow values.
        out.push_str(&format!("{key}: {value}\n"));
    }
    out
}

/// Makes sure `.gitignore` at `path` has a line ignoring `entry` (a
/// directory pattern such as `.noma/cache/`). Equivalent spellings
/// (`/.noma/cache`, `.noma/cache`, …) count as present.
pub fn ensure_ignored(path: &Path, entry: &str) -> Result<Change, InitError> {
    let existing = match fs::read(path) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(io_err(path)(e)),
    };
    let want = normalise_pattern(entry);
    if let Some(text) = &existing {
        let text = String::from_utf8_lossy(text);
        if text.lines().any(|l| normalise_pattern(l) == want) {
            return Ok(Change::Unchanged);
        }
    }
    let mut add = String::new();
    if existing
        .as_ref()
        .is_some_and(|b| !b.is_empty() && !b.ends_with(b"\n"))
    {
        add.push('\n');
    }
    add.push_str("# noma block cache (noma init)\n");
    add.push_str(entry);
    add.push('\n');
    let mut f = fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(io_err(path))?;
    // One write: a crash cannot leave half an entry on most filesystems.
    f.write_all(add.as_bytes()).map_err(io_err(path))?;
    Ok(if existing.is_some() {
        Change::Updated
    } else {
        Change::Created
    })
}

/// `/.noma/cache/ ` → `.noma/cache`: the spellings git treats alike for a
/// root `.gitignore` and a directory. Comments and negations never match.
fn normalise_pattern(line: &str) -> &str {
    let l = line.trim_end_matches(['\r', ' ', '\t']);
    if l.starts_with('#') || l.starts_with('!') {
        return "";
    }
    l.trim_start_matches('/').trim_end_matches('/')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Policy;

    #[test]
    fn template_parses_back_to_the_defaults() {
        let text = policy_template();
        let p = Policy::from_yaml(&text).unwrap();
        assert_eq!(p.file, PolicyFile::default());
        assert!(text.contains("include: [\"**/*.noma\"]\n"));
        // Every field is documented.
        let fields = serde_json::to_value(PolicyFile::default()).unwrap();
        let comments = text.lines().filter(|l| l.starts_with("# ")).count();
        assert_eq!(comments, 2 + fields.as_object().unwrap().len());
    }

    #[test]
    fn policy_is_never_overwritten() {
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(write_default_policy(tmp.path()).unwrap(), Change::Created);
        let path = tmp.path().join(CONFIG_PATH);
        fs::write(&path, "strict: true\n").unwrap();
        assert_eq!(write_default_policy(tmp.path()).unwrap(), Change::Unchanged);
        assert_eq!(fs::read_to_string(&path).unwrap(), "strict: true\n");
    }

    #[test]
    fn gitignore_entry_is_added_once() {
        let tmp = tempfile::tempdir().unwrap();
        let gi = tmp.path().join(".gitignore");
        assert_eq!(ensure_ignored(&gi, CACHE_IGNORE).unwrap(), Change::Created);
        assert_eq!(
            ensure_ignored(&gi, CACHE_IGNORE).unwrap(),
            Change::Unchanged
        );
        let text = fs::read_to_string(&gi).unwrap();
        assert_eq!(text.matches(CACHE_IGNORE).count(), 1);

        fs::write(&gi, "target").unwrap();
        assert_eq!(ensure_ignored(&gi, CACHE_IGNORE).unwrap(), Change::Updated);
        let text = fs::read_to_string(&gi).unwrap();
        assert!(text.starts_with("target\n# noma"), "{text:?}");

        for same in ["/.noma/cache\r\n", ".noma/cache", "/.noma/cache/  "] {
            fs::write(&gi, same).unwrap();
            assert_eq!(
                ensure_ignored(&gi, CACHE_IGNORE).unwrap(),
                Change::Unchanged
            );
        }
        for different in ["# .noma/cache/\n", "!.noma/cache/\n", ".noma/cache/x\n"] {
            fs::write(&gi, different).unwrap();
            assert_eq!(ensure_ignored(&gi, CACHE_IGNORE).unwrap(), Change::Updated);
        }
    }
}

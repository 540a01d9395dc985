//! `noma init`: set a repository up for noma. Every step is idempotent and
//! never overwrites what the user wrote:
//! 1. `.noma/config.yml` with the documented defaults, commented (kept if it
//!    exists);
//! 2. `.noma/cache/` and the names of noma's transient files in the root
//!    `.gitignore` (each appended once; the file is created if absent);
//! 3. the git hooks ([`super::install`]), unless asked not to; the CLI
//!    also adds the line-ending rules ([`super::attributes`]) to
//!    `.gitattributes`, hooks or not;
//! 4. `.mcp.json` registering `noma mcp` for MCP clients ([`register_mcp`]):
//!    merged into an existing file, other servers untouched; an existing
//!    `noma` entry is never rewritten; a file that is not a JSON object is
//!    left alone and reported.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::git::layout::Layout;
use noma_provenance::config::{PolicyFile, CONFIG_PATH};

use super::{HooksError, InstallOptions, InstallReport};

pub use crate::cache::CACHE_IGNORE;

/// The `.gitignore` entries `noma init` makes sure of, each with its
/// comment: the block cache, and the files a write leaves beside a
/// document while it runs or after it was killed ([`noma_store::fsio`]), which
/// `git add -A` at that moment would otherwise commit, and the lines
/// `noma repair` sets aside beside a transcript (`.torn`, `.joined`, and
/// the `.old` a hook's fix names) for a person to read, not to commit.
pub const IGNORED: [(&str, &str); 4] = [
    ("noma block cache (noma init)", CACHE_IGNORE),
    ("noma: a write in progress (noma init)", ".*.noma-tmp-*"),
    (
        "noma: an interrupted write's intent marker (noma init)",
        ".*.noma-intent",
    ),
    (
        "noma: transcript lines set aside by noma repair (noma init)",
        "*.noma.patches.*",
    ),
];

/// Options of [`init`].
#[derive(Debug, Clone)]
pub struct InitOptions {
    /// Install the git hooks.
    pub hooks: bool,
    /// Passed to the hook install: replace foreign hooks (with a backup).
    pub force: bool,
    /// The binary the hooks run.
    pub noma: PathBuf,
    /// Register `noma mcp` in `.mcp.json`.
    pub mcp: bool,
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
    /// The `.mcp.json` outcome; `None` when not requested.
    pub mcp: Option<Result<McpReport, McpConfigError>>,
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
    let mut gitignore = Change::Unchanged;
    for (comment, entry) in IGNORED {
        // Created, then Updated, then Unchanged: the first that happened.
        match ensure_ignored(&root.join(".gitignore"), entry, comment)? {
            Change::Unchanged => {}
            change if gitignore == Change::Unchanged => gitignore = change,
            _ => {}
        }
    }
    let hooks = opts.hooks.then(|| {
        let result = super::install_in(
            layout,
            &InstallOptions {
                force: opts.force,
                noma: opts.noma.clone(),
            },
        );
        (layout.hooks_dir.clone(), result)
    });
    let mcp = opts.mcp.then(|| {
        let current = super::current_noma().unwrap_or_else(|_| PathBuf::from(MCP_COMMAND));
        let on_path = mcp_command_on_path(&current, std::env::var_os("PATH").as_deref());
        register_mcp(&root, MCP_COMMAND).map(|r| McpReport { on_path, ..r })
    });
    Ok(InitReport {
        root,
        config,
        gitignore,
        hooks,
        mcp,
    })
}

/// The MCP client configuration file, at the repository root.
pub const MCP_CONFIG: &str = ".mcp.json";

/// The server name and bare command registered in [`MCP_CONFIG`].
pub const MCP_COMMAND: &str = "noma";

/// What [`register_mcp`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpChange {
    /// The file did not exist and was written.
    Created,
    /// The `noma` server was added to an existing file.
    Added,
    /// The file already registers exactly this server.
    Unchanged,
    /// A different `noma` entry exists (a custom command, env, ...): kept.
    KeptExisting,
}

/// The `.mcp.json` step's report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpReport {
    /// The file.
    pub path: PathBuf,
    /// The command the entry runs.
    pub command: String,
    /// What happened.
    pub change: McpChange,
    /// `noma` on this machine's PATH is the binary that ran `noma init`
    /// (else an MCP client here starts another noma, or none).
    pub on_path: bool,
}

/// Why `.mcp.json` was not updated. The file is left untouched.
#[derive(Debug, thiserror::Error)]
pub enum McpConfigError {
    /// The existing file is not a JSON object with an object `mcpServers`.
    #[error("{}: {reason}; left untouched (add the noma server by hand)", path.display())]
    Unparsable {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// Reading or writing failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
}

/// Whether `noma` found on `path_var` (the `PATH` value) is `current`,
/// this very binary. `.mcp.json` is committed and shared, so it always
/// names the bare `noma` (an absolute path is one machine's, and a
/// Windows path is nobody else's); when PATH leads elsewhere or nowhere,
/// `noma init` says so instead of writing this machine's path.
pub(crate) fn mcp_command_on_path(current: &Path, path_var: Option<&std::ffi::OsStr>) -> bool {
    let this = current.canonicalize().ok();
    let exe = format!("{MCP_COMMAND}{}", std::env::consts::EXE_SUFFIX);
    let on_path = path_var.and_then(|p| {
        std::env::split_paths(p)
            .map(|dir| dir.join(&exe))
            .find(|cand| cand.is_file())
    });
    matches!((this, on_path.and_then(|p| p.canonicalize().ok())), (Some(a), Some(b)) if a == b)
}

/// The entry registered for `command`.
pub(crate) fn mcp_entry(command: &str) -> serde_json::Value {
    serde_json::json!({ "command": command, "args": ["mcp"] })
}

/// Writes or merges `<root>/.mcp.json` so it registers `noma mcp` under the
/// server name `noma`. Other servers and keys are kept in their order; the
/// file is replaced atomically; an existing `noma` entry is never changed.
pub(crate) fn register_mcp(root: &Path, command: &str) -> Result<McpReport, McpConfigError> {
    let path = root.join(MCP_CONFIG);
    let report = |change| McpReport {
        path: path.clone(),
        command: command.to_string(),
        change,
        on_path: true,
    };
    let io_err = |source| McpConfigError::Io {
        path: path.clone(),
        source,
    };
    let existing = match noma_store::fsio::read_regular(&path) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(io_err(e)),
    };
    let unparsable = |reason: String| McpConfigError::Unparsable {
        path: path.clone(),
        reason,
    };
    let (mut root_obj, change) = match &existing {
        None => (serde_json::Map::new(), McpChange::Created),
        Some(bytes) => match serde_json::from_slice::<serde_json::Value>(bytes) {
            Ok(serde_json::Value::Object(o)) => (o, McpChange::Added),
            Ok(_) => return Err(unparsable("not a JSON object".into())),
            Err(e) => return Err(unparsable(format!("not valid JSON ({e})"))),
        },
    };
    let servers = root_obj
        .entry("mcpServers")
        .or_insert_with(|| serde_json::Value::Object(serde_json::Map::new()));
    let Some(servers) = servers.as_object_mut() else {
        return Err(unparsable("`mcpServers` is not an object".into()));
    };
    let want = mcp_entry(command);
    match servers.get(MCP_COMMAND) {
        Some(have) if *have == want => return Ok(report(McpChange::Unchanged)),
        Some(_) => return Ok(report(McpChange::KeptExisting)),
        None => {
            servers.insert(MCP_COMMAND.to_string(), want);
        }
    }
    let mut text = serde_json::to_string_pretty(&serde_json::Value::Object(root_obj))
        .map_err(|e| io_err(io::Error::other(e)))?;
    text.push('\n');
    noma_store::fsio::atomic_write(&path, text.as_bytes()).map_err(io_err)?;
    Ok(report(change))
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> InitError + '_ {
    move |source| InitError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Creates `<root>/.noma/config.yml` with [`policy_template`] unless it
/// exists (never overwritten, even if empty or invalid).
pub(crate) fn write_default_policy(root: &Path) -> Result<Change, InitError> {
    let path = root.join(CONFIG_PATH);
    if let Some(dir) = path.parent() {
        // `.noma` committed as a link would carry the file out of the tree.
        noma_store::fsio::contain::check_dir_inside(root, dir).map_err(io_err(dir))?;
        fs::create_dir_all(dir).map_err(io_err(dir))?;
    }
    use noma_store::fsio::contain::{open_write, WriteMode};
    // create_new: a file that appears concurrently is kept, not replaced.
    match open_write(&path, WriteMode::CreateNew) {
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
pub(crate) fn policy_template() -> String {
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
            "record_text_edits" => {
                "`noma record` may record hand edits no v1.0 op expresses (prose, lists,\n# frontmatter, a new document's genesis) with the extension op\n# x-noma/replace_lines; false allows v1.0 ops only."
            }
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
/// pattern such as `.noma/cache/`), appending it under `# {comment}`.
/// Equivalent spellings (`/.noma/cache`, `.noma/cache`, …) count as
/// present.
pub(crate) fn ensure_ignored(path: &Path, entry: &str, comment: &str) -> Result<Change, InitError> {
    use noma_store::fsio::contain::{check_writable, open_write, WriteMode};
    // A `.gitignore` committed as a link is refused before it is read.
    check_writable(path).map_err(io_err(path))?;
    let existing = match noma_store::fsio::read_regular(path) {
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
    add.push_str(&format!("# {comment}\n"));
    add.push_str(entry);
    add.push('\n');
    let mut f = open_write(path, WriteMode::Append).map_err(io_err(path))?;
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
    use noma_provenance::config::Policy;

    #[test]
    fn template_parses_back_to_the_defaults() {
        let text = policy_template();
        let p = Policy::from_yaml(&text).unwrap();
        assert_eq!(p.file, PolicyFile::default());
        assert!(text.contains("include: [\"**/*.noma\"]\n"));
        // Every field is documented.
        let fields = serde_json::to_value(PolicyFile::default()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for key in fields.as_object().unwrap().keys() {
            let at = lines
                .iter()
                .position(|l| l.starts_with(&format!("{key}: ")))
                .unwrap();
            assert!(lines[at - 1].starts_with("# "), "{key} undocumented");
        }
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
    fn mcp_json_is_created_merged_and_never_clobbered() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(MCP_CONFIG);
        let r = register_mcp(tmp.path(), "noma").unwrap();
        assert_eq!(r.change, McpChange::Created);
        let v: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"mcpServers": {"noma": {"command": "noma", "args": ["mcp"]}}})
        );
        assert_eq!(
            register_mcp(tmp.path(), "noma").unwrap().change,
            McpChange::Unchanged
        );

        // Merged after other servers and keys, which keep their order.
        fs::write(
            &path,
            r#"{"z": 1, "mcpServers": {"other": {"command": "x", "args": []}}, "a": 2}"#,
        )
        .unwrap();
        assert_eq!(
            register_mcp(tmp.path(), "/bin/noma").unwrap().change,
            McpChange::Added
        );
        let text = fs::read_to_string(&path).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["z", "mcpServers", "a"]);
        let servers: Vec<&String> = v["mcpServers"].as_object().unwrap().keys().collect();
        assert_eq!(servers, ["other", "noma"]);
        assert_eq!(v["mcpServers"]["noma"]["command"], "/bin/noma");

        // A customised noma entry is kept.
        assert_eq!(
            register_mcp(tmp.path(), "noma").unwrap().change,
            McpChange::KeptExisting
        );
        assert_eq!(fs::read_to_string(&path).unwrap(), text);

        // Unparsable files are left byte for byte.
        for bad in ["{ // comment\n}", "[1]", "{\"mcpServers\": 3}", ""] {
            fs::write(&path, bad).unwrap();
            let e = register_mcp(tmp.path(), "noma").unwrap_err();
            assert!(
                matches!(e, McpConfigError::Unparsable { .. }),
                "{bad:?}: {e}"
            );
            assert_eq!(fs::read_to_string(&path).unwrap(), bad);
        }
    }

    #[test]
    fn mcp_command_on_path_finds_this_binary_by_its_platform_name() {
        let tmp = tempfile::tempdir().unwrap();
        let bin = tmp.path().join("bin");
        let other = tmp.path().join("other");
        fs::create_dir_all(&bin).unwrap();
        fs::create_dir_all(&other).unwrap();
        // `noma.exe` on Windows: PATH must be searched by that name.
        let name = format!("noma{}", std::env::consts::EXE_SUFFIX);
        let exe = bin.join(&name);
        fs::write(&exe, "stand-in").unwrap();
        fs::write(other.join(&name), "stand-in").unwrap();
        let path_of = |dirs: &[&Path]| std::env::join_paths(dirs).unwrap();
        assert!(mcp_command_on_path(&exe, Some(&path_of(&[&bin]))));
        // Another noma comes first on PATH, or none at all.
        assert!(!mcp_command_on_path(&exe, Some(&path_of(&[&other, &bin]))));
        assert!(!mcp_command_on_path(&exe, None));
    }

    #[test]
    fn gitignore_entry_is_added_once() {
        let tmp = tempfile::tempdir().unwrap();
        let gi = tmp.path().join(".gitignore");
        assert_eq!(
            ensure_ignored(&gi, CACHE_IGNORE, "noma block cache").unwrap(),
            Change::Created
        );
        assert_eq!(
            ensure_ignored(&gi, CACHE_IGNORE, "noma block cache").unwrap(),
            Change::Unchanged
        );
        let text = fs::read_to_string(&gi).unwrap();
        assert_eq!(text.matches(CACHE_IGNORE).count(), 1);

        fs::write(&gi, "target").unwrap();
        assert_eq!(
            ensure_ignored(&gi, CACHE_IGNORE, "noma block cache").unwrap(),
            Change::Updated
        );
        let text = fs::read_to_string(&gi).unwrap();
        assert!(text.starts_with("target\n# noma"), "{text:?}");

        for same in ["/.noma/cache\r\n", ".noma/cache", "/.noma/cache/  "] {
            fs::write(&gi, same).unwrap();
            assert_eq!(
                ensure_ignored(&gi, CACHE_IGNORE, "noma block cache").unwrap(),
                Change::Unchanged
            );
        }
        for different in ["# .noma/cache/\n", "!.noma/cache/\n", ".noma/cache/x\n"] {
            fs::write(&gi, different).unwrap();
            assert_eq!(
                ensure_ignored(&gi, CACHE_IGNORE, "noma block cache").unwrap(),
                Change::Updated
            );
        }
    }
}

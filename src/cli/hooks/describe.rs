//! The line each set-up step's outcome is reported with, as `noma hooks`
//! and `noma init` print it (`<what>: <outcome> (<note>)`).

use std::path::Path;

use noma_git::install::attributes::EolInstall;
use noma_git::install::init::{Change, McpChange, McpReport, CACHE_IGNORE};
use noma_git::install::{DriverChange, InstallReport, Installed, Removed, UninstallReport};
use noma_provenance::config::CONFIG_PATH;

/// `<what>: <outcome>`, with the note in parentheses when there is one.
pub fn line(what: &str, outcome: &str, note: Option<&str>) -> String {
    match note {
        Some(n) => format!("{what}: {outcome} ({n})"),
        None => format!("{what}: {outcome}"),
    }
}

/// A path's file name (the whole path when it has none).
pub fn file_name(p: &Path) -> String {
    p.file_name().map_or_else(
        || p.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// One hook's install line.
pub fn installed(r: &InstallReport) -> String {
    let what = match &r.outcome {
        Installed::Fresh => "installed".to_string(),
        Installed::Chained { kept } => format!(
            "installed; the existing hook is kept as {} and runs first",
            file_name(kept)
        ),
        Installed::Replaced { backup } => format!(
            "installed; the existing hook was replaced (backup: {})",
            file_name(backup)
        ),
        Installed::Updated => "updated".to_string(),
        Installed::Unchanged => "already installed; nothing to do".to_string(),
        Installed::ViaHusky {
            script,
            created,
            added,
        } => match (created, added) {
            (true, _) => format!(
                "husky layout: created {} running `noma hook {}` (commit it)",
                script.display(),
                r.hook
            ),
            (false, true) => format!(
                "husky layout: appended `noma hook {}` to {} (commit it)",
                r.hook,
                script.display()
            ),
            (false, false) => format!(
                "husky layout: {} already runs noma; nothing to do",
                script.display()
            ),
        },
    };
    line(&r.hook.to_string(), &what, r.note.as_deref())
}

/// One hook's uninstall line.
pub fn removed(r: &UninstallReport) -> String {
    let what = match &r.outcome {
        Removed::Removed { restored: None } => "removed".to_string(),
        Removed::Removed {
            restored: Some(from),
        } => format!("removed; restored the hook from {}", file_name(from)),
        Removed::RestoredLeftover { from } => {
            format!("not installed; restored the hook from {}", file_name(from))
        }
        Removed::LeftForeign => "not ours; left alone".to_string(),
        Removed::NotInstalled => "not installed; nothing to do".to_string(),
    };
    line(&r.hook.to_string(), &what, r.note.as_deref())
}

/// The merge driver's registration line.
pub fn driver_registered(c: &DriverChange) -> String {
    let what = match (c.config, c.attributes.is_empty()) {
        (false, true) => "already registered; nothing to do".to_string(),
        (_, true) => "registered (git config merge.noma.driver)".to_string(),
        (_, false) => format!(
            "registered; .gitattributes gained `{}` (commit it to share)",
            c.attributes.join("`, `")
        ),
    };
    let note = (!c.notes.is_empty()).then(|| c.notes.join("; "));
    line("merge driver", &what, note.as_deref())
}

/// The merge driver's removal line.
pub fn driver_removed(c: &DriverChange) -> String {
    let what = if c.config || !c.attributes.is_empty() {
        "removed"
    } else {
        "not registered; nothing to do"
    };
    line("merge driver", what, None)
}

/// The line-ending rules' line.
pub fn eol_rules(done: EolInstall) -> String {
    let c = done.change;
    let what = if c.added.is_empty() {
        if c.notes.is_empty() {
            ".gitattributes keeps documents and transcripts byte-exact; nothing to do".to_string()
        } else {
            "NOT byte-exact".to_string()
        }
    } else {
        format!(
            ".gitattributes gained `{}` (byte-exact checkout; commit it to share)",
            c.added.join("`, `")
        )
    };
    let mut notes = c.notes;
    match done.restored {
        Some(Ok(paths)) if !paths.is_empty() => notes.push(format!(
            "restored the committed bytes of {} checked-out file(s) that core.autocrlf had converted: {}",
            paths.len(),
            paths.join(", ")
        )),
        Some(Err(e)) => notes.push(format!("could not check the checked-out files: {e}")),
        _ => {}
    }
    let note = (!notes.is_empty()).then(|| notes.join("; "));
    line("line endings", &what, note.as_deref())
}

/// `noma init`'s policy-file line.
pub fn policy_file(change: Change) -> String {
    match change {
        Change::Created => format!("{CONFIG_PATH}: created with the default policy"),
        _ => format!("{CONFIG_PATH}: exists; left as is"),
    }
}

/// `noma init`'s `.gitignore` line.
pub fn gitignore(change: Change) -> String {
    match change {
        Change::Created => {
            format!(".gitignore: created, ignoring {CACHE_IGNORE} and noma's temporary files")
        }
        Change::Updated => {
            format!(".gitignore: now ignores {CACHE_IGNORE} and noma's temporary files")
        }
        Change::Unchanged => {
            format!(".gitignore: already ignores {CACHE_IGNORE} and noma's temporary files")
        }
    }
}

/// `noma init`'s `.mcp.json` line (what follows the file name).
pub fn mcp_registered(r: &McpReport) -> String {
    // The file is shared: it names `noma`, found on each machine's PATH.
    let path_note = if r.on_path {
        String::new()
    } else {
        "; `noma` on this PATH is not this binary (or there is none): put its directory on PATH \
         so MCP clients start it"
            .to_string()
    };
    match r.change {
        McpChange::Created => format!("created, registering `{} mcp`{path_note}", r.command),
        McpChange::Added => format!("added the noma server (`{} mcp`){path_note}", r.command),
        McpChange::Unchanged => "already registers the noma server".to_string(),
        McpChange::KeptExisting => {
            "has its own noma entry; left as is (delete it and rerun to regenerate)".to_string()
        }
    }
}

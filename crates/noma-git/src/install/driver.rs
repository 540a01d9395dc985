//! The merge driver: git config `merge.noma.*` plus `.gitattributes` lines.

use std::fs;
use std::io;
use std::path::Path;

use super::{attributes, io_err, path_bytes, shell_quote, HooksError};
use crate::git;

/// `merge.noma.name`, the description git shows.
pub const DRIVER_DESCRIPTION: &str = "noma block-level merge of .noma documents and transcripts";

/// The `.gitattributes` lines that route documents and transcripts to the
/// driver, and provenance sidecars (a set of independent lines, see
/// [`noma_provenance::sidecar`]) to git's `union` driver: two branches'
/// signatures then merge without a conflict wherever git merges, driver
/// registered or not.
pub const ATTRIBUTE_LINES: [&str; 3] = [
    "*.noma merge=noma",
    "*.noma.patches merge=noma",
    "*.noma.provenance merge=union",
];

/// The comment written above the lines we add, so uninstall removes only those.
pub const ATTRIBUTE_MARKER: &str = "# noma merge driver (added by `noma hooks install`)";

/// The `merge.noma.driver` command for `noma` (`%O %A %B %L %P %X %Y`; git
/// before 2.44 passes the last two through unexpanded). Git runs
/// it with the shell; like the hook scripts, it falls back to `noma` on
/// PATH when the binary that registered it is gone (an upgrade installed
/// elsewhere, a removed build): without it every merge of a document would
/// stop with "not found" and a conflict.
pub(crate) fn driver_command(noma: &Path) -> String {
    let quoted = String::from_utf8_lossy(&shell_quote(&path_bytes(noma))).into_owned();
    format!("n={quoted}; [ -x \"$n\" ] || n=noma; \"$n\" merge-driver %O %A %B %L %P %X %Y")
}

/// Where the merge driver is registered and whether it is ours.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriverStatus {
    /// `merge.noma.driver`, if set.
    pub driver: Option<String>,
    /// The driver command runs `noma merge-driver`.
    pub ours: bool,
    /// Per [`ATTRIBUTE_LINES`] entry: whether `.gitattributes` routes it
    /// to that line's driver.
    pub attributes: [bool; 3],
    /// Patterns already routed to another merge driver (left alone).
    pub foreign_attributes: Vec<String>,
}

impl DriverStatus {
    /// The patterns of the [`ATTRIBUTE_LINES`] `.gitattributes` routes to
    /// their driver, in order.
    pub fn routed_patterns(&self) -> Vec<&'static str> {
        ATTRIBUTE_LINES
            .iter()
            .zip(self.attributes)
            .filter(|(_, on)| *on)
            .map(|(l, _)| l.split_whitespace().next().unwrap_or_default())
            .collect()
    }
}

/// What [`install_merge_driver`] / [`uninstall_merge_driver`] changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DriverChange {
    /// The git config was written / removed.
    pub config: bool,
    /// `.gitattributes` lines added / removed.
    pub attributes: Vec<String>,
    /// Advice worth printing.
    pub notes: Vec<String>,
}

fn config_err(path: &Path) -> impl FnOnce(crate::git::repo::GitError) -> HooksError + '_ {
    move |e| HooksError::Io {
        path: path.to_path_buf(),
        source: io::Error::other(e.detail()),
    }
}

/// The merge attribute a `.gitattributes` line gives `pattern`, if it
/// names that pattern and sets (or unsets) `merge`.
fn merge_attr<'l>(line: &'l str, pattern: &str) -> Option<&'l str> {
    let mut words = line.split_whitespace();
    if words.next()? != pattern {
        return None;
    }
    words.find(|w| {
        let w = w.trim_start_matches(['-', '!']);
        w == "merge" || w.starts_with("merge=")
    })
}

/// The current registration in the repository whose shared git dir is
/// `common_dir` and work tree `work_tree`.
pub fn merge_driver_status(
    common_dir: &Path,
    work_tree: &Path,
) -> Result<DriverStatus, HooksError> {
    let cfg_path = common_dir.join("config");
    let driver = git::config::get(&cfg_path, "merge.noma.driver");
    let ours = driver
        .as_deref()
        .is_some_and(|d| d.contains(" merge-driver %O %A %B"));
    let attrs = read_attributes(work_tree)?;
    let mut status = DriverStatus {
        driver,
        ours,
        attributes: [false; 3],
        foreign_attributes: Vec::new(),
    };
    for (i, want) in ATTRIBUTE_LINES.iter().enumerate() {
        let (pattern, attr) = want.split_once(' ').unwrap_or_default();
        // The last line naming the pattern's merge attribute wins, as in git.
        let last = attrs.lines().rev().find_map(|l| merge_attr(l, pattern));
        match last {
            Some(a) if a == attr => status.attributes[i] = true,
            Some(other) => status.foreign_attributes.push(format!("{pattern} {other}")),
            None => {}
        }
    }
    Ok(status)
}

fn read_attributes(work_tree: &Path) -> Result<String, HooksError> {
    attributes::read(work_tree)
}

/// Registers `noma merge-driver` (git config `merge.noma.driver` and
/// `merge.noma.name`) and adds the [`ATTRIBUTE_LINES`] to the work tree's
/// `.gitattributes` under [`ATTRIBUTE_MARKER`]. Idempotent; a pattern
/// already routed to another merge driver is left alone (and noted), and
/// other attributes are never touched (our lines only add `merge=noma`).
pub fn install_merge_driver(
    common_dir: &Path,
    work_tree: &Path,
    noma: &Path,
) -> Result<DriverChange, HooksError> {
    let mut change = DriverChange::default();
    let status = merge_driver_status(common_dir, work_tree)?;
    let cfg_path = common_dir.join("config");
    let want = driver_command(noma);
    if status.driver.as_deref() != Some(want.as_str()) {
        if status.driver.is_some() && !status.ours {
            change.notes.push(format!(
                "merge.noma.driver was {:?}; replaced by noma's",
                status.driver.clone().unwrap_or_default()
            ));
        }
        git::config::set(
            &cfg_path,
            &[
                ("merge.noma.driver", want.as_str()),
                ("merge.noma.name", DRIVER_DESCRIPTION),
            ],
        )
        .map_err(config_err(&cfg_path))?;
        change.config = true;
    }
    // `git am` applies a mailed commit textually: once the transcript has
    // moved, an agent's appended line no longer applies and am stops. With
    // am.threeWay it falls back to a three-way merge, which runs the
    // driver. A value the user set is theirs.
    if git::config::get(&cfg_path, "am.threeWay").is_none() {
        git::config::set(&cfg_path, &[("am.threeWay", "true")]).map_err(config_err(&cfg_path))?;
        change.config = true;
    }
    let mut missing: Vec<&str> = Vec::new();
    for (i, line) in ATTRIBUTE_LINES.iter().enumerate() {
        let pattern = line.split_whitespace().next().unwrap_or_default();
        if status.attributes[i] {
            continue;
        }
        if let Some(f) = status
            .foreign_attributes
            .iter()
            .find(|f| f.starts_with(&format!("{pattern} ")))
        {
            change.notes.push(format!(
                ".gitattributes already sets `{f}`; left alone (add `{line}` yourself to use noma's driver)"
            ));
            continue;
        }
        missing.push(line);
    }
    if !missing.is_empty() {
        let path = work_tree.join(".gitattributes");
        let mut text = read_attributes(work_tree)?;
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(ATTRIBUTE_MARKER);
        text.push('\n');
        for l in &missing {
            text.push_str(l);
            text.push('\n');
            change.attributes.push(l.to_string());
        }
        // A `.gitattributes` committed as a link is refused, not written through.
        noma_store::fsio::contain::write_file(&path, text.as_bytes()).map_err(io_err(&path))?;
    }
    Ok(change)
}

/// Removes what [`install_merge_driver`] added: the config entries when
/// they run `noma merge-driver`, and, when `attributes`, our marked
/// `.gitattributes` lines (the file itself only when nothing else is left
/// in it).
pub fn uninstall_merge_driver(
    common_dir: &Path,
    work_tree: &Path,
    attributes: bool,
) -> Result<DriverChange, HooksError> {
    let mut change = DriverChange::default();
    let status = merge_driver_status(common_dir, work_tree)?;
    if status.ours {
        let cfg_path = common_dir.join("config");
        git::config::remove(&cfg_path, "merge.noma.driver").map_err(config_err(&cfg_path))?;
        if git::config::get(&cfg_path, "merge.noma.name").as_deref() == Some(DRIVER_DESCRIPTION) {
            git::config::remove(&cfg_path, "merge.noma.name").map_err(config_err(&cfg_path))?;
        }
        change.config = true;
    }
    if !attributes {
        return Ok(change);
    }
    let path = work_tree.join(".gitattributes");
    let text = read_attributes(work_tree)?;
    let mut kept: Vec<&str> = Vec::new();
    let mut in_block = false;
    for l in text.lines() {
        if l == ATTRIBUTE_MARKER {
            in_block = true;
            continue;
        }
        if in_block && ATTRIBUTE_LINES.contains(&l) {
            change.attributes.push(l.to_string());
            continue;
        }
        in_block = false;
        kept.push(l);
    }
    if text.lines().count() != kept.len() {
        if kept.iter().all(|l| l.trim().is_empty()) {
            fs::remove_file(&path).map_err(io_err(&path))?;
        } else {
            let mut out = kept.join("\n");
            out.push('\n');
            noma_store::fsio::contain::write_file(&path, out.as_bytes()).map_err(io_err(&path))?;
        }
    }
    Ok(change)
}

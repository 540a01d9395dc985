//! The hook's one-time check that this clone can merge what
//! `.gitattributes` routes to noma's driver.
//!
//! `merge.noma.driver` lives in `.git/config`, which `git clone` does not
//! copy, while `.gitattributes` and a hook manager's hooks arrive with the
//! repository. A clone set up through husky or lefthook thus checks every
//! commit but merges transcripts as text. The pre-commit hook runs in every
//! clone, so it is where the clone is told, once: the warning is
//! remembered as `noma.driverWarned` in the clone's own git config (per
//! clone, like the driver, and removable with `git config --unset`).

use std::path::Path;

use crate::git;

/// The config key that records that this clone was warned.
pub const WARNED_KEY: &str = "noma.driverWarned";

/// What the check found: `.gitattributes` routes these patterns to
/// `merge=noma`, and no `merge.noma.driver` is configured at any level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingDriver {
    /// The patterns routed to `merge=noma`.
    pub patterns: Vec<&'static str>,
}

/// Whether to warn now that `merge.noma.driver` is missing; marks the
/// clone as warned when it returns `Some` and `mark` (the caller knows
/// the warning reaches the person: the pre-commit framework hides a
/// passing hook's output unless the hook is `verbose`, which a hook
/// cannot tell). `configured` is the driver as git reads it (the
/// repository's, the user's or the system's config); `common_dir` holds
/// the clone's own config. Never fails the hook: a config that cannot be
/// written only means the warning may repeat.
pub fn missing_driver_once(
    common_dir: &Path,
    work_tree: &Path,
    configured: Option<String>,
    (already_warned, mark): (bool, bool),
) -> Option<MissingDriver> {
    if configured.is_some_and(|d| !d.trim().is_empty()) || already_warned {
        return None;
    }
    let status = super::merge_driver_status(common_dir, work_tree).ok()?;
    let patterns: Vec<&'static str> = status
        .routed_patterns()
        .into_iter()
        .filter(|p| *p != "*.noma.provenance")
        .collect();
    if patterns.is_empty() {
        return None;
    }
    if mark {
        let _ = git::config::set(&common_dir.join("config"), &[(WARNED_KEY, "true")]);
    }
    Some(MissingDriver { patterns })
}

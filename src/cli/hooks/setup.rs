//! The steps of `noma hooks install | uninstall` and `noma init`, in the
//! order they run, each reported as [`super::describe`] words it: which
//! steps still run after one is refused, and how the command ends.
//!
//! Exit codes (through [`Exit`]): done, refused (an existing hook or
//! kept file is in the way, or `.mcp.json` could not be parsed; nothing of
//! that step changed), could not run (no repository, bare repository, I/O
//! error).

use std::path::{Path, PathBuf};

use super::describe::{self, line};
use crate::report::output::{Exit, Output};
use noma_git::git::layout::Layout;
use noma_git::install::init::{self, InitOptions, McpConfigError, McpReport};
use noma_git::install::{self as install, HooksError, InstallOptions, InstallReport};

/// What `noma hooks install` is asked.
#[derive(Debug, Clone, Default)]
pub struct HooksInstall {
    /// Replace a foreign hook instead of chaining it.
    pub force: bool,
    /// The binary the hooks run (default: this one).
    pub noma: Option<PathBuf>,
    /// Register only the merge driver and the line-ending rules.
    pub driver_only: bool,
}

/// What `noma init` is asked.
#[derive(Debug, Clone, Copy, Default)]
pub struct InitRequest {
    /// Install the git hooks.
    pub hooks: bool,
    /// Replace foreign hooks instead of chaining them.
    pub force: bool,
    /// Register `noma mcp` in `.mcp.json`.
    pub mcp: bool,
    /// Start a transcript for each document that has none.
    pub record_existing: bool,
}

/// `noma hooks install` in the repository git's environment names.
pub fn hooks_install(req: &HooksInstall) -> Output {
    let layout = match Layout::from_env() {
        Ok(l) => l,
        Err(e) => return Output::error(format!("noma hooks: {e}"), Exit::NotRun),
    };
    if layout.is_bare() {
        return Output::error(
            format!(
                "noma hooks: {} is a bare repository: pre-commit hooks never run without a \
                 work tree. If you commit to it through a separate work tree, run this with \
                 GIT_DIR and GIT_WORK_TREE set.",
                layout.git_dir.display()
            ),
            Exit::NotRun,
        );
    }
    let noma = match resolve_noma(req.noma.clone()) {
        Ok(p) => p,
        Err(c) => return c,
    };
    let mut c = Output::default();
    if req.driver_only {
        c.out("hooks: not touched (--driver-only)");
        c.extend(driver_install(&layout, &noma));
        c.extend(eol_install(&layout));
        return c;
    }
    c.out(format!("hooks dir: {}", layout.hooks_dir.display()));
    let opts = InstallOptions {
        force: req.force,
        noma: noma.clone(),
    };
    c.extend(hooks_installed(
        install::install_in(&layout, &opts),
        "noma hooks",
    ));
    if c.exit == Exit::Passed {
        c.extend(driver_install(&layout, &noma));
    }
    if c.exit == Exit::Passed {
        c.extend(eol_install(&layout));
    }
    // husky's directory holds husky's files, not our scripts.
    let husky = install::husky::detect(&layout.hooks_dir).is_some();
    if c.exit == Exit::Passed && layout.hooks_dir_in_work_tree() && !husky {
        c.out(
            "note: the hooks dir is inside the work tree; the scripts name this machine's noma \
             binary, so keep them out of commits",
        );
    }
    c
}

/// `noma hooks uninstall` in the repository git's environment names. The
/// merge lines of a committed `.gitattributes` are everyone's: they are
/// removed only when `gitattributes` (and the output says to commit that),
/// otherwise left and named; an uncommitted file's lines go.
pub fn hooks_uninstall(gitattributes: bool) -> Output {
    let layout = match Layout::from_env() {
        Ok(l) => l,
        Err(e) => return Output::error(format!("noma hooks: {e}"), Exit::NotRun),
    };
    let reports = match install::uninstall(&layout.hooks_dir) {
        Ok(r) => r,
        Err(e) => return Output::error(format!("noma hooks: {e}"), Exit::NotRun),
    };
    let mut c = Output::default();
    c.out(format!("hooks dir: {}", layout.hooks_dir.display()));
    for r in &reports {
        c.out(describe::removed(r));
    }
    c.extend(driver_uninstall(&layout, gitattributes));
    // Kept on purpose: without them a CRLF checkout breaks the transcripts
    // already committed.
    if layout.work_tree.is_some() {
        c.out(line(
            "line endings",
            "the .gitattributes rules stay (committed transcripts need them)",
            None,
        ));
    }
    c
}

/// `noma init` in the repository git's environment names: every step of
/// [`init::init`], then the line-ending rules, `.mcp.json`, the hooks and
/// the merge driver, a refused step leaving the others done.
pub fn init_repository(req: InitRequest) -> Output {
    let layout = match Layout::from_env() {
        Ok(l) => l,
        Err(e) => return Output::error(format!("noma init: {e}"), Exit::NotRun),
    };
    // Needed with --no-hooks too: the merge driver names this binary.
    let noma = match install::current_noma() {
        Ok(p) => p,
        Err(e) => {
            return Output::error(
                format!("noma init: cannot locate this binary ({e})"),
                Exit::NotRun,
            )
        }
    };
    // A hook manager that runs noma already keeps doing so: a second copy
    // would run every check twice per commit.
    let managed = (req.hooks && !req.force)
        .then(|| install::managers::runs_noma(&layout))
        .flatten();
    let opts = InitOptions {
        hooks: req.hooks && managed.is_none(),
        force: req.force,
        noma: noma.clone(),
        mcp: req.mcp,
    };
    let report = match init::init(&layout, &opts) {
        Ok(r) => r,
        Err(e) => return Output::error(format!("noma init: {e}"), Exit::NotRun),
    };
    let mut c = Output::default();
    c.out(format!("repository: {}", report.root.display()));
    c.out(describe::policy_file(report.config));
    c.out(describe::gitignore(report.gitignore));
    // Not tied to the hooks: without these rules a CRLF checkout breaks
    // every transcript, hooks or not.
    c.extend(eol_install(&layout));
    c.extend(mcp_registered(report.mcp));
    c.extend(init_hooks(&layout, &noma, report.hooks, managed));
    if let Some(wt) = &layout.work_tree {
        c.extend(super::adopt::existing_documents(wt, req.record_existing));
    }
    c
}

/// `noma init`'s hooks and merge driver.
fn init_hooks(
    layout: &Layout,
    noma: &Path,
    hooks: Option<(PathBuf, Result<Vec<InstallReport>, HooksError>)>,
    managed: Option<install::managers::RunsNoma>,
) -> Output {
    let mut c = Output::default();
    let Some((dir, result)) = hooks else {
        c.out(match managed {
            Some(m) => format!(
                "hooks: not installed: {} already runs noma ({}); a second copy would run \
                 every check twice per commit (--force installs noma's hooks anyway)",
                m.manager,
                m.file.display()
            ),
            None => "hooks: skipped (--no-hooks; a hook manager runs `noma hook pre-commit` \
                     and `noma hook pre-merge-commit`)"
                .to_string(),
        });
        // A hook manager owns the hooks, not merges: without the driver
        // every concurrent transcript append would conflict.
        c.extend(driver_install(layout, noma));
        return c;
    };
    c.out(format!("hooks dir: {}", dir.display()));
    c.extend(hooks_installed(result, "noma init"));
    if c.exit != Exit::Passed {
        c.err(
            "noma init: the other steps are done; rerun with --force to replace the hooks (a \
             backup is kept) or with --no-hooks",
        );
    }
    // The merge driver belongs to the same setup: `noma hooks install`
    // registers it too.
    c.extend(driver_install(layout, noma));
    c
}

/// `noma init`'s `.mcp.json` step; refused when the file was left untouched.
fn mcp_registered(report: Option<Result<McpReport, McpConfigError>>) -> Output {
    let mut c = Output::default();
    match report {
        None => c.out(format!("{}: skipped (--no-mcp)", init::MCP_CONFIG)),
        Some(Ok(r)) => c.out(format!(
            "{}: {}",
            init::MCP_CONFIG,
            describe::mcp_registered(&r)
        )),
        Some(Err(e)) => {
            c.err(format!("noma init: {e}"));
            c.at_least(Exit::Failed);
        }
    }
    c
}

/// The binary the hooks should run, made absolute.
fn resolve_noma(given: Option<PathBuf>) -> Result<PathBuf, Output> {
    let p = match given {
        Some(p) => p,
        None => install::current_noma().map_err(|e| {
            Output::error(
                format!("noma hooks: cannot locate this binary ({e}); pass --noma-path"),
                Exit::NotRun,
            )
        })?,
    };
    std::path::absolute(&p)
        .map_err(|e| Output::error(format!("noma hooks: {}: {e}", p.display()), Exit::NotRun))
}

/// One line per hook installed; a conflict is refused (`who` names the
/// command in its lines), any other error could not run.
fn hooks_installed(result: Result<Vec<InstallReport>, HooksError>, who: &str) -> Output {
    let mut c = Output::default();
    match result {
        Ok(reports) => reports.iter().for_each(|r| c.out(describe::installed(r))),
        Err(HooksError::Conflict(lines)) => {
            for l in lines {
                c.err(format!("{who}: {l}"));
            }
            c.err(format!("{who}: no hook was changed"));
            c.at_least(Exit::Failed);
        }
        Err(e) => {
            c.err(format!("{who}: {e}"));
            c.at_least(Exit::NotRun);
        }
    }
    c
}

/// A step that needs the work tree (nothing to do without one): its
/// outcome's line, or its error after `who` (could not run).
fn in_work_tree<T>(
    layout: &Layout,
    who: &str,
    step: impl FnOnce(&Path) -> Result<T, HooksError>,
    line: impl FnOnce(T) -> String,
) -> Output {
    let Some(wt) = &layout.work_tree else {
        return Output::default();
    };
    let mut c = Output::default();
    match step(wt) {
        Ok(done) => c.out(line(done)),
        Err(e) => {
            c.err(format!("{who}: {e}"));
            c.at_least(Exit::NotRun);
        }
    }
    c
}

/// Registers the merge driver after the hooks (see
/// [`install::install_merge_driver`]).
fn driver_install(layout: &Layout, noma: &Path) -> Output {
    in_work_tree(
        layout,
        "noma hooks: merge driver",
        |wt| install::install_merge_driver(&layout.common_dir, wt, noma),
        |change| describe::driver_registered(&change),
    )
}

fn driver_uninstall(layout: &Layout, gitattributes: bool) -> Output {
    let Some(wt) = &layout.work_tree else {
        return Output::default();
    };
    // Committed (or staged): other clones have these lines too, and a
    // teammate's uninstall must not take noma's merges away from them.
    let shared = install::attributes::gitattributes_committed(wt);
    let routed = install::merge_driver_status(&layout.common_dir, wt)
        .map(|s| !s.routed_patterns().is_empty())
        .unwrap_or(false);
    let mut c = in_work_tree(
        layout,
        "noma hooks: merge driver",
        |wt| install::uninstall_merge_driver(&layout.common_dir, wt, gitattributes || !shared),
        |change| describe::driver_removed(&change),
    );
    if routed && shared && !gitattributes {
        c.out(
            "note: the merge=noma lines of .gitattributes stay: the file is committed and other \
             clones use them (noma hooks uninstall --gitattributes removes them; commit that)",
        );
    } else if routed && shared && c.exit == Exit::Passed {
        c.out(
            "note: removed noma's lines from the committed .gitattributes: commit the change \
             to stop routing everyone's merges to noma",
        );
    }
    c
}

/// Adds the line-ending rules to `.gitattributes` (see
/// [`noma_git::install::attributes`]).
fn eol_install(layout: &Layout) -> Output {
    in_work_tree(
        layout,
        "noma: line endings",
        |wt| install::attributes::install_eol_rules(&layout.git_dir, wt),
        describe::eol_rules,
    )
}

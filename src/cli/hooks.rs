//! `noma hooks install | uninstall | status`: manage the git hooks that run
//! `noma hook <name>`. See [`noma_git::install`] for what happens to existing
//! hooks.
//!
//! Exit codes: 0 done, 1 refused (an existing hook or kept file is in the
//! way; nothing changed), 2 could not run (no repository, bare repository,
//! I/O error).

use std::path::{Path, PathBuf};

use clap::Subcommand;
use serde_json::json;

use noma_git::git::layout::Layout;
use noma_git::install::{self, HookStatus, HooksError, InstallReport, Installed, Removed, State};

use super::{Format, EXIT_FAIL, EXIT_OK, EXIT_USAGE};

/// Arguments of `noma hooks`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, Subcommand)]
enum Action {
    /// Install the pre-commit and pre-merge-commit hooks. An existing
    /// foreign hook is kept and run first (chained).
    Install {
        /// Replace a foreign hook instead of chaining it (it is kept as
        /// `<hook>.noma-backup` and restored by uninstall).
        #[arg(long)]
        force: bool,
        /// The noma binary the hooks run (default: this one).
        #[arg(long, value_name = "PATH")]
        noma_path: Option<PathBuf>,
        /// Register only the merge driver (and the line-ending rules),
        /// for repositories whose hooks a hook manager runs.
        #[arg(long, conflicts_with = "force")]
        driver_only: bool,
    },
    /// Remove our hooks and put back whatever they replaced.
    Uninstall,
    /// Show, per hook, what is installed and where.
    Status {
        /// Output format.
        #[arg(long, value_enum, default_value_t)]
        format: Format,
    },
}

/// Runs `noma hooks`.
pub fn run(args: Args) -> i32 {
    let layout = match Layout::from_env() {
        Ok(l) => l,
        Err(e) => {
            eprintln!("noma hooks: {e}");
            return EXIT_USAGE;
        }
    };
    match args.action {
        Action::Install {
            force,
            noma_path,
            driver_only,
        } => {
            if layout.is_bare() {
                eprintln!(
                    "noma hooks: {} is a bare repository: pre-commit hooks never run without a \
                     work tree. If you commit to it through a separate work tree, run this with \
                     GIT_DIR and GIT_WORK_TREE set.",
                    layout.git_dir.display()
                );
                return EXIT_USAGE;
            }
            let noma = match resolve_noma(noma_path) {
                Ok(p) => p,
                Err(code) => return code,
            };
            if driver_only {
                println!("hooks: not touched (--driver-only)");
                return driver_install(&layout, &noma).max(eol_install(&layout));
            }
            println!("hooks dir: {}", layout.hooks_dir.display());
            let result = install::install_in(
                &layout,
                &install::InstallOptions {
                    force,
                    noma: noma.clone(),
                },
            );
            let mut code = print_install(result, "noma hooks");
            if code == EXIT_OK {
                code = driver_install(&layout, &noma);
            }
            if code == EXIT_OK {
                code = eol_install(&layout);
            }
            // husky's directory holds husky's files, not our scripts.
            let husky = install::husky::detect(&layout.hooks_dir).is_some();
            if code == EXIT_OK && layout.hooks_dir_in_work_tree() && !husky {
                println!(
                    "note: the hooks dir is inside the work tree; the scripts name this \
                     machine's noma binary, so keep them out of commits"
                );
            }
            code
        }
        Action::Uninstall => match install::uninstall(&layout.hooks_dir) {
            Ok(reports) => {
                println!("hooks dir: {}", layout.hooks_dir.display());
                for r in reports {
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
                    print_line(r.hook.as_str(), &what, r.note.as_deref());
                }
                let code = driver_uninstall(&layout);
                // Kept on purpose: without them a CRLF checkout breaks the
                // transcripts already committed.
                if layout.work_tree.is_some() {
                    print_line(
                        "line endings",
                        "the .gitattributes rules stay (committed transcripts need them)",
                        None,
                    );
                }
                code
            }
            Err(e) => {
                eprintln!("noma hooks: {e}");
                EXIT_USAGE
            }
        },
        Action::Status { format } => {
            let noma = install::current_noma().unwrap_or_default();
            let statuses = match install::status(&layout.hooks_dir, &noma) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("noma hooks: {e}");
                    return EXIT_USAGE;
                }
            };
            match format {
                Format::Json => {
                    let mut v = status_json(&layout, &statuses);
                    v["merge_driver"] = driver_status_json(&layout);
                    v["line_endings"] = eol_status_json(&layout);
                    super::print_json(&v)
                }
                Format::Human => {
                    print_status(&layout, &statuses);
                    print_driver_status(&layout);
                    print_eol_status(&layout);
                    EXIT_OK
                }
            }
        }
    }
}

/// The binary the hooks should run, made absolute.
fn resolve_noma(given: Option<PathBuf>) -> Result<PathBuf, i32> {
    let p = match given {
        Some(p) => p,
        None => install::current_noma().map_err(|e| {
            eprintln!("noma hooks: cannot locate this binary ({e}); pass --noma-path");
            EXIT_USAGE
        })?,
    };
    std::path::absolute(&p).map_err(|e| {
        eprintln!("noma hooks: {}: {e}", p.display());
        EXIT_USAGE
    })
}

/// Prints an install outcome (shared with `noma init`); returns the exit code.
pub(crate) fn print_install(result: Result<Vec<InstallReport>, HooksError>, who: &str) -> i32 {
    match result {
        Ok(reports) => {
            for r in reports {
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
                print_line(r.hook.as_str(), &what, r.note.as_deref());
            }
            EXIT_OK
        }
        Err(HooksError::Conflict(lines)) => {
            for l in lines {
                eprintln!("{who}: {l}");
            }
            eprintln!("{who}: no hook was changed");
            EXIT_FAIL
        }
        Err(e) => {
            eprintln!("{who}: {e}");
            EXIT_USAGE
        }
    }
}

fn print_line(hook: &str, what: &str, note: Option<&str>) {
    match note {
        Some(n) => println!("{hook}: {what} ({n})"),
        None => println!("{hook}: {what}"),
    }
}

fn file_name(p: &Path) -> String {
    p.file_name().map_or_else(
        || p.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

fn print_status(layout: &Layout, statuses: &[HookStatus]) {
    match &layout.hooks_path_config {
        Some(c) => println!(
            "hooks dir: {} (core.hooksPath = {}{})",
            layout.hooks_dir.display(),
            c.display(),
            layout
                .hooks_path_shared
                .map_or(String::new(), |level| format!(
                    ", set in the {level} git configuration: shared by every repository"
                ))
        ),
        None => println!("hooks dir: {}", layout.hooks_dir.display()),
    }
    if layout.is_bare() {
        println!("note: bare repository: pre-commit hooks do not run without a work tree");
    }
    match install::husky::detect(&layout.hooks_dir) {
        Some(h) => println!("layout: {}", h.describe()),
        None => println!("layout: plain git hooks"),
    }
    for s in statuses {
        let mut details = Vec::new();
        match &s.state {
            State::Ours {
                marker,
                current,
                executable,
            } => {
                details.push(format!(
                    "noma {}",
                    marker.version.as_deref().unwrap_or("unknown")
                ));
                if !current {
                    details.push("differs from what `noma hooks install` writes".to_string());
                }
                if !executable {
                    details.push("not executable: git ignores it".to_string());
                }
                if let Some(c) = &s.chained {
                    details.push(format!("runs {} first", file_name(c)));
                }
            }
            State::Foreign { manager } => {
                if let Some(m) = manager {
                    details.push(format!("from {}", m.as_str()));
                }
            }
            State::Absent => {
                if let Some(c) = &s.chained {
                    details.push(format!("leftover {}", file_name(c)));
                }
            }
            State::Husky { script, runs_noma } => {
                details.push(if *runs_noma {
                    format!("{} runs noma", script.display())
                } else {
                    format!(
                        "{} does not run noma; `noma hooks install` adds it",
                        script.display()
                    )
                });
            }
        }
        if let Some(b) = &s.backup {
            details.push(format!("backup {}", file_name(b)));
        }
        if details.is_empty() {
            println!("{}: {}", s.hook, s.label());
        } else {
            println!("{}: {} ({})", s.hook, s.label(), details.join("; "));
        }
    }
}

fn status_json(layout: &Layout, statuses: &[HookStatus]) -> serde_json::Value {
    let path = |p: &Path| p.to_string_lossy().into_owned();
    let hooks: Vec<_> = statuses
        .iter()
        .map(|s| {
            let (version, template, current, executable, manager) = match &s.state {
                State::Ours {
                    marker,
                    current,
                    executable,
                } => (
                    marker.version.clone(),
                    marker.template,
                    Some(*current),
                    Some(*executable),
                    None,
                ),
                State::Foreign { manager } => (None, None, None, None, manager.map(|m| m.as_str())),
                State::Absent => (None, None, None, None, None),
                State::Husky { .. } => (None, None, None, None, Some("husky")),
            };
            let husky_script = match &s.state {
                State::Husky { script, .. } => Some(path(script)),
                _ => None,
            };
            json!({
                "name": s.hook.as_str(),
                "state": s.label(),
                "path": path(&s.path),
                "version": version,
                "template": template,
                "current": current,
                "executable": executable,
                "manager": manager,
                "chained": s.chained.as_deref().map(path),
                "backup": s.backup.as_deref().map(path),
                "husky_script": husky_script,
            })
        })
        .collect();
    json!({
        "hooks_dir": path(&layout.hooks_dir),
        "core_hooks_path": layout.hooks_path_config.as_deref().map(path),
        "git_dir": path(&layout.git_dir),
        "common_dir": path(&layout.common_dir),
        "work_tree": layout.work_tree.as_deref().map(path),
        "bare": layout.is_bare(),
        "linked_worktree": layout.linked_worktree,
        "layout": match install::husky::detect(&layout.hooks_dir) {
            Some(h) => format!("husky-v{}", h.version),
            None => "git".to_string(),
        },
        "hooks": hooks,
    })
}

/// Registers the merge driver after the hooks (see [`install::install_merge_driver`]).
pub(crate) fn driver_install(layout: &Layout, noma: &Path) -> i32 {
    let Some(wt) = &layout.work_tree else {
        return EXIT_OK;
    };
    match install::install_merge_driver(&layout.common_dir, wt, noma) {
        Ok(c) => {
            let what = match (c.config, c.attributes.is_empty()) {
                (false, true) => "already registered; nothing to do".to_string(),
                (_, true) => "registered (git config merge.noma.driver)".to_string(),
                (_, false) => format!(
                    "registered; .gitattributes gained `{}` (commit it to share)",
                    c.attributes.join("`, `")
                ),
            };
            let note = (!c.notes.is_empty()).then(|| c.notes.join("; "));
            print_line("merge driver", &what, note.as_deref());
            EXIT_OK
        }
        Err(e) => {
            eprintln!("noma hooks: merge driver: {e}");
            EXIT_USAGE
        }
    }
}

fn driver_uninstall(layout: &Layout) -> i32 {
    let Some(wt) = &layout.work_tree else {
        return EXIT_OK;
    };
    match install::uninstall_merge_driver(&layout.common_dir, wt) {
        Ok(c) => {
            let what = if c.config || !c.attributes.is_empty() {
                "removed"
            } else {
                "not registered; nothing to do"
            };
            print_line("merge driver", what, None);
            EXIT_OK
        }
        Err(e) => {
            eprintln!("noma hooks: merge driver: {e}");
            EXIT_USAGE
        }
    }
}

fn driver_status_json(layout: &Layout) -> serde_json::Value {
    let Some(wt) = &layout.work_tree else {
        return serde_json::Value::Null;
    };
    match install::merge_driver_status(&layout.common_dir, wt) {
        Ok(s) => json!({
            "driver": s.driver,
            "ours": s.ours,
            "attributes": {
                "*.noma": s.attributes[0],
                "*.noma.patches": s.attributes[1],
                "*.noma.provenance": s.attributes[2],
            },
            "foreign_attributes": s.foreign_attributes,
        }),
        Err(e) => json!({"error": e.to_string()}),
    }
}

fn print_driver_status(layout: &Layout) {
    let Some(wt) = &layout.work_tree else { return };
    match install::merge_driver_status(&layout.common_dir, wt) {
        Ok(s) => {
            let state = match (&s.driver, s.ours) {
                (None, _) => "not registered",
                (Some(_), true) => "installed",
                (Some(_), false) => "foreign",
            };
            let routed = s.routed_patterns();
            let attrs = if routed.is_empty() {
                "no .gitattributes entries".to_string()
            } else {
                format!(".gitattributes routes {}", routed.join(", "))
            };
            println!("merge driver: {state} ({attrs})");
        }
        Err(e) => println!("merge driver: unknown ({e})"),
    }
}

/// Adds the line-ending rules to `.gitattributes` (see
/// [`install::attributes`]); shared with `noma init`.
pub(crate) fn eol_install(layout: &Layout) -> i32 {
    let Some(wt) = &layout.work_tree else {
        return EXIT_OK;
    };
    match install::attributes::install_eol_rules(&layout.git_dir, wt) {
        Ok(done) => {
            let c = done.change;
            let what = if c.added.is_empty() {
                if c.notes.is_empty() {
                    ".gitattributes keeps documents and transcripts byte-exact; nothing to do"
                        .to_string()
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
            print_line("line endings", &what, note.as_deref());
            EXIT_OK
        }
        Err(e) => {
            eprintln!("noma: line endings: {e}");
            EXIT_USAGE
        }
    }
}

fn eol_status_json(layout: &Layout) -> serde_json::Value {
    let Some(wt) = &layout.work_tree else {
        return serde_json::Value::Null;
    };
    match install::attributes::eol_status(&layout.git_dir, wt) {
        Ok(s) => {
            let converted = install::attributes::converted_paths(wt);
            json!({
                "byte_exact": s.ok(),
                "*.noma": s.byte_exact[0],
                "*.noma.patches": s.byte_exact[1],
                "converted": converted,
            })
        }
        Err(e) => json!({"error": e.to_string()}),
    }
}

fn print_eol_status(layout: &Layout) {
    let Some(wt) = &layout.work_tree else { return };
    match install::attributes::eol_status(&layout.git_dir, wt) {
        Ok(s) if s.ok() => {
            println!(
                "line endings: byte-exact (.gitattributes unsets text for *.noma, *.noma.patches)"
            );
            let paths = install::attributes::converted_paths(wt);
            if !paths.is_empty() {
                println!(
                    "  but {} checked-out file(s) still hold the CRLF a checkout made before the rules ({}); run `noma hooks install` to restore them",
                    paths.len(),
                    paths.join(", ")
                );
            }
        }
        Ok(s) => {
            let missing = s.missing_lines();
            println!(
                "line endings: NOT byte-exact: `{}` missing or overridden in .gitattributes \
                 (core.autocrlf may rewrite documents on checkout); run `noma hooks install`",
                missing.join("`, `")
            );
        }
        Err(e) => println!("line endings: unknown ({e})"),
    }
}

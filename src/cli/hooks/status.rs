//! `noma hooks status`: per hook what is installed and where, the merge
//! driver's registration and the line-ending rules, as text for people
//! and as one JSON document for programs.

use std::path::Path;

use serde_json::{json, Value};

use super::describe::file_name;
use crate::report::output::{Exit, Output};
use noma_git::git::layout::Layout;
use noma_git::install::{self as install, HookStatus, State};

/// The status of the repository git's environment names, as JSON when
/// `json`, else as text.
pub fn hooks_status(json: bool) -> Output {
    let layout = match Layout::from_env() {
        Ok(l) => l,
        Err(e) => return Output::error(format!("noma hooks: {e}"), Exit::NotRun),
    };
    let noma = install::current_noma().unwrap_or_default();
    let statuses = match install::status(&layout.hooks_dir, &noma) {
        Ok(s) => s,
        Err(e) => return Output::error(format!("noma hooks: {e}"), Exit::NotRun),
    };
    let mut c = Output::default();
    if json {
        let mut v = status_json(&layout, &statuses);
        v["merge_driver"] = driver_json(&layout);
        v["line_endings"] = eol_json(&layout);
        v["allowed_signers"] = signers_json(&layout);
        c.json(v);
    } else {
        c.out_text(status_text(&layout, &statuses));
        c.out_text(driver_text(&layout));
        c.out_text(eol_text(&layout));
        c.out_text(signers_text(&layout));
    }
    c
}

/// [`signers_text`] as JSON (null without a work tree or file).
fn signers_json(layout: &Layout) -> Value {
    let Some(wt) = &layout.work_tree else {
        return Value::Null;
    };
    match noma_git::provenance::signers_check::load(None, wt) {
        Ok(Some(c)) => json!({"path": c.path, "usable": c.usable, "warnings": c.warnings}),
        Ok(None) => Value::Null,
        Err(e) => json!({"error": e.to_string()}),
    }
}

/// The work tree's allowed signers, as `noma provenance check-signers`
/// reads them (nothing when there is no such file).
fn signers_text(layout: &Layout) -> String {
    let Some(wt) = &layout.work_tree else {
        return String::new();
    };
    match noma_git::provenance::signers_check::load(None, wt) {
        Ok(Some(check)) => crate::report::signers::signers_check_text(&check),
        Ok(None) => String::new(),
        Err(e) => format!("allowed signers: {e}\n"),
    }
}

/// The hooks directory, its layout and one line per hook.
fn status_text(layout: &Layout, statuses: &[HookStatus]) -> String {
    let mut out = match &layout.hooks_path_config {
        Some(c) => format!(
            "hooks dir: {} (core.hooksPath = {}{})\n",
            layout.hooks_dir.display(),
            c.display(),
            layout
                .hooks_path_shared
                .map_or(String::new(), |level| format!(
                    ", set in the {level} git configuration: shared by every repository"
                ))
        ),
        None => format!("hooks dir: {}\n", layout.hooks_dir.display()),
    };
    if layout.is_bare() {
        out.push_str("note: bare repository: pre-commit hooks do not run without a work tree\n");
    }
    match install::husky::detect(&layout.hooks_dir) {
        Some(h) => out.push_str(&format!("layout: {}\n", h.describe())),
        None => out.push_str("layout: plain git hooks\n"),
    }
    for s in statuses {
        let details = details(s);
        if details.is_empty() {
            out.push_str(&format!("{}: {}\n", s.hook, s.label()));
        } else {
            out.push_str(&format!(
                "{}: {} ({})\n",
                s.hook,
                s.label(),
                details.join("; ")
            ));
        }
    }
    out
}

/// What is worth saying about one hook beyond its state's label.
fn details(s: &HookStatus) -> Vec<String> {
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
    details
}

fn path(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// One hook's JSON entry.
fn hook_json(s: &HookStatus) -> Value {
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
        "name": s.hook.to_string(),
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
}

fn status_json(layout: &Layout, statuses: &[HookStatus]) -> Value {
    let hooks: Vec<_> = statuses.iter().map(hook_json).collect();
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

fn driver_json(layout: &Layout) -> Value {
    let Some(wt) = &layout.work_tree else {
        return Value::Null;
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

fn driver_text(layout: &Layout) -> String {
    let Some(wt) = &layout.work_tree else {
        return String::new();
    };
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
            format!("merge driver: {state} ({attrs})\n")
        }
        Err(e) => format!("merge driver: unknown ({e})\n"),
    }
}

fn eol_json(layout: &Layout) -> Value {
    let Some(wt) = &layout.work_tree else {
        return Value::Null;
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

fn eol_text(layout: &Layout) -> String {
    let Some(wt) = &layout.work_tree else {
        return String::new();
    };
    match install::attributes::eol_status(&layout.git_dir, wt) {
        Ok(s) if s.ok() => {
            let mut out = "line endings: byte-exact (.gitattributes unsets text for *.noma, \
                           *.noma.patches)\n"
                .to_string();
            let paths = install::attributes::converted_paths(wt);
            if !paths.is_empty() {
                out.push_str(&format!(
                    "  but {} checked-out file(s) still hold the CRLF a checkout made before the rules ({}); run `noma hooks install` to restore them\n",
                    paths.len(),
                    paths.join(", ")
                ));
            }
            out
        }
        Ok(s) => format!(
            "line endings: NOT byte-exact: `{}` missing or overridden in .gitattributes \
             (core.autocrlf may rewrite documents on checkout); run `noma hooks install`\n",
            s.missing_lines().join("`, `")
        ),
        Err(e) => format!("line endings: unknown ({e})\n"),
    }
}

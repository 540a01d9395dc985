//! Hook managers that already run noma.
//!
//! A team that runs `noma hook pre-commit` from lefthook, the pre-commit
//! framework, or a shared `core.hooksPath` directory has noma's checks
//! already; `noma init` installing its own scripts beside them (chaining
//! the manager's hook) would run every check twice per commit. `noma init`
//! asks [`runs_noma`] first and then registers only the merge driver,
//! which no hook manager installs. husky is not here: noma installs
//! through husky's own scripts and adds its line only when they do not run
//! noma already ([`super::husky::runs_noma`]).

use std::path::{Path, PathBuf};

use crate::git::layout::Layout;

/// A hook manager found running noma.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunsNoma {
    /// `lefthook`, `pre-commit` or `core.hooksPath`.
    pub manager: &'static str,
    /// The file that runs noma (its configuration, or the hook script).
    pub file: PathBuf,
}

/// The configuration files of lefthook and the pre-commit framework, at
/// the repository root.
const CONFIGS: [(&str, &str); 7] = [
    ("lefthook", "lefthook.yml"),
    ("lefthook", "lefthook.yaml"),
    ("lefthook", ".lefthook.yml"),
    ("lefthook", ".lefthook.yaml"),
    ("lefthook", "lefthook.toml"),
    ("lefthook", "lefthook.json"),
    ("pre-commit", ".pre-commit-config.yaml"),
];

/// Configuration files are small; a larger one is not read.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// The first hook manager of the repository `layout` describes whose
/// configuration runs noma's hook: lefthook's or the pre-commit
/// framework's configuration at the root, or a `core.hooksPath` directory
/// whose `pre-commit` runs `noma hook` and is not noma's own script.
pub fn runs_noma(layout: &Layout) -> Option<RunsNoma> {
    let root = layout.work_tree.as_deref()?;
    let found = CONFIGS.iter().find_map(|(manager, name)| {
        let file = root.join(name);
        mentions_noma_hook(&file).then_some(RunsNoma { manager, file })
    });
    found.or_else(|| hooks_path_runs_noma(layout))
}

/// `core.hooksPath`'s `pre-commit`, when it runs noma and noma did not
/// write it (noma's own script is reinstalled as usual).
fn hooks_path_runs_noma(layout: &Layout) -> Option<RunsNoma> {
    layout.hooks_path_config.as_ref()?;
    let file = layout.hooks_dir.join("pre-commit");
    let text = read_small(&file)?;
    let ours = super::parse_marker(text.as_bytes()).is_some();
    (!ours && runs_noma_hook(&text)).then_some(RunsNoma {
        manager: "core.hooksPath",
        file,
    })
}

fn read_small(file: &Path) -> Option<String> {
    let meta = std::fs::metadata(file).ok()?;
    if !meta.is_file() || meta.len() > MAX_CONFIG_BYTES {
        return None;
    }
    std::fs::read_to_string(file).ok()
}

fn mentions_noma_hook(file: &Path) -> bool {
    read_small(file).is_some_and(|t| runs_noma_hook(&t))
}

/// Whether `text` runs `noma hook …` (a command line, a YAML `run:` or
/// `entry:` value) or names the hooks this repository ships for the
/// pre-commit framework (`id: noma-check`), outside comments.
pub(crate) fn runs_noma_hook(text: &str) -> bool {
    text.lines().any(|line| {
        let code = line.split(" #").next().unwrap_or_default();
        if code.trim_start().starts_with('#') {
            return false;
        }
        let words: Vec<&str> = code
            .split(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '[' | ']' | ','))
            .filter(|w| !w.is_empty())
            .collect();
        let hook = words
            .windows(2)
            .any(|w| (w[0] == "noma" || w[0].ends_with("/noma")) && w[1] == "hook");
        hook || words.iter().any(|w| w.starts_with("noma-check"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn noma_hook_is_recognised_in_configs_and_scripts_not_in_comments() {
        let runs = [
            "pre-commit:\n  commands:\n    noma:\n      run: noma hook pre-commit\n",
            "      - id: noma-check\n",
            "        entry: noma hook pre-commit\n",
            "#!/bin/sh\n/usr/local/bin/noma hook pre-commit \"$@\"\n",
            "[pre-commit.commands.noma]\nrun = \"noma hook pre-commit\"\n",
        ];
        for text in runs {
            assert!(runs_noma_hook(text), "{text}");
        }
        let not = [
            "pre-commit:\n  commands:\n    lint:\n      run: eslint\n",
            "# run: noma hook pre-commit\n",
            "run: npm test # then noma hook pre-commit\n",
            "echo noma is great\n",
        ];
        for text in not {
            assert!(!runs_noma_hook(text), "{text}");
        }
    }
}

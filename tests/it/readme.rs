//! The README, CONTRIBUTING.md and the documents under `docs/` render as
//! intended: every code fence is closed, and a fence line holds only
//! backticks and an optional language word (text after it would silently
//! open a block that swallows the rest of the file, as it once did). The
//! README's quick start stays two commands: one runs the main job, one
//! runs every test. What the README and docs/ state about the program
//! stays true: the conformance counts, the list of commands, the relative
//! links and their anchors.

use std::path::{Path, PathBuf};

fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// README.md, CONTRIBUTING.md and every `.md` file below `docs/`.
fn markdown_files() -> Vec<PathBuf> {
    let mut files = vec![
        manifest_dir().join("README.md"),
        manifest_dir().join("CONTRIBUTING.md"),
    ];
    let mut stack = vec![manifest_dir().join("docs")];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// A line that starts (after indentation) with three or more backticks.
fn is_fence(line: &str) -> bool {
    line.trim_start().starts_with("```")
}

/// Only backticks, then at most one word naming the language.
fn fence_is_clean(line: &str) -> bool {
    let info = line.trim().trim_start_matches('`');
    info.chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '+'))
}

/// Problems with the fences of one file's text, one line each.
fn fence_problems(text: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let mut fences = 0;
    for (i, line) in text.lines().enumerate() {
        if is_fence(line) {
            fences += 1;
            if !fence_is_clean(line) {
                problems.push(format!("line {}: text after the fence: {line}", i + 1));
            }
        }
    }
    if fences % 2 == 1 {
        problems.push(format!("{fences} fence lines: one is never closed"));
    }
    problems
}

/// The commands in the code blocks of the README's "Quick start" section:
/// non-blank lines that are not comments.
fn quick_start_commands(readme: &str) -> Vec<String> {
    let section: Vec<&str> = readme
        .lines()
        .skip_while(|l| l.trim() != "## Quick start")
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
        .collect();
    assert!(!section.is_empty(), "README.md has no \"## Quick start\"");
    let mut commands = Vec::new();
    let mut in_code = false;
    for line in section {
        if is_fence(line) {
            in_code = !in_code;
        } else if in_code && !line.trim().is_empty() && !line.trim().starts_with('#') {
            commands.push(line.trim().to_string());
        }
    }
    commands
}

#[test]
fn every_fence_is_clean_and_closed() {
    let files = markdown_files();
    assert!(files.len() >= 2, "README.md and docs/*.md: {files:?}");
    let mut report = String::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for p in fence_problems(&text) {
            report.push_str(&format!("{}: {p}\n", file.display()));
        }
    }
    assert!(report.is_empty(), "{report}");
}

#[test]
fn quick_start_is_two_commands_the_main_job_and_all_tests() {
    let readme = std::fs::read_to_string(manifest_dir().join("README.md")).unwrap();
    let commands = quick_start_commands(&readme);
    assert_eq!(commands.len(), 2, "{commands:#?}");
    // The test command, with its trailing comment removed, is `cargo test`.
    let is_test = |c: &String| c.split('#').next().unwrap().trim() == "cargo test";
    assert_eq!(
        commands.iter().filter(|c| is_test(c)).count(),
        1,
        "one command runs every test: {commands:#?}"
    );
}

/// The checks themselves catch what they are for.
#[test]
fn the_checks_catch_a_broken_fence_and_a_third_command() {
    assert!(fence_problems("```sh\nls\n```\n").is_empty());
    assert_eq!(fence_problems("```sh\nls\n``` More text.\n").len(), 1);
    assert_eq!(fence_problems("```sh\nls\n").len(), 1);
    let readme = "## Quick start\n\n```sh\ncargo run   # job\n# note\ncargo test\nls\n```\n\n## Next\n\n```sh\nx\n```\n";
    assert_eq!(
        quick_start_commands(readme),
        ["cargo run   # job", "cargo test", "ls"]
    );
}

fn read(path: &str) -> String {
    std::fs::read_to_string(manifest_dir().join(path)).unwrap()
}

#[test]
fn every_install_command_is_locked_and_the_pre_commit_snippet_matches_the_hooks() {
    let mut installs = Vec::new();
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        for l in text.lines() {
            if l.trim_start().starts_with("cargo install") {
                installs.push(format!("{}: {l}", file.display()));
            }
        }
    }
    assert!(installs.len() >= 2, "{installs:?}");
    for l in &installs {
        assert!(l.contains("--locked"), "unpinned install: {l}");
    }
    // The .pre-commit-config.yaml snippets: the recommended one uses the
    // shipped hooks by id from this repository; the local one runs the same
    // entries, ids and stages as the shipped .pre-commit-hooks.yaml.
    let guide = read("docs/git-workflows.md");
    let shipped: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&read(".pre-commit-hooks.yaml")).unwrap();
    let key = |h: &serde_yaml_ng::Value| {
        (
            h["id"].as_str().map(String::from),
            h["entry"].as_str().map(String::from),
            serde_yaml_ng::to_string(&h["stages"]).unwrap(),
        )
    };
    let ours: Vec<_> = shipped.as_sequence().unwrap().iter().map(key).collect();
    let ids: Vec<_> = ours.iter().map(|k| k.0.clone()).collect();
    let fence = "```yaml\n# .pre-commit-config.yaml\n";
    let mut kinds = Vec::new();
    for (start, _) in guide.match_indices(fence) {
        let body = &guide[start + "```yaml\n".len()..];
        let body = &body[..body.find("```").unwrap()];
        let config: serde_yaml_ng::Value = serde_yaml_ng::from_str(body).unwrap();
        let repo = &config["repos"][0];
        let hooks = repo["hooks"].as_sequence().unwrap();
        if repo["repo"].as_str() == Some("local") {
            assert_eq!(hooks.iter().map(key).collect::<Vec<_>>(), ours);
        } else {
            let used: Vec<_> = hooks.iter().map(|h| key(h).0).collect();
            assert_eq!(used, ids, "the recommended snippet uses every shipped hook");
        }
        kinds.push(repo["repo"].as_str() == Some("local"));
    }
    assert_eq!(
        kinds,
        [false, true],
        "the recommended snippet, then the local one"
    );
}

/// The last line of `noma verify DIR`, e.g. `105 fixtures, 105 passed`.
fn verify_summary(dir: &Path) -> String {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_noma"))
        .arg("verify")
        .arg(dir)
        .current_dir(manifest_dir())
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let last = out.lines().last().unwrap_or("").trim().to_string();
    assert!(last.ends_with(" passed"), "{out}");
    last
}

/// Whether `text`, whitespace folded (the README wraps lines), quotes
/// `summary` as `` `N fixtures, M passed` ``.
fn quotes(text: &str, summary: &str) -> bool {
    let folded = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let summary = summary.split_whitespace().collect::<Vec<_>>().join(" ");
    folded.contains(&format!("`{summary}`"))
}

/// Every `` `N fixtures, M passed` `` a document quotes.
fn quoted_counts(text: &str) -> Vec<String> {
    let folded = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let re = regex::Regex::new(r"`(\d+ fixtures, \d+ passed)`").unwrap();
    re.captures_iter(&folded)
        .map(|c| c[1].to_string())
        .collect()
}

#[test]
fn the_readme_conformance_counts_are_what_noma_verify_prints() {
    let readme = read("README.md");
    let own = verify_summary(&manifest_dir().join("conformance"));
    assert!(quotes(&readme, &own), "README should say `{own}`");
    let mut truths = vec![own];
    if let Some(reference) = crate::common::shared_reference("readme conformance count") {
        let theirs = verify_summary(&reference.join("noma/conformance"));
        assert!(quotes(&readme, &theirs), "README should say `{theirs}`");
        truths.push(theirs);
    }
    // No other count anywhere in README.md or docs/ (a stale copy).
    for file in markdown_files() {
        for count in quoted_counts(&std::fs::read_to_string(&file).unwrap()) {
            if file.ends_with("performance.md") {
                continue; // a log: counts of their day
            }
            assert!(
                truths.contains(&count) || truths.len() == 1,
                "{}: `{count}` is not what noma verify prints ({truths:?})",
                file.display()
            );
        }
    }
}

/// The subcommands `noma --help` lists (clap's own list), without `help`.
fn subcommands() -> Vec<String> {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_noma"))
        .arg("--help")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let names: Vec<String> = out
        .lines()
        .skip_while(|l| l.trim() != "Commands:")
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .filter(|n| n != "help")
        .collect();
    assert!(names.len() >= 20, "{out}");
    names
}

/// The commands the README's "## Commands" section names (`` `noma X` ``).
fn readme_commands(readme: &str) -> Vec<String> {
    let section: String = readme
        .lines()
        .skip_while(|l| l.trim() != "## Commands")
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
        .collect::<Vec<_>>()
        .join(" ");
    let re = regex::Regex::new(r"`noma ([a-z][a-z-]*)`").unwrap();
    let mut names: Vec<String> = re
        .captures_iter(&section)
        .map(|c| c[1].to_string())
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The commands the reference's table rows start with (`` | `noma X ``).
fn reference_commands(reference: &str) -> Vec<String> {
    let re = regex::Regex::new(r"(?m)^\| `noma ([a-z][a-z-]*)").unwrap();
    let mut names: Vec<String> = re
        .captures_iter(reference)
        .map(|c| c[1].to_string())
        .collect();
    // A row may cover two commands (`noma completions ...`, `noma man`).
    let more = regex::Regex::new(r"(?m)^\| `noma [^`]*`, `noma ([a-z][a-z-]*)").unwrap();
    names.extend(more.captures_iter(reference).map(|c| c[1].to_string()));
    names.sort();
    names.dedup();
    names
}

#[test]
fn the_readme_and_the_command_reference_list_every_command_and_no_other() {
    let mut real = subcommands();
    real.sort();
    assert_eq!(
        readme_commands(&read("README.md")),
        real,
        "README.md ## Commands"
    );
    assert_eq!(
        reference_commands(&read("docs/commands.md")),
        real,
        "docs/commands.md table"
    );
    // The readers see what they must: a missing and an invented command.
    let readme = "## Commands\n\n- `noma check`, `noma frob`.\n\n## Next\n`noma ids`\n";
    assert_eq!(readme_commands(readme), ["check", "frob"]);
    let table = "| `noma check <f>` | x |\n| `noma completions a\\|b`, `noma man` | y |\n";
    assert_eq!(reference_commands(table), ["check", "completions", "man"]);
}

/// GitHub's anchor for a heading: lower case, punctuation other than `-`
/// and `_` dropped, spaces to `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown file's headings, outside code fences.
fn anchors(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fence: Option<usize> = None;
    for line in text.lines() {
        let t = line.trim_start();
        let ticks = t.len() - t.trim_start_matches('`').len();
        if ticks >= 3 {
            fence = match fence {
                None => Some(ticks),
                Some(n) if ticks >= n && t.trim_start_matches('`').trim().is_empty() => None,
                f => f,
            };
            continue;
        }
        if fence.is_none() && line.starts_with('#') {
            out.push(anchor(line.trim_start_matches('#')));
        }
    }
    out
}

/// Relative links `[..](path#anchor)` of one file that lead nowhere.
fn broken_links(file: &Path, text: &str) -> Vec<String> {
    let re = regex::Regex::new(r"\]\(([^)\s]+)\)").unwrap();
    let mut out = Vec::new();
    for c in re.captures_iter(text) {
        let link = &c[1];
        if link.contains("://") || link.starts_with("mailto:") {
            continue;
        }
        let (path, frag) = link.split_once('#').unwrap_or((link, ""));
        let target = if path.is_empty() {
            file.to_path_buf()
        } else {
            file.parent().unwrap().join(path)
        };
        if !target.exists() {
            out.push(format!("{}: {link}: no such file", file.display()));
        } else if !frag.is_empty() {
            let body = std::fs::read_to_string(&target).unwrap_or_default();
            if !anchors(&body).iter().any(|a| a == frag) {
                out.push(format!("{}: {link}: no such heading", file.display()));
            }
        }
    }
    out
}

#[test]
fn every_relative_link_leads_to_a_file_and_heading() {
    let mut report = Vec::new();
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        report.extend(broken_links(&file, &text));
    }
    assert!(report.is_empty(), "{}", report.join("\n"));
    // The README's architecture pointer leads to the architecture document.
    let readme = read("README.md");
    assert!(
        readme.contains("Architecture: [`.noma/architecture.noma`](.noma/architecture.noma)"),
        "README's Architecture pointer"
    );
    // The checker finds what it is for.
    let readme_path = manifest_dir().join("README.md");
    assert_eq!(anchor("Use in CI"), "use-in-ci");
    assert_eq!(
        anchor(" `noma parse` streams its JSON (issue 35)"),
        "noma-parse-streams-its-json-issue-35"
    );
    assert!(broken_links(&readme_path, "[a](docs/guide.md#recording-hand-edits)").is_empty());
    assert_eq!(
        broken_links(&readme_path, "[a](docs/guide.md#no-such)").len(),
        1
    );
    assert_eq!(broken_links(&readme_path, "[a](docs/nope.md)").len(), 1);
    assert_eq!(
        broken_links(&readme_path, "[a](#use-in-ci) [b](#gone)").len(),
        1
    );
}

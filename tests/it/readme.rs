//! The README and the documents under `docs/` render as intended: every
//! code fence is closed, and a fence line holds only backticks and an
//! optional language word (text after it would silently open a block that
//! swallows the rest of the file, as it once did). The README's quick start
//! stays two commands: one runs the main job, one runs every test.

use std::path::{Path, PathBuf};

fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every `.md` file below `docs/`.
fn markdown_files() -> Vec<PathBuf> {
    let mut files = vec![manifest_dir().join("README.md")];
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

#[test]
fn every_install_command_is_locked_and_the_pre_commit_snippet_matches_the_hooks() {
    let readme = std::fs::read_to_string(manifest_dir().join("README.md")).unwrap();
    let installs: Vec<&str> = readme
        .lines()
        .filter(|l| l.trim_start().starts_with("cargo install"))
        .collect();
    assert!(installs.len() >= 2, "{installs:?}");
    for l in &installs {
        assert!(l.contains("--locked"), "unpinned install: {l}");
    }
    // The .pre-commit-config.yaml snippet runs the same entries, ids and
    // stages as the shipped .pre-commit-hooks.yaml.
    let start = readme
        .find("```yaml\n# .pre-commit-config.yaml\n")
        .expect("a .pre-commit-config.yaml snippet");
    let body = &readme[start + "```yaml\n".len()..];
    let body = &body[..body.find("```").unwrap()];
    let config: serde_yaml_ng::Value = serde_yaml_ng::from_str(body).unwrap();
    let shipped: serde_yaml_ng::Value = serde_yaml_ng::from_str(
        &std::fs::read_to_string(manifest_dir().join(".pre-commit-hooks.yaml")).unwrap(),
    )
    .unwrap();
    let key = |h: &serde_yaml_ng::Value| {
        (
            h["id"].as_str().map(String::from),
            h["entry"].as_str().map(String::from),
            serde_yaml_ng::to_string(&h["stages"]).unwrap(),
        )
    };
    let local: Vec<_> = config["repos"][0]["hooks"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(key)
        .collect();
    let ours: Vec<_> = shipped.as_sequence().unwrap().iter().map(key).collect();
    assert_eq!(local, ours);
}

#[test]
fn the_readme_conformance_count_is_what_noma_verify_prints() {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_noma"))
        .args(["verify", "conformance"])
        .current_dir(manifest_dir())
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let last = out.lines().last().unwrap_or("").trim().to_string();
    assert!(last.ends_with(" passed"), "{out}");
    let (n, rest) = last.split_once(" fixtures, ").unwrap();
    let readme = std::fs::read_to_string(manifest_dir().join("README.md")).unwrap();
    // The README wraps the phrase; compare with whitespace folded.
    let folded = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        folded.contains(&format!("`{n} fixtures, {rest}`")),
        "README should say `{last}`"
    );
}

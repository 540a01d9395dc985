//! The README and `docs/` are safe to follow in a team's repository: a
//! hook-manager snippet appends to the team's hooks instead of replacing
//! them, and no walk-through keeps a signing key inside the work tree
//! (where the `git add -A` that follows would commit it).

use std::path::{Path, PathBuf};
use std::process::Command;

fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and the `.md` files of `docs/`.
fn markdown_files() -> Vec<PathBuf> {
    let mut files = vec![manifest_dir().join("README.md")];
    for entry in std::fs::read_dir(manifest_dir().join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// The lines inside code fences, with their file and line number.
fn code_lines() -> Vec<(String, usize, String)> {
    let mut out = Vec::new();
    for file in markdown_files() {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let mut inside = false;
        for (i, line) in std::fs::read_to_string(&file).unwrap().lines().enumerate() {
            if line.trim_start().starts_with("```") {
                inside = !inside;
            } else if inside {
                out.push((name.clone(), i + 1, line.to_string()));
            }
        }
    }
    out
}

/// Where a redirection in `line` writes into a husky script with `>`
/// (replacing the team's script) instead of `>>`.
fn overwrites_husky_script(line: &str) -> bool {
    line.match_indices('>').any(|(i, _)| {
        let before = &line[..i];
        let after = line[i + 1..].trim_start();
        !before.ends_with('>') && !after.starts_with('>') && after.starts_with(".husky/")
    })
}

#[test]
fn hook_manager_snippets_append_to_the_teams_hooks() {
    assert!(overwrites_husky_script("echo x > .husky/pre-commit"));
    assert!(!overwrites_husky_script("echo x >> .husky/pre-commit"));
    let bad: Vec<String> = code_lines()
        .into_iter()
        .filter(|(_, _, l)| overwrites_husky_script(l))
        .map(|(f, n, l)| format!("{f}:{n}: {l}"))
        .collect();
    assert!(
        bad.is_empty(),
        "snippets replacing a team's hook:\n{}",
        bad.join("\n")
    );

    // The husky snippet of docs/git-workflows.md, run in a repository whose
    // team already has a pre-commit script: the team's line stays first.
    let text = std::fs::read_to_string(manifest_dir().join("docs/git-workflows.md")).unwrap();
    let snippet: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("echo") && l.contains(".husky/"))
        .collect();
    assert_eq!(snippet.len(), 2, "{snippet:?}");
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".husky")).unwrap();
    std::fs::write(dir.path().join(".husky/pre-commit"), "npm test\n").unwrap();
    let ok = Command::new("sh")
        .args(["-c", &snippet.join("\n")])
        .current_dir(dir.path())
        .status()
        .unwrap();
    assert!(ok.success());
    let script = std::fs::read_to_string(dir.path().join(".husky/pre-commit")).unwrap();
    assert_eq!(script, "npm test\nnoma hook pre-commit\n");
}

/// The key file a code line names: after `--signing-key`, `--key`,
/// `NOMA_SIGNING_KEY=`, `ssh-keygen … -f`, or in `$(cat KEY.pub)`.
fn key_paths(line: &str) -> Vec<String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let mut keys = Vec::new();
    for (i, w) in words.iter().enumerate() {
        let next = words.get(i + 1).copied();
        match *w {
            "--signing-key" | "--key" => keys.extend(next),
            "-f" if words.contains(&"ssh-keygen") => keys.extend(next),
            _ => {}
        }
        if let Some(v) = w.strip_prefix("NOMA_SIGNING_KEY=") {
            keys.push(v);
        }
        if let Some(v) = w.strip_prefix("$(cat") {
            keys.extend(if v.is_empty() { next } else { Some(v) });
        }
    }
    keys.iter()
        .map(|k| k.trim_matches(['"', '\'', ')', '`']).to_string())
        .filter(|k| !k.is_empty() && !k.starts_with('-'))
        .collect()
}

/// A key path outside any work tree: the home directory or absolute.
fn outside_the_work_tree(key: &str) -> bool {
    ["~/", "$HOME/", "${HOME}/", "/"].iter().any(|p| key.starts_with(p))
        || key.starts_with('<') // a placeholder such as <key>
        || key == "FILE"
}

#[test]
fn walk_throughs_keep_signing_keys_outside_the_repository() {
    assert_eq!(
        key_paths("NOMA_SIGNING_KEY=agent_key noma patch"),
        ["agent_key"]
    );
    assert_eq!(
        key_paths("echo \"b $(cat agent_key.pub)\" >> x"),
        ["agent_key.pub"]
    );
    assert_eq!(key_paths("ssh-keygen -t ed25519 -f ~/.ssh/k"), ["~/.ssh/k"]);
    let mut seen = 0;
    let mut inside = Vec::new();
    for (file, n, line) in code_lines() {
        for key in key_paths(&line) {
            seen += 1;
            if !outside_the_work_tree(&key) {
                inside.push(format!("{file}:{n}: {key}: {line}"));
            }
        }
    }
    assert!(seen >= 5, "the walk-throughs name keys: {seen}");
    assert!(
        inside.is_empty(),
        "keys inside the work tree:\n{}",
        inside.join("\n")
    );
}

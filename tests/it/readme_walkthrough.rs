//! The README's "First five minutes" runs as printed: its document is
//! saved, every `$ command` of its console blocks runs in order with `sh`
//! in a fresh directory (the binary under test first on `PATH`, `USER=ada`),
//! and what each prints matches the lines shown under it. Only what changes
//! from run to run is loose: a `…` the README marks as shortened, op ids,
//! timestamps, replay timings and the directory (shown as `/tmp/demo`).

use std::path::Path;
use std::process::Command;

use regex::Regex;

use crate::common::NOMA;

/// One `$ command` and the lines the README shows it printing.
#[derive(Debug, PartialEq)]
struct Step {
    command: String,
    expected: Vec<String>,
}

/// The walkthrough: the document of its first `text` block, and the steps
/// of its `console` blocks in order.
fn walkthrough(readme: &str) -> (String, Vec<Step>) {
    let section = readme
        .lines()
        .skip_while(|l| l.trim() != "## First five minutes")
        .skip(1)
        .take_while(|l| !l.starts_with("## "));
    let (mut document, mut steps) = (None::<String>, Vec::<Step>::new());
    let mut block: Option<(&str, String)> = None;
    for line in section {
        match (&mut block, line.strip_prefix("```")) {
            (None, Some(lang)) => block = Some((lang.trim(), String::new())),
            (Some((lang, text)), Some(_)) => {
                if *lang == "text" && document.is_none() {
                    document = Some(std::mem::take(text));
                }
                block = None;
            }
            (Some(("console", _)), None) => match line.strip_prefix("$ ") {
                Some(command) => steps.push(Step {
                    command: command.to_string(),
                    expected: Vec::new(),
                }),
                None => steps
                    .last_mut()
                    .expect("a console block starts with a command")
                    .expected
                    .push(line.to_string()),
            },
            (Some((_, text)), None) => {
                text.push_str(line);
                text.push('\n');
            }
            (None, None) => {}
        }
    }
    (document.expect("a text block holds the document"), steps)
}

/// A pattern for one printed line: `…` matches anything, and op ids,
/// timestamps and replay timings match any value of their shape.
fn line_pattern(expected: &str) -> Regex {
    let loose = Regex::new(concat!(
        r"…",
        r"|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        r"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z",
        r"|in \d+(\.\d+)? ms, \d+ records/s",
    ))
    .unwrap();
    let mut pattern = String::from("^");
    let mut at = 0;
    for m in loose.find_iter(expected) {
        pattern.push_str(&regex::escape(&expected[at..m.start()]));
        pattern.push_str(match m.as_str() {
            "…" => ".*",
            s if s.starts_with("in ") => r"in \d+(\.\d+)? ms, \d+ records/s",
            s if s.ends_with('Z') => r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z",
            _ => r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        });
        at = m.end();
    }
    pattern.push_str(&regex::escape(&expected[at..]));
    pattern.push('$');
    Regex::new(&pattern).unwrap()
}

/// Differences between what a step printed and what the README shows.
fn mismatches(step: &Step, printed: &str) -> Vec<String> {
    let got: Vec<&str> = printed.lines().collect();
    let want: Vec<&str> = step.expected.iter().map(String::as_str).collect();
    let mut out = Vec::new();
    for k in 0..got.len().max(want.len()) {
        match (want.get(k), got.get(k)) {
            (Some(w), Some(g)) if line_pattern(w).is_match(g) => {}
            (w, g) => out.push(format!(
                "`{}` line {}:\n  README: {}\n  actual: {}",
                step.command,
                k + 1,
                w.unwrap_or(&"(nothing)"),
                g.unwrap_or(&"(nothing)")
            )),
        }
    }
    out
}

/// Runs `command` with `sh` in `dir`; stdout and stderr as one text, in
/// the order written, the directory shown as `/tmp/demo`.
fn run(dir: &Path, home: &Path, command: &str) -> String {
    let bin = Path::new(NOMA).parent().unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!("{command} 2>&1"))
        .current_dir(dir)
        .env("PATH", path)
        .env("HOME", home)
        .env("USER", "ada")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "ada")
        .env("GIT_AUTHOR_EMAIL", "ada@example.com")
        .env("GIT_COMMITTER_NAME", "ada")
        .env("GIT_COMMITTER_EMAIL", "ada@example.com")
        .env("GIT_CEILING_DIRECTORIES", dir.parent().unwrap())
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .output()
        .expect("spawn sh");
    let mut text = String::from_utf8_lossy(&o.stdout).into_owned();
    for shown in [dir.to_path_buf(), dir.canonicalize().unwrap()] {
        text = text.replace(shown.to_str().unwrap(), "/tmp/demo");
    }
    text
}

#[test]
fn first_five_minutes_runs_as_printed() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let (document, steps) = walkthrough(&readme);
    assert!(steps.len() >= 10, "{steps:#?}");
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("plan.noma"), document).unwrap();
    let mut report = Vec::new();
    for step in &steps {
        let printed = run(dir.path(), home.path(), &step.command);
        report.extend(mismatches(step, &printed));
    }
    assert!(report.is_empty(), "{}", report.join("\n"));
}

/// The reader and the matcher do what the walkthrough test relies on.
#[test]
fn walkthrough_reading_and_line_patterns() {
    let readme = "## First five minutes\n\n```text\n# Plan\n```\n\n```console\n$ noma check plan.noma\nplan.noma: ok\n$ true\n```\n\n## Next\n\n```console\n$ ignored\n```\n";
    let (document, steps) = walkthrough(readme);
    assert_eq!(document, "# Plan\n");
    assert_eq!(
        steps,
        [
            Step {
                command: "noma check plan.noma".into(),
                expected: vec!["plan.noma: ok".into()],
            },
            Step {
                command: "true".into(),
                expected: vec![],
            },
        ]
    );
    let p = line_pattern(
        r#"{"op_id":"1d7a147f-de5e-46b8-9fae-9f38bf48842f","ts":"2026-11-25T01:19:13.307Z",…,"x":1}"#,
    );
    assert!(p.is_match(r#"{"op_id":"00000000-1111-2222-3333-444444444444","ts":"2027-01-01T00:00:00.000Z","a":2,"x":1}"#));
    assert!(!p.is_match(r#"{"op_id":"00000000-1111-2222-3333-444444444444","ts":"2027-01-01T00:00:00.000Z","a":2,"x":2}"#));
    assert!(line_pattern("2 records in 0.3 ms, 7246 records/s")
        .is_match("2 records in 12 ms, 5 records/s"));
    let step = &steps[0];
    assert!(mismatches(step, "plan.noma: ok\n").is_empty());
    assert_eq!(mismatches(step, "plan.noma: 1 error\n").len(), 1);
    assert_eq!(mismatches(step, "plan.noma: ok\nmore\n").len(), 1);
}

//! docs/git-workflows.md's first branch walk-through ("Merge, and update a
//! branch from main") runs as printed: `plan.noma` committed on `main`
//! after `noma init`, `feat` patching block `bench` and `main` patching
//! block `risk` meanwhile, then every `$ command` of the block runs in
//! order with `sh`, and what it prints matches the lines pasted under it.
//! Only what differs per run is loose: commit ids and hashes (hex of 7 or
//! more digits) and replay timings.

use std::path::Path;

use regex::Regex;

use crate::common::{text, Repo, NOMA};

const PLAN: &str = "# Plan\n\n::claim{id=\"speed\" confidence=0.5}\nThe new parser is fast enough for 30 MB.\n::\n\n::note{id=\"bench\" status=\"todo\"}\nBenchmark on the 30 MB corpus.\n::\n\n::note{id=\"risk\" level=\"medium\"}\nMemory may grow with the input.\n::\n\n::evidence{id=\"e1\" for=\"speed\"}\nA first run took 2 s.\n::\n";

/// The `$ command`s of the console block after `marker`, each with the
/// lines pasted under it.
fn block(doc: &str, marker: &str) -> Vec<(String, Vec<String>)> {
    let mut steps: Vec<(String, Vec<String>)> = Vec::new();
    let lines = doc
        .lines()
        .skip_while(|l| !l.contains(marker))
        .skip_while(|l| *l != "```console")
        .skip(1)
        .take_while(|l| *l != "```");
    for line in lines {
        match line.strip_prefix("$ ") {
            Some(cmd) => steps.push((cmd.to_string(), Vec::new())),
            None => steps.last_mut().unwrap().1.push(line.to_string()),
        }
    }
    steps
}

/// A pattern for one pasted line: hex ids and replay timings are loose.
fn line_pattern(pasted: &str) -> Regex {
    let loose = Regex::new(r"\b[0-9a-f]{7,64}\b|in \d+(\.\d+)? ms, \d+ records/s").unwrap();
    let mut pattern = String::from("^");
    let mut at = 0;
    for m in loose.find_iter(pasted) {
        pattern.push_str(&regex::escape(&pasted[at..m.start()]));
        pattern.push_str(if m.as_str().starts_with("in ") {
            r"in \d+(\.\d+)? ms, \d+ records/s"
        } else {
            r"[0-9a-f]{7,64}"
        });
        at = m.end();
    }
    pattern.push_str(&regex::escape(&pasted[at..]));
    pattern.push('$');
    Regex::new(&pattern).unwrap()
}

/// `noma patch --inplace` of one attribute as an agent, committed.
fn agent_patch(r: &Repo, id: &str, key: &str, value: &str, agent: &str) {
    let op = format!(r#"{{"op":"update_attribute","id":"{id}","key":"{key}","value":"{value}"}}"#);
    let o = r.noma(&[
        "patch",
        "plan.noma",
        "--inplace",
        "--actor-kind",
        "agent",
        "--actor-name",
        agent,
        "--op",
        &op,
    ]);
    assert!(o.status.success(), "{}", text(&o));
    r.commit_all(&format!("{id}: {value}"));
}

#[test]
fn merge_and_update_a_branch_from_main_runs_as_printed() {
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/git-workflows.md"),
    )
    .unwrap();
    let steps = block(&doc, "**Merge, and update a branch from main**");
    assert!(steps.len() >= 5, "{steps:?}");

    let r = Repo::init();
    assert!(r.noma(&["init", "--no-mcp"]).status.success());
    r.write("plan.noma", PLAN);
    r.commit_all("plan");
    std::fs::write(r.path().join(".git/plan.start.noma"), PLAN).unwrap();
    r.ok(&["switch", "-q", "-c", "feat"]);
    agent_patch(&r, "bench", "status", "done", "writer-bot");
    r.ok(&["switch", "-q", "main"]);
    agent_patch(&r, "risk", "level", "low", "review-bot");

    let bin = Path::new(NOMA).parent().unwrap();
    let path = format!("PATH={}:{}", bin.display(), std::env::var("PATH").unwrap());
    let mut report = Vec::new();
    for (command, pasted) in &steps {
        let o = r.cmd("env", &[&path, "sh", "-c", &format!("{command} 2>&1")]);
        let printed = String::from_utf8_lossy(&o.stdout).into_owned();
        let got: Vec<&str> = printed.lines().collect();
        for k in 0..got.len().max(pasted.len()) {
            match (pasted.get(k), got.get(k)) {
                (Some(w), Some(g)) if line_pattern(w).is_match(g) => {}
                (w, g) => report.push(format!(
                    "`{command}` line {}:\n  docs:   {}\n  actual: {}",
                    k + 1,
                    w.map_or("(nothing)", String::as_str),
                    g.unwrap_or(&"(nothing)")
                )),
            }
        }
    }
    assert!(report.is_empty(), "{}", report.join("\n"));
}

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

/// The console blocks after `marker` up to the next section, each as its
/// `$ command`s with the lines pasted under them.
fn blocks(doc: &str, marker: &str) -> Vec<Vec<(String, Vec<String>)>> {
    let mut out: Vec<Vec<(String, Vec<String>)>> = Vec::new();
    let mut fence: Option<&str> = None;
    let lines = doc
        .lines()
        .skip_while(|l| !l.contains(marker))
        .take_while(|l| !l.starts_with("## "));
    for line in lines {
        match fence {
            None if line.trim_start_matches('`') == "console" => {
                fence = Some(line.trim_end_matches("console"));
                out.push(Vec::new());
            }
            None => {}
            Some(f) if line == f => fence = None,
            Some(_) => {
                let steps = out.last_mut().unwrap();
                match line.strip_prefix("$ ") {
                    Some(cmd) => steps.push((cmd.to_string(), Vec::new())),
                    None => steps.last_mut().unwrap().1.push(line.to_string()),
                }
            }
        }
    }
    out
}

/// A pattern for one pasted line: hex ids and replay timings are loose.
fn line_pattern(pasted: &str) -> Regex {
    let loose = Regex::new(concat!(
        r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        r"|\b[0-9a-f]{7,64}\b|in \d+(\.\d+)? ms, \d+ records/s"
    ))
    .unwrap();
    let mut pattern = String::from("^");
    let mut at = 0;
    for m in loose.find_iter(pasted) {
        pattern.push_str(&regex::escape(&pasted[at..m.start()]));
        pattern.push_str(match m.as_str() {
            s if s.starts_with("in ") => r"in \d+(\.\d+)? ms, \d+ records/s",
            s if s.len() == 36 && s.contains('-') => {
                r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
            }
            _ => r"[0-9a-f]{7,64}",
        });
        at = m.end();
    }
    pattern.push_str(&regex::escape(&pasted[at..]));
    pattern.push('$');
    Regex::new(&pattern).unwrap()
}

/// `noma patch --inplace` of one attribute as an agent, committed.
fn agent_patch(r: &Repo, id: &str, key: &str, value: &str, agent: &str) {
    patch(r, id, key, value, agent);
    r.commit_all(&format!("{id}: {value}"));
}

/// `noma patch --inplace` of one attribute as an agent, not committed.
fn patch(r: &Repo, id: &str, key: &str, value: &str, agent: &str) {
    let op = format!(r#"{{"op":"update_attribute","id":"{id}","key":"{key}","value":"{value}"}}"#);
    let args = ["patch", "plan.noma", "--inplace", "--actor-kind", "agent"];
    let o = r.noma(&[&args[..], &["--actor-name", agent, "--op", &op]].concat());
    assert!(o.status.success(), "{}", text(&o));
}

/// Runs each step with `sh` in the work tree (the binary under test first
/// on PATH) and returns the differences from what the docs pasted.
fn run_steps(r: &Repo, steps: &[(String, Vec<String>)]) -> Vec<String> {
    let bin = Path::new(NOMA).parent().unwrap();
    let path = format!("PATH={}:{}", bin.display(), std::env::var("PATH").unwrap());
    let mut report = Vec::new();
    for (command, pasted) in steps {
        let o = r.cmd("env", &[&path, "sh", "-c", &format!("{command} 2>&1")]);
        // git ends a progress line (`Rebasing (1/1)`) with a carriage
        // return, which the pasted text, as a terminal shows it, drops.
        let printed = String::from_utf8_lossy(&o.stdout).replace('\r', "");
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
    report
}

fn guide() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/git-workflows.md"))
        .unwrap()
}

/// A repository after `noma init` with `plan` committed on `main` and
/// kept as `.git/plan.start.noma`.
fn repo_with(plan: &str) -> Repo {
    let r = Repo::init();
    assert!(r.noma(&["init", "--no-mcp"]).status.success());
    r.write("plan.noma", plan);
    r.commit_all("plan");
    std::fs::write(r.path().join(".git/plan.start.noma"), plan).unwrap();
    r
}

#[test]
fn merge_and_update_a_branch_from_main_runs_as_printed() {
    let blocks = blocks(&guide(), "**Merge, and update a branch from main**");
    let steps = &blocks[0];
    assert!(steps.len() >= 5, "{steps:?}");
    let r = repo_with(PLAN);
    r.ok(&["switch", "-q", "-c", "feat"]);
    agent_patch(&r, "bench", "status", "done", "writer-bot");
    r.ok(&["switch", "-q", "main"]);
    agent_patch(&r, "risk", "level", "low", "review-bot");
    let report = run_steps(&r, steps);
    assert!(report.is_empty(), "{}", report.join("\n"));
}

#[test]
fn rebase_and_cherry_pick_run_as_printed() {
    let blocks = blocks(&guide(), "**Rebase, `pull --rebase`, cherry-pick.**");
    let r = repo_with(PLAN);
    // tidy and exp branch off; main moves on by five records.
    r.ok(&["switch", "-q", "-c", "tidy"]);
    patch(&r, "speed", "confidence", "0.6", "tidy-bot");
    r.commit_all("tidy: cut intro");
    r.ok(&["switch", "-q", "-c", "exp", "main"]);
    patch(&r, "risk", "level", "capped", "review-bot");
    r.ok(&["add", "-A"]);
    // The date cherry-pick shows is the picked commit's.
    r.ok(&[
        "commit",
        "-q",
        "--date",
        "Wed Nov 25 00:54:50 2026 +0000",
        "-m",
        "risk: cap",
    ]);
    agent_patch(&r, "risk", "owner", "ops", "review-bot");
    r.ok(&["switch", "-q", "main"]);
    for round in 1..=5 {
        agent_patch(
            &r,
            "bench",
            "status",
            &format!("round {round}"),
            "writer-bot",
        );
    }
    let report = run_steps(&r, &blocks[0]);
    assert!(report.is_empty(), "{}", report.join("\n"));
}

/// The conflict walk-through's document: `speed` first, its evidence at
/// line 19 once the conflict block replaces it.
const CONFLICT_PLAN: &str = "# Plan\n\n::claim{id=\"speed\" confidence=0.5}\nThe new parser is fast enough for 30 MB.\n::\n\n::evidence{id=\"e1\" for=\"speed\"}\nA first run took 2 s.\n::\n\n::note{id=\"bench\" round=\"0\"}\nBenchmark on the 30 MB corpus.\n::\n";

#[test]
fn a_conflict_on_one_block_runs_as_printed() {
    let blocks = blocks(
        &guide(),
        "**A conflict: both branches changed the same block.**",
    );
    assert!(blocks.len() >= 4, "{blocks:?}");
    // Six records in common, as at this point of the walk-through.
    let r = repo_with(CONFLICT_PLAN);
    for round in 1..=6 {
        agent_patch(&r, "bench", "round", &round.to_string(), "writer-bot");
    }
    r.ok(&["switch", "-q", "-c", "tune"]);
    let speed = |v: &str, agent: &str| {
        let op =
            format!(r#"{{"op":"update_attribute","id":"speed","key":"confidence","value":{v}}}"#);
        let args = ["patch", "plan.noma", "--inplace", "--actor-kind", "agent"];
        let o = r.noma(&[&args[..], &["--actor-name", agent, "--op", &op]].concat());
        assert!(o.status.success(), "{}", text(&o));
        r.commit_all(&format!("speed {v}"));
    };
    speed("0.9", "writer-bot");
    r.ok(&["switch", "-q", "main"]);
    speed("0.7", "review-bot");
    let mut report = Vec::new();
    // Reconcile and the merge; the conflict block; the blocked commit.
    for steps in &blocks[..3] {
        report.extend(run_steps(&r, steps));
    }
    // The resolution the text describes: the conflict block replaced by
    // its first fenced version (ours).
    let merged = r.read("plan.noma");
    let start = merged.find("::conflict").unwrap();
    let ours_at = merged[start..].find("```noma\n").unwrap() + start + "```noma\n".len();
    let ours_end = merged[ours_at..].find("```").unwrap() + ours_at;
    // The closing fence of theirs, then the conflict block's `::`.
    let end = merged[ours_end..].find("```\n::\n").unwrap() + ours_end + "```\n::\n".len();
    r.write(
        "plan.noma",
        &format!(
            "{}{}{}",
            &merged[..start],
            &merged[ours_at..ours_end],
            &merged[end..]
        ),
    );
    report.extend(run_steps(&r, &blocks[3]));
    assert!(report.is_empty(), "{}", report.join("\n"));
}

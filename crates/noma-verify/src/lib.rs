//! The Annex C conformance harness behind `noma verify <fixture-dir>`.
//!
//! Discovery (§C.2/§C.4): every directory below the root that contains
//! `input.noma` is a fixture (its own subdirectories are not searched); a
//! directory that holds expected-output files but no `input.noma` is
//! reported as SKIP. Results are sorted by path, so output is byte-identical
//! across runs.
//!
//! Checks (§C.3), in the reference harness's order, first failure wins:
//! `expected.ids.json`, `expected.diagnostics.json`,
//! `expected.roundtrip.noma`, `expected.spans.json`, then `patch.json` with
//! `expected.post.noma` or `expected.error.json`. Fixture files are
//! untrusted: a malformed expected file is a FAIL with a reason, never a panic.

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use noma_core::doc::json::structurally_equal;
use noma_core::doc::render::render_noma;
use noma_core::doc::{parse, Document};

/// How deep below the root discovery descends (guards against pathological trees).
const MAX_DEPTH: usize = 64;

/// Files whose presence marks a directory as a fixture even without `input.noma`.
const EXPECTED_FILES: [&str; 6] = [
    "expected.ids.json",
    "expected.diagnostics.json",
    "expected.roundtrip.noma",
    "expected.spans.json",
    "expected.post.noma",
    "expected.error.json",
];

/// The outcome of one fixture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Every expected file matched.
    Pass,
    /// A check failed; the reason is one line.
    Fail(String),
    /// The fixture could not be evaluated (e.g. no `input.noma`).
    Skip(String),
}

/// One fixture's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixtureResult {
    /// The fixture path as displayed (relative to the working directory, `/`-separated).
    pub path: String,
    /// What happened.
    pub status: Status,
}

/// The results of a harness run, sorted by path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// One entry per discovered fixture.
    pub fixtures: Vec<FixtureResult>,
}

impl Report {
    /// Number of passing fixtures.
    pub fn passed(&self) -> usize {
        self.fixtures
            .iter()
            .filter(|f| f.status == Status::Pass)
            .count()
    }

    /// Whether every fixture passed (skips count as not passed, as in the reference).
    pub fn ok(&self) -> bool {
        self.passed() == self.fixtures.len()
    }

    /// The §C.4 output: one `PASS  path` / `FAIL  path  — reason` /
    /// `SKIP  path  — reason` line per fixture, a blank line, then
    /// `N fixtures, M passed`. Ends with a newline.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for f in &self.fixtures {
            let (tag, reason) = match &f.status {
                Status::Pass => ("PASS", None),
                Status::Fail(r) => ("FAIL", Some(r)),
                Status::Skip(r) => ("SKIP", Some(r)),
            };
            out.push_str(tag);
            out.push_str("  ");
            out.push_str(&f.path);
            if let Some(r) = reason {
                out.push_str("  \u{2014} ");
                out.push_str(r);
            }
            out.push('\n');
        }
        out.push_str(&format!(
            "\n{} fixtures, {} passed\n",
            self.fixtures.len(),
            self.passed()
        ));
        out
    }

    /// 0 when every fixture passed, 1 otherwise (a skip is a failure, §C.4).
    pub fn exit_code(&self) -> i32 {
        if self.ok() {
            0
        } else {
            1
        }
    }
}

/// Runs the harness over `root`, displaying paths relative to the current
/// working directory (as the reference does). The caller checks that
/// `root` exists (exit 2 otherwise).
pub fn run(root: &Path) -> Report {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    run_with_base(root, &cwd)
}

/// Like [`run`], with paths displayed relative to `base` instead of the
/// working directory. A relative `root` is resolved against `base`.
pub fn run_with_base(root: &Path, base: &Path) -> Report {
    let base = normalize(base);
    let root = normalize(&base.join(root));
    let mut found: Vec<(PathBuf, Option<Status>)> = Vec::new();
    let mut seen = HashSet::new();
    if root.join("input.noma").is_file() {
        // A single fixture given directly.
        found.push((root.clone(), None));
    } else {
        discover(&root, 0, &mut seen, &mut found);
    }
    let mut fixtures: Vec<FixtureResult> = found
        .into_iter()
        .map(|(dir, pre)| {
            let status = pre.unwrap_or_else(|| check_fixture_guarded(&dir));
            FixtureResult {
                path: display_path(&base, &dir),
                status,
            }
        })
        .collect();
    fixtures.sort_by(|a, b| a.path.cmp(&b.path));
    Report { fixtures }
}

/// Walks `dir`'s subdirectories. `None` status = a fixture still to check.
fn discover(
    dir: &Path,
    depth: usize,
    seen: &mut HashSet<PathBuf>,
    out: &mut Vec<(PathBuf, Option<Status>)>,
) {
    if depth > MAX_DEPTH {
        return;
    }
    // Symlinked directories are followed, but each real directory once.
    if let Ok(real) = fs::canonicalize(dir) {
        if !seen.insert(real) {
            return;
        }
    }
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            out.push((
                dir.to_path_buf(),
                Some(Status::Fail(format!("cannot read directory: {e}"))),
            ));
            return;
        }
    };
    let mut subdirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    subdirs.sort();
    for sub in subdirs {
        if sub.join("input.noma").is_file() {
            out.push((sub, None));
            continue;
        }
        if EXPECTED_FILES
            .iter()
            .chain(["patch.json"].iter())
            .any(|f| sub.join(f).is_file())
        {
            out.push((sub.clone(), Some(Status::Skip("missing input.noma".into()))));
        }
        discover(&sub, depth + 1, seen, out);
    }
}

/// Checks one fixture; a panic in the validator or patch engine becomes a FAIL
/// so one bad fixture cannot take the whole run down.
fn check_fixture_guarded(dir: &Path) -> Status {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check_fixture(dir)))
        .unwrap_or_else(|_| Status::Fail("internal error: the check panicked".into()))
}

/// Evaluates one fixture directory (which must contain `input.noma`).
pub fn check_fixture(dir: &Path) -> Status {
    match check_all(dir) {
        Ok(()) => Status::Pass,
        Err(reason) => Status::Fail(one_line(&reason.to_string())),
    }
}

/// Why a fixture fails.
#[derive(Debug, thiserror::Error)]
enum Failure {
    /// The fixture itself is unreadable or malformed.
    #[error("{0}")]
    Fixture(String),
    /// The implementation disagrees with what the fixture expects.
    #[error("{0}")]
    Mismatch(String),
    /// The patch engine refused a patch the fixture expects to apply.
    #[error("patch rejected: {code} (op {op_index}): {message}")]
    Rejected {
        code: String,
        op_index: usize,
        message: String,
    },
}

fn check_all(dir: &Path) -> Result<(), Failure> {
    let source = read_text(dir, "input.noma")?
        .ok_or_else(|| Failure::Fixture("missing input.noma".into()))?;
    let doc = parse(&source);
    if let Some(v) = read_json(dir, "expected.ids.json")? {
        check_ids(&doc, &v)?;
    }
    if let Some(v) = read_json(dir, "expected.diagnostics.json")? {
        check_diagnostics(&doc, dir, &v)?;
    }
    if let Some(bytes) = read_bytes(dir, "expected.roundtrip.noma")? {
        check_roundtrip(&doc, &bytes)?;
    }
    if let Some(v) = read_json(dir, "expected.spans.json")? {
        check_spans(&doc, &v)?;
    }
    check_patch(dir, &source)
}

fn read_bytes(dir: &Path, name: &str) -> Result<Option<Vec<u8>>, Failure> {
    let path = dir.join(name);
    if !path.is_file() {
        return Ok(None);
    }
    fs::read(&path)
        .map(Some)
        .map_err(|e| Failure::Fixture(format!("cannot read {name}: {e}")))
}

fn read_text(dir: &Path, name: &str) -> Result<Option<String>, Failure> {
    let Some(bytes) = read_bytes(dir, name)? else {
        return Ok(None);
    };
    noma_core::doc::source::decode(name, &bytes)
        .map(|s| Some(s.to_string()))
        .map_err(|e| Failure::Fixture(e.to_string()))
}

fn read_json(dir: &Path, name: &str) -> Result<Option<Value>, Failure> {
    let Some(text) = read_text(dir, name)? else {
        return Ok(None);
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| Failure::Fixture(format!("{name} is not valid JSON: {e}")))
}

fn string_list(v: &Value, what: &str) -> Result<Vec<String>, Failure> {
    v.as_array()
        .and_then(|a| {
            a.iter()
                .map(|x| x.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
        })
        .ok_or_else(|| Failure::Fixture(format!("{what} must be an array of strings")))
}

fn json_list(items: &[String]) -> String {
    serde_json::to_string(items).unwrap_or_default()
}

fn check_ids(doc: &Document, expected: &Value) -> Result<(), Failure> {
    let obj = expected.as_object().ok_or_else(|| {
        Failure::Fixture("expected.ids.json must be an object {canonical, aliases}".into())
    })?;
    let mut want = string_list(
        obj.get("canonical").ok_or_else(|| {
            Failure::Fixture("expected.ids.json has no \"canonical\" list".into())
        })?,
        "expected.ids.json \"canonical\"",
    )?;
    let mut got: Vec<String> = Vec::new();
    let mut got_aliases: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for node in doc.walk() {
        if let Some(id) = &node.id {
            got.push(id.to_string());
            if !node.aliases.is_empty() {
                got_aliases
                    .entry(id.to_string())
                    .or_default()
                    .extend(node.aliases.iter().map(|a| a.to_string()));
            }
        }
    }
    got.sort();
    want.sort();
    if got != want {
        return Err(Failure::Mismatch(format!(
            "ids mismatch: got {}, expected {}",
            json_list(&got),
            json_list(&want)
        )));
    }
    let mut want_aliases: BTreeMap<String, Vec<String>> = BTreeMap::new();
    match obj.get("aliases") {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            for (k, v) in m {
                let list = string_list(v, &format!("expected.ids.json aliases of \"{k}\""))?;
                if !list.is_empty() {
                    want_aliases.insert(k.clone(), list);
                }
            }
        }
        Some(_) => {
            return Err(Failure::Fixture(
                "expected.ids.json \"aliases\" must be an object".into(),
            ))
        }
    }
    // Both maps are compared in full: an alias the fixture does not declare
    // is as much a mismatch as a missing one.
    let keys: std::collections::BTreeSet<&String> =
        got_aliases.keys().chain(want_aliases.keys()).collect();
    for k in keys {
        let mut g = got_aliases.get(k).cloned().unwrap_or_default();
        let mut w = want_aliases.get(k).cloned().unwrap_or_default();
        g.sort();
        w.sort();
        if g != w {
            return Err(Failure::Mismatch(format!(
                "aliases mismatch for \"{k}\": got {}, expected {}",
                json_list(&g),
                json_list(&w)
            )));
        }
    }
    Ok(())
}

fn check_diagnostics(doc: &Document, dir: &Path, expected: &Value) -> Result<(), Failure> {
    let arr = expected.as_array().ok_or_else(|| {
        Failure::Fixture("expected.diagnostics.json must be an array of {code, severity}".into())
    })?;
    let mut want = Vec::with_capacity(arr.len());
    for (i, d) in arr.iter().enumerate() {
        let code = d.get("code").and_then(Value::as_str);
        let sev = d.get("severity").and_then(Value::as_str);
        match (code, sev) {
            (Some(c), Some(s)) => want.push((s.to_string(), c.to_string())),
            _ => {
                return Err(Failure::Fixture(format!(
                    "expected.diagnostics.json entry {i} needs string \"code\" and \"severity\""
                )))
            }
        }
    }
    let opts = noma_core::validate::Options {
        datasets: Some(noma_store::fsio::datasets_in(dir)),
        ..Default::default()
    };
    let diags = noma_core::validate::validate(doc, &opts);
    let mut got: Vec<(String, String)> = diags
        .iter()
        .map(|d| (d.severity.as_str().to_string(), d.code.clone()))
        .collect();
    got.sort();
    want.sort();
    if got != want {
        let show = |v: &[(String, String)]| {
            let items: Vec<String> = v.iter().map(|(s, c)| format!("{s}:{c}")).collect();
            format!("[{}]", items.join(", "))
        };
        return Err(Failure::Mismatch(format!(
            "diagnostics mismatch: got {}, expected {}",
            show(&got),
            show(&want)
        )));
    }
    Ok(())
}

fn check_roundtrip(doc: &Document, expected: &[u8]) -> Result<(), Failure> {
    let rendered = render_noma(doc);
    if rendered.as_bytes() != expected {
        return Err(Failure::Mismatch(format!(
            "roundtrip mismatch: render-noma output differs from expected.roundtrip.noma (first difference on line {})",
            first_diff_line(rendered.as_bytes(), expected)
        )));
    }
    let reparsed = parse(&rendered);
    if !structurally_equal(&reparsed, doc) {
        return Err(Failure::Mismatch(
            "roundtrip property failed: parse(render-noma(parse(x))) !== parse(x)".into(),
        ));
    }
    Ok(())
}

fn check_spans(doc: &Document, expected: &Value) -> Result<(), Failure> {
    let map = expected.as_object().ok_or_else(|| {
        Failure::Fixture(
            "expected.spans.json must be an object mapping id to {startLine, endLine}".into(),
        )
    })?;
    let mut want: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for (id, v) in map {
        let start = v.get("startLine").and_then(Value::as_u64);
        let end = v.get("endLine").and_then(Value::as_u64);
        match (start, end) {
            (Some(s), Some(e)) => {
                want.insert(id.as_str(), (s, e));
            }
            _ => {
                return Err(Failure::Fixture(format!(
                    "expected.spans.json entry \"{id}\" needs integer startLine and endLine"
                )))
            }
        }
    }
    let mut matched: HashSet<&str> = HashSet::new();
    for node in doc.walk() {
        let Some(id) = node.id.as_deref() else {
            continue;
        };
        let Some(&(s, e)) = want.get(id) else {
            continue;
        };
        matched.insert(id);
        let (gs, ge) = (u64::from(node.span.start), u64::from(node.span.end));
        if (gs, ge) != (s, e) {
            return Err(Failure::Mismatch(format!(
                "span mismatch for \"{id}\": got [{gs}, {ge}], expected [{s}, {e}]"
            )));
        }
    }
    // A declared span for an id that does not exist cannot be satisfied.
    if let Some(id) = want.keys().find(|id| !matched.contains(*id)) {
        return Err(Failure::Fixture(format!(
            "span declared for \"{id}\" but no node has that id"
        )));
    }
    Ok(())
}

fn check_patch(dir: &Path, source: &str) -> Result<(), Failure> {
    let post_path = dir.join("expected.post.noma");
    let error_path = dir.join("expected.error.json");
    let Some(patch) = read_json(dir, "patch.json")? else {
        if post_path.is_file() || error_path.is_file() {
            return Err(Failure::Fixture(
                "expected.post.noma/expected.error.json present without patch.json".into(),
            ));
        }
        return Ok(());
    };
    let ops: Vec<Value> = match patch {
        Value::Array(ops) => ops,
        op @ Value::Object(_) => vec![op],
        _ => {
            return Err(Failure::Fixture(
                "patch.json must be a PatchOp object or an array of PatchOps".into(),
            ))
        }
    };
    let has_post = post_path.is_file();
    let has_error = error_path.is_file();
    if has_post && has_error {
        return Err(Failure::Fixture(
            "fixture declares both expected.post.noma and expected.error.json".into(),
        ));
    }
    if has_error {
        let expected = read_json(dir, "expected.error.json")?.unwrap_or(Value::Null);
        let code = expected
            .get("code")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                Failure::Fixture(
                    "expected.error.json must be an object with a string \"code\"".into(),
                )
            })?;
        return match noma_core::patch::apply_ops(source, &ops) {
            Ok(_) => Err(Failure::Mismatch(format!(
                "expected PatchError(\"{code}\"), but patch succeeded"
            ))),
            Err(e) if e.code.as_str() == code => Ok(()),
            Err(e) => Err(Failure::Mismatch(format!(
                "error code mismatch: got \"{}\", expected \"{code}\"",
                e.code.as_str()
            ))),
        };
    }
    let Some(expected) = read_bytes(dir, "expected.post.noma")? else {
        return Err(Failure::Fixture(
            "patch.json present but neither expected.post.noma nor expected.error.json".into(),
        ));
    };
    match noma_core::patch::apply_ops(source, &ops) {
        Ok(out) if out.as_bytes() == expected.as_slice() => Ok(()),
        Ok(out) => Err(Failure::Mismatch(format!(
            "patch output mismatch: differs from expected.post.noma (first difference on line {})",
            first_diff_line(out.as_bytes(), &expected)
        ))),
        Err(e) => Err(Failure::Rejected {
            code: e.code.as_str().to_string(),
            op_index: e.op_index,
            message: e.message.clone(),
        }),
    }
}

/// 1-based line of the first byte where `a` and `b` differ.
fn first_diff_line(a: &[u8], b: &[u8]) -> usize {
    let at = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    a[..at].iter().filter(|&&c| c == b'\n').count() + 1
}

/// Keeps every reason on its own output line.
fn one_line(s: &str) -> String {
    s.replace("\r\n", " ").replace(['\n', '\r'], " ")
}

/// Lexical normalisation (like Node's `path.resolve`): drops `.`, folds `..`.
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// `path` relative to `base`, `/`-separated (Node's `path.relative`).
fn display_path(base: &Path, path: &Path) -> String {
    let b: Vec<Component> = base.components().collect();
    let p: Vec<Component> = path.components().collect();
    let common = b.iter().zip(&p).take_while(|(x, y)| x == y).count();
    if common == 0 && base.is_absolute() {
        return path.to_string_lossy().replace('\\', "/");
    }
    let mut parts: Vec<String> = Vec::new();
    for _ in common..b.len() {
        parts.push("..".into());
    }
    for c in &p[common..] {
        parts.push(c.as_os_str().to_string_lossy().into_owned());
    }
    if parts.is_empty() {
        ".".into()
    } else {
        parts.join("/")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) {
        let p = dir.join(name);
        if let Some(parent) = p.parent() {
            fs::create_dir_all(parent).expect("mkdir");
        }
        fs::write(p, text).expect("write");
    }

    fn fixture(root: &Path, rel: &str, files: &[(&str, &str)]) {
        for (name, text) in files {
            write(&root.join(rel), name, text);
        }
    }

    const INPUT: &str = "# Hello\n\nparagraph.\n";

    #[test]
    fn passes_fails_and_skips_in_path_order() {
        let t = tempfile::tempdir().expect("tmp");
        let root = t.path().join("corpus");
        fixture(
            &root,
            "valid/b-good",
            &[
                ("input.noma", INPUT),
                (
                    "expected.ids.json",
                    r#"{"canonical":["hello"],"aliases":{}}"#,
                ),
                ("expected.diagnostics.json", "[]"),
                ("expected.roundtrip.noma", INPUT),
                (
                    "expected.spans.json",
                    r#"{"hello":{"startLine":1,"endLine":3}}"#,
                ),
            ],
        );
        fixture(
            &root,
            "valid/a-bad-ids",
            &[
                ("input.noma", INPUT),
                (
                    "expected.ids.json",
                    r#"{"canonical":["nope"],"aliases":{}}"#,
                ),
            ],
        );
        fixture(&root, "valid/c-no-input", &[("expected.ids.json", "{}")]);
        let report = run_with_base(Path::new("corpus"), t.path());
        let text = report.render();
        assert_eq!(
            text,
            "FAIL  corpus/valid/a-bad-ids  \u{2014} ids mismatch: got [\"hello\"], expected [\"nope\"]\n\
             PASS  corpus/valid/b-good\n\
             SKIP  corpus/valid/c-no-input  \u{2014} missing input.noma\n\
             \n3 fixtures, 1 passed\n"
        );
        assert_eq!(report.exit_code(), 1);
        // Deterministic.
        assert_eq!(run_with_base(Path::new("corpus"), t.path()).render(), text);
    }

    #[test]
    fn all_pass_exits_zero_and_paths_are_relative_to_base() {
        let t = tempfile::tempdir().expect("tmp");
        fixture(
            t.path(),
            "c/valid/x",
            &[("input.noma", INPUT), ("expected.roundtrip.noma", INPUT)],
        );
        let report = run_with_base(&t.path().join("c"), &t.path().join("c/valid"));
        assert_eq!(report.render(), "PASS  x\n\n1 fixtures, 1 passed\n");
        assert_eq!(report.exit_code(), 0);
    }

    #[test]
    fn broken_expected_files_fail_with_reasons() {
        let t = tempfile::tempdir().expect("tmp");
        let cases: [(&str, &str, &str); 6] = [
            (
                "expected.ids.json",
                "{not json",
                "expected.ids.json is not valid JSON",
            ),
            ("expected.ids.json", "[1]", "must be an object"),
            (
                "expected.diagnostics.json",
                r#"[{"code":1}]"#,
                "needs string",
            ),
            (
                "expected.spans.json",
                r#"{"hello":{"startLine":"1"}}"#,
                "needs integer",
            ),
            (
                "expected.spans.json",
                r#"{"ghost":{"startLine":1,"endLine":1}}"#,
                "no node has that id",
            ),
            ("patch.json", "42", "patch.json must be"),
        ];
        for (i, (name, text, want)) in cases.iter().enumerate() {
            let dir = t.path().join(format!("f{i}"));
            fixture(&dir, "", &[("input.noma", INPUT), (name, text)]);
            match check_fixture(&dir) {
                Status::Fail(r) => assert!(r.contains(want), "{name}: {r}"),
                other => panic!("{name}: expected FAIL, got {other:?}"),
            }
        }
    }

    #[test]
    fn span_and_roundtrip_mismatches() {
        let t = tempfile::tempdir().expect("tmp");
        fixture(
            t.path(),
            "s",
            &[
                ("input.noma", INPUT),
                (
                    "expected.spans.json",
                    r#"{"hello":{"startLine":1,"endLine":2}}"#,
                ),
            ],
        );
        assert_eq!(
            check_fixture(&t.path().join("s")),
            Status::Fail("span mismatch for \"hello\": got [1, 3], expected [1, 2]".into())
        );
        fixture(
            t.path(),
            "r",
            &[
                ("input.noma", INPUT),
                ("expected.roundtrip.noma", "# Hello\n"),
            ],
        );
        assert!(
            matches!(check_fixture(&t.path().join("r")), Status::Fail(r) if r.contains("line 2"))
        );
    }

    #[test]
    fn patch_fixture_needs_an_expectation_and_reports_codes() {
        let t = tempfile::tempdir().expect("tmp");
        fixture(
            t.path(),
            "p",
            &[("input.noma", INPUT), ("patch.json", r#"{"op":"noop"}"#)],
        );
        assert!(
            matches!(check_fixture(&t.path().join("p")), Status::Fail(r) if r.contains("neither"))
        );
        fixture(
            t.path(),
            "both",
            &[
                ("input.noma", INPUT),
                ("patch.json", "[]"),
                ("expected.post.noma", INPUT),
                ("expected.error.json", r#"{"code":"target_missing"}"#),
            ],
        );
        assert!(
            matches!(check_fixture(&t.path().join("both")), Status::Fail(r) if r.contains("both"))
        );
        fixture(
            t.path(),
            "orphan",
            &[("input.noma", INPUT), ("expected.post.noma", INPUT)],
        );
        assert!(
            matches!(check_fixture(&t.path().join("orphan")), Status::Fail(r) if r.contains("without patch.json"))
        );
    }

    #[test]
    fn invalid_utf8_input_fails_cleanly() {
        let t = tempfile::tempdir().expect("tmp");
        let dir = t.path().join("bad");
        fs::create_dir_all(&dir).expect("mkdir");
        fs::write(dir.join("input.noma"), [0x66, 0xff, 0x0a]).expect("write");
        assert!(matches!(check_fixture(&dir), Status::Fail(r) if r.contains("UTF-8")));
    }

    #[test]
    fn display_and_normalize() {
        assert_eq!(
            display_path(Path::new("/a/b"), Path::new("/a/b/c/d")),
            "c/d"
        );
        assert_eq!(display_path(Path::new("/a/b"), Path::new("/a/x")), "../x");
        assert_eq!(display_path(Path::new("/a"), Path::new("/a")), ".");
        assert_eq!(normalize(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
        assert_eq!(one_line("a\nb\r\nc"), "a b c");
    }
}

//! Runs the reference conformance corpus (`../shared/reference/noma/
//! conformance/patch{,-error}`) and this repo's own `conformance/patch{,-error}`
//! fixtures through `noma_core::patch::apply_ops`.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common;

fn ops_of(patch: &Value) -> Vec<Value> {
    match patch {
        Value::Array(items) => items.clone(),
        Value::Object(m) if m.contains_key("ops") && !m.contains_key("op") => m
            .get("ops")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
        other => vec![other.clone()],
    }
}

fn read(p: &Path) -> String {
    fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn dirs(root: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(root)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Runs every fixture under `root`; returns (passed, failures).
fn run_corpus(root: &Path) -> (usize, Vec<String>) {
    let mut failures = Vec::new();
    let mut passed = 0;
    for dir in dirs(&root.join("patch")) {
        let input = read(&dir.join("input.noma"));
        let patch: Value =
            serde_json::from_str(&read(&dir.join("patch.json"))).expect("patch.json");
        let expected = read(&dir.join("expected.post.noma"));
        match noma_core::patch::apply_ops(&input, &ops_of(&patch)) {
            Ok(out) if out == expected => passed += 1,
            Ok(out) => failures.push(format!(
                "{}: got\n{out:?}\nwant\n{expected:?}",
                dir.display()
            )),
            Err(e) => failures.push(format!("{}: unexpected error {e:?}", dir.display())),
        }
    }
    for dir in dirs(&root.join("patch-error")) {
        let input = read(&dir.join("input.noma"));
        let patch: Value =
            serde_json::from_str(&read(&dir.join("patch.json"))).expect("patch.json");
        let want: Value = serde_json::from_str(&read(&dir.join("expected.error.json")))
            .expect("expected.error.json");
        let want = want
            .get("code")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        match noma_core::patch::apply_ops(&input, &ops_of(&patch)) {
            Err(e) if e.code.as_str() == want => passed += 1,
            Err(e) => failures.push(format!(
                "{}: code {} want {want} ({})",
                dir.display(),
                e.code.as_str(),
                e.message
            )),
            Ok(out) => failures.push(format!(
                "{}: applied, want {want}; got {out:?}",
                dir.display()
            )),
        }
    }
    (passed, failures)
}

#[test]
fn reference_patch_fixtures() {
    let Some(reference) = common::shared_reference("reference_patch_fixtures") else {
        return;
    };
    let root = reference.join("noma/conformance");
    let (passed, failures) = run_corpus(&root);
    assert!(
        failures.is_empty(),
        "{} failed:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    assert_eq!(passed, 32, "expected 26 patch + 6 patch-error fixtures");
}

#[test]
fn own_patch_fixtures() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance");
    let (passed, failures) = run_corpus(&root);
    assert!(
        failures.is_empty(),
        "{} failed:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    assert!(passed >= 30, "only {passed} own fixtures ran");
}

//! Every `.noma` document shipped with the reference implementation parses
//! without a panic, and `noma check` finishes on each (exit 0 or 1, never a
//! crash). Skipped visibly when `../shared` is absent (never in CI).

use std::path::{Path, PathBuf};
use std::time::Duration;

use assert_cmd::Command;

use crate::common;

fn noma_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            noma_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "noma") {
            out.push(path);
        }
    }
}

#[test]
fn reference_docs_and_examples_parse_and_check() {
    let Some(reference) = common::shared_reference("reference_docs_and_examples_parse_and_check")
    else {
        return;
    };
    let root = reference.join("noma");
    let mut files = Vec::new();
    noma_files(&root.join("docs"), &mut files);
    noma_files(&root.join("examples"), &mut files);
    files.sort();
    assert!(
        files.len() >= 15,
        "expected the reference docs and examples, found {}",
        files.len()
    );
    for file in &files {
        let text = std::fs::read_to_string(file).expect("reference files are UTF-8");
        let doc = noma_core::doc::parse(&text);
        assert!(doc.end_line >= 1, "{}", file.display());
        let out = Command::cargo_bin("noma")
            .expect("binary")
            .arg("check")
            .arg(file)
            .timeout(Duration::from_secs(60))
            .output()
            .expect("runs");
        let code = out.status.code();
        assert!(
            matches!(code, Some(0) | Some(1)),
            "{}: exit {:?}",
            file.display(),
            code
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{}: {stderr}", file.display());
    }
}

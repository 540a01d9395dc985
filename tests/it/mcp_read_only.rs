//! A read-only `noma mcp` session in a directory that is not a noma
//! repository creates nothing there: no `.noma/cache/` at start or for
//! the read-only tools.

use serde_json::json;

use crate::common::McpClient;

#[test]
fn a_read_only_session_outside_a_repository_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // The directory sits in no git repository: git must not look above it.
    let root = dir.path().join("docs");
    std::fs::create_dir(&root).unwrap();
    let doc = noma_testutil::synth::document(3);
    std::fs::write(root.join("a.noma"), &doc).unwrap();
    let mut s = McpClient::start_with(dir.path(), &["--root", root.to_str().unwrap()]);
    let file = json!({"file": "a.noma"});
    let read = s.ok("read_doc", file.clone());
    assert!(
        read["blocks"].as_array().is_some_and(|b| !b.is_empty()),
        "{read}"
    );
    // A second read hits no cache file either.
    assert_eq!(s.ok("read_doc", file.clone()), read);
    for tool in [
        "list_ids",
        "validate_doc",
        "transcript_read",
        "describe_capabilities",
    ] {
        s.ok(tool, file.clone());
    }
    s.finish();
    let mut names: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["a.noma"], "the session created files");
    assert!(!root.join(".noma").exists());
}

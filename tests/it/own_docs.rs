//! The project guards its own design documents: `noma check .noma/*.noma`
//! passes on them, and with this repository's `.noma/config.yml` the
//! installed pre-commit hook lets them through and refuses one broken,
//! while the deliberately invalid fixtures elsewhere stay out of its scope.

use std::path::Path;

use crate::common::{run_at, text, Repo, NOMA};

fn own_docs() -> Vec<std::path::PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(".noma");
    let mut docs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "noma"))
        .collect();
    docs.sort();
    assert!(docs.len() >= 5, "{docs:?}");
    docs
}

#[test]
fn noma_check_passes_on_the_projects_own_documents() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut args = vec!["check".to_string(), "--strict".to_string()];
    args.extend(
        own_docs()
            .iter()
            .map(|p| p.strip_prefix(root).unwrap().display().to_string()),
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = run_at(root, NOMA, &args);
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn the_hook_refuses_a_broken_design_document_in_this_repositorys_layout() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let r = Repo::init();
    std::fs::create_dir(r.path().join(".noma")).unwrap();
    for doc in own_docs() {
        std::fs::copy(&doc, r.path().join(".noma").join(doc.file_name().unwrap())).unwrap();
    }
    std::fs::copy(
        root.join(".noma/config.yml"),
        r.path().join(".noma/config.yml"),
    )
    .unwrap();
    // An invalid fixture outside .noma/, as examples/ and conformance/ hold.
    r.write(
        "examples/bad.noma",
        "# Bad\n\n::note{id=\"n\"}\nx\n::\n\n::note{id=\"n\"}\ny\n::\n",
    );
    let o = r.noma(&["hooks", "install"]);
    assert!(o.status.success(), "{}", text(&o));
    r.commit_all("the project's documents as they are");

    // A design document with one id defined twice: refused, named.
    let path = r.path().join(".noma/architecture.noma");
    let mut doc = std::fs::read_to_string(&path).unwrap();
    doc.push_str("\n::decision{id=\"crates-split-by-job\" status=\"accepted\" date=\"2026-11-29\"}\nAgain.\n::\n");
    std::fs::write(&path, &doc).unwrap();
    r.ok(&["add", "-A"]);
    let (ok, said) = r.try_commit("a broken decision");
    assert!(
        !ok,
        "the hook let a broken design document through:\n{said}"
    );
    assert!(
        said.contains(".noma/architecture.noma") && said.contains("duplicate"),
        "{said}"
    );
}

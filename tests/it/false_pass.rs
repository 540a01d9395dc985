//! No false pass: what `noma check`, `patch`, `record`, `replay` and
//! `verify` are pointed at must be something they guard, or they refuse.

use crate::common::{text, Repo};

const DOC: &str = "# Plan\n\n::note{id=\"n1\"}\nA note.\n::\n";

#[test]
fn a_path_that_is_not_a_noma_document_is_refused_and_nothing_is_written() {
    let r = Repo::with_genesis_record(DOC);
    r.write("README.md", "# Readme\n\n::note{id=\"n1\"}\nx\n::\n");
    let op = r#"{"op":"delete_block","id":"n1"}"#;
    let runs: [&[&str]; 5] = [
        &["check", "README.md"],
        &["patch", "README.md", "--inplace", "--op", op],
        &["record", "README.md"],
        &["replay", "README.md"],
        &["check", "plan.noma", "README.md"],
    ];
    for args in runs {
        let o = r.noma(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(
            text(&o).contains("README.md is not a .noma document"),
            "{args:?}: {}",
            text(&o)
        );
    }
    assert!(!r.path().join("README.md.patches").exists());
    assert_eq!(
        r.read("README.md"),
        "# Readme\n\n::note{id=\"n1\"}\nx\n::\n"
    );
    // A transcript given for its document names the document.
    let o = r.noma(&["replay", "plan.noma.patches"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("run `noma replay plan.noma`"),
        "{}",
        text(&o)
    );
}

#[test]
fn check_without_a_path_checks_every_document_of_the_repository() {
    let r = Repo::with_genesis_record(DOC);
    r.write("docs/deep/b.noma", "# B\n\nSee [[nowhere]].\n");
    r.write("build/c.noma", "# C\n\nSee [[nowhere]].\n");
    r.write(".gitignore", "build/\n");
    // From the root and from a subdirectory alike: the repository's
    // documents, .gitignore honoured, paths usable from where it ran.
    for (dir, shown) in [(".", "docs/deep/b.noma"), ("docs", "../docs/deep/b.noma")] {
        let o = r.sh(&format!("cd {dir} && noma check"));
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        let said = text(&o);
        assert!(
            said.contains(&format!("ERROR [broken-reference] {shown}:3:1")),
            "{said}"
        );
        assert!(said.contains("plan.noma: 0 error(s)"), "{said}");
        assert!(!said.contains("c.noma"), "{said}");
    }
    std::fs::remove_file(r.path().join("docs/deep/b.noma")).unwrap();
    let o = r.noma(&["check"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

#[test]
fn a_book_manifest_is_checked_chapter_by_chapter_with_book_scoping() {
    let r = Repo::init();
    r.write(
        "chapters/one.noma",
        "# One\n\n## Risks\n\nSee [[two]] and [[two/risks]].\n\n::note{id=\"shared\"}\nx\n::\n",
    );
    r.write(
        "chapters/two.noma",
        "# Two\n\n## Risks\n\nBack to [[one]].\n\n::note{id=\"shared\"}\ny\n::\n",
    );
    r.write(
        "book.noma.yml",
        "title: Book\nchapters:\n  - chapters/one.noma\n  - chapters/two.noma\n",
    );
    let o = r.noma(&["check", "book.noma.yml", "--format", "json"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let files: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["file"].as_str().unwrap())
        .collect();
    assert_eq!(files, ["chapters/one.noma", "chapters/two.noma"]);
    // `## Risks` twice is no clash (scoped one/risks, two/risks), and links
    // across chapters resolve; the directive id both chapters define is.
    assert_eq!(v[0]["diagnostics"], serde_json::json!([]), "{v}");
    let d = &v[1]["diagnostics"];
    assert_eq!(d.as_array().unwrap().len(), 1, "{v}");
    assert_eq!(d[0]["code"], "duplicate-id");
    assert_eq!(d[0]["nodeId"], "shared");
    assert_eq!(d[0]["pos"]["line"], 7);
    assert!(
        d[0]["message"]
            .as_str()
            .unwrap()
            .contains("chapters/one.noma, line 7"),
        "{v}"
    );
    // Without the book the chapter's link to another chapter is broken.
    let o = r.noma(&["check", "chapters/one.noma"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    // A chapter the manifest lists but nobody wrote is an error, not a pass.
    r.write(
        "book.noma.yml",
        "chapters: [chapters/one.noma, chapters/three.noma]\n",
    );
    let o = r.noma(&["check", "book.noma.yml"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("chapters/three.noma"), "{}", text(&o));
}

#[test]
fn verify_of_a_directory_without_fixtures_exits_two() {
    let r = Repo::init();
    r.write("docs/guide.noma", "# Guide\n");
    let o = r.noma(&["verify", "docs"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("no fixtures"), "{}", text(&o));
}

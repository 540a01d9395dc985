//! Rename detection in `noma changed` and the MCP changed-block tools: a
//! document moved with `git mv` is one `renamed` document, with only the
//! blocks that differ between its two versions. Real `git` CLI.

use serde_json::{json, Value};

use crate::common::{text, McpClient, Repo};

const DOC: &str = "# Notes\n\nIntro text.\n\n::claim{id=\"n1\"}\nClaim one.\n::\n\n::claim{id=\"n2\"}\nClaim two.\n::\n\n::claim{id=\"n3\"}\nClaim three.\n::\n\n::note{id=\"n4\"}\nNote four.\n::\n";
const OTHER: &str = "# Other\n\n::note{id=\"o1\"}\nOther one.\n::\n";

/// `main` with `docs/notes.noma` and `plan.noma`; branch `work` with
/// `notes.noma` moved unchanged to `archive/notes.noma` and `plan.noma`
/// moved to `plan-v2.noma` with `o1` edited (the move committed, the edit
/// not, so both states are seen).
fn setup() -> Repo {
    let r = Repo::init();
    r.write(".gitignore", ".noma/cache/\n");
    r.write("docs/notes.noma", DOC);
    r.write(
        "plan.noma",
        &format!("{OTHER}{}", DOC.replace("# Notes\n", "")),
    );
    r.ok(&["add", "-A"]);
    r.ok(&["commit", "-q", "-m", "base"]);
    r.ok(&["checkout", "-q", "-b", "work"]);
    std::fs::create_dir_all(r.path().join("archive")).unwrap();
    r.ok(&["mv", "docs/notes.noma", "archive/notes.noma"]);
    r.ok(&["mv", "plan.noma", "plan-v2.noma"]);
    r.ok(&["commit", "-q", "-m", "move"]);
    let moved = r.read("plan-v2.noma");
    r.write(
        "plan-v2.noma",
        &moved.replace("Other one.", "Other one, edited."),
    );
    r
}

fn changed(r: &Repo, args: &[&str]) -> Value {
    let mut all = vec!["changed", "--base", "main", "--format", "json"];
    all.extend_from_slice(args);
    let o = r.noma(&all);
    assert!(o.status.success(), "{args:?}: {}", text(&o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)))
}

/// (path, old_path, change, block ids with change) per document.
fn summary(v: &Value) -> Vec<(String, String, String, Vec<String>)> {
    v["docs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            let blocks = d["blocks"]
                .as_array()
                .map(|bs| {
                    bs.iter()
                        .map(|b| {
                            format!(
                                "{} {}",
                                b["id"].as_str().unwrap(),
                                b["change"].as_str().unwrap()
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            (
                d["path"].as_str().unwrap().to_string(),
                d["old_path"].as_str().unwrap_or("").to_string(),
                d["change"].as_str().unwrap().to_string(),
                blocks,
            )
        })
        .collect()
}

fn expected() -> Vec<(String, String, String, Vec<String>)> {
    vec![
        (
            "archive/notes.noma".into(),
            "docs/notes.noma".into(),
            "renamed".into(),
            vec![],
        ),
        (
            "plan-v2.noma".into(),
            "plan.noma".into(),
            "renamed".into(),
            vec!["o1 modified".into()],
        ),
    ]
}

#[test]
fn changed_reports_moves_as_renames() {
    let r = setup();
    let v = changed(&r, &[]);
    assert_eq!(summary(&v), expected(), "{v}");
    let notes = &v["docs"][0];
    assert_eq!(notes["sha256"], notes["old_sha256"], "{v}");
    assert_eq!(notes["counts"]["removed"], 0, "{v}");
    assert_eq!(notes["counts"]["added"], 0, "{v}");

    // Naming either path or both keeps the pairing (not a whole document
    // added, or removed); the cache-less path agrees.
    for files in [
        &["plan.noma", "plan-v2.noma"][..],
        &["plan-v2.noma"],
        &["plan.noma"],
    ] {
        for bypass in [&[][..], &["--bypass-cache"]] {
            let v = changed(&r, &[bypass, files].concat());
            assert_eq!(summary(&v), expected()[1..].to_vec(), "{files:?} {v}");
        }
    }

    // --docs and the human forms name both paths.
    let v = changed(&r, &["--docs"]);
    assert_eq!(v["docs"][0]["change"], "renamed", "{v}");
    assert_eq!(v["docs"][0]["old_path"], "docs/notes.noma", "{v}");
    assert_eq!(v["docs"][1]["counts"]["modified"], 1, "{v}");
    let o = r.noma(&["changed", "--base", "main"]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(
        out.contains("archive/notes.noma (renamed from docs/notes.noma: no block changes)"),
        "{out}"
    );
    assert!(
        out.contains("plan-v2.noma (renamed from plan.noma: 1 modified)"),
        "{out}"
    );
    assert!(!out.contains("removed"), "{out}");
    let o = r.noma(&["changed", "--base", "main", "--docs"]);
    assert!(
        text(&o).contains("archive/notes.noma\trenamed from docs/notes.noma\tno block changes"),
        "{}",
        text(&o)
    );

    // A moved document that is then deleted is the old one removed.
    std::fs::remove_file(r.path().join("archive/notes.noma")).unwrap();
    let v = changed(&r, &["--docs"]);
    let gone: Vec<(&str, &str)> = v["docs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["path"].as_str().unwrap(), d["change"].as_str().unwrap()))
        .collect();
    assert!(gone.contains(&("docs/notes.noma", "removed")), "{v}");
}

#[test]
fn mcp_changed_tools_report_moves_as_renames() {
    let r = setup();
    let mut m = McpClient::start(r.path());
    let v = m.ok(
        "get_changed_blocks",
        json!({"base_branch": "main", "bypass_cache": true}),
    );
    assert_eq!(summary(&v), expected(), "{v}");
    let v = m.ok("list_changed_docs", json!({"base_branch": "main"}));
    let docs: Vec<(&str, &str, &str)> = v["docs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["path"].as_str().unwrap(),
                d["old_path"].as_str().unwrap(),
                d["change"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        docs,
        [
            ("archive/notes.noma", "docs/notes.noma", "renamed"),
            ("plan-v2.noma", "plan.noma", "renamed")
        ],
        "{v}"
    );
    assert_eq!(v["docs"][0]["counts"]["added"], 0, "{v}");
    m.finish();
}

//! The small fixes that make an error or a default name the
//! fix: actor names from git, the merge driver without the hooks, "did you
//! mean" for op names and block ids.

use std::fs;

use crate::common::{text, Repo, Sandbox};

const DOC: &str = "# Doc\n\n::claim{id=\"speed\" confidence=0.5}\nFast.\n::\n";

#[test]
fn the_actor_name_defaults_to_git_user_name_then_user() {
    // Repo::init sets user.name "Tester" in the repository and USER=tester.
    let r = Repo::init();
    r.write("d.noma", DOC);
    let op = r#"{"op":"update_attribute","id":"speed","key":"confidence","value":0.9}"#;
    let o = r.noma(&["patch", "d.noma", "--inplace", "--op", op]);
    assert!(o.status.success(), "{}", text(&o));
    let last = |r: &Repo| {
        let t = r.read("d.noma.patches");
        let v: serde_json::Value = serde_json::from_str(t.lines().last().unwrap()).unwrap();
        v["actor"]["name"].as_str().unwrap().to_string()
    };
    assert_eq!(last(&r), "Tester");
    fs::write(r.path().join("d.noma"), DOC.replace("Fast.", "Faster.")).unwrap();
    let o = r.noma(&["record", "d.noma"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(last(&r), "Tester");
    // Without user.name (no repository config, an empty HOME): $USER.
    r.ok(&["config", "--unset", "user.name"]);
    let op = r#"{"op":"update_attribute","id":"speed","key":"confidence","value":0.7}"#;
    let o = r.noma(&["patch", "d.noma", "--inplace", "--op", op]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(last(&r), "tester");
}

#[test]
fn init_no_hooks_and_hooks_install_driver_only_register_the_merge_driver() {
    let s = Sandbox::new();
    for args in [
        &["init", "--no-hooks", "--no-mcp"][..],
        &["hooks", "install", "--driver-only"][..],
    ] {
        let repo = s.repo(&args.join("-"));
        let out = s.noma_ok(&repo, args);
        assert!(out.contains("merge driver: registered"), "{args:?}: {out}");
        let driver = s.git_ok(&repo, &["config", "merge.noma.driver"]);
        assert!(driver.contains("merge-driver"), "{driver}");
        let attrs = fs::read_to_string(repo.join(".gitattributes")).unwrap_or_default()
            + &fs::read_to_string(repo.join(".git/info/attributes")).unwrap_or_default();
        assert!(attrs.contains("merge=noma"), "{attrs}");
        assert!(!repo.join(".git/hooks/pre-commit").exists(), "{args:?}");
        // Status says what is and is not installed.
        let status = s.noma_ok(&repo, &["hooks", "status"]);
        assert!(status.contains("pre-commit: not-installed"), "{status}");
        assert!(status.contains("merge driver: installed"), "{status}");
    }
}

#[test]
fn an_unknown_op_gets_did_you_mean_or_the_op_list() {
    let r = Repo::init();
    r.write("d.noma", DOC);
    let typo = r#"{"op":"update_attributes","id":"speed","key":"confidence","value":0.9}"#;
    let o = r.noma(&["patch", "d.noma", "--op", typo]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("did you mean `update_attribute`?"), "{err}");
    assert!(err.contains("noma schema patch-op"), "{err}");
    let far = r#"{"op":"explode","id":"speed"}"#;
    let o = r.noma(&["patch", "d.noma", "--op", far]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("did you mean"), "{err}");
    assert!(err.contains("replace_block, add_block"), "{err}");
    assert!(err.contains("noma schema patch-op"), "{err}");
}

#[test]
fn an_unknown_block_id_gets_did_you_mean() {
    let r = Repo::init();
    r.write("d.noma", DOC);
    let op = r#"{"op":"update_attribute","id":"sped","key":"confidence","value":0.9}"#;
    let o = r.noma(&["patch", "d.noma", "--op", op]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let all = text(&o);
    assert!(all.contains(r#"did you mean "speed"?"#), "{all}");
    let op = r#"{"op":"delete_block","id":"nothing-like-it"}"#;
    let all = text(&r.noma(&["patch", "d.noma", "--op", op]));
    assert!(
        all.contains("not found") && !all.contains("did you mean"),
        "{all}"
    );
}

#[test]
fn check_dir_checks_the_documents_under_it_honouring_gitignore() {
    let r = Repo::init();
    r.write(".gitignore", "build/\n");
    r.write("a.noma", DOC);
    r.write("sub/b.noma", DOC);
    r.write(".noma/own.noma", DOC);
    r.write("notes.txt", "not a document");
    // Ignored: a broken document there must not fail the check.
    r.write("build/broken.noma", "See [[nowhere]].\n");
    let o = r.noma(&["check", ".", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let files: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["file"].as_str().unwrap())
        .collect();
    assert_eq!(files, ["./.noma/own.noma", "./a.noma", "./sub/b.noma"]);
    // Not ignored any more: the broken document is found and fails.
    r.write(".gitignore", "");
    let o = r.noma(&["check", "."]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("broken.noma"), "{}", text(&o));
    // A directory with no document is an error, not a vacuous pass.
    r.write("empty/readme.txt", "");
    let o = r.noma(&["check", "empty"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("no .noma documents"), "{}", text(&o));
}

#[test]
fn replay_without_a_transcript_names_noma_record() {
    let r = Repo::init();
    r.write("d.noma", DOC);
    let o = r.noma(&["replay", "d.noma"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("`noma record d.noma`"), "{}", text(&o));
}

#[test]
fn a_dry_run_prints_the_changed_lines_and_print_document_the_whole() {
    let r = Repo::init();
    let doc = format!("{DOC}\n## Far away\n\nUnrelated prose stays off the screen.\n");
    r.write("d.noma", &doc);
    let op = r#"{"op":"update_attribute","id":"speed","key":"confidence","value":0.9}"#;
    let o = r.noma(&["patch", "d.noma", "--op", op]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.starts_with("--- d.noma\n+++ d.noma (dry run)\n"),
        "{out}"
    );
    assert!(
        out.contains("\n-::claim{id=\"speed\" confidence=0.5}\n"),
        "{out}"
    );
    assert!(
        out.contains("\n+::claim{id=\"speed\" confidence=0.9}\n"),
        "{out}"
    );
    assert!(!out.contains("Unrelated prose"), "{out}");
    assert_eq!(r.read("d.noma"), doc, "a dry run writes nothing");
    let o = r.noma(&["patch", "d.noma", "--print-document", "--op", op]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        doc.replace("confidence=0.5", "confidence=0.9")
    );
}

#[test]
fn completions_are_generated_for_each_shell_and_the_man_page_covers_every_command() {
    let r = Repo::init();
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let o = r.noma(&["completions", shell]);
        assert!(o.status.success(), "{shell}: {}", text(&o));
        let script = String::from_utf8(o.stdout).unwrap();
        for word in ["reconcile", "print-document", "driver-only", "completions"] {
            assert!(script.contains(word), "{shell} lacks {word}");
        }
        if shell == "bash" {
            // The script parses in the shell it is for.
            r.write("noma.bash", &script);
            let o = r.cmd("bash", &["-n", "noma.bash"]);
            assert!(o.status.success(), "{}", text(&o));
        }
    }
    let o = r.noma(&["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    // The top page names each command's own page (help_adopt checks
    // that every one exists).
    let o = r.noma(&["man"]);
    assert!(o.status.success(), "{}", text(&o));
    let page = String::from_utf8(o.stdout).unwrap();
    assert!(page.contains(".TH noma 1"), "{page}");
    for cmd in ["check", "patch", "reconcile", "hooks", "completions", "man"] {
        assert!(page.contains(&format!("noma\\-{cmd}(1)")), "no {cmd}");
    }
    let patch = String::from_utf8(r.noma(&["man", "patch"]).stdout).unwrap();
    assert!(
        patch.contains("print\\-document"),
        "patch's options are on its page"
    );
    assert!(!page.contains("synth"), "hidden commands stay hidden");
}

#[test]
fn a_missing_file_is_worded_one_way_across_commands() {
    let r = Repo::init();
    r.write("d.noma", DOC);
    let op = r#"{"op":"delete_block","id":"speed"}"#;
    for args in [
        &["check", "nope.noma"][..],
        &["patch", "nope.noma", "--op", op],
        &["patch", "d.noma", "--ops", "nope.json"],
        &["record", "nope.noma"],
        &["replay", "nope.noma"],
        &["blocks", "nope.noma"],
    ] {
        let o = r.noma(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(": no such file"), "{args:?}: {err}");
        assert!(!err.contains("os error"), "{args:?}: {err}");
    }
    let o = r.noma(&["verify", "nope"]);
    assert!(text(&o).contains("nope: no such directory"), "{}", text(&o));
}

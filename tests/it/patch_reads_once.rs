//! A first `noma patch --inplace` asks the repository and its policy once
//! each: the writer's context (work tree, git identity, genesis check,
//! signer) shares one repository handle and one policy read
//! (`noma_git::patch::context`). Counted with `strace`: each open of the
//! repository reads its `.git/config`, each policy read opens
//! `.noma/config.yml`.
#![cfg(target_os = "linux")]

use std::process::Command;

use crate::common::{assert_ran, text, Repo, NOMA};

/// The files the command opened (successful `openat` calls), or `None`
/// when strace cannot run here (outside CI).
fn opened(r: &Repo, args: &[&str]) -> Option<Vec<String>> {
    let trace = r.path().join("strace.out");
    let o = Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=openat", "-o"])
        .arg(&trace)
        .arg(NOMA)
        .args(args)
        .current_dir(r.path())
        .output();
    let o = match o {
        Ok(o) => o,
        Err(e) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI is set but strace cannot run: {e}"
            );
            println!("SKIP patch_reads_once: strace: {e}");
            return None;
        }
    };
    assert_ran(&o);
    let log = std::fs::read_to_string(&trace).expect("strace output");
    std::fs::remove_file(&trace).expect("remove strace output");
    Some(
        log.lines()
            .filter(|l| l.contains("openat(") && !l.contains("= -1"))
            .filter_map(|l| l.split('"').nth(1).map(String::from))
            .collect(),
    )
}

fn count(files: &[String], suffix: &str) -> usize {
    files.iter().filter(|f| f.ends_with(suffix)).count()
}

#[test]
fn a_first_patch_opens_the_repository_and_reads_the_policy_once() {
    let r = Repo::init();
    assert_ran(&r.noma(&["init"]));
    r.write("d.noma", "# D\n\n::note{id=\"a\"}\nhello\n::\n");
    r.commit_all("d");
    let op = r#"{"op":"replace_block","id":"a","content":"::note{id=\"a\"}\nbye\n::"}"#;
    // The transcript's first record, of a committed document: no genesis.
    let Some(files) = opened(&r, &["patch", "d.noma", "--inplace", "--op", op]) else {
        return;
    };
    assert_eq!(count(&files, ".git/config"), 1, "{files:#?}");
    assert_eq!(count(&files, ".noma/config.yml"), 1, "{files:#?}");
    assert_ran(&r.noma(&["replay", "d.noma"]));
    // A document edited since its commit: its transcript opens with a
    // genesis record, which the same one read decides.
    r.write("e.noma", "# E\n\n::note{id=\"b\"}\nhi\n::\n");
    r.commit_all("e");
    r.write("e.noma", "# E\n\n::note{id=\"b\"}\nhi there\n::\n");
    let op = r#"{"op":"replace_block","id":"b","content":"::note{id=\"b\"}\nbye\n::"}"#;
    let files = opened(&r, &["patch", "e.noma", "--inplace", "--op", op]).expect("strace ran");
    assert_eq!(count(&files, ".git/config"), 1, "{files:#?}");
    assert_eq!(count(&files, ".noma/config.yml"), 1, "{files:#?}");
    let o = r.noma(&["replay", "e.noma"]);
    assert_ran(&o);
    let t = std::fs::read_to_string(r.path().join("e.noma.patches")).expect("transcript");
    assert_eq!(
        t.lines().count(),
        2,
        "genesis and the patch:\n{t}\n{}",
        text(&o)
    );
}

//! What a newcomer reads and meets first: `noma patch --help` names every
//! op with an example that works, one man page per subcommand with EXIT
//! STATUS and EXAMPLES and no dangling `noma-xxx(1)`, the completions help
//! lists every shell it takes, bookkeeping answers end their line, the
//! pre-commit line only when something was checked; `noma init` in a
//! repository that already holds documents, and `noma hooks uninstall` in
//! a teammate's clone.
#![cfg(unix)]

use std::collections::BTreeSet;
use std::fs;

use crate::common::{text, Repo, Sandbox};

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The subcommands `noma --help` lists.
fn subcommands(r: &Repo) -> Vec<String> {
    stdout(&r.noma(&["--help"]))
        .lines()
        .skip_while(|l| l.trim() != "Commands:")
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .filter(|n| n != "help")
        .collect()
}

#[test]
fn man_pages_one_per_subcommand_with_exit_status_and_examples_and_no_dangling_reference() {
    let r = Repo::init();
    let o = r.noma(&["man", "--dir", "man"]);
    assert!(o.status.success(), "{}", text(&o));
    let dir = r.path().join("man");
    let pages: BTreeSet<String> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let subs = subcommands(&r);
    assert!(subs.len() >= 20, "{subs:?}");
    for sub in subs
        .iter()
        .map(|s| format!("noma-{s}.1"))
        .chain(["noma.1".into()])
    {
        assert!(pages.contains(&sub), "no {sub} in {pages:?}");
    }
    let reference = regex::Regex::new(r"\b(noma(?:\\?-[a-z-]+)*)\((1)\)").unwrap();
    for page in &pages {
        let roff = fs::read_to_string(dir.join(page)).unwrap();
        let exits = roff.split(".SH \"EXIT STATUS\"").nth(1).unwrap_or_default();
        let examples = roff.split(".SH EXAMPLES").nth(1).unwrap_or_default();
        assert!(
            exits.contains(".TP\n\\fB0\\fR"),
            "{page}: no EXIT STATUS 0\n{roff}"
        );
        assert!(
            examples.contains("\\fBnoma ") || examples.contains("\\fBgit "),
            "{page}: no EXAMPLES\n{roff}"
        );
        for c in reference.captures_iter(&roff) {
            let name = c[1].replace("\\-", "-");
            assert!(
                pages.contains(&format!("{name}.1")),
                "{page} refers to {name}(1)"
            );
        }
    }
    // `noma man SUB...` prints the same page; an unknown one is a usage error.
    let check = r.noma(&["man", "hooks", "install"]);
    assert_eq!(
        stdout(&check),
        fs::read_to_string(dir.join("noma-hooks-install.1")).unwrap()
    );
    let o = r.noma(&["man", "frob"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("no page `noma-frob`"), "{}", text(&o));
    // man(1) renders every page without a warning, where it is installed.
    if r.cmd("sh", &["-c", "command -v man"]).status.success() {
        for page in &pages {
            let path = dir.join(page);
            let o = r.cmd("man", &["-l", path.to_str().unwrap()]);
            assert!(
                o.status.success() && o.stderr.is_empty(),
                "{page}: {}",
                text(&o)
            );
            assert!(stdout(&o).contains("EXIT STATUS"), "{page}");
        }
    }
}

/// A document with what the help's examples address: a section `goals`, a
/// claim `c1`, a table `t1` with a header row, a CSV dataset `d1`.
const SAMPLE: &str = "# Plan\n\n## Goals\n\n::claim{id=\"c1\" confidence=0.5}\nShip it.\n::\n\n\
::table{id=\"t1\" header}\n| Name | Owner |\n| api | ann |\n::\n\n\
::dataset{id=\"d1\" format=\"csv\"}\nname,value\na,1\n::\n";

#[test]
fn patch_help_names_every_op_with_an_example_that_applies() {
    let r = Repo::init();
    let schema: serde_json::Value =
        serde_json::from_slice(&r.noma(&["schema", "patch-op"]).stdout).unwrap();
    let catalogue: BTreeSet<String> = schema["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|o| o["properties"]["op"]["const"].as_str().map(String::from))
        .collect();
    assert_eq!(catalogue.len(), 25, "{catalogue:?}");
    let help = stdout(&r.noma(&["patch", "--help"]));
    let prefix = "noma patch doc.noma --inplace --op '";
    let examples: Vec<&str> = help
        .lines()
        .filter_map(|l| l.trim().strip_prefix(prefix)?.strip_suffix('\''))
        .collect();
    let named: BTreeSet<String> = examples
        .iter()
        .map(|e| serde_json::from_str::<serde_json::Value>(e).unwrap()["op"].to_string())
        .map(|n| n.trim_matches('"').to_string())
        .collect();
    assert_eq!(named, catalogue, "{help}");
    assert_eq!(examples.len(), 25);
    r.write("doc.noma", SAMPLE);
    for op in &examples {
        let o = r.noma(&["patch", "doc.noma", "--inplace", "--op", op]);
        assert!(o.status.success(), "{op}: {}", text(&o));
        assert!(stdout(&o).starts_with("applied "), "{op}: {}", text(&o));
    }
    assert!(r.noma(&["check", "doc.noma"]).status.success());
    // The short help points at the long one.
    assert!(stdout(&r.noma(&["patch", "-h"])).contains("`noma patch --help` lists the 25 ops"));
}

#[test]
fn completions_help_lists_every_shell_it_accepts_and_human_format_says_no_finding() {
    let r = Repo::init();
    let help = stdout(&r.noma(&["completions", "--help"]));
    let top = stdout(&r.noma(&["--help"]));
    for shell in ["bash", "elvish", "fish", "powershell", "zsh"] {
        let o = r.noma(&["completions", shell]);
        assert!(o.status.success() && !o.stdout.is_empty(), "{shell}");
        assert!(
            help.contains(shell) && top.contains(shell),
            "{shell} not listed:\n{help}"
        );
    }
    assert_eq!(r.noma(&["completions", "tcsh"]).status.code(), Some(2));
    for cmd in ["changed", "blocks", "record", "hooks status"] {
        let args: Vec<&str> = cmd.split(' ').chain(["--help"]).collect();
        let h = stdout(&r.noma(&args));
        assert!(!h.contains("one line per finding"), "{cmd}: {h}");
    }
}

#[test]
fn bookkeeping_answers_end_their_line_and_the_hook_is_quiet_when_nothing_was_checked() {
    let r = Repo::with_genesis_record("# Plan\n\n::note{id=\"a\"}\nalpha\n::\n");
    for flag in ["--mark-reconciled", "--snapshot", "--clear"] {
        let o = r.noma(&["changed", "--base", "main", flag]);
        assert!(o.status.success(), "{flag}: {}", text(&o));
        let out = stdout(&o);
        assert!(!out.is_empty() && out.ends_with('\n'), "{flag}: {out:?}");
    }
    r.write("notes.txt", "not a document\n");
    r.ok(&["add", "notes.txt"]);
    let (ok, out) = r.try_commit("no document");
    assert!(ok, "{out}");
    assert!(!out.contains("noma pre-commit"), "{out}");
    r.write("plan.noma", "# Plan\n\n::note{id=\"a\"}\nbeta\n::\n");
    assert!(r.noma(&["record", "plan.noma"]).status.success());
    r.ok(&["add", "-A"]);
    let (ok, out) = r.try_commit("a recorded edit");
    assert!(ok, "{out}");
    assert!(
        out.contains("noma pre-commit: 1 document(s), 1 transcript(s) checked"),
        "{out}"
    );
}

#[test]
fn init_lists_documents_without_transcript_and_record_existing_guards_them() {
    let r = Repo::init();
    r.write("a.noma", "# A\n\n::note{id=\"n\"}\nalpha\n::\n");
    r.write("docs/b.noma", "# B\n\nSome prose.\n");
    r.write("c.noma", "# C\n");
    assert!(r.noma(&["record", "c.noma"]).status.success());
    r.ok(&["add", "-A"]);
    r.ok(&["commit", "-q", "-m", "documents before noma"]);

    let o = r.noma(&["init"]);
    assert!(o.status.success(), "{}", text(&o));
    let out = stdout(&o);
    assert!(out.contains("documents without a transcript: 2"), "{out}");
    assert!(out.contains("\n  a.noma\n  docs/b.noma\n"), "{out}");
    assert!(!out.contains("  c.noma\n"), "{out}");
    assert!(out.contains("noma init --record-existing"), "{out}");
    assert!(out.contains("require_transcript"), "{out}");
    assert!(
        !r.path().join("a.noma.patches").exists(),
        "listing writes nothing"
    );

    let o = r.noma(&["init", "--record-existing"]);
    assert!(o.status.success(), "{}", text(&o));
    let out = stdout(&o);
    assert!(out.contains("a.noma: started"), "{out}");
    assert!(out.contains("docs/b.noma: started"), "{out}");
    r.commit_all("start the transcripts");
    // Now guarded: a hand edit nobody recorded is blocked.
    r.write("a.noma", "# A\n\n::note{id=\"n\"}\nchanged by hand\n::\n");
    r.ok(&["add", "a.noma"]);
    let (ok, out) = r.try_commit("unrecorded");
    assert!(!ok, "{out}");
    assert!(out.contains("noma record"), "{out}");
    let again = stdout(&r.noma(&["init"]));
    assert!(!again.contains("without a transcript"), "{again}");
}

#[test]
fn uninstall_in_a_teammates_clone_leaves_the_committed_gitattributes() {
    let s = Sandbox::new();
    let origin = s.repo("origin");
    s.noma_ok(&origin, &["init"]);
    s.git_ok(&origin, &["add", "-A"]);
    s.git_ok(&origin, &["commit", "-q", "-m", "noma init"]);
    s.git_ok(s.root(), &["clone", "-q", "origin", "clone"]);
    let clone = s.root().join("clone");
    for (k, v) in [("user.name", "Mate"), ("user.email", "m@example.com")] {
        s.git_ok(&clone, &["config", k, v]);
    }
    s.noma_ok(&clone, &["init"]);
    let committed = fs::read_to_string(clone.join(".gitattributes")).unwrap();
    assert!(committed.contains("*.noma merge=noma"), "{committed}");

    let out = s.noma_ok(&clone, &["hooks", "uninstall"]);
    assert_eq!(
        fs::read_to_string(clone.join(".gitattributes")).unwrap(),
        committed
    );
    assert_eq!(s.git_ok(&clone, &["status", "--porcelain"]), "");
    assert!(
        out.contains("merge=noma lines of .gitattributes stay"),
        "{out}"
    );
    assert!(out.contains("--gitattributes"), "{out}");
    assert!(!s
        .git(&clone, &["config", "merge.noma.driver"])
        .status
        .success());
    assert!(!clone.join(".git/hooks/pre-commit").exists());

    // Asked explicitly, it edits the committed file and says to commit it.
    let out = s.noma_ok(&clone, &["hooks", "uninstall", "--gitattributes"]);
    let now = fs::read_to_string(clone.join(".gitattributes")).unwrap();
    assert!(!now.contains("merge=noma"), "{now}");
    assert!(
        out.contains("removed noma's lines from the committed .gitattributes"),
        "{out}"
    );
}

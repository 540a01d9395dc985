//! Documents and transcripts survive checkouts that convert line
//! endings (`core.autocrlf=true`, Git for Windows' default, and `input`).
//! Real `git` and the real binary; the hooks are the ones `noma init`
//! installs.

use crate::common::{text, Repo};

use std::fs;

fn doc() -> String {
    "# Plan\n\n::note{id=\"a\"}\nalpha\n::\n\nSome prose.\n\n::note{id=\"b\"}\nbeta\n::\n".into()
}

fn replace_op(id: &str, body: &str) -> String {
    serde_json::json!({
        "op": "replace_block",
        "id": id,
        "content": format!("::note{{id=\"{id}\"}}\n{body}\n::"),
    })
    .to_string()
}

fn patch(r: &Repo, op: &str) {
    let o = r.noma(&["patch", "plan.noma", "--inplace", "--op", op]);
    assert!(o.status.success(), "patch: {}", text(&o));
}

/// A clone of `origin` made with `git clone -c core.autocrlf=<mode>`.
fn clone(origin: &Repo, autocrlf: &str) -> Repo {
    let r = Repo {
        dir: tempfile::tempdir().unwrap(),
        home: tempfile::tempdir().unwrap(),
    };
    let src = origin.path().to_str().unwrap().to_string();
    let setting = format!("core.autocrlf={autocrlf}");
    r.ok(&["clone", "-q", "-c", &setting, &src, "."]);
    r.ok(&["config", "user.name", "Tester"]);
    r.ok(&["config", "user.email", "t@example.com"]);
    r.ok(&["config", "commit.gpgsign", "false"]);
    r
}

#[test]
fn autocrlf_checkouts_keep_documents_and_transcripts_byte_exact() {
    let origin = Repo::init();
    let o = origin.noma(&["init"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("line endings"), "{}", text(&o));
    let attrs = origin.read(".gitattributes");
    assert!(
        attrs.contains("*.noma -text\n") && attrs.contains("*.noma.patches -text\n"),
        "{attrs}"
    );
    origin.write("plan.noma", &doc());
    // A plain text file: shows that this git does convert on checkout.
    origin.write("notes.txt", "one\ntwo\n");
    origin.commit_all("base");
    patch(&origin, &replace_op("a", "ALPHA"));
    origin.commit_all("patched");
    let st = origin.noma(&["hooks", "status"]);
    assert!(
        text(&st).contains("line endings: byte-exact"),
        "{}",
        text(&st)
    );

    for mode in ["true", "input"] {
        let c = clone(&origin, mode);
        if mode == "true" {
            assert_eq!(c.read("notes.txt"), "one\r\ntwo\r\n", "autocrlf is active");
        }
        for f in ["plan.noma", "plan.noma.patches"] {
            assert_eq!(
                fs::read(c.path().join(f)).unwrap(),
                fs::read(origin.path().join(f)).unwrap(),
                "{f} with core.autocrlf={mode}"
            );
        }
        let o = c.noma(&["hooks", "install"]);
        assert!(o.status.success(), "{}", text(&o));
        assert!(
            text(&o).contains("byte-exact; nothing to do"),
            "the rules came with the clone: {}",
            text(&o)
        );
        patch(&c, &replace_op("b", &format!("BETA {mode}")));
        c.commit_all(&format!("patched in a {mode} clone"));
        let o = c.noma(&["hook", "pre-commit"]);
        assert!(o.status.success(), "{}", text(&o));
        // The committed bytes are the working tree's, which the transcript hashed.
        for f in ["plan.noma", "plan.noma.patches"] {
            let o = c.git(&["show", &format!("HEAD:{f}")]);
            assert_eq!(o.stdout, fs::read(c.path().join(f)).unwrap(), "{f}");
        }
    }
}

#[test]
fn rules_are_appended_once_after_the_teams_and_reported() {
    let r = Repo::init();
    r.write(".gitattributes", "* text=auto\n*.png binary\n");
    let st = r.noma(&["hooks", "status"]);
    assert!(
        text(&st).contains("line endings: NOT byte-exact"),
        "{}",
        text(&st)
    );
    let o = r.noma(&["init", "--no-hooks", "--no-mcp"]);
    assert!(o.status.success(), "{}", text(&o));
    let once = r.read(".gitattributes");
    assert!(
        once.starts_with("* text=auto\n*.png binary\n# noma"),
        "{once}"
    );
    // --no-hooks still registers the merge driver (decision
    // `driver-without-hooks`): its rules follow the line-ending ones.
    assert!(
        once.ends_with("*.noma -text\n*.noma.patches -text\n# noma merge driver (added by `noma hooks install`)\n*.noma merge=noma\n*.noma.patches merge=noma\n*.noma.provenance merge=union\n"),
        "{once}"
    );
    // Re-running init or installing the hooks adds nothing.
    assert!(r.noma(&["init", "--no-mcp"]).status.success());
    assert!(r.noma(&["hooks", "install"]).status.success());
    let again = r.read(".gitattributes");
    assert_eq!(again.matches("-text").count(), 2, "{again}");
    assert!(again.starts_with(&once), "{again}");
    // git agrees: no conversion for either kind of file.
    let o = r.git(&["check-attr", "text", "--", "d.noma", "d.noma.patches"]);
    let out = text(&o);
    assert!(
        out.contains("d.noma: text: unset") && out.contains("d.noma.patches: text: unset"),
        "{out}"
    );
    let v: serde_json::Value =
        serde_json::from_slice(&r.noma(&["hooks", "status", "--format", "json"]).stdout).unwrap();
    assert_eq!(v["line_endings"]["byte_exact"], true, "{v}");
}

/// A repository whose rules came after a Windows clone was made: the
/// clone's documents were checked out with CRLF. Installing the hooks
/// there restores the committed bytes of the files git converted (and
/// only those), so the first commit does not convert every line, and the
/// agent's transcript starts from a committed version.
#[test]
fn installing_in_a_converted_clone_restores_the_committed_bytes() {
    let origin = Repo::init();
    origin.write("plan.noma", &doc());
    origin.write("notes.noma", "# Notes\n\nSome notes.\n");
    assert!(origin.noma(&["record", "plan.noma"]).status.success());
    origin.commit_all("documents, before any rules");
    let c = clone(&origin, "true");
    assert_eq!(
        c.read("notes.noma"),
        "# Notes\r\n\r\nSome notes.\r\n",
        "converted"
    );
    // Recording the conversion would commit every line anew: refused, and
    // the message names the command that restores the bytes.
    let before = c.read("plan.noma.patches");
    let o = c.noma(&["record", "plan.noma"]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("only by CRLF line endings") && text(&o).contains("noma hooks install"),
        "{}",
        text(&o)
    );
    assert_eq!(c.read("plan.noma.patches"), before);
    // A person's edit on top of the conversion is theirs: left alone.
    c.write("notes.noma", "# Notes\r\n\r\nSome notes, edited.\r\n");
    // The rules arrive (as a pull would bring them): the checkout stays
    // converted, which the status names.
    c.write(".gitattributes", "*.noma -text\n*.noma.patches -text\n");
    let st = text(&c.noma(&["hooks", "status"]));
    assert!(
        st.contains("but 2 checked-out file(s) still hold the CRLF")
            && st.contains("plan.noma, plan.noma.patches"),
        "{st}"
    );
    let v: serde_json::Value =
        serde_json::from_slice(&c.noma(&["hooks", "status", "--format", "json"]).stdout).unwrap();
    assert_eq!(
        v["line_endings"]["converted"],
        serde_json::json!(["plan.noma", "plan.noma.patches"]),
        "{v}"
    );
    let o = c.noma(&["hooks", "install"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("restored the committed bytes of 2 checked-out file(s)"),
        "{}",
        text(&o)
    );
    for f in ["plan.noma", "plan.noma.patches"] {
        assert_eq!(
            fs::read(c.path().join(f)).unwrap(),
            fs::read(origin.path().join(f)).unwrap(),
            "{f}"
        );
    }
    assert!(c.read("notes.noma").contains("edited.\r\n"));
    let st = c.ok(&["status", "--short"]);
    assert!(!st.contains("plan.noma"), "{st}");
    patch(&c, &replace_op("a", "ALPHA"));
    c.ok(&["add", "plan.noma", "plan.noma.patches", ".gitattributes"]);
    let (ok, out) = c.try_commit("agent patch in a converted clone");
    assert!(ok, "{out}");
    assert!(!out.contains("WARNING"), "{out}");
    let o = c.git(&["show", "HEAD:plan.noma"]);
    assert!(!o.stdout.contains(&b'\r'), "committed as LF");
    // Installing again finds nothing to restore.
    let o = c.noma(&["hooks", "install"]);
    assert!(!text(&o).contains("restored"), "{}", text(&o));
    // A conversion staged anyway (an editor saving CRLF, `git add`) is
    // named as what it is, and the printed fix undoes it.
    let lf = c.read("plan.noma");
    c.write("plan.noma", &lf.replace('\n', "\r\n"));
    c.ok(&["add", "plan.noma"]);
    let (ok, out) = c.try_commit("converted");
    assert!(!ok, "{out}");
    let o = c.sh(&crate::common::fix_of(&out, "line-endings-converted"));
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(c.read("plan.noma"), lf);
    let st = c.ok(&["status", "--short"]);
    assert!(!st.contains("plan.noma"), "{st}");
}

/// How git treats the line endings of a repository's documents.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Git {
    /// `noma init`'s `-text` rules, no `core.autocrlf`: git commits a
    /// document's bytes as they are.
    Plain,
    /// `core.autocrlf=true` and no `-text` rules: git commits LF.
    AutoCrlf,
}

/// A repository with the hooks installed, set up as `git` says, and
/// `plan.noma` (`doc`) committed; with its genesis record when `recorded`.
fn eol_repo(git: Git, doc: &str, recorded: bool) -> Repo {
    let r = Repo::init();
    let o = r.noma(&["init", "--no-mcp"]);
    assert!(o.status.success(), "{}", text(&o));
    if git == Git::AutoCrlf {
        let attrs: String = r
            .read(".gitattributes")
            .lines()
            .filter(|l| !l.ends_with(" -text"))
            .map(|l| format!("{l}\n"))
            .collect();
        r.write(".gitattributes", &attrs);
        r.ok(&["config", "core.autocrlf", "true"]);
    }
    r.write("plan.noma", doc);
    if recorded {
        let o = r.noma(&["record", "plan.noma"]);
        assert!(o.status.success(), "genesis: {}", text(&o));
    }
    r.commit_all("plan");
    r
}

/// The parsed `noma record --format json` of plan.noma, which must succeed.
fn record_json(r: &Repo) -> serde_json::Value {
    let o = r.noma(&["record", "plan.noma", "--format", "json"]);
    assert!(o.status.success(), "{}", text(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// An editor saves the document with CRLF line endings (or LF, over a
/// CRLF document) and one word of one block changed. `noma record`
/// records that one block, the commit passes the hook, and the committed
/// transcript replays to the committed bytes: the file given back its
/// recorded line endings where git commits bytes as they are, the LF text
/// git makes of it under `core.autocrlf=true`. Before, the record
/// rewrote every line (`x-noma/replace_lines` of the whole document) and
/// the hook listed every block as changed.
#[test]
fn a_crlf_save_plus_one_edit_is_recorded_as_that_one_block() {
    let lf = doc();
    let crlf = lf.replace('\n', "\r\n");
    // (git, the committed document, the editor's save, a transcript first)
    let cases = [
        (Git::Plain, &lf, &crlf, true),
        (Git::Plain, &lf, &crlf, false),
        (Git::AutoCrlf, &lf, &crlf, true),
        (Git::Plain, &crlf, &lf, true),
    ];
    for (git, committed, saved, recorded) in cases {
        let case = format!("{git:?}, saved {:?}, transcript {recorded}", &saved[..8]);
        let r = eol_repo(git, committed, recorded);
        let before = if recorded {
            r.read("plan.noma.patches").lines().count()
        } else {
            0
        };
        r.write("plan.noma", &saved.replace("beta", "BETA"));
        // Without a transcript (none required) the hook has nothing to
        // compare the edit with.
        if recorded {
            r.ok(&["add", "-A"]);
            let (ok, out) = r.try_commit("unrecorded");
            assert!(!ok, "{case}: {out}");
            assert!(
                out.contains("[unrecorded-edit] plan.noma:9:1: changed outside its transcript: blocks b (changed, line 9)"),
                "{case}: only the edited block is named: {out}"
            );
            if git == Git::Plain {
                assert!(
                    out.contains(&format!(
                        "saved with {} line endings where its transcript's state has {}",
                        if saved.contains('\r') { "CRLF" } else { "LF" },
                        if committed.contains('\r') {
                            "CRLF"
                        } else {
                            "LF"
                        },
                    )),
                    "{case}: {out}"
                );
            }
        }

        let v = record_json(&r);
        let ops = v["ops"].as_array().unwrap();
        let edits = if recorded { &ops[..] } else { &ops[1..] };
        assert_eq!(edits.len(), 1, "{case}: {v}");
        assert_eq!(edits[0]["op"], "replace_body", "{case}: {v}");
        assert_eq!(edits[0]["id"], "b", "{case}: {v}");
        let l = &v["line_endings"];
        assert_eq!(
            l["saved"],
            if saved.contains('\r') { "crlf" } else { "lf" },
            "{case}: {v}"
        );
        match git {
            Git::Plain => {
                assert_eq!(l["rewritten"], true, "{case}: {v}");
                assert!(l.get("git_converts").is_none(), "{case}: {v}");
                // The file has its recorded line endings back, the edit kept.
                assert_eq!(
                    r.read("plan.noma"),
                    committed.replace("beta", "BETA"),
                    "{case}"
                );
            }
            Git::AutoCrlf => {
                assert_eq!(l["rewritten"], false, "{case}: {v}");
                assert_eq!(l["git_converts"], "core.autocrlf=true", "{case}: {v}");
                assert_eq!(
                    r.read("plan.noma"),
                    saved.replace("beta", "BETA"),
                    "{case}: left as saved"
                );
            }
        }
        let t = r.read("plan.noma.patches");
        assert_eq!(
            t.lines().count(),
            before + usize::from(!recorded) + 1,
            "{case}: one record for the edit: {t}"
        );
        let (ok, out) = {
            r.ok(&["add", "-A"]);
            r.try_commit("recorded")
        };
        assert!(ok, "{case}: {out}");
        let o = r.git(&["show", "HEAD:plan.noma"]);
        assert_eq!(
            String::from_utf8(o.stdout).unwrap(),
            committed.replace("beta", "BETA"),
            "{case}: committed with the recorded line endings"
        );
        let o = r.noma(&["replay", "--rev", "HEAD", "plan.noma"]);
        assert!(
            o.status.success() && text(&o).contains("ok: replay reproduces the document"),
            "{case}: {}",
            text(&o)
        );
    }
}

/// A save that changed only the line endings is named as such, by the
/// hook and by `noma record`, and each one's next step works: where git
/// commits bytes as they are, `noma record` gives the file back its
/// recorded line endings (the hook's fix); under `core.autocrlf=true`
/// git converts them back itself, and `noma record` says which setting
/// does. Before, the messages blamed a checkout in every case, and
/// `noma record` refused where it could restore.
#[test]
fn a_crlf_save_alone_is_named_as_a_line_ending_change() {
    let lf = doc();
    let crlf = lf.replace('\n', "\r\n");

    let r = eol_repo(Git::Plain, &lf, true);
    let t = r.read("plan.noma.patches");
    r.write("plan.noma", &crlf);
    r.ok(&["add", "-A"]);
    let (ok, out) = r.try_commit("line endings");
    assert!(!ok, "{out}");
    assert!(
        out.contains("[line-endings-converted] plan.noma: the staged document is the state its transcript ends at with CRLF line endings instead of LF, and nothing else changed: an editor saved it so"),
        "{out}"
    );
    let fix = crate::common::fix_of(&out, "line-endings-converted");
    let o = r.sh(&fix);
    assert!(o.status.success(), "{fix}: {}", text(&o));
    assert!(
        text(&o).contains("plan.noma: saved with CRLF line endings, where its recorded state has LF: gave it back its LF line endings")
            && text(&o).contains("nothing else changed, nothing to record"),
        "{}",
        text(&o)
    );
    assert_eq!(r.read("plan.noma"), lf);
    assert_eq!(r.read("plan.noma.patches"), t, "nothing recorded");
    let st = r.ok(&["status", "--short"]);
    assert!(st.is_empty(), "{st}");
    let v = {
        r.write("plan.noma", &crlf);
        record_json(&r)
    };
    assert_eq!(v["result"], "line_endings_restored", "{v}");
    assert_eq!(v["line_endings"]["saved"], "crlf", "{v}");
    assert_eq!(v["line_endings"]["recorded"], "lf", "{v}");

    let r = eol_repo(Git::AutoCrlf, &lf, true);
    r.write("plan.noma", &crlf);
    let o = r.noma(&["record", "plan.noma"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("differs from the state its transcript ends at only by CRLF line endings, which git converts back on commit (core.autocrlf=true)")
            && text(&o).contains("noma hooks install"),
        "{}",
        text(&o)
    );
    // Git commits the LF the transcript ends at: nothing to block.
    r.ok(&["add", "-A"]);
    let st = r.ok(&["status", "--short"]);
    assert!(st.is_empty(), "{st}");
}

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

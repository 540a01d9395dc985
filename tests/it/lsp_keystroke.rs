//! `noma lsp` between keystrokes: what it keeps from one analysis to the
//! next (the blocks' digests, the compiled policy) never shows a stale
//! verdict. Edits, a burst of them, a whole-text change and a return to
//! the recorded text name the blocks the transcript's state differs in;
//! an edit of `.noma/config.yml` shows on the next keystroke.

use serde_json::{json, Value};

use crate::common::{Repo, NOMA};
use crate::lsp_client::Lsp;

const DOC: &str = "---\ntitle: T\n---\n\n# T\n\n## A\n\n::claim{id=\"c1\"}\nOne.\n::\n\n::evidence{id=\"e1\" for=\"c1\"}\nRun.\n::\n\n## B\n\n::claim{id=\"c2\"}\nTwo.\n::\n\n::evidence{id=\"e2\" for=\"c2\"}\nRun.\n::\n";

/// A repository holding `d.noma` with a one-record transcript, committed.
fn recorded() -> (Repo, String) {
    let repo = Repo::init();
    std::fs::write(repo.path().join("d.noma"), DOC).unwrap();
    std::fs::write(
        repo.path().join("ops.json"),
        r#"[{"op":"update_attribute","id":"c1","key":"confidence","value":0.5}]"#,
    )
    .unwrap();
    let o = repo.cmd(NOMA, &["patch", "d.noma", "--inplace", "--ops", "ops.json"]);
    assert!(o.status.success(), "{}", crate::common::text(&o));
    std::fs::remove_file(repo.path().join("ops.json")).unwrap();
    repo.ok(&["add", "-A"]);
    repo.ok(&["commit", "-qm", "d", "--no-verify"]);
    let text = std::fs::read_to_string(repo.path().join("d.noma")).unwrap();
    (repo, text)
}

/// The diagnostics published for `uri` after everything sent so far (a
/// request flushes the pending analysis first).
fn diagnostics(lsp: &mut Lsp, uri: &str) -> Vec<Value> {
    lsp.request(
        "textDocument/documentSymbol",
        json!({"textDocument": {"uri": uri}}),
    );
    lsp.last_diagnostics(uri)
        .and_then(|d| d.as_array().cloned())
        .unwrap_or_default()
}

/// The ids (or `-` for the whole document) of the `unrecorded-edit`
/// diagnostics, in order.
fn unrecorded(diags: &[Value]) -> Vec<String> {
    diags
        .iter()
        .filter(|d| d["code"] == "unrecorded-edit")
        .map(|d| {
            let m = d["message"].as_str().unwrap_or_default();
            match m.strip_prefix("block ") {
                Some(rest) => rest.split(' ').next().unwrap_or_default().to_string(),
                None => "-".to_string(),
            }
        })
        .collect()
}

fn change(lsp: &mut Lsp, uri: &str, version: i64, changes: Value) {
    lsp.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": changes}),
    );
}

fn at(line: usize, character: usize) -> Value {
    json!({"line": line, "character": character})
}

/// The 0-based line of `needle` in `text`.
fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| l == needle)
        .expect("line present")
}

#[test]
fn keystrokes_name_the_blocks_that_differ_from_the_transcript() {
    let (repo, text) = recorded();
    let uri = url_of(&repo.path().join("d.noma"));
    let mut lsp = Lsp::start(repo.path());
    lsp.initialize();
    lsp.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "noma", "version": 1, "text": text}}),
    );
    assert_eq!(
        unrecorded(&diagnostics(&mut lsp, &uri)),
        Vec::<String>::new()
    );
    let two = line_of(&text, "Two.");
    // One keystroke in c2: c2 and the headings above it.
    change(
        &mut lsp,
        &uri,
        2,
        json!([{"range": {"start": at(two, 0), "end": at(two, 0)}, "text": "x"}]),
    );
    assert_eq!(unrecorded(&diagnostics(&mut lsp, &uri)), ["t", "b", "c2"]);
    // Undone: nothing to record.
    change(
        &mut lsp,
        &uri,
        3,
        json!([{"range": {"start": at(two, 0), "end": at(two, 1)}, "text": ""}]),
    );
    assert_eq!(
        unrecorded(&diagnostics(&mut lsp, &uri)),
        Vec::<String>::new()
    );
    // A burst in one message: an edit in e1, then one in c2 whose line
    // the first moved, then the first undone.
    let run = line_of(&text, "Run.");
    change(
        &mut lsp,
        &uri,
        4,
        json!([
            {"range": {"start": at(run, 0), "end": at(run, 0)}, "text": "new line\n"},
            {"range": {"start": at(two + 1, 3), "end": at(two + 1, 4)}, "text": "!"},
            {"range": {"start": at(run, 0), "end": at(run + 1, 0)}, "text": ""},
        ]),
    );
    assert_eq!(unrecorded(&diagnostics(&mut lsp, &uri)), ["t", "b", "c2"]);
    // A whole-text change: c2 back as recorded, e2 removed, a new block.
    let whole = text
        .replace("::evidence{id=\"e2\" for=\"c2\"}\nRun.\n::\n", "")
        .replace("One.", "One.\n::\n\n::note{id=\"n1\"}\nNew.");
    change(&mut lsp, &uri, 5, json!([{"text": whole}]));
    assert_eq!(
        unrecorded(&diagnostics(&mut lsp, &uri)),
        ["t", "a", "n1", "b", "e2"]
    );
    change(&mut lsp, &uri, 6, json!([{"text": text}]));
    assert_eq!(
        unrecorded(&diagnostics(&mut lsp, &uri)),
        Vec::<String>::new()
    );
    let (status, _) = lsp.finish();
    assert!(status.success());
}

/// The work tree's policy is compiled once and again when its file
/// changes: `strict: true` written between two keystrokes makes the next
/// keystroke's warning an error, a malformed file is named, and removing
/// it brings the warning back.
#[test]
fn a_policy_edit_shows_on_the_next_keystroke() {
    let (repo, text) = recorded();
    let text = text.replace("::evidence{id=\"e2\" for=\"c2\"}\nRun.\n::\n", "");
    std::fs::write(repo.path().join("d.noma"), &text).unwrap();
    let uri = url_of(&repo.path().join("d.noma"));
    let mut lsp = Lsp::start(repo.path());
    lsp.initialize();
    lsp.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "noma", "version": 1, "text": text}}),
    );
    let severity = |d: &[Value]| {
        d.iter()
            .filter(|d| d["code"] == "claim-without-evidence")
            .map(|d| d["severity"].as_i64().unwrap_or_default())
            .collect::<Vec<_>>()
    };
    assert_eq!(severity(&diagnostics(&mut lsp, &uri)), [2]);
    let config = repo.path().join(".noma/config.yml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    let typed = |lsp: &mut Lsp, version: i64, s: &str| {
        change(
            lsp,
            &uri,
            version,
            json!([{"range": {"start": at(0, 0), "end": at(0, 0)}, "text": s}]),
        );
    };
    std::fs::write(&config, "strict: true\n").unwrap();
    typed(&mut lsp, 2, "");
    assert_eq!(severity(&diagnostics(&mut lsp, &uri)), [1]);
    std::fs::write(&config, "strict: [\n").unwrap();
    typed(&mut lsp, 3, "");
    let d = diagnostics(&mut lsp, &uri);
    assert!(d.iter().any(|d| d["code"] == "invalid-policy"), "{d:?}");
    std::fs::write(&config, "strict: false\n").unwrap();
    typed(&mut lsp, 4, "");
    assert_eq!(severity(&diagnostics(&mut lsp, &uri)), [2]);
    std::fs::remove_file(&config).unwrap();
    std::fs::write(&config, "strict: true\n").unwrap();
    typed(&mut lsp, 5, "");
    assert_eq!(severity(&diagnostics(&mut lsp, &uri)), [1]);
    std::fs::remove_file(&config).unwrap();
    typed(&mut lsp, 6, "");
    assert_eq!(severity(&diagnostics(&mut lsp, &uri)), [2]);
    let (status, _) = lsp.finish();
    assert!(status.success());
}

/// Keystrokes the server re-parses and re-validates in part (in the
/// frontmatter, inside a directive's body) and ones it takes in full (a
/// line more, a directive left open): after each, its diagnostics equal,
/// ranges and all, those a second server publishes on opening the same
/// text, and the findings are `noma check`'s.
#[test]
fn diagnostics_after_a_keystroke_are_those_of_the_text_opened_afresh() {
    let (repo, mut text) = recorded();
    let path = repo.path().join("d.noma");
    let uri = url_of(&path);
    let mut lsp = Lsp::start(repo.path());
    lsp.initialize();
    lsp.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "noma", "version": 1, "text": text}}),
    );
    let mut fresh = Lsp::start(repo.path());
    fresh.initialize();
    // (the line that starts so, from, to, new text): ASCII, so characters
    // are bytes; `to` past the line's end takes its line end too.
    let edits: &[(&str, usize, usize, &str)] = &[
        ("title: T", 0, 0, "x"),
        ("xtitle: T", 0, 1, ""),
        ("title: T", 0, 0, "profile: bogus\n"),
        ("profile: bogus", 9, 14, "research"),
        ("profile: research", 9, 17, "memory"),
        ("Two.", 4, 4, " [[zz]]"),
        ("Two. [[zz]]", 0, 0, "::note{id=\"n9\"}\n"),
        ("::note{id=\"n9\"}", 0, 99, ""),
        ("Two. [[zz]]", 4, 11, ""),
        ("profile: memory", 0, 99, ""),
    ];
    for (step, &(starts, from, to, new)) in edits.iter().enumerate() {
        let line = text
            .lines()
            .position(|l| l.starts_with(starts))
            .expect("the line");
        let (to_line, to) = if to == 99 { (line + 1, 0) } else { (line, to) };
        let start = text
            .split_inclusive('\n')
            .take(line)
            .map(str::len)
            .sum::<usize>();
        let end = text
            .split_inclusive('\n')
            .take(to_line)
            .map(str::len)
            .sum::<usize>()
            + to;
        text.replace_range(start + from..end, new);
        let version = step as i64 + 2;
        change(
            &mut lsp,
            &uri,
            version,
            json!([{"range": {"start": at(line, from), "end": at(to_line, to)}, "text": new}]),
        );
        let typed = diagnostics(&mut lsp, &uri);
        fresh.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "noma", "version": version, "text": text}}),
        );
        let opened = diagnostics(&mut fresh, &uri);
        fresh.notify(
            "textDocument/didClose",
            json!({"textDocument": {"uri": uri}}),
        );
        assert_eq!(typed, opened, "step {step}: {text}");
        std::fs::write(&path, &text).unwrap();
        let o = repo.cmd(NOMA, &["check", "--format", "json", "d.noma"]);
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        let mut checked: Vec<(String, String, u64)> = v[0]["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                let code = d["code"].as_str().unwrap_or_default().to_string();
                let message = d["message"].as_str().unwrap_or_default().to_string();
                (code, message, d["pos"]["line"].as_u64().unwrap_or(0))
            })
            .collect();
        let mut served: Vec<(String, String, u64)> = typed
            .iter()
            .filter(|d| d["code"] != "unrecorded-edit")
            .map(|d| {
                let code = d["code"].as_str().unwrap_or_default().to_string();
                let message = d["message"].as_str().unwrap_or_default().to_string();
                (
                    code,
                    message,
                    d["range"]["start"]["line"].as_u64().unwrap_or(0) + 1,
                )
            })
            .collect();
        checked.sort();
        served.sort();
        assert_eq!(served, checked, "step {step}: {text}");
        if step == 5 {
            assert!(
                served.iter().any(|d| d.0 == "broken-reference"),
                "{served:?}"
            );
        }
    }
    let (status, _) = lsp.finish();
    assert!(status.success());
    let (status, _) = fresh.finish();
    assert!(status.success());
}

fn url_of(path: &std::path::Path) -> String {
    let abs = path.canonicalize().unwrap();
    format!("file://{}", abs.display())
}

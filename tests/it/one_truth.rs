//! One validation configuration (decision `one-validation-configuration`):
//! `noma check`, the pre-commit hook (through a real `git commit`), MCP
//! `validate_doc` and `noma lsp`'s `publishDiagnostics` give the same
//! findings on the reference's examples (`../shared/reference/noma/
//! examples`) plus a document whose plots read external datasets, under
//! several policies (`.noma/config.yml`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::common::{self, McpClient, Repo};
use crate::lsp_client::Lsp;

/// (severity, code, message, line, column): one finding as compared.
type Finding = (String, String, String, Option<u64>, Option<u64>);
/// Every document's findings, by path relative to the repository.
type Findings = BTreeMap<String, Vec<Finding>>;

/// The policies the four are compared under.
const POLICIES: [(&str, &str); 4] = [
    ("default", ""),
    ("strict", "strict: true\n"),
    (
        "ignore_rules",
        "ignore_rules: [claim-without-evidence, broken-reference, no-such-rule]\n",
    ),
    (
        "strict+ignore_rules",
        "strict: true\nignore_rules: [plot-unknown-column, dataset-src-missing]\n",
    ),
];

/// A document whose datasets are files beside it: one readable (its plot
/// names a column the CSV lacks), one missing; and labelled links.
const PLOTS: &str = "# Plots\n\n\
::dataset{id=\"sales\" src=\"sales.csv\"}\n::\n\n\
::dataset{id=\"gone\" src=\"gone.csv\"}\n::\n\n\
::plot{id=\"p1\" dataset=\"sales\" column=\"profit\"}\n::\n\n\
::plot{id=\"p2\" dataset=\"sales\" column=\"revenue\"}\n::\n\n\
::claim{id=\"c1\"}\nSales grew.\n::\n\n\
See [[sales|the sales]] and [[zz|a broken one]].\n";

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(from)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_tree(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}

/// The `.noma` documents under `root`, relative, sorted.
fn documents(root: &Path, dir: &Path, out: &mut Vec<String>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.file_name().is_some_and(|n| n == ".git" || n == ".noma") {
            continue;
        }
        if p.is_dir() {
            documents(root, &p, out);
        } else if p.extension().is_some_and(|e| e == "noma") {
            out.push(p.strip_prefix(root).unwrap().display().to_string());
        }
    }
    out.sort();
}

fn finding(d: &Value) -> Finding {
    (
        d["severity"].as_str().unwrap().to_string(),
        d["code"].as_str().unwrap().to_string(),
        d["message"].as_str().unwrap().to_string(),
        d["pos"]["line"].as_u64(),
        d["pos"]["column"].as_u64(),
    )
}

fn sorted(mut v: Vec<Finding>) -> Vec<Finding> {
    v.sort();
    v
}

/// `noma check --format json` over every document at once.
fn by_check(r: &Repo, docs: &[String]) -> (Findings, bool) {
    let args: Vec<&str> = ["check", "--format", "json"]
        .into_iter()
        .chain(docs.iter().map(String::as_str))
        .collect();
    let o = r.noma(&args);
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("noma check json: {e}: {}", common::text(&o)));
    let found = v
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let all = f["diagnostics"].as_array().unwrap();
            let file = f["file"].as_str().unwrap().to_string();
            (file, sorted(all.iter().map(finding).collect()))
        })
        .collect();
    (found, o.status.success())
}

/// MCP `validate_doc` on each document, one server.
fn by_mcp(r: &Repo, docs: &[String]) -> Findings {
    let mut mcp = McpClient::start(r.path());
    let found = docs
        .iter()
        .map(|d| {
            let body = mcp.ok("validate_doc", json!({ "file": d }));
            let all = body["diagnostics"].as_array().unwrap();
            (d.clone(), sorted(all.iter().map(finding).collect()))
        })
        .collect();
    mcp.finish();
    found
}

/// `noma lsp`: each document opened, its published diagnostics. The
/// server gives a range, not the validator's column: a finding's line is
/// its range's first line, and `None` where the others have no position.
fn by_lsp(r: &Repo, docs: &[String], lines_from: &Findings) -> Findings {
    let mut lsp = Lsp::start(r.path());
    lsp.initialize();
    let mut found = Findings::new();
    for d in docs {
        let path = r.path().join(d);
        let uri = format!("file://{}", path.display());
        let text = std::fs::read_to_string(&path).unwrap();
        lsp.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "noma", "version": 1, "text": text}}),
        );
        // The server publishes a document's analysis before it answers.
        let answer = lsp.request("noma/text", json!({"textDocument": {"uri": uri}}));
        assert!(answer.get("error").is_none(), "{answer}");
        let diags = lsp
            .last_diagnostics(&uri)
            .unwrap_or_else(|| panic!("no diagnostics published for {d}"));
        let others = &lines_from[d];
        let severity = |n: i64| match n {
            1 => "error",
            2 => "warning",
            _ => "info",
        };
        let mine = diags
            .as_array()
            .unwrap()
            .iter()
            .map(|x| {
                let (sev, code, msg) = (
                    severity(x["severity"].as_i64().unwrap()).to_string(),
                    x["code"].as_str().unwrap().to_string(),
                    x["message"].as_str().unwrap().to_string(),
                );
                let has_line = others
                    .iter()
                    .any(|o| (&o.0, &o.1, &o.2) == (&sev, &code, &msg) && o.3.is_some());
                let line = has_line.then(|| x["range"]["start"]["line"].as_u64().unwrap() + 1);
                (sev, code, msg, line, None)
            })
            .collect();
        found.insert(d.clone(), sorted(mine));
    }
    let (status, stderr) = lsp.finish();
    assert!(status.success(), "{status}: {stderr}");
    found
}

/// The hook's findings from a real `git commit` of everything: its
/// validator lines (`SEVERITY [code] path:line:col: message`), and
/// whether the commit went through.
fn by_hook(r: &Repo, docs: &[String]) -> (Findings, bool) {
    r.ok(&["add", "-A"]);
    let o = r.git(&["commit", "-q", "-m", "examples"]);
    let out = String::from_utf8_lossy(&o.stderr).to_string();
    let codes: Vec<&str> = noma_core::validate::rule_codes().collect();
    let mut found: Findings = docs.iter().map(|d| (d.clone(), Vec::new())).collect();
    for line in out.lines() {
        let Some((sev, rest)) = line.split_once(" [") else {
            continue;
        };
        let Some((code, rest)) = rest.split_once("] ") else {
            continue;
        };
        if !codes.contains(&code) {
            continue;
        }
        let doc = docs
            .iter()
            .filter(|d| rest.starts_with(&format!("{d}:")))
            .max_by_key(|d| d.len())
            .unwrap_or_else(|| panic!("a finding on no document: {line}"));
        let rest = &rest[doc.len() + 1..];
        let (line_no, col, msg) = match rest.strip_prefix(' ') {
            Some(msg) => (None, None, msg),
            None => {
                let mut parts = rest.splitn(3, ':');
                let l = parts.next().unwrap().parse().unwrap();
                let c = parts.next().unwrap().parse().unwrap();
                let msg = parts.next().unwrap().strip_prefix(' ').unwrap();
                (Some(l), Some(c), msg)
            }
        };
        found.get_mut(doc).unwrap().push((
            sev.to_ascii_lowercase(),
            code.to_string(),
            msg.to_string(),
            line_no,
            col,
        ));
    }
    for v in found.values_mut() {
        v.sort();
    }
    (found, o.status.success())
}

fn without_infos(f: &Findings) -> Findings {
    f.iter()
        .map(|(k, v)| {
            let kept = v.iter().filter(|x| x.0 != "info").cloned().collect();
            (k.clone(), kept)
        })
        .collect()
}

fn without_columns(f: &Findings) -> Findings {
    f.iter()
        .map(|(k, v)| {
            let mut kept: Vec<Finding> = v
                .iter()
                .map(|x| (x.0.clone(), x.1.clone(), x.2.clone(), x.3, None))
                .collect();
            kept.sort();
            (k.clone(), kept)
        })
        .collect()
}

#[test]
fn check_hook_mcp_and_lsp_agree_under_each_policy() {
    let Some(reference) = common::shared_reference("one_truth") else {
        return;
    };
    let examples = reference.join("noma/examples");
    assert!(
        examples.is_dir(),
        "{} is missing: the differential test needs the reference's examples",
        examples.display()
    );
    for (name, policy) in POLICIES {
        let r = Repo::init();
        copy_tree(&examples, &r.path().join("ex"));
        r.write("data/plots.noma", PLOTS);
        r.write("data/sales.csv", "month,revenue\n1,10\n2,12\n");
        r.write(".noma/config.yml", policy);
        common::assert_ran(&r.noma(&["hooks", "install"]));
        let mut docs = Vec::new();
        documents(r.path(), r.path(), &mut docs);
        assert!(docs.len() > 10, "{docs:?}");

        let (check, check_ok) = by_check(&r, &docs);
        let mcp = by_mcp(&r, &docs);
        let lsp = by_lsp(&r, &docs, &check);
        let (hook, hook_ok) = by_hook(&r, &docs);

        assert_eq!(mcp, check, "policy {name}: MCP validate_doc and noma check");
        assert_eq!(
            lsp,
            without_columns(&check),
            "policy {name}: noma lsp and noma check"
        );
        assert_eq!(
            hook,
            without_infos(&check),
            "policy {name}: the pre-commit hook and noma check"
        );
        let any_error = check.values().flatten().any(|f| f.0 == "error");
        assert_eq!(check_ok, !any_error, "policy {name}: noma check's exit");
        assert_eq!(hook_ok, !any_error, "policy {name}: the commit");

        // What each policy must show, so that agreement is not vacuous.
        let plots = &check["data/plots.noma"];
        let has = |code: &str, sev: &str| plots.iter().any(|f| f.1 == code && f.0 == sev);
        match name {
            "default" => {
                assert!(has("plot-unknown-column", "error"), "{plots:?}");
                assert!(has("dataset-src-missing", "warning"), "{plots:?}");
                assert!(has("claim-without-evidence", "warning"), "{plots:?}");
                assert!(has("broken-reference", "error"), "{plots:?}");
            }
            "strict" => {
                assert!(has("claim-without-evidence", "error"), "{plots:?}");
                assert!(has("dataset-src-missing", "error"), "{plots:?}");
            }
            "ignore_rules" => {
                assert!(!plots.iter().any(|f| f.1 == "claim-without-evidence"));
                assert!(!plots.iter().any(|f| f.1 == "broken-reference"));
                assert!(has("unknown-ignore-rule", "info"), "{plots:?}");
                assert!(has("plot-unknown-column", "error"), "{plots:?}");
            }
            _ => {
                assert!(!plots.iter().any(|f| f.1 == "plot-unknown-column"));
                assert!(has("claim-without-evidence", "error"), "{plots:?}");
            }
        }
        // The reference's examples carry findings of their own too.
        assert!(
            check
                .iter()
                .any(|(d, v)| d.starts_with("ex/") && !v.is_empty()),
            "policy {name}: no finding on any example"
        );
    }
}

/// `noma reconcile` validates the branch's documents under the base's
/// policy, with the same options: under `strict: true` a claim without
/// evidence is an error there as in `noma check`, a warning without it.
#[test]
fn reconcile_validates_under_the_base_policy() {
    const DOC: &str = "# Plan\n\n::claim{id=\"c\"}\nx\n::\n\n::note{id=\"a\"}\nalpha\n::\n";
    for (policy, level) in [("", "warning"), ("strict: true\n", "error")] {
        let r = Repo::init();
        r.write(".noma/config.yml", policy);
        r.write("plan.noma", DOC);
        r.commit_all("base");
        r.ok(&["checkout", "-q", "-b", "feature"]);
        let op = json!({"op": "replace_body", "id": "a", "content": "alpha, edited"}).to_string();
        common::assert_ran(&r.noma(&["patch", "plan.noma", "--inplace", "--op", &op]));
        r.commit_all("feature");
        let o = r.noma(&["reconcile", "--base", "main", "--format", "json"]);
        let v: Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", common::text(&o)));
        let findings = v["documents"][0]["findings"].as_array().unwrap();
        let claim = findings
            .iter()
            .find(|f| f["code"] == "claim-without-evidence")
            .unwrap_or_else(|| panic!("{v:#}"));
        assert_eq!(claim["level"], level, "policy {policy:?}: {v:#}");
        let check = r.noma(&["check", "--format", "json", "plan.noma"]);
        let c: Value = serde_json::from_slice(&check.stdout).unwrap();
        assert_eq!(
            c[0]["diagnostics"][0]["severity"], level,
            "policy {policy:?}: {c:#}"
        );
        assert_eq!(o.status.success(), level == "warning", "{v:#}");
    }
}

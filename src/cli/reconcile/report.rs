//! `noma reconcile`'s reports in the forms people and PR bots read them:
//! lines for people, GitHub Actions workflow commands (annotations beside
//! the diff) and a SARIF 2.1.0 log (code-scanning upload). The Markdown
//! summary is [`super::markdown`]'s.

use serde_json::{json, Value};

use noma_core::display::escape as esc;
use noma_core::transcript::transcript_path;
use noma_git::merge::reconcile::{DocReport, Finding};
use noma_provenance::verify::{signer_matches_actor, RecordStatus};

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "NO"
    }
}

/// One line per document, block and finding, then the count.
pub fn human(reports: &[DocReport]) -> String {
    let mut out = String::new();
    for r in reports {
        out.push_str(&format!(
            "{}: {}valid {}, append-only {}, replays {}, rebases {} ({} branch record(s) onto {} new base record(s)){}\n",
            esc(&r.path),
            removal_word(r),
            yes(r.valid),
            yes(r.append_only),
            yes(r.replays),
            yes(r.rebases),
            r.branch_records,
            r.base_records,
            if r.written { "; rebased files written" } else { "" }
        ));
        for b in &r.blocks {
            out.push_str(&format!(
                "  block {}: {} on the branch, rebase {}\n",
                esc(&b.id),
                b.change,
                b.rebase
            ));
        }
        for s in &r.records {
            out.push_str(&format!("  record {}\n", esc(&signer_text(s))));
        }
        for f in &r.findings {
            let at = f.line.map(|l| format!(":{l}")).unwrap_or_default();
            out.push_str(&format!(
                "  {} [{}] {}{at}: {}\n",
                f.level.to_uppercase(),
                f.code,
                esc(&f.path),
                esc(&finding_text(f))
            ));
        }
    }
    let bad = reports.iter().filter(|r| !r.ok()).count();
    out.push_str(&format!(
        "noma reconcile: {} document(s), {bad} with errors\n",
        reports.len()
    ));
    out
}

/// The message, with a conflict's two values after it: what the text
/// formats (human, GitHub annotations, SARIF) show.
fn finding_text(f: &Finding) -> String {
    match (&f.ours, &f.theirs) {
        (Some(o), Some(t)) => format!("{} (ours: {o}; theirs: {t})", f.message),
        _ => f.message.clone(),
    }
}

/// Who a checked record names, who verifiably signed it and who approved
/// it: `line 4 (human carol): signed by alice@example.com (not the
/// actor), approved by bob@example.com`.
pub fn signer_text(s: &RecordStatus) -> String {
    let mut out = format!("line {} ({}): ", s.line, s.actor);
    match &s.signed_by {
        Some(p) => {
            out.push_str(&format!("signed by {p}"));
            let name = s.actor.split_once(' ').map_or("", |(_, n)| n);
            if !signer_matches_actor(p, name) {
                out.push_str(" (not the actor)");
            }
        }
        None => out.push_str("no verified signature"),
    }
    match (&s.approved_by, s.needs_approval) {
        (Some(a), _) => out.push_str(&format!(", approved by {a}")),
        (None, true) => out.push_str(", not approved"),
        (None, false) => {}
    }
    out
}

/// How the human report opens a removed document's line.
fn removal_word(r: &DocReport) -> &'static str {
    match r.removed {
        Some("recorded") => "removed (recorded by noma rm), ",
        Some(_) => "REMOVED WITHOUT A RECORD, ",
        None => "",
    }
}

/// Escapes a workflow-command message (`%`, CR, LF) or property (also `:` and `,`).
fn gh_escape(s: &str, property: bool) -> String {
    // Other controls (ESC, C1, bidi overrides) are shown escaped: the
    // Actions log renders ANSI sequences.
    let shown: String = s
        .split_inclusive(['\r', '\n'])
        .map(|part| {
            let end = part.trim_end_matches(['\r', '\n']);
            format!("{}{}", esc(end), &part[end.len()..])
        })
        .collect();
    let mut out = shown
        .replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A");
    if property {
        out = out.replace(':', "%3A").replace(',', "%2C");
    }
    out
}

/// One workflow command (`::error file=…,line=…,title=…::…`) per finding,
/// and per document with provenance on one notice naming each checked
/// record's signer and approver.
pub fn github(reports: &[DocReport]) -> String {
    let mut out = String::new();
    for f in reports.iter().flat_map(|r| &r.findings) {
        let cmd = match f.level {
            "error" => "error",
            "warning" => "warning",
            _ => "notice",
        };
        let mut props = vec![format!("file={}", gh_escape(&f.path, true))];
        // Every annotation carries a line (the file's first when the
        // finding has none): GitHub files line-less ones under the run,
        // not beside the diff.
        props.push(format!("line={}", f.line.filter(|l| *l > 0).unwrap_or(1)));
        props.push(format!(
            "title={}",
            gh_escape(&format!("noma {}", f.code), true)
        ));
        let msg = match &f.block {
            Some(b) => format!("[block {b}] {}", finding_text(f)),
            None => finding_text(f),
        };
        out.push_str(&format!(
            "::{cmd} {}::{}\n",
            props.join(","),
            gh_escape(&msg, false)
        ));
    }
    // After the findings: GitHub keeps only so many annotations a job,
    // and a finding must never lose its place to a notice.
    for r in reports.iter().filter(|r| !r.records.is_empty()) {
        let list: Vec<String> = r.records.iter().map(signer_text).collect();
        out.push_str(&format!(
            "::notice file={},line={},title={}::{}\n",
            gh_escape(&transcript_path(&r.path), true),
            r.records[0].line,
            gh_escape("noma signers", true),
            gh_escape(&list.join("; "), false)
        ));
    }
    out
}

fn record_json(path: &str, s: &RecordStatus) -> Value {
    json!({
        "path": transcript_path(path),
        "line": s.line,
        "opId": s.op_id,
        "actor": s.actor,
        "signedBy": s.signed_by,
        "needsApproval": s.needs_approval,
        "approvedBy": s.approved_by,
    })
}

fn sarif_result(f: &Finding, signer: Option<&RecordStatus>) -> Value {
    let mut region = json!({});
    if let Some(l) = f.line.filter(|l| *l > 0) {
        region = json!({"startLine": l});
    }
    let mut loc = json!({"artifactLocation": {"uri": f.path}});
    if region.as_object().is_some_and(|o| !o.is_empty()) {
        loc["region"] = region;
    }
    let mut result = json!({
        "ruleId": f.code,
        "level": match f.level { "error" => "error", "warning" => "warning", _ => "note" },
        "message": {"text": esc(&finding_text(f))},
        "locations": [{"physicalLocation": loc}],
    });
    if let Some(b) = &f.block {
        result["properties"] = json!({"block": b});
    }
    if let Some(s) = signer {
        result["properties"]["actor"] = json!(s.actor);
        result["properties"]["signedBy"] = json!(s.signed_by);
        result["properties"]["approvedBy"] = json!(s.approved_by);
    }
    result
}

/// The reports as a SARIF 2.1.0 log of the tool `noma` at `version`: a
/// finding on a checked record carries its actor, signer and approver in
/// its property bag, and the run's bag lists every checked record.
pub fn sarif(reports: &[DocReport], version: &str) -> Value {
    let findings: Vec<&Finding> = reports.iter().flat_map(|r| &r.findings).collect();
    let signer_of = |f: &Finding| {
        let r = reports
            .iter()
            .find(|r| transcript_path(&r.path) == f.path)?;
        r.records.iter().find(|s| Some(s.line) == f.line)
    };
    let records: Vec<Value> = reports
        .iter()
        .flat_map(|r| r.records.iter().map(|s| record_json(&r.path, s)))
        .collect();
    let mut rules: Vec<&str> = findings.iter().map(|f| f.code.as_str()).collect();
    rules.sort_unstable();
    rules.dedup();
    let mut log = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "noma",
                "version": version,
                "informationUri": "https://github.com/ferax564/noma",
                "rules": rules.iter().map(|r| json!({
                    "id": r,
                    "shortDescription": {"text": format!("noma {r}")},
                })).collect::<Vec<_>>(),
            }},
            "results": findings.iter().map(|f| sarif_result(f, signer_of(f))).collect::<Vec<_>>(),
        }],
    });
    if !records.is_empty() {
        log["runs"][0]["properties"] = json!({"records": records});
    }
    log
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(line: Option<usize>, block: Option<&str>) -> Finding {
        Finding {
            level: "error",
            code: "replay-diverged".into(),
            path: "docs/a,b.noma".into(),
            line,
            block: block.map(str::to_string),
            message: "50% off\nnext".into(),
            ours: None,
            theirs: None,
        }
    }

    fn report(findings: Vec<Finding>) -> DocReport {
        DocReport {
            path: "docs/a,b.noma".into(),
            valid: true,
            append_only: true,
            replays: false,
            rebases: true,
            branch_records: 2,
            base_records: 1,
            written: false,
            blocks: Vec::new(),
            records: Vec::new(),
            findings,
            removed: None,
        }
    }

    #[test]
    fn annotations_escape_and_always_carry_a_line() {
        let text = github(&[report(vec![finding(None, Some("c1"))])]);
        assert_eq!(
            text,
            "::error file=docs/a%2Cb.noma,line=1,title=noma replay-diverged::[block c1] 50%25 off%0Anext\n"
        );
    }

    #[test]
    fn sarif_names_each_rule_once_and_keeps_lines_and_blocks() {
        let log = sarif(
            &[report(vec![
                finding(Some(3), Some("c1")),
                finding(None, None),
            ])],
            "9.9.9",
        );
        let run = &log["runs"][0];
        assert_eq!(run["tool"]["driver"]["version"], "9.9.9");
        assert_eq!(run["tool"]["driver"]["rules"].as_array().unwrap().len(), 1);
        let results = run["results"].as_array().unwrap();
        assert_eq!(
            results[0]["locations"][0]["physicalLocation"]["region"]["startLine"],
            3
        );
        assert_eq!(results[0]["properties"]["block"], "c1");
        assert!(results[1]["locations"][0]["physicalLocation"]
            .get("region")
            .is_none());
    }

    #[test]
    fn the_human_report_ends_with_the_count() {
        let text = human(&[report(vec![finding(Some(3), None)])]);
        assert!(text.contains("replays NO"), "{text}");
        assert!(text.contains("  ERROR [replay-diverged] docs/a,b.noma:3: 50% off"));
        assert!(text.ends_with("noma reconcile: 1 document(s), 1 with errors\n"));
    }
}

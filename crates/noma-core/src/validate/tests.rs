//! Validator tests: focused tests per rule family, plus the conformance
//! fixtures (the reference's normative ones and the project's own).

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::*;
use crate::doc::parse;

/// 2026-01-01T00:00:00Z, so date-dependent tests do not age.
fn fixed_now() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600)
}

fn run(src: &str, opts: &Options) -> Vec<Diagnostic> {
    validate(&parse(src), opts)
}

fn opts() -> Options {
    Options {
        now: Some(fixed_now()),
        ..Options::default()
    }
}

/// The codes emitted for `src`, in output order.
fn codes(src: &str) -> Vec<String> {
    run(src, &opts()).into_iter().map(|d| d.code).collect()
}

#[test]
fn clean_document_has_no_diagnostics() {
    let src = "---\ntitle: t\nprofile: research\n---\n# Intro\n\nSee [[claim-1]] and [[intro]].\n\n::claim{id=\"claim-1\"}\nX.\n::\n\n::evidence{for=\"claim-1\"}\nY.\n::\n";
    assert_eq!(codes(src), Vec::<String>::new());
}

#[test]
fn rule_table_is_consistent() {
    let codes: Vec<&str> = rule_codes().collect();
    let mut sorted = codes.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), codes.len(), "duplicate rule code");
    assert_eq!(severity_of("duplicate-id"), Some(Severity::Error));
    assert_eq!(severity_of("unknown-ignore-rule"), Some(Severity::Info));
    assert_eq!(severity_of("nope"), None);
    for c in codes {
        assert!(
            c.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'),
            "{c}"
        );
    }
}

#[test]
fn duplicate_ids_and_positions() {
    let src = "::note{id=\"x\"}\na\n::\n\n::note{id=\"x\"}\nb\n::\n";
    let d = run(src, &opts());
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].code, "duplicate-id");
    assert_eq!(d[0].pos, Some(Pos { line: 5, column: 1 }));
    assert_eq!(d[0].node_id.as_deref(), Some("x"));
    assert!(d[0].phase.is_none());
}

#[test]
fn references_resolve_against_ids_and_aliases() {
    let src = "# Top {aliases=\"home\"}\n\n::note{id=\"n\" aliases=\"nn\"}\nsee [[home]] [[nn]] [[n]] [[top]]\n::\n\n- item [[missing-a]]\n\n| h |\n|---|\n| [[missing-b]] |\n\n`[[in-code]]` and [[miss`x`ing-c]]\n\n```\n[[fenced]]\n```\n";
    let d = run(src, &opts());
    let got: Vec<(&str, u32)> = d
        .iter()
        .map(|d| (d.code.as_str(), d.pos.map_or(0, |p| p.line)))
        .collect();
    assert_eq!(
        got,
        [
            ("broken-reference", 7),
            ("broken-reference", 11),
            ("broken-reference", 13)
        ]
    );
    assert!(d[2].message.contains("missing-c"), "{}", d[2].message);
}

#[test]
fn attribute_references_and_suggestions() {
    let src = "::claim{id=\"claim-one\"}\nc\n::\n\n::evidence{for=\"claim-on\"}\ne\n::\n\n::comment{target=\"nowhere\" reply_to=\"claim-one\"}\nhi\n::\n\n::state_change{block=\"gone\" from=a to=b}\n::\n\n::review{parent=\"p\"}\n::\n";
    let d = run(src, &opts());
    let got: Vec<&str> = d.iter().map(|d| d.code.as_str()).collect();
    assert_eq!(
        got,
        [
            "claim-without-evidence",
            "broken-reference",
            "broken-reference",
            "broken-reference",
            "broken-reference"
        ]
    );
    assert!(
        d[1].message.contains("did you mean \"claim-one\""),
        "{}",
        d[1].message
    );
    assert_eq!(d[1].node_id, None);
}

#[test]
fn noverify_silences_a_block() {
    let src = "::claim{id=\"c\" noverify}\nx [[nowhere]]\n::\n\n::evidence{noverify}\n::\n\n::plot{noverify}\n::\n\n::html\n<b>x</b>\n::\n\n::html{trusted}\n<b>x</b>\n::\n";
    assert_eq!(codes(src), ["escape-hatch-untrusted"]);
    // duplicate-id is never hidden: identity ambiguity blocks safe patching.
    assert_eq!(
        codes("::note{id=a}\n::\n::note{id=a noverify}\n::\n"),
        ["duplicate-id"]
    );
}

#[test]
fn research_and_task_checks() {
    let src = "::risk{id=r}\nx\n::\n\n::risk{owner=ann}\nx\n::\n\n::decision\nx\n::\n\n::adr{status=accepted}\n::\n\n::agent_task{id=t}\n::\n\n::todo\nwrite it\n::\n\n::agent_task{scope=\"src/\"}\n::\n\n::evidence\nloose\n::\n";
    assert_eq!(
        codes(src),
        [
            "risk-without-owner",
            "decision-without-status",
            "agent-task-without-scope",
            "evidence-missing-for"
        ]
    );
    let by_alias = "::claim{id=c aliases=\"the-claim\"}\nx\n::\n::evidence{for=the-claim}\ny\n::\n";
    assert!(codes(by_alias).is_empty());
    let off = Options {
        require_evidence_for_claims: false,
        ..opts()
    };
    assert!(run("::claim{id=c}\nx\n::\n", &off).is_empty());
}

#[test]
fn profiles() {
    let src = "---\nprofile: minimal\n---\n::claim{id=c noverify}\nx\n::\n\n::hero\nx\n::\n\n::math\nx\n::\n";
    let d = run(src, &opts());
    assert_eq!(d.len(), 1);
    assert_eq!(
        (d[0].code.as_str(), d[0].pos.map(|p| p.line)),
        ("out-of-profile-directive", Some(8))
    );

    let d = run(
        "---\nprofiles: [bogus, research]\n---\n::hero\n::\n",
        &opts(),
    );
    let got: Vec<(&str, Option<u32>)> = d
        .iter()
        .map(|d| (d.code.as_str(), d.pos.map(|p| p.line)))
        .collect();
    assert_eq!(
        got,
        [
            ("unknown-profile", Some(2)),
            ("out-of-profile-directive", Some(4))
        ]
    );

    let o = Options {
        profile: Some("technical".into()),
        ..opts()
    };
    assert!(run("---\nprofile: minimal\n---\n::hero\n::\n", &o).is_empty());
    let o = Options {
        profile: Some("nope".into()),
        ..opts()
    };
    let d = run("::hero\n::\n", &o);
    assert_eq!(d[0].code, "unknown-profile");
    assert_eq!(d[0].pos, None);
}

#[test]
fn controls() {
    let src = "::control{id=a min=0 max=10}\n::\n\n::control{id=b default=20 min=0 max=10}\n::\n\n::control{id=c type=select}\n::\n\n::control{id=d type=checkbox default=checked lock=\"content locked\"}\n::\n\n::control{id=e default=1 lock=sometimes}\n::\n\n::control{id=f default=\"5\" lock}\n::\n";
    assert_eq!(
        codes(src),
        [
            "control-missing-default",
            "control-out-of-range-default",
            "control-invalid-lock"
        ]
    );
}

#[test]
fn computed_blocks() {
    let src = "::control{id=rate default=1}\n::\n\n\
::computed_metric{id=m1 formula=\"rate * 2\"}\n::\n\n\
::computed_metric{id=m2}\nformula: m1 + 1\n::\n\n\
::computed_metric{id=m3 formula=\"m2 + 1\"}\n::\n\n\
::computed_metric{id=bad formula=\"sqrt(rate)\"}\n::\n\n\
::computed_metric{id=unk formula=\"ghost + rate\"}\n::\n\n\
::computed_plot{id=p formula=\"x * rate\" domain=\"x: 0..10\"}\n::\n\n\
::computed_metric{id=none}\nno formula here\n::\n";
    let d = run(src, &opts());
    let got: Vec<(&str, Option<&str>)> = d
        .iter()
        .map(|d| (d.code.as_str(), d.node_id.as_deref()))
        .collect();
    assert_eq!(
        got,
        [
            ("computed-chain-too-deep", Some("m3")),
            ("formula-parse-error", Some("bad")),
            ("computed-unknown-dependency", Some("unk")),
            ("computed-missing-formula", Some("none")),
        ]
    );
}

#[test]
fn computed_cycles_and_long_chains_do_not_recurse() {
    let mut src = String::from(
        "::computed_metric{id=a formula=\"b\"}\n::\n::computed_metric{id=b formula=\"a\"}\n::\n",
    );
    // A 20,000-long chain: iterative depth search, no stack overflow.
    for i in 0..20_000 {
        src.push_str(&format!(
            "::computed_metric{{id=c{i} formula=\"c{} + 1\"}}\n::\n",
            i + 1
        ));
    }
    src.push_str("::computed_metric{id=c20000 formula=\"1\"}\n::\n");
    let d = run(&src, &opts());
    let deep = d
        .iter()
        .filter(|d| d.code == "computed-chain-too-deep")
        .count();
    assert_eq!(deep, 2 + 19_999, "a, b, and every chain link above depth 2");
    assert!(d.iter().any(|d| d.message.contains("cycle")));
}

#[test]
fn state_change_citation_diagram_plotly_figure() {
    let src = "::state_change{from=a}\n::\n\n\
::citation{id=old accessed=2020-01-01 url=u}\n::\n\n\
::citation{id=fresh accessed=2025-12-01 source=s}\n::\n\n\
::citation{id=window accessed=2025-06-01 stale_after_days=30 doi=d}\n::\n\n\
::citation{id=junk accessed=\"last week\" url=u}\n::\n\n\
::citation{id=nowhere url=\"\" doi=false}\n::\n\n\
::diagram\n::\n\n\
::diagram{kind=mermaid}\ngraph TD\n::\n\n\
::plotly\n::\n\n\
::plotly\n{\"data\": [}\n::\n\n\
::plotly\n{\"data\": []}\n::\n\n\
::figure{src=a.png}\n::\n\n\
::figure{caption=\"A\"}\n::\n";
    assert_eq!(
        codes(src),
        [
            "state-change-missing-block",
            "state-change-missing-from-to",
            "stale-citation",
            "stale-citation",
            "citation-missing-source",
            "diagram-missing-kind",
            "diagram-missing-source",
            "plotly-missing-spec",
            "plotly-invalid-json",
            "figure-missing-alt",
        ]
    );
    let fm = "---\nstale_citation_days: 10\n---\n::citation{accessed=2025-12-01 url=u}\n::\n";
    assert_eq!(codes(fm), ["stale-citation"]);
    let cli = Options {
        stale_citation_days: Some(5000.0),
        ..opts()
    };
    assert!(run("::citation{accessed=2020-01-01 url=u}\n::\n", &cli).is_empty());
}

#[test]
fn plots_and_datasets() {
    let src = "::plot{id=p0 dataset=sales column=revenue}\n::\n\n\
::dataset{id=sales columns=\"month,revenue\"}\n::\n\n\
::plot{id=p1 dataset=sales column=profit}\n::\n\n\
::plot{id=p2 dataset=nope}\n::\n\n\
::plot{id=p3}\n::\n\n\
::plot{id=p4 data=\"1,2,3\" xlabels=\"a b c\"}\n::\n\n\
::dataset{id=csv format=csv}\nyear,\"net, adj\"\n2024,1\n::\n\n\
::plot{dataset=csv column=\"net, adj\"}\n::\n\n\
::dataset{id=yml}\nschema:\n  a: number\n::\n\n\
::plot{dataset=yml column=b}\n::\n";
    let d = run(src, &opts());
    let got: Vec<(&str, u32)> = d
        .iter()
        .map(|d| (d.code.as_str(), d.pos.map_or(0, |p| p.line)))
        .collect();
    assert_eq!(
        got,
        [
            ("plot-unknown-column", 7),
            ("plot-unknown-dataset", 10),
            ("plot-missing-data", 13),
            ("plot-mixed-delimiters", 16),
            ("plot-unknown-column", 32),
        ]
    );
}

#[test]
fn dataset_src_loading_uses_the_dataset_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ok.csv"), "a,b\n1,2\n").unwrap();
    let src = "::dataset{id=ok src=\"ok.csv\"}\n::\n\n::dataset{id=gone src=\"gone.csv\"}\n::\n\n::dataset{id=web src=\"https://x/y.csv\"}\n::\n\n::plot{dataset=ok column=c}\n::\n";
    let with = Options {
        datasets: Some(files_in(dir.path().to_path_buf())),
        ..opts()
    };
    let got: Vec<String> = run(src, &with).into_iter().map(|d| d.code).collect();
    assert_eq!(got, ["dataset-src-missing", "plot-unknown-column"]);
    // Without a base directory nothing is loaded and nothing is reported.
    assert!(codes(src).is_empty());
}

#[test]
fn ignore_rules_and_unknown_rule_note() {
    let o = Options {
        ignore_rules: vec!["claim-without-evidence".into(), "no-such-rule".into()],
        ..opts()
    };
    let d = run("::claim{id=c}\nx\n::\n", &o);
    assert_eq!(d.len(), 1);
    assert_eq!(
        (d[0].code.as_str(), d[0].severity),
        ("unknown-ignore-rule", Severity::Info)
    );
    assert!(d[0].message.contains("no-such-rule"));
}

#[test]
fn parse_issues_come_first_as_errors() {
    let d = run("::claim{id=c}\nx\n", &opts());
    assert_eq!(d[0].code, "unclosed-directive");
    assert_eq!(d[0].severity, Severity::Error);
    assert_eq!(d[1].code, "claim-without-evidence");
}

#[test]
fn hostile_input_does_not_panic() {
    let inputs = [
        "::plotly\n".to_string() + &"[".repeat(100_000) + "\n::\n",
        "::computed_metric{id=x formula=\"".to_string() + &"(".repeat(50_000) + "\"}\n::\n",
        "::dataset{id=d format=json}\n{]\n::\n::plot{dataset=d column=x}\n::\n".to_string(),
        "::citation{accessed=99999-99-99}\n::\n::citation{accessed=0}\n::\n".to_string(),
        "[[".repeat(10_000) + &"`".repeat(1001) + "[[a]]\n",
        "::control{default=1e400 min=-0x5 max=ä lock=\"ü\"}\n::\n".to_string(),
    ];
    for src in &inputs {
        let _ = run(src, &opts());
    }
}

/// `(code, severity)` pairs, sorted, as `noma verify` compares them.
fn pairs(diags: &[Diagnostic]) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = diags
        .iter()
        .map(|d| (d.code.clone(), d.severity.as_str().to_string()))
        .collect();
    v.sort();
    v
}

fn expected_pairs(path: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut v: Vec<(String, String)> = value
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap().to_string(),
                d["severity"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    v.sort();
    v
}

/// Runs every `<dir>/<case>/input.noma` against its `expected.diagnostics.json`;
/// returns the number of cases and the failures.
fn run_fixture_dir(dir: &Path) -> (usize, Vec<String>) {
    let mut failures = Vec::new();
    let mut cases = 0;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return (0, failures);
    };
    let mut dirs: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    dirs.sort();
    for case in dirs {
        let expected = case.join("expected.diagnostics.json");
        if !expected.is_file() {
            continue;
        }
        cases += 1;
        let src = std::fs::read_to_string(case.join("input.noma")).unwrap();
        let o = Options {
            datasets: Some(files_in(case.clone())),
            ..Options::default()
        };
        let got = pairs(&run(&src, &o));
        let want = expected_pairs(&expected);
        if got != want {
            failures.push(format!("{}: got {got:?}, want {want:?}", case.display()));
        }
    }
    (cases, failures)
}

#[test]
fn reference_conformance_fixtures() {
    let Some(shared) = noma_testutil::shared_reference("reference_conformance_fixtures") else {
        return;
    };
    let root = shared.join("noma/conformance");
    let mut all = Vec::new();
    let mut n = 0;
    for sub in ["valid", "invalid"] {
        let (cases, failures) = run_fixture_dir(&root.join(sub));
        n += cases;
        all.extend(failures);
    }
    assert!(n >= 8, "expected the reference fixtures, found {n}");
    assert!(all.is_empty(), "{}", all.join("\n"));
}

#[test]
fn project_conformance_fixtures() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance/invalid");
    let (cases, failures) = run_fixture_dir(&root);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // At least one fixture per validator code. Parse-issue codes are the
    // parser's; `unknown-ignore-rule` needs a CLI flag a fixture cannot carry.
    let mut missing = Vec::new();
    let rules = rule_codes().skip_while(|c| *c != "duplicate-id");
    for code in rules.filter(|c| *c != "unknown-ignore-rule") {
        if !root.join(code).join("expected.diagnostics.json").is_file() {
            missing.push(code);
        }
    }
    assert!(missing.is_empty(), "no fixture for {missing:?}");
    assert!(cases >= missing.len());
}

/// Prints the diagnostics for every `.noma` under the reference's docs and
/// examples (run with `--ignored --nocapture` to survey false positives).
#[test]
#[ignore]
fn survey_reference_docs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/reference/noma");
    let mut stack = vec![root.join("docs"), root.join("examples")];
    let mut files = Vec::new();
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "noma") {
                files.push(p);
            }
        }
    }
    files.sort();
    for f in files {
        let src = std::fs::read_to_string(&f).unwrap_or_default();
        let o = Options {
            datasets: f.parent().map(|d| files_in(d.to_path_buf())),
            ..Options::default()
        };
        for d in run(&src, &o) {
            let line = d.pos.map_or(0, |p| p.line);
            println!(
                "{}:{line}: {} [{}] {}",
                f.display(),
                d.severity.as_str(),
                d.code,
                d.message
            );
        }
    }
}

/// Blocks for the re-validation tests: every registry the whole-document
/// rules read, with ids that repeat and references that resolve or break.
fn revalidation_block() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::strategy::Strategy;
    let id = proptest::sample::select(vec!["a", "b", "c", "d"]);
    (0..14usize, id.clone(), id, proptest::prelude::any::<bool>()).prop_map(|(kind, x, y, flag)| {
        let nv = if flag { " noverify" } else { "" };
        match kind {
            0 => format!("## Part {x}\n"),
            1 => format!("Text about [[{x}]] and [[{y}]].\n"),
            2 => format!("::claim{{id=\"{x}\" confidence=0.8{nv}}}\nClaim on [[{y}]].\n::\n"),
            3 => format!("::evidence{{id=\"ev-{x}\" for=\"{y}\"{nv}}}\nSeen 0.8 times.\n::\n"),
            4 => format!("::control{{id=\"{x}\" min=0 max=10 default=5}}\n::\n"),
            5 => format!("::computed_metric{{id=\"{x}\" formula=\"{y} * 2\"}}\n::\n"),
            6 => format!("::plot{{id=\"p-{x}\" dataset=\"{y}\" column=\"k\" x=\"k\" y=\"v\"}}\n::\n"),
            7 => format!("::dataset{{id=\"{x}\" format=\"csv\"}}\nk,v\n1,2\n::\n"),
            8 => format!("::note{{id=\"n-{x}\" aliases=\"al-{y}\"{nv}}}\n:::risk{{id=\"r-{y}\"}}\nInner [[al-{x}]].\n:::\n::\n"),
            9 => format!("- item [[{x}]]\n- item 0.8\n"),
            10 => format!("::risk{{id=\"risk-{x}\" owner=\"{y}\"}}\nR.\n::\n"),
            11 => format!("::decision{{id=\"dec-{x}\"}}\nD.\n::\n"),
            12 => format!("::citation{{id=\"cit-{x}\" accessed=\"2020-01-01\"}}\nC.\n::\n"),
            _ => format!("| h | [[{y}]] |\n| --- | --- |\n| 0.8 | x |\n"),
        }
    })
}

/// A same-line-count edit: occurrence `nth` (wrapped) of one of the swaps'
/// `from` tokens becomes `to` (ids, numbers, flags, names, references).
fn token_edit(src: &str, nth: usize, pick: usize) -> Option<String> {
    const SWAPS: &[(&str, &str)] = &[
        ("0.8", "0.3"),
        ("\"a\"", "\"b\""),
        ("\"b\"", "\"c\""),
        ("[[c]]", "[[d]]"),
        ("[[a]]", "[[zz]]"),
        (" noverify", ""),
        ("Claim", "A claim"),
        ("owner=", "holder="),
        ("::claim", "::note"),
        ("times", "runs"),
        ("al-a", "al-b"),
        ("default=5", "default=50"),
        ("* 2", "* c"),
        ("1,2", "1,x"),
        ("2020-01-01", "2025-12-01"),
        ("D.", "Decided."),
        ("k,v", "kk,v"),
        ("format=\"csv\"", "format=\"tsv\""),
        ("::control", "::metric"),
    ];
    let (from, to) = SWAPS[pick % SWAPS.len()];
    let hits: Vec<usize> = src.match_indices(from).map(|(at, _)| at).collect();
    let at = *hits.get(nth % hits.len().max(1))?;
    Some(format!("{}{to}{}", &src[..at], &src[at + from.len()..]))
}

/// Re-validates one edit if the splice and the shortcut both apply.
fn revalidated(src: &str, edited: &str, opts: &Options) -> Option<(Validation, Validation)> {
    let old = parse(src);
    let pre = validate_report(&old, opts);
    let splice = crate::doc::reparse::plan(src, &old, edited)?;
    let mut tree = old.clone();
    let replaced = splice.apply(&mut tree)?;
    let fast = revalidate(&pre, &tree, &replaced, opts)?;
    Some((fast, validate_report(&tree, opts)))
}

fn revalidation_case() -> impl proptest::strategy::Strategy<Value = (String, usize, usize)> {
    use proptest::strategy::Strategy;
    (
        proptest::collection::vec(revalidation_block(), 1..30),
        0..400usize,
        0..64usize,
    )
        .prop_map(|(blocks, line, pick)| {
            let mut src = String::from("---\nprofile: research\n---\n\n# Doc\n\n");
            for b in blocks {
                src.push_str(&b);
                src.push('\n');
            }
            (src, line, pick)
        })
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]

    /// Whenever the shortcut answers, it answers what a full validation does.
    #[test]
    fn revalidation_matches_full_validation((src, line, pick) in revalidation_case()) {
        let Some(edited) = token_edit(&src, line, pick) else { return Ok(()) };
        if let Some((fast, full)) = revalidated(&src, &edited, &opts()) {
            proptest::prop_assert_eq!(fast, full, "{}\n=== edited ===\n{}", src, edited);
        }
    }
}

#[test]
fn revalidation_shortcut_is_taken_and_refused() {
    use proptest::strategy::{Strategy, ValueTree};
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = revalidation_case();
    let (mut edits, mut shortcuts) = (0, 0);
    for _ in 0..3000 {
        let (src, line, pick) = strategy.new_tree(&mut runner).expect("a case").current();
        let Some(edited) = token_edit(&src, line, pick) else {
            continue;
        };
        edits += 1;
        if let Some((fast, full)) = revalidated(&src, &edited, &opts()) {
            assert_eq!(fast, full);
            shortcuts += 1;
        }
    }
    // Both paths are exercised: edits of attributes and text take the
    // shortcut; edits of ids, references and registries are refused.
    assert!(
        shortcuts * 5 > edits,
        "{shortcuts} shortcuts for {edits} edits"
    );
    assert!(shortcuts < edits, "{shortcuts} shortcuts for {edits} edits");
}

fn full_has_line(src: &str, text: &str) -> bool {
    validate(&parse(src), &opts())
        .iter()
        .any(|d| d.message.contains(text))
}

#[test]
fn revalidation_refuses_a_changed_id_and_a_moved_line() {
    let src =
        "# Doc\n\n::claim{id=\"a\" confidence=0.8}\nBody.\n::\n\n::evidence{for=\"a\"}\nE.\n::\n";
    let opts = opts();
    // An attribute value: shortcut taken, same result.
    let (fast, full) = revalidated(src, &src.replace("0.8", "0.3"), &opts).expect("shortcut");
    assert_eq!(fast, full);
    // The id the evidence names: refused (the whole-document rules change).
    assert!(revalidated(src, &src.replace("id=\"a\"", "id=\"b\""), &opts).is_none());
    // Two siblings swap places: their identities change order, refused.
    let src = "# Doc\n\n:::note{id=\"x\"}\nb\n:::\n\n::risk{id=\"r\" owner=\"o\"}\nc\n::\n";
    let swapped = "# Doc\n\n::risk{id=\"r\" owner=\"o\"}\nc\n::\n\n:::note{id=\"x\"}\nb\n:::\n";
    assert!(revalidated(src, swapped, &opts).is_none());
    // A line moves from the paragraph to the note: the same line count and
    // ids, but `x` now starts a line earlier, which the repeat of `x`
    // further down must name: refused. (The fences change length so that
    // the edited lines end at one and the splice applies.)
    let src = "# Doc\n\nPara one\nPara two.\n\n:::note{id=\"x\"}\nb\n:::\n\nMiddle.\n\n::note{id=\"x\"}\nd\n::\n";
    let moved = "# Doc\n\nPara one two.\n\n::::note{id=\"x\"}\nb\nb2\n::::\n\nMiddle.\n\n::note{id=\"x\"}\nd\n::\n";
    assert!(revalidated(src, moved, &opts).is_none());
    assert!(full_has_line(moved, "first used on line 5"));
    // A longer body: lines after it move, refused.
    assert!(revalidated(src, &src.replace("Body.\n", "Body.\nMore.\n"), &opts).is_none());
}

/// Dataset files for the tests: read from `dir` through a closure, so the
/// validator sees only what the trait hands it.
struct FnFiles<F>(F);

impl<F> std::fmt::Debug for FnFiles<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FnFiles")
    }
}

impl<F: Fn(&str) -> Option<String> + Send + Sync> super::DatasetFiles for FnFiles<F> {
    fn readable(&self, src: &str) -> bool {
        (self.0)(src).is_some()
    }
    fn read_small(&self, src: &str, max: u64) -> Option<String> {
        (self.0)(src).filter(|t| t.len() as u64 <= max)
    }
}

fn files_in(dir: std::path::PathBuf) -> std::sync::Arc<dyn super::DatasetFiles> {
    std::sync::Arc::new(FnFiles(move |src: &str| {
        std::fs::read_to_string(dir.join(src)).ok()
    }))
}

#[test]
fn broken_labelled_wikilink_is_an_error() {
    let src = "# T\n\nSee [[t|the title]] and [[zz|a label]].\n";
    let found = run(src, &opts());
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].code, "broken-reference");
    assert_eq!(found[0].severity, Severity::Error);
    assert_eq!(found[0].pos.map(|p| p.line), Some(3));
    assert!(
        found[0].message.starts_with("[[zz]] points at"),
        "{}",
        found[0].message
    );
    // Its range is the target as written, inside the labelled link.
    let doc = parse(src);
    let ranged = validate_with_ranges(src, &doc, &opts());
    let r = ranged[0].range.expect("a range").bytes();
    assert_eq!(&src[r], "zz");
}

/// Re-parses one edit in place and re-validates it if both shortcuts
/// apply: the shortcut's report and a fresh parse's.
fn revalidated_in_place(
    src: &str,
    edited: &str,
    opts: &Options,
) -> Option<(Validation, Validation)> {
    let mut tree = parse(src);
    let pre = validate_report(&tree, opts);
    let reparsed = crate::doc::reparse::reparse_in_place(src, &mut tree, edited)?;
    let fast = revalidate_reparsed(&pre, &tree, &reparsed, opts)?;
    Some((fast, validate_report(&parse(edited), opts)))
}

/// An edit of the frontmatter's second line (or a token swap elsewhere).
fn frontmatter_edit(src: &str, pick: usize) -> String {
    const LINES: &[&str] = &[
        "profile: research\n",
        "profile: technical\n",
        "xprofile: research\n",
        "profile: 'research'\n",
        "stale_citation_days: 1\n",
        "profiles: [research]\n",
        "",
        // A line more: every line after it moves.
        "profile: research\ntitle: T\n",
    ];
    src.replacen("profile: research\n", LINES[pick % LINES.len()], 1)
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

    /// The editor's path (`reparse_in_place`, then `revalidate_reparsed`):
    /// whenever it answers, it answers what a fresh parse and validation do.
    #[test]
    fn in_place_revalidation_matches_a_fresh_validation((src, line, pick) in revalidation_case()) {
        let edited = if pick % 4 == 0 {
            Some(frontmatter_edit(&src, pick / 4))
        } else {
            token_edit(&src, line, pick)
        };
        let Some(edited) = edited else { return Ok(()) };
        if let Some((fast, full)) = revalidated_in_place(&src, &edited, &opts()) {
            proptest::prop_assert_eq!(fast, full, "{}\n=== edited ===\n{}", src, edited);
        }
    }
}

/// Edits inside a directive's body and of the frontmatter take the
/// shortcut; a change of profile or of the citation window does not.
#[test]
fn in_place_revalidation_is_taken_for_bodies_and_frontmatter() {
    let src = "---\nprofile: research\n---\n\n# Doc\n\n## A\n\n::claim{id=\"c\"}\nBody [[c]].\n::\n\n::risk{id=\"r\"}\nNo owner.\n::\n\nEnd.\n";
    for edited in [
        src.replace("Body", "Bodies"),
        src.replace("No owner.", "Still no owner."),
        frontmatter_edit(src, 3),
        frontmatter_edit(src, 5),
    ] {
        let (fast, full) = revalidated_in_place(src, &edited, &opts())
            .unwrap_or_else(|| panic!("no shortcut for {edited}"));
        assert_eq!(fast, full, "{edited}");
    }
    for edited in [
        frontmatter_edit(src, 1),
        frontmatter_edit(src, 2),
        frontmatter_edit(src, 4),
        frontmatter_edit(src, 6),
        frontmatter_edit(src, 7),
    ] {
        assert!(
            revalidated_in_place(src, &edited, &opts()).is_none(),
            "{edited}"
        );
    }
}

//! `noma reconcile --base REV`: CI checks of a branch's documents against
//! its base (validity, append-only transcripts, replay to HEAD's bytes,
//! whether the branch's records still rebase onto the base's newer ones),
//! reported per document and per block; `--write` writes the rebased
//! documents and transcripts. See [`noma_git::merge::reconcile`](mod@noma_git::merge::reconcile).
//!
//! Formats: `human`, `json`, `github` (workflow-command annotations),
//! `sarif` (SARIF 2.1.0) and `markdown` (the PR summary of
//! [`noma_git::merge::summary`]). Exit 0 when nothing at error level was found,
//! 1 otherwise, 2 when the command could not run.

use serde_json::{json, Value};

use noma_git::merge::reconcile::{self, DocReport, Finding};

/// Output formats of `noma reconcile`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum ReconcileFormat {
    /// One line per document, block and finding.
    #[default]
    Human,
    /// The reports as JSON.
    Json,
    /// GitHub Actions workflow commands (`::error file=…::…`).
    Github,
    /// SARIF 2.1.0 (code-scanning upload).
    Sarif,
    /// A reviewer's summary in Markdown (PR comment, job summary): per
    /// document the changed blocks, by whom and why, and each check.
    Markdown,
}

/// Arguments of `noma reconcile`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The revision the branch will merge into (e.g. `main`, `origin/main`;
    /// a name with no local branch falls back to the one remote's
    /// `<remote>/<name>`).
    #[arg(long, value_name = "REV")]
    pub base: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: ReconcileFormat,
    /// Write the rebased documents and transcripts into the work tree.
    #[arg(long)]
    pub write: bool,
}

/// Runs `noma reconcile`.
pub fn run(args: Args) -> i32 {
    let cwd = std::env::current_dir().unwrap_or_else(|_| ".".into());
    let reports = match reconcile::check_branch(&cwd, &args.base, args.write) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("noma reconcile: {e}");
            return super::EXIT_USAGE;
        }
    };
    let ok = reports.iter().all(DocReport::ok);
    let printed = match args.format {
        ReconcileFormat::Human => {
            print_human(&reports);
            super::EXIT_OK
        }
        ReconcileFormat::Json => super::print_json(&json!({"ok": ok, "documents": reports})),
        ReconcileFormat::Github => {
            print_github(&reports);
            super::EXIT_OK
        }
        ReconcileFormat::Sarif => super::print_json(&sarif(&reports)),
        ReconcileFormat::Markdown => print_markdown(&cwd, &args.base, &reports),
    };
    if printed != super::EXIT_OK {
        return printed;
    }
    if ok {
        super::EXIT_OK
    } else {
        super::EXIT_FAIL
    }
}

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "NO"
    }
}

fn print_human(reports: &[DocReport]) {
    for r in reports {
        println!(
            "{}: valid {}, append-only {}, replays {}, rebases {} ({} branch record(s) onto {} new base record(s)){}",
            r.path,
            yes(r.valid),
            yes(r.append_only),
            yes(r.replays),
            yes(r.rebases),
            r.branch_records,
            r.base_records,
            if r.written { "; rebased files written" } else { "" }
        );
        for b in &r.blocks {
            println!(
                "  block {}: {} on the branch, rebase {}",
                b.id, b.change, b.rebase
            );
        }
        for f in &r.findings {
            let at = f.line.map(|l| format!(":{l}")).unwrap_or_default();
            println!(
                "  {} [{}] {}{at}: {}",
                f.level.to_uppercase(),
                f.code,
                f.path,
                f.message
            );
        }
    }
    let bad = reports.iter().filter(|r| !r.ok()).count();
    println!(
        "noma reconcile: {} document(s), {bad} with errors",
        reports.len()
    );
}

/// Prints the Markdown summary; exit 2 when the changed blocks cannot be
/// listed.
fn print_markdown(cwd: &std::path::Path, base: &str, reports: &[DocReport]) -> i32 {
    let cache = super::cache::open_for_cwd();
    match noma_git::merge::summary::collect(cwd, base, reports, &cache) {
        Ok(docs) => {
            print!("{}", noma_git::merge::summary::markdown(reports, &docs));
            super::EXIT_OK
        }
        Err(e) => {
            eprintln!("noma reconcile: {e}");
            super::EXIT_USAGE
        }
    }
}

/// Escapes a workflow-command message (`%`, CR, LF) or property (also `:` and `,`).
fn gh_escape(s: &str, property: bool) -> String {
    let mut out = s
        .replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A");
    if property {
        out = out.replace(':', "%3A").replace(',', "%2C");
    }
    out
}

fn print_github(reports: &[DocReport]) {
    for r in reports {
        for f in &r.findings {
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
                Some(b) => format!("[block {b}] {}", f.message),
                None => f.message.clone(),
            };
            println!("::{cmd} {}::{}", props.join(","), gh_escape(&msg, false));
        }
    }
}

fn sarif_result(f: &Finding) -> Value {
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
        "message": {"text": f.message},
        "locations": [{"physicalLocation": loc}],
    });
    if let Some(b) = &f.block {
        result["properties"] = json!({"block": b});
    }
    result
}

/// The reports as a SARIF 2.1.0 log.
pub fn sarif(reports: &[DocReport]) -> Value {
    let findings: Vec<&Finding> = reports.iter().flat_map(|r| &r.findings).collect();
    let mut rules: Vec<&str> = findings.iter().map(|f| f.code.as_str()).collect();
    rules.sort_unstable();
    rules.dedup();
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "noma",
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": "https://github.com/ferax564/noma",
                "rules": rules.iter().map(|r| json!({
                    "id": r,
                    "shortDescription": {"text": format!("noma {r}")},
                })).collect::<Vec<_>>(),
            }},
            "results": findings.iter().map(|f| sarif_result(f)).collect::<Vec<_>>(),
        }],
    })
}

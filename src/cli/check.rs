//! `noma check`: validate documents.

use std::path::PathBuf;

use noma_core::diag::{Diagnostic, Severity};
use noma_core::doc::parse;
use noma_core::validate::{self, Options};
use noma_provenance::config::{validate_options_for, Overrides};

use super::Format;
use crate::report::output::{Exit, Output};

/// Arguments of `noma check`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The .noma files (or book manifests, .noma.yml) to validate; a
    /// directory stands for the .noma files under it that .gitignore does
    /// not exclude; none, for the repository's.
    files: Vec<PathBuf>,
    /// Output format: `human` (one line per diagnostic) or `json` (§4.3 diagnostics).
    #[arg(long, value_enum, default_value_t)]
    format: Format,
    /// Treat warnings as errors (reported as errors, exit 1), as the
    /// policy's `strict: true` does; the repository's `.noma/config.yml`
    /// (`strict`, `ignore_rules`) applies as in the hooks.
    #[arg(long)]
    strict: bool,
    /// Drop diagnostics with this rule code (repeatable), besides the
    /// policy's `ignore_rules`.
    #[arg(long = "ignore-rule", value_name = "CODE")]
    ignore_rules: Vec<String>,
    /// Validate against this profile instead of the frontmatter's.
    #[arg(long)]
    profile: Option<String>,
}

/// One file's outcome: its shown path, whether it passes, its findings
/// (as printed by `--format json`).
#[derive(serde::Serialize)]
struct FileReport {
    file: String,
    ok: bool,
    diagnostics: Vec<Diagnostic>,
}

impl FileReport {
    fn new(file: String, diagnostics: Vec<Diagnostic>) -> FileReport {
        FileReport {
            file,
            ok: !fails(&diagnostics),
            diagnostics,
        }
    }
}

/// Runs `noma check`. The process exits after it: the last tree is left
/// to the kernel (see the end of the loop).
pub fn run(args: Args) -> Output {
    let mut reports = Vec::new();
    let mut last_tree = None;
    let (files, mut c) = super::check_files::targets(&args.files);
    if files.is_empty() {
        return c;
    }
    for path in &files {
        if noma_store::engine::is_book_manifest(path) {
            c.extend(check_book(&args, path, &mut reports));
            continue;
        }
        // Freed before the next file is read, so that checking many files
        // holds one tree at a time.
        drop(last_tree.take());
        let src = match super::read_doc(path) {
            Ok(s) => s,
            Err(said) => {
                c.extend(said);
                continue;
            }
        };
        let opts = match options(&args, path) {
            Ok(o) => o,
            Err(said) => {
                c.extend(said);
                continue;
            }
        };
        let doc = parse(&src);
        let diags = validate::validate(&doc, &opts);
        last_tree = Some(doc);
        let report = FileReport::new(path.display().to_string(), diags);
        if !report.ok {
            c.at_least(Exit::Failed);
        }
        reports.push(report);
    }
    // Exit without freeing: the process ends after the
    // report, and the kernel reclaims the last tree at once, where freeing
    // it node by node is 3-4% of checking a 3 MB document.
    std::mem::forget(last_tree);
    match args.format {
        Format::Human => {
            for FileReport {
                file, diagnostics, ..
            } in reports
            {
                let errors = diagnostics
                    .iter()
                    .filter(|d| d.severity == Severity::Error)
                    .count();
                let warnings = diagnostics
                    .iter()
                    .filter(|d| d.severity == Severity::Warning)
                    .count();
                let summary = format!("{file}: {errors} error(s), {warnings} warning(s)");
                // Written line by line when printed: the text of a report
                // of many findings is never held whole.
                if !diagnostics.is_empty() {
                    c.out_with(move |w| {
                        diagnostics
                            .iter()
                            .try_for_each(|d| writeln!(w, "{}", human_line(&file, d)))
                    });
                }
                c.err(summary);
            }
        }
        // Streamed when printed: the reports are never turned into a `Value`.
        Format::Json => c.json_typed(reports),
    }
    c
}

/// Checks the chapters of the book `path` names (§2.3 scoping), adding a
/// report per chapter; says how that ends (and why it could not run).
fn check_book(args: &Args, path: &std::path::Path, reports: &mut Vec<FileReport>) -> Output {
    let opts = match options(args, path) {
        Ok(o) => o,
        Err(said) => return said,
    };
    match noma_store::book::check(path, &opts) {
        Ok(chapters) => chapters.into_iter().fold(Output::default(), |mut out, c| {
            let report = FileReport::new(c.path.display().to_string(), c.diagnostics);
            if !report.ok {
                out.at_least(Exit::Failed);
            }
            reports.push(report);
            out
        }),
        Err(e) => Output::error(format!("noma check: {e}"), Exit::NotRun),
    }
}

/// The validator's options for the document at `path`: its work tree's
/// policy with the flags added, as the hooks and the editor build them; a
/// malformed policy file is reported (exit 2).
fn options(args: &Args, path: &std::path::Path) -> Result<Options, Output> {
    let overrides = Overrides {
        strict: args.strict,
        ignore_rules: args.ignore_rules.clone(),
        profile: args.profile.clone(),
    };
    validate_options_for(path, &overrides)
        .map_err(|e| Output::error(format!("noma check: {e}"), Exit::NotRun))
}

/// Whether `diags` fail the check: any error (warnings are errors under
/// `--strict` or the policy's `strict: true`).
fn fails(diags: &[Diagnostic]) -> bool {
    diags.iter().any(|d| d.severity == Severity::Error)
}

/// `ERROR [code] path:line:col: message`, shared with the git hooks.
pub use noma_core::diag::human_line;

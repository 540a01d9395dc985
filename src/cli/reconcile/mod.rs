//! `noma reconcile --base REV`: CI checks of a branch's documents against
//! its base (validity, append-only transcripts, replay to HEAD's bytes,
//! whether the branch's records still rebase onto the base's newer ones),
//! reported per document and per block; `--write` writes the rebased
//! documents and transcripts. See [`noma_git::merge::reconcile`](mod@noma_git::merge::reconcile).
//!
//! Formats: `human`, `json`, `github` (workflow-command annotations),
//! `sarif` (SARIF 2.1.0), rendered by [`report`], and `markdown` (the PR summary,
//! [`markdown`]). Exit 0 when nothing at error level was found,
//! 1 otherwise, 2 when the command could not run.

use serde_json::json;

use noma_git::merge::reconcile::{self, DocReport};

use crate::report::output::{Exit, Output};

pub mod markdown;
pub mod report;

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
    /// Documents checked at once, at most (default: the machine's
    /// processors, up to 8, one per 16 documents); `--write` checks one at
    /// a time. The report is the same whatever the number.
    #[arg(long, short = 'j', value_name = "N")]
    pub jobs: Option<std::num::NonZeroUsize>,
}

/// Runs `noma reconcile`.
pub fn run(args: Args) -> Output {
    let cwd = std::env::current_dir().unwrap_or_else(|_| ".".into());
    let cache = super::cache::open_for_cwd();
    let run = reconcile::Run {
        write: args.write,
        jobs: args.jobs,
    };
    let reports = match reconcile::check_branch(&cwd, &args.base, run, &cache) {
        Ok(r) => r,
        Err(e) => return Output::error(format!("noma reconcile: {e}"), Exit::NotRun),
    };
    let ok = reports.iter().all(DocReport::ok);
    let mut c = Output::ending(if ok { Exit::Passed } else { Exit::Failed });
    match args.format {
        ReconcileFormat::Human => c.out_text(report::human(&reports)),
        ReconcileFormat::Json => c.json(json!({"ok": ok, "documents": reports})),
        ReconcileFormat::Github => c.out_text(report::github(&reports)),
        ReconcileFormat::Sarif => c.json(report::sarif(&reports, env!("CARGO_PKG_VERSION"))),
        ReconcileFormat::Markdown => {
            return markdown_summary(&cwd, &args.base, &reports, &cache, c)
        }
    }
    c
}

/// The Markdown summary added to `c`; exit 2 alone when the changed blocks
/// cannot be listed.
fn markdown_summary(
    cwd: &std::path::Path,
    base: &str,
    reports: &[DocReport],
    cache: &noma_git::cache::BlockCache,
    mut c: Output,
) -> Output {
    match noma_git::merge::summary::collect(cwd, base, reports, cache) {
        Ok(docs) => {
            c.out_text(markdown::markdown(reports, &docs));
            c
        }
        Err(e) => Output::error(format!("noma reconcile: {e}"), Exit::NotRun),
    }
}

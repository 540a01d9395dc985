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
pub fn run(args: Args) -> i32 {
    let cwd = std::env::current_dir().unwrap_or_else(|_| ".".into());
    let cache = super::cache::open_for_cwd();
    let run = reconcile::Run {
        write: args.write,
        jobs: args.jobs,
    };
    let reports = match reconcile::check_branch(&cwd, &args.base, run, &cache) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("noma reconcile: {e}");
            return super::EXIT_USAGE;
        }
    };
    let ok = reports.iter().all(DocReport::ok);
    let printed = match args.format {
        ReconcileFormat::Human => {
            print!("{}", report::human(&reports));
            super::EXIT_OK
        }
        ReconcileFormat::Json => super::print_json(&json!({"ok": ok, "documents": reports})),
        ReconcileFormat::Github => {
            print!("{}", report::github(&reports));
            super::EXIT_OK
        }
        ReconcileFormat::Sarif => {
            super::print_json(&report::sarif(&reports, env!("CARGO_PKG_VERSION")))
        }
        ReconcileFormat::Markdown => print_markdown(&cwd, &args.base, &reports, &cache),
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

/// Prints the Markdown summary; exit 2 when the changed blocks cannot be
/// listed.
fn print_markdown(
    cwd: &std::path::Path,
    base: &str,
    reports: &[DocReport],
    cache: &noma_git::cache::BlockCache,
) -> i32 {
    match noma_git::merge::summary::collect(cwd, base, reports, cache) {
        Ok(docs) => {
            print!("{}", markdown::markdown(reports, &docs));
            super::EXIT_OK
        }
        Err(e) => {
            eprintln!("noma reconcile: {e}");
            super::EXIT_USAGE
        }
    }
}

//! `noma changed`: the blocks that changed since the merge base with a base
//! branch (committed, staged, unstaged and untracked edits), and the
//! reconciliation bookkeeping around that query, asked through
//! [`noma_git::changes::questions`].
//!
//! Paths given on the command line are repository-relative (the same as the
//! library and MCP tools), whatever the current directory.
//!
//! A moved document (see [`noma_git::changes`]) is one `renamed` entry: JSON
//! `"change": "renamed"` with `"old_path"`; human `NEW (renamed from OLD:
//! counts)`, or with `--docs` `NEW<TAB>renamed from OLD<TAB>counts`.

use super::Format;
use crate::report::output::{Exit, Output};
use noma_git::changes::questions::{self, Ask};
use noma_git::changes::{ChangesError, Query};
use noma_git::git::repo::Repo;

/// Arguments of `noma changed`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Branch (or revision) to compare with: its merge base with HEAD. A
    /// name with no local branch falls back to the one remote's
    /// `<remote>/<name>` (as `git checkout` does).
    #[arg(long, value_name = "BRANCH", required_unless_present_any = ["snapshot", "clear"])]
    pub base: Option<String>,
    /// Only these repository-relative .noma documents.
    #[arg(value_name = "FILE")]
    pub files: Vec<String>,
    /// Leave out paths matching this glob (repeatable; `*` matches `/` too).
    #[arg(long = "exclude", value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Include each changed block's source at the base (JSON `old_source`).
    #[arg(long)]
    pub old_source: bool,
    /// Ignore the block cache and the reconciliation state.
    #[arg(long)]
    pub bypass_cache: bool,
    /// Only list changed documents with block counts.
    #[arg(long, conflicts_with_all = ["mark_reconciled", "snapshot", "clear"])]
    pub docs: bool,
    /// Mark the changed blocks of FILE... (all changed documents when none
    /// is given) as reconciled at their current hash.
    #[arg(long, conflicts_with_all = ["snapshot", "clear"])]
    pub mark_reconciled: bool,
    /// Write .noma/reconciliation_state.json (a committable baseline).
    #[arg(long, conflicts_with = "clear")]
    pub snapshot: bool,
    /// Delete the local reconciliation marks.
    #[arg(long)]
    pub clear: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// Runs `noma changed`.
pub fn run(args: Args) -> Output {
    let repo = match Repo::from_env() {
        Ok(r) => r,
        Err(e) => return Output::error(format!("noma: {e}"), Exit::NotRun),
    };
    let Some(root) = repo.workdir() else {
        return Output::error(format!("noma: {}", ChangesError::Bare), Exit::NotRun);
    };
    let asked = asked(&args);
    let uses_cache = asked.uses_cache();
    let cache = if args.bypass_cache || !uses_cache {
        noma_git::cache::BlockCache::disabled()
    } else {
        super::cache::open(&root)
    };
    let mut c = match questions::answer(&repo, asked, &cache) {
        Ok(answer) => {
            let mut c = Output::default();
            for n in answer.notices() {
                c.err(format!("noma: notice: {}", noma_core::display::escape(n)));
            }
            c.extend(said(args.format, &answer));
            c
        }
        Err(e) => Output::error(format!("noma: {e}"), Exit::NotRun),
    };
    if let Some(n) = cache.notice().filter(|_| uses_cache) {
        c.err(format!("noma: notice: {n}"));
    }
    c
}

/// The question the flags ask.
fn asked(args: &Args) -> Ask {
    let query = || Query {
        base: args.base.clone().unwrap_or_default(),
        files: args.files.clone(),
        exclude_patterns: args.exclude.clone(),
        include_old_source: args.old_source,
        bypass_cache: args.bypass_cache,
    };
    if args.clear {
        Ask::Clear
    } else if args.snapshot {
        Ask::Snapshot
    } else if args.mark_reconciled {
        Ask::Mark {
            base: args.base.clone().unwrap_or_default(),
            files: args.files.clone(),
        }
    } else if args.docs {
        Ask::Docs(query())
    } else {
        Ask::Blocks(query())
    }
}

/// The answer as JSON (compact: answers can be large and are read by
/// programs) or as the human text, in one write.
fn said(format: Format, answer: &questions::Answer) -> Output {
    let text = match format {
        Format::Json => match serde_json::to_string(answer) {
            Ok(s) => s + "\n",
            Err(e) => {
                return Output::error(format!("noma: cannot serialise output: {e}"), Exit::NotRun)
            }
        },
        // Paths and block ids are whatever a commit named them: escaped
        // but for the report's own lines and tabs.
        Format::Human => {
            noma_core::display::escape_text(&crate::report::changes::answer_text(answer))
                .into_owned()
        }
    };
    let mut c = Output::default();
    c.out_text(text);
    c
}

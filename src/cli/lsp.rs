//! `noma lsp`: the language server on stdin/stdout.
//!
//! stdout carries the protocol only; messages for people go to stderr.
//! Exit codes: 0 the client shut the session down, 2 the session broke
//! (the client went away or sent `exit` without `shutdown`). A malformed
//! message is answered with an error or skipped with a line on stderr.

use std::path::Path;

use noma_core::transcript::{Actor, ActorKind};
use noma_git::cache::BlockCache;
use noma_git::history;
use noma_git::record::{record_file_with, Outcome};

use super::output::note;
use crate::report::output::{Exit, Output};

/// Arguments of `noma lsp`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Editors start it as `noma lsp` for .noma files; set-up for VS Code, \
Neovim, Helix and Zed: docs/editors.md"
)]
pub struct Args {
    /// Accepted for editors that pass it by default (stdio is the only transport).
    #[arg(long)]
    pub stdio: bool,
}

/// With `1`, the server logs each analysis on stderr and answers
/// `noma/text` requests (for tests).
const TRACE_ENV: &str = "NOMA_LSP_TRACE";

/// Runs `noma lsp`.
pub fn run(_args: Args) -> Output {
    // A client that goes away must not kill us with SIGPIPE halfway through
    // a write: a failed write ends the session with an error instead.
    #[cfg(unix)]
    // SAFETY: changes only the disposition of SIGPIPE, before any thread
    // of ours is started.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    // Tests count analyses and compare the server's text with theirs.
    let trace = std::env::var_os(TRACE_ENV).is_some_and(|v| v == "1");
    let log = |e: noma_lsp::Event<'_>| match e {
        noma_lsp::Event::Skipped(why) => note(format!("noma lsp: {why}")),
        noma_lsp::Event::Analysed { uri, bytes } if trace => {
            note(format!("noma lsp: analysed {uri} ({bytes} bytes)"));
        }
        noma_lsp::Event::Analysed { .. } => {}
    };
    let settings = noma_lsp::Settings {
        guard: Some(&Recorder),
        log: &log,
        debug: trace,
    };
    match noma_lsp::serve_stdio(settings) {
        Ok(()) => Output::default(),
        Err(e) => Output::error(format!("noma lsp: {e}"), Exit::NotRun),
    }
}

/// The transcript's state and `noma record`, for the server's
/// `unrecorded-edit` diagnostics and its "Record this edit" action.
struct Recorder;

impl noma_lsp::Guard for Recorder {
    fn last_state(&self, path: &Path) -> Option<String> {
        noma_git::record::last_state(path).ok().flatten()
    }

    fn record(&self, path: &Path) -> Result<String, noma_lsp::GuardError> {
        let actor = Actor {
            kind: ActorKind::Human,
            name: noma_git::actor::default_name(path).name,
            model: None,
            version: None,
        };
        // Signed as `noma record` signs by default (the policy's key).
        let step =
            noma_git::provenance::writer::step_for(path, None, false).map_err(|e| e.to_string())?;
        match record_file_with(path, actor, None, step.as_ref()) {
            Ok(Outcome::NothingToRecord) => Ok("nothing to record".to_string()),
            Ok(Outcome::LineEndingsRestored { line_endings }) => Ok(format!(
                "gave the file back its {} line endings; nothing else to record",
                line_endings.recorded.name()
            )),
            Ok(Outcome::Recorded {
                ops, transcript, ..
            }) => Ok(format!("recorded {} op(s) in {transcript}", ops.len())),
            Err(e) => Err(e.to_string().into()),
        }
    }

    fn rename(&self, path: &Path, from: &str, to: &str) -> Result<String, noma_lsp::GuardError> {
        super::patch::rename::rename_in_place(path, from, to, "renamed in the editor")
            .map_err(Into::into)
    }

    fn provenance(&self, path: &Path) -> Vec<noma_lsp::RecordProblem> {
        noma_git::provenance::report::problems_if_asked(path)
            .into_iter()
            .map(|p| noma_lsp::RecordProblem {
                error: p.level == "error",
                code: p.code.to_string(),
                line: p.line,
                message: p.message,
            })
            .collect()
    }

    fn history(&self, path: &Path, id: &str, limit: usize) -> Vec<String> {
        let dir = path.parent().unwrap_or(Path::new("."));
        let cache = super::cache::cache_root(dir)
            .map_or_else(BlockCache::disabled, |root| BlockCache::open(&root));
        // A document without a transcript has no history: nothing to show.
        let Ok(changes) = history::block_log(&cache, path, None, Some(id), Some(limit)) else {
            return Vec::new();
        };
        changes.iter().map(change_line).collect()
    }
}

/// One change as the hover shows it.
fn change_line(c: &history::BlockChange) -> String {
    let or_none = |v: &Option<String>| v.clone().unwrap_or_else(|| "—".to_string());
    let commit = c
        .commit
        .as_deref()
        .map_or("uncommitted", |s| &s[..s.len().min(8)]);
    format!(
        "`{}` by {} at {}; signed by {}, approved by {}; commit {commit}",
        c.op,
        c.actor,
        c.ts,
        or_none(&c.signed_by),
        or_none(&c.approved_by),
    )
}

//! `noma repair`: the explicit writer for what verifiers only report.

use std::path::PathBuf;

use super::Format;
use crate::report::output::{Exit, Output};
use noma_git::merge::joined_file::{self as joined, unjoin_file};
use noma_store::engine;

/// Arguments of `noma repair`.
///
/// Takes the document's transcript lock. During a merge, rebase or
/// cherry-pick of a document one side moved and the other patched, whose
/// transcripts git did not pair, both sides' records (and sidecars) are
/// merged at the new path as the driver would. A transcript whose records
/// two branches joined line by line (a merge without noma's driver that
/// kept both sides) is made linear as the merge driver would have merged
/// it. Then it finishes or undoes a request
/// that was interrupted (its intent marker is the evidence): a partial
/// append is cut back, a committed request whose document lags is rolled
/// forward (onto a hand edit made since, where its ops still apply).
/// Bytes after the transcript's last newline that no marker explains are
/// moved to `<transcript>.torn`. A document its transcript does not
/// explain is reported with the next step, never overwritten: `noma
/// record` records such an edit.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The .noma document. Omitted during a merge, rebase or cherry-pick:
    /// every moved document whose old transcript git left unmerged.
    pub file: Option<PathBuf>,
    /// Transcript path (default: the document path plus .patches).
    #[arg(long, value_name = "PATH")]
    pub transcript: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// Runs `noma repair`.
pub fn run(args: Args) -> Output {
    let Some(file) = args.file.clone() else {
        return repair_unpaired(&args);
    };
    run_file(&args, file)
}

/// `noma repair` with no document: each moved document git left an
/// unmerged old transcript for, as `noma repair NEW` would.
fn repair_unpaired(args: &Args) -> Output {
    if args.transcript.is_some() {
        return refused(
            "--transcript needs the document it belongs to",
            Exit::NotRun,
        );
    }
    let docs = match noma_git::merge::moved::unpaired_moves(std::path::Path::new(".")) {
        Ok(d) => d,
        Err(e) => return refused(e, Exit::Failed),
    };
    if docs.is_empty() {
        return refused(
            "no merge, rebase or cherry-pick left a moved document's old transcript unmerged; name the document: noma repair FILE",
            Exit::NotRun,
        );
    }
    docs.into_iter().fold(Output::default(), |mut c, d| {
        c.extend(run_file(args, d));
        c
    })
}

/// `noma repair: {why}` on stderr, ending with `exit`.
fn refused(why: impl std::fmt::Display, exit: Exit) -> Output {
    Output::error(format!("noma repair: {why}"), exit)
}

/// `noma repair FILE`.
fn run_file(args: &Args, file: PathBuf) -> Output {
    let args = &Args {
        file: Some(file.clone()),
        transcript: args.transcript.clone(),
        format: args.format,
    };
    let tpath = args
        .transcript
        .clone()
        .unwrap_or_else(|| engine::default_transcript_path(&file));
    // A document one side moved and the other patched, whose transcripts
    // git did not pair: both sides' records merged at the new path.
    if args.transcript.is_none() {
        match noma_git::merge::moved::resolve_moved(&file) {
            Ok(Some(m)) => return report_done(args, &m, &m.messages, &m.next_step),
            Ok(None) => {}
            Err(e) => return refused(e, Exit::Failed),
        }
    }
    // Git's conflict markers (a merge without noma's driver) are resolved
    // first, as the driver would have merged: until then nothing parses.
    if tpath.is_file() {
        match noma_git::merge::conflicted::resolve_file(&file, &tpath) {
            Ok(Some(r)) => return report_done(args, &r, &r.messages, &r.next_step),
            Ok(None) => {}
            Err(e) => return refused(e, Exit::Failed),
        }
    }
    // A transcript two branches' records were joined into is made linear
    // first: until then the document is no state of it.
    let unjoined = if tpath.is_file() {
        match unjoin_file(&file, &tpath) {
            Ok(u) => u,
            Err(e) => {
                let exit = match e {
                    joined::UnjoinError::Unreconcilable { .. } => Exit::Failed,
                    _ => Exit::NotRun,
                };
                return refused(e, exit);
            }
        }
    } else {
        None
    };
    if let Some(u) = unjoined.as_ref().filter(|u| !u.document_matches) {
        // The document awaits `noma record`; the checks below would only
        // call it an unrecorded edit.
        return report(args, Some(u), &engine::Recovery::default());
    }
    let recovery = match engine::repair_file(&file, args.transcript.as_deref()) {
        Ok(r) => r,
        Err(e) => {
            let exit = if e.is_check_failure() {
                Exit::Failed
            } else {
                Exit::NotRun
            };
            return refused(e, exit);
        }
    };
    report(args, unjoined.as_ref(), &recovery)
}

/// What `noma repair` did: `unjoined` is the linearized joined transcript.
fn report(args: &Args, unjoined: Option<&joined::Unjoined>, recovery: &engine::Recovery) -> Output {
    #[derive(serde::Serialize)]
    struct Out<'a> {
        #[serde(flatten)]
        recovery: &'a engine::Recovery,
        #[serde(skip_serializing_if = "Option::is_none")]
        unjoined: Option<&'a joined::Unjoined>,
    }
    let mut c = Output::default();
    match args.format {
        Format::Json => c.json_now(&Out { recovery, unjoined }),
        Format::Human => {
            let messages: Vec<&String> = unjoined
                .map(|u| &u.messages[..])
                .unwrap_or_default()
                .iter()
                .chain(&recovery.messages)
                .collect();
            if messages.is_empty() && recovery.next_step.is_none() {
                c.out("nothing to repair: the transcript ends cleanly and explains the document");
            }
            for m in messages {
                c.out(format!("repaired: {m}"));
            }
            let next = unjoined.and_then(|u| u.next_step.as_ref());
            for next in next.into_iter().chain(&recovery.next_step) {
                c.out(format!("next: {next}"));
            }
        }
    }
    c
}

/// What `noma repair` did to a transcript git left with conflict markers
/// or to a moved document's unpaired transcripts: `done` as JSON, else its
/// `messages` and `next` step.
fn report_done(
    args: &Args,
    done: &impl serde::Serialize,
    messages: &[String],
    next: &str,
) -> Output {
    let mut c = Output::default();
    match args.format {
        Format::Json => c.json_now(done),
        Format::Human => {
            for m in messages {
                c.out(format!("repaired: {m}"));
            }
            c.out(format!("next: {next}"));
        }
    }
    c
}

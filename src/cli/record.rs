//! `noma record`: record a hand edit as block-level ops (actor kind human).

use std::path::PathBuf;

use super::Format;
use crate::report::output::{Exit, Output};
use noma_core::transcript::{Actor, ActorKind};
use noma_git::record::{record_file_with, Outcome, RecordError};

/// Arguments of `noma record`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Rebuilds the transcript's last state, diffs it against the file and appends \
the ops that reproduce the file exactly (actor kind \"human\"): v1.0 block ops where they reach, \
the extension op x-noma/replace_lines for the rest (prose, lists, frontmatter; policy \
record_text_edits). A transcript with no applied record starts with a genesis record from the \
empty document. An edit that introduces validation errors (an unresolved ::conflict block, say) \
is not recorded. The document is not rewritten, except that a file saved with other line endings \
than its recorded state's (an editor's CRLF) gets the recorded ones back where git commits bytes \
as they are; only the edited blocks are recorded either way. Exit 0 recorded or nothing to \
record, 1 the edit cannot be recorded, 2 could not run."
)]
pub struct Args {
    /// The edited .noma document.
    pub file: PathBuf,
    /// Actor name (default: git's user.name, then $USER).
    #[arg(long, value_name = "N")]
    pub actor_name: Option<String>,
    /// Why the edit was made (recorded as `reason`).
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
    /// Sign the records with this Ed25519 OpenSSH private key (default:
    /// $NOMA_SIGNING_KEY, or git's user.signingkey with gpg.format=ssh
    /// when the policy turns provenance on).
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// Do not sign, even when a key is configured.
    #[arg(long, conflicts_with = "key")]
    pub no_sign: bool,
}

/// Runs `noma record`.
pub fn run(args: Args) -> Output {
    if let Err(said) = super::noma_path("record", &args.file, false) {
        return said;
    }
    let mut c = Output::default();
    // The name given, else git's (which opens the repository's config).
    let name = match args.actor_name.clone() {
        Some(name) => name,
        None => {
            let guessed = noma_git::actor::default_name(&args.file);
            if !guessed.from_git {
                c.err(format!(
                    "noma record: warning: git has no user.name here, so records name \"{}\" and commits will fail; set yours with `git config --global user.name \"Your Name\"` and `git config --global user.email you@example.com`",
                    guessed.name
                ));
            }
            // Said at once, before anything the write itself notes.
            super::output::print_now(&mut c);
            guessed.name
        }
    };
    let actor = Actor {
        kind: ActorKind::Human,
        name,
        model: None,
        version: None,
    };
    let shown = args.file.display().to_string();
    let step =
        match noma_git::provenance::writer::step_for(&args.file, args.key.as_deref(), args.no_sign)
        {
            Ok(step) => step,
            Err(e) => {
                c.extend(Output::error(format!("noma record: {e}"), Exit::NotRun));
                return c;
            }
        };
    match record_file_with(&args.file, actor, args.reason.clone(), step.as_ref()) {
        Ok(out) if args.format == Format::Json => c.json_typed(out),
        Ok(out) => outcome(&shown, out, &mut c),
        Err(RecordError::Usage(e)) => {
            c.extend(Output::error(format!("noma record: {e}"), Exit::NotRun));
        }
        Err(RecordError::Check(e)) => {
            c.extend(Output::error(
                format!("noma record: {shown}: {e}"),
                Exit::Failed,
            ));
        }
    }
    c
}

/// Says what `noma record` did, for people.
fn outcome(shown: &str, out: Outcome, c: &mut Output) {
    match out {
        Outcome::NothingToRecord => c.out(format!(
            "{shown}: nothing to record (the file is the transcript's last state)"
        )),
        Outcome::LineEndingsRestored { line_endings } => c.out(format!(
            "{shown}: {}; nothing else changed, nothing to record",
            line_endings_note(&line_endings)
        )),
        Outcome::Recorded {
            ops,
            transcript,
            genesis,
            line_endings,
        } => {
            if let Some(l) = &line_endings {
                c.out(format!(
                    "{shown}: {}; only the edit is recorded",
                    line_endings_note(l)
                ));
            }
            let mut names: Vec<&str> = ops
                .iter()
                .filter_map(|o| noma_core::patch::Op::parse(o).ok())
                .map(|o| o.name())
                .collect();
            if genesis {
                c.out(format!(
                    "{shown}: started {transcript} with a genesis record (from the empty document)"
                ));
                names.remove(0);
                if names.is_empty() {
                    return;
                }
            }
            c.out(format!(
                "{shown}: recorded {} op(s) in {transcript}: {}",
                names.len(),
                names.join(", ")
            ));
        }
    }
}

/// What `noma record` did about a file saved with other line endings
/// than its recorded state's, and how git treats them.
fn line_endings_note(l: &noma_git::record::LineEndings) -> String {
    let (saved, recorded) = (l.saved.name(), l.recorded.name());
    match &l.git_converts {
        Some(by) => format!(
            "saved with {saved} line endings, which git turns into {recorded} on commit ({by}): the records end at the {recorded} text git commits, and the file keeps its {saved} (`noma hooks install` keeps documents byte-exact instead)"
        ),
        None => format!(
            "saved with {saved} line endings, where its recorded state has {recorded}: gave it back its {recorded} line endings, as git commits a document's bytes as they are (set the editor to keep a file's line endings, e.g. .editorconfig's end_of_line)"
        ),
    }
}

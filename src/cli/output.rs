//! How the command line prints and ends: the one printer. Every command
//! returns an [`Output`] that [`emit`] prints; the exit code is mapped from
//! its [`Exit`] here only. What must reach the terminal before a command
//! ends (a prompt before reading the answer, a server's log lines, a report
//! streamed as it is made) goes through [`print_now`], [`note`] and
//! [`streamed`]: no other file of the binary writes to stdout or stderr
//! (`tests/it/architecture.rs` checks it).

use std::io::Write;

use crate::report::output::{Exit, Output, Part, Stdout};

/// Output format shared by the commands that have one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum Format {
    /// Text for people (what it holds depends on the command).
    #[default]
    Human,
    /// Machine-readable JSON.
    Json,
}

/// Reads a document file, or says why not (exit 2).
pub fn read_doc(path: &std::path::Path) -> Result<String, Output> {
    noma_store::fsio::read_document(path)
        .map_err(|e| Output::error(format!("noma: {e}"), Exit::NotRun))
}

/// Prints what a command said, in order (so stdout and stderr interleave
/// as written), and returns the process exit code.
pub fn emit(mut output: Output) -> i32 {
    print_now(&mut output);
    exit_code(output.exit)
}

/// The process exit code of `exit`: 0 passed, 1 failed, 2 not run.
fn exit_code(exit: Exit) -> i32 {
    match exit {
        Exit::Passed => 0,
        Exit::Failed => 1,
        Exit::NotRun => 2,
    }
}

/// Prints the parts `output` holds so far and removes them (its exit is
/// kept): for what must be seen before the command goes on, such as a
/// question before the answer is read. A failed write stops the printing,
/// is said on stderr and makes the exit "not run".
pub fn print_now(output: &mut Output) {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let parts = std::mem::take(&mut output.parts);
    let written = (parts.into_iter())
        .try_for_each(|part| print_part(&mut out, part))
        .and_then(|()| out.flush());
    if let Err(e) = written {
        let _ = writeln!(std::io::stderr(), "noma: cannot write output: {e}");
        output.at_least(Exit::NotRun);
    }
}

/// Writes one part; stdout is flushed before stderr is written, so the two
/// interleave as the command said them.
fn print_part(out: &mut Stdout, part: Part) -> std::io::Result<()> {
    match part {
        Part::Stdout(text) => out.write_all(text.as_bytes()),
        Part::Stderr(text) => {
            out.flush()?;
            std::io::stderr().write_all(text.as_bytes())
        }
        Part::Json(value) => write_json(out, |w| serde_json::to_writer_pretty(w, &value)),
        Part::JsonStream(write) => write_json(out, write),
        Part::TextStream(write) => write(out),
        Part::ErrStream(write) => {
            out.flush()?;
            // Buffered for the part (stderr is not): a line per finding
            // would otherwise be a write or two each.
            let mut err = std::io::BufWriter::new(std::io::stderr().lock());
            write(&mut err)?;
            err.flush()
        }
    }
}

/// Streams one JSON document into stdout's buffer, then a newline: a report
/// of millions of diagnostics is never held as one string.
fn write_json(
    out: &mut Stdout,
    write: impl FnOnce(&mut Stdout) -> serde_json::Result<()>,
) -> std::io::Result<()> {
    write(out).map_err(std::io::Error::from)?;
    writeln!(out)
}

/// Prints `line` and a newline on stderr at once: a note from inside a
/// long step (the block cache's notices, a server's log).
pub fn note(line: impl std::fmt::Display) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// Runs `report` with stdout buffered for it to write as it goes (a report
/// too long to hold), then returns what it said after (stderr, the exit);
/// a failed write is said and makes the exit "not run".
pub fn streamed(report: impl FnOnce(&mut Stdout) -> Output) -> Output {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let said = report(&mut out);
    match out.flush() {
        Ok(()) => said,
        Err(e) => Output::error(format!("noma: cannot write output: {e}"), Exit::NotRun),
    }
}

/// Refuses a path that is not a `.noma` document, saying why and what to
/// give instead (exit 2). The hooks, `noma reconcile` and the
/// merge driver look only at `*.noma` files, so a check or a transcript of
/// any other name would pass unseen. A book manifest passes when `book` is
/// set (the command has a book mode or its own refusal of one).
pub fn noma_path(cmd: &str, path: &std::path::Path, book: bool) -> Result<(), Output> {
    let name = path.to_string_lossy();
    let why = if name.ends_with(".noma") {
        return Ok(());
    } else if noma_store::engine::is_book_manifest(path) {
        if book {
            return Ok(());
        }
        format!(
            "{name} is a book manifest, which `noma {cmd}` does not take (§2.3); give one \
             chapter's .noma file"
        )
    } else if let Some(doc) = [".patches", ".provenance"]
        .iter()
        .find_map(|s| name.strip_suffix(s).filter(|d| d.ends_with(".noma")))
    {
        format!("{name} belongs to the document {doc}; run `noma {cmd} {doc}`")
    } else {
        format!(
            "{name} is not a .noma document: noma guards only *.noma files (the hooks and \
             `noma reconcile` never look at other names, so this would pass unchecked); rename \
             it to end in .noma"
        )
    };
    Err(Output::error(format!("noma {cmd}: {why}"), Exit::NotRun))
}

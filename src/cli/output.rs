//! How the command line prints and ends: exit codes, the `--format`
//! values, JSON on stdout, and what a library command said
//! ([`crate::report::output`]).

/// Exit code: success.
pub const EXIT_OK: i32 = 0;
/// Exit code: the check failed.
pub const EXIT_FAIL: i32 = 1;
/// Exit code: the command could not run.
pub const EXIT_USAGE: i32 = 2;

/// Output format shared by the commands that have one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum Format {
    /// Text for people (what it holds depends on the command).
    #[default]
    Human,
    /// Machine-readable JSON.
    Json,
}

/// Reads a document file or prints the error and returns `Err(EXIT_USAGE)`.
pub fn read_doc(path: &std::path::Path) -> Result<String, i32> {
    noma_store::fsio::read_document(path).map_err(|e| {
        eprintln!("noma: {e}");
        EXIT_USAGE
    })
}

/// Prints JSON to stdout (pretty), returning the exit code on failure. The
/// JSON is streamed: a report of millions of diagnostics is never held as
/// one string.
pub fn print_json<T: serde::Serialize>(value: &T) -> i32 {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let written = serde_json::to_writer_pretty(&mut out, value)
        .map_err(std::io::Error::from)
        .and_then(|()| writeln!(out))
        .and_then(|()| out.flush());
    match written {
        Ok(()) => EXIT_OK,
        Err(e) => {
            eprintln!("noma: cannot write output: {e}");
            EXIT_USAGE
        }
    }
}

/// Prints what a library command said, in order (so stdout and stderr
/// interleave as written); returns its exit code.
pub fn emit(output: crate::report::output::Output) -> i32 {
    use crate::report::output::{Exit, Part};
    for part in output.parts {
        match part {
            Part::Stdout(text) => print!("{text}"),
            Part::Stderr(text) => eprint!("{text}"),
            Part::Json(value) => {
                let code = print_json(&value);
                if code != EXIT_OK {
                    return code;
                }
            }
        }
    }
    match output.exit {
        Exit::Passed => EXIT_OK,
        Exit::Failed => EXIT_FAIL,
        Exit::NotRun => EXIT_USAGE,
    }
}

/// Refuses a path that is not a `.noma` document, saying why and what to
/// give instead: `Err(EXIT_USAGE)`. The hooks, `noma reconcile` and the
/// merge driver look only at `*.noma` files, so a check or a transcript of
/// any other name would pass unseen. A book manifest passes when `book` is
/// set (the command has a book mode or its own refusal of one).
pub fn noma_path(cmd: &str, path: &std::path::Path, book: bool) -> Result<(), i32> {
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
    eprintln!("noma {cmd}: {why}");
    Err(EXIT_USAGE)
}

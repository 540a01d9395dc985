//! What a command prints and how it exits, worded by the binary from the
//! libraries' data and printed by [`crate::cli::emit`]: text for stdout
//! and stderr in the order it is written (a terminal, and the README's
//! walkthrough, see both streams as one), JSON documents for stdout, and
//! an [`Exit`]. A large report is kept as a typed value and serialised
//! straight to stdout ([`Output::json_typed`]), never as a `Value`.

use serde_json::Value;

/// Buffered, locked stdout: what the printer streams a large JSON report
/// into (a concrete type, so the serialiser's many small writes inline).
pub type Stdout = std::io::BufWriter<std::io::StdoutLock<'static>>;

/// Writes one JSON document (without the newline after it) into stdout.
pub type JsonWriter = Box<dyn FnOnce(&mut Stdout) -> serde_json::Result<()>>;

/// Writes text into stdout when it is printed.
pub type TextWriter = Box<dyn FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>>;

/// How a command ends; ordered, so the worst of several steps is the
/// [`Ord::max`] of theirs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Exit {
    /// Done (exit 0).
    #[default]
    Passed,
    /// The check failed or the request was refused (exit 1).
    Failed,
    /// The command could not run (exit 2).
    NotRun,
}

/// One piece of output.
pub enum Part {
    /// Text for stdout, printed as is.
    Stdout(String),
    /// Text for stderr, printed as is.
    Stderr(String),
    /// A JSON document for stdout (pretty, one newline after it).
    Json(Value),
    /// A JSON document for stdout written by the closure (pretty, one
    /// newline after it): a typed report streamed, never built as a `Value`.
    JsonStream(JsonWriter),
    /// Text for stdout written by the closure when it is printed: a long
    /// report (one line per finding) is never held as one string.
    TextStream(TextWriter),
    /// Text for stderr written by the closure when it is printed (a line
    /// per finding of a long report).
    ErrStream(TextWriter),
}

impl std::fmt::Debug for Part {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Part::Stdout(t) => f.debug_tuple("Stdout").field(t).finish(),
            Part::Stderr(t) => f.debug_tuple("Stderr").field(t).finish(),
            Part::Json(v) => f.debug_tuple("Json").field(v).finish(),
            Part::JsonStream(_) => f.write_str("JsonStream(..)"),
            Part::TextStream(_) => f.write_str("TextStream(..)"),
            Part::ErrStream(_) => f.write_str("ErrStream(..)"),
        }
    }
}

/// Text and JSON values compare by content; a streamed document is known
/// only by writing it, so it equals nothing.
impl PartialEq for Part {
    fn eq(&self, other: &Part) -> bool {
        match (self, other) {
            (Part::Stdout(a), Part::Stdout(b)) | (Part::Stderr(a), Part::Stderr(b)) => a == b,
            (Part::Json(a), Part::Json(b)) => a == b,
            _ => false,
        }
    }
}

/// The output of a command, in order, and how it exits.
#[derive(Debug, Default, PartialEq)]
pub struct Output {
    /// What to print, in order.
    pub parts: Vec<Part>,
    /// How the command ends.
    pub exit: Exit,
}

impl Output {
    /// An empty output that ends with `exit`.
    pub fn ending(exit: Exit) -> Output {
        Output {
            parts: Vec::new(),
            exit,
        }
    }

    /// An output holding one stderr line, ending with `exit`.
    pub fn error(line: impl std::fmt::Display, exit: Exit) -> Output {
        let mut c = Output::ending(exit);
        c.err(line);
        c
    }

    /// Adds a stdout line (a newline is appended).
    pub fn out(&mut self, line: impl std::fmt::Display) {
        self.parts.push(Part::Stdout(format!("{line}\n")));
    }

    /// Adds stdout text as is.
    pub fn out_text(&mut self, text: impl Into<String>) {
        self.parts.push(Part::Stdout(text.into()));
    }

    /// Adds stdout text that `write` writes when it is printed (for text
    /// as long as the report it is made from, such as a line per finding).
    pub fn out_with(
        &mut self,
        write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()> + 'static,
    ) {
        self.parts.push(Part::TextStream(Box::new(write)));
    }

    /// Adds stderr text that `write` writes when it is printed.
    pub fn err_with(
        &mut self,
        write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()> + 'static,
    ) {
        self.parts.push(Part::ErrStream(Box::new(write)));
    }

    /// Adds a stderr line (a newline is appended).
    pub fn err(&mut self, line: impl std::fmt::Display) {
        self.parts.push(Part::Stderr(format!("{line}\n")));
    }

    /// Adds a JSON document for stdout.
    pub fn json(&mut self, value: Value) {
        self.parts.push(Part::Json(value));
    }

    /// Adds a typed JSON document for stdout, serialised as it is printed.
    pub fn json_typed<T: serde::Serialize + 'static>(&mut self, value: T) {
        self.json_with(move |w| serde_json::to_writer_pretty(w, &value));
    }

    /// Adds a JSON document for stdout that `write` serialises when it is
    /// printed (for a value that borrows from what the closure owns).
    pub fn json_with(
        &mut self,
        write: impl FnOnce(&mut Stdout) -> serde_json::Result<()> + 'static,
    ) {
        self.parts.push(Part::JsonStream(Box::new(write)));
    }

    /// Adds a small JSON document for stdout that borrows what it reports,
    /// serialised now (pretty, one newline after it); a value that cannot
    /// be serialised is said on stderr instead (exit 2).
    pub fn json_now(&mut self, value: &impl serde::Serialize) {
        match serde_json::to_string_pretty(value) {
            Ok(text) => self.out(text),
            Err(e) => {
                self.err(format!("noma: cannot write output: {e}"));
                self.at_least(Exit::NotRun);
            }
        }
    }

    /// Makes the exit at least `exit`.
    pub fn at_least(&mut self, exit: Exit) {
        self.exit = self.exit.max(exit);
    }

    /// Appends another step's output; the exit is the worse of the two.
    pub fn extend(&mut self, other: Output) {
        self.parts.extend(other.parts);
        self.at_least(other.exit);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streamed_text_is_written_when_printed_not_when_added() {
        let written = std::rc::Rc::new(std::cell::Cell::new(false));
        let seen = written.clone();
        let mut c = Output::ending(Exit::Passed);
        c.out_with(move |w| {
            seen.set(true);
            w.write_all(b"line 1\nline 2\n")
        });
        assert!(!written.get(), "nothing is written while the command runs");
        let Some(Part::TextStream(write)) = c.parts.pop() else {
            panic!("not a text stream: {c:?}");
        };
        let mut out = Vec::new();
        write(&mut out).unwrap();
        assert!(written.get());
        assert_eq!(out, b"line 1\nline 2\n");
        c.err_with(|w| w.write_all(b"finding\n"));
        let Some(Part::ErrStream(write)) = c.parts.pop() else {
            panic!("not a stderr stream: {c:?}");
        };
        let mut err = Vec::new();
        write(&mut err).unwrap();
        assert_eq!(err, b"finding\n");
    }

    #[test]
    fn the_worst_step_decides_and_order_is_kept() {
        let mut c = Output::ending(Exit::Passed);
        c.out("a");
        let mut refused = Output::error("b", Exit::Failed);
        refused.out_text("c");
        c.extend(refused);
        c.extend(Output::ending(Exit::Passed));
        assert_eq!(c.exit, Exit::Failed);
        assert_eq!(
            c.parts,
            vec![
                Part::Stdout("a\n".into()),
                Part::Stderr("b\n".into()),
                Part::Stdout("c".into())
            ]
        );
        c.at_least(Exit::NotRun);
        assert_eq!(c.exit, Exit::NotRun);
    }
}

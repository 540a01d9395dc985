//! What a command prints and how it exits, worded by the binary from the
//! libraries' data and printed by [`crate::cli::emit`]: text for stdout
//! and stderr in the order it is written (a terminal, and the README's
//! walkthrough, see both streams as one), JSON documents for stdout, and
//! an [`Exit`].

use serde_json::Value;

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
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    /// Text for stdout, printed as is.
    Stdout(String),
    /// Text for stderr, printed as is.
    Stderr(String),
    /// A JSON document for stdout (pretty, one newline after it).
    Json(Value),
}

/// The output of a command, in order, and how it exits.
#[derive(Debug, Clone, Default, PartialEq)]
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

    /// Adds a stderr line (a newline is appended).
    pub fn err(&mut self, line: impl std::fmt::Display) {
        self.parts.push(Part::Stderr(format!("{line}\n")));
    }

    /// Adds a JSON document for stdout.
    pub fn json(&mut self, value: Value) {
        self.parts.push(Part::Json(value));
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

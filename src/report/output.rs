//! What a shell command says and how it ends, decided by the library and
//! printed by the binary: text for stdout and stderr in the order it is
//! written (a terminal, and the README's walkthrough, see both streams as
//! one), JSON documents for stdout, and a [`Verdict`].

use serde_json::Value;

/// How a command ends; ordered, so the worst of several steps is the
/// [`Ord::max`] of theirs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
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
pub enum Say {
    /// Text for stdout, printed as is.
    Out(String),
    /// Text for stderr, printed as is.
    Err(String),
    /// A JSON document for stdout (pretty, one newline after it).
    Json(Value),
}

/// The output of a command, in order, and its verdict.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Console {
    /// What to print, in order.
    pub said: Vec<Say>,
    /// How the command ends.
    pub verdict: Verdict,
}

impl Console {
    /// An empty console that ends with `verdict`.
    pub fn ending(verdict: Verdict) -> Console {
        Console {
            said: Vec::new(),
            verdict,
        }
    }

    /// A console holding one stderr line, ending with `verdict`.
    pub fn error(line: impl std::fmt::Display, verdict: Verdict) -> Console {
        let mut c = Console::ending(verdict);
        c.err(line);
        c
    }

    /// Adds a stdout line (a newline is appended).
    pub fn out(&mut self, line: impl std::fmt::Display) {
        self.said.push(Say::Out(format!("{line}\n")));
    }

    /// Adds stdout text as is.
    pub fn out_text(&mut self, text: impl Into<String>) {
        self.said.push(Say::Out(text.into()));
    }

    /// Adds a stderr line (a newline is appended).
    pub fn err(&mut self, line: impl std::fmt::Display) {
        self.said.push(Say::Err(format!("{line}\n")));
    }

    /// Adds a JSON document for stdout.
    pub fn json(&mut self, value: Value) {
        self.said.push(Say::Json(value));
    }

    /// Makes the verdict at least `verdict`.
    pub fn at_least(&mut self, verdict: Verdict) {
        self.verdict = self.verdict.max(verdict);
    }

    /// Appends another step's output; the verdict is the worse of the two.
    pub fn extend(&mut self, other: Console) {
        self.said.extend(other.said);
        self.at_least(other.verdict);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worst_step_decides_and_order_is_kept() {
        let mut c = Console::ending(Verdict::Passed);
        c.out("a");
        let mut refused = Console::error("b", Verdict::Failed);
        refused.out_text("c");
        c.extend(refused);
        c.extend(Console::ending(Verdict::Passed));
        assert_eq!(c.verdict, Verdict::Failed);
        assert_eq!(
            c.said,
            vec![
                Say::Out("a\n".into()),
                Say::Err("b\n".into()),
                Say::Out("c".into())
            ]
        );
        c.at_least(Verdict::NotRun);
        assert_eq!(c.verdict, Verdict::NotRun);
    }
}

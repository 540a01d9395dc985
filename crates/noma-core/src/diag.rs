//! The canonical Diagnostic record (§4.3 of the protocol), shared by the
//! validator, the patch engine and every output format.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Diagnostic severity; `Error > Warning > Info` for summary derivation (§4.2).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Informational note.
    Info,
    /// Does not fail `noma check`.
    Warning,
    /// Fails `noma check` (exit 1).
    Error,
}

impl Severity {
    /// The wire spelling (`info`, `warning`, `error`).
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// A 1-based source position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Pos {
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub column: u32,
}

/// Where a diagnostic's finding is in the text: the token it is about (an
/// id, an attribute value, a reference) or else its line or block, as
/// 1-based line/byte-column positions and byte offsets (half-open) of the
/// text the range was computed over (see [`crate::doc::range`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceRange {
    /// Where the finding starts.
    pub start: Pos,
    /// Where it ends (exclusive).
    pub end: Pos,
    /// Byte offset of `start`.
    pub start_byte: usize,
    /// Byte offset of `end`.
    pub end_byte: usize,
}

impl SourceRange {
    /// The range of bytes `bytes` of `index`'s text.
    pub fn of_bytes(index: &crate::doc::LineIndex<'_>, bytes: std::ops::Range<usize>) -> Self {
        let pos = |b: usize| {
            let lc = index.line_col(b);
            Pos {
                line: lc.line,
                column: lc.column,
            }
        };
        SourceRange {
            start: pos(bytes.start),
            end: pos(bytes.end),
            start_byte: bytes.start,
            end_byte: bytes.end,
        }
    }
    /// The byte range.
    pub fn bytes(&self) -> std::ops::Range<usize> {
        self.start_byte..self.end_byte
    }
}

/// Which validation run produced a transcript diagnostic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Pre-validation (before the op-list is applied).
    Pre,
    /// Post-validation (after it is applied).
    Post,
}

/// One diagnostic. `phase` is present only inside transcript records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Diagnostic {
    /// Severity.
    pub severity: Severity,
    /// Machine-readable kebab-case (validator) or snake_case (patch) code.
    pub code: String,
    /// Human-readable explanation; never parse it.
    pub message: String,
    /// Source position, when one is meaningful.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub pos: Option<Pos>,
    /// Canonical id of the offending node, when there is one.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub node_id: Option<String>,
    /// `pre`/`post` inside transcripts; absent in `noma check` output.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub phase: Option<Phase>,
    /// The finding's exact range, for editors: filled on request by
    /// [`crate::validate::attach_ranges`], never serialised (every JSON
    /// output and transcript keeps the §4.3 shape).
    #[serde(skip)]
    pub range: Option<SourceRange>,
}

impl Diagnostic {
    /// A diagnostic with no position, node or phase.
    pub fn new(severity: Severity, code: impl Into<String>, message: impl Into<String>) -> Self {
        Diagnostic {
            severity,
            code: code.into(),
            message: message.into(),
            pos: None,
            node_id: None,
            phase: None,
            range: None,
        }
    }
    /// Sets the position to `line`, column 1.
    pub fn at_line(mut self, line: u32) -> Self {
        self.pos = Some(Pos { line, column: 1 });
        self
    }
    /// Sets the offending node id.
    pub fn with_node(mut self, id: Option<&str>) -> Self {
        self.node_id = id.map(str::to_string);
        self
    }
}

/// The one human form of a diagnostic, used by `noma check` and the git
/// hooks alike: `SEVERITY [code] path:line:col: message` (without a
/// position: `SEVERITY [code] path: message`).
pub fn human_line(file: &str, d: &Diagnostic) -> String {
    let sev = d.severity.as_str().to_ascii_uppercase();
    match d.pos {
        Some(p) => format!(
            "{sev} [{}] {file}:{}:{}: {}",
            d.code, p.line, p.column, d.message
        ),
        None => format!("{sev} [{}] {file}: {}", d.code, d.message),
    }
}

/// A path as one word of a POSIX shell command that a message tells the
/// user to paste: `"plan.noma"` as people write it, or `'…'` (with `'`
/// written `'\''`) when the name holds a character that double quotes
/// leave live (`$`, `` ` ``, `\`, `"`, `!`) or a control character, so a
/// hostile file name (`$(…).noma`) is never a command. A leading `-` gets
/// `./` so no command reads the path as an option.
pub fn shell_word(path: &str) -> String {
    let path = if path.starts_with('-') {
        format!("./{path}")
    } else {
        path.to_string()
    };
    let live = |c: char| matches!(c, '$' | '`' | '\\' | '"' | '!') || c.is_control();
    if !path.contains(live) {
        return format!("\"{path}\"");
    }
    format!("'{}'", path.replace('\'', r"'\''"))
}

/// How many diagnostics of each severity a report holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SeverityCounts {
    /// `error` diagnostics.
    pub error: usize,
    /// `warning` diagnostics.
    pub warning: usize,
    /// `info` diagnostics.
    pub info: usize,
}

impl SeverityCounts {
    /// Counts one diagnostic of `severity`.
    pub fn add(&mut self, severity: Severity) {
        match severity {
            Severity::Error => self.error += 1,
            Severity::Warning => self.warning += 1,
            Severity::Info => self.info += 1,
        }
    }
    /// The counts of `diags`.
    pub fn of<'a>(diags: impl IntoIterator<Item = &'a Diagnostic>) -> Self {
        let mut c = SeverityCounts::default();
        for d in diags {
            c.add(d.severity);
        }
        c
    }
    /// All diagnostics counted.
    pub fn total(&self) -> usize {
        self.error + self.warning + self.info
    }
    /// The highest severity counted, if any.
    pub fn worst(&self) -> Option<Severity> {
        if self.error > 0 {
            Some(Severity::Error)
        } else if self.warning > 0 {
            Some(Severity::Warning)
        } else if self.info > 0 {
            Some(Severity::Info)
        } else {
            None
        }
    }
}

/// The three-valued validation summary of a transcript record (§4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Summary {
    /// No diagnostics (or only `info`).
    Ok,
    /// At least one warning, no error.
    Warn,
    /// At least one error.
    Error,
}

impl Summary {
    /// Derives the summary from a diagnostic list: the highest severity wins.
    pub fn of(diags: &[Diagnostic]) -> Summary {
        let worst = diags.iter().map(|d| d.severity).max();
        match worst {
            Some(Severity::Error) => Summary::Error,
            Some(Severity::Warning) => Summary::Warn,
            _ => Summary::Ok,
        }
    }
    /// The wire spelling (`ok`, `warn`, `error`).
    pub fn as_str(self) -> &'static str {
        match self {
            Summary::Ok => "ok",
            Summary::Warn => "warn",
            Summary::Error => "error",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::shell_word;

    #[test]
    fn shell_words_never_run_what_a_file_name_holds() {
        assert_eq!(shell_word("docs/my plan.noma"), "\"docs/my plan.noma\"");
        assert_eq!(shell_word("é's.noma"), "\"é's.noma\"");
        assert_eq!(shell_word("$(touch x).noma"), "'$(touch x).noma'");
        assert_eq!(shell_word("a'`b`.noma"), r"'a'\''`b`.noma'");
        assert_eq!(shell_word("a\"b\\c!.noma"), "'a\"b\\c!.noma'");
        assert_eq!(shell_word("-rf.noma"), "\"./-rf.noma\"");
        // sh itself agrees: each word comes back as the one argument.
        for name in [
            "$(touch x).noma",
            "a'`b`.noma",
            "a\"b\\c!\n.noma",
            "-n.noma",
            "é's $HOME.noma",
        ] {
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("printf %s {}", shell_word(name)))
                .output()
                .expect("sh runs");
            let want = if name.starts_with('-') {
                format!("./{name}")
            } else {
                name.to_string()
            };
            assert_eq!(String::from_utf8_lossy(&out.stdout), want, "{name}");
        }
    }
}

//! A document an editor saved with other line endings than the state it
//! is recorded from (CRLF over LF, or LF over CRLF): every line's bytes
//! changed, no block did. The edit is recorded from the text given back
//! the recorded state's line endings, so only the blocks the person
//! changed are recorded, and the transcript still ends at the bytes git
//! commits: the converted text where git converts the file on commit
//! (`core.autocrlf`, a `text` or `eol` attribute), else the file itself,
//! given back those line endings (decision `line-ending-saves` in
//! `.noma/git-workflows.noma`).

use noma_core::doc::lines::{with_line_endings_of, Eol};

use super::location::Location;
use crate::git::repo::Stored;

/// How the file's line endings differ from the recorded state's, and
/// what became of them.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LineEndings {
    /// The line endings the file was saved with.
    pub saved: Eol,
    /// The recorded state's line endings, which the records keep.
    pub recorded: Eol,
    /// The setting that makes git commit the file with the recorded line
    /// endings (`core.autocrlf=true`, say); the file is then left as
    /// saved. None when git commits the file's bytes as they are.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub git_converts: Option<String>,
    /// The file was given back the recorded line endings (git would have
    /// committed the saved ones).
    pub rewritten: bool,
}

/// The file's text given back the recorded line endings, and how.
pub(super) struct Resaved {
    /// The text the records end at.
    pub(super) text: String,
    /// What differed.
    pub(super) line_endings: LineEndings,
}

/// `text` when it was saved with other line endings than `from`, the
/// state it is recorded from: given back `from`'s, with what git does
/// to the file on commit. None when the line endings are `from`'s (or
/// `from` mixes them: nothing to give back).
pub(super) fn resaved(location: &Location, from: &str, text: &str) -> Option<Resaved> {
    let (saved, back) = with_line_endings_of(from, text)?;
    let git_converts =
        match location
            .repo
            .stored_on_commit(&location.rel, text.as_bytes(), back.as_bytes())
        {
            Stored::Converted { by } => Some(by),
            // Git keeps the saved bytes (or could not say): the records
            // can end at them only if the file holds them.
            Stored::AsIs | Stored::Unknown => None,
        };
    Some(Resaved {
        text: back,
        line_endings: LineEndings {
            saved,
            recorded: saved.other(),
            rewritten: git_converts.is_none(),
            git_converts,
        },
    })
}

//! The document model: bytes → [`Document`].
//!
//! [`parse()`] never panics and never fails: malformed input yields a
//! best-effort tree plus [`ParseIssue`]s (Tier 2, §6.2).

pub mod ast;
pub mod attrs;
pub mod hash;
pub mod ids;
pub mod inline;
pub mod json;
mod line_match;
pub mod lines;
pub mod memo;
pub mod parse;
pub mod range;
pub mod render;
pub mod reparse;
pub mod slug;
pub mod source;
pub mod yaml;

pub use ast::*;
pub use memo::ParseMemo;
pub use parse::{parse, MAX_FENCE_COLONS};
pub use range::{LineCol, LineIndex};

/// `text` without a leading BOM: the text the parser reads and spans index.
pub fn strip_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

//! The document model: bytes → [`Document`].
//!
//! [`parse`] never panics and never fails: malformed input yields a
//! best-effort tree plus [`ParseIssue`]s (Tier 2, §6.2).

pub mod ast;
pub mod attrs;
pub mod hash;
pub mod ids;
pub mod inline;
pub mod json;
pub mod lines;
pub mod parse;
pub mod render;
pub mod slug;
pub mod source;

pub use ast::*;
pub use parse::parse;

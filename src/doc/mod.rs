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

use std::cell::RefCell;
use std::rc::Rc;

thread_local! {
    /// The last text parsed through [`parse_shared`] and its tree.
    static LAST_PARSE: RefCell<Option<(String, Rc<Document>)>> = const { RefCell::new(None) };
}

/// [`parse`] with a one-entry memo per thread, keyed by the exact text.
///
/// A patch request validates the document and then applies an op to the
/// same bytes; on a 3 MB document each parse is tens of milliseconds, so
/// the pipeline shares one tree. The memo compares the whole text (no
/// hashing, no false hits) and holds one tree per thread at most.
pub fn parse_shared(text: &str) -> Rc<Document> {
    LAST_PARSE.with(|slot| {
        if let Some((cached, doc)) = &*slot.borrow() {
            if cached.len() == text.len() && cached == text {
                return Rc::clone(doc);
            }
        }
        let doc = Rc::new(parse(text));
        *slot.borrow_mut() = Some((text.to_string(), Rc::clone(&doc)));
        doc
    })
}

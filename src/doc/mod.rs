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
pub mod lines;
pub mod parse;
pub mod render;
pub mod reparse;
pub mod slug;
pub mod source;
pub mod yaml;

pub use ast::*;
pub use parse::parse;

use std::cell::RefCell;
use std::sync::Arc;

thread_local! {
    /// The last text parsed through [`parse_shared`] and its tree.
    static LAST_PARSE: RefCell<Option<(String, Arc<Document>)>> = const { RefCell::new(None) };
}

/// [`parse()`] with a one-entry memo per thread, keyed by the exact text.
///
/// A patch request validates the document and then applies an op to the
/// same bytes; on a 3 MB document each parse is tens of milliseconds, so
/// the pipeline shares one tree. The memo compares the whole text (no
/// hashing, no false hits) and holds one tree per thread at most. The tree
/// is shared (`Arc`) so that callers may keep it while the memo does too.
pub fn parse_shared(text: &str) -> Arc<Document> {
    // The parser ignores a BOM, so texts with and without one share a tree.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    LAST_PARSE.with(|slot| {
        if let Some((cached, doc)) = &*slot.borrow() {
            if cached.len() == text.len() && cached == text {
                return Arc::clone(doc);
            }
        }
        let doc = Arc::new(parse(text));
        // The replaced entry, if any, is freed here.
        *slot.borrow_mut() = Some((text.to_string(), Arc::clone(&doc)));
        doc
    })
}

/// [`parse_shared`] for `after`, an edit of `before`: when the memo holds
/// the tree of `before`, the new tree is spliced from it
/// ([`reparse`]), re-parsing only the edited lines; otherwise, or when the
/// edit may reach outside its lines, `after` is parsed in full. Either way
/// the tree is exactly [`parse()`]`(after)` and becomes the memo's entry;
/// a splice also says what it replaced.
pub fn parse_shared_edited(
    before: &str,
    after: &str,
) -> (Arc<Document>, Option<reparse::Replaced>) {
    let before = before.strip_prefix('\u{feff}').unwrap_or(before);
    let after_key = after.strip_prefix('\u{feff}').unwrap_or(after);
    let spliced = LAST_PARSE.with(|slot| {
        let mut slot = slot.borrow_mut();
        let (text, old) = slot.as_ref()?;
        if text.as_str() == after_key {
            return Some((Arc::clone(old), None));
        }
        if text.as_str() != before {
            return None;
        }
        let splice = reparse::plan(before, old, after_key)?;
        let (old_text, old) = slot.take()?;
        // A tree no one else holds is edited in place; a shared one (a
        // validator may still be reading it) is copied first.
        let mut tree = Arc::try_unwrap(old).unwrap_or_else(|shared| (*shared).clone());
        let replaced = splice.apply(&mut tree)?;
        // Every test that patches doubles as a differential test of the splice.
        debug_assert!(
            tree == parse(after_key),
            "spliced tree differs from a full parse"
        );
        let tree = Arc::new(tree);
        // The old key's buffer is the right size and already in memory.
        let mut key = old_text;
        key.clear();
        key.push_str(after_key);
        *slot = Some((key, Arc::clone(&tree)));
        Some((tree, Some(replaced)))
    });
    spliced.unwrap_or_else(|| (parse_shared(after), None))
}

/// Leaks this thread's memo entry instead of freeing it. Only for `main`'s
/// one exit path (`std::process::exit` right after): glibc's `exit` runs
/// thread-local destructors, and freeing a big document's tree node by
/// node there costs milliseconds the OS reclaims for free anyway.
pub fn leak_shared_parse() {
    std::mem::forget(take_shared_parse());
}

/// Empties this thread's memo and frees its tree. For a benchmark that
/// times the pipeline from a cold memo, or a long-lived process giving the
/// memory back.
pub fn clear_shared_parse() {
    drop(take_shared_parse());
}

fn take_shared_parse() -> Option<(String, Arc<Document>)> {
    // `try_with`: during thread teardown the slot may already be gone.
    LAST_PARSE
        .try_with(|slot| slot.try_borrow_mut().ok()?.take())
        .ok()
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leaked_or_cleared_memo_entry_is_gone() {
        let text = "# A\n\nText.\n";
        let first = parse_shared(text);
        assert!(Arc::ptr_eq(&first, &parse_shared(text)));
        leak_shared_parse();
        let again = parse_shared(text);
        assert!(!Arc::ptr_eq(&first, &again), "the memo was emptied");
        assert_eq!(*first, *again);
        assert_eq!(Arc::strong_count(&again), 2, "the memo holds it too");
        clear_shared_parse();
        assert_eq!(Arc::strong_count(&again), 1, "the memo let go of its tree");
        assert!(!Arc::ptr_eq(&again, &parse_shared(text)));
    }

    #[test]
    fn shared_parse_memo_hits_misses_and_frees_the_replaced_tree() {
        let (a, b) = (
            "::claim{id=\"a\"}\nText.\n::\n",
            "::claim{id=\"b\"}\nText.\n::\n",
        );
        let first = parse_shared(a);
        assert!(Arc::ptr_eq(&first, &parse_shared(a)), "same text: memo hit");
        let first_weak = Arc::downgrade(&first);
        drop(first);
        let second = parse_shared(b);
        assert_eq!(second.children[0].id.as_deref(), Some("b"));
        assert!(Arc::ptr_eq(&second, &parse_shared(b)));
        // Replacing the entry freed the old tree (no one else held it).
        assert!(first_weak.upgrade().is_none(), "the replaced tree is freed");
        // The replaced tree is gone from the memo: `a` parses afresh.
        assert_eq!(parse_shared(a).children[0].id.as_deref(), Some("a"));
    }
}

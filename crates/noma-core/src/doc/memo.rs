//! [`ParseMemo`]: the last text parsed and its tree, held by whoever reads
//! one text several times (the patch pipeline, replay) and passed to every
//! step that parses it.

use std::sync::Arc;

use super::{parse, reparse, strip_bom, Document};

/// A one-entry memo of [`parse()`], keyed by the exact text.
///
/// A patch request validates the document, applies an op to the same
/// bytes, and validates the result; on a 3 MB document each parse is
/// milliseconds, so the steps share one memo and the text is parsed once.
/// The key is the whole text (no hashing, no false hits). The tree is
/// shared (`Arc`) so that callers may keep it while the memo does too.
#[derive(Default)]
pub struct ParseMemo {
    last: Option<(String, Arc<Document>)>,
}

impl ParseMemo {
    /// An empty memo.
    pub fn new() -> Self {
        Self::default()
    }

    /// The tree of `text`: the memo's when it holds this text, otherwise
    /// a fresh parse, which replaces the memo's entry.
    pub fn parse(&mut self, text: &str) -> Arc<Document> {
        // The parser ignores a BOM, so texts with and without one share a tree.
        let text = strip_bom(text);
        if let Some((cached, doc)) = &self.last {
            if cached == text {
                return Arc::clone(doc);
            }
        }
        let doc = Arc::new(parse(text));
        // The replaced entry, if any, is freed here.
        self.last = Some((text.to_string(), Arc::clone(&doc)));
        doc
    }

    /// [`ParseMemo::parse`] for `after`, an edit of `before`: when the memo
    /// holds the tree of `before`, the new tree is spliced from it
    /// ([`reparse`]), re-parsing only the edited lines; otherwise, or when
    /// the edit may reach outside its lines, `after` is parsed in full.
    /// Either way the tree is exactly [`parse()`]`(after)` and becomes the
    /// memo's entry; a splice also says what it replaced.
    pub fn parse_edited(
        &mut self,
        before: &str,
        after: &str,
    ) -> (Arc<Document>, Option<reparse::Replaced>) {
        match self.splice(strip_bom(before), strip_bom(after)) {
            Some(spliced) => spliced,
            None => (self.parse(after), None),
        }
    }

    fn splice(
        &mut self,
        before: &str,
        after: &str,
    ) -> Option<(Arc<Document>, Option<reparse::Replaced>)> {
        let (text, old) = self.last.as_ref()?;
        if text == after {
            return Some((Arc::clone(old), None));
        }
        if text != before {
            return None;
        }
        let splice = reparse::plan(before, old, after)?;
        let (old_text, old) = self.last.take()?;
        // A tree no one else holds is edited in place; a shared one (a
        // validator may still be reading it) is copied first.
        let mut tree = Arc::try_unwrap(old).unwrap_or_else(|shared| (*shared).clone());
        let replaced = splice.apply(&mut tree)?;
        // Every test that patches doubles as a differential test of the splice.
        debug_assert!(
            tree == parse(after),
            "spliced tree differs from a full parse"
        );
        let tree = Arc::new(tree);
        // The old key's buffer is the right size and already in memory.
        let mut key = old_text;
        key.clear();
        key.push_str(after);
        self.last = Some((key, Arc::clone(&tree)));
        Some((tree, Some(replaced)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memo_hits_on_the_same_text_and_frees_the_replaced_tree() {
        let (a, b) = (
            "::claim{id=\"a\"}\nText.\n::\n",
            "::claim{id=\"b\"}\nText.\n::\n",
        );
        let mut memo = ParseMemo::new();
        let first = memo.parse(a);
        assert!(Arc::ptr_eq(&first, &memo.parse(a)), "same text: memo hit");
        assert!(
            Arc::ptr_eq(&first, &memo.parse(&format!("\u{feff}{a}"))),
            "a BOM does not change the tree"
        );
        let first_weak = Arc::downgrade(&first);
        drop(first);
        let second = memo.parse(b);
        assert_eq!(second.children[0].id.as_deref(), Some("b"));
        assert!(first_weak.upgrade().is_none(), "the replaced tree is freed");
        assert_eq!(memo.parse(a).children[0].id.as_deref(), Some("a"));
        // Two memos share nothing.
        assert!(!Arc::ptr_eq(&ParseMemo::new().parse(a), &memo.parse(a)));
    }

    #[test]
    fn an_edit_is_spliced_from_the_tree_of_the_text_before_it() {
        let before = "# A\n\nOne.\n\n# B\n\nTwo.\n";
        let after = "# A\n\nOne, edited.\n\n# B\n\nTwo.\n";
        let mut memo = ParseMemo::new();
        // Without the tree of `before`, `after` is parsed in full.
        let (full, replaced) = memo.parse_edited(before, after);
        assert!(replaced.is_none());
        assert_eq!(*full, parse(after));
        // With it, the edited lines are re-parsed and the result is the same.
        memo.parse(before);
        let (spliced, replaced) = memo.parse_edited(before, after);
        assert!(replaced.is_some(), "spliced");
        assert_eq!(*spliced, parse(after));
        assert!(Arc::ptr_eq(&spliced, &memo.parse(after)), "the new entry");
        // Asking again for the same edit is a hit, with nothing replaced.
        let (again, replaced) = memo.parse_edited(before, after);
        assert!(Arc::ptr_eq(&spliced, &again) && replaced.is_none());
    }
}

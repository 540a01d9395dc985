//! Fence depth of a directive written somewhere new: the content of
//! add_block and replace_block, and the block move_block carries.
//!
//! An agent cannot know the colon depth its destination needs (§3.1.2 says
//! the *parsed* directive is inserted), so the block is re-fenced from its
//! parse: its own fence lines get the depth the destination needs, and each
//! directive inside it its parent's new depth plus its original surplus
//! (at least one colon, so an equal-colon child becomes a proper one).
//! Only lines the parser read as directive fences change: code fences, text
//! that looks like a fence, and every other line are kept byte for byte.

use super::{fail, OpResult, PatchErrorCode as E};
use crate::doc::{Document, Node, NodeKind, MAX_FENCE_COLONS};

/// `lines` (the block's source lines, `lines[0]` being line `first` of the
/// text `node` was parsed from) with the fences of `node` rewritten to
/// `depth` colons and those of the directives inside it to strictly deeper
/// ones. `invalid_content` when a fence would be wider than the parser
/// reads ([`MAX_FENCE_COLONS`]).
pub(crate) fn refence(
    lines: &[String],
    node: &Node,
    first: u32,
    depth: usize,
) -> OpResult<Vec<String>> {
    let mut out = lines.to_vec();
    // (directive, its new depth); iterative, as the tree may be deep.
    let mut todo: Vec<(&Node, usize)> = vec![(node, depth)];
    while let Some((n, new)) = todo.pop() {
        let NodeKind::Directive {
            colons,
            closed,
            children,
            ..
        } = &n.kind
        else {
            continue;
        };
        if new > MAX_FENCE_COLONS as usize {
            return fail(
                E::InvalidContent,
                format!("the block would need fences of {new} colons here; the limit is {MAX_FENCE_COLONS}"),
            );
        }
        set_colons(&mut out, n.span.start, first, new);
        if *closed {
            set_colons(&mut out, n.span.end, first, new);
        }
        let old = *colons as usize;
        let mut inner: Vec<&Node> = children.iter().collect();
        // Sections inside a directive add no fence: their directives are
        // the directive's children for depth.
        while let Some(c) = inner.pop() {
            match &c.kind {
                NodeKind::Directive { colons: cc, .. } => {
                    let surplus = (*cc as usize).saturating_sub(old).max(1);
                    todo.push((c, new + surplus));
                }
                NodeKind::Section { children, .. } => inner.extend(children.iter()),
                _ => {}
            }
        }
    }
    Ok(out)
}

/// Replaces the colon run opening line `line` (1-based, in the text whose
/// line `first` is `lines[0]`) with `depth` colons.
fn set_colons(lines: &mut [String], line: u32, first: u32, depth: usize) {
    let Some(l) = line
        .checked_sub(first)
        .and_then(|i| lines.get_mut(i as usize))
    else {
        return;
    };
    let run = l.bytes().take_while(|&b| b == b':').count();
    if run >= 2 && run != depth {
        l.replace_range(..run, &":".repeat(depth));
    }
}

/// The depth a directive fenced with `colons` gets as a child of
/// `container` in `doc`, among `siblings` (the container's children the
/// new block stands beside): the depth the container needs
/// ([`child_fence_depth`]) when `colons` is shallower, else `colons`.
/// One exception keeps a document's own equal-colon convention: where
/// the siblings already nest with as many colons as the enclosing
/// directive (read as children, with a `directive-depth-mismatch`
/// warning), a block fenced like them stays so, as in the Annex C fixture
/// `patch/add_block`.
pub(crate) fn depth_for(
    doc: &Document,
    container: Option<&Node>,
    siblings: &[Node],
    colons: usize,
) -> usize {
    let need = container.map_or(2, |c| child_fence_depth(doc, c));
    if colons >= need {
        return colons;
    }
    let enclosing = container.and_then(|c| {
        path_to(doc, c).iter().rev().find_map(|n| match n.kind {
            NodeKind::Directive { colons, .. } => Some(colons as usize),
            _ => None,
        })
    });
    let convention = enclosing == Some(colons)
        && siblings.iter().any(
            |s| matches!(s.kind, NodeKind::Directive { colons: c, .. } if c as usize == colons),
        );
    if convention {
        colons
    } else {
        need
    }
}

/// The chain of blocks from the top level down to `target` (inclusive);
/// empty when `target` is not in `doc`.
pub(crate) fn path_to<'d>(doc: &'d Document, target: &Node) -> Vec<&'d Node> {
    fn go<'d>(list: &'d [Node], target: &Node, path: &mut Vec<&'d Node>) -> bool {
        for n in list {
            path.push(n);
            if std::ptr::eq(n, target) || go(n.children(), target, path) {
                return true;
            }
            path.pop();
        }
        false
    }
    let mut path = Vec::new();
    go(&doc.children, target, &mut path);
    path
}

/// The fence depth a directive written as a child of `container` needs
/// (§1.5: nesting depth is preserved): one more than the innermost directive
/// that is `container` or encloses it, 2 at the top level (a section does
/// not add a fence, but a section inside a `::` block is inside its fence).
pub(crate) fn child_fence_depth(doc: &Document, container: &Node) -> usize {
    path_to(doc, container)
        .iter()
        .rev()
        .find_map(|n| match n.kind {
            NodeKind::Directive { colons, .. } => Some(colons as usize + 1),
            _ => None,
        })
        .unwrap_or(2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc;

    fn refenced(src: &str, depth: usize) -> String {
        let d = doc::parse(src);
        let lines: Vec<String> = src.lines().map(str::to_string).collect();
        refence(&lines, &d.children[0], 1, depth)
            .unwrap()
            .join("\n")
    }

    #[test]
    fn fences_of_the_block_and_its_children_move_together() {
        assert_eq!(
            refenced("::note{id=\"n\"}\nN\n::", 3),
            ":::note{id=\"n\"}\nN\n:::"
        );
        // Children keep their surplus; an equal-colon child gets one more.
        assert_eq!(
            refenced("::a\n:::::b\nx\n:::::\n::c\ny\n::\n::", 3),
            ":::a\n::::::b\nx\n::::::\n::::c\ny\n::::\n:::"
        );
        // Code fences and fence-like text inside code are untouched.
        assert_eq!(
            refenced("::a\n```\n::\n:::b\n```\n~~~\n::\n~~~\n::", 4),
            "::::a\n```\n::\n:::b\n```\n~~~\n::\n~~~\n::::"
        );
        // Deeper content can be made shallower.
        assert_eq!(refenced(":::a\n::::b\n::::\n:::", 2), "::a\n:::b\n:::\n::");
    }

    #[test]
    fn a_fence_wider_than_the_parser_reads_is_refused() {
        let d = doc::parse("::a\n::\n");
        let lines = vec!["::a".to_string(), "::".to_string()];
        let err = refence(&lines, &d.children[0], 1, MAX_FENCE_COLONS as usize + 1);
        assert_eq!(err.unwrap_err().code, E::InvalidContent);
    }
}

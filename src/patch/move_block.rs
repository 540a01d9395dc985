//! move_block (§1.5): cut a directive (with its subtree) and insert it as a
//! child of another block, rewriting its fence depth to the destination's
//! (parent depth + 1 under a directive, 2 under a section or the root).
//! Code fences inside the moved block are never touched.

use super::core::{child_insertion, delete_span, require_parent};
use super::source::{self, LineBuf};
use super::{fail, Ctx, OpResult, PatchErrorCode as E};
use crate::doc::{self, NodeKind};

/// Moves block `id` under `parent` at `position` (default: last).
pub(crate) fn move_block(
    ctx: &Ctx<'_>,
    id: &str,
    parent: &str,
    position: Option<f64>,
) -> OpResult<String> {
    let node = ctx.require(id, E::TargetMissing, "block")?;
    let NodeKind::Directive { colons, .. } = &node.kind else {
        return fail(
            E::InvalidContent,
            format!("block \"{id}\" is not a directive block"),
        );
    };
    let dest = ctx.require(parent, E::ParentMissing, "parent")?;
    if !matches!(
        dest.kind,
        NodeKind::Directive { .. } | NodeKind::Section { .. }
    ) {
        return fail(
            E::ParentMissing,
            format!("parent \"{parent}\" cannot have children"),
        );
    }
    let inside = std::iter::once(node)
        .chain(walk(node))
        .any(|n| n.id.as_deref() == Some(parent));
    if inside {
        return fail(
            E::InvalidContent,
            format!("cannot move \"{id}\" into itself or its descendants"),
        );
    }
    let from_depth = *colons as usize;
    let to_depth = match &dest.kind {
        NodeKind::Directive { colons, .. } => *colons as usize + 1,
        _ => 2,
    };
    let (start, end) = (node.span.start as usize, node.span.end as usize);
    let mut lines = LineBuf::new(ctx.src);
    let block: Vec<String> = (start - 1..end).map(|i| lines.get(i).to_string()).collect();
    let block = source::normalize_fence_depth(&block, from_depth, to_depth);
    delete_span(&mut lines, start, end);
    if start == 1 && lines.len() > 1 && lines.is_empty_line(0) {
        lines.splice(0, 1, Vec::new());
    }
    let cut = lines.finish();
    let next = Ctx {
        src: &cut,
        doc: doc::parse(&cut),
    };
    let (dest, pos) = require_parent(&next, parent, position)?;
    let (at, new) = child_insertion(dest, pos, block);
    let mut lines = LineBuf::new(&cut);
    lines.splice(at, 0, new);
    Ok(lines.finish())
}

fn walk(node: &crate::doc::Node) -> impl Iterator<Item = &crate::doc::Node> {
    let mut stack: Vec<&crate::doc::Node> = node.children().iter().rev().collect();
    std::iter::from_fn(move || {
        let n = stack.pop()?;
        stack.extend(n.children().iter().rev());
        Some(n)
    })
}

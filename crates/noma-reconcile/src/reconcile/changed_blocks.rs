//! The blocks a branch changed since the merge base, as the PR check
//! reports them: innermost only, from the bytes each block's hash is
//! taken of.

use std::collections::BTreeSet;

use noma_core::doc::hash::block_slices;

use super::BlockStatus;

/// The innermost blocks the branch changed since the merge base, each
/// `ok` until a rebase conflict names it.
pub(super) fn branch_blocks(
    (mb_doc, mb_tree): (Option<&str>, Option<&noma_core::doc::Document>),
    head_doc: &str,
    head_ast: &noma_core::doc::Document,
) -> Vec<BlockStatus> {
    let mb_doc = mb_doc.unwrap_or("");
    let parsed;
    let mb_tree = match mb_tree {
        Some(t) => t,
        None => {
            parsed = noma_core::doc::parse(mb_doc);
            &parsed
        }
    };
    // What `replay::diff_hashes` of the two block tables says, from the
    // bytes each block's hash would be taken of.
    let (mb, head) = (
        block_slices(mb_doc, mb_tree),
        block_slices(head_doc, head_ast),
    );
    let in_head: std::collections::HashMap<&str, &[u8]> =
        head.iter().map(|b| (b.id, &*b.bytes)).collect();
    let in_mb: std::collections::HashSet<&str> = mb.iter().map(|b| b.id).collect();
    let mut diffs: Vec<(&str, &'static str)> = Vec::new();
    for b in &mb {
        match in_head.get(b.id) {
            Some(bytes) if *bytes == &*b.bytes => {}
            Some(_) => diffs.push((b.id, "changed")),
            None => diffs.push((b.id, "removed")),
        }
    }
    diffs.extend(
        head.iter()
            .filter(|b| !in_mb.contains(b.id))
            .map(|b| (b.id, "added")),
    );
    let ids: Vec<&str> = diffs.iter().map(|(id, _)| *id).collect();
    let keep = innermost(&ids, head.iter().map(|b| (b.id, b.parent)));
    diffs
        .iter()
        .filter(|(id, _)| keep.contains(id))
        .map(|&(id, change)| BlockStatus {
            id: id.to_string(),
            change,
            rebase: "ok",
        })
        .collect()
}

/// The ids of `ids` that are not an ancestor (in the document whose
/// blocks are `blocks`, each id with its parent's) of another id of
/// `ids`: a section changes whenever a block inside it does, and only the
/// inner block is worth reporting.
pub(super) fn innermost<'i, 'b>(
    ids: &[&'i str],
    blocks: impl Iterator<Item = (&'b str, Option<&'b str>)>,
) -> BTreeSet<&'i str> {
    let mut count = 0;
    let parent: std::collections::HashMap<&str, &str> = blocks
        .inspect(|_| count += 1)
        .filter_map(|(id, parent)| parent.map(|p| (id, p)))
        .collect();
    let mut ancestors: BTreeSet<&str> = BTreeSet::new();
    for id in ids {
        let mut cur = *id;
        // Bounded walk: parent links come from one tree, but never trust input.
        for _ in 0..count {
            match parent.get(cur) {
                Some(p) if ancestors.insert(p) => cur = p,
                _ => break,
            }
        }
    }
    ids.iter()
        .copied()
        .filter(|i| !ancestors.contains(i))
        .collect()
}

//! The transcript check: the staged transcript extends the reference's
//! (append-only), its new records chain on and replay to the staged
//! document, and what they do not explain is an unrecorded edit. The
//! merge-in-progress rules that pick the parent to extend are
//! [`super::merging`]'s; the replay of the new records is
//! [`super::replay`]'s.

use super::merging::Merged;
use super::replay::verify_tail;
use super::{Finding, Guard};
use crate::git::repo::GitError;
use noma_merge::joined;

#[allow(clippy::too_many_arguments)]
/// Checks the staged transcript against the reference commit's
/// (`head_t`, whose document is `head_doc`), or during a merge against
/// the parent it extends. `paths` = [document, its path at HEAD,
/// transcript].
pub(super) fn check_transcript(
    g: &Guard<'_>,
    paths: [&str; 3],
    head_t: Option<Vec<u8>>,
    head_doc: Option<String>,
    staged_t: &[u8],
    staged_doc: &str,
    out: &mut Vec<Finding>,
) -> Result<(), GitError> {
    let [path, _, _] = paths;
    let mut reference = (head_t, head_doc);
    if let Some((t, doc)) = unjoined(
        g,
        path,
        reference.0.as_deref(),
        reference.1.as_deref(),
        staged_t,
        staged_doc,
    ) {
        // HEAD holds a joined transcript (a merge made without the
        // driver); what `noma repair` makes of it stands in for it.
        reference = (Some(t), Some(doc));
    }
    if g.merge.is_none() {
        // A cherry-pick or rebase of a move meeting a patch, whose
        // transcripts git did not pair: `noma repair` is the fix.
        if let Some(f) = super::merging::picked_move(g, paths, staged_t, staged_doc) {
            out.push(f);
            return Ok(());
        }
    }
    if let Some(merge) = g.merge {
        match super::merging::merge_reference(g, merge, paths, reference, staged_t, staged_doc)? {
            Merged::Extends(parent) => reference = parent,
            Merged::Settled(found) => {
                out.extend(found);
                return Ok(());
            }
        }
    }
    let (ref_t, ref_doc) = reference;
    out.extend(verify_tail(
        g,
        paths,
        ref_t.as_deref(),
        ref_doc.as_deref(),
        staged_t,
        staged_doc,
    )?);
    Ok(())
}

/// When `head_t` is joined ([`joined`]) and the staged transcript
/// extends its linear form (what `noma repair` writes), that form and
/// the document it replays to. Computed only when the staged transcript
/// does not simply extend `head_t`.
fn unjoined(
    g: &Guard<'_>,
    path: &str,
    head_t: Option<&[u8]>,
    head_doc: Option<&str>,
    staged_t: &[u8],
    staged_doc: &str,
) -> Option<(Vec<u8>, String)> {
    let head_t = head_t.filter(|t| !staged_t.starts_with(t))?;
    let join = joined::find_join(head_t)?;
    let known = [head_doc, Some(staged_doc)]
        .into_iter()
        .flatten()
        .map(|d| d.as_bytes().to_vec())
        .collect();
    let mut find = crate::merge::doc_finder(Some(g.repo), path, known);
    let r = joined::unjoin(head_t, join, head_doc, &mut find).ok()?;
    staged_t
        .starts_with(&r.transcript)
        .then_some((r.transcript, r.doc))
}

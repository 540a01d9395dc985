//! The changed documents and blocks as `noma changed` prints them for
//! people (a moved document is one `renamed` entry: `NEW (renamed from
//! OLD: counts)`, or with `--docs` `NEW<TAB>renamed from OLD<TAB>counts`);
//! `noma approve` lists the blocks it approves with the same lines.

use noma_git::changes::questions::Answer;
use noma_git::changes::{ChangedBlocks, ChangedDocs, Counts, DocChange};
use noma_merge::diff::{BlockChange, Change};

/// The line of an answer with no changed document.
fn nothing_since(base: &str, merge_base: &str) -> String {
    let short = merge_base.get(..12).unwrap_or(merge_base);
    format!("no changed documents since {base} (merge base {short})\n")
}

/// The block counts worth naming (`2 added, 1 modified`).
pub fn counts_text(c: &Counts) -> String {
    let parts: Vec<String> = [
        (c.added, "added"),
        (c.modified, "modified"),
        (c.removed, "removed"),
        (c.renamed, "renamed"),
        (c.moved, "moved"),
        (c.skipped, "reconciled"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, w)| format!("{n} {w}"))
    .collect();
    if parts.is_empty() {
        "no block changes".into()
    } else {
        parts.join(", ")
    }
}

fn change_name(c: DocChange, old_path: Option<&str>) -> String {
    match (c, old_path) {
        (DocChange::Added, _) => "added".into(),
        (DocChange::Modified, _) => "modified".into(),
        (DocChange::Removed, _) => "removed".into(),
        (DocChange::Renamed, Some(old)) => format!("renamed from {old}"),
        (DocChange::Renamed, None) => "renamed".into(),
    }
}

/// `--docs`: one line per changed document with its counts.
pub fn docs_text(d: &ChangedDocs) -> String {
    let mut out = String::new();
    if d.docs.is_empty() {
        out.push_str(&nothing_since(&d.base, &d.merge_base));
    }
    for doc in &d.docs {
        out.push_str(&format!(
            "{}\t{}\t{}\n",
            doc.path,
            change_name(doc.change, doc.old_path.as_deref()),
            counts_text(&doc.counts)
        ));
    }
    out
}

/// One changed block (`  modified c1\tdirective/claim\tlines 3-5`),
/// newline included.
pub fn block_line(b: &BlockChange) -> String {
    let kind = match &b.name {
        Some(n) => format!("{}/{n}", b.kind),
        None => b.kind.to_string(),
    };
    let id = match (&b.old_id, b.change) {
        (Some(old), _) => format!("{old} -> {}", b.id),
        _ => b.id.clone(),
    };
    let at = match (b.lines, b.old_lines) {
        (Some(l), _) => format!("lines {}-{}", l[0], l[1]),
        (None, Some(l)) => format!("was lines {}-{}", l[0], l[1]),
        (None, None) => String::new(),
    };
    let moved = match (&b.old_parent, b.change) {
        (p, Change::Moved) => format!(
            " (from {} to {})",
            p.as_deref().unwrap_or("top level"),
            b.parent.as_deref().unwrap_or("top level")
        ),
        _ => String::new(),
    };
    let change = if b.modified {
        format!("{}+modified", b.change.as_str())
    } else {
        b.change.as_str().to_string()
    };
    format!("  {change:<9}{id}\t{kind}\t{at}{moved}\n")
}

/// Every changed document with its changed blocks.
pub fn blocks_text(r: &ChangedBlocks) -> String {
    let mut out = String::new();
    if r.docs.is_empty() {
        out.push_str(&nothing_since(&r.base, &r.merge_base));
    }
    for doc in &r.docs {
        out.push_str(&format!(
            "{} ({}: {})\n",
            doc.path,
            change_name(doc.change, doc.old_path.as_deref()),
            counts_text(&doc.counts)
        ));
        if let Some(e) = &doc.error {
            out.push_str(&format!("  error: {e}\n"));
        }
        if doc.outside_blocks_changed {
            out.push_str("  (text outside blocks changed: frontmatter or loose lines)\n");
        }
        for b in &doc.blocks {
            out.push_str(&block_line(b));
        }
        if !doc.skipped.is_empty() {
            out.push_str(&format!("  reconciled: {}\n", doc.skipped.join(", ")));
        }
    }
    if !r.excluded.is_empty() {
        out.push_str(&format!("excluded: {}\n", r.excluded.join(", ")));
    }
    out
}

/// An answer of `noma changed` for people.
pub fn answer_text(answer: &Answer) -> String {
    match answer {
        Answer::Blocks(r) => blocks_text(r),
        Answer::Docs(d) => docs_text(d),
        Answer::Marked(m) => format!(
            "marked {} block versions in {} documents as reconciled\n",
            m.updated, m.docs
        ),
        Answer::Snapshot(s) => format!(
            "wrote {} ({} documents, {} block versions, HEAD {})\n",
            s.state_path, s.docs, s.blocks, s.git_hash
        ),
        Answer::Cleared(c) if c.cleared => "cleared the reconciliation marks\n".to_string(),
        Answer::Cleared(_) => "no reconciliation marks to clear\n".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_name_only_what_happened() {
        let mut c = Counts::default();
        assert_eq!(counts_text(&c), "no block changes");
        c.added = 2;
        c.skipped = 1;
        assert_eq!(counts_text(&c), "2 added, 1 reconciled");
    }

    #[test]
    fn an_empty_answer_names_its_base() {
        let d = ChangedDocs {
            base: "main".into(),
            merge_base: "0123456789abcdef".into(),
            docs: Vec::new(),
            notices: Vec::new(),
        };
        assert_eq!(
            docs_text(&d),
            "no changed documents since main (merge base 0123456789ab)\n"
        );
    }

    #[test]
    fn a_block_moved_and_edited_says_both() {
        let old = "# A\n\n::claim{id=\"c\"}\nOne.\n::\n\n# B\n\nText.\n";
        let new = "# A\n\n# B\n\nText.\n\n::claim{id=\"c\"}\nTwo.\n::\n";
        let d = noma_merge::diff::diff_docs(old, new);
        assert_eq!(d.changes.len(), 1, "{:?}", d.changes);
        assert!(block_line(&d.changes[0]).contains("moved+modified"));
    }

    #[test]
    fn answers_read_as_before() {
        use noma_git::changes::{Cleared, Marked};
        let cleared = Answer::Cleared(Cleared { cleared: true });
        assert_eq!(answer_text(&cleared), "cleared the reconciliation marks\n");
        let marked = Answer::Marked(Marked {
            updated: 3,
            docs: 1,
            notices: vec!["n".into()],
        });
        assert_eq!(
            answer_text(&marked),
            "marked 3 block versions in 1 documents as reconciled\n"
        );
    }
}

//! `noma changed`: the blocks that changed since the merge base with a base
//! branch (committed, staged, unstaged and untracked edits), and the
//! reconciliation bookkeeping around that query.
//!
//! Paths given on the command line are repository-relative (the same as the
//! library and MCP tools), whatever the current directory.
//!
//! A moved document (see [`noma_git::changes`]) is one `renamed` entry: JSON
//! `"change": "renamed"` with `"old_path"`; human `NEW (renamed from OLD:
//! counts)`, or with `--docs` `NEW<TAB>renamed from OLD<TAB>counts`.

use super::Format;
use noma_git::changes::{self, ChangesError, Query};
use noma_git::git::repo::Repo;

/// Arguments of `noma changed`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Branch (or revision) to compare with: its merge base with HEAD. A
    /// name with no local branch falls back to the one remote's
    /// `<remote>/<name>` (as `git checkout` does).
    #[arg(long, value_name = "BRANCH", required_unless_present_any = ["snapshot", "clear"])]
    pub base: Option<String>,
    /// Only these repository-relative .noma documents.
    #[arg(value_name = "FILE")]
    pub files: Vec<String>,
    /// Leave out paths matching this glob (repeatable; `*` matches `/` too).
    #[arg(long = "exclude", value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Include each changed block's source at the base (JSON `old_source`).
    #[arg(long)]
    pub old_source: bool,
    /// Ignore the block cache and the reconciliation state.
    #[arg(long)]
    pub bypass_cache: bool,
    /// Only list changed documents with block counts.
    #[arg(long, conflicts_with_all = ["mark_reconciled", "snapshot", "clear"])]
    pub docs: bool,
    /// Mark the changed blocks of FILE... (all changed documents when none
    /// is given) as reconciled at their current hash.
    #[arg(long, conflicts_with_all = ["snapshot", "clear"])]
    pub mark_reconciled: bool,
    /// Write .noma/reconciliation_state.json (a committable baseline).
    #[arg(long, conflicts_with = "clear")]
    pub snapshot: bool,
    /// Delete the local reconciliation marks.
    #[arg(long)]
    pub clear: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

fn fail(e: &ChangesError) -> i32 {
    eprintln!("noma: {e}");
    super::EXIT_USAGE
}

fn notices(list: &[String]) {
    for n in list {
        eprintln!("noma: notice: {n}");
    }
}

/// Runs `noma changed`.
pub fn run(args: Args) -> i32 {
    let repo = match Repo::from_env() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("noma: {e}");
            return super::EXIT_USAGE;
        }
    };
    let Some(root) = repo.workdir() else {
        return fail(&ChangesError::Bare);
    };
    if args.clear {
        return match changes::clear_cache(&repo) {
            Ok(c) => emit(args.format, &c, || {
                if c.cleared {
                    "cleared the reconciliation marks".to_string()
                } else {
                    "no reconciliation marks to clear".to_string()
                }
            }),
            Err(e) => fail(&e),
        };
    }
    if args.snapshot {
        return match changes::snapshot_state(&repo) {
            Ok(s) => {
                notices(&s.notices);
                emit(args.format, &s, || {
                    format!(
                        "wrote {} ({} documents, {} block versions, HEAD {})",
                        s.state_path, s.docs, s.blocks, s.git_hash
                    )
                })
            }
            Err(e) => fail(&e),
        };
    }
    let base = args.base.clone().unwrap_or_default();
    let cache = if args.bypass_cache {
        noma_git::cache::BlockCache::disabled()
    } else {
        super::cache::open(&root)
    };
    let code = if args.mark_reconciled {
        match changes::mark_reconciled(&repo, &base, &args.files, &cache) {
            Ok(m) => {
                notices(&m.notices);
                emit(args.format, &m, || {
                    format!(
                        "marked {} block versions in {} documents as reconciled",
                        m.updated, m.docs
                    )
                })
            }
            Err(e) => fail(&e),
        }
    } else if args.docs {
        let q = query(&args, base);
        // list_changed_docs has no filters; with filters, summarise the query.
        let r = if q.files.is_empty() && q.exclude_patterns.is_empty() && !q.bypass_cache {
            changes::list_changed_docs(&repo, &q.base, &cache)
        } else {
            changes::changed_blocks(&repo, &q, &cache).map(summarise)
        };
        match r {
            Ok(d) => {
                notices(&d.notices);
                emit(args.format, &d, || human_docs(&d))
            }
            Err(e) => fail(&e),
        }
    } else {
        match changes::changed_blocks(&repo, &query(&args, base), &cache) {
            Ok(r) => {
                notices(&r.notices);
                emit(args.format, &r, || human_blocks(&r))
            }
            Err(e) => fail(&e),
        }
    };
    if let Some(n) = cache.notice() {
        eprintln!("noma: notice: {n}");
    }
    code
}

fn query(args: &Args, base: String) -> Query {
    Query {
        base,
        files: args.files.clone(),
        exclude_patterns: args.exclude.clone(),
        include_old_source: args.old_source,
        bypass_cache: args.bypass_cache,
    }
}

fn summarise(r: changes::ChangedBlocks) -> changes::ChangedDocs {
    changes::ChangedDocs {
        base: r.base,
        merge_base: r.merge_base,
        docs: r
            .docs
            .into_iter()
            .map(|d| changes::ChangedDoc {
                path: d.path,
                old_path: d.old_path,
                change: d.change,
                counts: d.counts,
                outside_blocks_changed: d.outside_blocks_changed,
                error: d.error,
            })
            .collect(),
        notices: r.notices,
    }
}

/// Prints JSON (compact: answers can be large and are read by programs) or
/// the human text, in one write.
fn emit<T: serde::Serialize>(format: Format, value: &T, human: impl FnOnce() -> String) -> i32 {
    use std::io::Write;
    let text = match format {
        Format::Json => match serde_json::to_string(value) {
            Ok(s) => s + "\n",
            Err(e) => {
                eprintln!("noma: cannot serialise output: {e}");
                return super::EXIT_USAGE;
            }
        },
        Format::Human => human(),
    };
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    super::EXIT_OK
}

fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}

fn counts_text(c: &changes::Counts) -> String {
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

fn human_docs(d: &changes::ChangedDocs) -> String {
    let mut out = String::new();
    if d.docs.is_empty() {
        out.push_str(&format!(
            "no changed documents since {} (merge base {})\n",
            d.base,
            short(&d.merge_base)
        ));
    }
    for doc in &d.docs {
        out.push_str(&format!(
            "{}\t{}\t{}\n",
            doc.path,
            changes_name(doc.change, doc.old_path.as_deref()),
            counts_text(&doc.counts)
        ));
    }
    out
}

fn changes_name(c: changes::DocChange, old_path: Option<&str>) -> String {
    match (c, old_path) {
        (changes::DocChange::Added, _) => "added".into(),
        (changes::DocChange::Modified, _) => "modified".into(),
        (changes::DocChange::Removed, _) => "removed".into(),
        (changes::DocChange::Renamed, Some(old)) => format!("renamed from {old}"),
        (changes::DocChange::Renamed, None) => "renamed".into(),
    }
}

/// One changed block as `noma changed` lists it (`  modified c1\tdirective/claim\tlines 3-5`),
/// newline included; `noma approve` lists the blocks it approves the same way.
pub(crate) fn block_line(b: &changes::BlockChange) -> String {
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
        (p, changes::Change::Moved) => format!(
            " (from {} to {})",
            p.as_deref().unwrap_or("top level"),
            b.parent.as_deref().unwrap_or("top level")
        ),
        _ => String::new(),
    };
    format!("  {:<9}{id}\t{kind}\t{at}{moved}\n", b.change.as_str())
}

fn human_blocks(r: &changes::ChangedBlocks) -> String {
    let mut out = String::new();
    if r.docs.is_empty() {
        out.push_str(&format!(
            "no changed documents since {} (merge base {})\n",
            r.base,
            short(&r.merge_base)
        ));
    }
    for doc in &r.docs {
        out.push_str(&format!(
            "{} ({}: {})\n",
            doc.path,
            changes_name(doc.change, doc.old_path.as_deref()),
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

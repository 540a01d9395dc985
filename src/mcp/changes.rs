//! The changed-block tools: what changed since a base branch, at block
//! granularity, and the reconciliation bookkeeping around it. Thin shells
//! over [`crate::changes`]; every `files` entry is contained in the
//! repository root first (a path escape is a system error, like in the
//! Annex B tools).
//!
//! A document moved since the base (`git mv`, edited or not) is one entry
//! with `change: "renamed"`, `path` the new path and `old_path` the old
//! one, listing only the blocks that differ between the two versions (none
//! for a pure move); see [`crate::changes`].

use schemars::JsonSchema;
use serde::Deserialize;

use super::registry::{ToolError, ToolResult};
use super::Context;
use crate::changes::{self, ChangesError, Query};
use crate::git::repo::Repo;

pub(super) const LIST_CHANGED_DOCS: &str = "List the .noma documents that differ between the \
merge base with `base_branch` and the working tree (committed, staged and unstaged changes), each \
with counts of added / modified / removed blocks. A moved document is one entry with change \
`renamed` and `old_path`. Cheap: use it first to see which documents a branch touched, then \
get_changed_blocks for the blocks themselves.";

pub(super) const GET_CHANGED_BLOCKS: &str = "Return ONLY the blocks that changed since the merge \
base with `base_branch`: per document, the smallest changed addressable blocks (a section whose \
own text is unchanged and whose changes all lie in changed children is not repeated). Each entry \
has id, type/name, change (added | modified | removed | renamed | moved), new `lines`, the new \
source and its sha256 (send it as `baseHash` when patching that block), the old sha256 (and old \
source with include_old_source), and the parent id. Unchanged blocks never appear; blocks already \
reconciled at the same hash (by mark_reconciled, or in the committed snapshot_state baseline) are \
listed in `skipped` by id only. A document moved since the base (git mv) has change `renamed`, \
`old_path`, and only the blocks that differ between its old and new versions. Narrow with `files` and \
`exclude_patterns`; `bypass_cache` recomputes everything and ignores reconciliation marks.";

pub(super) const MARK_RECONCILED: &str = "Record the current block hashes of `files` as \
reconciled (a local, git-ignored store), so later get_changed_blocks calls list those blocks in \
`skipped` until they change again. Call it at the end of a reconciliation pass.";

pub(super) const CLEAR_CACHE: &str = "Delete the local reconciliation marks that \
mark_reconciled wrote. It does not touch the committed baseline .noma/reconciliation_state.json \
that snapshot_state wrote: blocks recorded there at their current hash stay in `skipped`. To see \
every changed block again, call get_changed_blocks with bypass_cache=true (it ignores both the \
marks and the baseline). The per-block hash cache itself is kept (it is content-addressed and \
never stale).";

pub(super) const SNAPSHOT_STATE: &str = "Write the committable baseline \
.noma/reconciliation_state.json: the HEAD commit and each document's sha256 and block hashes. \
Call it at the end of a successful reconciliation pass, then commit the file.";

/// Arguments of `list_changed_docs`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct BaseArgs {
    /// Branch or revision to compare with (its merge base with HEAD is the old side), e.g. `main`
    /// (without a local `main`, the one remote's `origin/main`).
    pub base_branch: String,
}

/// Arguments of `get_changed_blocks`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ChangedBlocksArgs {
    /// Branch or revision to compare with, e.g. `main` (without a local
    /// `main`, the one remote's `origin/main`).
    pub base_branch: String,
    /// Only these documents (paths relative to the repository root).
    #[serde(default)]
    pub files: Vec<String>,
    /// Glob patterns of document paths to leave out (`*` also matches `/`).
    #[serde(default)]
    pub exclude_patterns: Vec<String>,
    /// Also return each changed block's source at the base.
    #[serde(default)]
    pub include_old_source: bool,
    /// Recompute without the block cache and ignore reconciliation marks.
    #[serde(default)]
    pub bypass_cache: bool,
}

/// Arguments of `mark_reconciled`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct MarkArgs {
    /// The documents whose current blocks are reconciled.
    pub files: Vec<String>,
    /// Branch the reconciliation compared with (default `main`).
    #[serde(default)]
    pub base_branch: Option<String>,
}

/// No arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct NoArgs {}

fn repo(ctx: &Context) -> Result<Repo, ToolError> {
    Repo::discover(ctx.workspace.root()).map_err(ToolError::system)
}

fn fail(e: ChangesError) -> ToolError {
    if e.is_user_error() {
        ToolError::user("invalid_request", e.to_string())
    } else {
        ToolError::system(e)
    }
}

/// Contains every path in the root and turns it into the repository-relative
/// `/`-separated form the library expects.
fn contain_files(ctx: &Context, files: &[String]) -> Result<Vec<String>, ToolError> {
    files
        .iter()
        .map(|f| {
            let abs = ctx.workspace.resolve(f).map_err(ToolError::system)?;
            let rel = ctx.workspace.relative(&abs);
            rel.to_str()
                .map(|s| s.replace('\\', "/"))
                .ok_or_else(|| ToolError::system(format!("{f}: path is not UTF-8")))
        })
        .collect()
}

fn to_value<T: serde::Serialize>(v: &T) -> ToolResult {
    serde_json::to_value(v).map_err(ToolError::system)
}

/// `list_changed_docs`.
pub fn list_changed_docs(ctx: &Context, args: BaseArgs) -> ToolResult {
    let r = changes::list_changed_docs(&repo(ctx)?, &args.base_branch, &ctx.cache).map_err(fail)?;
    to_value(&r)
}

/// `get_changed_blocks`.
pub fn get_changed_blocks(ctx: &Context, args: ChangedBlocksArgs) -> ToolResult {
    let q = Query {
        base: args.base_branch,
        files: contain_files(ctx, &args.files)?,
        exclude_patterns: args.exclude_patterns,
        include_old_source: args.include_old_source,
        bypass_cache: args.bypass_cache,
    };
    let r = changes::changed_blocks(&repo(ctx)?, &q, &ctx.cache).map_err(fail)?;
    to_value(&r)
}

/// `mark_reconciled`.
pub fn mark_reconciled(ctx: &Context, args: MarkArgs) -> ToolResult {
    let files = contain_files(ctx, &args.files)?;
    let base = args.base_branch.unwrap_or_else(|| "main".to_string());
    let r = changes::mark_reconciled(&repo(ctx)?, &base, &files, &ctx.cache).map_err(fail)?;
    to_value(&r)
}

/// `clear_cache`.
pub fn clear_cache(ctx: &Context, _args: NoArgs) -> ToolResult {
    to_value(&changes::clear_cache(&repo(ctx)?).map_err(fail)?)
}

/// `snapshot_state`.
pub fn snapshot_state(ctx: &Context, _args: NoArgs) -> ToolResult {
    to_value(&changes::snapshot_state(&repo(ctx)?).map_err(fail)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::git;

    /// A repository whose `main` commits `doc` as `a.noma`, checked out on a
    /// branch `work` with `edited` in the working tree.
    fn branch_with_edit(doc: &str, edited: &str) -> (tempfile::TempDir, Context) {
        let tmp = tempfile::tempdir().expect("tempdir");
        let d = tmp.path();
        git(d, &["init", "-q", "-b", "main"]);
        std::fs::write(d.join("a.noma"), doc).expect("write");
        git(d, &["add", "-A"]);
        git(d, &["commit", "-q", "-m", "one"]);
        git(d, &["checkout", "-q", "-b", "work"]);
        std::fs::write(d.join("a.noma"), edited).expect("write");
        let ctx = Context::open(d).expect("context");
        (tmp, ctx)
    }

    #[test]
    fn changed_blocks_through_the_tools_and_containment() {
        let doc = "# T\n\n::claim{id=\"c1\"}\nOne.\n::\n\n::claim{id=\"c2\"}\nTwo.\n::\n";
        let (tmp, ctx) = branch_with_edit(doc, &doc.replace("Two.", "Two, edited."));
        let d = tmp.path();

        let docs = list_changed_docs(
            &ctx,
            BaseArgs {
                base_branch: "main".into(),
            },
        )
        .expect("docs");
        assert_eq!(docs["docs"][0]["path"], "a.noma", "{docs}");

        let args = |files: Vec<String>| ChangedBlocksArgs {
            base_branch: "main".into(),
            files,
            exclude_patterns: vec![],
            include_old_source: false,
            bypass_cache: false,
        };
        let r = get_changed_blocks(&ctx, args(vec!["a.noma".into()])).expect("blocks");
        let blocks = &r["docs"][0]["blocks"];
        assert_eq!(blocks.as_array().map(Vec::len), Some(1), "{r}");
        assert_eq!(blocks[0]["id"], "c2");
        assert_eq!(blocks[0]["change"], "modified");

        // Escapes are system errors; an unknown base is the caller's error.
        for bad in ["../x.noma", "/etc/passwd"] {
            let e = get_changed_blocks(&ctx, args(vec![bad.into()])).expect_err(bad);
            assert!(matches!(e, ToolError::System { .. }), "{bad}: {e:?}");
        }
        let e = list_changed_docs(
            &ctx,
            BaseArgs {
                base_branch: "nope".into(),
            },
        )
        .expect_err("base");
        assert!(matches!(e, ToolError::User { .. }), "{e:?}");

        // Marked blocks are skipped until cleared.
        mark_reconciled(
            &ctx,
            MarkArgs {
                files: vec!["a.noma".into()],
                base_branch: None,
            },
        )
        .expect("mark");
        let r = get_changed_blocks(&ctx, args(vec![])).expect("blocks");
        assert_eq!(r["docs"][0]["skipped"][0], "c2", "{r}");
        assert_eq!(
            clear_cache(&ctx, NoArgs {}).expect("clear")["cleared"],
            true
        );
        let r = get_changed_blocks(&ctx, args(vec![])).expect("blocks");
        assert_eq!(r["docs"][0]["blocks"][0]["id"], "c2", "{r}");

        let snap = snapshot_state(&ctx, NoArgs {}).expect("snapshot");
        assert!(
            d.join(".noma/reconciliation_state.json").is_file(),
            "{snap}"
        );
    }

    #[test]
    fn clear_cache_keeps_the_snapshot_baseline_as_documented() {
        let doc = "# T\n\n::claim{id=\"c1\"}\nOne.\n::\n";
        let (_tmp, ctx) = branch_with_edit(doc, &doc.replace("One.", "One, edited."));
        let args = |bypass_cache| ChangedBlocksArgs {
            base_branch: "main".into(),
            files: vec![],
            exclude_patterns: vec![],
            include_old_source: false,
            bypass_cache,
        };
        mark_reconciled(
            &ctx,
            MarkArgs {
                files: vec!["a.noma".into()],
                base_branch: None,
            },
        )
        .expect("mark");
        snapshot_state(&ctx, NoArgs {}).expect("snapshot");
        assert_eq!(
            clear_cache(&ctx, NoArgs {}).expect("clear")["cleared"],
            true
        );
        // The committed baseline still skips the block, as the description
        // says; bypass_cache brings it back.
        let r = get_changed_blocks(&ctx, args(false)).expect("blocks");
        assert_eq!(r["docs"][0]["skipped"][0], "c1", "{r}");
        let r = get_changed_blocks(&ctx, args(true)).expect("blocks");
        assert_eq!(r["docs"][0]["blocks"][0]["id"], "c1", "{r}");
        for needle in ["snapshot_state", "bypass_cache", "stay in `skipped`"] {
            assert!(CLEAR_CACHE.contains(needle), "{needle}: {CLEAR_CACHE}");
        }
        assert!(!CLEAR_CACHE.contains("reports every changed block again"));
    }
}

//! The changed-block tools: what changed since a base branch, at block
//! granularity, and the reconciliation bookkeeping around it. Thin shells
//! over [`noma_git::changes`]; every `files` entry is contained in the
//! repository root first (a path escape is a system error, like in the
//! Annex B tools).
//!
//! A document moved since the base (`git mv`, edited or not) is one entry
//! with `change: "renamed"`, `path` the new path and `old_path` the old
//! one, listing only the blocks that differ between the two versions (none
//! for a pure move); see [`noma_git::changes`].

use schemars::JsonSchema;
use serde::Deserialize;

use super::registry::{ToolError, ToolResult};
use super::Context;
use noma_git::changes::{self, ChangesError, Query};
use noma_git::git::repo::Repo;

pub(super) const LIST_CHANGED_DOCS: &str = "The .noma documents changed since the merge base \
with base_branch, with block counts.";

pub(super) const GET_CHANGED_BLOCKS: &str = "Blocks changed since the merge base with \
base_branch (change, lines, source, sha256, parent); reconciled ones are only named in \
`skipped`.";

pub(super) const MARK_RECONCILED: &str = "Mark the changed blocks of `files` reconciled: \
get_changed_blocks names them in `skipped` until they change.";

pub(super) const CLEAR_CACHE: &str = "Delete mark_reconciled's marks. Blocks in the committed \
snapshot_state baseline stay in `skipped`; bypass_cache=true ignores both.";

pub(super) const SNAPSHOT_STATE: &str =
    "Write the committable baseline .noma/reconciliation_state.json: every block's hash at HEAD.";

/// Arguments of `list_changed_docs`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct BaseArgs {
    /// Branch to compare with, e.g. `main` (or `origin/main`).
    pub base_branch: String,
}

/// Arguments of `get_changed_blocks`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct ChangedBlocksArgs {
    /// Branch to compare with, e.g. `main` (or `origin/main`).
    pub base_branch: String,
    /// Only these documents.
    #[serde(default)]
    pub files: Vec<String>,
    /// Globs of paths to leave out.
    #[serde(default)]
    pub exclude_patterns: Vec<String>,
    /// Also return the old source.
    #[serde(default)]
    pub include_old_source: bool,
    /// Ignore the cache and reconciliation marks.
    #[serde(default)]
    pub bypass_cache: bool,
}

/// Arguments of `mark_reconciled`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct MarkArgs {
    /// The documents reconciled.
    pub files: Vec<String>,
    /// Branch compared with (default `main`).
    #[serde(default)]
    pub base_branch: Option<String>,
}

/// No arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct NoArgs {}

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
pub(crate) fn list_changed_docs(ctx: &Context, args: BaseArgs) -> ToolResult {
    let r = changes::list_changed_docs_watched(
        &repo(ctx)?,
        &args.base_branch,
        &ctx.cache,
        ctx.watched.as_ref(),
    )
    .map_err(fail)?;
    to_value(&r)
}

/// `get_changed_blocks`.
pub(crate) fn get_changed_blocks(ctx: &Context, args: ChangedBlocksArgs) -> ToolResult {
    let q = Query {
        base: args.base_branch,
        files: contain_files(ctx, &args.files)?,
        exclude_patterns: args.exclude_patterns,
        include_old_source: args.include_old_source,
        bypass_cache: args.bypass_cache,
    };
    let r = changes::changed_blocks_watched(&repo(ctx)?, &q, &ctx.cache, ctx.watched.as_ref())
        .map_err(fail)?;
    to_value(&r)
}

/// `mark_reconciled`.
pub(crate) fn mark_reconciled(ctx: &Context, args: MarkArgs) -> ToolResult {
    let files = contain_files(ctx, &args.files)?;
    let base = args.base_branch.unwrap_or_else(|| "main".to_string());
    let r = changes::mark_reconciled(&repo(ctx)?, &base, &files, &ctx.cache).map_err(fail)?;
    to_value(&r)
}

/// `clear_cache`.
pub(crate) fn clear_cache(ctx: &Context, _args: NoArgs) -> ToolResult {
    to_value(&changes::clear_cache(&repo(ctx)?).map_err(fail)?)
}

/// `snapshot_state`.
pub(crate) fn snapshot_state(ctx: &Context, _args: NoArgs) -> ToolResult {
    to_value(&changes::snapshot_state(&repo(ctx)?).map_err(fail)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use noma_testutil::git;

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
        let ctx = Context::open(d, crate::Notices::discard()).expect("context");
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

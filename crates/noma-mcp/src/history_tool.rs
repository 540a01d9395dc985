//! `block_history`: why a block is as it is — the records that changed it
//! (followed across renames), newest first, with who acted, why, when,
//! signer, approver and commit, as `noma log --block` reports them.

use serde::Deserialize;
use serde_json::json;

use super::registry::{ToolError, ToolResult};
use super::Context;
use noma_store::engine;

/// Arguments of `block_history`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(crate) struct BlockHistoryArgs {
    /// The .noma file's path.
    pub file: String,
    /// The block's current id.
    pub id: String,
    /// Most records returned, newest first (default 20).
    #[serde(default)]
    #[schemars(range(min = 1, max = 100))]
    pub limit: Option<u32>,
}

/// Default and ceiling of `block_history.limit`.
const LIMIT: (u32, u32) = (20, 100);

/// The tool's description (in every agent's context: short).
pub(crate) const BLOCK_HISTORY: &str =
    "Records that changed a block (across renames), newest first: \
op, actor, reason, ts, signer, approver, commit. Ask before changing it.";

/// `block_history`.
pub(crate) fn block_history(ctx: &Context, args: BlockHistoryArgs) -> ToolResult {
    let doc = ctx.doc_path(&args.file, "block_history")?;
    let tpath = ctx.derived(&engine::default_transcript_path(&doc))?;
    let limit = args.limit.unwrap_or(LIMIT.0).clamp(1, LIMIT.1) as usize;
    let mut changes = noma_git::history::block_log(
        &ctx.cache,
        &doc,
        Some(&tpath),
        Some(&args.id),
        Some(limit + 1),
    )
    .map_err(ToolError::system)?;
    if changes.is_empty() {
        let src = super::documents::read_source(&doc)?;
        let reg = noma_core::doc::ids::registry(&noma_core::doc::parse(&src));
        if !reg.ids.iter().any(|i| **i == *args.id) {
            return Err(ToolError::user(
                "target_missing",
                format!(
                    "{}: no block with id {:?} (and no record changed one by that id)",
                    ctx.shown(&doc),
                    args.id
                ),
            ));
        }
    }
    let truncated = changes.len() > limit;
    changes.truncate(limit);
    Ok(json!({ "id": args.id, "changes": changes, "truncated": truncated }))
}

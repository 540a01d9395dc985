//! The patch tools: `patch_block` (§B.6) and `patch_block_list` (§B.8
//! direction, an atomic op-list), their arguments and schemas. The
//! writer's context comes from [`noma_git::patch::context()`], as `noma
//! patch`'s does, and the engine options are built here; refusals are
//! worded by [`super::patch_refusals`].

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::patch_refusals::{accepted, refusal, rejection};
use super::registry::{ToolError, ToolResult};
use super::Context;
use noma_core::diag::Diagnostic;
use noma_core::transcript::{Actor, ActorKind};
use noma_git::patch::{context, Signing, WorkTree, Writer};
use noma_store::engine::{self, capability, Options, WriteMode};

/// The caller's identity, recorded in the transcript. `kind: "human"` is
/// refused, and with a signing key the server records the key's principal
/// as the name.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct ActorArg {
    /// `agent` or `tool` (`human` parses, to be refused with a code).
    pub kind: ActorKind,
    /// Display name (agent id, username, tool name).
    pub name: String,
    /// Model name, for agents.
    #[serde(default)]
    pub model: Option<String>,
    /// Version of the agent or tool.
    #[serde(default)]
    pub version: Option<String>,
}

/// Preconditions and record metadata shared by the patch tools.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct PatchMeta {
    /// Why; stored in the records.
    #[serde(default)]
    pub reason: Option<String>,
    /// read_doc's sha256 (8+ hex): refused (sha_mismatch) if it changed.
    #[serde(default)]
    #[schemars(length(min = 8, max = 64))]
    pub expected_sha: Option<String>,
    /// Who acts (default: agent "unknown"; never a person).
    #[serde(default)]
    #[schemars(schema_with = "actor_schema")]
    pub actor: Option<ActorArg>,
    /// sha256 the patch was prepared on; a difference only warns.
    #[serde(default)]
    #[schemars(length(min = 64, max = 64))]
    pub base_sha256: Option<String>,
    /// op_id of a prior record this one follows.
    #[serde(default)]
    pub parent_op_id: Option<String>,
}

/// `actor`'s schema, written out (the derived one spends 700 bytes of
/// every agent's context on it).
fn actor_schema(_: &mut SchemaGenerator) -> Schema {
    let s = json!({"type": "string"});
    Schema::try_from(json!({
        "type": "object",
        "required": ["kind", "name"],
        "properties": {"kind": {"enum": ["agent", "tool"]}, "name": s, "model": s, "version": s},
    }))
    .unwrap_or_default()
}

/// Arguments of `patch_block`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct PatchBlockArgs {
    /// The .noma file's path.
    pub file: String,
    /// The patch op.
    #[schemars(schema_with = "op_schema")]
    pub op: Value,
    /// The op's baseHash, if it has none.
    #[serde(default)]
    pub base_hash: Option<String>,
    /// Preconditions and metadata.
    #[serde(flatten)]
    pub meta: PatchMeta,
}

/// Arguments of `patch_block_list`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct PatchBlockListArgs {
    /// The .noma file's path.
    pub file: String,
    /// Applied in order.
    #[schemars(schema_with = "op_list_schema")]
    pub ops: Vec<Value>,
    /// Preconditions and metadata (shared by every record of the list).
    #[serde(flatten)]
    pub meta: PatchMeta,
}

/// Largest `content` (in bytes, UTF-8) one op may carry, as the reference
/// implementation: a request with a larger one is refused whole with
/// `invalid_content` before the engine runs, so nothing is written or
/// recorded.
pub(crate) const MAX_CONTENT_BYTES: usize = 1_000_000;

fn op_schema(generator: &mut SchemaGenerator) -> Schema {
    let (schema, defs) = super::op_schema::op_schema();
    let target = generator.definitions_mut();
    for (k, v) in defs {
        target.entry(k).or_insert(v);
    }
    Schema::try_from(schema).unwrap_or_default()
}

/// The items of `patch_block_list.ops`: objects naming an op; the variants
/// and their fields are patch_block's `op`, written once in `tools/list`.
fn op_list_schema(_: &mut SchemaGenerator) -> Schema {
    Schema::try_from(json!({
        "type": "array",
        "minItems": 1,
        "items": { "type": "object", "required": ["op"] },
    }))
    .unwrap_or_default()
}

/// Runs one patch request through the engine (in place, locked, durable).
fn run_patch(
    ctx: &Context,
    file: &str,
    tool: &str,
    ops: &[Value],
    meta: PatchMeta,
) -> Result<engine::Outcome, ToolError> {
    let path = ctx.doc_path(file, tool)?;
    check_content(ops)?;
    // The engine appends to <doc>.patches and <doc>.provenance and reads
    // <doc>.capabilities.yml: none may lead outside the root (and the
    // engine writes neither through a link of any kind).
    let tpath = engine::default_transcript_path(&path);
    ctx.derived(&tpath)?;
    ctx.derived(&capability::sidecar_path(&path))?;
    ctx.derived(&noma_provenance::sidecar_path(&path))?;
    let actor = writing_actor(ctx, meta.actor)?;
    if let Some(r) = &meta.reason {
        noma_core::display::check_field("reason", r)
            .map_err(|e| ToolError::user("invalid_reason", format!("{e}; nothing was written")))?;
    }
    let writer = Writer {
        tree: WorkTree::Root(ctx.workspace.root()),
        actor_name: Some(actor.name.clone()),
        appends_to: Some(&tpath),
        signing: Signing::Signer(ctx.signer.clone()),
    };
    // Fails only on a configured key, and the server's signer is loaded.
    let writer = context(&path, writer).map_err(ToolError::system)?;
    let mut opts = Options::for_document(&path, writer.root.as_deref(), actor);
    opts.request.reason = meta.reason.filter(|r| !r.is_empty());
    opts.request.expected_sha = meta.expected_sha;
    opts.request.base_sha256 = meta.base_sha256;
    opts.request.parent_op_id = meta.parent_op_id;
    opts.write = WriteMode::InPlace;
    opts.genesis = writer.genesis;
    opts.before_append = writer.before_append;
    match engine::patch_file(&path, ops, &opts) {
        Ok(outcome) => {
            if let Some(r) = outcome.recovery.as_ref().filter(|r| !r.messages.is_empty()) {
                for m in &r.messages {
                    ctx.notices
                        .say(&format!("{}: recovery: {m}", ctx.shown(&path)));
                }
            }
            Ok(outcome)
        }
        Err(e) => Err(refusal(ctx, &path, ops, &opts, e)),
    }
}

/// The actor the server records: an agent or a tool, never a person (a
/// client cannot vouch for one, and a person's record needs no approval),
/// named by the server's signing key when it has one, else by the
/// client. Refused: `kind: "human"` (`actor_not_allowed`), and a name,
/// model or version holding a control character (`invalid_actor`).
fn writing_actor(ctx: &Context, arg: Option<ActorArg>) -> Result<Actor, ToolError> {
    let mut actor =
        match arg {
            Some(a) if a.kind == ActorKind::Human => return Err(ToolError::user(
                "actor_not_allowed",
                "actor kind \"human\" is refused: this server writes for agents and tools, and \
                 a client cannot vouch for a person; send kind \"agent\" (or \"tool\"), and let a \
                 person write with `noma patch` or `noma record` and their own key; nothing was \
                 written",
            )),
            Some(a) => Actor {
                kind: a.kind,
                name: a.name,
                model: a.model,
                version: a.version,
            },
            None => Actor {
                kind: ActorKind::Agent,
                name: "unknown".into(),
                model: None,
                version: None,
            },
        };
    // The key the server signs with says who writes; a client's name for
    // itself would only be a claim beside it.
    if let Some(signer) = &ctx.signer {
        actor.name = signer.principal.clone();
    }
    actor
        .check_printable()
        .map_err(|e| ToolError::user("invalid_actor", format!("{e}; nothing was written")))?;
    Ok(actor)
}

/// Refuses a request whose ops carry a `content` above [`MAX_CONTENT_BYTES`].
fn check_content(ops: &[Value]) -> Result<(), ToolError> {
    for (i, op) in ops.iter().enumerate() {
        let len = op
            .get("content")
            .and_then(Value::as_str)
            .map_or(0, str::len);
        if len > MAX_CONTENT_BYTES {
            let mut extra = Map::new();
            extra.insert("op_index".into(), json!(i));
            return Err(ToolError::User {
                code: "invalid_content".into(),
                error: format!(
                    "content is {len} bytes; at most {MAX_CONTENT_BYTES} bytes are accepted per op"
                ),
                extra,
            });
        }
    }
    Ok(())
}

/// A `patch_block` refusal: a single op's `op_index` (always 0) is not part
/// of the §B.6 shape.
fn single(e: ToolError) -> ToolError {
    match e {
        ToolError::User { code, error, .. } => ToolError::user(code, error),
        other => other,
    }
}

/// §4.3 diagnostics of the post-apply state (the `phase` tag dropped): the
/// whole report, not only what the records carry.
fn post_diagnostics(outcome: engine::Outcome) -> Vec<Diagnostic> {
    outcome
        .post_diagnostics
        .into_iter()
        .map(|mut d| {
            d.phase = None;
            d
        })
        .collect()
}

/// `patch_block` (§B.6).
pub(crate) fn patch_block(ctx: &Context, args: PatchBlockArgs) -> ToolResult {
    let mut op = args.op;
    if let (Some(hash), Some(fields)) = (args.base_hash, op.as_object_mut()) {
        fields.entry("baseHash").or_insert(Value::String(hash));
    }
    let mut outcome =
        run_patch(ctx, &args.file, "patch_block", &[op], args.meta).map_err(single)?;
    let records = std::mem::take(&mut outcome.records);
    if !accepted(&records) {
        return Err(single(rejection(&records)));
    }
    let post_validation = records.last().map(|r| r.post_validation);
    let diagnostics = post_diagnostics(outcome);
    Ok(json!({
        "ok": true,
        "post_validation": post_validation,
        "transcript_entry": records.first(),
        "diagnostics": diagnostics,
    }))
}

/// `patch_block_list` (§B.8 direction): an atomic op-list.
pub(crate) fn patch_block_list(ctx: &Context, args: PatchBlockListArgs) -> ToolResult {
    if args.ops.is_empty() {
        return Err(ToolError::user(
            "invalid_content",
            "ops is empty: give at least one op",
        ));
    }
    let mut outcome = run_patch(ctx, &args.file, "patch_block_list", &args.ops, args.meta)?;
    let records = std::mem::take(&mut outcome.records);
    if !accepted(&records) {
        return Err(rejection(&records));
    }
    let post_validation = records.last().map(|r| r.post_validation);
    let diagnostics = post_diagnostics(outcome);
    Ok(json!({
        "ok": true,
        "post_validation": post_validation,
        "transcript_entries": records,
        "diagnostics": diagnostics,
    }))
}

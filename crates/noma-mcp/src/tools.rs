//! The tools: Annex B's four (`read_doc`, `list_ids`, `validate_doc`,
//! `patch_block`, shapes as §B.3–§B.7) and the v1.1 directions of §B.8
//! (`patch_block_list`, `transcript_read`, `describe_capabilities`), plus
//! the changed-block tools of [`super::changes`].
//!
//! Every `file` argument goes through [`Context::doc_path`]: containment in
//! the repository root ([`super::paths`]) and the book-manifest refusal
//! (§B.7: `isError: true`).
//!
//! Adding a tool = an args struct deriving `Deserialize + JsonSchema`, a
//! function `fn(&Context, Args) -> ToolResult`, and one [`tool`] line in
//! [`registry`] (see [`super::registry`] for how its outcomes become MCP
//! results).

use std::path::{Path, PathBuf};

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::changes as ch;
use super::registry::{tool, Registry, ToolError, ToolResult, ToolSpec};
use super::Context;
use noma_core::diag::{Diagnostic, Phase, Severity};
use noma_core::doc::{AttrValue, NodeKind};
use noma_core::transcript::{self, Actor, ActorKind, Record};
use noma_store::engine::{self, capability, EngineError, Options, RecoveryError, WriteMode};
use rmcp::model::ToolAnnotations;

/// Every tool this server offers, with its title, behaviour hints and
/// output schema. Read-only tools only read the work tree (the block cache
/// they warm is content-addressed, never a visible change); the patch tools
/// rewrite blocks in place; `clear_cache` deletes the reconciliation marks.
pub fn registry() -> Registry {
    let read_only = || ToolAnnotations::new().read_only(true).open_world(false);
    // readOnlyHint and idempotentHint default to false: only `true` is sent.
    let writes = |destructive: bool, idempotent: bool| {
        let hints = ToolAnnotations::new()
            .destructive(destructive)
            .open_world(false);
        if idempotent {
            hints.idempotent(true)
        } else {
            hints
        }
    };
    Registry::new()
        .with(
            tool("read_doc", READ_DOC, read_doc)
                .titled("Read document", read_only())
                .output(out::read_doc()),
        )
        .with(
            tool("list_ids", LIST_IDS, list_ids)
                .titled("List ids", read_only())
                .output(out::list_ids()),
        )
        .with(
            tool("validate_doc", VALIDATE_DOC, validate_doc)
                .titled("Validate document", read_only())
                .output(out::validate_doc()),
        )
        .with(
            tool("patch_block", PATCH_BLOCK, patch_block)
                .titled("Patch block", writes(true, false))
                .output(out::patch(false))
                .refusals_as_results(),
        )
        .with(
            meta_listed_once(tool("patch_block_list", PATCH_BLOCK_LIST, patch_block_list))
                .titled("Patch blocks", writes(true, false))
                .output(out::patch(true))
                .refusals_as_results(),
        )
        .with(
            tool("transcript_read", TRANSCRIPT_READ, transcript_read)
                .titled("Read transcript", read_only())
                .output(out::transcript_read()),
        )
        .with(
            tool(
                "describe_capabilities",
                DESCRIBE_CAPABILITIES,
                describe_capabilities,
            )
            .titled("Describe capabilities", read_only())
            .output(out::describe_capabilities()),
        )
        .with(
            tool(
                "list_changed_docs",
                ch::LIST_CHANGED_DOCS,
                ch::list_changed_docs,
            )
            .titled("List changed docs", read_only())
            .output(out::changed(false)),
        )
        .with(
            tool(
                "get_changed_blocks",
                ch::GET_CHANGED_BLOCKS,
                ch::get_changed_blocks,
            )
            .titled("Get changed blocks", read_only())
            .output(out::changed(true)),
        )
        .with(
            tool("mark_reconciled", ch::MARK_RECONCILED, ch::mark_reconciled)
                .titled("Mark reconciled", writes(false, true))
                .output(out::mark_reconciled()),
        )
        .with(
            tool("clear_cache", ch::CLEAR_CACHE, ch::clear_cache)
                .titled("Clear marks", writes(true, true))
                .output(out::clear_cache()),
        )
        .with(
            tool("snapshot_state", ch::SNAPSHOT_STATE, ch::snapshot_state)
                .titled("Snapshot state", writes(true, false))
                .output(out::snapshot_state()),
        )
}

/// `patch_block_list`'s input schema names `file` and `ops` only: its other
/// arguments are patch_block's metadata (the same `PatchMeta`), listed and
/// described once there, as its description says. The schema stays open
/// (no `additionalProperties: false`), so they are accepted as they are
/// in patch_block; listing them twice cost 400 bytes of `tools/list`.
fn meta_listed_once(mut spec: ToolSpec) -> ToolSpec {
    let schema = std::sync::Arc::make_mut(&mut spec.tool.input_schema);
    if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        props.retain(|name, _| name == "file" || name == "ops");
    }
    schema.remove("$defs");
    spec
}

const READ_DOC: &str = "A .noma document's blocks (id, type, lines, patchable, `hash` for \
baseHash) and `sha256`. If `unrecorded_edit` is set, patches are refused until a person runs its \
record_command.";

const LIST_IDS: &str =
    "Block ids in order and the alias map (alias -> id): turn [[alias]] into the id an op needs.";

const VALIDATE_DOC: &str = "Validate a .noma document as `noma check` does: {ok, diagnostics}.";

const PATCH_BLOCK: &str = "Apply one op to a .noma document, recorded in <file>.patches. A \
refusal is a result {ok: false, code, error}, code as in §3.5 (target_missing, sha_mismatch, \
unrecorded_edit, ...): fix and retry.";

const PATCH_BLOCK_LIST: &str = "Apply ops to a .noma document all or nothing; a refusal names \
its op_index. Ops and other arguments as patch_block's.";

const TRANSCRIPT_READ: &str =
    "A document's newest transcript records (<file>.patches); page with after_op_id and limit.";

const DESCRIBE_CAPABILITIES: &str = "Ops granted per directive by <file>.capabilities.yml \
(advisory: others apply with a warning).";

/// The `file` argument shared by the read-only tools.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct FileArgs {
    /// The .noma file's path.
    pub file: String,
}

/// The caller's identity, recorded in the transcript.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ActorArg {
    /// `human`, `agent` or `tool`.
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
pub struct PatchMeta {
    /// Why; stored in the records.
    #[serde(default)]
    pub reason: Option<String>,
    /// read_doc's sha256 (8+ hex): refused (sha_mismatch) if it changed.
    #[serde(default)]
    #[schemars(length(min = 8, max = 64))]
    pub expected_sha: Option<String>,
    /// Who acts (default: agent "unknown").
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
        "properties": {"kind": {"enum": ["human", "agent", "tool"]}, "name": s, "model": s, "version": s},
    }))
    .unwrap_or_default()
}

/// Arguments of `patch_block`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct PatchBlockArgs {
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
pub struct PatchBlockListArgs {
    /// The .noma file's path.
    pub file: String,
    /// Applied in order.
    #[schemars(schema_with = "op_list_schema")]
    pub ops: Vec<Value>,
    /// Preconditions and metadata (shared by every record of the list).
    #[serde(flatten)]
    pub meta: PatchMeta,
}

/// Arguments of `transcript_read`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TranscriptReadArgs {
    /// The .noma file's path.
    pub file: String,
    /// Most records returned (default 20).
    #[serde(default)]
    #[schemars(range(min = 1, max = 500))]
    pub limit: Option<u32>,
    /// Only records after this op_id.
    #[serde(default)]
    pub after_op_id: Option<String>,
}

/// Largest `content` (in bytes, UTF-8) one op may carry, as the reference
/// implementation: a request with a larger one is refused whole with
/// `invalid_content` before the engine runs, so nothing is written or
/// recorded.
pub const MAX_CONTENT_BYTES: usize = 1_000_000;

/// Default and ceiling of `transcript_read.limit`.
const TRANSCRIPT_LIMIT: (u32, u32) = (20, 500);

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

/// The output schemas. Each accepts the tool's answer and its failure body
/// `{ok: false, error, code?}` (every result carries `structuredContent`,
/// the failures too).
mod out {
    use serde_json::{json, Value};

    /// An object with the `required` members of an answer, or a failure
    /// body (`error`). The members' shapes are in the tool description;
    /// `tools/list` is in every agent's context, so no more is spelled out.
    fn object(props: Value, required: &[&str]) -> Value {
        let mut schema = json!({
            "type": "object",
            "anyOf": [{"required": required}, {"required": ["error"]}],
        });
        if props.as_object().is_some_and(|p| !p.is_empty()) {
            schema["properties"] = props;
        }
        schema
    }

    pub(super) fn read_doc() -> Value {
        object(json!({}), &["blocks", "sha256", "unrecorded_edit"])
    }

    pub(super) fn list_ids() -> Value {
        object(json!({}), &["ids", "aliases"])
    }

    pub(super) fn validate_doc() -> Value {
        object(json!({}), &["ok", "diagnostics"])
    }

    pub(super) fn patch(list: bool) -> Value {
        let entry = if list {
            "transcript_entries"
        } else {
            "transcript_entry"
        };
        object(json!({}), &["ok", "post_validation", entry, "diagnostics"])
    }

    pub(super) fn transcript_read() -> Value {
        object(json!({}), &["transcript", "exists", "records"])
    }

    pub(super) fn describe_capabilities() -> Value {
        object(json!({}), &["sidecar", "exists", "grants"])
    }

    pub(super) fn changed(blocks: bool) -> Value {
        let req: &[&str] = if blocks {
            &["merge_base", "docs", "excluded"]
        } else {
            &["merge_base", "docs"]
        };
        object(json!({}), req)
    }

    pub(super) fn mark_reconciled() -> Value {
        object(json!({}), &["updated", "docs"])
    }

    pub(super) fn clear_cache() -> Value {
        object(json!({}), &["cleared"])
    }

    pub(super) fn snapshot_state() -> Value {
        object(json!({}), &["state_path", "docs", "blocks"])
    }
}

impl Context {
    /// Resolves a `file` argument: inside the root, not a book manifest.
    /// `tool` names the caller in the refusal.
    pub fn doc_path(&self, file: &str, tool: &str) -> Result<PathBuf, ToolError> {
        let manifest = || ToolError::System {
            error: format!(
                "book manifests (.noma.yml) are not valid targets for {tool}; give a .noma document"
            ),
            code: tool
                .starts_with("patch")
                .then(|| "unsupported_op".to_string()),
        };
        if engine::is_book_manifest(Path::new(file)) {
            return Err(manifest());
        }
        let path = self.workspace.resolve(file).map_err(ToolError::system)?;
        if engine::is_book_manifest(&path) {
            return Err(manifest());
        }
        // Only documents: a request naming another file (`.git/config`, a
        // transcript, a source file) would be parsed as a document and, on
        // a patch, rewritten, with a `<file>.patches` left beside it.
        let inside_git = self
            .workspace
            .relative(&path)
            .components()
            .any(|c| c.as_os_str().eq_ignore_ascii_case(".git"));
        if inside_git {
            return Err(ToolError::system(format!(
                "{file}: inside .git; give a .noma document in the work tree"
            )));
        }
        if path.extension().is_none_or(|e| e != "noma") {
            return Err(ToolError::system(format!(
                "{file}: not a .noma document; {tool} reads and patches only .noma files"
            )));
        }
        Ok(path)
    }

    /// A path the tools derive from a document (transcript, sidecar) must
    /// stay inside the root too.
    fn derived(&self, path: &Path) -> Result<PathBuf, ToolError> {
        self.workspace.contain(path).map_err(ToolError::system)
    }

    fn shown(&self, path: &Path) -> String {
        self.workspace.relative(path).display().to_string()
    }
}

fn read_source(path: &Path) -> Result<String, ToolError> {
    noma_store::fsio::read_document(path).map_err(ToolError::system)
}

fn validate_options(path: &Path) -> noma_core::validate::Options {
    noma_core::validate::Options {
        datasets: path.parent().map(noma_store::fsio::datasets_in),
        ..Default::default()
    }
}

/// `read_doc` (§B.3): every block in document order, as the reference's
/// server lists them: the frontmatter first (when it holds any text), then
/// each node pre-order, a list followed by its `list_item` entries (a list's
/// `childCount` is its item count). Blocks with an id carry their source
/// hash, the `base_hash` to send back.
pub fn read_doc(ctx: &Context, args: FileArgs) -> ToolResult {
    let path = ctx.doc_path(&args.file, "read_doc")?;
    let src = read_source(&path)?;
    let doc = noma_core::doc::parse(&src);
    let info = ctx.cache.doc_info(&src);
    let mut hashes = info.blocks.iter().peekable();
    let mut blocks = Vec::new();
    let plain = |kind: &str, lines: [u32; 2]| json!({"type": kind, "childCount": 0, "lines": lines, "patchable": false});
    if let Some(fm) = doc.frontmatter.as_ref().filter(|fm| !fm.raw.is_empty()) {
        blocks.push(plain("frontmatter", [fm.span.start, fm.span.end]));
    }
    for node in doc.walk() {
        let mut b = Map::new();
        if let Some(id) = &node.id {
            b.insert("id".into(), json!(id));
        }
        b.insert("type".into(), json!(node.type_name()));
        match &node.kind {
            NodeKind::Directive { name, attrs, .. } => {
                b.insert("name".into(), json!(name));
                let attrs: Map<String, Value> = attrs
                    .iter()
                    .filter(|(k, _)| *k != "id")
                    .map(|(k, v)| (k.to_string(), AttrValue::to_json(v)))
                    .collect();
                b.insert("attrs".into(), Value::Object(attrs));
            }
            NodeKind::Section { title, level, .. } => {
                b.insert("title".into(), json!(title));
                b.insert("level".into(), json!(level));
            }
            _ => {}
        }
        if !node.aliases.is_empty() {
            b.insert("aliases".into(), json!(node.aliases));
        }
        let items = match &node.kind {
            NodeKind::List { items, .. } => items.as_slice(),
            _ => &[],
        };
        b.insert(
            "childCount".into(),
            json!(node.children().len() + items.len()),
        );
        b.insert("lines".into(), json!([node.span.start, node.span.end]));
        let patchable = node.id.as_deref().is_some_and(|id| !id.is_empty());
        b.insert("patchable".into(), json!(patchable));
        if let Some(id) = &node.id {
            // The cache lists id-bearing nodes in the same pre-order; fall
            // back to hashing the slice if the two ever disagree.
            let hash = match hashes.peek() {
                Some(h) if h.id == id && h.lines == [node.span.start, node.span.end] => {
                    let s = h.sha256.clone();
                    hashes.next();
                    s
                }
                _ => noma_core::doc::hash::slice_hash(&src, node.span.start, node.span.end),
            };
            b.insert("hash".into(), json!(hash));
        }
        blocks.push(Value::Object(b));
        for item in items {
            blocks.push(plain("list_item", [item.span.start, item.span.end]));
        }
    }
    let mut out = json!({ "blocks": blocks, "sha256": info.sha256 });
    match unrecorded_edit(ctx, &path) {
        Ok(edit) => out["unrecorded_edit"] = edit,
        Err(e) => {
            out["unrecorded_edit"] = Value::Null;
            out["transcript_error"] = json!(e);
        }
    }
    Ok(out)
}

/// `read_doc`'s `unrecorded_edit`: the edit a patch would be refused for
/// (code unrecorded_edit), found the way the engine's recovery finds it,
/// with the command a person runs to record it; `null` when there is none.
fn unrecorded_edit(ctx: &Context, path: &Path) -> Result<Value, String> {
    let tpath = ctx
        .derived(&engine::default_transcript_path(path))
        .map_err(|e| match e {
            ToolError::System { error, .. } | ToolError::User { error, .. } => error,
        })?;
    let Some(edit) =
        engine::recover::find_unrecorded_edit(path, &tpath).map_err(|e| e.to_string())?
    else {
        return Ok(Value::Null);
    };
    let shown = ctx.shown(path);
    let command = format!("noma record {}", noma_core::diag::shell_word(&shown));
    Ok(json!({
        "document_sha256": edit.document_sha256,
        "expected_sha256": edit.expected_sha256,
        "line": edit.line,
        "op_id": edit.op_id,
        "record_command": command,
        "message": format!(
            "{shown} holds an edit its transcript does not record (it is not the state record \
             {} at line {} leaves): patches are refused with unrecorded_edit until a person \
             reviews the edit and runs `{command}`",
            edit.op_id, edit.line
        ),
    }))
}

/// `list_ids` (§B.4).
pub fn list_ids(ctx: &Context, args: FileArgs) -> ToolResult {
    let path = ctx.doc_path(&args.file, "list_ids")?;
    let src = read_source(&path)?;
    let reg = noma_core::doc::ids::registry(&noma_core::doc::parse(&src));
    Ok(json!({ "ids": reg.ids, "aliases": reg.aliases }))
}

/// `validate_doc` (§B.5).
pub fn validate_doc(ctx: &Context, args: FileArgs) -> ToolResult {
    let path = ctx.doc_path(&args.file, "validate_doc")?;
    let src = read_source(&path)?;
    let diags =
        noma_core::validate::validate(&noma_core::doc::parse(&src), &validate_options(&path));
    let ok = !diags.iter().any(|d| d.severity == Severity::Error);
    Ok(json!({ "ok": ok, "diagnostics": diags }))
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
    // The engine appends to <doc>.patches and reads <doc>.capabilities.yml:
    // neither may lead outside the root.
    ctx.derived(&engine::default_transcript_path(&path))?;
    ctx.derived(&capability::sidecar_path(&path))?;
    let actor = match meta.actor {
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
    let mut opts = Options::new(actor);
    opts.reason = meta.reason.filter(|r| !r.is_empty());
    opts.expected_sha = meta.expected_sha;
    opts.base_sha256 = meta.base_sha256;
    opts.parent_op_id = meta.parent_op_id;
    opts.write = WriteMode::InPlace;
    opts.doc_uri = Some(noma_store::uri::portable_doc_uri(
        Some(ctx.workspace.root()),
        &path,
    ));
    opts.validate = validate_options(&path);
    opts.genesis =
        noma_git::record::first_patch_needs_genesis(&path, &engine::default_transcript_path(&path));
    opts.before_append = ctx
        .signer
        .clone()
        .map(noma_git::provenance::writer::signing_step);
    match engine::patch_file(&path, ops, &opts) {
        Ok(outcome) => {
            if let Some(r) = outcome.recovery.as_ref().filter(|r| !r.messages.is_empty()) {
                for m in &r.messages {
                    eprintln!("noma mcp: {}: recovery: {m}", ctx.shown(&path));
                }
            }
            Ok(outcome)
        }
        // A request that is not made of catalogue ops is refused whole and
        // writes nothing (the engine checks before it records).
        Err(EngineError::InvalidOp(e)) => Err(ToolError::System {
            error: e.to_string(),
            code: Some(e.code().as_str().to_string()),
        }),
        Err(EngineError::Recovery(RecoveryError::UnrecordedEdit(edit))) => {
            // §3.4 order: the caller's own preconditions, checked against
            // the document on disk, come before the refusal.
            if let Some(stale) = stale_precondition(&path, ops, &opts) {
                return Err(stale);
            }
            let shown = ctx.shown(&path);
            let tpath = engine::default_transcript_path(&path);
            if let Some(advice) = noma_git::merge::unjoin::advice_for_file(&shown, &tpath) {
                return Err(ToolError::user(
                    "unrecorded_edit",
                    format!("{shown}: the transcript {advice}; nothing was written or recorded"),
                ));
            }
            // A merge in progress leaves `::conflict` blocks the transcript
            // does not record: say so, an agent cannot resolve them.
            let conflicts = read_source(&path)
                .map(|text| conflict_blocks(&text))
                .unwrap_or_default();
            let why = if conflicts.is_empty() {
                "someone edited it outside noma".to_string()
            } else {
                format!(
                    "a merge in progress left {} unresolved ::conflict block(s) ({}); a person \
                     keeps one version of each and deletes the ::conflict block",
                    conflicts.len(),
                    conflicts.join(", ")
                )
            };
            Err(ToolError::user(
                "unrecorded_edit",
                format!(
                    "unrecorded edit: {shown} (sha256 {}) is not the state its transcript's last \
                     record (line {}, op_id {}) leaves ({}): {why}. \
                     Nothing was written or recorded. A person should review the change and run \
                     `noma record {}` to record it; then read_doc again and retry",
                    transcript::short_sha(&edit.document_sha256),
                    edit.line,
                    edit.op_id,
                    transcript::short_sha(&edit.expected_sha256),
                    noma_core::diag::shell_word(&shown),
                ),
            ))
        }
        Err(e @ EngineError::Recovery(_)) if e.is_check_failure() => {
            Err(ToolError::system(format!(
                "{e}. The document has edits its transcript does not explain; a person should \
                 run `noma record` (or review the change) before agents patch it again"
            )))
        }
        Err(e) => Err(ToolError::system(e)),
    }
}

/// The ids of the merge driver's `::conflict` blocks in `text`.
fn conflict_blocks(text: &str) -> Vec<String> {
    let prefix = noma_core::validate::blocks::CONFLICT_ID_PREFIX;
    text.lines()
        .filter_map(|l| {
            let rest = l.trim_start_matches(':').strip_prefix("conflict{id=\"")?;
            rest.starts_with(prefix)
                .then(|| rest.split('"').next().unwrap_or_default().to_string())
        })
        .collect()
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

/// The `sha_mismatch` a request's `expected_sha` or `baseHash` earns
/// against the document as it is on disk (a dry run: nothing is read
/// under the lock, written or recorded), if any.
fn stale_precondition(path: &Path, ops: &[Value], opts: &Options) -> Option<ToolError> {
    let mut dry = opts.clone();
    dry.write = WriteMode::DryRun;
    let outcome = engine::patch_file(path, ops, &dry).ok()?;
    if accepted(&outcome.records) {
        return None;
    }
    let e = rejection(&outcome.records);
    matches!(&e, ToolError::User { code, .. } if code == "sha_mismatch").then_some(e)
}

/// A `patch_block` refusal: a single op's `op_index` (always 0) is not part
/// of the §B.6 shape.
fn single(e: ToolError) -> ToolError {
    match e {
        ToolError::User { code, error, .. } => ToolError::user(code, error),
        other => other,
    }
}

/// The rejection reason of a refused request: the failing record's own
/// engine code (not `op_list_aborted`), with its index.
fn rejection(records: &[Record]) -> ToolError {
    fn engine_error(r: &Record) -> Option<&Diagnostic> {
        r.diagnostics.iter().flatten().rev().find(|d| {
            d.severity == Severity::Error
                && d.phase == Some(Phase::Pre)
                && !d.code.contains('-')
                && d.code != "op_list_aborted"
        })
    }
    for (i, r) in records.iter().enumerate().rev() {
        if let Some(d) = engine_error(r) {
            let mut extra = Map::new();
            extra.insert("op_index".into(), json!(i));
            return ToolError::User {
                code: d.code.clone(),
                error: d.message.clone(),
                extra,
            };
        }
    }
    ToolError::user("invalid_content", "the patch was rejected")
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

fn accepted(records: &[Record]) -> bool {
    !records.is_empty()
        && records
            .iter()
            .all(|r| r.patch_result != transcript::PatchResult::Rejected)
}

/// `patch_block` (§B.6).
pub fn patch_block(ctx: &Context, args: PatchBlockArgs) -> ToolResult {
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
pub fn patch_block_list(ctx: &Context, args: PatchBlockListArgs) -> ToolResult {
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

/// `transcript_read` (§B.8 direction).
pub fn transcript_read(ctx: &Context, args: TranscriptReadArgs) -> ToolResult {
    let doc = ctx.doc_path(&args.file, "transcript_read")?;
    let tpath = ctx.derived(&engine::default_transcript_path(&doc))?;
    let shown = ctx.shown(&tpath);
    let bytes = match noma_store::fsio::read_regular(&tpath) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(json!({
                "transcript": shown, "exists": false, "total": 0,
                "records": [], "truncated": false,
            }))
        }
        Err(e) => return Err(ToolError::system(format!("{shown}: cannot read: {e}"))),
    };
    let parsed = transcript::parse_transcript(&bytes).map_err(|e| {
        let mut extra = Map::new();
        extra.insert("line".into(), json!(e.line()));
        ToolError::User {
            code: "transcript_invalid".into(),
            error: format!("{shown}: {e}"),
            extra,
        }
    })?;
    let total = parsed.entries.len();
    let start = match &args.after_op_id {
        None => 0,
        Some(id) => match parsed.entries.iter().position(|e| &e.record.op_id == id) {
            Some(i) => i + 1,
            None => {
                return Err(ToolError::user(
                    "unknown_op_id",
                    format!("{shown} has no record with op_id {id}"),
                ))
            }
        },
    };
    let limit = args
        .limit
        .unwrap_or(TRANSCRIPT_LIMIT.0)
        .clamp(1, TRANSCRIPT_LIMIT.1) as usize;
    let tail = &parsed.entries[start..];
    let skip = tail.len().saturating_sub(limit);
    let records: Vec<&Record> = tail[skip..].iter().map(|e| &e.record).collect();
    let mut out = json!({
        "transcript": shown,
        "exists": true,
        "total": total,
        "records": records,
        "truncated": skip > 0,
        "torn_tail": parsed.torn_tail.is_some(),
    });
    // Who signed and approved each record, when the document has a
    // provenance sidecar (trusting the workspace's allowed signers).
    if noma_git::provenance::sidecar_path(&doc).exists() {
        let shown_ids: std::collections::HashSet<&str> =
            records.iter().map(|r| r.op_id.as_str()).collect();
        match noma_git::provenance::check::check_worktree(&doc, &bytes) {
            Ok(rep) => {
                let statuses: Vec<_> = rep
                    .records
                    .iter()
                    .filter(|s| shown_ids.contains(s.op_id.as_str()))
                    .collect();
                out["provenance"] = json!({"records": statuses, "sidecar": rep.sidecar});
            }
            Err(e) => out["provenance"] = json!({"error": e}),
        }
    }
    Ok(out)
}

/// `describe_capabilities` (§B.8 direction, Annex A).
pub fn describe_capabilities(ctx: &Context, args: FileArgs) -> ToolResult {
    let doc = ctx.doc_path(&args.file, "describe_capabilities")?;
    let sidecar = ctx.derived(&capability::sidecar_path(&doc))?;
    let shown = ctx.shown(&sidecar);
    let loaded = capability::load(&doc).map_err(|e| {
        ToolError::user(
            "invalid_descriptor",
            e.to_string()
                .replace(&doc.parent().unwrap_or(&doc).display().to_string(), "."),
        )
    })?;
    let extension_ops = extension_ops(ctx);
    let Some((_, file)) = loaded else {
        return Ok(json!({
            "extension_ops": extension_ops,
            "sidecar": shown,
            "exists": false,
            "descriptor": null,
            "grants": {},
            "rename_ids": false,
            "enforcement": "advisory",
            "note": "No descriptor: nothing is granted to agents (Annex A.2). In v1.0 this is \
        advisory only; patches are not refused on its account.",
        }));
    };
    let d = &file.noma_agent;
    let grants: Map<String, Value> = d
        .blocks
        .iter()
        .flatten()
        .map(|(name, policy)| {
            let ops: Vec<&str> = policy.ops.iter().flatten().map(|o| o.as_str()).collect();
            (name.clone(), json!(ops))
        })
        .collect();
    let rename = d.ids.as_ref().and_then(|i| i.rename).unwrap_or(false);
    Ok(json!({
        "extension_ops": extension_ops,
        "sidecar": shown,
        "exists": true,
        "descriptor": file,
        "grants": grants,
        "rename_ids": rename,
        "enforcement": "advisory",
        "note": "v1.0: advisory only. Ops not granted here still apply but are flagged with \
    capability_not_granted warnings in the transcript.",
    }))
}

/// The one extension op, as `describe_capabilities` lists it: agents'
/// requests refuse it; `noma record` writes it for hand edits when the
/// repository's policy allows (`record_text_edits`).
fn extension_ops(ctx: &Context) -> Value {
    let policy = noma_git::config::Policy::load(ctx.workspace.root());
    let (allowed, error) = match &policy {
        Ok(p) => (json!(p.file.record_text_edits), Value::Null),
        Err(e) => (Value::Null, json!(e.to_string())),
    };
    json!([{
        "op": noma_core::patch::REPLACE_LINES,
        "fields": {"line": "1-based line where `old` starts", "old": "the replaced whole lines", "new": "the new whole lines"},
        "accepted_in_patch_requests": false,
        "written_by": "noma record (actor kind human): hand edits no v1.0 op expresses, and a transcript's genesis record; noma itself (actor kind tool): the genesis record before the first patch of a document no commit holds",
        "allowed_by_policy": allowed,
        "policy_error": error,
    }])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_an_object_schema_and_a_description() {
        let reg = registry();
        let tools = reg.tools();
        assert_eq!(tools.len(), 12);
        let changed = [
            "list_changed_docs",
            "get_changed_blocks",
            "mark_reconciled",
            "clear_cache",
            "snapshot_state",
        ];
        for t in &tools {
            assert_eq!(
                t.input_schema.get("type"),
                Some(&json!("object")),
                "{}",
                t.name
            );
            assert!(t.description.as_deref().is_some_and(|d| d.len() > 40));
            if changed.contains(&t.name.as_ref()) {
                continue;
            }
            let req = t.input_schema.get("required").and_then(Value::as_array);
            assert!(
                req.is_some_and(|r| r.contains(&json!("file"))),
                "{} must require file",
                t.name
            );
        }
    }

    #[test]
    fn the_op_schema_is_written_once_and_its_refs_resolve() {
        let reg = registry();
        let pb = &reg.get("patch_block").unwrap().tool.input_schema;
        let text = serde_json::to_string(pb.as_ref()).unwrap();
        for def in ["id", "attrValue"] {
            assert!(text.contains(&format!("#/$defs/{def}")), "{def}");
            assert!(pb["$defs"].get(def).is_some(), "$defs.{def}");
        }
        let ops = pb["properties"]["op"]["properties"]["op"]["oneOf"]
            .as_array()
            .unwrap();
        assert_eq!(ops.len(), 25);
        let req = pb["required"].as_array().unwrap();
        assert!(req.contains(&json!("op")));
        // Flattened metadata is optional.
        assert!(!req.contains(&json!("reason")));
        assert!(pb["properties"].get("expected_sha").is_some());
        // patch_block_list names patch_block's op shape instead of a copy.
        let pbl = &reg.get("patch_block_list").unwrap().tool.input_schema;
        let text = serde_json::to_string(pbl.as_ref()).unwrap();
        assert!(!text.contains("replace_block"), "{text}");
        assert_eq!(pbl["properties"]["ops"]["items"]["required"], json!(["op"]));
        let desc = reg
            .get("patch_block_list")
            .unwrap()
            .tool
            .description
            .clone();
        assert!(desc.unwrap().contains("as patch_block's"));
    }

    #[test]
    fn every_tool_has_a_title_hints_and_an_object_output_schema() {
        let reg = registry();
        let read_only = [
            "read_doc",
            "list_ids",
            "validate_doc",
            "transcript_read",
            "describe_capabilities",
            "list_changed_docs",
            "get_changed_blocks",
        ];
        for t in reg.tools() {
            let name = t.name.as_ref();
            assert!(t.title.as_deref().is_some_and(|s| s.len() > 4), "{name}");
            let a = t.annotations.as_ref().expect(name);
            assert_eq!(
                a.read_only_hint == Some(true),
                read_only.contains(&name),
                "{name}"
            );
            assert_eq!(a.open_world_hint, Some(false), "{name}");
            if !read_only.contains(&name) {
                let destructive = [
                    "patch_block",
                    "patch_block_list",
                    "clear_cache",
                    "snapshot_state",
                ];
                assert_eq!(a.is_destructive(), destructive.contains(&name), "{name}");
            }
            let out = t.output_schema.as_ref().expect(name);
            assert_eq!(out["type"], "object", "{name}");
            assert!(out["anyOf"][0]["required"].is_array(), "{name}");
        }
    }

    #[test]
    fn refusals_are_results_for_the_patch_tools_and_tool_errors_elsewhere() {
        let reg = registry();
        let refused: ToolResult = Err(ToolError::user("target_missing", "no block x"));
        let broken: ToolResult = Err(ToolError::system("disk on fire"));
        let fine: ToolResult = Ok(json!({"ids": [], "aliases": {}}));
        for t in reg.tools() {
            let spec = reg.get(&t.name).unwrap();
            let patch = t.name.starts_with("patch_block");
            let r = spec.to_call_result(refused.clone());
            assert_eq!(r.is_error, Some(!patch), "{}", t.name);
            let body = r.structured_content.clone().unwrap();
            assert_eq!(body["code"], "target_missing");
            // The text content is the same body, for older clients.
            let text = serde_json::to_value(&r.content[0]).unwrap();
            assert_eq!(
                text["text"]
                    .as_str()
                    .map(|t| serde_json::from_str::<Value>(t).unwrap()),
                Some(body)
            );
            assert_eq!(spec.to_call_result(broken.clone()).is_error, Some(true));
        }
        let ok = reg.get("list_ids").unwrap().to_call_result(fine.clone());
        assert_eq!(ok.is_error, Some(false));
        assert_eq!(ok.structured_content, fine.ok());
    }
}

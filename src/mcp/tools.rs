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
use super::registry::{tool, Registry, ToolError, ToolResult};
use super::Context;
use crate::diag::{Diagnostic, Phase, Severity};
use crate::doc::{AttrValue, NodeKind};
use crate::engine::{self, capability, EngineError, Options, RecoveryError, WriteMode};
use crate::transcript::{self, Actor, ActorKind, Record};

/// Every tool this server offers.
pub fn registry() -> Registry {
    Registry::new()
        .with(tool("read_doc", READ_DOC, read_doc))
        .with(tool("list_ids", LIST_IDS, list_ids))
        .with(tool("validate_doc", VALIDATE_DOC, validate_doc))
        .with(tool("patch_block", PATCH_BLOCK, patch_block))
        .with(tool("patch_block_list", PATCH_BLOCK_LIST, patch_block_list))
        .with(tool("transcript_read", TRANSCRIPT_READ, transcript_read))
        .with(tool(
            "describe_capabilities",
            DESCRIBE_CAPABILITIES,
            describe_capabilities,
        ))
        .with(tool(
            "list_changed_docs",
            ch::LIST_CHANGED_DOCS,
            ch::list_changed_docs,
        ))
        .with(tool(
            "get_changed_blocks",
            ch::GET_CHANGED_BLOCKS,
            ch::get_changed_blocks,
        ))
        .with(tool(
            "mark_reconciled",
            ch::MARK_RECONCILED,
            ch::mark_reconciled,
        ))
        .with(tool("clear_cache", ch::CLEAR_CACHE, ch::clear_cache))
        .with(tool(
            "snapshot_state",
            ch::SNAPSHOT_STATE,
            ch::snapshot_state,
        ))
}

const READ_DOC: &str = "Parse a .noma document and list every block in document order: id, type, \
directive name and attributes, section title and level, aliases, childCount, lines [start, end] \
and patchable. Blocks with an id also carry `hash`, the sha256 of their source: send it as the op's \
`baseHash` so the patch is refused if someone changed that block meanwhile. The top-level `sha256` \
is the whole document's (its first 8 characters are patch_block's `expected_sha`). Call this first, \
before patching: only blocks with patchable=true can be targeted.";

const LIST_IDS: &str = "List the canonical block ids of a .noma document in order, and the alias \
map (alias -> canonical id). Use it to turn a reference such as [[risks]] into the canonical id a \
patch op needs.";

const VALIDATE_DOC: &str =
    "Validate a .noma document (the profile comes from its frontmatter) and \
return {ok, diagnostics}: ok is false when any diagnostic has severity error. Equivalent to \
`noma check`. Use it after edits, or before patching to see existing problems.";

const PATCH_BLOCK: &str = "Apply ONE block-level patch op to a .noma document, in place, and \
append a transcript record to <file>.patches (also when the op is rejected). On success returns \
{ok: true, post_validation, transcript_entry, diagnostics}. A refused op returns {ok: false, \
error, code} with a §3.5 code (target_missing, sha_mismatch, id_conflict, invalid_content, ...): \
fix the op and retry. Get ids and block hashes from read_doc first; put a block's `hash` in the \
op's `baseHash` (or in the `base_hash` argument) to guard against concurrent edits. An op whose \
`content` exceeds 1000000 bytes is refused with invalid_content and nothing is written. \
Preconditions are checked in this order: `expected_sha` and `baseHash` against the document on \
disk (stale: sha_mismatch); then, if the document holds an edit its transcript does not explain \
(someone changed the file by hand), the call is refused with code unrecorded_edit and nothing is \
written or recorded: agents cannot override this; ask a person to review the edit and run `noma \
record <file>`, then read_doc again and retry. For several ops that must succeed together use \
patch_block_list.";

const PATCH_BLOCK_LIST: &str =
    "Apply a list of patch ops to one .noma document atomically: either \
every op applies (one transcript record each, the document written once) or none does (every op \
recorded as rejected, the document untouched). Returns {ok: true, post_validation, \
transcript_entries, diagnostics} or {ok: false, error, code, op_index} where op_index is the op \
that failed. Same op shapes, content cap and preconditions (in the same order: sha_mismatch \
before unrecorded_edit) as patch_block.";

const TRANSCRIPT_READ: &str =
    "Read the patch transcript of a .noma document (<file>.patches): the \
most recent records, newest last, each with op, actor, patch_result and hashes. Use `after_op_id` \
to get only records appended after one you have seen, `limit` to cap how many come back. \
Read-only.";

const DESCRIBE_CAPABILITIES: &str = "Show the capability descriptor (Annex A sidecar \
<file>.capabilities.yml) of a .noma document: which ops each directive type grants to agents. In \
v1.0 it is advisory: patches are never refused on its account, but ops it does not grant are \
flagged with capability_not_granted warnings in the transcript. Absent descriptor = nothing \
granted.";

/// The `file` argument shared by the read-only tools.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct FileArgs {
    /// Path of the .noma document: relative to the repository root, or
    /// absolute inside it.
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
    /// Why the change is made; stored as the records' `reason`.
    #[serde(default)]
    pub reason: Option<String>,
    /// First 8 hex characters of the document's sha256 as you read it
    /// (read_doc `sha256`); the patch is rejected with sha_mismatch if the
    /// document changed since.
    #[serde(default)]
    #[schemars(length(min = 8, max = 64))]
    pub expected_sha: Option<String>,
    /// Who is acting; defaults to {kind: "agent", name: "unknown"}.
    #[serde(default)]
    pub actor: Option<ActorArg>,
    /// Full sha256 of the document state the patch was prepared against;
    /// a difference is reported as a base_sha_drift warning, not a refusal.
    #[serde(default)]
    #[schemars(length(min = 64, max = 64))]
    pub base_sha256: Option<String>,
    /// op_id of a causally prior transcript record.
    #[serde(default)]
    pub parent_op_id: Option<String>,
}

/// Arguments of `patch_block`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct PatchBlockArgs {
    /// Path of the .noma document: relative to the repository root, or
    /// absolute inside it.
    pub file: String,
    /// The patch op (one of the 25 of the v1.0 catalog).
    #[schemars(schema_with = "op_schema")]
    pub op: Value,
    /// The target block's `hash` (read_doc), used as the op's `baseHash`
    /// when the op has none: the patch is rejected with sha_mismatch if
    /// that block changed since.
    #[serde(default)]
    pub base_hash: Option<String>,
    /// Preconditions and metadata.
    #[serde(flatten)]
    pub meta: PatchMeta,
}

/// Arguments of `patch_block_list`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct PatchBlockListArgs {
    /// Path of the .noma document: relative to the repository root, or
    /// absolute inside it.
    pub file: String,
    /// The ops, applied in order, all or nothing.
    #[schemars(schema_with = "op_list_schema")]
    pub ops: Vec<Value>,
    /// Preconditions and metadata (shared by every record of the list).
    #[serde(flatten)]
    pub meta: PatchMeta,
}

/// Arguments of `transcript_read`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TranscriptReadArgs {
    /// Path of the .noma document (not of the .patches file).
    pub file: String,
    /// Most records to return (the newest ones); default 20, at most 500.
    #[serde(default)]
    #[schemars(range(min = 1, max = 500))]
    pub limit: Option<u32>,
    /// Only records appended after the record with this op_id.
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

fn op_variants(generator: &mut SchemaGenerator) -> Value {
    let full = crate::transcript::schema::patch_op();
    // The variants refer to "#/$defs/..."; hoist those definitions into the
    // tool schema's own $defs so the references resolve there.
    if let Some(defs) = full.get("$defs").and_then(Value::as_object) {
        let target = generator.definitions_mut();
        for (k, v) in defs {
            target.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    full.get("oneOf").cloned().unwrap_or(Value::Null)
}

fn op_schema(generator: &mut SchemaGenerator) -> Schema {
    let variants = op_variants(generator);
    Schema::try_from(json!({
        "description": "One patch op, e.g. {\"op\":\"replace_block\",\"id\":\"intro\",\"content\":\"...\"}. \
Every op may carry baseHash (the target block's `hash` from read_doc).",
        "oneOf": variants,
    }))
    .unwrap_or_default()
}

fn op_list_schema(generator: &mut SchemaGenerator) -> Schema {
    let variants = op_variants(generator);
    Schema::try_from(json!({
        "type": "array",
        "minItems": 1,
        "items": { "oneOf": variants },
    }))
    .unwrap_or_default()
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
    crate::doc::source::read_file(path).map_err(ToolError::system)
}

fn validate_options(path: &Path) -> crate::validate::Options {
    crate::validate::Options {
        base_dir: path.parent().map(Path::to_path_buf),
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
    let doc = crate::doc::parse(&src);
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
                _ => crate::doc::hash::slice_hash(&src, node.span.start, node.span.end),
            };
            b.insert("hash".into(), json!(hash));
        }
        blocks.push(Value::Object(b));
        for item in items {
            blocks.push(plain("list_item", [item.span.start, item.span.end]));
        }
    }
    Ok(json!({ "blocks": blocks, "sha256": info.sha256 }))
}

/// `list_ids` (§B.4).
pub fn list_ids(ctx: &Context, args: FileArgs) -> ToolResult {
    let path = ctx.doc_path(&args.file, "list_ids")?;
    let src = read_source(&path)?;
    let reg = crate::doc::ids::registry(&crate::doc::parse(&src));
    Ok(json!({ "ids": reg.ids, "aliases": reg.aliases }))
}

/// `validate_doc` (§B.5).
pub fn validate_doc(ctx: &Context, args: FileArgs) -> ToolResult {
    let path = ctx.doc_path(&args.file, "validate_doc")?;
    let src = read_source(&path)?;
    let diags = crate::validate::validate(&crate::doc::parse(&src), &validate_options(&path));
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
    opts.doc_uri = Some(transcript::portable_doc_uri(
        Some(ctx.workspace.root()),
        &path,
    ));
    opts.validate = validate_options(&path);
    opts.before_append = ctx
        .signer
        .clone()
        .map(crate::provenance::writer::signing_step);
    match engine::patch_file(&path, ops, &opts, engine::APPLY) {
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
                    crate::diag::shell_word(&shown),
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
    let prefix = crate::validate::blocks::CONFLICT_ID_PREFIX;
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
    let outcome = engine::patch_file(path, ops, &dry, engine::APPLY).ok()?;
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
    let bytes = match crate::fsio::read_regular(&tpath) {
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
    if crate::provenance::sidecar_path(&doc).exists() {
        let shown_ids: std::collections::HashSet<&str> =
            records.iter().map(|r| r.op_id.as_str()).collect();
        match crate::provenance::check::check_worktree(&doc, &bytes) {
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
    let policy = crate::config::Policy::load(ctx.workspace.root());
    let (allowed, error) = match &policy {
        Ok(p) => (json!(p.file.record_text_edits), Value::Null),
        Err(e) => (Value::Null, json!(e.to_string())),
    };
    json!([{
        "op": crate::patch::REPLACE_LINES,
        "fields": {"line": "1-based line where `old` starts", "old": "the replaced whole lines", "new": "the new whole lines"},
        "accepted_in_patch_requests": false,
        "written_by": "noma record (actor kind human): hand edits no v1.0 op expresses, and a transcript's genesis record",
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
    fn op_schema_refs_resolve_in_the_tool_schema() {
        let reg = registry();
        for name in ["patch_block", "patch_block_list"] {
            let schema = &reg.get(name).unwrap().tool.input_schema;
            let text = serde_json::to_string(schema.as_ref()).unwrap();
            for def in ["id", "attrValue", "baseHash"] {
                assert!(text.contains(&format!("#/$defs/{def}")), "{name}: {def}");
                assert!(schema["$defs"].get(def).is_some(), "{name}: $defs.{def}");
            }
            assert!(text.contains("\"replace_block\"") && text.contains("\"rename_id\""));
        }
        let pb = &reg.get("patch_block").unwrap().tool.input_schema;
        let req = pb["required"].as_array().unwrap();
        assert!(req.contains(&json!("op")));
        // Flattened metadata is optional.
        assert!(!req.contains(&json!("reason")));
        assert!(pb["properties"].get("expected_sha").is_some());
    }
}

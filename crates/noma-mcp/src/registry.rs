//! The tool registry: name, description, input schema and a typed handler
//! per tool.
//!
//! A tool is an args struct deriving `Deserialize + JsonSchema` and a
//! function `fn(&Context, Args) -> ToolResult`, registered with [`tool`]
//! and [`Registry::with`]. This file knows no tool: the list the server
//! offers is built where the tools live. The registry derives the JSON
//! input schema from the args type and turns the three outcomes into MCP
//! results:
//!
//! - `Ok(body)`: `body` as `structuredContent`, with a text content per
//!   [`TextCopy`]: the same body JSON-encoded for clients before structured
//!   output (2025-06-18), a short text for the others when the body is big.
//!   A body is a `Value` or, for `read_doc`, JSON text the tool wrote
//!   ([`JsonText`]), which [`ToolSpec::prepare`] leaves as text for the
//!   transport to write as it is;
//! - `Err(ToolError::User { .. })`: `{ok: false, error, code}`; a normal
//!   result (`isError: false`) for the patch tools, whose §3.5 codes an
//!   agent branches on (§B.7, [`Refusals::AsResult`]), an `isError: true`
//!   result for every other tool (the call did not do what it was asked);
//! - `Err(ToolError::System(..))`: `{ok: false, error}` with `isError:
//!   true`: infrastructure faults, path escapes, book manifests.
//!
//! Every tool also carries a `title`, [`ToolAnnotations`] (read-only,
//! destructive, idempotent hints) and an `outputSchema` that its results,
//! successes and failures alike, validate against.
//!
//! Arguments that do not match the args type are [`InvalidArgs`] naming the
//! offending field: a JSON-RPC `-32602` (invalid params), or an `isError`
//! result when the client negotiated 2025-11-25 or later (see
//! [`super::validation_is_a_tool_error`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, ProtocolVersion, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{json, Map, Value};

use super::Context;

/// A tool's failure.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolError {
    /// Something the caller can inspect and fix: returned as content.
    User {
        /// Machine-readable code (a §3.5 code for patch errors).
        code: String,
        /// Human-readable explanation.
        error: String,
        /// Extra fields merged into the body (e.g. `op_index`).
        extra: Map<String, Value>,
    },
    /// An infrastructure fault or a refused path: `isError: true`.
    System {
        /// Human-readable explanation.
        error: String,
        /// A §3.5 code when one applies (book manifests: `unsupported_op`).
        code: Option<String>,
    },
}

impl ToolError {
    /// A user error without extra fields.
    pub fn user(code: impl Into<String>, error: impl Into<String>) -> ToolError {
        ToolError::User {
            code: code.into(),
            error: error.into(),
            extra: Map::new(),
        }
    }

    /// A system error.
    pub fn system(error: impl std::fmt::Display) -> ToolError {
        ToolError::System {
            error: error.to_string(),
            code: None,
        }
    }

    /// The JSON body sent for this error.
    pub fn body(&self) -> Value {
        match self {
            ToolError::User { code, error, extra } => {
                let mut body = Map::new();
                body.insert("ok".into(), json!(false));
                body.insert("error".into(), json!(error));
                body.insert("code".into(), json!(code));
                for (k, v) in extra {
                    body.insert(k.clone(), v.clone());
                }
                Value::Object(body)
            }
            ToolError::System { error, code: None } => json!({"ok": false, "error": error}),
            ToolError::System {
                error,
                code: Some(code),
            } => json!({"ok": false, "error": error, "code": code}),
        }
    }

    /// True for system errors (`isError: true`).
    pub fn is_system(&self) -> bool {
        matches!(self, ToolError::System { .. })
    }
}

/// What a tool returns.
pub type ToolResult = Result<Value, ToolError>;

/// A tool's success body.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    /// A JSON value: every tool but `read_doc`.
    Value(Value),
    /// JSON text the tool wrote itself.
    Text(JsonText),
}

impl From<Value> for Body {
    fn from(v: Value) -> Body {
        Body::Value(v)
    }
}

impl From<JsonText> for Body {
    fn from(t: JsonText) -> Body {
        Body::Text(t)
    }
}

/// A success body written straight to JSON text: `read_doc`'s thousands
/// of blocks, which as a [`Value`] tree cost more to build, serialize and
/// drop than the rest of the call (decision `read-doc-writes-its-answer`).
#[derive(Debug, Clone, PartialEq)]
pub struct JsonText {
    json: String,
    fields: Vec<String>,
}

impl JsonText {
    /// The body `json`, one JSON object; name its fields for the short
    /// text with [`JsonText::field`] and [`JsonText::items`].
    pub fn new(json: String) -> JsonText {
        JsonText {
            json,
            fields: Vec::new(),
        }
    }

    /// Adds the summary entry of field `key` holding `value`.
    pub fn field(mut self, key: &str, value: &Value) -> JsonText {
        self.fields.push(format!("{key}: {}", brief(value)));
        self
    }

    /// Adds the summary entry of field `key` holding an array of `n` items.
    pub fn items(mut self, key: &str, n: usize) -> JsonText {
        self.fields.push(format!("{key}: {n} items"));
        self
    }

    /// The JSON text.
    pub fn json(&self) -> &str {
        &self.json
    }
}

/// What a tool call comes to: a body or a failure.
pub type Outcome = Result<Body, ToolError>;

/// An MCP result whose `structuredContent` may still be JSON text, so
/// that a transport can write that text as it is.
#[derive(Debug)]
pub struct Prepared {
    /// The result; `structured_content` is `None` when `json` holds it.
    pub result: CallToolResult,
    /// The `structuredContent`, as JSON text.
    pub json: Option<String>,
}

impl Prepared {
    /// The result with its `structuredContent` a [`Value`], parsing the
    /// JSON text (which this crate wrote; were it ever not JSON, the result
    /// is a system error saying so rather than a wrong body).
    pub fn into_result(self) -> CallToolResult {
        let mut result = self.result;
        if let Some(json) = self.json {
            let body = serde_json::from_str(&json).unwrap_or_else(|e| {
                result.is_error = Some(true);
                ToolError::system(format!("internal error: the answer is not JSON: {e}")).body()
            });
            result.structured_content = Some(body);
        }
        result
    }
}

/// The arguments did not match the tool's input type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidArgs(pub String);

type Handler = dyn Fn(&Context, Value) -> Result<Outcome, InvalidArgs> + Send + Sync;

/// How a tool's [`ToolError::User`] reaches the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusals {
    /// A normal result (`isError: false`): Annex B's rule for the patch
    /// tools, whose refusals carry a §3.5 code to act on (§B.7).
    AsResult,
    /// A tool error (`isError: true`), the body still carrying its `code`:
    /// the other tools, whose failure means nothing was read or done.
    AsToolError,
}

/// One registered tool.
#[derive(Clone)]
pub struct ToolSpec {
    /// What `tools/list` shows.
    pub tool: Tool,
    handler: Arc<Handler>,
    refusals: Refusals,
}

impl std::fmt::Debug for ToolSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSpec")
            .field("name", &self.tool.name)
            .finish()
    }
}

impl ToolSpec {
    /// Runs the tool on raw JSON arguments.
    pub fn call(&self, ctx: &Context, args: Value) -> Result<Outcome, InvalidArgs> {
        (self.handler)(ctx, args)
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.tool.name
    }

    /// Sets the human-readable title and the behaviour hints.
    pub fn titled(mut self, title: &str, hints: ToolAnnotations) -> ToolSpec {
        self.tool.title = Some(title.to_string());
        // The title is the tool's own (2025-06-18); repeating it in the
        // annotations would only cost bytes of every agent's context.
        self.tool.annotations = Some(hints);
        self
    }

    /// Sets the output schema every result's `structuredContent` matches.
    ///
    /// # Panics
    ///
    /// When `schema` is not a JSON object with `"type": "object"` (MCP
    /// requires one): a programming error the registry's unit test catches.
    pub fn output(mut self, schema: Value) -> ToolSpec {
        match schema {
            Value::Object(o) if o.get("type") == Some(&json!("object")) => {
                self.tool.output_schema = Some(Arc::new(o));
            }
            other => panic!(
                "tool {}: output schema is not an object schema: {other}",
                self.tool.name
            ),
        }
        self
    }

    /// Refusals ([`ToolError::User`]) are normal results ([`Refusals::AsResult`]).
    pub fn refusals_as_results(mut self) -> ToolSpec {
        self.refusals = Refusals::AsResult;
        self
    }

    /// How this tool's refusals reach the client.
    pub fn refusals(&self) -> Refusals {
        self.refusals
    }

    /// The MCP result of an outcome of this tool: the body as
    /// `structuredContent` and as JSON text, `isError` per the module rule.
    pub fn to_call_result(&self, result: ToolResult) -> CallToolResult {
        self.to_call_result_with(result, TextCopy::Full)
    }

    /// [`ToolSpec::to_call_result`] with the text content `text` asks for.
    pub fn to_call_result_with(&self, result: ToolResult, text: TextCopy) -> CallToolResult {
        self.prepare(result.map(Body::Value), text).into_result()
    }

    /// The MCP result of `outcome`, a [`Body::Text`] left as text.
    pub fn prepare(&self, outcome: Outcome, text: TextCopy) -> Prepared {
        let (body, is_error) = match outcome {
            // Moved, not cloned: read_doc's body of a large document is big.
            Ok(body) => (body, false),
            Err(e @ ToolError::User { .. }) if self.refusals == Refusals::AsResult => {
                (Body::Value(e.body()), false)
            }
            Err(e) => (Body::Value(e.body()), true),
        };
        let (copy, structured, json) = match (body, text) {
            (Body::Value(v), TextCopy::Full) => (v.to_string(), Some(v), None),
            (Body::Value(v), TextCopy::Short) => (short_text(self.name(), &v), Some(v), None),
            (Body::Text(t), TextCopy::Full) => (t.json.clone(), None, Some(t.json)),
            (Body::Text(t), TextCopy::Short) if t.json.len() <= SHORT_TEXT => {
                (t.json.clone(), None, Some(t.json))
            }
            (Body::Text(t), TextCopy::Short) => {
                (summary(self.name(), &t.fields), None, Some(t.json))
            }
        };
        let mut result = CallToolResult::success(vec![ContentBlock::text(copy)]);
        result.structured_content = structured;
        result.is_error = Some(is_error);
        Prepared { result, json }
    }
}

/// What a result's text content carries beside its `structuredContent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextCopy {
    /// The body again, JSON-encoded: for clients before 2025-06-18, which
    /// know no `structuredContent`, and for every client of a server run
    /// with `--full-text` (hosts and SDKs that read only the text).
    Full,
    /// The JSON text when it is at most [`SHORT_TEXT`] bytes, else a
    /// summary naming the body's fields that points to `structuredContent`:
    /// clients of 2025-06-18 and later (the agent hosts that read structured
    /// output give the model `structuredContent` and drop the text, so a
    /// second copy of a big body is bytes every call pays for nothing).
    Short,
}

impl TextCopy {
    /// The text copy for a session that negotiated `version` (`None`: not
    /// known, as [`super::NomaServer::call`]), `Full` whatever the revision
    /// when `full_text` is set.
    pub fn for_session(version: Option<&ProtocolVersion>, full_text: bool) -> TextCopy {
        match version {
            Some(v) if !full_text && *v >= ProtocolVersion::V_2025_06_18 => TextCopy::Short,
            _ => TextCopy::Full,
        }
    }
}

/// Bodies whose JSON is at most this many bytes keep their full text copy
/// for every client: the patch tools' answers and refusals, validations,
/// small reads. Only big bodies (read_doc, transcript_read of a large
/// document) get the summary.
pub const SHORT_TEXT: usize = 4096;

/// The short text of `tool`'s `body` ([`TextCopy::Short`]).
fn short_text(tool: &str, body: &Value) -> String {
    if let Some(json) = json_within(body, SHORT_TEXT) {
        return json;
    }
    let fields: Vec<String> = match body.as_object() {
        Some(o) => o
            .iter()
            .map(|(k, v)| format!("{k}: {}", brief(v)))
            .collect(),
        None => vec![brief(body)],
    };
    summary(tool, &fields)
}

/// The summary of a big body whose fields read `fields`.
fn summary(tool: &str, fields: &[String]) -> String {
    // The pointer first: a client that shows or parses only the first
    // characters of the text still learns where the result is.
    format!(
        "{tool}: the full result is this answer's structuredContent (a client that reads only \
         text: run the server as `noma mcp --full-text`). {}",
        fields.join("; ")
    )
}

/// One field of a summary: an array's length, a small object in full, a
/// long string cut, scalars as JSON.
fn brief(v: &Value) -> String {
    const CUT: usize = 200;
    match v {
        Value::Array(items) => format!("{} items", items.len()),
        Value::Object(o) => json_within(v, 1024).unwrap_or_else(|| format!("{} fields", o.len())),
        Value::String(s) if s.chars().count() > CUT => {
            let head: String = s.chars().take(CUT).collect();
            format!("{}…", Value::String(head))
        }
        other => other.to_string(),
    }
}

/// `v` as JSON when that takes at most `limit` bytes; stops writing as
/// soon as it would take more, so a big body costs only `limit` bytes here.
fn json_within(v: &Value, limit: usize) -> Option<String> {
    struct Bounded(Vec<u8>, usize);
    impl std::io::Write for Bounded {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            if self.0.len() + b.len() > self.1 {
                return Err(std::io::Error::other("over the limit"));
            }
            self.0.extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut out = Bounded(Vec::new(), limit);
    serde_json::to_writer(&mut out, v).ok()?;
    String::from_utf8(out.0).ok()
}

/// Builds a [`ToolSpec`] from a typed handler; the input schema comes from `A`.
///
/// # Panics
///
/// When `A`'s schema is not an object schema: a programming error caught by
/// the registry's unit test, never by input.
pub fn tool<A, B>(
    name: &'static str,
    description: &'static str,
    f: fn(&Context, A) -> Result<B, ToolError>,
) -> ToolSpec
where
    A: DeserializeOwned + JsonSchema + 'static,
    B: Into<Body> + 'static,
{
    let mut schema = match rmcp::handler::server::common::schema_for_input::<A>() {
        Ok(s) => s,
        Err(e) => panic!("tool {name}: input schema is not an object: {e}"),
    };
    compact(Arc::make_mut(&mut schema));
    let declared = Arc::clone(&schema);
    let handler = move |ctx: &Context, args: Value| {
        check_args(name, &declared, &args)?;
        let args: A = serde_json::from_value(args)
            .map_err(|e| InvalidArgs(format!("invalid arguments for {name}: {e}")))?;
        Ok(f(ctx, args).map(Into::into))
    };
    ToolSpec {
        tool: Tool::new(name, description, schema),
        handler: Arc::new(handler),
        refusals: Refusals::AsToolError,
    }
}

/// Checks `args` against what the tool's input schema declares at the top
/// level, before they are read: an argument the schema does not name is
/// refused with the one it most likely meant (an agent that writes
/// `baseHash` for `base_hash` must not have its precondition silently
/// ignored), and a number or string outside its declared bounds is
/// refused rather than clamped. Nested values are the args type's to
/// refuse.
fn check_args(name: &str, schema: &Map<String, Value>, args: &Value) -> Result<(), InvalidArgs> {
    let (Some(args), Some(props)) = (
        args.as_object(),
        schema.get("properties").and_then(Value::as_object),
    ) else {
        return Ok(());
    };
    for (key, value) in args {
        let Some(decl) = props.get(key) else {
            return Err(InvalidArgs(unknown_arg(name, key, props)));
        };
        if let Some(why) = out_of_bounds(decl, value) {
            return Err(InvalidArgs(format!(
                "invalid arguments for {name}: `{key}` {why}"
            )));
        }
    }
    Ok(())
}

/// The refusal of an argument `key` that `props` does not declare.
fn unknown_arg(name: &str, key: &str, props: &Map<String, Value>) -> String {
    // Spelling aside (case, `_`, `-`), then within two edits.
    let plain = |s: &str| s.replace(['_', '-'], "").to_ascii_lowercase();
    let guess = props
        .keys()
        .find(|k| plain(k) == plain(key))
        .map(String::as_str)
        .or_else(|| noma_core::suggest::near_miss(key, props.keys().map(String::as_str)));
    let known: Vec<&str> = props.keys().map(String::as_str).collect();
    match guess {
        Some(g) => {
            format!("invalid arguments for {name}: unknown argument `{key}`; did you mean `{g}`?")
        }
        None => format!(
            "invalid arguments for {name}: unknown argument `{key}` (arguments: {})",
            known.join(", ")
        ),
    }
}

/// Why `value` breaks the bounds `decl` declares (`minimum`, `maximum`,
/// `minLength`, `maxLength`), if it does.
fn out_of_bounds(decl: &Value, value: &Value) -> Option<String> {
    let bound = |k: &str| decl.get(k).and_then(Value::as_f64);
    if let Some(n) = value.as_f64() {
        if let Some(min) = bound("minimum").filter(|m| n < *m) {
            return Some(format!("is {value}, below its minimum {min}"));
        }
        if let Some(max) = bound("maximum").filter(|m| n > *m) {
            return Some(format!("is {value}, above its maximum {max}"));
        }
    }
    if let Some(text) = value.as_str() {
        let len = text.chars().count() as f64;
        if let Some(min) = bound("minLength").filter(|m| len < *m) {
            return Some(format!(
                "is {len} characters, under its minimum length {min}"
            ));
        }
        if let Some(max) = bound("maxLength").filter(|m| len > *m) {
            return Some(format!(
                "is {len} characters, over its maximum length {max}"
            ));
        }
    }
    None
}

/// Drops what a derived schema spends bytes on without telling a client
/// anything: the root's `$schema` (2020-12 is MCP's default dialect) and
/// `title` (the Rust type's name), `default`s (an omitted optional field
/// means "none", "false" or "empty", as its description says), the `null` member of
/// an optional field's type (omitting the field is how it is left out),
/// and Rust integer `format`s (`uint32`). `tools/list` goes into every
/// agent's context.
fn compact(schema: &mut Map<String, Value>) {
    schema.remove("$schema");
    schema.remove("title");
    strip(schema);
}

fn strip(schema: &mut Map<String, Value>) {
    schema.remove("default");
    if let Some(Value::Array(types)) = schema.get("type") {
        let kept: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        if kept.len() == 1 {
            schema.insert("type".into(), kept[0].clone());
        }
    }
    if schema
        .get("format")
        .and_then(Value::as_str)
        .is_some_and(|f| f.starts_with("uint") || f.starts_with("int"))
    {
        schema.remove("format");
    }
    // `anyOf: [X, {type: null}]` of an optional field: X.
    if let Some(Value::Array(any)) = schema.get("anyOf") {
        let kept: Vec<&Value> = any
            .iter()
            .filter(|s| s.get("type") != Some(&json!("null")))
            .collect();
        if kept.len() == 1 && any.len() == 2 {
            if let Some(inner) = kept[0].as_object().cloned() {
                schema.remove("anyOf");
                for (k, v) in inner {
                    schema.entry(k).or_insert(v);
                }
            }
        }
    }
    for (key, v) in schema.iter_mut() {
        match v {
            // Maps of names to schemas: each value is a schema, the map
            // itself is not (a property may be called `default`).
            Value::Object(map) if key == "properties" || key == "$defs" => {
                for sub in map.values_mut().filter_map(Value::as_object_mut) {
                    strip(sub);
                }
            }
            Value::Object(o) => strip(o),
            Value::Array(items) => {
                for item in items.iter_mut().filter_map(Value::as_object_mut) {
                    strip(item);
                }
            }
            _ => {}
        }
    }
}

/// The set of tools a server offers, by name.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    tools: BTreeMap<String, ToolSpec>,
    order: Vec<String>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Registry {
        Registry::default()
    }

    /// Adds (or replaces) a tool.
    pub fn with(mut self, spec: ToolSpec) -> Registry {
        let name = spec.name().to_string();
        if self.tools.insert(name.clone(), spec).is_none() {
            self.order.push(name);
        }
        self
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<&ToolSpec> {
        self.tools.get(name)
    }

    /// Every tool, in registration order.
    pub fn tools(&self) -> Vec<Tool> {
        self.order
            .iter()
            .filter_map(|n| self.tools.get(n))
            .map(|s| s.tool.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_copy_follows_the_revision_unless_full_text_is_asked() {
        use ProtocolVersion as V;
        for (version, full, want) in [
            (None, false, TextCopy::Full),
            (Some(V::V_2024_11_05), false, TextCopy::Full),
            (Some(V::V_2025_03_26), false, TextCopy::Full),
            (Some(V::V_2025_06_18), false, TextCopy::Short),
            (Some(V::V_2025_11_25), false, TextCopy::Short),
            (Some(V::V_2025_11_25), true, TextCopy::Full),
        ] {
            assert_eq!(
                TextCopy::for_session(version.as_ref(), full),
                want,
                "{version:?}"
            );
        }
    }

    #[test]
    fn a_short_text_is_the_json_of_a_small_body_and_a_summary_of_a_big_one() {
        let small = json!({"ok": false, "code": "target_missing", "error": "no block x"});
        assert_eq!(short_text("patch_block", &small), small.to_string());
        let long = "x".repeat(5000);
        let big = json!({
            "blocks": vec![json!({"type": "paragraph"}); 300],
            "sha256": "ab12",
            "unrecorded_edit": null,
            "edit": {"line": 3},
            "note": long,
        });
        let text = short_text("read_doc", &big);
        assert!(text.starts_with("read_doc: the full result is this answer's structuredContent"));
        assert!(text.contains("`noma mcp --full-text`"), "{text}");
        // The body's fields in its order; a long string cut at 200 characters.
        let fields = format!(
            r#"blocks: 300 items; sha256: "ab12"; unrecorded_edit: null; edit: {{"line":3}}; note: "{}"…"#,
            "x".repeat(200)
        );
        assert!(text.ends_with(&fields), "{text}");
        assert!(text.len() < 600, "{text}");
        // Exactly at the limit the JSON is kept; one byte over, it is not.
        let pad = |n: usize| json!({"a": "y".repeat(n)});
        let at = SHORT_TEXT - pad(0).to_string().len();
        assert_eq!(short_text("t", &pad(at)), pad(at).to_string());
        assert!(short_text("t", &pad(at + 1)).starts_with("t: the full result"));
    }

    #[test]
    fn results_carry_the_text_copy_asked_for() {
        let registry = crate::tools::registry();
        let spec = registry.get("list_ids").unwrap();
        let body = json!({"items": vec![json!("abcdefgh"); 1000]});
        let full = spec.to_call_result_with(Ok(body.clone()), TextCopy::Full);
        let short = spec.to_call_result_with(Ok(body.clone()), TextCopy::Short);
        for r in [&full, &short] {
            assert_eq!(r.structured_content.as_ref(), Some(&body));
            assert_eq!(r.is_error, Some(false));
        }
        let text = |r: &CallToolResult| {
            let block = serde_json::to_value(&r.content[0]).unwrap();
            block["text"].as_str().unwrap().to_string()
        };
        assert_eq!(text(&full), body.to_string());
        assert!(
            text(&short).starts_with("list_ids: the full result"),
            "{}",
            text(&short)
        );
        let err = spec.to_call_result_with(Err(ToolError::system("gone")), TextCopy::Short);
        assert_eq!(err.is_error, Some(true));
        assert_eq!(
            text(&err),
            json!({"ok": false, "error": "gone"}).to_string()
        );
    }

    #[test]
    fn compacting_drops_noise_but_keeps_properties_named_like_keywords() {
        let mut schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Args",
            "type": "object",
            "properties": {
                "default": {"type": ["string", "null"], "default": null},
                "format": {"type": "integer", "format": "uint32", "minimum": 0},
                "title": {"anyOf": [{"$ref": "#/$defs/X"}, {"type": "null"}], "description": "t"},
                "files": {"type": "array", "items": {"type": "string"}, "default": []},
            },
            "$defs": {"X": {"type": "object", "title": "X"}},
        });
        compact(schema.as_object_mut().unwrap());
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {
                    "default": {"type": "string"},
                    "format": {"type": "integer", "minimum": 0},
                    "title": {"$ref": "#/$defs/X", "description": "t"},
                    "files": {"type": "array", "items": {"type": "string"}},
                },
                // Only the root's title goes: a nested one is kept.
                "$defs": {"X": {"type": "object", "title": "X"}},
            })
        );
    }
}

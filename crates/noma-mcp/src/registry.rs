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
//! - `Ok(body)`: `body` as `structuredContent` and again as JSON text, the
//!   text content every client can parse (the spec's advice, and what the
//!   reference's agent SDKs read). A tool that answers with JSON text it
//!   wrote ([`JsonText`], `read_doc`) declares no output schema and sends
//!   that text once, as its text content ([`ToolSpec::text_only`];
//!   decision `mcp-answers-every-client-reads`);
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

use rmcp::model::{CallToolResult, ContentBlock, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{json, Map, Value};

use super::Context;

/// A tool's failure.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ToolError {
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
    pub(crate) fn user(code: impl Into<String>, error: impl Into<String>) -> ToolError {
        ToolError::User {
            code: code.into(),
            error: error.into(),
            extra: Map::new(),
        }
    }

    /// A system error.
    pub(crate) fn system(error: impl std::fmt::Display) -> ToolError {
        ToolError::System {
            error: error.to_string(),
            code: None,
        }
    }

    /// The JSON body sent for this error.
    pub(crate) fn body(&self) -> Value {
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
}

/// What a tool returns.
pub(crate) type ToolResult = Result<Value, ToolError>;

/// A tool's success body.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Body {
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
pub(crate) struct JsonText {
    json: String,
}

impl JsonText {
    /// The body `json`, one JSON object.
    pub(crate) fn new(json: String) -> JsonText {
        JsonText { json }
    }

    /// The JSON text.
    #[cfg(test)]
    pub(crate) fn json(&self) -> &str {
        &self.json
    }
}

/// What a tool call comes to: a body or a failure.
pub(crate) type Outcome = Result<Body, ToolError>;

/// The arguments did not match the tool's input type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InvalidArgs(pub String);

type Handler = dyn Fn(&Context, Value) -> Result<Outcome, InvalidArgs> + Send + Sync;

/// How a tool's [`ToolError::User`] reaches the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusals {
    /// A normal result (`isError: false`): Annex B's rule for the patch
    /// tools, whose refusals carry a §3.5 code to act on (§B.7).
    AsResult,
    /// A tool error (`isError: true`), the body still carrying its `code`:
    /// the other tools, whose failure means nothing was read or done.
    AsToolError,
}

/// One registered tool.
#[derive(Clone)]
pub(crate) struct ToolSpec {
    /// What `tools/list` shows.
    pub tool: Tool,
    handler: Arc<Handler>,
    refusals: Refusals,
    text_only: bool,
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
    pub(crate) fn call(&self, ctx: &Context, args: Value) -> Result<Outcome, InvalidArgs> {
        (self.handler)(ctx, args)
    }

    /// The tool's name.
    pub(crate) fn name(&self) -> &str {
        &self.tool.name
    }

    /// Sets the human-readable title and the behaviour hints.
    pub(crate) fn titled(mut self, title: &str, hints: ToolAnnotations) -> ToolSpec {
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
    pub(crate) fn output(mut self, schema: Value) -> ToolSpec {
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
    pub(crate) fn refusals_as_results(mut self) -> ToolSpec {
        self.refusals = Refusals::AsResult;
        self
    }

    /// Answers with the body as JSON text only, no `structuredContent`,
    /// and declares no output schema (a tool that declares one must send
    /// `structuredContent`, and a second copy of a big body is bytes every
    /// call pays for): `read_doc`, whose answer is the size of the document
    /// several times over.
    pub(crate) fn text_only(mut self) -> ToolSpec {
        self.tool.output_schema = None;
        self.text_only = true;
        self
    }

    /// The MCP result of an outcome of this tool: the body as
    /// `structuredContent` and as JSON text, `isError` per the module rule.
    #[cfg(test)]
    pub(crate) fn to_call_result(&self, result: ToolResult) -> CallToolResult {
        self.answer(result.map(Body::Value))
    }

    /// The MCP result of `outcome`: the body as JSON text, and as
    /// `structuredContent` unless the tool answers in text only.
    pub(crate) fn answer(&self, outcome: Outcome) -> CallToolResult {
        let (body, mut is_error) = match outcome {
            // Moved, not cloned: read_doc's body of a large document is big.
            Ok(body) => (body, false),
            Err(e @ ToolError::User { .. }) if self.refusals == Refusals::AsResult => {
                (Body::Value(e.body()), false)
            }
            Err(e) => (Body::Value(e.body()), true),
        };
        if self.text_only {
            let text = match body {
                Body::Text(t) => t.json,
                Body::Value(v) => v.to_string(),
            };
            let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
            result.is_error = Some(is_error);
            return result;
        }
        let value = match body {
            Body::Value(v) => v,
            // Text this crate wrote; were it ever not JSON, the result is a
            // system error saying so rather than a wrong body.
            Body::Text(t) => serde_json::from_str(&t.json).unwrap_or_else(|e| {
                is_error = true;
                ToolError::system(format!("internal error: the answer is not JSON: {e}")).body()
            }),
        };
        let mut result = CallToolResult::success(vec![ContentBlock::text(value.to_string())]);
        result.structured_content = Some(value);
        result.is_error = Some(is_error);
        result
    }
}

/// Builds a [`ToolSpec`] from a typed handler; the input schema comes from `A`.
///
/// # Panics
///
/// When `A`'s schema is not an object schema: a programming error caught by
/// the registry's unit test, never by input.
pub(crate) fn tool<A, B>(
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
        text_only: false,
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
pub(crate) struct Registry {
    tools: BTreeMap<String, ToolSpec>,
    order: Vec<String>,
}

impl Registry {
    /// An empty registry.
    pub(crate) fn new() -> Registry {
        Registry::default()
    }

    /// Adds (or replaces) a tool.
    pub(crate) fn with(mut self, spec: ToolSpec) -> Registry {
        let name = spec.name().to_string();
        if self.tools.insert(name.clone(), spec).is_none() {
            self.order.push(name);
        }
        self
    }

    /// The tool called `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&ToolSpec> {
        self.tools.get(name)
    }

    /// Every tool, in registration order.
    pub(crate) fn tools(&self) -> Vec<Tool> {
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

    fn text(r: &CallToolResult) -> String {
        let block = serde_json::to_value(&r.content[0]).unwrap();
        block["text"].as_str().unwrap().to_string()
    }

    #[test]
    fn every_result_carries_its_body_as_json_text() {
        let registry = crate::tools::registry();
        let spec = registry.get("list_ids").unwrap();
        // A big body too: its text is the JSON, not a summary.
        let body = json!({"items": vec![json!("abcdefgh"); 1000]});
        let r = spec.to_call_result(Ok(body.clone()));
        assert_eq!(r.structured_content.as_ref(), Some(&body));
        assert_eq!(r.is_error, Some(false));
        assert_eq!(text(&r), body.to_string());
        let err = spec.to_call_result(Err(ToolError::system("gone")));
        assert_eq!(err.is_error, Some(true));
        let gone = json!({"ok": false, "error": "gone"});
        assert_eq!(err.structured_content, Some(gone.clone()));
        assert_eq!(text(&err), gone.to_string());
        // JSON text written by a tool that declares a schema is parsed into
        // its structuredContent; text that is not JSON is a system error.
        let written = spec.answer(Ok(Body::Text(JsonText::new(body.to_string()))));
        assert_eq!(written.structured_content.as_ref(), Some(&body));
        assert_eq!(text(&written), body.to_string());
        let broken = spec.answer(Ok(Body::Text(JsonText::new("{".into()))));
        assert_eq!(broken.is_error, Some(true));
        assert!(
            text(&broken).contains("the answer is not JSON"),
            "{}",
            text(&broken)
        );
    }

    #[test]
    fn a_text_only_tool_declares_no_schema_and_sends_its_text_once() {
        let spec = tool("t", "d", |_: &Context, _: crate::documents::FileArgs| {
            Ok(JsonText::new(r#"{"a":1}"#.into()))
        })
        .output(json!({"type": "object"}))
        .text_only();
        assert!(spec.tool.output_schema.is_none());
        let ok = spec.answer(Ok(Body::Text(JsonText::new(r#"{"a":[1,"x"]}"#.into()))));
        assert_eq!(ok.structured_content, None);
        assert_eq!(ok.is_error, Some(false));
        assert_eq!(text(&ok), r#"{"a":[1,"x"]}"#);
        let err = spec.answer(Err(ToolError::user("target_missing", "no such file")));
        assert_eq!(err.structured_content, None);
        assert_eq!(err.is_error, Some(true));
        let body: Value = serde_json::from_str(&text(&err)).unwrap();
        assert_eq!(body["code"], "target_missing");
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

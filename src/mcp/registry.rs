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
//! - `Ok(value)`: `value` JSON-encoded as the text content;
//! - `Err(ToolError::User { .. })`: `{ok: false, error, code}` as normal
//!   content (`isError` absent): the caller can branch on `code` (§B.7);
//! - `Err(ToolError::System(..))`: `{ok: false, error}` with `isError:
//!   true`: infrastructure faults, path escapes, book manifests.
//!
//! Arguments that do not match the args type are [`InvalidArgs`] naming the
//! offending field: a JSON-RPC `-32602` (invalid params), or an `isError`
//! result when the client negotiated 2025-11-25 or later (see
//! [`super::validation_is_a_tool_error`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use rmcp::model::Tool;
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

/// The arguments did not match the tool's input type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidArgs(pub String);

type Handler = dyn Fn(&Context, Value) -> Result<ToolResult, InvalidArgs> + Send + Sync;

/// One registered tool.
#[derive(Clone)]
pub struct ToolSpec {
    /// What `tools/list` shows.
    pub tool: Tool,
    handler: Arc<Handler>,
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
    pub fn call(&self, ctx: &Context, args: Value) -> Result<ToolResult, InvalidArgs> {
        (self.handler)(ctx, args)
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.tool.name
    }
}

/// Builds a [`ToolSpec`] from a typed handler; the input schema comes from `A`.
///
/// # Panics
///
/// When `A`'s schema is not an object schema: a programming error caught by
/// the registry's unit test, never by input.
pub fn tool<A>(
    name: &'static str,
    description: &'static str,
    f: fn(&Context, A) -> ToolResult,
) -> ToolSpec
where
    A: DeserializeOwned + JsonSchema + 'static,
{
    let schema = match rmcp::handler::server::common::schema_for_input::<A>() {
        Ok(s) => s,
        Err(e) => panic!("tool {name}: input schema is not an object: {e}"),
    };
    let handler = move |ctx: &Context, args: Value| {
        let args: A = serde_json::from_value(args)
            .map_err(|e| InvalidArgs(format!("invalid arguments for {name}: {e}")))?;
        Ok(f(ctx, args))
    };
    ToolSpec {
        tool: Tool::new(name, description, schema),
        handler: Arc::new(handler),
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

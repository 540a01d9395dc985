//! The server: [`Context`] (what every tool call gets), [`NomaServer`]
//! (rmcp's handler over the tool registry) and [`serve`] (stdin/stdout until
//! the client closes stdin).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rmcp::model::ErrorCode;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CustomRequest, CustomResult,
    Implementation, ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler};
use serde_json::Value;

use noma_git::cache::BlockCache;

use crate::paths::Workspace;
use crate::registry::{InvalidArgs, Registry, ToolError};
use crate::{tools, transport};

/// What every tool call gets: the workspace and its block cache.
#[derive(Debug)]
pub(crate) struct Context {
    /// The repository root paths are confined to.
    pub workspace: Workspace,
    /// The repository's block cache (`<root>/.noma/cache/`; none kept
    /// outside a repository).
    pub cache: BlockCache,
    /// The agent's signer (`--signing-key`): every record a tool writes
    /// is signed into the document's provenance sidecar.
    pub signer: Option<std::sync::Arc<noma_provenance::Signer>>,
    /// The incremental changed-document index of a running server (None:
    /// every changed-blocks query scans the work tree).
    pub watched: Option<noma_git::changes::watch::WatchedChanges>,
    /// Where the server's messages for people go (the binary prints them).
    pub notices: crate::Notices,
}

impl Context {
    /// Opens the context for the repository rooted at `root`; what the
    /// server has to tell people goes to `notices`.
    pub(crate) fn open(root: &Path, notices: crate::Notices) -> std::io::Result<Context> {
        let workspace = Workspace::new(root)?;
        let to_cache = notices.clone();
        // A directory that is no repository gets no `.noma/cache/` from a
        // session: its reads compute block tables afresh, and no tool that
        // writes documents keeps anything in the cache.
        let cache = if is_repository(workspace.root()) {
            BlockCache::open(workspace.root())
        } else {
            BlockCache::disabled()
        };
        let cache = cache.with_notice_sink(Box::new(move |msg| {
            to_cache.say(&format!("block cache {msg}"))
        }));
        Ok(Context {
            workspace,
            cache,
            signer: None,
            watched: None,
            notices,
        })
    }
}

/// Whether `root` is a repository whose block cache a session may create:
/// inside a git work tree, or holding a `.noma/` directory already.
fn is_repository(root: &Path) -> bool {
    root.join(".noma").is_dir() || noma_git::git::layout::Layout::discover(root).is_ok()
}

/// The MCP server: rmcp's [`ServerHandler`] over a [`Registry`].
#[derive(Clone)]
pub(crate) struct NomaServer {
    ctx: Arc<Context>,
    registry: Arc<Registry>,
    instructions: String,
}

impl NomaServer {
    /// A server with `registry`'s tools and `instructions` for `initialize`.
    pub(crate) fn new(ctx: Context, registry: Registry, instructions: String) -> NomaServer {
        NomaServer {
            ctx: Arc::new(ctx),
            registry: Arc::new(registry),
            instructions,
        }
    }

    /// Runs a tool by name on the blocking pool under the negotiated
    /// protocol `version` (`None`: a revision before 2025-11-25). From
    /// 2025-11-25 on (SEP-1303), arguments that do not match the tool's
    /// input schema are a tool execution error (`isError: true`, body
    /// `{ok: false, error}`) the model can read and correct, not a JSON-RPC
    /// error; an unknown tool stays `-32602` in every revision.
    pub(crate) async fn call_for(
        &self,
        name: &str,
        args: Value,
        version: Option<&ProtocolVersion>,
    ) -> Result<CallToolResult, McpError> {
        let Some(spec) = self.registry.get(name).cloned() else {
            return Err(McpError::invalid_params(
                format!("unknown tool {name:?}; tools/list names the available tools"),
                None,
            ));
        };
        let ctx = self.ctx.clone();
        let runner = spec.clone();
        let result = match tokio::task::spawn_blocking(move || runner.call(&ctx, args)).await {
            Ok(Ok(result)) => result,
            Ok(Err(InvalidArgs(msg))) if validation_is_a_tool_error(version) => {
                Err(ToolError::system(msg))
            }
            Ok(Err(InvalidArgs(msg))) => return Err(McpError::invalid_params(msg, None)),
            // A panicking tool is a bug; the session survives it.
            Err(e) => Err(ToolError::system(format!("internal error in {name}: {e}"))),
        };
        Ok(spec.answer(result))
    }
}

/// True when the negotiated revision answers input validation failures as
/// tool results (`isError: true`) rather than JSON-RPC `-32602`: 2025-11-25
/// and later (SEP-1303). Revision strings are dates, so they order as text.
pub(crate) fn validation_is_a_tool_error(version: Option<&ProtocolVersion>) -> bool {
    version.is_some_and(|v| *v >= ProtocolVersion::V_2025_11_25)
}

impl ServerHandler for NomaServer {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        let mut implementation = Implementation::new("noma", env!("CARGO_PKG_VERSION"));
        implementation.title = Some("noma — guard for agent-edited .noma documents".into());
        info.server_info = implementation;
        info.instructions = Some(self.instructions.clone());
        info
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        // The list is one page, so no cursor was ever handed out: any cursor
        // is unknown, which the pagination rules answer with -32602.
        if let Some(cursor) = request.and_then(|r| r.cursor) {
            return Err(McpError::invalid_params(
                format!(
                    "unknown cursor {cursor:?}: tools/list returns every tool on one page and \
                     hands out no cursor; call it without one"
                ),
                None,
            ));
        }
        Ok(ListToolsResult::with_all_items(self.registry.tools()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.registry.get(name).map(|s| s.tool.clone())
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        // rmcp reads a request as an untagged union whose last member takes
        // any method, so `tools/call` whose params do not parse lands here:
        // that is bad params, not an unknown method.
        let method = request.method;
        if STANDARD_REQUESTS.contains(&method.as_str()) {
            let msg = format!("Invalid params for {method}: missing or malformed");
            return Err(McpError::invalid_params(msg, None));
        }
        Err(McpError::new(ErrorCode::METHOD_NOT_FOUND, method, None))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = Value::Object(request.arguments.unwrap_or_default());
        let version = context.protocol_version();
        let result = self.call_for(&request.name, args, version.as_ref()).await?;
        Ok(result.into())
    }
}

/// Request methods rmcp reads into a typed request when their params parse.
const STANDARD_REQUESTS: &[&str] = &[
    "initialize",
    "ping",
    "tools/call",
    "tools/list",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "resources/templates/list",
    "completion/complete",
    "logging/setLevel",
];

/// The `instructions` sent with `initialize`: how to use the tools, plus a
/// note when the repository's hooks are not installed or the cache is cold.
pub(crate) fn instructions(root: &Path, cache: &BlockCache) -> String {
    let mut text = String::from(
        "noma guards .noma documents in this git repository. Paths are relative to the \
         repository root. Workflow: read_doc (block ids, lines, per-block `hash`) -> patch_block \
         with the block's hash as the op's `baseHash` (or patch_block_list for ops that must \
         apply together) -> validate_doc. Every patch is recorded in <file>.patches \
         (transcript_read); a refused op returns {ok:false, code} to fix and retry. A patch's \
         preconditions are checked in this order: `expected_sha` and `baseHash` against the \
         document on disk (sha_mismatch), then whether the document holds an edit its \
         transcript does not record (unrecorded_edit: nothing is written; agents cannot \
         override it; read_doc shows it in advance as `unrecorded_edit` with the command a \
         person runs, `noma record <file>`). An op's `content` is capped at 1000000 bytes. Do \
         not edit .noma files with plain file writes: the git hooks reject edits the transcript \
         does not explain.",
    );
    for note in notes(root, cache) {
        text.push_str("\nNote: ");
        text.push_str(&note);
    }
    text
}

fn notes(root: &Path, cache: &BlockCache) -> Vec<String> {
    let mut out = Vec::new();
    match noma_git::git::layout::Layout::discover(root) {
        Err(_) => out
            .push("this directory is not a git repository, so no noma hooks check commits.".into()),
        Ok(layout) => {
            let noma = noma_git::install::current_noma().unwrap_or_else(|_| PathBuf::from("noma"));
            match noma_git::install::status(&layout.hooks_dir, &noma) {
                Ok(hooks) => {
                    let missing: Vec<String> = hooks
                        .iter()
                        .filter(|h| matches!(h.label(), "not-installed" | "foreign"))
                        .map(|h| format!("{} ({})", h.hook, h.label()))
                        .collect();
                    if !missing.is_empty() {
                        out.push(format!(
                            "the noma git hooks are not installed here ({}): commits are not \
                             checked. Ask the user to run `noma init`.",
                            missing.join(", ")
                        ));
                    }
                }
                Err(e) => out.push(format!("cannot inspect the git hooks: {e}")),
            }
        }
    }
    let stats = cache.stats();
    if stats.backing != noma_git::cache::Backing::Disabled && stats.entries == 0 {
        out.push(
            "the block cache is cold; the first read_doc of a large document parses it in full."
                .into(),
        );
    }
    out
}

/// Options of [`serve`].
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The repository root.
    pub root: PathBuf,
    /// The signer of every record the tools write, if any.
    pub signer: Option<std::sync::Arc<noma_provenance::Signer>>,
    /// Where the server's messages for people go (`noma mcp`: stderr).
    pub notices: crate::Notices,
}

/// Why the server could not run.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Start-up I/O (root, runtime, threads).
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The MCP session could not start.
    #[error("MCP session: {0}")]
    Session(String),
}

/// Serves MCP on stdin/stdout until the client closes stdin.
pub fn serve(opts: &ServeOptions) -> Result<(), ServeError> {
    let mut ctx = Context::open(&opts.root, opts.notices.clone())?;
    ctx.signer = opts.signer.clone();
    // A long-running server keeps the changed documents current from a
    // file-system watcher; NOMA_MCP_WATCH=0 turns it off (every query then
    // scans, as the CLI does).
    if std::env::var_os("NOMA_MCP_WATCH").is_none_or(|v| v != "0") {
        ctx.watched = noma_git::git::repo::Repo::discover(ctx.workspace.root())
            .ok()
            .and_then(|r| noma_git::changes::watch::WatchedChanges::new(&r));
        if let Some(why) = ctx.watched.as_ref().and_then(|w| w.unusable()) {
            ctx.notices.say(&format!(
                "no file-system watcher ({why}); changed-blocks queries scan the work tree"
            ));
        }
    }
    let text = instructions(ctx.workspace.root(), &ctx.cache);
    let server = NomaServer::new(ctx, tools::registry(), text);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(4)
        .build()?;
    let transport = transport::spawn(
        std::io::BufReader::with_capacity(64 * 1024, std::io::stdin()),
        std::io::stdout(),
        opts.notices.clone(),
    )?;
    let outcome = runtime.block_on(async move {
        let running = rmcp::serve_server(server, transport)
            .await
            .map_err(|e| ServeError::Session(e.to_string()))?;
        running
            .waiting()
            .await
            .map_err(|e| ServeError::Session(e.to_string()))?;
        Ok::<(), ServeError>(())
    });
    // Dropping the runtime waits for tool calls still running on the
    // blocking pool: a document write in progress completes.
    drop(runtime);
    outcome
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;

    use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
    use rmcp::transport::Transport;
    use serde_json::json;

    /// Hands rmcp a fixed list of messages and drops what it sends.
    struct Scripted(VecDeque<ClientJsonRpcMessage>);

    impl Transport<RoleServer> for Scripted {
        type Error = std::io::Error;

        fn send(
            &mut self,
            _item: ServerJsonRpcMessage,
        ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
            std::future::ready(Ok(()))
        }

        fn receive(
            &mut self,
        ) -> impl std::future::Future<Output = Option<ClientJsonRpcMessage>> + Send {
            std::future::ready(self.0.pop_front())
        }

        async fn close(&mut self) -> Result<(), Self::Error> {
            Ok(())
        }
    }

    struct Bare;
    impl ServerHandler for Bare {}

    /// Why the transport drops a notification sent before `initialize`:
    /// rmcp ends the session on one. When this fails, rmcp no longer does,
    /// and that rule in `transport.rs` can go.
    #[test]
    fn rmcp_ends_the_session_on_a_notification_before_initialize() {
        let script = [
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                   "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "t", "version": "1"}}}),
        ];
        let script = script.map(|m| serde_json::from_value(m).unwrap());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let started = runtime.block_on(rmcp::serve_server(Bare, Scripted(script.into())));
        let err = started.err().expect("rmcp accepted the early notification");
        assert!(
            err.to_string().contains("expect initialized request"),
            "{err}"
        );
    }
}

//! `noma mcp`: the Annex B MCP-over-stdio binding, on the official Rust MCP
//! SDK (`rmcp`).
//!
//! - [`transport`]: newline-delimited JSON-RPC on stdin/stdout, with the
//!   parse-error (`-32700`) and invalid-params (`-32602`) answers rmcp's own
//!   stdio transport does not give, the before-`initialize` rule and
//!   2025-03-26 batches; stdout carries protocol lines only, every log line
//!   goes to stderr.
//! - [`registry`]: tools as typed handlers with derived input schemas,
//!   titles, hints and output schemas; outcomes become results with
//!   `structuredContent` and a text content sized for the client
//!   ([`registry::TextCopy`]: the full JSON text before 2025-06-18 or under
//!   `--full-text`, a short text from 2025-06-18 on).
//! - [`tools`]: the list of tools; they live in [`read_tools`],
//!   [`patch_tools`] (refusals worded by [`patch_refusals`]),
//!   [`transcript_tools`] and [`changes`], on [`documents`] (the document
//!   a tool names, resolved and read).
//! - [`op_schema`]: the patch-op schema the patch tools show, described.
//! - [`paths`]: workspace containment of every path argument.
//!
//! Tool arguments that do not match a tool's input schema are answered per
//! the negotiated revision: a JSON-RPC `-32602` before 2025-11-25, an
//! `isError: true` tool result from 2025-11-25 on (SEP-1303;
//! [`validation_is_a_tool_error`]). `tools/list` is one page: any cursor is
//! `-32602`.
//!
//! Tool calls run on tokio's blocking pool (parsing, SQLite and file I/O
//! block); writers of one document are serialised by the engine's
//! transcript lock. When stdin closes, calls already running finish (the
//! engine's write is atomic either way) before the process exits.

pub mod changes;
pub mod documents;
pub mod history_tool;
pub mod op_schema;
mod out_schema;
pub mod patch_refusals;
pub mod patch_tools;
pub mod paths;
pub mod read_tools;
pub mod registry;
pub mod tools;
pub mod transcript_tools;
pub mod transport;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler};
use serde_json::Value;

use noma_git::cache::BlockCache;
use paths::Workspace;
use registry::{InvalidArgs, Registry, ToolError};

/// What every tool call gets: the workspace and its block cache.
#[derive(Debug)]
pub struct Context {
    /// The repository root paths are confined to.
    pub workspace: Workspace,
    /// The repository's block cache (`<root>/.noma/cache/`).
    pub cache: BlockCache,
    /// The agent's signer (`--signing-key`): every record a tool writes
    /// is signed into the document's provenance sidecar.
    pub signer: Option<std::sync::Arc<noma_git::provenance::Signer>>,
    /// The incremental changed-document index of a running server (None:
    /// every changed-blocks query scans the work tree).
    pub watched: Option<noma_git::changes::watch::WatchedChanges>,
}

impl Context {
    /// Opens the context for the repository rooted at `root`.
    pub fn open(root: &Path) -> std::io::Result<Context> {
        let workspace = Workspace::new(root)?;
        // The server's log is its stderr (stdout is the protocol).
        let cache = BlockCache::open(workspace.root())
            .with_notice_sink(Box::new(|msg| eprintln!("noma mcp: block cache {msg}")));
        Ok(Context {
            workspace,
            cache,
            signer: None,
            watched: None,
        })
    }
}

/// The MCP server: rmcp's [`ServerHandler`] over a [`Registry`].
#[derive(Clone)]
pub struct NomaServer {
    ctx: Arc<Context>,
    registry: Arc<Registry>,
    instructions: String,
    full_text: bool,
}

impl NomaServer {
    /// A server with `registry`'s tools and `instructions` for `initialize`.
    pub fn new(ctx: Context, registry: Registry, instructions: String) -> NomaServer {
        NomaServer {
            ctx: Arc::new(ctx),
            registry: Arc::new(registry),
            instructions,
            full_text: false,
        }
    }

    /// Sends every result's full JSON text copy whatever the negotiated
    /// revision (`noma mcp --full-text`): for hosts and SDKs that read only
    /// the text content.
    pub fn with_full_text(mut self, full_text: bool) -> NomaServer {
        self.full_text = full_text;
        self
    }

    /// Runs a tool by name on the blocking pool, as a client that negotiated
    /// a revision before 2025-11-25 sees it: `Err` is a JSON-RPC `-32602`
    /// (unknown tool, arguments not matching the schema).
    pub async fn call(&self, name: &str, args: Value) -> Result<CallToolResult, McpError> {
        self.call_for(name, args, None).await
    }

    /// [`NomaServer::call`] under the negotiated protocol `version`. From
    /// 2025-11-25 on (SEP-1303), arguments that do not match the tool's
    /// input schema are a tool execution error (`isError: true`, body
    /// `{ok: false, error}`) the model can read and correct, not a JSON-RPC
    /// error; an unknown tool stays `-32602` in every revision. From
    /// 2025-06-18 on, a big body's text copy is a short summary
    /// ([`registry::TextCopy`]) unless the server sends full text.
    pub async fn call_for(
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
        let text = registry::TextCopy::for_session(version, self.full_text);
        Ok(spec.to_call_result_with(result, text))
    }
}

/// True when the negotiated revision answers input validation failures as
/// tool results (`isError: true`) rather than JSON-RPC `-32602`: 2025-11-25
/// and later (SEP-1303). Revision strings are dates, so they order as text.
pub fn validation_is_a_tool_error(version: Option<&ProtocolVersion>) -> bool {
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

/// The `instructions` sent with `initialize`: how to use the tools, plus a
/// note when the repository's hooks are not installed or the cache is cold.
pub fn instructions(root: &Path, cache: &BlockCache) -> String {
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
    if cache.stats().entries == 0 {
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
    pub signer: Option<std::sync::Arc<noma_git::provenance::Signer>>,
    /// Send every result's full JSON text copy beside `structuredContent`,
    /// whatever revision the client negotiated.
    pub full_text: bool,
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

/// How long to wait for queued output after the session ends.
const DRAIN: Duration = Duration::from_secs(2);

/// Serves MCP on stdin/stdout until the client closes stdin.
pub fn serve(opts: &ServeOptions) -> Result<(), ServeError> {
    let mut ctx = Context::open(&opts.root)?;
    ctx.signer = opts.signer.clone();
    // A long-running server keeps the changed documents current from a
    // file-system watcher; NOMA_MCP_WATCH=0 turns it off (every query then
    // scans, as the CLI does).
    if std::env::var_os("NOMA_MCP_WATCH").is_none_or(|v| v != "0") {
        ctx.watched = noma_git::git::repo::Repo::discover(ctx.workspace.root())
            .ok()
            .and_then(|r| noma_git::changes::watch::WatchedChanges::new(&r));
        if let Some(why) = ctx.watched.as_ref().and_then(|w| w.unusable()) {
            eprintln!("noma mcp: no file-system watcher ({why}); changed-blocks queries scan the work tree");
        }
    }
    let text = instructions(ctx.workspace.root(), &ctx.cache);
    let server = NomaServer::new(ctx, tools::registry(), text).with_full_text(opts.full_text);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(4)
        .build()?;
    let stdio = transport::spawn(
        std::io::BufReader::with_capacity(64 * 1024, std::io::stdin()),
        std::io::stdout(),
    )?;
    let writer = stdio.writer;
    let transport = stdio.transport;
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
    // Let the writer flush what is queued; it ends once the reader is done.
    let deadline = Instant::now() + DRAIN;
    while !writer.is_finished() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    outcome
}

//! `noma mcp`: the Annex B MCP-over-stdio binding, on the official Rust MCP
//! SDK (`rmcp`).
//!
//! The crate offers [`serve`] with its [`ServeOptions`], [`Notices`] and
//! [`ServeError`], and [`tool_names`]; everything below is private.
//!
//! - `server`: the server and the `Context` every tool call gets.
//! - `transport`: newline-delimited JSON-RPC on stdin/stdout; bad lines are
//!   dropped without a reply as rmcp does, and named on stderr; stdout
//!   carries protocol lines only, every log line goes to stderr.
//! - `registry`: tools as typed handlers with derived input schemas,
//!   titles, hints and output schemas; outcomes become results with
//!   `structuredContent` and the same body as JSON text, or, for a tool
//!   answering in text only (`read_doc`), that JSON text once.
//! - `tools`: the list of tools; they live in `read_tools`,
//!   `patch_tools` (refusals worded by `patch_refusals`),
//!   `transcript_tools` and `changes`, on `documents` (the document
//!   a tool names, resolved and read).
//! - `op_schema`: the patch-op schema the patch tools show, described.
//! - `paths`: workspace containment of every path argument.
//!
//! Tool arguments that do not match a tool's input schema are answered per
//! the negotiated revision: a JSON-RPC `-32602` before 2025-11-25, an
//! `isError: true` tool result from 2025-11-25 on (SEP-1303;
//! `validation_is_a_tool_error`). `tools/list` is one page: any cursor is
//! `-32602`.
//!
//! Tool calls run on tokio's blocking pool (parsing, SQLite and file I/O
//! block); writers of one document are serialised by the engine's
//! transcript lock. When stdin closes, calls already running finish (the
//! engine's write is atomic either way) before the process exits.

mod changes;
mod documents;
mod history_tool;
mod inbound;
mod notices;
mod op_schema;
mod out_schema;
mod patch_refusals;
mod patch_tools;
mod paths;
mod read_tools;
mod registry;
mod server;
mod tools;
mod transcript_tools;
mod transport;

pub use notices::Notices;
use server::Context;
pub use server::{serve, ServeError, ServeOptions};

/// The names of the tools the server lists, in order (the checklist of
/// what a new tool changes reads them).
pub fn tool_names() -> Vec<String> {
    tools::registry()
        .tools()
        .iter()
        .map(|t| t.name.to_string())
        .collect()
}

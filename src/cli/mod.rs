//! The command line: argument parsing and dispatch only. Each subcommand
//! lives in its own file and calls into the library.
//!
//! Exit codes: 0 success, 1 the check failed (errors found, patch rejected,
//! replay diverged, fixture failed), 2 the command could not run (bad usage,
//! unreadable input).

use clap::{Parser, Subcommand};

pub use output::{emit, noma_path, read_doc, Format};

use crate::report::output::{Exit, Output};

pub mod approve;
pub mod blame;
pub mod blocks;
pub mod cache;
pub mod changed;
pub mod check;
mod check_files;
pub mod completions;
pub mod hook;
pub mod hooks;
pub mod ids;
pub mod init;
pub mod log;
pub mod lsp;
pub mod man;
pub mod mcp;
pub mod merge_driver;
mod output;
pub mod parse_cmd;
pub mod patch;
pub mod provenance;
pub mod reconcile;
pub mod record;
pub mod render;
pub mod repair;
pub mod replay;
pub mod rm;
pub mod schema;
pub mod verify;
pub mod writer;

/// Guard and bookkeeper for agent-edited .noma documents.
#[derive(Debug, Parser)]
#[command(name = "noma", version, about, max_term_width = 100)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Validate documents; exit 1 when any error is found.
    Check(check::Args),
    /// Print the id registry ({ids, aliases, records}) as JSON.
    Ids(ids::Args),
    /// Print the AST as JSON with spans.
    Parse(parse_cmd::Args),
    /// Render a document back to .noma source or to JSON.
    Render(render::Args),
    /// Run the Annex C conformance harness over a fixture directory.
    Verify(verify::Args),
    /// Apply patch ops and append transcript records.
    Patch(patch::Args),
    /// Remove a document with a signed final record; its transcript stays as the tombstone.
    Rm(rm::Args),
    /// Replay a transcript and check it reproduces the document (read-only).
    Replay(replay::Args),
    /// Finish or undo an interrupted write; move a torn transcript tail aside.
    Repair(repair::Args),
    /// List addressable blocks with their spans and baseHash values.
    Blocks(blocks::Args),
    /// The records that changed a document's blocks, newest first (who, why, signer, commit).
    Log(log::Args),
    /// Every block of a document with the newest record that changed it.
    Blame(blame::Args),
    /// Print JSON Schemas of the wire shapes.
    Schema(schema::Args),
    /// Set up a repository: policy file, cache, hooks (and MCP registration).
    Init(init::Args),
    /// Install, remove or inspect the git hooks.
    Hooks(hooks::Args),
    /// Run a git hook's checks (what the installed hooks call).
    Hook(hook::Args),
    /// Record a hand edit as block-level ops with actor kind "human".
    Record(record::Args),
    /// Git merge driver for .noma documents and transcripts (%O %A %B %L %P %X %Y).
    MergeDriver(merge_driver::Args),
    /// CI check of a branch's documents against its base; --write rebases transcripts.
    Reconcile(reconcile::Args),
    /// Inspect or clear the per-block hash cache.
    Cache(cache::Args),
    /// Blocks changed since the merge base with a base branch.
    Changed(changed::Args),
    /// Serve the Annex B tools to agents over MCP (stdio).
    Mcp(mcp::Args),
    /// Serve the language server to editors (stdio): diagnostics, symbols, hover, ids.
    Lsp(lsp::Args),
    /// Approve an agent's records with a signed human approval.
    Approve(approve::Args),
    /// Signature payloads for ssh-keygen, and importing its signatures.
    Provenance(provenance::ProvenanceArgs),
    /// Print shell completions (bash, elvish, fish, powershell, zsh).
    Completions(completions::Args),
    /// Print a man page (roff, section 1), or write them all with --dir.
    Man(man::Args),
}

/// Runs the CLI with the process arguments; returns the exit code. Every
/// command returns its [`Output`], printed once by [`emit`].
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // clap words and prints its own help and usage errors.
            let _ = e.print();
            let exit = if e.use_stderr() {
                Exit::NotRun
            } else {
                Exit::Passed
            };
            return emit(Output::ending(exit));
        }
    };
    emit(match cli.command {
        Command::Check(a) => check::run(a),
        Command::Ids(a) => ids::run(a),
        Command::Parse(a) => parse_cmd::run(a),
        Command::Render(a) => render::run(a),
        Command::Verify(a) => verify::run(a),
        Command::Patch(a) => patch::run(a),
        Command::Rm(a) => rm::run(a),
        Command::Replay(a) => replay::run(a),
        Command::Repair(a) => repair::run(a),
        Command::Blocks(a) => blocks::run(a),
        Command::Log(a) => log::run(a),
        Command::Blame(a) => blame::run(a),
        Command::Schema(a) => schema::run(a),
        Command::Init(a) => init::run(a),
        Command::Hooks(a) => hooks::run(a),
        Command::Hook(a) => hook::run(a),
        Command::Record(a) => record::run(a),
        Command::Cache(a) => cache::run(a),
        Command::Changed(a) => changed::run(a),
        Command::Mcp(a) => mcp::run(a),
        Command::Lsp(a) => lsp::run(a),
        Command::Completions(a) => completions::run(a),
        Command::Man(a) => man::run(a),
        Command::MergeDriver(a) => merge_driver::run(a),
        Command::Reconcile(a) => reconcile::run(a),
        Command::Approve(a) => approve::run(a),
        Command::Provenance(a) => provenance::provenance(a),
    })
}

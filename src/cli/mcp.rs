//! `noma mcp`: serve the Annex B tools over MCP on stdin/stdout.
//!
//! stdout carries JSON-RPC lines only; every message for people goes to
//! stderr. Exit codes: 0 the client closed the session, 2 could not start
//! (not in a git repository, bad `--root`).

use std::path::PathBuf;

use noma_mcp::ServeOptions;

use super::output::note;
use crate::report::output::{Exit, Output};

/// Arguments of `noma mcp`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Register it with an MCP client through .mcp.json (`noma init` writes one): \
{\"mcpServers\": {\"noma\": {\"command\": \"noma\", \"args\": [\"mcp\"]}}}"
)]
pub struct Args {
    /// Serve this directory instead of the git repository containing the
    /// current directory. Tool paths are confined to it.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Sign every record the tools write with this Ed25519 OpenSSH
    /// private key (an agent runtime's own key), into <doc>.provenance.
    #[arg(long, value_name = "FILE")]
    pub signing_key: Option<PathBuf>,
    /// Deprecated, no effect: every result's text is its full JSON now.
    /// Still accepted so that existing client configurations start.
    #[arg(long, hide = true)]
    pub full_text: bool,
}

/// Runs `noma mcp`.
pub fn run(args: Args) -> Output {
    // A client that goes away must not kill us with SIGPIPE halfway through
    // a call: a failed write ends the session cleanly instead.
    #[cfg(unix)]
    // SAFETY: changes only the disposition of SIGPIPE, before any thread
    // of ours is started.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    let not_run = |why: String| Output::error(format!("noma mcp: {why}"), Exit::NotRun);
    let root = match args.root {
        Some(r) => r,
        None => match noma_git::git::layout::Layout::from_env() {
            Ok(l) => match l.work_tree {
                Some(w) => w,
                None => {
                    return not_run(
                        "a bare repository has no work tree to serve; use --root".into(),
                    )
                }
            },
            Err(e) => {
                return not_run(format!(
                    "{e}; run it inside a git repository or pass --root DIR"
                ))
            }
        },
    };
    if !root.is_dir() {
        return not_run(format!("{}: not a directory", root.display()));
    }
    let signer = match &args.signing_key {
        None => None,
        Some(key) => match noma_git::provenance::writer::signer_in(Some(&root), Some(key)) {
            Ok(s) => s.map(std::sync::Arc::new),
            Err(e) => return not_run(e.to_string()),
        },
    };
    // Said before serving: the session runs until the client goes.
    if let Some(s) = &signer {
        note(format!("noma mcp: signing records as {}", s.principal));
    }
    if args.full_text {
        note(
            "noma mcp: --full-text is deprecated and has no effect: every result's text is its \
             full JSON",
        );
    }
    note(format!("noma mcp: serving {} on stdio", root.display()));
    match noma_mcp::serve(&ServeOptions {
        root,
        signer,
        notices: noma_mcp::Notices::new(|m| note(format!("noma mcp: {m}"))),
    }) {
        Ok(()) => Output::default(),
        Err(e) => not_run(e.to_string()),
    }
}

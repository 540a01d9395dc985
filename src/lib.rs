//! `noma` — the guard and bookkeeper for agent-edited `.noma` documents.
//!
//! Data flows one way: bytes → [`doc::Document`] → (validate | patch | hash)
//! → records. The shells read bytes from files, git or MCP, call the engine
//! and write what it returns; the engine never imports a shell (checked by
//! `tests/it/layering.rs`, which also keeps `git2` inside [`git`]).
//!
//! **The engine**
//! - [`doc`]: lossless parser with exact spans, ids and aliases, hashes,
//!   renderers.
//! - [`validate`]: every §4.4 rule of the Noma Agent Protocol v1.0.
//! - [`patch`]: the 25 source-preserving patch ops, and the one extension
//!   op `noma record` writes.
//! - [`transcript`]: records, the hash chain, replay.
//! - [`engine`]: a patch request end to end — plan, records, the durable
//!   write protocol, recovery.
//! - leaves both sides use: [`diag`] (diagnostics), [`fsio`] (bounded
//!   reads, atomic writes, locks, intent markers), [`suggest`] ("did you
//!   mean" near misses), [`synth`] (generated documents for benches and
//!   tests).
//!
//! **The shells**
//! - [`git`]: repository plumbing (the only module that names `git2`).
//! - [`cache`]: the content-addressed SQLite cache of block tables.
//! - [`config`]: the repository policy (`.noma/config.yml`).
//! - [`staged`]: what the hooks check — staged documents and transcripts.
//! - [`record`]: `noma record`, hand edits turned into human records.
//! - [`install`]: installing hooks, the merge driver and line-ending rules.
//! - [`changes`]: blocks changed since a base branch (`noma changed`).
//! - [`merge`]: the merge driver, the succession rule, `noma reconcile`.
//! - [`provenance`]: signed records and human approvals beside the
//!   transcript (SSHSIG, RFC 8785 payloads, allowed signers).
//! - [`mcp`]: the MCP server over stdio.
//! - [`verify`]: the Annex C conformance harness (`noma verify`).
//! - [`cli`]: argument parsing and printing for every command.

// The engine.
pub mod diag;
pub mod doc;
pub mod engine;
pub mod fsio;
pub mod patch;
pub mod suggest;
pub mod synth;
pub mod transcript;
pub mod validate;

// The shells.
pub mod cache;
pub mod changes;
pub mod cli;
pub mod config;
pub mod git;
pub mod install;
pub mod mcp;
pub mod merge;
pub mod provenance;
pub mod record;
pub mod staged;
pub mod verify;

#[cfg(test)]
mod testutil;

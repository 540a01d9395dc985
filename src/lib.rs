//! `noma` — the guard and bookkeeper for agent-edited `.noma` documents.
//!
//! Data flows one way: bytes → [`doc::Document`] → (validate | patch | hash)
//! → records. Git, MCP and the CLI are thin shells over this library.
//!
//! - [`doc`]: lossless parser with exact spans, ids and aliases, renderers.
//! - [`validate`]: every §4.4 rule of the Noma Agent Protocol v1.0.
//! - [`patch`]: the 25 source-preserving patch ops.
//! - [`verify`]: the Annex C conformance harness (`noma verify`).

pub mod cache;
pub mod changes;
pub mod cli;
pub mod config;
pub mod diag;
pub mod doc;
pub mod engine;
pub mod fsio;
pub mod git;
pub mod guard;
pub mod hooks;
pub mod mcp;
pub mod merge;
pub mod patch;
pub mod synth;
#[cfg(test)]
mod testutil;
pub mod transcript;
pub mod validate;
pub mod verify;

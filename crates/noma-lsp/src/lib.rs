//! `noma-lsp` — the Noma language server over stdio.
//!
//! A thin layer over `noma-core` (as taplo and rust-analyzer are over
//! theirs), on `lsp-server` and `lsp-types`: synchronous, like the core.
//! Diagnostics come from the same validator and options as `noma check`,
//! so the editor and the hook agree; symbols, hover (with the block's
//! `baseHash`), definition, references and completion work on ids,
//! `[[wikilinks]]` and reference attributes (`for=`, `target=`, …). With
//! a [`Guard`] (the binary's, over `noma record`), a document with a
//! transcript also shows the hook's verdict while typing: blocks edited
//! outside the transcript are `unrecorded-edit`, with a "Record this edit"
//! code action.
//!
//! The library never prints: stdout is the protocol, and what a person
//! may want to know (a malformed message skipped, an analysis made) is an
//! [`Event`] for the caller to word. [`serve_stdio`] returns when the
//! client has shut the session down; no message the client sends ends it
//! earlier (see the `transport` module).

mod analysis;
mod contain;
mod features;
mod guard;
mod lines;
mod server;
mod transport;

pub use analysis::Analysis;
pub use guard::{Guard, GuardError, RecordProblem};
pub use server::{serve, serve_stdio, Error, Event, Settings, TEXT_REQUEST};

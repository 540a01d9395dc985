//! `noma-core` — the Noma engine over bytes.
//!
//! Data flows one way: bytes → [`doc::Document`] → (validate | patch |
//! hash) → records. This crate holds that flow and nothing around it: no
//! file system, no git, no database, no async runtime, so an editor
//! plug-in, a language server or a web build can use the parser, the
//! validator and the patch engine alone. Reading and writing files is
//! `noma-store`'s job; git is `noma-git`'s.
//!
//! - [`doc`]: lossless parser with exact spans, ids and aliases, block
//!   hashes, renderers.
//! - [`validate`]: every §4.4 rule of the Noma Agent Protocol v1.0.
//! - [`patch`]: the 25 source-preserving patch ops, and the one extension
//!   op `noma record` writes.
//! - [`transcript`]: records, the hash chain, replay.
//! - [`diag`] (diagnostics), [`suggest`] ("did you mean"), [`synth`]
//!   (generated documents for benches and tests).
//!
//! ```
//! use noma_core::{doc, patch, validate};
//!
//! let src = "# Notes\n\n::note{id=\"n1\"}\nFirst draft.\n::\n";
//! let document = doc::parse(src);
//! assert!(document.find("n1").is_some());
//!
//! // Validate: a clean document has no errors.
//! let diags = validate::validate(&document, &validate::Options::default());
//! assert!(diags.iter().all(|d| d.severity != noma_core::diag::Severity::Error));
//! ```

pub mod diag;
pub mod doc;
pub mod patch;
pub mod suggest;
pub mod synth;
pub mod transcript;
pub mod validate;

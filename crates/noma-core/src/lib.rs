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
//! - [`plan`]: a patch request planned in memory — the policy checks,
//!   one record per attempted op, the new text.
//! - [`transcript`]: records, the hash chain, replay.
//! - [`diag`] (diagnostics), [`suggest`] ("did you mean"), [`display`]
//!   (untrusted text made safe for a terminal).
//!
//! Parse, validate with exact ranges, patch with edits, hash a block — all
//! on strings, so the same code runs in an editor or a web page (build
//! without the default `std-clock` feature and supply record ids and
//! timestamps through [`transcript::stamp`]):
//!
//! ```
//! use noma_core::diag::Severity;
//! use noma_core::doc::{self, hash::block_hashes, LineIndex};
//! use noma_core::{patch, validate};
//! use serde_json::json;
//!
//! let src = "# Notes\n\n::note{id=\"n1\"}\nFirst draft, see [[n2]].\n::\n";
//! let document = doc::parse(src);
//!
//! // Nodes carry line spans; a line table turns them into byte ranges
//! // (terminator excluded) and line/columns (UTF-8 bytes, or UTF-16).
//! let index = LineIndex::new(src);
//! let note = document.find("n1").unwrap();
//! let bytes = note.byte_range(&index).unwrap();
//! assert_eq!(&src[bytes], "::note{id=\"n1\"}\nFirst draft, see [[n2]].\n::");
//!
//! // Validate; diagnostics get the range of the token they are about.
//! let diags = validate::validate_with_ranges(src, &document, &validate::Options::default());
//! let broken = diags.iter().find(|d| d.code == "broken-reference").unwrap();
//! assert_eq!(broken.severity, Severity::Error);
//! let range = broken.range.unwrap();
//! assert_eq!(&src[range.bytes()], "n2");
//! assert_eq!((range.start.line, range.start.column), (4, 20));
//!
//! // Patch with typed ops; the result carries the edits it made.
//! let op = json!({"op": "replace_body", "id": "n1", "content": "Done."});
//! assert_eq!(patch::Op::parse(&op).unwrap().target(), Some("n1"));
//! let patched = patch::apply_ops_with_edits(src, &[op]).unwrap();
//! assert_eq!(patched.edits.len(), 1);
//! assert_eq!(&src[patched.edits[0].range.clone()], "First draft, see [[n2]]");
//! assert_eq!(patched.edits[0].new_text, "Done");
//! assert_eq!(
//!     patch::apply_text_edits(src, &patched.edits).as_deref(),
//!     Some(patched.text.as_str())
//! );
//!
//! // Hash a block: the `baseHash` an agent sends with its next op.
//! let after = doc::parse(&patched.text);
//! let hashes = block_hashes(&patched.text, &after);
//! let n1 = hashes.iter().find(|b| b.id == "n1").unwrap();
//! assert_eq!(n1.lines, [3, 5]);
//! assert_eq!(n1.sha256.len(), 64);
//! ```

pub mod diag;
pub mod display;
pub mod doc;
pub mod patch;
pub mod plan;
pub mod suggest;
pub mod transcript;
pub mod validate;

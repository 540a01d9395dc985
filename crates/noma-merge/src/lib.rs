//! `noma-merge` — merging `.noma` documents and transcripts over bytes.
//!
//! What the merge driver, `noma reconcile`, `noma record` and `noma
//! changed` compute without a repository: the block-level three-way merge
//! ([`blocks`]), the transcript reconciliation ([`transcript`]) with its
//! conflict rule ([`clashes`]) and op identity across copies
//! ([`succession`]), transcripts two branches were joined into made linear
//! ([`unjoin`]), the block diff between two versions ([`diff`]) and a hand
//! edit turned into ops ([`ops`]). Bytes in, bytes out: no git, no
//! database, no async; `noma-git` finds the versions in history and
//! writes the results.

pub mod blocks;
pub mod clashes;
pub mod diff;
mod narrow;
pub mod ops;
pub mod succession;
#[cfg(any(test, feature = "test-support"))]
pub mod test_support;
pub mod transcript;
pub mod unjoin;

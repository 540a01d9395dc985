//! `noma-merge` — merging `.noma` documents and transcripts over bytes.
//!
//! What the merge driver, `noma reconcile`, `noma record` and `noma
//! changed` compute without a repository: the block-level three-way merge
//! ([`blocks`]), the transcript reconciliation ([`transcript`]) with its
//! conflict rule, which ops' touches of a block overlap ([`overlap`]), and
//! op identity across copies with the rule for when one transcript
//! succeeds another ([`lineage`]); transcripts two branches' records were
//! joined into, made linear ([`joined`]); the block diff between two
//! versions ([`diff`]); and a hand edit turned into ops ([`hand_edit`]).
//! Bytes in, bytes out: no git, no database, no async (checked by
//! `tests/it/architecture.rs`). `noma-git` finds the versions in a
//! repository's history and hands them over as lookups by sha256.

pub mod blocks;
pub mod diff;
pub mod hand_edit;
pub mod joined;
pub mod lineage;
mod narrow;
/// Which ops' touches of a block overlap: used by [`transcript`] only.
mod overlap;
#[cfg(any(test, feature = "test-support"))]
pub mod test_support;
pub mod transcript;

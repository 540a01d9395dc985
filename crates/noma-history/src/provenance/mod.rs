//! Provenance where a repository is needed: the work tree's and a
//! branch's signature checks ([`check`]), `noma approve` ([`approve`]),
//! the writers' signing step ([`writer`]), the allowed-signers file as
//! found ([`signers_check`]), records older than the policy from git's
//! history ([`adoption`]) and the summary `noma replay --signatures`
//! prints ([`report`]), and the work tree's statuses a chunk at a time
//! for a long history ([`stream`]). The signature format, payloads, allowed signers,
//! sidecar and verification are `noma_provenance`'s.

pub mod adoption;
pub mod approve;
pub mod check;
mod error;
pub mod report;
pub mod signers_check;
pub mod stream;
pub mod writer;

pub use error::Error;

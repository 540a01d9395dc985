//! `noma-store` — the patch engine's durable side.
//!
//! [`noma_core`] turns bytes into documents and patch requests into new
//! bytes and records; this crate puts them on disk so that a kill at any
//! instant leaves either the old state or the new one: bounded reads,
//! advisory locks, atomic writes, intent markers and recovery
//! ([`fsio`]), a patch request end to end ([`engine`]), and where a
//! command line's op-list comes from ([`op_list`]).

pub mod book;
pub mod engine;
pub mod fsio;
pub mod op_list;
pub mod uri;

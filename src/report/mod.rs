//! Wording shared by several commands: what a command says and how it
//! ends ([`output`]), and the changed blocks as `noma changed` and
//! `noma approve` list them ([`changes`]), an allowed-signers file's
//! check ([`signers`]). The libraries return data; the
//! binary words it (decision `wording-in-the-binary`).

pub mod changes;
pub mod output;
pub mod signers;

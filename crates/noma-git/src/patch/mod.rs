//! One patch request as a writer shell makes it: the writer's context
//! gathered from the repository in one call ([`context()`]), from which
//! the shell builds the engine's options and calls the engine itself (the
//! binary words the outcome, decision `wording-in-the-binary`).

pub mod context;

pub use context::{context, Signing, WorkTree, Writer, WriterContext};
pub use noma_provenance::SignerError;

//! One patch request as a writer shell runs it: the engine options every
//! shell builds the same way ([`options`]).

pub mod options;

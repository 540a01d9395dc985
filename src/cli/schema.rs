//! `noma schema`: JSON Schemas of the wire shapes.

use noma_core::transcript::schema;

use crate::report::output::Output;

/// Which schema to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Which {
    /// One patch op (any of the 25).
    PatchOp,
    /// One transcript record (protocol_version 1.0).
    Transcript,
    /// A capability descriptor sidecar (Annex A).
    Capability,
    /// The output of `noma log --format json`.
    Log,
    /// The output of `noma blame --format json`.
    Blame,
}

/// Arguments of `noma schema`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The shape.
    #[arg(value_enum)]
    pub which: Which,
}

/// Runs `noma schema`.
pub fn run(args: Args) -> Output {
    let v = match args.which {
        Which::PatchOp => schema::patch_op(),
        Which::Transcript => schema::transcript(),
        Which::Capability => schema::capability(),
        Which::Log => noma_git::history::schema::log(),
        Which::Blame => noma_git::history::schema::blame(),
    };
    let mut c = Output::default();
    c.json(v);
    c
}

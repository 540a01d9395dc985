//! `noma provenance payload|import`: signatures made outside noma, over
//! [`noma_git::provenance::external`].

use std::path::PathBuf;

use noma_git::provenance::external;

/// `noma provenance`: the signed bytes, for tools outside noma.
#[derive(Debug, clap::Subcommand)]
pub enum ProvenanceCmd {
    /// Print the exact bytes a record's signature covers (RFC 8785 JSON),
    /// for `ssh-keygen -Y sign -n noma` / `-Y verify`.
    Payload {
        /// The .noma document.
        file: PathBuf,
        /// The record.
        #[arg(long, value_name = "ID")]
        op_id: String,
        /// The principal signing (bound in the payload).
        #[arg(long, value_name = "PRINCIPAL")]
        signer: String,
    },
    /// Add a signature made elsewhere (e.g. `ssh-keygen -Y sign -n noma`
    /// with a key held by ssh-agent) to the sidecar, after checking it
    /// verifies over the record's payload.
    Import {
        /// The .noma document.
        file: PathBuf,
        /// The record.
        #[arg(long, value_name = "ID")]
        op_id: String,
        /// The principal the signature is for.
        #[arg(long, value_name = "PRINCIPAL")]
        signer: String,
        /// The armored signature file (`-----BEGIN SSH SIGNATURE-----`).
        #[arg(long, value_name = "FILE")]
        sig: PathBuf,
    },
}

/// Arguments of `noma provenance`.
#[derive(Debug, clap::Args)]
pub struct ProvenanceArgs {
    #[command(subcommand)]
    cmd: ProvenanceCmd,
}

/// Runs `noma provenance`.
pub fn provenance(args: ProvenanceArgs) -> i32 {
    let result = match &args.cmd {
        ProvenanceCmd::Payload {
            file,
            op_id,
            signer,
        } => external::payload(file, op_id, signer).and_then(|bytes| {
            use std::io::Write;
            std::io::stdout()
                .write_all(&bytes)
                .map_err(|e| e.to_string())
        }),
        ProvenanceCmd::Import {
            file,
            op_id,
            signer,
            sig,
        } => external::import(file, op_id, signer, sig).map(|side| {
            println!("{}: signature of {op_id} by {signer} added", side.display());
        }),
    };
    match result {
        Ok(()) => super::EXIT_OK,
        Err(e) => {
            eprintln!("noma provenance: {e}");
            super::EXIT_USAGE
        }
    }
}

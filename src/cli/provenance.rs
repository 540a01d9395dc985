//! `noma provenance payload|import|check-signers`: signatures made
//! outside noma, over [`noma_provenance::outside_signatures`], and the
//! allowed-signers file as ssh-keygen reads it
//! ([`noma_git::provenance::signers_check`]).

use std::path::PathBuf;

use noma_git::provenance::signers_check;
use noma_provenance::{outside_signatures, ALLOWED_SIGNERS_PATH};

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
    /// Read .noma/allowed_signers as `ssh-keygen -Y verify` reads it and
    /// name what its owner should know: lines skipped (and why), times
    /// without a zone, agent keys also listed for someone else. Exit 1
    /// when there is any warning.
    CheckSigners {
        /// The file (default: the work tree's .noma/allowed_signers).
        #[arg(long, value_name = "FILE")]
        file: Option<PathBuf>,
        /// Then answer queries read from stdin, one per line,
        /// `PRINCIPAL<TAB>TIME<TAB>PUBLIC KEY` (TIME as `ssh-keygen
        /// -Overify-time=` takes it): `allowed` or `refused` per line, as
        /// `ssh-keygen -Y verify -n noma` would decide.
        #[arg(long)]
        verdicts: bool,
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
    if let ProvenanceCmd::CheckSigners { file, verdicts } = &args.cmd {
        return check_signers(file.as_deref(), *verdicts);
    }
    let result = match &args.cmd {
        ProvenanceCmd::Payload {
            file,
            op_id,
            signer,
        } => (outside_signatures::payload(file, op_id, signer).map_err(|e| e.to_string()))
            .and_then(|bytes| {
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
        } => outside_signatures::import(file, op_id, signer, sig)
            .map(|side| {
                println!("{}: signature of {op_id} by {signer} added", side.display());
            })
            .map_err(|e| e.to_string()),
        ProvenanceCmd::CheckSigners { .. } => unreachable!("handled above"),
    };
    match result {
        Ok(()) => super::EXIT_OK,
        Err(e) => {
            eprintln!("noma provenance: {e}");
            super::EXIT_USAGE
        }
    }
}

/// `noma provenance check-signers`: the warnings, then the verdicts.
fn check_signers(file: Option<&std::path::Path>, verdicts: bool) -> i32 {
    use std::io::BufRead;
    let check = match signers_check::load(file, std::path::Path::new(".")) {
        Ok(Some(c)) => c,
        Ok(None) => {
            println!("allowed signers: none ({ALLOWED_SIGNERS_PATH} does not exist)");
            return super::EXIT_OK;
        }
        Err(e) => {
            eprintln!("noma provenance check-signers: {e}");
            return super::EXIT_USAGE;
        }
    };
    print!("{}", crate::report::signers::signers_check_text(&check));
    if verdicts {
        for line in std::io::stdin().lock().lines() {
            let verdict = line
                .map_err(|e| e.to_string())
                .and_then(|q| check.verdict(&q).map_err(|e| e.to_string()));
            match verdict {
                Ok(true) => println!("allowed"),
                Ok(false) => println!("refused"),
                Err(e) => {
                    eprintln!("noma provenance check-signers: {e}");
                    return super::EXIT_USAGE;
                }
            }
        }
    }
    if check.warnings.is_empty() {
        super::EXIT_OK
    } else {
        1
    }
}

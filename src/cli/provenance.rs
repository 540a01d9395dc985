//! `noma provenance payload|import|check-signers`: signatures made
//! outside noma, over [`noma_provenance::outside_signatures`], and the
//! allowed-signers file as ssh-keygen reads it
//! ([`noma_git::provenance::signers_check`]).

use std::path::PathBuf;

use noma_git::provenance::signers_check;
use noma_provenance::{outside_signatures, ALLOWED_SIGNERS_PATH};

use crate::report::output::{Exit, Output};

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
pub fn provenance(args: ProvenanceArgs) -> Output {
    let result = match &args.cmd {
        ProvenanceCmd::CheckSigners { file, verdicts } => {
            return check_signers(file.as_deref(), *verdicts)
        }
        // The payload is RFC 8785 JSON, UTF-8 text; printed byte for byte
        // (never a lossy conversion: a signature covers these bytes).
        ProvenanceCmd::Payload {
            file,
            op_id,
            signer,
        } => outside_signatures::payload(file, op_id, signer)
            .map_err(|e| e.to_string())
            .and_then(|bytes| String::from_utf8(bytes).map_err(|e| e.to_string())),
        ProvenanceCmd::Import {
            file,
            op_id,
            signer,
            sig,
        } => outside_signatures::import(file, op_id, signer, sig)
            .map(|side| {
                format!(
                    "{}: signature of {op_id} by {signer} added\n",
                    side.display()
                )
            })
            .map_err(|e| e.to_string()),
    };
    match result {
        Ok(text) => {
            let mut c = Output::default();
            c.out_text(text);
            c
        }
        Err(e) => Output::error(format!("noma provenance: {e}"), Exit::NotRun),
    }
}

/// `noma provenance check-signers`: the warnings, then the verdicts, each
/// printed as soon as its query is read (a program may ask one at a time).
fn check_signers(file: Option<&std::path::Path>, verdicts: bool) -> Output {
    use std::io::BufRead;
    let refused =
        |e: String| Output::error(format!("noma provenance check-signers: {e}"), Exit::NotRun);
    let check = match signers_check::load(file, std::path::Path::new(".")) {
        Ok(Some(c)) => c,
        Ok(None) => {
            let mut c = Output::default();
            c.out(format!(
                "allowed signers: none ({ALLOWED_SIGNERS_PATH} does not exist)"
            ));
            return c;
        }
        Err(e) => return refused(e.to_string()),
    };
    let mut c = Output::default();
    c.out_text(crate::report::signers::signers_check_text(&check));
    if !check.warnings.is_empty() {
        c.at_least(Exit::Failed);
    }
    if verdicts {
        super::output::print_now(&mut c);
        for line in std::io::stdin().lock().lines() {
            let verdict = line
                .map_err(|e| e.to_string())
                .and_then(|q| check.verdict(&q).map_err(|e| e.to_string()));
            match verdict {
                Ok(true) => c.out("allowed"),
                Ok(false) => c.out("refused"),
                Err(e) => {
                    c.extend(refused(e));
                    return c;
                }
            }
            super::output::print_now(&mut c);
        }
    }
    c
}

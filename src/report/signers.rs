//! An allowed-signers file's check as `noma provenance check-signers` and
//! `noma hooks status` print it.

use noma_git::provenance::signers_check::SignersCheck;

/// A summary line, then one line per warning.
pub fn signers_check_text(check: &SignersCheck) -> String {
    let mut out = format!(
        "allowed signers: {} ({} usable line(s), {} warning(s))\n",
        check.path.display(),
        check.usable,
        check.warnings.len()
    );
    for w in &check.warnings {
        out.push_str(&format!("  warning: line {}: {}\n", w.line, w.message));
    }
    out
}

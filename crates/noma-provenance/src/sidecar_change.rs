//! What a change to a provenance sidecar alone touches. A commit can move
//! a signature onto another record, drop signatures or approvals, or
//! delete the sidecar without appending a record; the records whose lines
//! changed are then checked as if the commit had written them, so the
//! hook and `noma reconcile` judge such a change by the same codes.

use std::collections::HashSet;

use super::sidecar::SidecarEntry;

/// The document a sidecar path belongs to: `doc.noma` for
/// `doc.noma.provenance`; `None` for any other path.
pub fn document_of(path: &str) -> Option<&str> {
    path.strip_suffix(".provenance")
        .filter(|doc| doc.ends_with(".noma"))
}

/// The op_ids named by the lines that one version of a sidecar has and the
/// other lacks (`None`: no sidecar), read as sets as the sidecar is: a
/// signature names its record, an approval every record it approves. A
/// line that is no entry names nothing (the sidecar's parse reports it).
pub fn touched_op_ids(before: Option<&[u8]>, after: Option<&[u8]>) -> HashSet<String> {
    let lines = |b: Option<&[u8]>| -> HashSet<Vec<u8>> {
        b.unwrap_or_default()
            .split(|&c| c == b'\n')
            .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
            .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
            .map(<[u8]>::to_vec)
            .collect()
    };
    let (a, b) = (lines(before), lines(after));
    let mut out = HashSet::new();
    for l in a.symmetric_difference(&b) {
        match serde_json::from_slice::<SidecarEntry>(l) {
            Ok(SidecarEntry::Signature(s)) => {
                out.insert(s.op_id);
            }
            Ok(SidecarEntry::Approval(a)) => out.extend(a.body.op_ids),
            Err(_) => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_moved_or_dropped_line_touches_the_records_it_names() {
        let sig = |op: &str, sig: &str| {
            format!(r#"{{"kind":"signature","op_id":"{op}","signer":"a@x","sig":"{sig}"}}"#)
        };
        let before = format!("{}\n{}\n", sig("A", "s1"), sig("B", "s2"));
        // The same set in another order, with a repeat: nothing touched.
        let same = format!(
            "{}\r\n{}\n{}\n",
            sig("B", "s2"),
            sig("A", "s1"),
            sig("A", "s1")
        );
        assert!(touched_op_ids(Some(before.as_bytes()), Some(same.as_bytes())).is_empty());
        // A's signature moved onto C.
        let moved = format!("{}\n{}\n", sig("C", "s1"), sig("B", "s2"));
        let t = touched_op_ids(Some(before.as_bytes()), Some(moved.as_bytes()));
        assert_eq!(t, HashSet::from(["A".to_string(), "C".to_string()]));
        // Deleted: every record it signed.
        assert_eq!(touched_op_ids(Some(before.as_bytes()), None).len(), 2);
        assert_eq!(document_of("d/a.noma.provenance"), Some("d/a.noma"));
        assert_eq!(document_of("a.provenance"), None);
    }
}

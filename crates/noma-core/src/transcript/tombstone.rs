//! A removed document's tombstone: its transcript ends with an applied
//! [`crate::patch::REMOVE_DOCUMENT`] record (`noma rm`), so the document
//! is absent on purpose and reads as the empty text the record leaves.

use std::io::BufRead;

use super::{parse_record, PatchResult, Record};

/// The removal record that ends `transcript` and its 1-based line, when the
/// last applied record is an `x-noma/remove_document` record followed only
/// by records that change nothing (a merge's rejected copies of the other
/// side's edits: the removal kept over a concurrent edit).
pub fn removal(transcript: &[u8]) -> Option<(usize, Record)> {
    removal_in(&mut &transcript[..]).ok().flatten()
}

/// [`removal`] of a transcript read a line at a time from `reader`: only
/// the last line that may be an applied record is kept; the few lines
/// after it are parsed to prove they applied nothing.
pub fn removal_in(reader: &mut dyn BufRead) -> std::io::Result<Option<(usize, Record)>> {
    let (mut last, mut buf, mut number, mut last_number) = (Vec::new(), Vec::new(), 0, 0);
    // Whether every line after `last` is a record that applied nothing.
    let mut idle_after = true;
    loop {
        buf.clear();
        if reader.read_until(b'\n', &mut buf)? == 0 || buf.last() != Some(&b'\n') {
            break;
        }
        number += 1;
        // Only a line naming the result `applied` can be an applied record
        // (a line that names it in a string is parsed below and refused).
        let maybe_applied = buf.windows(9).any(|w| w == b"\"applied\"");
        if maybe_applied {
            std::mem::swap(&mut last, &mut buf);
            last_number = number;
            idle_after = true;
        } else if !parse_record(number, &buf).is_ok_and(|r| r.patch_result != PatchResult::Applied)
        {
            idle_after = false;
        }
    }
    if last_number == 0 || !idle_after {
        return Ok(None);
    }
    Ok(parse_record(last_number, &last)
        .ok()
        .filter(is_removal)
        .map(|r| (last_number, r)))
}

/// Whether `record` is an applied removal of its document.
pub fn is_removal(record: &Record) -> bool {
    record.patch_result == PatchResult::Applied && record.op_name() == crate::patch::REMOVE_DOCUMENT
}

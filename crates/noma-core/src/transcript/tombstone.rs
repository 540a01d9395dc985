//! A removed document's tombstone: its transcript ends with an applied
//! [`crate::patch::REMOVE_DOCUMENT`] record (`noma rm`), so the document
//! is absent on purpose and reads as the empty text the record leaves.

use std::io::BufRead;

use super::{parse_record, PatchResult, Record};

/// The removal record that ends `transcript` and its 1-based line, when the
/// last complete line is an applied `x-noma/remove_document` record.
pub fn removal(transcript: &[u8]) -> Option<(usize, Record)> {
    removal_in(&mut &transcript[..]).ok().flatten()
}

/// [`removal`] of a transcript read a line at a time from `reader`: only
/// the last complete line is kept.
pub fn removal_in(reader: &mut dyn BufRead) -> std::io::Result<Option<(usize, Record)>> {
    let (mut last, mut buf, mut number) = (Vec::new(), Vec::new(), 0);
    loop {
        buf.clear();
        if reader.read_until(b'\n', &mut buf)? == 0 || buf.last() != Some(&b'\n') {
            break;
        }
        number += 1;
        std::mem::swap(&mut last, &mut buf);
    }
    if number == 0 {
        return Ok(None);
    }
    Ok(parse_record(number, &last)
        .ok()
        .filter(is_removal)
        .map(|r| (number, r)))
}

/// Whether `record` is an applied removal of its document.
pub fn is_removal(record: &Record) -> bool {
    record.patch_result == PatchResult::Applied && record.op_name() == crate::patch::REMOVE_DOCUMENT
}

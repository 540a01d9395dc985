//! A transcript's first record: what a document's identity (a
//! provenance lineage) is taken from.

use std::io::BufRead;

use super::{parse_record, Record};

/// The first complete record `reader` holds (None: no complete line). A
/// first line that does not parse is an error.
pub fn first_record_in(reader: &mut dyn BufRead) -> std::io::Result<Option<Record>> {
    let mut buf = Vec::new();
    if reader.read_until(b'\n', &mut buf)? == 0 || buf.last() != Some(&b'\n') {
        return Ok(None);
    }
    parse_record(1, &buf)
        .map(Some)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()))
}

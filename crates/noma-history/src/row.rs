//! An [`Attribution`] as the block cache stores it: a compact binary row
//! (varints; a line's offset is where the one before it ended), about a
//! third of the JSON it replaced, which took longer to write than the
//! stream took to hash. A row in any other encoding (an older build's
//! JSON, a damaged row) does not decode, and the history is replayed.

use super::attribute::{Attribution, LineRef, Touch, CHANGES};

/// The row's first bytes (a JSON row starts with `{`).
const MAGIC: &[u8] = b"noma-attribution-1\n";

impl Attribution {
    /// The bytes [`Attribution::decode`] reads back (empty, which decodes
    /// to nothing, for lines out of file order, which replay never gives).
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(MAGIC.len() + 16 * self.lines.len());
        out.extend_from_slice(MAGIC);
        for n in [
            self.lines.len(),
            self.records.len(),
            self.touches.len(),
            self.ids.len(),
            self.final_ids.len(),
        ] {
            varint(&mut out, n as u64);
        }
        let mut end = 0u64;
        for l in &self.lines {
            let Some(gap) = l.offset.checked_sub(end) else {
                return Vec::new();
            };
            varint(&mut out, gap);
            varint(&mut out, l.len);
            out.extend_from_slice(&l.origin.to_le_bytes());
            end = l.offset + l.len;
        }
        for (index, range) in &self.records {
            varint(&mut out, *index as u64);
            varint(&mut out, range.start as u64);
            varint(&mut out, range.len() as u64);
        }
        for t in &self.touches {
            varint(&mut out, u64::from(t.lineage));
            varint(&mut out, u64::from(t.id_then));
            let change = CHANGES.iter().position(|w| *w == t.change).unwrap_or(1);
            out.push(change as u8);
            varint(&mut out, t.renamed_from.map_or(0, |r| u64::from(r) + 1));
        }
        for id in &self.ids {
            string(&mut out, id);
        }
        for (id, alive) in self.final_ids.iter().zip(&self.alive) {
            string(&mut out, id);
            out.push(u8::from(*alive));
        }
        out
    }

    /// An attribution from stored bytes; None when they do not hold one
    /// (another encoding, a damaged row): the caller replays instead.
    pub(crate) fn decode(bytes: &[u8]) -> Option<Attribution> {
        let mut r = Reader(bytes.strip_prefix(MAGIC)?);
        let mut count = || r.varint().and_then(|n| usize::try_from(n).ok());
        let (lines, records, touches) = (count()?, count()?, count()?);
        let (ids, lineages) = (count()?, count()?);
        // No count is trusted for more room than the row's bytes can fill.
        let room = |n: usize| n.min(bytes.len());
        let mut out = Attribution {
            lines: Vec::with_capacity(room(lines)),
            records: Vec::with_capacity(room(records)),
            touches: Vec::with_capacity(room(touches)),
            ids: Vec::with_capacity(room(ids)),
            final_ids: Vec::with_capacity(room(lineages)),
            alive: Vec::with_capacity(room(lineages)),
        };
        let mut end = 0u64;
        for _ in 0..lines {
            let offset = end.checked_add(r.varint()?)?;
            let len = r.varint()?;
            let origin = u64::from_le_bytes(r.take(8)?.try_into().ok()?);
            end = offset.checked_add(len)?;
            out.lines.push(LineRef {
                offset,
                len,
                origin,
            });
        }
        for _ in 0..records {
            let index = usize::try_from(r.varint()?).ok()?;
            let start = usize::try_from(r.varint()?).ok()?;
            let end = start.checked_add(usize::try_from(r.varint()?).ok()?)?;
            if index >= lines || end > touches {
                return None;
            }
            out.records.push((index, start..end));
        }
        let fits = |i: u64, n: usize| u32::try_from(i).ok().filter(|i| (*i as usize) < n);
        for _ in 0..touches {
            let lineage = fits(r.varint()?, lineages)?;
            let id_then = fits(r.varint()?, ids)?;
            let change = CHANGES.get(usize::from(r.take(1)?[0]))?;
            let renamed_from = match r.varint()? {
                0 => None,
                n => Some(fits(n - 1, ids)?),
            };
            out.touches.push(Touch {
                lineage,
                id_then,
                change,
                renamed_from,
            });
        }
        for _ in 0..ids {
            out.ids.push(r.string()?);
        }
        for _ in 0..lineages {
            out.final_ids.push(r.string()?);
            out.alive.push(match r.take(1)?[0] {
                0 => false,
                1 => true,
                _ => return None,
            });
        }
        r.0.is_empty().then_some(out)
    }
}

/// `n` in 7-bit groups, low first, the high bit set on all but the last.
fn varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn string(out: &mut Vec<u8>, s: &str) {
    varint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

/// The bytes of a row not read yet.
struct Reader<'b>(&'b [u8]);

impl<'b> Reader<'b> {
    fn take(&mut self, n: usize) -> Option<&'b [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    fn varint(&mut self) -> Option<u64> {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.take(1)?[0];
            n |= u64::from(b & 0x7f).checked_shl(shift)?;
            if b & 0x80 == 0 {
                return Some(n);
            }
        }
        None
    }

    fn string(&mut self) -> Option<String> {
        let len = usize::try_from(self.varint()?).ok()?;
        String::from_utf8(self.take(len)?.to_vec()).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Attribution {
        let touch = |lineage, id_then, change, renamed_from| Touch {
            lineage,
            id_then,
            change,
            renamed_from,
        };
        Attribution {
            records: vec![(0, 0..2), (2, 2..2), (3, 2..3)],
            touches: vec![
                touch(0, 0, "changed", None),
                touch(1, 1, "renamed", Some(2)),
                touch(1, 1, "removed", None),
            ],
            ids: vec!["plan".into(), "b\u{e9}".into(), "a".into()],
            final_ids: vec!["plan".into(), "b\u{e9}".into()],
            alive: vec![true, false],
            lines: (0..4)
                .map(|i| LineRef {
                    offset: 700 * i,
                    len: 700,
                    origin: u64::MAX - i,
                })
                .collect(),
        }
    }

    fn same(a: &Attribution, b: &Attribution) -> bool {
        (a.records == b.records && a.touches == b.touches && a.ids == b.ids)
            && (a.final_ids == b.final_ids && a.alive == b.alive && a.lines == b.lines)
    }

    #[test]
    fn a_row_reads_back_as_written() {
        let a = sample();
        let back = Attribution::decode(&a.encode()).expect("decodes");
        assert!(same(&a, &back));
        let empty = Attribution::default();
        assert!(same(&empty, &Attribution::decode(&empty.encode()).unwrap()));
    }

    #[test]
    fn a_damaged_or_foreign_row_is_not_read() {
        let bytes = sample().encode();
        for cut in 0..bytes.len() {
            assert!(Attribution::decode(&bytes[..cut]).is_none(), "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(Attribution::decode(&longer).is_none());
        assert!(Attribution::decode(br#"{"records":[]}"#).is_none());
        // A touch naming an id that is not there.
        let mut bad = sample();
        bad.touches[0].id_then = 9;
        assert!(Attribution::decode(&bad.encode()).is_none());
    }
}

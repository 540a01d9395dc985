//! A blob inflated in-process from the repository's own object files
//! (decision `hook-inflates-in-process`): a loose object, or an
//! undeltified object in a pack (where `git add` puts a file over
//! `core.bigFileThreshold`), read a buffer at a time, so one pass over a
//! transcript of hundreds of megabytes needs no `git cat-file` process and
//! no pipe. Anything else — a delta, an object only in an alternate or a
//! promisor remote, a pack index format this does not know — is not read
//! here: [`open`] answers None and the caller asks git.
//!
//! What is read is checked as git checks a blob it streams: the loose
//! object's header must name a blob and its size, a packed entry's header
//! must say blob, and the zlib stream must end (its Adler-32 checked) after
//! exactly that many bytes; a loose file must hold nothing after it. A
//! corrupt or truncated object is an error, never a short read.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use flate2::{Decompress, FlushDecompress, Status};
use git2::Oid;
use noma_core::transcript::prefix::read_full;

/// Compressed bytes read from the file at a time.
const INPUT: usize = 256 * 1024;
/// The longest loose object header taken ("blob " and a 64-bit size).
const HEADER_MAX: usize = 32;
/// A pack entry's type for a whole (undeltified) blob.
const PACKED_BLOB: u8 = 3;

/// One blob's bytes, inflated from its object file as they are asked for.
pub struct ObjectStream {
    file: File,
    zlib: Decompress,
    input: Vec<u8>,
    /// The compressed bytes of `input` not yet inflated.
    start: usize,
    end: usize,
    /// The file has no more bytes.
    eof: bool,
    /// Blob bytes not yet handed out.
    left: u64,
    /// The zlib stream ended (and its checksum matched).
    ended: bool,
    /// A loose object: its file must end with the zlib stream.
    loose: bool,
    /// The object id, for errors.
    id: Oid,
}

/// Opens blob `id` from `objects` (a repository's object directory): its
/// loose file, else an index of a local pack that holds it whole. None
/// when it is in neither (or only as a delta): git must read it.
pub fn open(objects: &Path, id: Oid) -> io::Result<Option<ObjectStream>> {
    let hex = id.to_string();
    match File::open(objects.join(&hex[..2]).join(&hex[2..])) {
        Ok(file) => return ObjectStream::loose(file, id).map(Some),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let packs = match std::fs::read_dir(objects.join("pack")) {
        Ok(d) => d,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    for entry in packs {
        let idx = entry?.path();
        if idx.extension().is_none_or(|e| e != "idx") {
            continue;
        }
        let Some(offset) = pack_offset(&idx, id.as_bytes())? else {
            continue;
        };
        let pack = match File::open(idx.with_extension("pack")) {
            Ok(f) => f,
            // Removed by a repack since the listing: git finds the new one.
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        return ObjectStream::packed(pack, offset, id);
    }
    Ok(None)
}

/// Where object `id` starts in the pack of version 2 index `idx`; None
/// when the index does not list it (or is of another version).
fn pack_offset(idx: &Path, id: &[u8]) -> io::Result<Option<u64>> {
    let mut f = File::open(idx)?;
    let mut head = [0u8; 8 + 256 * 4];
    if read_full(&mut f, &mut head)? < head.len()
        || head[..8] != [0xff, b't', b'O', b'c', 0, 0, 0, 2]
    {
        return Ok(None);
    }
    let fanout =
        |i: usize| u32::from_be_bytes(head[8 + 4 * i..12 + 4 * i].try_into().unwrap_or_default());
    let first = usize::from(id[0]);
    let (mut lo, mut hi) = (
        if first == 0 { 0 } else { fanout(first - 1) },
        fanout(first),
    );
    let total = u64::from(fanout(255));
    let names = head.len() as u64;
    let mut name = vec![0u8; id.len()];
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        f.seek(SeekFrom::Start(names + u64::from(mid) * id.len() as u64))?;
        f.read_exact(&mut name)?;
        match name.as_slice().cmp(id) {
            std::cmp::Ordering::Less => lo = mid + 1,
            std::cmp::Ordering::Greater => hi = mid,
            std::cmp::Ordering::Equal => {
                // Names, then a CRC32 and a 4-byte offset for each object,
                // then the 8-byte offsets the 4-byte ones point to.
                let offsets = names + total * (id.len() as u64 + 4);
                let mut word = [0u8; 4];
                f.seek(SeekFrom::Start(offsets + u64::from(mid) * 4))?;
                f.read_exact(&mut word)?;
                let small = u32::from_be_bytes(word);
                if small & 0x8000_0000 == 0 {
                    return Ok(Some(u64::from(small)));
                }
                let mut large = [0u8; 8];
                f.seek(SeekFrom::Start(
                    offsets + total * 4 + u64::from(small & 0x7fff_ffff) * 8,
                ))?;
                f.read_exact(&mut large)?;
                return Ok(Some(u64::from_be_bytes(large)));
            }
        }
    }
    Ok(None)
}

impl ObjectStream {
    fn new(file: File, id: Oid, loose: bool) -> ObjectStream {
        ObjectStream {
            file,
            zlib: Decompress::new(true),
            input: vec![0u8; INPUT],
            start: 0,
            end: 0,
            eof: false,
            left: 0,
            ended: false,
            loose,
            id,
        }
    }

    /// A loose object's stream, past its header ("blob <size>\0").
    fn loose(file: File, id: Oid) -> io::Result<ObjectStream> {
        let mut s = ObjectStream::new(file, id, true);
        let mut header = Vec::with_capacity(HEADER_MAX);
        let mut byte = [0u8; 1];
        while header.last() != Some(&0) {
            if header.len() == HEADER_MAX || s.inflate(&mut byte)? == 0 {
                return Err(s.corrupt("its header is malformed"));
            }
            header.push(byte[0]);
        }
        let size = std::str::from_utf8(&header[..header.len() - 1])
            .ok()
            .and_then(|h| h.strip_prefix("blob "))
            .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|n| n.parse().ok());
        s.left = size.ok_or_else(|| s.corrupt("its header does not name a blob and its size"))?;
        Ok(s)
    }

    /// A packed object's stream, from its entry at `offset`; None when
    /// the entry is not a whole blob (a delta: git resolves it).
    fn packed(mut file: File, offset: u64, id: Oid) -> io::Result<Option<ObjectStream>> {
        let mut magic = [0u8; 8];
        file.read_exact(&mut magic)?;
        if &magic[..4] != b"PACK" || !matches!(magic[7], 2 | 3) || magic[4..7] != [0, 0, 0] {
            return Ok(None);
        }
        file.seek(SeekFrom::Start(offset))?;
        let mut s = ObjectStream::new(file, id, false);
        s.end = read_full(&mut s.file, &mut s.input)?;
        // Type in bits 4-6 of the first byte, the size in its low 4 bits
        // and 7 bits of each next byte while the top bit is set.
        let mut at = 0;
        let mut byte = |s: &ObjectStream| {
            let b = s.input[..s.end].get(at).copied();
            at += 1;
            b.ok_or_else(|| s.corrupt("its pack entry is truncated"))
        };
        let first = byte(&s)?;
        let mut size = u64::from(first & 0x0f);
        let mut more = first & 0x80 != 0;
        let mut shift = 4;
        while more {
            let b = byte(&s)?;
            if shift > 57 {
                return Err(s.corrupt("its pack entry's size is too large"));
            }
            size |= u64::from(b & 0x7f) << shift;
            shift += 7;
            more = b & 0x80 != 0;
        }
        if (first >> 4) & 7 != PACKED_BLOB {
            return Ok(None);
        }
        s.start = at;
        s.left = size;
        Ok(Some(s))
    }

    fn corrupt(&self, what: &str) -> io::Error {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("git object {} is corrupt: {what}", self.id),
        )
    }

    /// Inflates into `out` (not empty): the bytes written, 0 only at the
    /// end of the zlib stream. A stream cut short is an error.
    fn inflate(&mut self, out: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.ended {
                return Ok(0);
            }
            if self.start == self.end && !self.eof {
                self.end = self.file.read(&mut self.input)?;
                self.start = 0;
                self.eof = self.end == 0;
            }
            let (was_in, was_out) = (self.zlib.total_in(), self.zlib.total_out());
            let status = self
                .zlib
                .decompress(
                    &self.input[self.start..self.end],
                    out,
                    FlushDecompress::None,
                )
                .map_err(|e| self.corrupt(&format!("zlib: {e}")))?;
            let took = usize::try_from(self.zlib.total_in() - was_in).unwrap_or(usize::MAX);
            let made = usize::try_from(self.zlib.total_out() - was_out).unwrap_or(usize::MAX);
            self.start += took;
            self.ended = status == Status::StreamEnd;
            if made > 0 || self.ended {
                return Ok(made);
            }
            if self.eof {
                return Err(self.corrupt("it is truncated"));
            }
            if took == 0 && self.start < self.end {
                return Err(self.corrupt("zlib made no progress"));
            }
        }
    }

    /// After the last blob byte: the zlib stream must end there (its
    /// checksum checked), and a loose file with it.
    fn finish(&mut self) -> io::Result<()> {
        let mut extra = [0u8; 1];
        if self.inflate(&mut extra)? > 0 {
            return Err(self.corrupt("it is longer than its header says"));
        }
        if self.loose && (self.start < self.end || self.file.read(&mut extra)? > 0) {
            return Err(self.corrupt("bytes follow its zlib stream"));
        }
        Ok(())
    }
}

impl Read for ObjectStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.left == 0 {
            if !self.ended || self.loose {
                self.finish()?;
                // Checked once: the next read is a plain end.
                self.loose = false;
                self.ended = true;
            }
            return Ok(0);
        }
        let want = usize::try_from(self.left).map_or(buf.len(), |l| l.min(buf.len()));
        let n = self.inflate(&mut buf[..want])?;
        if n == 0 {
            return Err(self.corrupt("it is shorter than its header says"));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::ZlibEncoder;
    use git2::Repository;
    use std::io::Write;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .expect("git runs");
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8(out.stdout)
            .expect("utf-8")
            .trim()
            .to_string()
    }

    fn text(seed: u32) -> Vec<u8> {
        (0..60_000u32)
            .flat_map(|i| format!("{{\"line\":{i},\"seed\":{seed}}}\n").into_bytes())
            .collect()
    }

    fn read(objects: &Path, id: Oid) -> io::Result<Option<Vec<u8>>> {
        let Some(mut s) = open(objects, id)? else {
            return Ok(None);
        };
        let mut all = Vec::new();
        s.read_to_end(&mut all)?;
        // The end stays the end.
        assert_eq!(s.read(&mut [0u8; 8])?, 0);
        Ok(Some(all))
    }

    fn loose_path(objects: &Path, id: Oid) -> std::path::PathBuf {
        let hex = id.to_string();
        objects.join(&hex[..2]).join(&hex[2..])
    }

    /// Writes `content` as loose object `name` ("blob 3\0abc", zlib).
    fn write_loose(objects: &Path, name: Oid, content: &[u8]) {
        let p = loose_path(objects, name);
        std::fs::create_dir_all(p.parent().expect("dir")).expect("mkdir");
        let mut z = ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(content).expect("deflates");
        std::fs::write(&p, z.finish().expect("deflates")).expect("writes");
    }

    /// A loose blob and a whole packed one read as their bytes; a delta is
    /// left to git; an id the repository lacks is not found.
    #[test]
    fn loose_and_packed_blobs_read_as_git_stores_them() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let repo = Repository::init(tmp.path()).expect("init");
        let objects = tmp.path().join(".git/objects");
        let bytes = text(1);
        let id = repo.blob(&bytes).expect("blob");
        assert!(loose_path(&objects, id).exists());
        assert_eq!(read(&objects, id).expect("reads"), Some(bytes.clone()));
        assert_eq!(
            read(&objects, repo.blob(b"").expect("blob")).expect("reads"),
            Some(vec![])
        );
        // `git add` of a file over core.bigFileThreshold writes it into a
        // pack of its own, whole.
        let big = text(2);
        std::fs::write(tmp.path().join("big"), &big).expect("writes");
        let packed: Oid = git(
            tmp.path(),
            &["-c", "core.bigFileThreshold=1k", "hash-object", "-w", "big"],
        )
        .parse()
        .expect("oid");
        assert!(!loose_path(&objects, packed).exists());
        assert_eq!(read(&objects, packed).expect("reads"), Some(big));
        // Similar blobs repacked: one is stored as a delta of the other.
        let v: Vec<Oid> = (3..6)
            .map(|seed| {
                let mut t = bytes.clone();
                t.extend_from_slice(format!("{seed}\n").as_bytes());
                repo.blob(&t).expect("blob")
            })
            .collect();
        let list: String = v.iter().map(|o| format!("{o}\n")).collect();
        let mut child = Command::new("git")
            .arg("-C")
            .arg(tmp.path())
            .args(["pack-objects", ".git/objects/pack/pack"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("git runs");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(list.as_bytes())
            .expect("writes");
        assert!(child.wait().expect("waits").success());
        git(tmp.path(), &["prune-packed"]);
        let answers: Vec<_> = v
            .iter()
            .map(|o| read(&objects, *o).expect("reads"))
            .collect();
        assert!(answers.iter().any(Option::is_none), "one is a delta");
        assert!(answers.iter().flatten().all(|a| a.starts_with(&bytes)));
        let missing = Oid::from_str("0123456789012345678901234567890123456789").expect("oid");
        assert!(read(&objects, missing).expect("reads").is_none());
    }

    /// A loose object that does not inflate, is cut short, holds more or
    /// fewer bytes than its header says, or more after its zlib stream,
    /// is an error, never a short read.
    #[test]
    fn a_corrupt_loose_object_is_an_error() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let repo = Repository::init(tmp.path()).expect("init");
        let objects = tmp.path().join(".git/objects");
        let id = repo.blob(&text(7)).expect("blob");
        let p = loose_path(&objects, id);
        let good = std::fs::read(&p).expect("reads");
        let mut flipped = good.clone();
        flipped[good.len() / 2] ^= 0x10;
        let cut = good[..good.len() - 3].to_vec();
        let more = [good.as_slice(), b"x"].concat();
        for bad in [flipped, cut, more] {
            std::fs::write(&p, &bad).expect("writes");
            let err = read(&objects, id).expect_err("refused");
            assert_eq!(err.kind(), io::ErrorKind::InvalidData, "{err}");
            assert!(err.to_string().contains(&id.to_string()), "{err}");
        }
        for content in [
            &b"blob 10\0abc"[..],
            b"blob 2\0abc",
            b"tree 3\0abc",
            b"blob x\0",
            b"blob 3",
        ] {
            write_loose(&objects, id, content);
            let err = read(&objects, id).expect_err("refused");
            assert!(err.to_string().contains("is corrupt"), "{err}");
        }
        write_loose(&objects, id, b"blob 3\0abc");
        assert_eq!(read(&objects, id).expect("reads"), Some(b"abc".to_vec()));
    }
}

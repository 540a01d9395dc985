//! Durable I/O: a request against files. Reads the document, takes the
//! transcript's lock, runs recovery and commits the planned records and
//! the new document by the write protocol of the engine module doc.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::fsio::{self, Intent, LockedTranscript, StagedFile};
use noma_core::doc::hash::sha256_hex;
use noma_core::transcript::{self, Actor, Record};

use noma_core::plan::{chain_and_serialise, check_request, plan, Context, Plan, Request};

use super::{
    capability, default_transcript_path, io_err, is_book_manifest, recover, BeforeAppend,
    EngineError, Options, Outcome, Recovery, WriteMode,
};

/// Pause hook for the crash tests: sleep this many milliseconds between the
/// transcript commit and the document rename, widening the crash window.
/// Only in builds with the `fault-injection` feature, which the binary's
/// integration tests turn on through their dev-dependency; release builds
/// do not read it.
#[cfg(feature = "fault-injection")]
const PAUSE_ENV: &str = "NOMA_TEST_PAUSE_BEFORE_RENAME_MS";

/// Runs one patch request against a file.
pub fn patch_file(doc_path: &Path, ops: &[Value], opts: &Options) -> Result<Outcome, EngineError> {
    check_request(ops)?;
    transcript::check_writer_fields(&opts.request.actor, opts.request.reason.as_deref())?;
    let book_manifest = is_book_manifest(doc_path);
    let capability = if book_manifest {
        None
    } else {
        capability::load(doc_path)?.map(|(_, f)| f)
    };
    let ctx = Context {
        doc_uri: opts
            .doc_uri
            .clone()
            .unwrap_or_else(|| crate::uri::doc_uri(doc_path)),
        book_manifest,
        capability,
        source_sha256: None,
    };
    match &opts.write {
        WriteMode::DryRun | WriteMode::Out(_) => patch_copy(doc_path, &ctx, ops, opts),
        WriteMode::InPlace => patch_in_place(doc_path, ctx, ops, opts),
    }
}

/// `noma rm`: records the document's removal, one
/// [`noma_core::patch::REMOVE_DOCUMENT`] record (signed through
/// [`Options::before_append`] like any other), by the write protocol of
/// the module doc, then deletes the document; the transcript stays as its
/// tombstone. `opts.write` must be [`WriteMode::InPlace`]. A crash between
/// the commit and the deletion leaves the empty document the record
/// promises, so a second run only deletes it; a document already removed
/// (absent, its transcript ending with the removal) is no error and
/// nothing is written.
pub fn remove_file(doc_path: &Path, opts: &Options) -> Result<Outcome, EngineError> {
    transcript::check_writer_fields(&opts.request.actor, opts.request.reason.as_deref())?;
    let tpath = opts
        .transcript
        .clone()
        .unwrap_or_else(|| default_transcript_path(doc_path));
    if let Some(outcome) = already_removed(doc_path, &tpath)? {
        return Ok(outcome);
    }
    let ctx = Context {
        doc_uri: opts
            .doc_uri
            .clone()
            .unwrap_or_else(|| crate::uri::doc_uri(doc_path)),
        book_manifest: is_book_manifest(doc_path),
        capability: None,
        source_sha256: None,
    };
    let mut in_place = opts.clone();
    in_place.write = WriteMode::InPlace;
    // The op names the state it removes; a document that changes before
    // the transcript's lock is taken fails the op (sha_mismatch), never
    // records a removal of a state nobody saw.
    let source = fsio::read_regular(doc_path).map_err(io_err("cannot read", doc_path))?;
    let removal = noma_core::patch::removal_op(&String::from_utf8_lossy(&source));
    let outcome = patch_in_place(doc_path, ctx, &[removal], &in_place)?;
    let removed = outcome.accepted
        && outcome
            .records
            .last()
            .is_some_and(transcript::tombstone::is_removal);
    if removed {
        delete_document(doc_path)?;
    }
    Ok(outcome)
}

/// The outcome of a removal that already happened: the transcript ends
/// with a removal and the document is absent, or empty (a run the deletion
/// did not finish, which is then finished). An empty document whose
/// transcript does not end so has nothing a removal could record.
fn already_removed(doc_path: &Path, tpath: &Path) -> Result<Option<Outcome>, EngineError> {
    let tombstone = match fsio::open_lines(tpath) {
        Ok(mut r) => transcript::tombstone::removal_in(&mut r)
            .map_err(io_err("cannot read", tpath))?
            .is_some(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => return Err(io_err("cannot read", tpath)(e)),
    };
    let text = match crate::fsio::read_document(doc_path) {
        Ok(t) => Some(t),
        Err(_) if tombstone && !doc_path.exists() => None,
        Err(e) => return Err(e.into()),
    };
    match (tombstone, text.as_deref()) {
        (true, None) => {}
        (true, Some("")) => delete_document(doc_path)?,
        (false, Some("")) => return Err(io_err("cannot remove", doc_path)(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "the document is empty: a removal would change nothing, so there is nothing to record",
        ))),
        _ => return Ok(None),
    }
    Ok(Some(Outcome {
        records: Vec::new(),
        accepted: true,
        new_text: String::new(),
        post_diagnostics: Vec::new(),
        wrote_document: false,
        transcript: Some(tpath.to_path_buf()),
        recovery: None,
    }))
}

/// Deletes the removed document and makes the deletion durable.
fn delete_document(doc_path: &Path) -> Result<(), EngineError> {
    std::fs::remove_file(doc_path).map_err(io_err("cannot delete", doc_path))?;
    let dir = doc_path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// [`patch_file`] without the transcript: a dry run, or the new text
/// written to another file.
fn patch_copy(
    doc_path: &Path,
    ctx: &Context,
    ops: &[Value],
    opts: &Options,
) -> Result<Outcome, EngineError> {
    let source = crate::fsio::read_document(doc_path)?;
    let plan = plan(&source, ctx, ops, &opts.request);
    let mut wrote = false;
    if let (WriteMode::Out(out), true) = (&opts.write, plan.accepted) {
        fsio::atomic_write(out, plan.new_text.as_bytes()).map_err(io_err("cannot write", out))?;
        wrote = true;
    }
    Ok(Outcome {
        records: plan.records,
        accepted: plan.accepted,
        new_text: plan.new_text,
        post_diagnostics: plan.post_diagnostics,
        wrote_document: wrote,
        transcript: None,
        recovery: None,
    })
}

/// [`patch_file`] in place: under the transcript's lock, recovery, then the
/// request committed by the write protocol (module doc).
fn patch_in_place(
    doc_path: &Path,
    mut ctx: Context,
    ops: &[Value],
    opts: &Options,
) -> Result<Outcome, EngineError> {
    let tpath = opts
        .transcript
        .clone()
        .unwrap_or_else(|| default_transcript_path(doc_path));
    // Refused before anything is written (a signature included): the
    // document's rename would replace a link, and noma writes no file
    // through one (fsio::contain).
    fsio::contain::check_writable(doc_path).map_err(io_err("cannot write", doc_path))?;
    let mut locked = lock_transcript(doc_path, &tpath)?;
    let (recovery, source) = recover_and_read(doc_path, &mut locked, &mut ctx, opts)?;
    let mut plan = plan(&source, &ctx, ops, &opts.request);
    if let Some(BeforeAppend(step)) = &opts.before_append {
        let first =
            super::genesis_after(&tpath, &plan.records).map_err(io_err("cannot read", &tpath))?;
        step(doc_path, &plan.records, first.as_ref())
            .map_err(io_err("cannot sign the records", &tpath))?;
    }
    let changed = plan.accepted && plan.new_text != source;
    let last_line = recovery.last_line_sha256.clone();
    let bytes = chain_request(&mut plan, &source, &ctx, opts, last_line);
    let (pre, post) = document_hashes(&plan.records);
    let staged = stage_document(doc_path, &plan.new_text, changed)?;
    commit_request(&mut locked, &bytes, &pre, &post, staged)
        .map_err(io_err("cannot commit the request", &tpath))?;
    drop(locked);
    Ok(Outcome {
        records: plan.records,
        accepted: plan.accepted,
        new_text: plan.new_text,
        post_diagnostics: plan.post_diagnostics,
        wrote_document: changed,
        transcript: Some(tpath),
        recovery: Some(recovery),
    })
}

/// Opens and locks the transcript at `tpath` for writing.
fn lock_transcript(doc_path: &Path, tpath: &Path) -> Result<LockedTranscript, EngineError> {
    // An unreadable document must not leave a new, empty transcript
    // behind: check it before opening creates one. With a transcript
    // in place the read under the lock reports the same errors, so
    // the common case reads the document once.
    if !tpath.exists() {
        crate::fsio::read_document(doc_path)?;
    }
    LockedTranscript::open(tpath).map_err(io_err("cannot open transcript", tpath))
}

/// Runs recovery under the lock, then reads the document the request
/// starts from: the bytes recovery already read and hashed when it has
/// them (their hash goes into `ctx`), else the file.
fn recover_and_read(
    doc_path: &Path,
    locked: &mut LockedTranscript,
    ctx: &mut Context,
    opts: &Options,
) -> Result<(Recovery, String), EngineError> {
    let mut recovery = match recover::recover(doc_path, locked, opts.force) {
        Ok(recovery) => recovery,
        Err(e) => {
            // A document that is not text explains itself better
            // than "an edit no record explains".
            crate::fsio::read_document(doc_path)?;
            return Err(e.into());
        }
    };
    let source = match recovery.document.take() {
        Some(read) => {
            ctx.source_sha256 = Some(read.sha256);
            noma_core::doc::source::decode_owned(doc_path, read.bytes)?
        }
        None => crate::fsio::read_document(doc_path)?,
    };
    Ok((recovery, source))
}

/// The bytes to append: the request's records chained onto the
/// transcript's last line (`last_line_sha256`), after a genesis record
/// when [`Options::genesis`] asks for one and the transcript has no line
/// yet. `plan.records` come back with their chain hashes filled in.
fn chain_request(
    plan: &mut Plan,
    source: &str,
    ctx: &Context,
    opts: &Options,
    last_line_sha256: Option<String>,
) -> Vec<u8> {
    let mut records = match opts.genesis && last_line_sha256.is_none() {
        true => genesis_records(source, ctx, opts),
        false => Vec::new(),
    };
    let request = records.len();
    records.append(&mut plan.records);
    let bytes = chain_and_serialise(&mut records, last_line_sha256);
    plan.records = records.split_off(request);
    bytes
}

/// The document's sha256 before and after a request's records (empty
/// when it has none), as the intent marker records them.
fn document_hashes(records: &[Record]) -> (String, String) {
    let pre = records
        .first()
        .map(|r| r.pre_sha256.clone())
        .unwrap_or_default();
    let post = records
        .last()
        .map(|r| r.post_sha256.clone())
        .unwrap_or_default();
    (pre, post)
}

/// The new document written to a temp file beside it (fsynced) when the
/// request `changed` it; None otherwise.
fn stage_document(
    doc_path: &Path,
    new_text: &str,
    changed: bool,
) -> Result<Option<StagedFile>, EngineError> {
    if !changed {
        return Ok(None);
    }
    // The document's size cap is checked before the first byte is written:
    // a request that would carry it over is refused whole. The transcript
    // has no cap of its own: every reader streams it, and one
    // request adds at most its records.
    fsio::check_growth(new_text.len() as u64).map_err(io_err("refused", doc_path))?;
    let staged = StagedFile::write(doc_path, new_text.as_bytes())
        .map_err(io_err("cannot write", doc_path))?;
    Ok(Some(staged))
}

/// The genesis record of a transcript that starts at `source` (none for
/// an empty document, which needs no start): the tool writes the document
/// as found, from the empty document.
fn genesis_records(source: &str, ctx: &Context, opts: &Options) -> Vec<Record> {
    if source.is_empty() {
        return Vec::new();
    }
    let mut gopts = Request::new(Actor {
        kind: noma_core::transcript::ActorKind::Tool,
        name: "noma".into(),
        model: None,
        version: Some(env!("CARGO_PKG_VERSION").into()),
    });
    gopts.reason =
        Some("start of the transcript: the document as found before its first patch".into());
    gopts.validate = opts.request.validate.clone();
    let ops = [noma_core::patch::genesis_op(source)];
    // The tool's start, not an agent's op: a capability descriptor that
    // limits agents' ops does not apply to it.
    let mut ctx = ctx.clone();
    ctx.source_sha256 = None;
    ctx.capability = None;
    let g = plan("", &ctx, &ops, &gopts);
    if g.accepted && g.new_text == source {
        g.records
    } else {
        // Never expected (the op writes exactly `source`); the request
        // then goes on without a genesis, as before it existed.
        Vec::new()
    }
}

/// Appends a request's records under the write protocol (module doc, steps
/// 3–6): intent marker, one append (the commit point), the staged
/// document's rename, marker removed. `doc_pre_sha256`/`doc_post_sha256`
/// are the document's hashes before and after the request (equal when it
/// does not change the document, as for `noma record`).
pub fn commit_request(
    locked: &mut LockedTranscript,
    records: &[u8],
    doc_pre_sha256: &str,
    doc_post_sha256: &str,
    staged: Option<StagedFile>,
) -> std::io::Result<()> {
    if records.is_empty() {
        return Ok(());
    }
    let tpath = locked.path().to_path_buf();
    let intent = Intent {
        transcript_len: locked.byte_len()?,
        append_len: records.len() as u64,
        append_sha256: sha256_hex(records),
        doc_pre_sha256: doc_pre_sha256.to_string(),
        doc_post_sha256: doc_post_sha256.to_string(),
    };
    intent.write(&tpath)?;
    locked.append(records)?;
    if let Some(staged) = staged {
        #[cfg(feature = "fault-injection")]
        if let Some(ms) = std::env::var(PAUSE_ENV)
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
        {
            std::thread::sleep(std::time::Duration::from_millis(ms));
        }
        staged.commit()?;
    }
    // Done either way: a marker left behind by a failure here is cleared by
    // the next writer, which finds the document at the request's result.
    let _ = Intent::clear(&tpath);
    Ok(())
}

/// Checks that the transcript of `doc_path` (the given path, or the
/// conventional one) exists; returns its path.
fn existing_transcript(
    doc_path: &Path,
    transcript_path: Option<&Path>,
    what: &'static str,
) -> Result<PathBuf, EngineError> {
    let tpath = transcript_path
        .map(Path::to_path_buf)
        .unwrap_or_else(|| default_transcript_path(doc_path));
    if !tpath.exists() {
        return Err(EngineError::Io {
            path: tpath,
            what,
            // The fix, not just the fact: a document edited by hand before
            // noma was set up has no transcript until `noma record` starts one.
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!(
                    "no such transcript; `noma record {}` starts one from the document as it is",
                    doc_path.display()
                ),
            ),
        });
    }
    Ok(tpath)
}

/// `noma repair`: runs [`recover::repair`] on `doc_path` and its transcript
/// under the writers' lock.
pub fn repair_file(
    doc_path: &Path,
    transcript_path: Option<&Path>,
) -> Result<Recovery, EngineError> {
    crate::fsio::read_document(doc_path)?;
    let tpath = existing_transcript(doc_path, transcript_path, "cannot repair")?;
    let mut locked =
        LockedTranscript::open(&tpath).map_err(io_err("cannot open transcript", &tpath))?;
    Ok(recover::repair(doc_path, &mut locked)?)
}

/// Replays the transcript of `doc_path` without changing any file: a
/// verifier reports what a writer would repair (the notes) and never
/// repairs it.
///
/// The base is the file `base` when given; otherwise `find_base` is asked
/// with the first applied record's `pre_sha256` (None when there is none)
/// and the document's text, and returns the base text when it knows one (a
/// shell looks it up, e.g. in the document's git history; the engine reads
/// no repository). None leaves the choice to the replay: the document
/// itself. The transcript is read a line at a time, under the shared lock,
/// so memory follows the longest record, not the transcript.
pub fn replay_file(
    doc_path: &Path,
    transcript_path: Option<&Path>,
    base: Option<&Path>,
    find_base: &mut dyn FnMut(Option<&str>, &str) -> Option<String>,
) -> Result<(Vec<String>, transcript::replay::Report), EngineError> {
    // A removed document is absent on purpose: its tombstone is replayed.
    let tombstone = transcript_path
        .map(Path::to_path_buf)
        .unwrap_or_else(|| default_transcript_path(doc_path));
    if doc_path.exists() || !tombstone.exists() {
        crate::fsio::read_document(doc_path)?;
    }
    let tpath = existing_transcript(doc_path, transcript_path, "cannot replay")?;
    let given = match base {
        Some(b) => Some(crate::fsio::read_document(b)?),
        None => None,
    };
    let mut locked =
        LockedTranscript::open_shared(&tpath).map_err(io_err("cannot open transcript", &tpath))?;
    let notes = recover::inspect(doc_path, &tpath);
    let doc = match crate::fsio::read_document(doc_path) {
        Ok(doc) => doc,
        // A removed document's tombstone replays to the empty text.
        Err(e) if !doc_path.exists() && ends_with_removal(&mut locked, &tpath)? => {
            drop(e);
            String::new()
        }
        Err(e) => return Err(e.into()),
    };
    let mut reader = locked.reader().map_err(io_err("cannot read", &tpath))?;
    let first_pre = transcript::replay::first_applied_pre_sha256_in(&mut reader);
    let base_text = given.or_else(|| find_base(first_pre.as_deref(), &doc));
    let mut reader = locked.reader().map_err(io_err("cannot read", &tpath))?;
    let report = transcript::replay::replay_reader(&mut reader, base_text.as_deref(), &doc);
    drop(locked);
    Ok((notes, report))
}

/// Whether the locked transcript's last record removes its document.
fn ends_with_removal(locked: &mut LockedTranscript, tpath: &Path) -> Result<bool, EngineError> {
    let mut reader = locked.reader().map_err(io_err("cannot read", tpath))?;
    let found = transcript::tombstone::removal_in(&mut reader)
        .map_err(io_err("cannot read", tpath))?
        .is_some();
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn in_place() -> Options {
        let mut o = Options::new(super::super::tests::actor());
        o.write = WriteMode::InPlace;
        o
    }

    #[test]
    fn a_removal_is_recorded_then_the_document_deleted_once() {
        let dir = tempfile::tempdir().unwrap();
        let doc = dir.path().join("a.noma");
        let tpath = default_transcript_path(&doc);
        std::fs::write(&doc, "# A\n\nText.\n").unwrap();
        // A genesis record first, so the tombstone replays on its own.
        let mut o = in_place();
        o.genesis = true;
        let out = remove_file(&doc, &o).unwrap();
        assert!(out.accepted && !doc.exists());
        assert_eq!(out.records.len(), 1);
        assert_eq!(out.records[0].post_sha256, sha256_hex(b""));
        let t = std::fs::read(&tpath).unwrap();
        assert!(transcript::tombstone::removal(&t).is_some());
        // A crash after the commit leaves the empty document: a second run
        // only deletes it; a third finds nothing to do.
        std::fs::write(&doc, "").unwrap();
        for _ in 0..2 {
            let again = remove_file(&doc, &in_place()).unwrap();
            assert!(again.accepted && again.records.is_empty() && !doc.exists());
            assert_eq!(std::fs::read(&tpath).unwrap(), t);
        }
        // The tombstone replays to the absent document.
        let (_, report) = replay_file(&doc, None, None, &mut |_, _| None).unwrap();
        assert!(report.ok, "{report:?}");
    }

    #[test]
    fn an_edit_no_record_explains_is_not_removed() {
        let dir = tempfile::tempdir().unwrap();
        let doc = dir.path().join("a.noma");
        std::fs::write(&doc, "# A\n").unwrap();
        let op = serde_json::json!({"op": "x-noma/replace_lines", "line": 1, "old": "# A\n", "new": "# B\n"});
        let mut o = in_place();
        o.genesis = true;
        // Record a first state, then edit by hand.
        let first = patch_in_place(&doc, Context::default(), &[op], &o).unwrap();
        assert!(first.accepted);
        std::fs::write(&doc, "# C\n").unwrap();
        let e = remove_file(&doc, &in_place()).unwrap_err();
        assert!(e.is_check_failure(), "{e}");
        assert!(doc.exists());
        // An empty document that was never removed has nothing to record.
        std::fs::write(dir.path().join("e.noma"), "").unwrap();
        assert!(remove_file(&dir.path().join("e.noma"), &in_place()).is_err());
    }
}

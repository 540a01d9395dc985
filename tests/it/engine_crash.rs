//! Crash safety: `noma patch --inplace` processes are SIGKILLed at random
//! moments; after every kill `noma repair` (the explicit writer, which
//! finishes or undoes an interrupted request from its intent marker) must
//! leave a pair that the read-only `noma replay` verifies, and at the end
//! no applied record may be lost, duplicated or invented, and the document
//! must be what its transcript replays to.
//!
//! The kill timing comes from a seed: `NOMA_TEST_SEED` when set (to rerun a
//! failure), else the clock. The seed is printed first and in every
//! assertion message. Where the kills land varies with the seed and the
//! machine's load, so only what holds for every seed is asserted.

#![cfg(unix)]

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const BLOCKS: usize = 4;
const KILLS: usize = 200;

/// xorshift64*: enough randomness for kill timing without a dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[test]
fn sigkill_at_random_moments_never_loses_or_duplicates_a_record() {
    let bin = assert_cmd::cargo::cargo_bin("noma");
    let dir = tempfile::tempdir().unwrap();
    let doc = dir.path().join("d.noma");
    let base = dir.path().join("base.noma");
    let mut text = String::from("# Crash\n");
    for b in 0..BLOCKS {
        text.push_str(&format!("\n::claim{{id=\"c{b}\" n=0}}\nblock {b}.\n::\n"));
    }
    std::fs::write(&doc, &text).unwrap();
    std::fs::write(&base, &text).unwrap();

    let seed = seed();
    // Straight to the stderr handle, so the seed shows even when the
    // harness captures output and the run hangs.
    let _ = writeln!(std::io::stderr(), "engine_crash: NOMA_TEST_SEED={seed}");
    let mut rng = Rng(seed);
    let mut kills = 0;
    let mut completed: HashSet<u64> = HashSet::new();
    let started = Instant::now();
    let mut i: u64 = 0;
    while kills < KILLS {
        i += 1;
        assert!(
            i < 20 * KILLS as u64,
            "could not land {KILLS} kills (seed {seed})"
        );
        let op = json!({"op": "update_attribute", "id": format!("c{}", i % BLOCKS as u64), "key": "n", "value": i});
        let mut child = Command::new(&bin)
            .arg("patch")
            .arg(&doc)
            .args(["--inplace", "--format", "json", "--op"])
            .arg(op.to_string())
            // Widen the window between the transcript commit and the rename.
            .env("NOMA_TEST_PAUSE_BEFORE_RENAME_MS", rng.below(3).to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // The kill moment (not a synchronisation): anywhere in the patch's
        // life, from before it opens the files to after it exits.
        std::thread::sleep(Duration::from_micros(rng.below(14_000)));
        let _ = child.kill(); // SIGKILL on Unix
        let status = child.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        if status.signal().is_some() {
            kills += 1;
        } else {
            assert_eq!(
                status.code(),
                Some(0),
                "patch {i} failed on its own (seed {seed})"
            );
            completed.insert(i);
        }
        if !dir.path().join("d.noma.patches").exists() {
            // Killed before the transcript was even created: nothing happened.
            assert_eq!(std::fs::read_to_string(&doc).unwrap(), text);
            continue;
        }
        let repaired = Command::new(&bin).arg("repair").arg(&doc).output().unwrap();
        assert_eq!(
            repaired.status.code(),
            Some(0),
            "repair after patch {i} (seed {seed}): {}",
            String::from_utf8_lossy(&repaired.stderr)
        );
        let out = Command::new(&bin)
            .arg("replay")
            .arg(&doc)
            .arg("--base")
            .arg(&base)
            .args(["--format", "json"])
            .output()
            .unwrap();
        // Whatever recovery had to do (its messages are not asserted: they
        // belong to the engine), the pair must replay afterwards.
        assert_eq!(
            out.status.code(),
            Some(0),
            "replay after patch {i} (seed {seed}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    // Every line is a complete record; applied op_ids and values are unique.
    let raw = std::fs::read_to_string(dir.path().join("d.noma.patches")).unwrap();
    assert!(raw.ends_with('\n'));
    let mut op_ids = HashSet::new();
    let mut values = HashSet::new();
    let mut last_per_block: HashMap<String, u64> = HashMap::new();
    for line in raw.lines() {
        let r: Value = serde_json::from_str(line).unwrap();
        assert_eq!(r["patch_result"], "applied", "{r}");
        assert!(
            op_ids.insert(r["op_id"].as_str().unwrap().to_string()),
            "duplicate op_id"
        );
        let v = r["op"]["value"].as_u64().unwrap();
        assert!(
            (1..=i).contains(&v),
            "record of a patch never run: {v} (seed {seed})"
        );
        assert!(values.insert(v), "patch {v} recorded twice (seed {seed})");
        let id = r["op"]["id"].as_str().unwrap();
        assert_eq!(id, format!("c{}", v % BLOCKS as u64), "patch {v}: {r}");
        last_per_block.insert(id.to_string(), v);
    }
    for c in &completed {
        assert!(
            values.contains(c),
            "patch {c} exited 0 but its record is missing (seed {seed})"
        );
    }
    // The document holds exactly the last recorded value of each block.
    let final_text = std::fs::read_to_string(&doc).unwrap();
    for (id, v) in &last_per_block {
        assert!(
            final_text.contains(&format!("::claim{{id=\"{id}\" n={v}}}")),
            "{id} should be n={v} (seed {seed}):\n{final_text}"
        );
    }
    // Blocks no record touched still hold their initial value.
    for b in 0..BLOCKS {
        let id = format!("c{b}");
        if !last_per_block.contains_key(&id) {
            assert!(
                final_text.contains(&format!("::claim{{id=\"{id}\" n=0}}")),
                "{id} should be untouched (seed {seed}):\n{final_text}"
            );
        }
    }
    eprintln!(
        "{kills} kills, {} completed, {} records, {:?} (seed {seed})",
        completed.len(),
        op_ids.len(),
        started.elapsed()
    );
}

/// `NOMA_TEST_SEED` when set, else one from the clock (never 0, which
/// xorshift cannot leave).
fn seed() -> u64 {
    if let Ok(s) = std::env::var("NOMA_TEST_SEED") {
        return s
            .trim()
            .parse::<u64>()
            .unwrap_or_else(|e| panic!("NOMA_TEST_SEED={s:?}: {e}"))
            .max(1);
    }
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1
}

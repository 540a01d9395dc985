//! `.noma/allowed_signers` read exactly as OpenSSH reads it: generated
//! allowed-signers files (options, quoting, pattern lists with spaces and
//! negation, validity windows with and without a zone, key types
//! Ed25519, ECDSA and RSA, lines OpenSSH skips) get, for every principal
//! × key × time, the verdict `ssh-keygen -Y verify -Overify-time=` gives
//! on a machine whose zone is UTC (noma reads a time without a zone as
//! UTC whatever the machine's zone: noma runs in a zone with summer time
//! here). The seed is printed; `NOMA_SIGNERS_SEED=N` replays a run.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::common::NOMA;

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
    fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
}

const FILES: usize = 200;
/// The principals asked about.
const PRINCIPALS: &[&str] = &["p0@x", "p1@x", " p1@x"];
/// Times asked about (`-Overify-time`), some equal to window bounds.
const TIMES: &[&str] = &["20260101000000Z", "20260601Z", "202612010000"];
/// A local zone with summer time, noma's: it must not change a verdict.
const TZ: &str = "XST-5:30XDT,M3.5.0,M10.5.0";

/// One principals entry.
fn entry(rng: &mut Rng) -> String {
    let e = rng.pick(&[
        "p0@x", "p1@x", "p2@x", "*@x", "p?@x", "*", "!p1@x", "!*@x", "p*", "P0@x",
    ]);
    e.to_string()
}

/// The principals field: a pattern list, quoted or not, joined by `,` or
/// `, ` (which, unquoted, splits the field).
fn principals(rng: &mut Rng) -> String {
    let n = 1 + rng.below(3);
    let sep = if rng.chance(3) { ", " } else { "," };
    let list: Vec<String> = (0..n).map(|_| entry(rng)).collect();
    let list = list.join(sep);
    if rng.chance(3) {
        format!("\"{list}\"")
    } else {
        list
    }
}

/// A time as OpenSSH's options take it (UTC, local, or malformed).
fn time(rng: &mut Rng) -> String {
    let day = rng.pick(&[
        "20251201", "20260301", "20260601", "20260901", "20261201", "20270201",
    ]);
    let clock = rng.pick(&["", "0000", "1230", "000000", "235959"]);
    let zone = rng.pick(&["Z", "Z", "", "UTC", "z"]);
    if rng.chance(25) {
        return rng
            .pick(&["2026", "20261301Z", "2026060Z", "20260631Z", "00000000Z"])
            .into();
    }
    format!("{day}{clock}{zone}")
}

/// The options field (empty: none).
fn options(rng: &mut Rng) -> String {
    if rng.chance(2) {
        return String::new();
    }
    let n = 1 + rng.below(3);
    let mut opts = Vec::new();
    for _ in 0..n {
        let o = match rng.below(12) {
            0 => "cert-authority".into(),
            1 => format!(
                "namespaces=\"{}\"",
                rng.pick(&["noma", "git", "git,noma", "no*", "*,!noma", "file"])
            ),
            2..=4 => format!("valid-after=\"{}\"", time(rng)),
            5..=7 => format!("valid-before=\"{}\"", time(rng)),
            8 => format!("VALID-BEFORE=\"{}\"", time(rng)),
            9 => rng.pick(&["no-touch-required", "verify-required"]).into(),
            10 => rng
                .pick(&["namespaces=noma", "unknown=\"x\"", "cert-authority,"])
                .into(),
            _ => "namespaces=\"noma\"".into(),
        };
        opts.push(o);
    }
    opts.join(",")
}

/// One allowed-signers file over `keys` (public key lines).
fn file(rng: &mut Rng, keys: &[String]) -> String {
    let mut out = String::new();
    for _ in 0..1 + rng.below(5) {
        if rng.chance(8) {
            out.push_str(rng.pick(&["# a comment\n", "\n", "   \n", "  # indented\n"]));
        }
        let lead = if rng.chance(6) { " \t" } else { "" };
        let mut key = keys[rng.below(keys.len())].clone();
        if rng.chance(30) {
            key.insert(key.len() - 5, '!');
        }
        let comment = if rng.chance(3) {
            " someone's laptop"
        } else {
            ""
        };
        let opts = options(rng);
        let sep = if opts.is_empty() { "" } else { " " };
        let _ = writeln!(out, "{lead}{}{sep}{opts} {key}{comment}", principals(rng));
    }
    out
}

/// What `ssh-keygen -Y verify` says for every query of every file, run by
/// one shell: `true` = accepted.
fn ssh_keygen_verdicts(dir: &Path, files: usize, keys: usize) -> Vec<bool> {
    let mut script = String::from("set -u\n");
    for f in 0..files {
        for k in 0..keys {
            for p in PRINCIPALS {
                for t in TIMES {
                    let _ = writeln!(
                        script,
                        "ssh-keygen -Y verify -f allowed{f} -I '{p}' -n noma -s msg{k}.sig -Overify-time={t} < msg{k} >/dev/null 2>&1 && echo 1 || echo 0"
                    );
                }
            }
        }
    }
    std::fs::write(dir.join("verify.sh"), script).unwrap();
    let o = Command::new("sh")
        .arg("verify.sh")
        .current_dir(dir)
        .env("TZ", "UTC")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| l == "1")
        .collect()
}

/// What `noma provenance check-signers --verdicts` says for one file.
fn noma_verdicts(dir: &Path, f: usize, keys: &[String]) -> Vec<bool> {
    let mut queries = String::new();
    for k in keys {
        for p in PRINCIPALS {
            for t in TIMES {
                let _ = writeln!(queries, "{p}\t{t}\t{k}");
            }
        }
    }
    let mut child = Command::new(NOMA)
        .args(["provenance", "check-signers", "--verdicts", "--file"])
        .arg(format!("allowed{f}"))
        .current_dir(dir)
        .env("TZ", TZ)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(queries.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "allowed{f}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let out = String::from_utf8(o.stdout).unwrap();
    out.lines()
        .filter_map(|l| match l {
            "allowed" => Some(true),
            "refused" => Some(false),
            _ => None,
        })
        .collect()
}

#[test]
fn allowed_signers_verdicts_agree_with_ssh_keygen() {
    let seed: u64 = std::env::var("NOMA_SIGNERS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        })
        | 1;
    println!("signers differential seed: NOMA_SIGNERS_SEED={seed}");
    eprintln!("signers differential seed: NOMA_SIGNERS_SEED={seed}");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // Keys of three types (two Ed25519, so a line for one never passes
    // for the other), each signing the same message in namespace noma.
    let mut keys = Vec::new();
    for (i, (t, bits)) in [
        ("ed25519", ""),
        ("ed25519", ""),
        ("ecdsa", "256"),
        ("rsa", "2048"),
    ]
    .into_iter()
    .enumerate()
    {
        let mut args = vec!["-q", "-t", t, "-N", "", "-C", "k"];
        if !bits.is_empty() {
            args.extend(["-b", bits]);
        }
        let name = format!("key{i}");
        args.extend(["-f", &name]);
        let o = Command::new("ssh-keygen")
            .args(&args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        std::fs::write(dir.join(format!("msg{i}")), "noma differential\n").unwrap();
        let o = Command::new("ssh-keygen")
            .args(["-Y", "sign", "-n", "noma", "-f", &name, &format!("msg{i}")])
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let public = std::fs::read_to_string(dir.join(format!("{name}.pub"))).unwrap();
        // "type blob" without the comment.
        let mut parts = public.split_whitespace();
        keys.push(format!(
            "{} {}",
            parts.next().unwrap(),
            parts.next().unwrap()
        ));
    }
    let mut rng = Rng(seed);
    let texts: Vec<String> = (0..FILES).map(|_| file(&mut rng, &keys)).collect();
    for (f, t) in texts.iter().enumerate() {
        std::fs::write(dir.join(format!("allowed{f}")), t).unwrap();
    }
    let theirs = ssh_keygen_verdicts(dir, FILES, keys.len());
    let per_file = keys.len() * PRINCIPALS.len() * TIMES.len();
    assert_eq!(theirs.len(), FILES * per_file);
    let mut allowed = 0;
    let mut per_key = vec![0; keys.len()];
    for (f, text) in texts.iter().enumerate() {
        let ours = noma_verdicts(dir, f, &keys);
        assert_eq!(ours.len(), per_file, "allowed{f}:\n{text}");
        let mut q = 0;
        for (k, key) in keys.iter().enumerate() {
            for p in PRINCIPALS {
                for t in TIMES {
                    let (o, s) = (ours[q], theirs[f * per_file + q]);
                    assert_eq!(
                        o, s,
                        "seed {seed}, file {f}, principal {p:?}, key {k} ({}), time {t}: noma says {o}, ssh-keygen says {s}; the file:\n{text}",
                        key.split(' ').next().unwrap()
                    );
                    allowed += usize::from(s);
                    per_key[k] += usize::from(s);
                    q += 1;
                }
            }
        }
    }
    // The generator must reach both verdicts, for every key type.
    assert!(allowed > FILES / 4, "only {allowed} accepted verdicts");
    assert!(
        per_key.iter().all(|&n| n > 0),
        "a key type never accepted: {per_key:?}"
    );
    println!(
        "{} verdicts agree ({allowed} accepted) over {FILES} files",
        FILES * per_file
    );
}

/// `check-signers --verdicts` over `allowed` and `queries` in `dir`, under
/// the zone `tz`: the warnings and verdicts it prints.
fn verdicts_under(dir: &Path, tz: &str, queries: &str) -> String {
    let mut child = Command::new(NOMA)
        .args([
            "provenance",
            "check-signers",
            "--verdicts",
            "--file",
            "allowed",
        ])
        .current_dir(dir)
        .env("TZ", tz)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(queries.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    // 1: the file has warnings (the times without a zone), as intended.
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn validity_times_are_judged_alike_in_every_time_zone() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let o = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "k", "-f", "key"])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let public = std::fs::read_to_string(dir.join("key.pub")).unwrap();
    let key: Vec<&str> = public.split_whitespace().take(2).collect();
    let key = key.join(" ");
    // Bounds at noon on 1 June 2026, written without a zone (and one with
    // `Z`, for comparison); at that date Los Angeles is 7 hours behind UTC.
    std::fs::write(
        dir.join("allowed"),
        format!(
            "after@x namespaces=\"noma\",valid-after=\"202606011200\" {key}\n\
             before@x namespaces=\"noma\",valid-before=\"202606011200\" {key}\n\
             zoned@x namespaces=\"noma\",valid-after=\"202606011200Z\" {key}\n"
        ),
    )
    .unwrap();
    let times = [
        "20260601115959Z",
        "20260601120000Z",
        "20260601185959Z",
        "20260601190000Z",
        "202606011200",
    ];
    let mut queries = String::new();
    for p in ["after@x", "before@x", "zoned@x"] {
        for t in times {
            let _ = writeln!(queries, "{p}\t{t}\t{key}");
        }
    }
    let utc = verdicts_under(dir, "UTC", &queries);
    let la = verdicts_under(dir, "America/Los_Angeles", &queries);
    assert_eq!(utc, la, "the verdicts depend on TZ");
    let verdicts: Vec<&str> = utc
        .lines()
        .filter(|l| matches!(*l, "allowed" | "refused"))
        .collect();
    // The bound without a zone is noon UTC, as the one with `Z`.
    let (a, r) = ("allowed", "refused");
    assert_eq!(
        verdicts,
        [r, a, a, a, a, a, a, r, r, a, r, a, a, a, a],
        "{utc}"
    );
    assert!(
        utc.contains("noma reads it as UTC on every machine") && utc.contains("append Z"),
        "{utc}"
    );
}

//! What a command must show before it goes on reaches the terminal in
//! time, though every command returns its output to one printer: `noma
//! approve` asks only after the listing is shown and before it reads the
//! answer, and `noma provenance check-signers --verdicts` answers each
//! query before the next one is asked (a program may ask one at a time).
//! Each test talks to the process through pipes, writing the next input
//! only after reading what must come first; a reply that never comes fails
//! the test after a bound instead of hanging it.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::common::{assert_ran, keygen, signed_policy, Repo, NOMA};

/// How long a reply may take before the test calls it missing.
const BOUND: Duration = Duration::from_secs(60);

const DOC: &str = "# Plan\n\n::claim{id=\"c1\" confidence=0.5}\nOne.\n::\n";

/// `noma` with `args` in `r`'s work tree and environment, its three
/// streams piped.
fn spawn(r: &Repo, args: &[&str]) -> Child {
    Command::new(NOMA)
        .args(args)
        .current_dir(r.path())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", r.home.path())
        .env_remove("SSH_AUTH_SOCK")
        .env_remove("NOMA_SIGNING_KEY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The bytes `from` yields, chunk by chunk, on a channel.
fn chunks(mut from: impl Read + Send + 'static) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    rx
}

/// Reads from `rx` until what was read so far ends with `end`; what was
/// read, or a panic naming what came when nothing more comes in time.
fn read_until(rx: &mpsc::Receiver<Vec<u8>>, end: &str, what: &str) -> String {
    let mut got = Vec::new();
    while !got.ends_with(end.as_bytes()) {
        match rx.recv_timeout(BOUND) {
            Ok(chunk) => got.extend(chunk),
            Err(e) => panic!(
                "{what}: waited for {end:?} ({e:?}); got {:?}",
                String::from_utf8_lossy(&got)
            ),
        }
    }
    String::from_utf8(got).unwrap()
}

#[test]
fn approve_shows_the_listing_and_asks_before_it_reads_the_answer() {
    let r = Repo::with_genesis_record(DOC);
    let (alice, bot) = signed_policy(&r);
    r.commit_all("provenance on");
    let op = r#"{"op":"update_attribute","id":"c1","key":"confidence","value":0.9}"#;
    assert_ran(&r.sh(&format!(
        "NOMA_SIGNING_KEY='{}' noma patch plan.noma --inplace --actor-kind agent --actor-name bot --reason 'agent edit' --op '{op}'",
        bot.display()
    )));
    let mut child = spawn(
        &r,
        &["approve", "plan.noma", "--key", alice.to_str().unwrap()],
    );
    let out = chunks(child.stdout.take().unwrap());
    let err = chunks(child.stderr.take().unwrap());
    // The question comes while stdin is still open: nothing was answered.
    assert_eq!(
        read_until(&err, "approve? [y/N] ", "the question"),
        "approve? [y/N] "
    );
    let listing = read_until(&out, "\n", "the listing before the question");
    assert!(
        listing.starts_with("plan.noma: 1 agent record(s) to approve as alice@example.com:"),
        "{listing}"
    );
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"n\n").unwrap();
    drop(stdin);
    let rest = read_until(&out, "not approved\n", "the refusal after the answer");
    assert!(rest.ends_with("not approved\n"), "{rest}");
    assert_eq!(child.wait().unwrap().code(), Some(1));
}

#[test]
fn check_signers_answers_each_query_before_the_next_is_asked() {
    let r = Repo::init();
    let (_, alice_pub) = keygen(&r, "alice");
    r.write(
        ".noma/allowed_signers",
        &format!("alice@example.com namespaces=\"noma\" {alice_pub}\n"),
    );
    let mut child = spawn(&r, &["provenance", "check-signers", "--verdicts"]);
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let lines = {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            while out.read_line(&mut line).is_ok_and(|n| n > 0) {
                if tx.send(std::mem::take(&mut line)).is_err() {
                    break;
                }
            }
        });
        rx
    };
    let key = alice_pub
        .split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ");
    for (who, verdict) in [
        ("alice@example.com", "allowed\n"),
        ("mallory@example.com", "refused\n"),
    ] {
        writeln!(stdin, "{who}\t20261129120000Z\t{key}").unwrap();
        stdin.flush().unwrap();
        // The check's own lines may come first; the verdict comes before
        // the next query is written (stdin stays open meanwhile).
        loop {
            let line = lines
                .recv_timeout(BOUND)
                .unwrap_or_else(|e| panic!("no verdict for {who} while stdin is open: {e:?}"));
            if line == "allowed\n" || line == "refused\n" {
                assert_eq!(line, verdict, "{who}");
                break;
            }
        }
    }
    drop(stdin);
    assert_eq!(child.wait().unwrap().code(), Some(0));
}

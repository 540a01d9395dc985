//! `.noma/allowed_signers`, in git's and `ssh-keygen -Y verify`'s
//! allowed-signers format (ssh-keygen(1), ALLOWED SIGNERS):
//!
//! ```text
//! # principals          options            key
//! alice@example.com     namespaces="noma"  ssh-ed25519 AAAA…
//! *@agents.example      namespaces="git,noma" ssh-ed25519 AAAA… ci-bot
//! alice@example.com     valid-before="20261201Z" ssh-ed25519 AAAA… (rotated out)
//! ```
//!
//! Each line is read exactly as OpenSSH reads it ([`super::openssh`]):
//! principals are a pattern list split at commas only (`*`, `?`, `!`
//! negation wins; `"a@x, b@x"` lists `a@x` and ` b@x`, with the space);
//! a `namespaces` option limits a key to the listed namespace patterns;
//! `valid-after` / `valid-before` bound when the key may sign (inclusive,
//! in UTC, suffixed `Z` or not, on every machine); `cert-authority` lines name CA keys,
//! which never match a plain key's signature (noma does not verify
//! certificates). A line OpenSSH would skip (an unknown option such as
//! `no-touch-required`, a bad key, a bad time) noma skips too, with a
//! warning naming it: one bad line never locks the repository out.

use foldhash::HashMap;
use ssh_key::public::KeyData;
use ssh_key::PublicKey;

use super::openssh::{match_pattern_list, read_line, RawLine};
use super::sshsig::NAMESPACE;

/// Path of the file relative to the repository root.
pub const ALLOWED_SIGNERS_PATH: &str = ".noma/allowed_signers";

/// The code of an allowed-signers warning in reports.
pub const SIGNERS_WARNING: &str = "allowed-signers-warning";

/// One usable line.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Line {
    /// 1-based line number.
    number: usize,
    raw: RawLine,
}

impl Line {
    /// The key signs in namespace `noma` (no `namespaces`, or one that
    /// matches it) and is a plain key, not a CA.
    fn signs_noma(&self) -> bool {
        !self.raw.options.cert_authority
            && self
                .raw
                .options
                .namespaces
                .as_deref()
                .is_none_or(|ns| match_pattern_list(NAMESPACE, ns) == 1)
    }

    /// `at` is inside the line's validity window (`None`: the time is
    /// unknown, so only a line without a window holds).
    fn valid_at(&self, at: Option<u64>) -> bool {
        let o = &self.raw.options;
        if o.valid_after == 0 && o.valid_before == 0 {
            return true;
        }
        at.is_some_and(|t| {
            (o.valid_after == 0 || t >= o.valid_after)
                && (o.valid_before == 0 || t <= o.valid_before)
        })
    }

    /// The validity window, as text (`valid-after T and valid-before T`).
    fn window(&self) -> String {
        let o = &self.raw.options;
        let bound = |name: &str, t: u64| (t != 0).then(|| format!("{name} {}", utc_text(t)));
        let window: Vec<String> = [
            bound("valid-after", o.valid_after),
            bound("valid-before", o.valid_before),
        ]
        .into_iter()
        .flatten()
        .collect();
        window.join(" and ")
    }

    /// The positive (not negated) entries of the principals list.
    fn listed(&self) -> impl Iterator<Item = &str> {
        self.raw
            .principals
            .split(',')
            .filter(|p| !p.starts_with('!'))
    }
}

/// Something the file's owner should know about one line: it is skipped,
/// or it is read in a way that may surprise.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SignersWarning {
    /// 1-based line number (0: the file as a whole).
    pub line: usize,
    /// What is wrong and what noma does about it.
    pub message: String,
}

impl std::fmt::Display for SignersWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{ALLOWED_SIGNERS_PATH} line {}: {}",
            self.line, self.message
        )
    }
}

/// A parsed allowed-signers file: its usable lines and the warnings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowedSigners {
    lines: Vec<Line>,
    /// The lines that sign in namespace `noma`, by key, in file order:
    /// every question is about one key, so it reads only that key's lines
    /// and a check stays linear in the file's size.
    noma_lines: HashMap<KeyData, Vec<usize>>,
    warnings: Vec<SignersWarning>,
}

impl AllowedSigners {
    /// Parses the file's text. Never fails: a line OpenSSH would skip is
    /// skipped, with a warning.
    pub fn parse(text: &str) -> AllowedSigners {
        let mut out = AllowedSigners::default();
        for (i, raw) in text.split_inclusive('\n').enumerate() {
            let number = i + 1;
            let mut said = Vec::new();
            let mut warn = |message: String| {
                said.push(SignersWarning {
                    line: number,
                    message,
                })
            };
            match read_line(raw) {
                Ok(None) => {}
                Err(why) => warn(format!(
                    "skipped: {why}; ssh-keygen -Y verify and git skip this line too"
                )),
                Ok(Some(raw)) => {
                    for t in &raw.local_times {
                        warn(format!(
                            "{t} has no time zone: noma reads it as UTC on every machine, but ssh-keygen (and git) read it in their machine's local time; append Z so both judge it alike"
                        ));
                    }
                    if raw.options.cert_authority {
                        warn("a cert-authority line: noma verifies plain keys, not certificates, so this line allows no noma signature".into());
                    }
                    let line = Line { number, raw };
                    if line.signs_noma() {
                        out.noma_lines
                            .entry(line.raw.key.clone())
                            .or_default()
                            .push(out.lines.len());
                    }
                    out.lines.push(line);
                }
            }
            out.warnings.append(&mut said);
        }
        out
    }

    /// The lines listing `key` for namespace `noma` (plain keys, not CAs),
    /// in file order.
    fn noma_lines_of<'a>(&'a self, key: &KeyData) -> impl Iterator<Item = &'a Line> + Clone + 'a {
        self.noma_lines
            .get(key)
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .map(|&i| &self.lines[i])
    }

    /// What the owner of the file should know (skipped lines, local
    /// times), in line order.
    pub fn warnings(&self) -> &[SignersWarning] {
        &self.warnings
    }

    /// Whether `key` may sign for `principal` in namespace `noma` at time
    /// `at` (seconds since the epoch; `None`: unknown, so only lines with
    /// no validity window count): `ssh-keygen -Y verify -n noma -I
    /// principal -Overify-time=at`.
    pub fn allows_at(&self, principal: &str, key: &PublicKey, at: Option<u64>) -> bool {
        self.matching(principal, key).any(|l| l.valid_at(at))
    }

    /// [`Self::allows_at`] now.
    pub fn allows(&self, principal: &str, key: &PublicKey) -> bool {
        self.allows_at(principal, key, Some(now()))
    }

    /// Why `key` may not sign for `principal` at `at` although a line
    /// lists it for that principal: the line and its window. None when no
    /// line lists it (or one allows it).
    pub fn window_refusal(
        &self,
        principal: &str,
        key: &PublicKey,
        at: Option<u64>,
    ) -> Option<String> {
        if self.allows_at(principal, key, at) {
            return None;
        }
        let l = self.matching(principal, key).next()?;
        Some(format!(
            "{ALLOWED_SIGNERS_PATH} line {} lists the key for it only {}, and the record is judged at {}",
            l.number,
            l.window(),
            at.map_or("an unknown time (its ts does not parse)".into(), utc_text)
        ))
    }

    /// Why `key` has no principal to sign as at `at` although a line
    /// lists it for namespace `noma`: that line's window (None: no line
    /// lists it, or one is valid).
    pub fn outside_window(&self, key: &PublicKey, at: u64) -> Option<String> {
        let mut lines = self.noma_lines_of(key.key_data());
        if lines.clone().any(|l| l.valid_at(Some(at))) {
            return None;
        }
        let l = lines.next()?;
        Some(format!(
            "{ALLOWED_SIGNERS_PATH} line {} lists this key only {}, and it is {} now; sign with the key that replaced it",
            l.number,
            l.window(),
            utc_text(at)
        ))
    }

    /// The lines listing `key` for `principal` in namespace `noma`, any
    /// time.
    fn matching<'a>(
        &'a self,
        principal: &'a str,
        key: &'a PublicKey,
    ) -> impl Iterator<Item = &'a Line> + 'a {
        self.noma_lines_of(key.key_data())
            .filter(move |l| match_pattern_list(principal, &l.raw.principals) == 1)
    }

    /// The first principal named literally (no wildcard) for `key` with
    /// the `noma` namespace, on a line valid at `at`: who a signer with
    /// that key says it is.
    pub fn principal_of(&self, key: &PublicKey, at: u64) -> Option<String> {
        self.noma_lines_of(key.key_data())
            .filter(|l| l.valid_at(Some(at)))
            .flat_map(|l| l.listed().map(move |p| (l, p)))
            .find(|(l, p)| !p.contains(['*', '?']) && match_pattern_list(p, &l.raw.principals) == 1)
            .map(|(_, p)| p.to_string())
    }

    /// Whether a line lists `key` (for namespace `noma`, at any time) for
    /// a principal `is_agent` says is an agent's: such a key is an agent's
    /// whatever principal it signs as.
    pub fn is_agent_key(&self, key: &KeyData, is_agent: &dyn Fn(&str) -> bool) -> bool {
        self.noma_lines_of(key).any(|l| l.listed().any(is_agent))
    }

    /// One warning per key listed both for an agent principal and for
    /// another principal (a person's, or a pattern such as `*`): its
    /// records always need a person's approval, which the other listing
    /// suggests they do not.
    pub fn agent_overlaps(&self, is_agent: &dyn Fn(&str) -> bool) -> Vec<SignersWarning> {
        let mut out = Vec::new();
        // Each key once, at its first line, so the warnings come in file
        // order and the whole pass reads every line a bounded number of
        // times.
        for (i, l) in self.lines.iter().enumerate() {
            let key = &l.raw.key;
            let Some(indices) = self.noma_lines.get(key) else {
                continue;
            };
            if indices.first() != Some(&i) || !self.is_agent_key(key, is_agent) {
                continue;
            }
            let same: Vec<&Line> = indices.iter().map(|&j| &self.lines[j]).collect();
            let agents: Vec<String> = same
                .iter()
                .flat_map(|m| {
                    m.listed()
                        .filter(|p| is_agent(p))
                        .map(|p| format!("{p} (line {})", m.number))
                })
                .collect();
            let others: Vec<String> = same
                .iter()
                .flat_map(|m| {
                    m.listed()
                        .filter(|p| !is_agent(p))
                        .map(|p| format!("{p} (line {})", m.number))
                })
                .collect();
            if others.is_empty() {
                continue;
            }
            let fingerprint = PublicKey::new(key.clone(), "").fingerprint(ssh_key::HashAlg::Sha256);
            out.push(SignersWarning {
                line: same[0].number,
                message: format!(
                    "key {fingerprint} is listed for the agent principal {} and also for {}: every record it signs needs a person's approval, whatever principal it signs as; give the agent a key of its own",
                    agents.join(", "),
                    others.join(", ")
                ),
            });
        }
        out
    }

    /// Number of usable lines.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// True when no line names a key.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }
}

/// The current time in seconds since the epoch.
pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `t` as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn utc_text(t: u64) -> String {
    i64::try_from(t)
        .ok()
        .and_then(|t| time::OffsetDateTime::from_unix_timestamp(t).ok())
        .map_or_else(
            || format!("{t}s"),
            |d| {
                format!(
                    "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
                    d.year(),
                    u8::from(d.month()),
                    d.day(),
                    d.hour(),
                    d.minute(),
                    d.second()
                )
            },
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sshsig::tests::test_key;

    const OTHER: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFxZ1qvERxUWNq0OrF6nzUIAVwLIKpQj490RP58Hq0td";

    #[test]
    fn parses_git_allowed_signers_and_matches_like_ssh_keygen() {
        let k = test_key();
        let pk = k.public_openssh();
        let text = format!(
            "# comment\n\nalice@example.com namespaces=\"noma\" {pk} alice's laptop\n\"*@agents.example,!evil@agents.example\" namespaces=\"git,no*\" {pk}\ngit-only@example.com namespaces=\"git\" {pk}\nany@example.com {pk}\nca@example.com cert-authority {pk}\n\"a@x, b@x\" {pk}\n"
        );
        let s = AllowedSigners::parse(&text);
        assert_eq!(s.len(), 6);
        let key = k.public_key();
        assert!(s.allows("alice@example.com", key));
        assert!(s.allows("bot@agents.example", key));
        assert!(!s.allows("evil@agents.example", key));
        assert!(!s.allows("git-only@example.com", key));
        assert!(s.allows("any@example.com", key));
        assert!(!s.allows("ca@example.com", key));
        assert!(!s.allows("mallory@example.com", key));
        assert!(s.allows("a@x", key));
        // OpenSSH splits at commas only: the second entry is " b@x".
        assert!(!s.allows("b@x", key));
        assert_eq!(
            s.principal_of(key, now()).as_deref(),
            Some("alice@example.com")
        );
        let other = PublicKey::from_openssh(OTHER).unwrap();
        assert!(!s.allows("alice@example.com", &other));
        assert_eq!(s.principal_of(&other, now()), None);
        assert_eq!(s.warnings().len(), 1, "{:?}", s.warnings());
        assert!(s.warnings()[0].message.contains("cert-authority"));
    }

    #[test]
    fn unusable_lines_are_skipped_with_a_warning_naming_them() {
        let s = AllowedSigners::parse(&format!(
            "ok\n# c\na@b ssh-ed25519 notbase64!\nc@d no-touch-required {OTHER}\ne@f {OTHER}\n"
        ));
        assert_eq!(s.len(), 1);
        let lines: Vec<usize> = s.warnings().iter().map(|w| w.line).collect();
        assert_eq!(lines, [1, 3, 4]);
        let w = s.warnings()[2].to_string();
        assert!(
            w.starts_with(".noma/allowed_signers line 4: skipped: bad options: unknown key option"),
            "{w}"
        );
        let other = PublicKey::from_openssh(OTHER).unwrap();
        assert!(s.allows("e@f", &other));
        assert!(!s.allows("c@d", &other));
    }

    #[test]
    fn validity_windows_are_inclusive_and_need_a_time() {
        let s = AllowedSigners::parse(&format!(
            "old@x valid-before=\"20261201Z\" {OTHER}\nnew@x valid-after=\"20261201Z\" {OTHER}\n"
        ));
        let k = PublicKey::from_openssh(OTHER).unwrap();
        let dec1 = super::super::openssh::parse_absolute_time("20261201Z")
            .unwrap()
            .0;
        assert!(s.allows_at("old@x", &k, Some(dec1)));
        assert!(!s.allows_at("old@x", &k, Some(dec1 + 1)));
        assert!(s.allows_at("new@x", &k, Some(dec1)));
        assert!(!s.allows_at("new@x", &k, Some(dec1 - 1)));
        assert!(!s.allows_at("old@x", &k, None));
        let why = s.window_refusal("old@x", &k, Some(dec1 + 1)).unwrap();
        assert!(
            why.contains("line 1") && why.contains("valid-before 2026-12-01T00:00:00Z"),
            "{why}"
        );
        assert_eq!(s.window_refusal("nobody@x", &k, Some(dec1)), None);
        let s = AllowedSigners::parse(&format!("old@x valid-before=\"20261201Z\" {OTHER}\n"));
        let why = s.outside_window(&k, dec1 + 1).unwrap();
        assert!(
            why.contains("line 1 lists this key only valid-before"),
            "{why}"
        );
        assert_eq!(s.outside_window(&k, dec1), None);
    }

    /// A large file is read once and each question reads only the lines
    /// of one key: 200,000 lines (one key each, a few shared with an
    /// agent) answer at once. Scanning the file per line, as the overlap
    /// check once did, does not finish here.
    #[test]
    fn a_200000_line_file_is_checked_in_one_pass() {
        let lines = 200_000;
        let key_of = |i: u32| {
            let mut bytes = [0u8; 32];
            bytes[..4].copy_from_slice(&i.to_le_bytes());
            PublicKey::from(ssh_key::public::Ed25519PublicKey(bytes))
        };
        let mut text = String::new();
        for i in 0..lines {
            let key = key_of(i).to_openssh().unwrap();
            text.push_str(&format!("user{i}@example.com namespaces=\"noma\" {key}\n"));
            if i % 50_000 == 7 {
                text.push_str(&format!("bot{i}@agents.example {key}\n"));
            }
        }
        let s = AllowedSigners::parse(&text);
        assert_eq!(s.len(), 200_004);
        assert!(s.warnings().is_empty());
        let is_agent = |p: &str| p.ends_with("@agents.example");
        let w = s.agent_overlaps(&is_agent);
        let named: Vec<usize> = w.iter().map(|w| w.line).collect();
        assert_eq!(named, [8, 50_009, 100_010, 150_011], "{w:?}");
        let last = key_of(lines - 1);
        assert!(s.allows("user199999@example.com", &last));
        assert!(!s.allows("user0@example.com", &last));
        assert_eq!(
            s.principal_of(&key_of(50_007), now()).as_deref(),
            Some("user50007@example.com")
        );
        assert!(s.is_agent_key(key_of(100_007).key_data(), &is_agent));
        assert!(!s.is_agent_key(key_of(100_008).key_data(), &is_agent));
    }

    #[test]
    fn agent_keys_are_found_and_overlaps_named() {
        let k = PublicKey::from_openssh(OTHER).unwrap();
        let is_agent = |p: &str| p.ends_with("@agents.example");
        let s = AllowedSigners::parse(&format!(
            "bot@agents.example {OTHER}\nalice@example.com {OTHER}\n"
        ));
        assert!(s.is_agent_key(k.key_data(), &is_agent));
        let w = s.agent_overlaps(&is_agent);
        assert_eq!(w.len(), 1);
        assert!(
            w[0].message.contains("bot@agents.example (line 1)")
                && w[0].message.contains("alice@example.com (line 2)"),
            "{}",
            w[0].message
        );
        let s = AllowedSigners::parse(&format!("bot@agents.example {OTHER}\n"));
        assert!(s.agent_overlaps(&is_agent).is_empty());
        let s = AllowedSigners::parse(&format!("* {OTHER}\n"));
        assert!(!s.is_agent_key(k.key_data(), &is_agent));
        // Listed for an agent and for everyone.
        let s = AllowedSigners::parse(&format!("*@agents.example {OTHER}\n\"*,!x@y\" {OTHER}\n"));
        let w = s.agent_overlaps(&|p: &str| p.ends_with("@agents.example"));
        assert_eq!(w.len(), 1);
        assert!(
            w[0].message.contains("also for * (line 2)"),
            "{}",
            w[0].message
        );
    }
}

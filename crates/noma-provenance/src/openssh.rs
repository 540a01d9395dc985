//! How OpenSSH reads one allowed-signers line (`sshsig.c`,
//! `parse_principals_key_and_options` and `sshsigopt_parse`; `misc.c`,
//! `strdelimw` and `parse_absolute_time`; `match.c`,
//! `match_pattern_list`), step for step, so that noma trusts exactly the
//! keys `ssh-keygen -Y verify` (and so git) trusts. A line OpenSSH cannot
//! read it skips; so does noma, saying why.

use ssh_key::public::KeyData;
use ssh_key::PublicKey;

/// OpenSSH's `WHITESPACE` (misc.h).
const WS: &[u8] = b" \t\r\n";

/// The key type names `sshkey_read` knows (`peek_type_nid`): anything
/// else where a key is expected is read as options.
const KEY_TYPES: &[&str] = &[
    "ssh-ed25519",
    "ssh-rsa",
    "ssh-dss",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ecdsa-sha2-nistp256@openssh.com",
    "sk-ssh-ed25519@openssh.com",
    "ssh-ed25519-cert-v01@openssh.com",
    "ssh-rsa-cert-v01@openssh.com",
    "ssh-dss-cert-v01@openssh.com",
    "ecdsa-sha2-nistp256-cert-v01@openssh.com",
    "ecdsa-sha2-nistp384-cert-v01@openssh.com",
    "ecdsa-sha2-nistp521-cert-v01@openssh.com",
    "sk-ecdsa-sha2-nistp256-cert-v01@openssh.com",
    "sk-ssh-ed25519-cert-v01@openssh.com",
];

/// One line as OpenSSH reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct RawLine {
    /// The principals pattern list, unquoted as `strdelimw` unquotes it.
    pub principals: String,
    pub options: Options,
    pub key: KeyData,
    /// `valid-after` / `valid-before` values without `Z` or `UTC` (read
    /// as UTC, where ssh-keygen reads them in its machine's zone).
    pub local_times: Vec<String>,
}

/// The options `sshsigopt_parse` knows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Options {
    pub cert_authority: bool,
    pub namespaces: Option<String>,
    /// Seconds since the epoch; 0: none (OpenSSH refuses 0 as a time).
    pub valid_after: u64,
    pub valid_before: u64,
}

/// Why OpenSSH skips a line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum LineError {
    #[error("invalid line (no key after the principals, or an unclosed quote)")]
    NoKeyAfterPrincipals,
    #[error("invalid options (an unclosed quote)")]
    UnclosedOptions,
    #[error("missing key")]
    MissingKey,
    #[error("invalid key: {0}")]
    Key(KeyReadError),
    #[error("bad options: {0}")]
    Options(OptionsError),
}

/// Why `sshkey_read` reads no key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum KeyReadError {
    #[error("no key")]
    NoKey,
    #[error("unknown key type {0:?}")]
    UnknownType(String),
    #[error("no key data after {0}")]
    NoData(String),
    #[error("bad {kind} key: {error}")]
    Unreadable { kind: String, error: String },
    #[error("a {found} key where {named} is named")]
    OtherType { found: String, named: String },
}

/// Why `sshsigopt_parse` refuses an options field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum OptionsError {
    #[error("missing start quote")]
    MissingStartQuote,
    #[error("missing end quote")]
    MissingEndQuote,
    #[error("multiple \"{0}\" clauses")]
    Repeated(&'static str),
    #[error("invalid \"{name}\" time {value:?}")]
    InvalidTime { name: &'static str, value: String },
    #[error("unknown key option at {0:?} (OpenSSH reads cert-authority, namespaces, valid-after and valid-before here)")]
    Unknown(String),
    #[error("unexpected end-of-options")]
    UnexpectedEnd,
    #[error("\"valid-before\" time is before \"valid-after\"")]
    BeforeAfter,
}

/// Reads one line (with its `\n`, as `getline` gives it). `Ok(None)`: a
/// blank or comment line; `Err`: why OpenSSH skips it.
pub(super) fn read_line(line: &str) -> Result<Option<RawLine>, LineError> {
    let cp = line.trim_start_matches([' ', '\t']);
    if cp.starts_with('#') || cp.bytes().all(|c| WS.contains(&c)) {
        return Ok(None);
    }
    let (principals, rest) = strdelimw(cp).ok_or(LineError::NoKeyAfterPrincipals)?;
    let (opts, key) = match read_key(rest) {
        Ok(key) => ("", key),
        Err(_) => {
            let end = options_end(rest.as_bytes()).ok_or(LineError::UnclosedOptions)?;
            if end == rest.len() {
                return Err(LineError::MissingKey);
            }
            let after = rest[end + 1..].trim_start_matches([' ', '\t']);
            let key = read_key(after).map_err(LineError::Key)?;
            (&rest[..end], key)
        }
    };
    let mut local_times = Vec::new();
    let options = parse_options(opts, &mut local_times).map_err(LineError::Options)?;
    Ok(Some(RawLine {
        principals,
        options,
        key,
        local_times,
    }))
}

/// `strdelimw`: the first field, up to whitespace or through a quoted
/// run (the quotes dropped, text before the opening quote kept, text
/// after the closing one left to the next field); then the rest after
/// the whitespace. None: no delimiter at all, or an unclosed quote.
fn strdelimw(s: &str) -> Option<(String, &str)> {
    let b = s.as_bytes();
    let i = b.iter().position(|c| WS.contains(c) || *c == b'"')?;
    let ws = |c: char| c.is_ascii() && WS.contains(&(c as u8));
    if b[i] == b'"' {
        let j = i + 1 + b[i + 1..].iter().position(|&c| c == b'"')?;
        let token = format!("{}{}", &s[..i], &s[i + 1..j]);
        return Some((token, s[j + 1..].trim_start_matches(ws)));
    }
    Some((s[..i].to_string(), s[i + 1..].trim_start_matches(ws)))
}

/// `sshkey_read`: a known type name, blanks, a base64 key blob of that
/// type (whitespace inside it ignored, as `b64_pton` does).
fn read_key(s: &str) -> Result<KeyData, KeyReadError> {
    let space = s.find([' ', '\t']).ok_or(KeyReadError::NoKey)?;
    let ty = &s[..space];
    if !KEY_TYPES.contains(&ty) {
        return Err(KeyReadError::UnknownType(ty.to_string()));
    }
    let rest = s[space..].trim_start_matches([' ', '\t']);
    if rest.is_empty() {
        return Err(KeyReadError::NoData(ty.to_string()));
    }
    let blob: String = rest[..rest.find([' ', '\t']).unwrap_or(rest.len())]
        .chars()
        .filter(|c| !c.is_ascii_whitespace())
        .collect();
    let key =
        PublicKey::from_openssh(&format!("{ty} {blob}")).map_err(|e| KeyReadError::Unreadable {
            kind: ty.to_string(),
            error: e.to_string(),
        })?;
    if key.algorithm().as_str() != ty {
        return Err(KeyReadError::OtherType {
            found: key.algorithm().to_string(),
            named: ty.to_string(),
        });
    }
    Ok(key.key_data().clone())
}

/// `sshkey_advance_past_options`: where the options field ends (the first
/// blank outside double quotes; `\"` is skipped). None: an unclosed quote.
fn options_end(s: &[u8]) -> Option<usize> {
    let (mut i, mut quoted) = (0, false);
    while i < s.len() && (quoted || (s[i] != b' ' && s[i] != b'\t')) {
        if s[i] == b'\\' && s.get(i + 1) == Some(&b'"') {
            i += 1;
        } else if s[i] == b'"' {
            quoted = !quoted;
        }
        i += 1;
    }
    (!(i == s.len() && quoted)).then_some(i)
}

/// `opt_match`: `name=` at the start, case-insensitively.
fn opt_match(s: &[u8], name: &str) -> bool {
    s.len() > name.len()
        && s[..name.len()].eq_ignore_ascii_case(name.as_bytes())
        && s[name.len()] == b'='
}

/// `opt_dequote`: a double-quoted value (`\"` inside stands for `"`),
/// and the bytes it took.
fn dequote(s: &[u8]) -> Result<(String, usize), OptionsError> {
    if s.first() != Some(&b'"') {
        return Err(OptionsError::MissingStartQuote);
    }
    let (mut i, mut out) = (1, Vec::new());
    while i < s.len() && s[i] != b'"' {
        if s[i] == b'\\' && s.get(i + 1) == Some(&b'"') {
            i += 1;
        }
        out.push(s[i]);
        i += 1;
    }
    if i == s.len() {
        return Err(OptionsError::MissingEndQuote);
    }
    Ok((String::from_utf8_lossy(&out).into_owned(), i + 1))
}

/// `sshsigopt_parse`: `cert-authority`, `namespaces="…"`,
/// `valid-after="…"`, `valid-before="…"`, comma-separated; anything else
/// is an unknown option and the line is not used.
fn parse_options(opts: &str, local_times: &mut Vec<String>) -> Result<Options, OptionsError> {
    let s = opts.as_bytes();
    let mut o = Options::default();
    let mut i = 0;
    while i < s.len() && s[i] != b' ' && s[i] != b'\t' {
        const CA: &str = "cert-authority";
        if s.len() - i >= CA.len() && s[i..i + CA.len()].eq_ignore_ascii_case(CA.as_bytes()) {
            o.cert_authority = true;
            i += CA.len();
        } else if opt_match(&s[i..], "namespaces") {
            if o.namespaces.is_some() {
                return Err(OptionsError::Repeated("namespaces"));
            }
            let (v, n) = dequote(&s[i + "namespaces=".len()..])?;
            o.namespaces = Some(v);
            i += "namespaces=".len() + n;
        } else {
            for (name, slot) in [
                ("valid-after", &mut o.valid_after),
                ("valid-before", &mut o.valid_before),
            ] {
                if !opt_match(&s[i..], name) {
                    continue;
                }
                if *slot != 0 {
                    return Err(OptionsError::Repeated(name));
                }
                let (v, n) = dequote(&s[i + name.len() + 1..])?;
                match parse_absolute_time(&v) {
                    Some((t, utc)) if t != 0 => {
                        *slot = t;
                        if !utc {
                            local_times.push(format!("{name}=\"{v}\""));
                        }
                    }
                    _ => return Err(OptionsError::InvalidTime { name, value: v }),
                }
                i += name.len() + 1 + n;
                break;
            }
        }
        if i == s.len() || s[i] == b' ' || s[i] == b'\t' {
            break;
        }
        if s[i] != b',' {
            return Err(OptionsError::Unknown(
                String::from_utf8_lossy(&s[i..]).into_owned(),
            ));
        }
        i += 1;
        if i == s.len() {
            return Err(OptionsError::UnexpectedEnd);
        }
    }
    if o.valid_after != 0 && o.valid_before != 0 && o.valid_before <= o.valid_after {
        return Err(OptionsError::BeforeAfter);
    }
    Ok(o)
}

/// `parse_absolute_time`: `YYYYMMDD`, `YYYYMMDDHHMM` or `YYYYMMDDHHMMSS`,
/// with or without a `Z` (or `UTC`) suffix. Both read as UTC, on every
/// system and whatever `TZ` says: a verdict must not depend on the
/// machine that gives it (the hook on a laptop, reconcile in CI).
/// OpenSSH reads an unsuffixed time in its machine's zone, so noma
/// agrees with it where that zone is UTC and warns about such times.
/// Returns the seconds since the epoch and whether the time had its
/// suffix; None when OpenSSH refuses it.
pub fn parse_absolute_time(s: &str) -> Option<(u64, bool)> {
    let b = s.as_bytes();
    let mut l = b.len();
    let mut utc = false;
    if l > 1 && b[l - 1].eq_ignore_ascii_case(&b'z') {
        utc = true;
        l -= 1;
    } else if l > 3 && b[l - 3..].eq_ignore_ascii_case(b"utc") {
        utc = true;
        l -= 3;
    }
    if ![8, 12, 14].contains(&l) || !b[..l].iter().all(u8::is_ascii_digit) {
        return None;
    }
    let num = |from: usize, to: usize| -> i64 {
        if to > l {
            return 0;
        }
        b[from..to]
            .iter()
            .fold(0i64, |n, d| n * 10 + i64::from(d - b'0'))
    };
    let (year, month, day) = (num(0, 4), num(4, 6), num(6, 8));
    let (hour, min, sec) = (num(8, 10), num(10, 12), num(12, 14));
    // strptime's ranges (%S allows leap seconds).
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || min > 59 || sec > 61 {
        return None;
    }
    let t = days_from_civil(year, month, day) * 86_400 + hour * 3600 + min * 60 + sec;
    u64::try_from(t).ok().map(|t| (t, utc))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (days past the
/// month's end roll over, as `timegm` rolls them).
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A record's `ts` (RFC 3339, `Z` or `±HH:MM`, fraction ignored) in
/// whole seconds since the epoch, as `-Overify-time` takes it.
pub fn rfc3339_seconds(ts: &str) -> Option<u64> {
    let b = ts.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let s = std::str::from_utf8(b.get(r)?).ok()?;
        s.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| s.parse().ok())?
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if b[13] != b':' || b[16] != b':' || !(1..=12).contains(&mo) || !(1..=31).contains(&d) {
        return None;
    }
    let mut rest = &ts[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        rest = frac.trim_start_matches(|c: char| c.is_ascii_digit());
    }
    let offset = match rest.as_bytes() {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let v = num(ts.len() - 5..ts.len() - 3)? * 3600 + num(ts.len() - 2..ts.len())? * 60;
            if *sign == b'+' {
                v
            } else {
                -v
            }
        }
        _ => return None,
    };
    let t = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s - offset;
    u64::try_from(t).ok()
}

/// `match_pattern_list` (without lower-casing): 1 when a pattern matches
/// and no negated one does, -1 when a negated one matches, 0 otherwise.
/// The list is split at commas only: a space is part of a pattern.
pub fn match_pattern_list(string: &str, list: &str) -> i32 {
    let p = list.as_bytes();
    let (mut i, mut positive) = (0, false);
    while i < p.len() {
        let negated = p[i] == b'!';
        if negated {
            i += 1;
        }
        let start = i;
        while i < p.len() && i - start < 1023 && p[i] != b',' {
            i += 1;
        }
        // A pattern of 1023 bytes or more: no match at all, as OpenSSH.
        if i - start >= 1023 {
            return 0;
        }
        let sub = &p[start..i];
        if i < p.len() && p[i] == b',' {
            i += 1;
        }
        if wildcard(sub, string.as_bytes()) {
            if negated {
                return -1;
            }
            positive = true;
        }
    }
    i32::from(positive)
}

/// `match_pattern`: `*` (any run) and `?` (any one byte), iteratively.
pub fn wildcard(p: &[u8], s: &[u8]) -> bool {
    let (mut pi, mut si) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        if pi < p.len() && (p[pi] == b'?' || p[pi] == s[si]) {
            pi += 1;
            si += 1;
        } else if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, si));
            pi += 1;
        } else if let Some((sp, ss)) = star {
            pi = sp + 1;
            si = ss + 1;
            star = Some((sp, ss + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_lists_split_at_commas_only() {
        assert_eq!(match_pattern_list("b@x", "a@x, b@x"), 0);
        assert_eq!(match_pattern_list(" b@x", "a@x, b@x"), 1);
        assert_eq!(match_pattern_list("a@x", "a@x, b@x"), 1);
        assert_eq!(match_pattern_list("e@x", "*@x,!e@x"), -1);
        assert_eq!(match_pattern_list("", ",a"), 1);
        assert_eq!(match_pattern_list("!a", "!!a"), -1);
        assert_eq!(match_pattern_list("a", &"a".repeat(1023)), 0);
    }

    #[test]
    fn fields_split_as_strdelimw_splits_them() {
        assert_eq!(strdelimw("a b"), Some(("a".into(), "b")));
        assert_eq!(strdelimw("\"a, b\"  k"), Some(("a, b".into(), "k")));
        assert_eq!(strdelimw("x\"a b\"c d"), Some(("xa b".into(), "c d")));
        assert_eq!(strdelimw("\"a b"), None);
        assert_eq!(strdelimw("ab"), None);
    }

    #[test]
    fn times_read_as_openssh_reads_them() {
        assert_eq!(parse_absolute_time("19700102Z"), Some((86_400, true)));
        assert_eq!(
            parse_absolute_time("202611271230utc"),
            Some((1_795_782_600, true))
        );
        assert_eq!(
            parse_absolute_time("20261127123001Z").unwrap().0,
            1_795_782_601
        );
        for bad in ["2026112Z", "20261327Z", "2026-1-1Z", "Z", "202611271260Z"] {
            assert_eq!(parse_absolute_time(bad), None, "{bad}");
        }
        assert_eq!(
            rfc3339_seconds("2026-11-27T12:30:01.999Z"),
            Some(1_795_782_601)
        );
        assert_eq!(
            rfc3339_seconds("2026-11-27T13:30:01+01:00"),
            Some(1_795_782_601)
        );
        assert_eq!(rfc3339_seconds("yesterday"), None);
    }

    #[test]
    fn options_as_sshsigopt_parse_reads_them() {
        let mut l = Vec::new();
        let o = parse_options("CERT-AUTHORITY,namespaces=\"a,\\\"b\"", &mut l).unwrap();
        assert!(o.cert_authority);
        assert_eq!(o.namespaces.as_deref(), Some("a,\"b"));
        assert!(parse_options("no-touch-required", &mut l).is_err());
        assert!(parse_options("namespaces=noma", &mut l).is_err());
        assert!(parse_options("cert-authority,", &mut l).is_err());
        assert!(parse_options(
            "valid-after=\"20270101Z\",valid-before=\"20260101Z\"",
            &mut l
        )
        .is_err());
        let o = parse_options("valid-before=\"20270101\"", &mut l).unwrap();
        assert!(o.valid_before > 0);
        assert_eq!(l, ["valid-before=\"20270101\""]);
        // Without a zone: the same instant as with `Z`, only flagged.
        assert_eq!(o.valid_before, parse_absolute_time("20270101Z").unwrap().0);
        assert_eq!(
            parse_absolute_time("202701011230"),
            Some((parse_absolute_time("202701011230UTC").unwrap().0, false))
        );
    }
}

//! Noma's git object id: a plain value outside the `git` module, so the
//! `git2` crate stays behind it (conversions are private to the module).

use std::fmt;
use std::str::FromStr;

/// A git object id (commit or blob): a 20-byte value callers may hold,
/// compare, hash, order and print (as 40 hex digits).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Oid(git2::Oid);

impl Oid {
    /// Whether this is the all-zero id, which git writes for "no object"
    /// (a side of a diff that does not exist, a file git has not hashed).
    pub fn is_zero(self) -> bool {
        self.0.is_zero()
    }

    /// The id's bytes (20), as a content-addressed store keys it.
    pub fn as_bytes(&self) -> &[u8] {
        self.0.as_bytes()
    }

    /// The all-zero id.
    pub fn zero() -> Oid {
        Oid(git2::Oid::zero())
    }

    /// The id of 20 raw bytes (as git's index stores it); None for
    /// another length.
    #[cfg(target_os = "linux")]
    pub fn from_bytes(bytes: &[u8]) -> Option<Oid> {
        git2::Oid::from_bytes(bytes).ok().map(Oid)
    }

    /// The id of a libgit2 object.
    pub(super) fn from_raw(id: git2::Oid) -> Oid {
        Oid(id)
    }

    /// The id as libgit2 takes it.
    pub(super) fn raw(self) -> git2::Oid {
        self.0
    }
}

impl fmt::Display for Oid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl fmt::Debug for Oid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

/// A string that is not a git object id in hex.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a git object id: {0}")]
pub struct ParseOidError(String);

impl FromStr for Oid {
    type Err = ParseOidError;

    /// Parses an id from hex, as git prints it.
    fn from_str(hex: &str) -> Result<Oid, ParseOidError> {
        git2::Oid::from_str(hex)
            .map(Oid)
            .map_err(|_| ParseOidError(hex.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_prints_and_tells_zero() {
        let hex = "0123456789abcdef0123456789abcdef01234567";
        let id: Oid = hex.parse().unwrap();
        assert_eq!(id.to_string(), hex);
        assert!(!id.is_zero());
        assert!(Oid::zero().is_zero());
        assert!(Oid::zero() < id);
        assert!("not hex".parse::<Oid>().is_err());
    }
}

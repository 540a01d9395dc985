//! Where a record's `op_id` and `ts` come from. The core reads no clock
//! and no random source on its own: a caller stamps records through a
//! [`Clock`] and an [`IdSource`] it chooses — the system ones
//! ([`SystemClock`], [`RandomIds`], behind the default `std-clock`
//! feature) in the CLI and the servers, fixed ones in tests or in a host
//! (a web page) that has its own.

use std::cell::Cell;

/// A source of record timestamps.
pub trait Clock {
    /// The current time.
    fn now(&self) -> time::OffsetDateTime;
}

/// A source of record ids (`op_id`, a UUID).
pub trait IdSource {
    /// A fresh id.
    fn new_id(&self) -> uuid::Uuid;
}

/// The system clock.
#[cfg(feature = "std-clock")]
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

#[cfg(feature = "std-clock")]
impl Clock for SystemClock {
    fn now(&self) -> time::OffsetDateTime {
        time::OffsetDateTime::now_utc()
    }
}

/// Random version-4 UUIDs from the operating system's generator.
#[cfg(feature = "std-clock")]
#[derive(Debug, Clone, Copy, Default)]
pub struct RandomIds;

#[cfg(feature = "std-clock")]
impl IdSource for RandomIds {
    fn new_id(&self) -> uuid::Uuid {
        uuid::Uuid::new_v4()
    }
}

/// A clock stopped at one instant.
#[derive(Debug, Clone, Copy)]
pub struct FixedClock(pub time::OffsetDateTime);

impl Clock for FixedClock {
    fn now(&self) -> time::OffsetDateTime {
        self.0
    }
}

/// Version-4-shaped UUIDs counted up from a seed: deterministic ids for
/// tests and reproducible builds (never for records that must not collide
/// with another writer's).
#[derive(Debug, Default)]
pub struct CountingIds(Cell<u64>);

impl CountingIds {
    /// Ids starting after `seed`.
    pub fn starting_at(seed: u64) -> Self {
        CountingIds(Cell::new(seed))
    }
}

impl IdSource for CountingIds {
    fn new_id(&self) -> uuid::Uuid {
        let n = self.0.get().wrapping_add(1);
        self.0.set(n);
        uuid::Builder::from_random_bytes(u128::from(n).to_be_bytes()).into_uuid()
    }
}

/// A record's `(op_id, ts)` from `ids` and `clock`, in the wire forms.
pub fn stamp(ids: &dyn IdSource, clock: &dyn Clock) -> (String, String) {
    (ids.new_id().to_string(), super::format_ts(clock.now()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caller_supplied_stamps_are_deterministic_and_well_formed() {
        let clock = FixedClock(time::OffsetDateTime::from_unix_timestamp(1_767_225_600).unwrap());
        let ids = CountingIds::starting_at(0);
        let (a, ts) = stamp(&ids, &clock);
        let (b, _) = stamp(&ids, &clock);
        assert_eq!(ts, "2026-01-01T00:00:00.000Z");
        assert_eq!(a, "00000000-0000-4000-8000-000000000001");
        assert_ne!(a, b);
        let parsed = uuid::Uuid::parse_str(&b).unwrap();
        assert_eq!(parsed.get_version_num(), 4);
        assert_eq!(stamp(&CountingIds::starting_at(0), &clock).0, a);
    }
}

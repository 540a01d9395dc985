//! The synthetic document generator is bench machinery (`examples/synth.rs`),
//! not a command of the shipped binary.

use std::process::Command;

use crate::common::NOMA;

#[test]
fn the_binary_has_no_synth_subcommand() {
    for args in [&["synth", "1"][..], &["synth", "--sections", "1"]] {
        let o = Command::new(NOMA).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("unrecognized subcommand 'synth'"),
            "{args:?}: {err}"
        );
        assert!(o.stdout.is_empty(), "{args:?} printed a document");
    }
}

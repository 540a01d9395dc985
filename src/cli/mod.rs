//! The command line (in progress).

/// Runs the CLI; returns the exit code.
pub fn main() -> i32 {
    0
}

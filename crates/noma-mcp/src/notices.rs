//! Where the server's messages for people go. Its stdout is the protocol
//! and a library never prints, so the binary hands in a sink (`noma mcp`
//! prints each message on stderr) and the server only says what happened.

use std::fmt;
use std::sync::Arc;

/// A sink for the server's notices: a dropped input line, a cache rebuilt,
/// a missing file-system watcher, a recovered interrupted write.
#[derive(Clone)]
pub struct Notices(Arc<dyn Fn(&str) + Send + Sync>);

impl Notices {
    /// Notices handed to `sink`, one message per call, without a prefix.
    pub fn new(sink: impl Fn(&str) + Send + Sync + 'static) -> Notices {
        Notices(Arc::new(sink))
    }

    /// Notices that go nowhere (tests, embedders that log elsewhere).
    pub fn discard() -> Notices {
        Notices::new(|_| {})
    }

    /// Passes one message on.
    pub fn say(&self, message: &str) {
        (self.0)(message)
    }
}

impl Default for Notices {
    fn default() -> Notices {
        Notices::discard()
    }
}

impl fmt::Debug for Notices {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Notices")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn every_message_reaches_the_sink_in_order() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let keep = seen.clone();
        let n = Notices::new(move |m| keep.lock().unwrap().push(m.to_owned()));
        n.clone().say("one");
        n.say("two");
        Notices::discard().say("nowhere");
        assert_eq!(*seen.lock().unwrap(), ["one", "two"]);
    }
}

//! Hook installation and the hook checks (in progress).

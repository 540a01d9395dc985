//! Repository layout: discovery, hooks directory resolution (core.hooksPath,
//! linked worktrees, bare GIT_DIR layouts).

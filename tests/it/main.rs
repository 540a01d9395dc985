//! The integration tests, linked into one binary (`it`): one module per
//! former test crate, sharing `common`.

mod common;

mod action_release;
mod action_steps;
mod architecture;
mod bad_input;
mod cache_cli;
mod chainless;
mod changed_cli;
mod changed_rename;
mod clone_driver;
// The watcher runs on Linux only (inotify).
#[cfg(target_os = "linux")]
mod changed_watch;
mod converge_props;
mod e2e_init;
mod engine_concurrency;
mod engine_crash;
mod github_update;
mod hook_append;
mod hook_git;
mod hooks_cli;
mod init_cli;
mod integrity;
mod mcp_envelopes;
mod mcp_protocol;
mod mcp_read_doc;
mod mcp_sdk_py;
mod mcp_stdio;
mod merge_everyday;
mod merge_git;
mod merge_props;
mod patch_placement;
mod patch_props;
mod patch_reference_conformance;
mod patch_refusals;
mod path_changes;
mod provenance_approvals;
mod provenance_git;
mod provenance_range;
mod provenance_removal;
mod readme;
mod readme_walkthrough;
mod reconcile_cli;
mod reconcile_markdown;
mod reconcile_replay_props;
mod record_narrow;
mod reference_docs;
mod signers_differential;
mod signers_rotation;
mod tamper_props;
mod transcript_cli;
mod transcript_props;
mod ux_fixes;
mod verify_cli;
mod wheel;
mod workflow_branches;
mod workflow_changed;
mod workflow_hook_findings;
mod workflow_husky;
mod workflow_line_endings;
mod workflow_record;
mod workflow_replay_rev;
mod write_containment;

//! The codes the patch engine gives a record's own diagnostics, told apart
//! from the validator's rules that a record also carries (§4.3 puts both in
//! one `diagnostics` list, as strings): callers that word a refusal or a
//! report ask which kind a diagnostic is here rather than by its spelling.

use crate::diag::Diagnostic;
use crate::patch::PatchErrorCode;

use super::capability::ADVISORY_CODE;
use super::diagnostic_delta::UNCHANGED_DIAGNOSTICS;

/// A diagnostic code the engine itself writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineCode {
    /// An op's §3.5 refusal.
    Patch(PatchErrorCode),
    /// The caller prepared the request against another state (§3.4).
    BaseShaDrift,
    /// An op outside the writer's advisory capability.
    CapabilityNotGranted,
    /// The count of the validator's findings a request left as they were.
    UnchangedDiagnostics,
}

impl EngineCode {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            EngineCode::Patch(c) => c.as_str(),
            EngineCode::BaseShaDrift => "base_sha_drift",
            EngineCode::CapabilityNotGranted => ADVISORY_CODE,
            EngineCode::UnchangedDiagnostics => UNCHANGED_DIAGNOSTICS,
        }
    }

    /// The engine code a wire spelling names; `None` for a validator rule
    /// (or a code another implementation wrote).
    pub fn from_wire(code: &str) -> Option<EngineCode> {
        if let Some(c) = PatchErrorCode::from_wire(code) {
            return Some(EngineCode::Patch(c));
        }
        [
            EngineCode::BaseShaDrift,
            EngineCode::CapabilityNotGranted,
            EngineCode::UnchangedDiagnostics,
        ]
        .into_iter()
        .find(|c| c.as_str() == code)
    }

    /// The engine code of `d`, if the engine wrote it.
    pub fn of(d: &Diagnostic) -> Option<EngineCode> {
        EngineCode::from_wire(&d.code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_codes_round_trip_and_rules_are_not_engine_codes() {
        for c in PatchErrorCode::ALL {
            let e = EngineCode::Patch(c);
            assert_eq!(EngineCode::from_wire(e.as_str()), Some(e));
        }
        for e in [
            EngineCode::BaseShaDrift,
            EngineCode::CapabilityNotGranted,
            EngineCode::UnchangedDiagnostics,
        ] {
            assert_eq!(EngineCode::from_wire(e.as_str()), Some(e));
        }
        for rule in ["unrecorded-edit", "duplicate-id", "some_unknown_code", ""] {
            assert_eq!(EngineCode::from_wire(rule), None, "{rule}");
        }
    }
}

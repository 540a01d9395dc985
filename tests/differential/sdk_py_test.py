"""The reference Python agent SDK (`noma_agent_sdk`) against `noma mcp`:
a basic read / validate / patch round trip in a temporary git repository.

Run by tests/differential/sdk_py.sh (or `pytest tests/differential/sdk_py_test.py`
with NOMA pointing at the binary). Skips when the SDK, the binary or git is
not available. Optional; never run in CI.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

sdk = pytest.importorskip("noma_agent_sdk", reason="the Python agent SDK is not installed")
from noma_agent_sdk import (  # noqa: E402
    NomaSystemError,
    NomaTools,
    PatchFailure,
    PatchOptions,
    PatchSuccess,
    StdioMcpClientOptions,
)
from noma_agent_sdk.types import TranscriptRecord  # noqa: E402

pytestmark = pytest.mark.asyncio

try:
    from importlib.metadata import version as _version

    _MCP_MAJOR = int(_version("mcp").split(".")[0])
except Exception:  # pragma: no cover - metadata missing
    _MCP_MAJOR = 1

DOC = (
    "---\ntitle: Round trip\n---\n"
    "# Plan {id=\"plan\"}\n\nSome prose.\n\n"
    "::claim{id=\"c1\" confidence=0.5}\nThe sky is blue.\n::\n\n"
    "::evidence{id=\"e1\" for=\"c1\"}\nLooked up.\n::\n"
)


def _noma() -> str:
    noma = os.environ.get("NOMA")
    if not noma:
        root = Path(__file__).resolve().parents[2]
        target = Path(os.environ.get("CARGO_TARGET_DIR", root / "target"))
        noma = str(target / "debug" / "noma")
    if not os.access(noma, os.X_OK):
        pytest.skip(f"no noma binary at {noma} (set NOMA or cargo build)")
    return noma


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git not on PATH")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "doc.noma").write_text(DOC, encoding="utf-8")
    return tmp_path


def _options(root: Path) -> StdioMcpClientOptions:
    # The SDK parses the text content as JSON, which every result's text is.
    return StdioMcpClientOptions(command=_noma(), args=["mcp", "--root", str(root)])


def _block(blocks, block_id: str):
    found = [b for b in blocks if b.id == block_id]
    assert found, f"{block_id} not in {[b.id for b in blocks]}"
    return found[0]


async def test_read_validate_patch_round_trip(repo: Path) -> None:
    doc = repo / "doc.noma"
    tools = await NomaTools.spawn(_options(repo))
    try:
        read = await tools.read_doc(str(doc))
        claim = _block(read.blocks, "c1")
        assert claim.type == "directive" and claim.name == "claim" and claim.patchable
        assert claim.lines[0] == 8, claim.lines
        base_hash = claim.model_extra.get("hash")
        assert isinstance(base_hash, str) and base_hash, claim

        ids = await tools.list_ids(str(doc))
        assert {"plan", "c1", "e1"} <= set(ids.ids)

        valid = await tools.validate_doc(str(doc))
        assert valid.ok is True, valid.diagnostics

        # A patch guarded by the block's hash applies and is recorded.
        res = await tools.patch_block(
            str(doc),
            {"op": "update_attribute", "id": "c1", "key": "confidence", "value": 0.9,
             "baseHash": base_hash},
            PatchOptions(reason="raise confidence"),
        )
        assert isinstance(res, PatchSuccess), res
        assert res.post_validation == "ok"
        entry = res.transcript_entry
        assert entry.op["op"] == "update_attribute"
        assert entry.patch_result == "applied"
        assert isinstance(entry.elapsed_ms, int)
        assert entry.reason == "raise confidence"
        text = doc.read_text(encoding="utf-8")
        assert 'confidence=0.9' in text and 'confidence=0.5' not in text

        # The same (now stale) hash is refused with its §3.5 code.
        stale = await tools.patch_block(
            str(doc),
            {"op": "replace_body", "id": "c1", "content": "Changed.", "baseHash": base_hash},
        )
        assert isinstance(stale, PatchFailure), stale
        assert stale.code == "sha_mismatch", stale
        missing = await tools.patch_block(
            str(doc), {"op": "replace_body", "id": "nope", "content": "x"}
        )
        assert isinstance(missing, PatchFailure) and missing.code == "target_missing", missing

        # A fresh read gives the new hash; a body replacement with it applies.
        fresh = _block((await tools.read_doc(str(doc))).blocks, "c1")
        assert fresh.model_extra["hash"] != base_hash
        res = await tools.patch_block(
            str(doc),
            {"op": "replace_body", "id": "c1", "content": "The sky is mostly blue.",
             "baseHash": fresh.model_extra["hash"]},
        )
        assert isinstance(res, PatchSuccess), res
        assert "The sky is mostly blue." in doc.read_text(encoding="utf-8")
        assert (await tools.validate_doc(str(doc))).ok is True

        # Every transcript line reads as the SDK's TranscriptRecord.
        lines = (repo / "doc.noma.patches").read_text(encoding="utf-8").splitlines()
        raws = [json.loads(line) for line in lines]
        records = [TranscriptRecord.model_validate(raw) for raw in raws]
        # noma records refused ops too, as `rejected`; and an uncommitted
        # document's first patch opens the transcript with noma's own genesis
        # record (decision `genesis-on-first-patch`), written by the tool.
        genesis = [raw for raw in raws if raw["actor"].get("kind") == "tool"]
        assert raws.index(genesis[0]) == 0 if genesis else True
        assert [g["op"]["op"] for g in genesis] in ([], ["x-noma/replace_lines"])
        applied = [
            r for r, raw in zip(records, raws)
            if r.patch_result == "applied" and raw["actor"].get("kind") != "tool"
        ]
        assert [r.op["op"] for r in applied] == ["update_attribute", "replace_body"]
        assert applied[1].pre_sha256 == applied[0].post_sha256
        assert all(r.patch_result in ("applied", "rejected") for r in records)

        # A path outside the workspace is a system error (`isError: true`).
        # The SDK reads `isError` by its mcp 1.x attribute name; mcp 2 calls
        # it `is_error`, so under mcp 2 the SDK cannot see any system error.
        if _MCP_MAJOR < 2:
            with pytest.raises(NomaSystemError):
                await tools.read_doc("/no/such/file.noma")
    finally:
        await tools.close()

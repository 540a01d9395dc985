"""Every `noma mcp` tool through the official MCP Python SDK client (`mcp`).

    python3 tests/mcp_sdk/check_tools.py <noma binary> <repository>

The repository (a git work tree on a branch `work` whose `main` holds
`a.noma`, with `a.noma` edited since) is prepared by tests/it/mcp_sdk_py.rs,
which runs this script. The SDK's ClientSession validates every non-error
result's `structuredContent` against the tool's `outputSchema` (it raises
otherwise); this script also validates the error results against it, checks
that the text content is the body as JSON (parsed as the reference's agent
SDKs parse it) and equal to `structuredContent` where there is one: every
tool but `read_doc`, which declares no output schema and answers its JSON
text once, a big document's (`big.noma`, written here) included; and checks
each tool's title and annotations. Every tool is called at least once, on success and on
failure paths. Exit 0 when all holds; an assertion error otherwise.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import jsonschema
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

READ_ONLY = {
    "read_doc",
    "list_ids",
    "validate_doc",
    "transcript_read",
    "describe_capabilities",
    "block_history",
    "list_changed_docs",
    "get_changed_blocks",
}
# Tools that answer with JSON text only, declaring no output schema.
TEXT_ONLY = {"read_doc"}
DESTRUCTIVE = {"patch_block", "patch_block_list", "clear_cache", "snapshot_state"}


def closed(schema):
    """`schema` with `additionalProperties: false` on every object that
    declares properties: a body that validates against it sends nothing
    its output schema does not name (the served schemas stay open)."""
    if isinstance(schema, list):
        return [closed(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: closed(v) if k in ("items", "anyOf", "oneOf") else v for k, v in schema.items()}
    if "properties" in schema:
        out["properties"] = {k: closed(v) for k, v in schema["properties"].items()}
        out.setdefault("additionalProperties", False)
    return out


def typed(at: str, schema: dict) -> None:
    """Every member an output schema declares has a type (or an enum)."""
    for key, sub in schema.get("properties", {}).items():
        assert "type" in sub or "enum" in sub, f"{at}.{key}: untyped"
        typed(f"{at}.{key}", sub)
        if sub.get("type") == "array":
            assert "type" in sub["items"], f"{at}.{key}: untyped items"
            typed(f"{at}.{key}[]", sub["items"])


def wire(model) -> dict:
    """The model as it was on the wire (camelCase keys), whatever the SDK version."""
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


async def main(noma: str, root: str) -> None:
    params = StdioServerParameters(command=noma, args=["mcp", "--root", root], cwd=root)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = wire(await session.initialize())
            print("negotiated", init["protocolVersion"])
            tools = {t["name"]: t for t in (wire(t) for t in (await session.list_tools()).tools)}
            assert len(tools) == 13, sorted(tools)
            for name, t in tools.items():
                assert t.get("title"), f"{name}: no title"
                hints = t.get("annotations")
                assert hints, f"{name}: no annotations"
                assert hints.get("readOnlyHint", False) == (name in READ_ONLY), (name, hints)
                assert hints.get("openWorldHint") is False, (name, hints)
                if name not in READ_ONLY:
                    assert hints.get("destructiveHint", True) == (name in DESTRUCTIVE), (name, hints)
                out = t.get("outputSchema")
                if name in TEXT_ONLY:
                    assert out is None, f"{name}: {out}"
                    continue
                assert out and out.get("type") == "object", f"{name}: {out}"
                assert out.get("properties"), f"{name}: output schema declares no properties"
                typed(name, out)
                jsonschema.validators.validator_for(out).check_schema(out)
                jsonschema.validators.validator_for(t["inputSchema"]).check_schema(t["inputSchema"])

            called: dict[str, set[bool]] = {}

            async def call(name: str, args: dict, *, error: bool) -> dict:
                # The SDK raises here when a non-error result's structured
                # content is missing or does not match the output schema.
                result = wire(await session.call_tool(name, args))
                is_error = result.get("isError", False)
                assert is_error == error, (name, args, result)
                # The text is the body, as the reference's agent SDKs read it.
                assert len(result["content"]) == 1, (name, result)
                body = json.loads(result["content"][0]["text"])
                assert isinstance(body, dict), (name, result)
                if name in TEXT_ONLY:
                    assert "structuredContent" not in result, (name, result)
                else:
                    assert result.get("structuredContent") == body, (name, result)
                    # Error results too match the schema (the SDK skips those),
                    # and every body names only members the schema declares.
                    jsonschema.validate(body, closed(tools[name]["outputSchema"]))
                called.setdefault(name, set()).add(is_error)
                return body

            doc = {"file": "a.noma"}
            read = await call("read_doc", doc, error=False)
            assert read["unrecorded_edit"] is None, read
            c1 = next(b for b in read["blocks"] if b.get("id") == "c1")
            await call("list_ids", doc, error=False)
            await call("validate_doc", doc, error=False)
            op = {"op": "update_attribute", "id": "c1", "key": "confidence", "value": 0.9, "baseHash": c1["hash"]}
            done = await call("patch_block", {**doc, "op": op}, error=False)
            assert done["ok"] is True, done
            # A refusal is a normal result whose body matches the schema.
            refused = await call("patch_block", {**doc, "op": {"op": "delete_block", "id": "nope"}}, error=False)
            assert refused["ok"] is False and refused["code"] == "target_missing", refused
            ops = [{"op": "update_attribute", "id": "c1", "key": "reviewed", "value": True}]
            assert (await call("patch_block_list", {**doc, "ops": ops}, error=False))["ok"] is True
            # patch_block_list declares the metadata it shares with
            # patch_block, and accepts all of it.
            pbl = tools["patch_block_list"]["inputSchema"]["properties"]
            meta = ("actor", "reason", "expected_sha", "base_sha256", "parent_op_id")
            for key in meta:
                assert pbl[key] == tools["patch_block"]["inputSchema"]["properties"][key], key
            print("patch_block_list arguments:", ", ".join(sorted(pbl)))
            sha = (await call("read_doc", doc, error=False))["sha256"]
            full = {
                "actor": {"kind": "agent", "name": "sdk-test", "model": "m", "version": "1"},
                "reason": "all metadata",
                "expected_sha": sha,
                "base_sha256": sha,
            }
            first = await call("patch_block_list", {**doc, "ops": ops, **full}, error=False)
            assert first["transcript_entries"][0]["actor"]["name"] == "sdk-test", first
            parent = first["transcript_entries"][0]["op_id"]
            ops2 = [{"op": "update_attribute", "id": "c1", "key": "reviewed", "value": False}]
            child = await call("patch_block_list", {**doc, "ops": ops2, "parent_op_id": parent}, error=False)
            assert child["transcript_entries"][0]["parent_op_id"] == parent, child
            # One hash for a whole list is refused, not ignored: each op
            # carries its own baseHash.
            await call("patch_block_list", {**doc, "ops": ops2, "base_hash": "0" * 64}, error=True)
            bad = await call("patch_block_list", {**doc, "ops": [{"op": "delete_block", "id": "nope"}]}, error=False)
            assert bad["op_index"] == 0, bad
            # An argument the schema does not name is refused with the one
            # it most likely meant, never ignored (a precondition under a
            # wrong key would let a stale patch apply); a bound is enforced.
            stale = {"op": "update_attribute", "id": "c1", "key": "confidence", "value": 0.1}
            wrong = await call("patch_block", {**doc, "op": stale, "baseHash": "0" * 64}, error=True)
            assert "`baseHash`" in json.dumps(wrong) and "`base_hash`" in json.dumps(wrong), wrong
            zero = await call("transcript_read", {**doc, "limit": 0}, error=True)
            assert "minimum" in json.dumps(zero), zero
            await call("transcript_read", {**doc, "limit": 2}, error=False)
            await call("transcript_read", {**doc, "after_op_id": "unknown"}, error=True)
            await call("describe_capabilities", doc, error=False)
            # Why c1 is as it is: the records above, newest first, bounded.
            history = await call("block_history", {**doc, "id": "c1", "limit": 2}, error=False)
            assert history["truncated"] is True and len(history["changes"]) == 2, history
            assert history["changes"][0]["op_id"] == child["transcript_entries"][0]["op_id"], history
            assert history["changes"][0]["actor"].startswith("agent "), history
            assert {"id": "c1", "change": "changed"} in history["changes"][0]["blocks"], history
            await call("block_history", {**doc, "id": "nope"}, error=True)
            await call("block_history", {**doc, "id": "c1", "limit": 101}, error=True)
            # System errors: a path outside the repository, a book manifest.
            await call("read_doc", {"file": "../outside.noma"}, error=True)
            await call("validate_doc", {"file": "book.noma.yml"}, error=True)
            await call("list_ids", {"file": "missing.noma"}, error=True)
            await call("describe_capabilities", {"file": "book.noma.yml"}, error=True)

            changed = await call("list_changed_docs", {"base_branch": "main"}, error=False)
            assert [d["path"] for d in changed["docs"]] == ["a.noma"], changed
            await call("list_changed_docs", {"base_branch": "no-such-branch"}, error=True)
            blocks = await call("get_changed_blocks", {"base_branch": "main"}, error=False)
            assert blocks["docs"][0]["blocks"], blocks
            # c1 moved under another section and was edited: both are said.
            c1_change = next(b for b in blocks["docs"][0]["blocks"] if b["id"] == "c1")
            assert c1_change["change"] == "moved" and c1_change.get("modified") is True, c1_change
            await call("get_changed_blocks", {"base_branch": "no-such-branch"}, error=True)
            await call("mark_reconciled", {"files": ["a.noma"], "base_branch": "main"}, error=False)
            await call("mark_reconciled", {"files": ["../x.noma"]}, error=True)
            await call("mark_reconciled", {"files": ["missing.noma"]}, error=True)
            await call("clear_cache", {}, error=False)
            await call("snapshot_state", {}, error=False)

            missing = set(tools) - set(called)
            assert not missing, f"tools never called: {sorted(missing)}"
            # The noma-only tools' failures were exercised as tool errors.
            for name in ("transcript_read", "block_history", "list_changed_docs", "get_changed_blocks", "mark_reconciled"):
                assert True in called[name], name
            # A big body is read from its text, in full.
            sections = "".join(f"## Part {i} {{id=\"p{i}\"}}\n\nText {i}.\n\n" for i in range(200))
            (Path(root) / "big.noma").write_text(f"# Big {{id=\"big\"}}\n\n{sections}", encoding="utf-8")
            big = await call("read_doc", {"file": "big.noma"}, error=False)
            assert len(big["blocks"]) > 200, big
            print(f"ok: {len(tools)} tools, {sum(len(v) for v in called.values())} outcome kinds checked")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))

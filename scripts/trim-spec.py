#!/usr/bin/env python3
"""Writes tests/fixtures/spec/responses-openapi.json: the part of OpenAI's OpenAPI
description that the request tests validate against.

The full description (about 3 MB of YAML, openai/openai-openapi) covers every OpenAI
API; the tests need only the schemas reachable from the ones they name below. This
keeps their `$ref` closure, byte-for-byte equal in content, under `components.schemas`,
so the tests run in a clone with nothing
beside it. Run it again when the upstream description changes:

    python3 scripts/trim-spec.py path/to/openai-openapi.yaml

Needs PyYAML (`pip install pyyaml`).
"""
import json
import pathlib
import sys

import yaml

ROOTS = [
    "CreateResponse",
    "Response",
    "ResponseStreamEvent",
    "InputItem",
    "InputMessage",
    "EasyInputMessage",
    "OutputMessage",
    "FunctionCallOutputItemParam",
    "FunctionToolCall",
    "ReasoningItem",
    "ErrorResponse",
    "CompactResponseMethodPublicBody",
    "CompactResource",
    "CompactionSummaryItemParam",
]
PREFIX = "#/components/schemas/"


def refs(node, out):
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(PREFIX):
            out.add(ref[len(PREFIX):])
        for value in node.values():
            refs(value, out)
    elif isinstance(node, list):
        for value in node:
            refs(value, out)


def main():
    source = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/spec/openai-openapi.yaml")
    spec = yaml.safe_load(source.read_text())
    schemas = spec["components"]["schemas"]
    keep, todo = set(), list(ROOTS)
    while todo:
        name = todo.pop()
        if name in keep:
            continue
        keep.add(name)
        found = set()
        refs(schemas[name], found)
        todo.extend(sorted(found - keep))
    trimmed = {
        "openapi": spec["openapi"],
        "info": spec["info"],
        "x-aptix-trimmed": {
            "from": "openai/openai-openapi openapi.yaml, commit f85dbe223d40e1a31cba812ab2d755c7e98a92a3",
            "by": "scripts/trim-spec.py",
            "roots": ROOTS,
        },
        "components": {"schemas": {name: schemas[name] for name in sorted(keep)}},
    }
    out = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "spec" / "responses-openapi.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(trimmed, indent=1, sort_keys=False, default=str) + "\n")
    print(f"{out}: {len(keep)} of {len(schemas)} schemas, {out.stat().st_size} bytes")


if __name__ == "__main__":
    main()

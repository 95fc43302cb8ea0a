"""``pipeproof check --json`` against its schema (``spec/check-result.schema.json``):
every verdict kind, from the CLI and the Python API, validates; ``bounded`` says what
the schema says (a bound only for SAFE), ``peak_mb`` is measured.

The validator below covers the part of JSON Schema the file uses (type, enum, required,
properties, items, minItems/maxItems, minimum); it refuses any other keyword, so the
schema cannot grow a rule this test silently ignores."""

from __future__ import annotations

import json
import os

import pytest

from pipeproof.api import check_file
from pipeproof.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA = json.load(open(os.path.join(ROOT, "spec", "check-result.schema.json")))
KNOWN = {"$schema", "$id", "title", "description", "type", "enum", "required", "properties",
         "items", "minItems", "maxItems", "minimum"}
TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None),
         "integer": int, "number": (int, float)}


def validate(value, schema, path="$"):
    unknown = set(schema) - KNOWN
    assert not unknown, f"{path}: schema keyword(s) this validator does not know: {unknown}"
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        ok = any(isinstance(value, TYPES[t]) and not (t in ("integer", "number") and
                                                      isinstance(value, bool))
                 for t in types)
        assert ok, f"{path}: {value!r} is not {types}"
    if "enum" in schema:
        assert value in schema["enum"], f"{path}: {value!r} not in {schema['enum']}"
    if isinstance(value, (int, float)) and not isinstance(value, bool) and "minimum" in schema:
        assert value >= schema["minimum"], f"{path}: {value} < {schema['minimum']}"
    if isinstance(value, dict):
        for k in schema.get("required", ()):
            assert k in value, f"{path}: missing {k}"
        for k, sub in schema.get("properties", {}).items():
            if k in value:
                validate(value[k], sub, f"{path}.{k}")
    if isinstance(value, list):
        assert len(value) >= schema.get("minItems", 0), f"{path}: too few items"
        assert len(value) <= schema.get("maxItems", len(value)), f"{path}: too many items"
        for i, item in enumerate(value):
            if "items" in schema:
                validate(item, schema["items"], f"{path}[{i}]")


def test_the_validator_rejects():
    with pytest.raises(AssertionError):
        validate({"status": "MAYBE"}, SCHEMA)
    good = json.loads(json.dumps(check_file(os.path.join(ROOT, "examples", "bugs", "p1-bug.pipe"),
                                            engine="explicit", max_states=200_000).to_json()))
    validate(good, SCHEMA)
    bad = dict(good, bounded="yes")
    with pytest.raises(AssertionError, match="bounded"):
        validate(bad, SCHEMA)
    worse = json.loads(json.dumps(good))
    worse["trace"]["events"][0]["changes"] = [{"barrier": "x"}]
    with pytest.raises(AssertionError, match="missing"):
        validate(worse, SCHEMA)


@pytest.mark.parametrize("file,status,bounded", [
    ("examples/bugs/p1-bug.pipe", "VIOLATED", None),
    ("examples/bugs/p1-fixed.pipe", None, None),
])
def test_cli_json_validates(capsys, file, status, bounded):
    rc = main(["check", os.path.join(ROOT, file), "--json", "--engine", "explicit",
               "--max-states", "200000"])
    out = json.loads(capsys.readouterr().out)
    validate(out, SCHEMA)
    assert rc == {"VIOLATED": 1, "SAFE": 0, "PROVEN": 0, "UNKNOWN": 3}[out["status"]]
    if status:
        assert out["status"] == status
    if out["status"] == "VIOLATED":
        assert out["bounded"] is None and out["trace"] is not None
    elif out["status"] == "UNKNOWN":
        assert out["bounded"] is None
    elif out["status"] == "PROVEN":
        assert out["bounded"] is False
    else:
        assert isinstance(out["bounded"], bool)
    assert out["stats"]["peak_mb"] > 0  # measured (Linux getrusage)


def test_bounded_safe_validates():
    r = check_file(os.path.join(ROOT, "examples", "bugs", "p1-fixed.pipe"), engine="bmc",
                   depth=6, bmc_certificate=False)
    d = json.loads(json.dumps(r.to_json()))
    validate(d, SCHEMA)
    # plain unrolling to depth 6, no certificate: a bounded SAFE, never more
    assert d["status"] == "SAFE" and d["bounded"] is True and d["depth"] == 6

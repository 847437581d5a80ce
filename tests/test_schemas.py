"""kcm's own JSON schemas are valid schemas: the validators built from them at run time do not check that."""

from __future__ import annotations

import json
from importlib import resources

import pytest
from jsonschema.exceptions import SchemaError
from kcm.checkers.oracle import oracle_trace
from kcm.model import strictjson

SCHEMAS = sorted(p.name for p in resources.files("kcm.specs").iterdir() if p.name.endswith(".schema.json"))


def test_every_schema_is_shipped():
    assert {"config.schema.json", "scenario.schema.json", "trace.schema.json"} <= set(SCHEMAS)


@pytest.mark.parametrize("name", SCHEMAS)
def test_each_shipped_schema_is_a_valid_schema(name):
    schema = json.loads(resources.files("kcm.specs").joinpath(name).read_text(encoding="utf-8"))
    strictjson.StrictValidator.check_schema(schema)


def test_each_event_type_selects_a_valid_schema():
    for kind in oracle_trace._schema()["$defs"]:
        strictjson.StrictValidator.check_schema(oracle_trace._validator(kind).schema)


def test_a_broken_schema_is_caught_by_the_check():
    with pytest.raises(SchemaError):
        strictjson.StrictValidator.check_schema({"type": "no-such-type"})

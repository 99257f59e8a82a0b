"""syncd's schema check against Python's ``jsonschema`` (Draft 2020-12): the same verdict on more
than 100,000 generated pairs of a schema and a value from the vocabulary syncd checks, through a
real syncd (issue 57).

The generator keeps to what both sides define alike. What they define differently is tested on
its own below, as syncd documents it (docs/PROTOCOL.md, "Schemas"): integers beyond 2^53 are
compared as doubles, and ``multipleOf`` with a decimal divisor is decided as decimals are, where
``jsonschema`` divides binary doubles (0.3 is a multiple of 0.1 for syncd, not for ``jsonschema``).
"""

from __future__ import annotations

import json
import random
from typing import Any

import jsonschema
import pytest

import sharedstate
from sharedstate import RawJSON

NAMES = ["a", "b", "on", "mode", "x/y", "é", "n~1"]
TEXTS = ["", "a", "heat", "off", "ééé", "e\u0301", "😀😀", "a b", "12", "Heat", 'q"uote', "line\nbreak"]
PATTERNS = ["^[a-z]+$", "^h", "o", "^[0-9]{2,}$", "é", "^$", "[A-Z]"]
NUMBERS: list[Any] = [0, 1, 1.0, -0.0, 2.5, 3, 30, 31, -7, 100.0, 0.25, 9007199254740991, -9007199254740991, 1e-7]
ENUMS: list[Any] = ["heat", "off", 1, None, True, 2.5, [1, 2], {"a": 1}]
TYPES = ["null", "boolean", "object", "array", "number", "string", "integer"]


def value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(6 if depth > 2 else 9)
    if kind == 0:
        return None
    if kind == 1:
        return rng.random() < 0.5
    if kind in (2, 3):
        return rng.choice(NUMBERS)
    if kind in (4, 5):
        return rng.choice(TEXTS)
    if kind in (6, 7):
        names = rng.sample(NAMES, rng.randrange(4))
        return {name: value(rng, depth + 1) for name in names}
    return [value(rng, depth + 1) for _ in range(rng.randrange(4))]


def schema(rng: random.Random, depth: int = 0) -> Any:
    if rng.randrange(14) == 0:
        return rng.random() < 0.5
    document: dict[str, Any] = {}
    for _ in range(rng.randrange(4)):
        keyword = rng.randrange(12 if depth > 1 else 19)
        if keyword == 0:
            document["type"] = rng.choice(TYPES)
        elif keyword == 1:
            document["type"] = rng.sample(TYPES, 2)
        elif keyword == 2:
            low = rng.choice([-1, 0, 1, 2.5])
            document["minimum"] = low
            if rng.random() < 0.5:
                document["maximum"] = low + rng.choice([0, 1, 29])
        elif keyword == 3:
            document[rng.choice(["exclusiveMinimum", "exclusiveMaximum"])] = rng.choice([0, 1, 30, 2.5])
        elif keyword == 4:
            document["multipleOf"] = rng.choice([2, 3, 0.5, 0.25])
        elif keyword == 5:
            low = rng.randrange(3)
            document["minLength"] = low
            if rng.random() < 0.5:
                document["maxLength"] = low + rng.randrange(3)
        elif keyword == 6:
            document["enum"] = rng.sample(ENUMS, rng.randrange(1, 4))
        elif keyword == 7:
            document["const"] = rng.choice(ENUMS)
        elif keyword == 8:
            document["pattern"] = rng.choice(PATTERNS)
        elif keyword == 9:
            low = rng.randrange(3)
            document["minItems" if rng.random() < 0.5 else "minProperties"] = low
            if rng.random() < 0.5:
                document["maxItems"], document["maxProperties"] = low + 1, low + 1
                document["minItems"], document["minProperties"] = low, low
        elif keyword == 10:
            document["uniqueItems"] = rng.random() < 0.7
        elif keyword == 11:
            document["required"] = rng.sample(NAMES, rng.randrange(1, 3))
        elif keyword in (12, 13):
            document["properties"] = {name: schema(rng, depth + 1) for name in rng.sample(NAMES, rng.randrange(1, 3))}
        elif keyword == 14:
            document["additionalProperties"] = schema(rng, depth + 1)
        elif keyword in (15, 16):
            document["items"] = schema(rng, depth + 1)
        elif keyword == 17:
            document["prefixItems"] = [schema(rng, depth + 1) for _ in range(rng.randrange(1, 3))]
        else:
            document["description"] = "annotations are never checked"
            document["default"] = value(rng)
    # syncd refuses a schema whose minimum count is above its maximum (no value could satisfy it).
    for low, high in [("minLength", "maxLength"), ("minItems", "maxItems"), ("minProperties", "maxProperties")]:
        if document.get(low, 0) > document.get(high, document.get(low, 0)):
            del document[high]
    return document


def syncd_accepts(client: sharedstate.Client, key: str, text: str) -> bool:
    try:
        client.put(key, RawJSON(text))
        return True
    except sharedstate.SchemaViolation:
        return False


@pytest.mark.timeout(900)
def test_syncd_and_jsonschema_agree_on_generated_pairs(client: sharedstate.Client) -> None:
    rng = random.Random(57)
    pairs = agreed = refused = 0
    disagreements: list[str] = []
    index = 0
    while pairs < 100_000:
        index += 1
        document = schema(rng)
        validator = jsonschema.Draft202012Validator(document)
        prefix = f"agree/{index}/"
        client.set_schema(prefix, document)
        for _ in range(12):
            instance = value(rng)
            # Escaped and plain spellings of the same text: syncd reads both.
            text = json.dumps(instance, ensure_ascii=rng.random() < 0.3)
            expected = validator.is_valid(instance)
            actual = syncd_accepts(client, prefix + "v", text)
            pairs += 1
            refused += not expected
            if actual == expected:
                agreed += 1
            elif len(disagreements) < 10:
                disagreements.append(f"{json.dumps(document)} on {text}: jsonschema {expected}, syncd {actual}")
        client.delete_schema(prefix)
        try:
            client.delete(prefix + "v")
        except sharedstate.NotFound:
            pass
    print(f"syncd and jsonschema agreed on {agreed:,} of {pairs:,} pairs ({refused:,} refused)")
    assert disagreements == [], "\n".join(disagreements)
    assert agreed == pairs >= 100_000
    # Both verdicts occur often enough to mean something.
    assert pairs / 6 < refused < pairs * 5 / 6


@pytest.mark.parametrize(
    ("document", "text", "accepted"),
    [
        # 1 and 1.0 are both integers; -0 is a number equal to 0.
        ({"type": "integer"}, "1.0", True),
        ({"type": "integer"}, "1", True),
        ({"type": "integer"}, "1.5", False),
        ({"maximum": 0}, "-0", True),
        ({"const": 0}, "-0.0", True),
        # Integers beyond 2^53 are compared as doubles: 2^53 + 1 reads as 2^53.
        ({"maximum": 9007199254740992}, "9007199254740993", True),
        ({"type": "integer"}, "1e300", True),
        # multipleOf with a decimal divisor, as decimals: 0.3 is a multiple of 0.1, 0.35 is not.
        ({"multipleOf": 0.1}, "0.3", True),
        ({"multipleOf": 0.01}, "19.99", True),
        ({"multipleOf": 0.1}, "0.35", False),
        # Lengths in code points: one emoji is one, a decomposed é is two.
        ({"maxLength": 1}, '"😀"', True),
        ({"maxLength": 1}, '"e\u0301"', False),
        ({"maxLength": 1}, '"\\ud83d\\ude00"', True),
        # pattern searches anywhere unless anchored, as ECMA-262's does.
        ({"pattern": "o"}, '"off"', True),
        ({"pattern": "^o$"}, '"off"', False),
    ],
)
def test_the_edges_are_decided_as_documented(client: sharedstate.Client, document: Any, text: str, accepted: bool) -> None:
    client.set_schema("edge/", document)
    assert syncd_accepts(client, "edge/v", text) == accepted


def test_a_pattern_that_is_not_a_regular_expression_is_refused(client: sharedstate.Client) -> None:
    with pytest.raises(sharedstate.InvalidArgument, match="is not a regular expression"):
        client.set_schema("p/", {"pattern": "(unclosed"})

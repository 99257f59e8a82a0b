"""The inspector where schemas and clients meet: a key's schema beside its value, writes refused
for a schema in the timeline and per client, a client opened to its watches, ephemeral keys and
writes; and what a page opened late shows at once (the latest changes, the current state)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import sharedstate
from conftest import Daemon, Inspector, eventually

pytestmark = pytest.mark.timeout(90)

THERMOSTAT = {
    "type": "object",
    "title": "Thermostat",
    "description": "What a room is asked to be",
    "properties": {
        "target": {"type": "number", "minimum": 10, "maximum": 30, "description": "degrees Celsius"},
        "on": {"type": "boolean"},
    },
    "required": ["target"],
}


def set_schema(daemon: Daemon, prefix: str, schema: dict[str, Any]) -> None:
    path = daemon.directory / "schema.json"
    path.write_text(json.dumps(schema))
    daemon.syncctl("schema", "set", prefix, str(path))


def test_a_page_opened_late_shows_the_latest_changes_and_the_current_state_at_once(
    daemon: Daemon, inspector: Inspector, page: Any
) -> None:
    revisions = [daemon.put(f"lights/{index}", f'{{"on": {str(index % 2 == 0).lower()}}}') for index in range(6)]
    daemon.put("doors/front", '{"locked": true}')
    page.goto(inspector.url)
    # The rows written before the page opened are there, marked as earlier, newest on top.
    for revision in revisions:
        page.wait_for_selector(f".change-row[data-revision='{revision}']", timeout=10_000)
    rows = page.eval_on_selector_all(".change-row", "rows => rows.map(row => Number(row.dataset.revision))")
    assert rows == sorted(rows, reverse=True) and len(rows) == len(set(rows)) == 7, rows
    assert "earlier" in page.inner_text(f".change-row[data-revision='{revisions[0]}']")
    # A change made now comes on top, once.
    now = daemon.put("lights/0", '{"on": false}', cause="after the page opened")
    page.wait_for_selector(f".change-row[data-revision='{now}']", timeout=5_000)
    assert page.eval_on_selector(".change-row", "row => Number(row.dataset.revision)") == now
    # Time travel shows the state without Go being pressed.
    page.wait_for_selector(".travel-entry[data-key='doors/front']", timeout=5_000)
    assert page.query_selector(".travel-entry[data-key='lights/5']") is not None

    # Its "changes in revision N" keep to the prefix: the doors' revision has none under lights/.
    page.fill("#travel-prefix", "lights/")
    page.fill("#travel-revision", str(revisions[-1] + 1))
    page.click("#travel-go")
    page.wait_for_selector("#travel-diff:has-text('under \"lights/\"')", timeout=5_000)
    assert "doors/front" not in page.inner_text("#travel-diff")
    assert page.query_selector(".travel-entry[data-key='doors/front']") is None
    page.fill("#travel-revision", str(revisions[2]))
    page.click("#travel-go")
    page.wait_for_selector("#travel-diff:has-text('lights/2')", timeout=5_000)
    # The browser logs the 404 of the revision with no change under the prefix; nothing else.
    assert all("404" in error for error in page.errors), page.errors


def test_a_keys_schema_its_refused_writes_and_its_writers_client_are_on_the_page(
    daemon: Daemon, inspector: Inspector, page: Any
) -> None:
    set_schema(daemon, "climate/", THERMOSTAT)
    daemon.put("climate/living", '{"target": 21, "on": true}')
    with sharedstate.connect(daemon.socket, client_name="thermostat") as thermostat:
        thermostat.put("presence/thermostat", {"here": True}, ephemeral=True)
        watch = thermostat.watch(["climate/", "presence/"], previous_values=True)
        thermostat.put("climate/kitchen", {"target": 19}, cause="thermostat: started")
        page.goto(inspector.url)
        page.wait_for_selector("#live-state:has-text('live')", timeout=10_000)

        # The key's view has its schema beside its value: title, description, members' rules.
        page.click(".tree-node[data-path='climate/']")
        page.click(".tree-node[data-path='climate/living']")
        page.wait_for_selector("#detail-schema:not([hidden])", timeout=5_000)
        assert "Thermostat" in (page.text_content("#detail-schema-title") or "")
        schema = page.inner_text("#detail-schema")
        assert "What a room is asked to be" in schema
        assert "degrees Celsius" in schema and "10 to 30" in schema and "required" in schema
        assert 'the schema of "climate/"' in page.inner_text("#detail-facts")

        # A write refused while the page is open: a row in the timeline naming the client and
        # the violation, and the client's count above the timeline and in the clients table.
        for value in ({"target": 40}, {"target": "warm"}):
            with pytest.raises(sharedstate.SchemaViolation):
                thermostat.put("climate/kitchen", value)
        row = page.wait_for_selector(".refusal-row", timeout=10_000)
        text = row.inner_text()
        assert "thermostat" in text and "climate/kitchen" in text, text
        eventually(lambda: "2 since it connected" in page.inner_text(".refusal-row"), "both refusals counted", timeout=10)
        assert 'a string, not a number' in page.inner_text(".refusal-row")
        summary = page.wait_for_selector(f"#refusal-summary button[data-session='{thermostat.session_id}']", timeout=10_000)
        assert summary.inner_text().endswith(" 2")
        cells = page.wait_for_selector(f".client-row[data-session='{thermostat.session_id}']", timeout=5_000)
        assert "thermostat" in cells.inner_text()
        eventually(
            lambda: page.inner_text(f".client-row[data-session='{thermostat.session_id}'] td.refused") == "2",
            "the clients table's count",
            timeout=10,
        )

        # The client opened: its watch, its ephemeral key, its writes.
        page.click(f".client-row[data-session='{thermostat.session_id}']")
        page.wait_for_selector("#detail-client-content:not([hidden])", timeout=5_000)
        assert f"session {thermostat.session_id}" in page.inner_text("#detail-client")
        assert '"climate/", "presence/"' in page.inner_text("#detail-client-watches")
        assert "with previous values" in page.inner_text("#detail-client-watches")
        assert "presence/thermostat" in page.inner_text("#detail-client-ephemeral")
        writes = page.inner_text("#detail-client-writes")
        assert "climate/kitchen" in writes and "thermostat: started" in writes
        assert "a string, not a number" in page.inner_text("#detail-client-facts")
        # Its ephemeral key opens the key.
        page.click("#detail-client-ephemeral button")
        page.wait_for_selector("#detail-key:has-text('presence/thermostat')", timeout=5_000)
        page.wait_for_selector("#detail-facts:has-text('thermostat')", timeout=5_000)
        assert page.is_hidden("#detail-schema")
        watch.close()
    # Gone, it is still named by its refusals; opened from one, its view says it left.
    page.click(".refusal-row")
    page.wait_for_selector("#detail-client-message:has-text('no longer connected')", timeout=10_000)
    assert all("404" in error for error in page.errors), page.errors

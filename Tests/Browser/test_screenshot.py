"""The inspector's screenshot in the README (docs/inspector.png), taken from a test run:
`scripts/inspector-screenshot.sh` runs this test with INSPECTOR_SCREENSHOT naming the file;
without it, the test saves the picture in its scratch directory and checks the page is whole."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from conftest import Daemon, Inspector

import sharedstate

pytestmark = pytest.mark.timeout(90)


def test_a_screenshot_of_a_small_home(daemon: Daemon, inspector: Inspector, page: Any, scratch: Path) -> None:
    with sharedstate.connect(daemon.socket, client_name="door-lock") as lock, sharedstate.connect(
        daemon.socket, client_name="climate"
    ) as climate, sharedstate.connect(daemon.socket, client_name="hall-panel") as panel:
        for door in ["front", "garage", "patio"]:
            lock.put(f"doors/{door}", {"locked": door != "patio", "battery": 87}, cause="door-lock: started")
        for room, target in [("kitchen", 21.0), ("living", 20.5), ("bedroom", 18.0)]:
            climate.put(f"climate/{room}", {"target": target, "mode": "auto"}, cause="climate: scheduleLoaded")
        panel.put("presence/hall-panel", {"since": "07:12"}, ephemeral=True)
        climate.set_schema(
            "climate/",
            {
                "title": "Room climate",
                "type": "object",
                "properties": {
                    "target": {"type": "number", "minimum": 10, "maximum": 30, "description": "degrees Celsius"},
                    "mode": {"enum": ["auto", "manual", "off"]},
                },
                "required": ["target", "mode"],
            },
        )
        page.goto(inspector.url)
        page.wait_for_selector(".tree-node[data-path='doors/']", timeout=10_000)
        # A few seconds of readings, for the plots and the timeline.
        for index in range(120):
            room = ["kitchen", "living", "bedroom"][index % 3]
            climate.put(f"sensors/{room}/temperature", {"celsius": round(20 + (index % 7) / 10, 1)}, cause="climate: sensorRead")
            page.wait_for_timeout(40)
        page.click(".tree-node[data-path='doors/']")
        page.click(".tree-node[data-path='climate/']")
        # A write the schema refuses, as the timeline shows it.
        with pytest.raises(sharedstate.SchemaViolation):
            panel.put("climate/living", {"target": 40, "mode": "manual"}, cause="hall-panel: targetRaised")
        page.wait_for_selector(".refusal-row", timeout=10_000)
        lock.put("doors/patio", {"locked": True, "battery": 86}, cause="door-lock: lockTapped(patio)")
        revision = climate.put(
            "climate/living", {"target": 22.0, "mode": "manual"}, cause="hall-panel: path.element(id: living).targetRaised"
        ).revision
        row = page.wait_for_selector(f".change-row[data-revision='{revision}']", timeout=5_000)
        page.wait_for_timeout(1_500)  # a second of the plots
        row.click()
        page.wait_for_selector(f"#detail-revision:has-text('{revision}')", timeout=5_000)
        page.fill("#travel-revision", str(revision - 1))
        page.click("#travel-go")
        page.wait_for_selector(f"#travel-message:has-text('State at revision {revision - 1} ')", timeout=5_000)
        page.wait_for_selector(".travel-entry[data-key='climate/living']", timeout=5_000)
        target = Path(os.environ.get("INSPECTOR_SCREENSHOT") or scratch / "inspector.png")
        page.screenshot(path=str(target))
        assert target.stat().st_size > 10_000
        assert page.errors == []

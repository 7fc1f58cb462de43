"""The local backend's kernel objects: a bridge a dead run left without
namespaces is swept; a live cluster's network is not touched."""

from __future__ import annotations

import subprocess
import uuid

import pytest

from control.backends import local
from tests.nemesis.probes import leftovers, netns_available

# with the other tests that build networks, one at a time: a cluster created
# meanwhile sweeps stray bridges too, and could take this test's own
pytestmark = [pytest.mark.netns]


@pytest.fixture(autouse=True)
def _needs_netns() -> None:
    reason = netns_available()
    if reason:
        pytest.skip(reason)


def test_sweep_removes_a_bridge_without_namespaces_and_keeps_live_clusters() -> None:
    live = local.create_network(f"live-{uuid.uuid4().hex[:8]}", 2)
    try:
        stray = local.create_network(f"stray-{uuid.uuid4().hex[:8]}", 1)
        # A run that died inside destroy_network: namespaces gone, bridge and rule left.
        subprocess.run(["ip", "netns", "del", stray.netns(1)], check=True)
        assert leftovers(stray.tag) != []

        removed = local.sweep_stray_bridges()

        assert stray.bridge in removed and live.bridge not in removed
        assert leftovers(stray.tag) == []
        assert sorted(local.existing_namespaces(live)) == [live.netns(1), live.netns(2)]
        assert f"jepka-{live.tag}" in " ".join(leftovers(live.tag))
    finally:
        local.destroy_network(live, 2)
    assert leftovers(live.tag) == []

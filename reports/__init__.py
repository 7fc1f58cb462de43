"""Renders stored runs for people (``report.html``) and for CI (``junit.xml``).

Reports read ``results.json`` and the history and never analyse: every
verdict and anomaly shown is the checker's (STYLE.md point 12).
"""

from __future__ import annotations

from reports.render import Written, write_report
from reports.run import RunError

__all__ = ["RunError", "Written", "write_report"]

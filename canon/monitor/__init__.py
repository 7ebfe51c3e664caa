"""Watch traces as they arrive, a directory or a CloudWatch log group, and audit each one.

Layer: monitor. Imports errors, gates and project; never check, report or an interface.
``boto3`` loads only when the CloudWatch monitor starts.
"""

from __future__ import annotations

from typing import Any

from canon.monitor.directory import monitor_directory
from canon.monitor.stats import MonitorStats

__all__ = [
    "DEFAULT_LOG_GROUP",
    "CloudWatchError",
    "MonitorStats",
    "monitor_cloudwatch",
    "monitor_directory",
]


def __getattr__(name: str) -> Any:
    # The CloudWatch monitor's module talks to AWS; load it only when one of its names is used.
    if name in ("monitor_cloudwatch", "CloudWatchError", "DEFAULT_LOG_GROUP"):
        from canon.monitor import cloudwatch

        return getattr(cloudwatch, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

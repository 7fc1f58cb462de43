"""One Spark session for the whole run, started in the background as soon as
tests that need it are collected, so the JVM boots while other tests run."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from checkers.spark.session import start_in_background, stop_session


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if any(item.get_closest_marker("spark") for item in items):
        start_in_background()


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = start_in_background().result()
    try:
        yield session
    finally:
        stop_session()

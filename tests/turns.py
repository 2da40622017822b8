"""Waiting inside async tests by loop turns, never by time: bounded, so a bug fails instead of hanging."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


async def within(awaitable: Awaitable[T], seconds: float = 10) -> T:
    """Await ``awaitable``, failing (not hanging) if a bug leaves it waiting for ever."""
    async with asyncio.timeout(seconds):
        return await awaitable


async def wait_until(condition: Callable[[], Any], turns: int = 5000) -> None:
    """Give the loop turns until ``condition()`` holds."""
    for _ in range(turns):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("the run never got there")

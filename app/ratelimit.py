"""Per-principal rate limits on expensive actions (chat turns, refreshes): 429 + Retry-After.

Moving windows from the `limits` library; counters live in Redis when the instance uses Redis
(so several web processes share them), otherwise in this process's memory.
"""
from __future__ import annotations

import math
import time

from limits import RateLimitItemPerMinute, storage, strategies

from app.config import Settings
from app.errors import ApiError


class RateLimiter:
    def __init__(self, settings: Settings) -> None:
        uri = settings.broker_url if settings.broker_url.startswith("redis://") else "memory://"
        self.strategy = strategies.MovingWindowRateLimiter(storage.storage_from_string(uri))
        self.items = {
            "chat": RateLimitItemPerMinute(settings.chat_turns_per_minute),
            "refresh": RateLimitItemPerMinute(settings.refreshes_per_minute),
        }

    def hit(self, action: str, user_id: str) -> None:
        """Count one ``action`` for the user, or raise 429 with the seconds until the next slot."""
        item = self.items[action]
        if self.strategy.hit(item, action, user_id):
            return
        reset_at = self.strategy.get_window_stats(item, action, user_id).reset_time
        retry_after = max(1, math.ceil(reset_at - time.time()))
        raise ApiError(
            429, "RATE_LIMITED", f"Too many {action} requests; try again in {retry_after} s.", retry_after=retry_after
        )

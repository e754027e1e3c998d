"""A turn yields to waiting requests under gevent (app.cooperative), and always comes back."""
from __future__ import annotations

import subprocess
import sys

from support.services import REPO

# A gevent-patched process whose one other greenlet never lets the loop go idle.
_BUSY_LOOP = """
from gevent import monkey; monkey.patch_all()
import gevent
from app.cooperative import let_waiting_requests_run
ran = []
def busy():
    while True:
        ran.append(1)
        gevent.sleep(0)
gevent.spawn(busy)
let_waiting_requests_run()
print("returned after the others ran" if ran else "returned without yielding")
"""


def test_a_turn_yields_to_the_others_and_comes_back_even_when_the_loop_is_never_idle() -> None:
    done = subprocess.run([sys.executable, "-c", _BUSY_LOOP], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "returned after the others ran"


import os
import sys

import pytest
from hypothesis import settings

from tests.support import server_fixture

# Hypothesis' per-example deadline (200 ms by default) is a time assertion: on a
# loaded 2-core machine a slow example fails a correct test.  No deadline here;
# each test's max_examples still bounds its run.
settings.register_profile("kafka-net", deadline=None)
settings.load_profile("kafka-net")

server = server_fixture()  # a running broker, one per test; modules may define their own


# make test-ft (KAFKA_NET_FREE_THREADED=1): the run means something only on a
# free-threaded CPython whose GIL stays off; an extension module without
# Py_mod_gil turns it back on when imported, so it is checked again at the end.
def _gil_enabled() -> bool:
    return getattr(sys, "_is_gil_enabled", lambda: True)()


def pytest_sessionstart(session):
    if os.environ.get("KAFKA_NET_FREE_THREADED") and _gil_enabled():
        pytest.exit(f"KAFKA_NET_FREE_THREADED=1 but the GIL is enabled ({sys.version}); "
                    "make test-ft runs this on free-threaded CPython", returncode=1)


def pytest_sessionfinish(session, exitstatus):
    if os.environ.get("KAFKA_NET_FREE_THREADED") and _gil_enabled():
        sys.stderr.write("\nmake test-ft: an extension module imported during the run "
                         "turned the GIL back on; the run does not count\n")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED

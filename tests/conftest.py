import os

import pytest
from hypothesis import settings

from tests.support import server_fixture

# Hypothesis' per-example deadline (200 ms by default) is a time assertion: on a
# loaded 2-core machine a slow example fails a correct test.  No deadline here;
# each test's max_examples still bounds its run.
settings.register_profile("kafka-net", deadline=None)
settings.load_profile("kafka-net")

server = server_fixture()  # a running broker, one per test; modules may define their own


@pytest.fixture(autouse=True, scope="session")
def _no_test_uses_the_default_log_dir():
    """A broker a test starts keeps its logs in memory (log.store=memory) or under
    a folder of its own (log.dirs=tmp_path): the default log.dir,
    /tmp/kraft-combined-logs, is shared by every test run on the machine, and a
    second broker on it fails to lock it.  This makes that mistake fail at once,
    with a message saying what to do."""
    from kafka_net.config import default_of
    from kafka_net.server.log_manager import LogManager

    default = os.path.abspath(default_of("log_dir"))
    real = LogManager._lock_dir

    def guarded(self, directory: str) -> None:
        if os.path.abspath(directory) == default:
            raise AssertionError(
                f"a test broker is about to use the default log dir {default}: give it "
                f"log_store='memory' or log_dirs=(str(tmp_path),)")
        real(self, directory)

    LogManager._lock_dir = guarded
    yield
    LogManager._lock_dir = real

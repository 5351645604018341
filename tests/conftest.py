import importlib.util
import os
import re
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


@pytest.fixture(autouse=True, scope="session")
def _no_test_uses_the_default_log_dir():
    """A broker a test starts keeps its logs in memory (log.store=memory) or under
    a folder of its own (log.dirs=tmp_path): the default log.dir,
    /tmp/kafka-logs, is shared by every test run on the machine, and a
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


# make test-ft (KAFKA_NET_FREE_THREADED=1): the run means something only on a
# free-threaded CPython whose GIL stays off; an extension module without
# Py_mod_gil turns it back on when imported, so it is checked again at the end.
# Packages with no build for that interpreter here (the Makefile's
# FT_UNAVAILABLE) leave out the tests that need them, named in the header and
# counted as deselected: never silently.
FREE_THREADED_RUN = bool(os.environ.get("KAFKA_NET_FREE_THREADED"))
# module -> what needs it; tests/ helpers that import one count as needing it
_OPTIONAL = {"confluent_kafka": "confluent-kafka", "cryptography": "cryptography",
             "cramjam": "cramjam", "re2": "google-re2"}
_HELPERS = {"tests.tls_support": "cryptography"}
# Tests whose broker must read zstd, lz4 or snappy batches (cramjam), by node id.
_CODEC_TESTS = re.compile(r"\[(snappy|lz4|zstd)\]$|decompression_bombs|"
                          r"compressed_batches_of_one_request")
_left_out: dict[str, list[str]] = {}


def _gil_enabled() -> bool:
    return getattr(sys, "_is_gil_enabled", lambda: True)()


def _missing() -> set[str]:
    return {dist for module, dist in _OPTIONAL.items()
            if importlib.util.find_spec(module) is None}


def pytest_sessionstart(session):
    if FREE_THREADED_RUN and _gil_enabled():
        pytest.exit(f"KAFKA_NET_FREE_THREADED=1 but the GIL is enabled ({sys.version}); "
                    "make test-ft runs this on free-threaded CPython", returncode=1)


def pytest_ignore_collect(collection_path, config):
    if not FREE_THREADED_RUN or collection_path.suffix != ".py" \
            or not collection_path.name.startswith("test_"):
        return None
    missing = _missing()
    needs = {dist for module, dist in {**_OPTIONAL, **_HELPERS}.items()
             if dist in missing and re.search(rf"^\s*(from|import) {re.escape(module)}\b",
                                              collection_path.read_text(), re.M)}
    if needs:
        _left_out.setdefault(", ".join(sorted(needs)), []).append(collection_path.name)
        return True
    return None


# make test gives whole files to its pytest-xdist workers (the Makefile's XDIST), in
# the order they are collected, each to the first worker free.  The directories whose
# files take tens of seconds go first: started last, one of them would keep a worker
# busy alone at the end of the run.
LONG_FILES_FIRST = ("tests/spark/", "tests/packaging/", "tests/integration/", "tests/faults/")


def _rank(item) -> int:
    path = item.nodeid.split("::", 1)[0]
    return next((i for i, top in enumerate(LONG_FILES_FIRST) if path.startswith(top)),
                len(LONG_FILES_FIRST))


def pytest_collection_modifyitems(config, items):
    items.sort(key=_rank)   # stable: a file's tests keep their order
    if not FREE_THREADED_RUN:
        return
    missing = _missing()
    drop = [item for item in items
            if ("cramjam" in missing and _CODEC_TESTS.search(item.nodeid))
            or ("confluent-kafka" in missing and "confluent" in item.name)
            # the broker resolves KIP-848 regex subscriptions with RE2
            or ("google-re2" in missing and "regex" in item.nodeid)]
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = [item for item in items if item not in drop]
        _left_out.setdefault("test functions (codecs read by cramjam, confluent-kafka, RE2)",
                             []).extend(item.nodeid for item in drop)


def pytest_report_header(config):
    if FREE_THREADED_RUN:
        return [f"free-threaded run: {sys.version}, GIL enabled: {_gil_enabled()}; "
                f"not installable here: {', '.join(sorted(_missing())) or 'nothing'}"]
    return None


def pytest_terminal_summary(terminalreporter):
    for needs, names in _left_out.items():
        terminalreporter.write_line(
            f"free-threaded run left out ({needs}, no free-threaded build here): "
            f"{len(names)}: {' '.join(sorted(names))}")


def pytest_sessionfinish(session, exitstatus):
    if FREE_THREADED_RUN and _gil_enabled():
        sys.stderr.write("\nmake test-ft: an extension module imported during the run "
                         "turned the GIL back on; the run does not count\n")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED

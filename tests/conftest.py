from hypothesis import settings

from tests.support import server_fixture

# Hypothesis' per-example deadline (200 ms by default) is a time assertion: on a
# loaded 2-core machine a slow example fails a correct test.  No deadline here;
# each test's max_examples still bounds its run.
settings.register_profile("kafka-net", deadline=None)
settings.load_profile("kafka-net")

server = server_fixture()  # a running broker, one per test; modules may define their own

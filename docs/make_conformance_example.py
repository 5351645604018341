"""Write docs/conformance.md's conformance example: a report of ordinary client traffic.

    python docs/make_conformance_example.py            # run it, print the block
    python docs/make_conformance_example.py --write    # run it, update docs/conformance.md
    python docs/make_conformance_example.py --check    # run it, exit 1 if the page is stale

(``make conformance-example`` runs ``--write``.)  It starts a kafka-net broker in
this process with ``capture.dir`` set, runs the clients of the live conformance
test (tests/spark/test_conformance_live.py: kafka-python producers, admin and
consumer group, a kafka-python acks=0 producer, a confluent-kafka producer and
AdminClient, an aiokafka consumer group), then ``kafka-net conformance`` twice
on the captures, as a user would: for the broker (the default subject), and for
the clients with librdkafka's known deviation waived.  The block between the
page's ``conformance-example`` markers is the console output of both runs and
one finding as report.json has it.  Counts and times differ from run to run, so
``--check`` compares with every number replaced by ``N``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

BEGIN, END = "<!-- conformance-example:begin -->", "<!-- conformance-example:end -->"
WAIVE = "trailing_bytes=confluent-kafka-python"


def record(captures: Path) -> None:
    from tests.spark.test_conformance_live import real_clients
    from tests.support import make_config, running_server
    config = make_config(capture_dir=str(captures), group_initial_rebalance_delay_ms=0)
    with running_server(config) as server:
        try:
            real_clients(server.bound_port(), "orders")
        finally:
            server.shutdown()


def conformance(cwd: Path, *args: str) -> tuple[int, list[str]]:
    """Exit code and console lines (stderr's stage lines, then stdout's verdict)."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-m", "kafka_net", "conformance", *args],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith("conformance:")]
    return done.returncode, lines + done.stdout.splitlines()


def block() -> str:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        record(base / "captures")
        code_a, broker = conformance(base, "captures", "--out", "report", "--show", "1")
        code_b, client = conformance(base, "captures", "--out", "report-client", "--subject",
                                     "client", "--waive", WAIVE, "--show", "0")
        with open(base / "report-client" / "report.json", encoding="utf-8") as fh:
            report = json.load(fh)
    finding = {k: report["violations"][0][k] for k in (
        "check", "party", "severity", "client_software", "known_deviation", "api_name",
        "api_version", "client_id", "correlation_id", "detail", "hex_fault", "waived",
        "waiver")}
    lines = ["```", f"$ kafka-net conformance captures --out report --show 1"
             f"        # exit {code_a}", *broker,
             f"$ kafka-net conformance captures --out report-client --subject client \\",
             f"      --waive {WAIVE} --show 0       # exit {code_b}", *client, "```", "",
             "One of those findings in `report-client/report.json`, and the waiver:", "",
             "```json", json.dumps(finding, indent=1), json.dumps(
                 {"waivers": report["waivers"]}, indent=1), "```"]
    return "\n".join(lines).replace(f"{base}/", "")


def normalised(text: str) -> str:
    return re.sub(r"\d+", "N", text)


def main(argv: list[str]) -> int:
    readme = REPO / "docs" / "conformance.md"
    text = readme.read_text(encoding="utf-8")
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    new = "\n" + block() + "\n"
    if "--check" in argv:
        if normalised(text[start:end]) != normalised(new):
            print("docs/conformance.md's conformance example is stale: run "
                  "python docs/make_conformance_example.py --write", file=sys.stderr)
            return 1
        return 0
    if "--write" in argv:
        readme.write_text(text[:start] + new + text[end:], encoding="utf-8")
        return 0
    print(new)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

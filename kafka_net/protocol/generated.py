"""Print the code generated for one message version: its decoder, encoder or walker.

::

    python -m kafka_net.protocol.generated ApiVersions 3 --response --encode
    python -m kafka_net.protocol.generated Fetch 13 --response --walk --codes --records
    python -m kafka_net.protocol.generated Fetch 13 --response --program --codes --records

The API by name (``ApiVersions``, ``api_versions``) or key (``18``), the
version, ``--request`` (the default) or ``--response``, and what to print:
``--decode`` (the default) or ``--encode`` (the compiled codec; how to read it:
:mod:`kafka_net.protocol.codegen`), ``--walk`` (a body walker,
:mod:`kafka_net.protocol.walker`; ``--top``, ``--codes`` and ``--records`` say
what it keeps), or ``--program`` (the same walk as the compiled interpreter runs
it, :mod:`kafka_net.protocol.walk_program`, the same options).

Why a module of its own: finding a schema by name imports the message modules,
which import :mod:`.schema`, which compiles with :mod:`.codegen`; a command in
the generators themselves would run that circle.  Here it runs one way only.
"""

from __future__ import annotations

import argparse
import sys

from kafka_net.protocol import codegen, walk_program, walker
from kafka_net.protocol.messages import find_api


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m kafka_net.protocol.generated",
        description="Print the generated decoder, encoder or walker of one message version.")
    parser.add_argument("api", help="API name (ApiVersions, api_versions) or key (18)")
    parser.add_argument("version", type=int)
    side = parser.add_mutually_exclusive_group()
    side.add_argument("--request", dest="side", action="store_const", const="request")
    side.add_argument("--response", dest="side", action="store_const", const="response")
    what = parser.add_mutually_exclusive_group()
    for name in ("decode", "encode", "walk", "program"):
        what.add_argument(f"--{name}", dest="what", action="store_const", const=name)
    keep = parser.add_argument_group("what a walker keeps (with --walk or --program)")
    keep.add_argument("--top", default="", help="top-level fields, comma-separated")
    keep.add_argument("--codes", action="store_true", help="non-zero error codes")
    keep.add_argument("--records", action="store_true", help="records fields")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    what = args.what or "decode"
    if what not in ("walk", "program") and (args.top or args.codes or args.records):
        parser.error("--top, --codes and --records choose what a walker keeps: "
                     "add --walk or --program")
    try:
        schema = getattr(find_api(args.api), args.side or "request")
    except KeyError as exc:
        raise SystemExit(exc.args[0]) from None
    if args.version not in schema.valid:
        raise SystemExit(f"{schema.name} has no version {args.version} (valid {schema.valid})")
    if what == "walk":
        top = tuple(t for t in args.top.split(",") if t)
        text = walker.source(schema, args.version, top, args.codes, args.records)[0]
    elif what == "program":
        top = tuple(t for t in args.top.split(",") if t)
        made = walk_program.program(schema, args.version, top, args.codes, args.records)
        if made is None:
            raise SystemExit(f"{schema.name} v{args.version}: no program for this walk "
                             f"(the Python walker does it)")
        text = walk_program.listing(made[0])
    else:
        text = codegen.source(schema, args.version, what)[0]
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

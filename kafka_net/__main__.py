"""`python -m kafka_net` is the same as the `kafka-net` command."""
import sys

from kafka_net.entry import main

sys.exit(main())

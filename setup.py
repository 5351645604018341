"""Packaging beyond what setup.cfg can say: the Spark job ships inside kafka_net.

setup.cfg holds the metadata and dependencies.  The repository keeps the
conformance job in its own top-level folder, ``spark_jobs/``, but a wheel
installs it as ``kafka_net.spark_jobs`` (a ``package_dir`` mapping), so that
kafka-net puts nothing but ``kafka_net`` into site-packages.  setup.cfg's
``find:`` cannot list a package whose folder is mapped, hence this file.
"""

from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["kafka_net", "kafka_net.*"]) + ["kafka_net.spark_jobs"],
    package_dir={"kafka_net.spark_jobs": "spark_jobs"},
)

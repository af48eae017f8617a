"""Capture any switch port to pcap during a test (RISE 4.0's open issue: vhost-user ports are
invisible to tcpdump).

Three ways, by switch kind:

* ``mirror`` (OVS and OVS-DPDK): an OVS mirror selects both directions of a port and outputs
  them to a capture port that writes pcap itself (net_pcap ``tx_pcap=``, OVS-DPDK) - no flow
  changes, no effect on the measured path except the copy. :func:`ovs_mirror_args`.
* ``flows`` (any OpenFlow switch, e.g. ofbench): the slice controller adds
  ``output:<capture port>`` to every flow entering or leaving the port
  (dut/vmwire/slice_app.py ``capture:``). :func:`slice_capture_section`.
* ``pdump`` (any DPDK primary that called rte_pdump_init, e.g. testpmd, and runs with
  hugepages that are not unlinked; --in-memory/--no-huge primaries cannot take a secondary):
  ``dpdk-pdump`` as a secondary process. :func:`pdump_argv`.

The pcap files go to the test's result folder, so the report links them on failure; they are
read with traces/pcap.py.
"""
from __future__ import annotations

import shutil
from pathlib import Path

PDUMP = shutil.which("dpdk-pdump") or "/usr/bin/dpdk-pdump"


def ovs_mirror_args(bridge: str, mirror: str, ports: list[str], output_port: str) -> list[str]:
    """ovs-vsctl arguments that mirror both directions of ``ports`` to ``output_port``."""
    args = ["--", "--id=@out", "get", "Port", output_port]
    refs = []
    for i, p in enumerate(ports):
        args += ["--", f"--id=@p{i}", "get", "Port", p]
        refs.append(f"@p{i}")
    sel = ",".join(refs)
    args += ["--", "--id=@m", "create", "Mirror", f"name={mirror}",
             f"select-src-port={sel}", f"select-dst-port={sel}", "output-port=@out",
             "--", "add", "Bridge", bridge, "mirrors", "@m"]
    return args


def slice_capture_section(capture_ofport: int, ports: list[str]) -> dict:
    """The ``capture`` key of the slice app's config."""
    return {"capture": {"ofport": capture_ofport, "ports": list(ports)}}


def pdump_argv(file_prefix: str, port_id: int, rx_pcap: str | Path, tx_pcap: str | Path,
               *, lcore: int = 0) -> list[str]:
    """dpdk-pdump attached (as a secondary) to the primary with ``file_prefix``."""
    spec = f"port={port_id},queue=*,rx-dev={rx_pcap},tx-dev={tx_pcap}"
    return [PDUMP, "-l", str(lcore), "--file-prefix", file_prefix, "--", "--pdump", spec]

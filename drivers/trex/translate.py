"""Resolved streams -> JSON-able stream specs for client_proc (pure; no TRex import here,
because importing the TRex client swaps yaml/scapy/zmq process-wide).

TRex sends one template per STLStream, so a stream with several templates (IMIX, pcap) becomes
one TRex sub-stream per distinct template, with the rate split by how often the template
occurs; each sub-stream has its own pg_id and the counters are summed back (driver.py).
"""
from __future__ import annotations

from collections import Counter as Multiset

from drivers.trafficgen.model import ResolvedStream, StreamError

# pg_ids are global per TRex server; ours start here, MAX_SUBSTREAMS per stream, MAX_STREAMS
# streams per load.  Each load (trial) takes the next of EPOCHS blocks of pg_ids: TRex's RX core
# publishes latency in periodic updates, and an update of the previous trial that lands after
# reset() would otherwise be counted in this trial's histogram (README finding 5).
PG_ID_BASE = 1000
MAX_SUBSTREAMS = 16
MAX_STREAMS = 64
EPOCHS = 32


def pg_ids(stream_id: int, n: int, epoch: int = 0) -> list[int]:
    if not 0 <= stream_id < MAX_STREAMS:
        raise StreamError(f"the TRex driver runs at most {MAX_STREAMS} streams per trial")
    base = PG_ID_BASE + (epoch % EPOCHS) * MAX_STREAMS * MAX_SUBSTREAMS
    return [base + stream_id * MAX_SUBSTREAMS + k for k in range(n)]


def stream_spec(r: ResolvedStream, port_index: int, epoch: int = 0, timed: bool = False) -> dict:
    """Finite streams become single bursts of total_pkts (count, or rate * duration), so
    unsent = total_pkts - tx is defined; streams without an end are continuous.

    timed: a duration stream becomes a continuous stream that the trial's start(duration)
    stops, with offered = rate * duration: what TRex could not build in time is then never
    sent and counts as unsent (the generator's limit), as with softgen.  A burst instead is
    sent to the end however late, so a TRex that falls behind would look like it kept the
    rate (the driver uses timed when every stream of a trial has the same duration)."""
    weights = Multiset(r.templates)
    if len(weights) > MAX_SUBSTREAMS:
        raise StreamError(f"stream '{r.name}': the TRex driver replays at most {MAX_SUBSTREAMS} distinct "
                          f"packets per stream, this one has {len(weights)}")
    total = r.count if r.count is not None else (round(r.rate_pps * r.duration_s) if r.duration_s else None)
    n_tpl = len(r.templates)
    subs = []
    for k, ((tpl, weight), pg) in enumerate(zip(weights.items(), pg_ids(r.id, len(weights), epoch))):
        vm = []
        for n, (off, ln, count, step) in enumerate(r.vars):
            base = int.from_bytes(tpl[off:off + ln], "big")
            vm.append({"name": f"v{n}", "offset": off, "size": ln, "min": base,
                       "max": (base + (count - 1) * step) & ((1 << (8 * ln)) - 1), "step": step})
        subs.append({
            "pg_id": pg, "packet_hex": tpl.hex(), "pps": r.rate_pps * weight / n_tpl,
            "total_pkts": None if total is None or timed else max(1, round(total * weight / n_tpl)),
            "offered": None if total is None else max(1, round(total * weight / n_tpl)),
            "latency": r.latency and k == 0, "vm": vm, "fix_ipv4": r.l3_offset if vm else None,
        })
    return {"name": r.name, "id": r.id, "port": port_index, "substreams": subs}

"""softgen's TX trial on the memif wire to a testpmd rxonly sink: the sender half of the
throughput suite's softgen-vs-testpmd TX bench (test_throughput.py) and of the softgen suite's
softgen-vs-TRex TX comparison (suites/softgen/test_vs_trex.py). Moved here from
test_throughput.py in issue 43: a test module imports no other test module's helpers.
"""
from __future__ import annotations

import time

from drivers.softgen.driver import Softgen, SoftgenPort, wait_links_up
from drivers.trafficgen.model import Stream

from . import topology

TX_BENCH_TRIAL_S = 2.0   # seconds of full-speed sending per trial (after a start-up window)


def window_rates_pps(samples: list[tuple[int, int]], tsc_hz: float, min_window_s: float = 0.5) -> list[float]:
    """TX rates between successive (tsc, tx packets) samples of one softgen stream (pure);
    windows shorter than min_window_s (the last, partial one) are left out."""
    out = []
    for (t0, n0), (t1, n1) in zip(samples, samples[1:]):
        dt = (t1 - t0) / tsc_hz
        if dt >= min_window_s and n1 >= n0:
            out.append((n1 - n0) / dt)
    return out


def softgen_tx_trial(lab, sock, tag, progress):
    """One softgen trial: (Mpps of each ~1 s window, stream counters), None if the link stayed down."""
    inst = topology.start_softgen(lab, f"txbench-softgen-{tag}", [SoftgenPort("t", topology.memif(0, "client", sock))])
    gen = Softgen([inst])
    try:
        if not wait_links_up(gen, 15):
            progress(f"tx bench: memif to the sink not up after 15 s (softgen trial {tag})")
            return None
        # asks for more than one core can send: the worker sends a burst on every loop, as
        # testpmd txonly does, and what it could not build counts as unsent, not as sent
        # the same ~1 s windows testpmd reports, read from the stats' own TSC
        # (the stream outlasts the sampling: every window is one of full-speed sending)
        [r] = gen.load([Stream("tx", "t", frame_size=64, rate_pps=topology.TX_ASK_PPS,
                                         duration_s=TX_BENCH_TRIAL_S + 10)])
        samples = []
        gen.start()
        try:
            for _ in range(int(TX_BENCH_TRIAL_S) + 2):
                st = gen.raw_stats()[0]
                if not st["running"]:
                    break
                samples.append((st["tsc"], next((t["tx"] for t in st["tx_streams"] if t["id"] == r.id), 0)))
                time.sleep(1.0)
        finally:
            gen.stop()
        time.sleep(0.05)
        s = gen.counters().streams["tx"]
        assert s.tx + s.unsent == s.offered and s.refused <= s.unsent
        # the first window holds the start-up, as testpmd's first figure does: both drop it
        return [pps / 1e6 for pps in window_rates_pps(samples, st["tsc_hz"])[1:]], s
    finally:
        gen.close()
        lab.supervisor.stop(inst.managed)

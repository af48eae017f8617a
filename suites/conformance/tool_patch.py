"""Fixes of two defects of os-ken 4.2.2's switch test tool, applied by tester_main to every
target alike (ofbench and OVS). Neither touches a pass criterion.

1. SCTP checksum (a Python-3 porting bug). ``os_ken.lib.packet.sctp.sctp._checksum`` iterates
   over ``str(data)``: on Python 3 that is the repr text "bytearray(b'...')", not the bytes (a
   Python 2 leftover), so every SCTP packet the tool builds carries a wrong CRC32c and no correct
   switch can match a rewritten one (16 set-field cases). We hand the original function a bytes
   object whose str() is the bytes themselves: the result is the standard CRC32c (RFC 3309), as
   the tool computed under Python 2 / Ryu.

2. The throughput cases' sender drifts below its own rate. ``OfTester._send_packet_thread``
   sends ``pktps * 0.01`` packets per tick and assumes a tick lasts exactly 10 ms: each tick
   sleeps 10 ms, then spawns the next tick's greenthread, so every tick lasts 10 ms *plus* the
   hub's timer lateness and the spawn. The lateness is never made up, so the offered rate is
   ``nominal * 10 ms / real tick``: on this shared 2-core box 7-13 % short (1752 of 2000 kbps,
   ~186 of 200 pktps), while the pass criterion (unchanged: the rate each tester flow counted
   over the measured interval must be within 10 % of the case's expected rate) assumes the
   nominal rate was offered. A DSCP-remark case at twice the meter rate doubles the error
   (remarked = offered - meter rate), so it fails from a 5 % shortfall on.
   Our sender sends the tool's packets (same bytes, same random fields, same packet-out, same
   progress dots and error path) but takes the count from the clock: each tick sends what the
   nominal rate owes since the start minus what was sent (``packets_due``), so the mean offered
   rate is the nominal one whenever the process gets the CPU to produce it. It ticks every
   1 ms instead of 10 (``SENDER_TICK_S``, why below) and makes up a late tick over the next
   ticks (``SENDER_CATCHUP_TICKS``). It logs one line per case with what it really sent
   (``SENDER_LINE``; the report shows it beside each throughput result), and the tool's check
   is preceded by a line with its measured interval (``ofbench-measure``).
   A case whose packets are fixed (every case above 175 pktps) has its PACKET_OUT serialised
   once; each tick sends the packets it owes as copies of it, with their own xids, in one socket
   write (``packet_outs``): byte for byte what the tool's ``send_packet_out`` sends, for a
   fraction of the CPU. Serialising each one took ~40 us of Python, so at 17 500-20 000 pktps the
   sender needed most of a core and fell to 90-94 % of nominal as soon as other tool instances
   shared the box (a DSCP-remark case then fails, see above).
"""
from __future__ import annotations

import math
import struct
import sys
import time

# Our sender's tick. With the tool's 10 ms ticks a case's packets leave in bursts of pktps/100
# (200 packets at 20 000 pktps) and come back as bursts to the tester OVS, whose AF_PACKET
# receive sockets (208 KiB, rmem_default) overflow: measured at 20 000 pktps, the target
# forwarded every packet (its counters and the veths' agree) while the tester counted
# 16 470-16 820 pktps -- a loss on the measuring side. With 1 ms ticks the same rate leaves in
# bursts of pktps/1000: the tester socket dropped 1.8 % (ss skmem) and all three cases passed.
SENDER_TICK_S = 0.001
# After a late tick the owed packets go out at most this many ticks' worth at a time, so a
# stall of the tool's process is made up over the next ticks, not in one burst.
SENDER_CATCHUP_TICKS = 4

# One log line per throughput case, before the case's OK/ERROR line; parsed by ryu_results.
SENDER_LINE = ("ofbench-sender: nominal {pktps:g} pktps, sent {sent} packets in {elapsed_s:.2f} s"
               " = {rate:.1f} pktps ({pct:.1f} % of nominal), longest tick gap {gap_ms:.0f} ms")


class _Latin1(bytes):
    def __str__(self):
        return self.decode("latin-1")


def sctp_checksum_fixed(self, data) -> int:
    from os_ken.lib.packet import sctp as _sctp
    orig = getattr(_sctp.sctp, "_ofbench_orig_checksum", _sctp.sctp._checksum)
    return orig(self, _Latin1(bytes(data)))


def packets_due(pktps: float, start_s: float, now_s: float, sent: int,
                max_burst: int | None = None) -> int:
    """Packets a sender at ``pktps`` since ``start_s`` still owes at ``now_s`` after ``sent``:
    the nominal count so far (floored; a tiny epsilon so exact products are not lost to float
    error) minus what was sent, never negative, at most ``max_burst`` (the rest stays owed)."""
    if now_s <= start_s:
        return 0
    owed = max(0, math.floor(pktps * (now_s - start_s) + 1e-9) - sent)
    return owed if max_burst is None else min(owed, max_burst)


def max_burst_for(pktps: float, tick_s: float = None, catchup_ticks: int = None) -> int:
    """Largest number of packets sent in one tick: ``catchup_ticks`` ticks' worth, >= 1."""
    tick_s = SENDER_TICK_S if tick_s is None else tick_s
    catchup_ticks = SENDER_CATCHUP_TICKS if catchup_ticks is None else catchup_ticks
    return max(1, math.ceil(pktps * tick_s * catchup_ticks))


def sender_summary(pktps: float, sent: int, elapsed_s: float, max_gap_s: float) -> str:
    rate = sent / elapsed_s if elapsed_s > 0 else 0.0
    pct = 100.0 * rate / pktps if pktps else 0.0
    return SENDER_LINE.format(pktps=pktps, sent=sent, elapsed_s=elapsed_s, rate=rate, pct=pct,
                              gap_ms=max_gap_s * 1000)


def packet_out_template(dp, out_port: int, data: bytes) -> bytes:
    """The tool's PACKET_OUT (``TestSw.send_packet_out``) for ``data``, serialised with xid 0."""
    ofp, parser = dp.ofproto, dp.ofproto_parser
    out = parser.OFPPacketOut(datapath=dp, buffer_id=ofp.OFP_NO_BUFFER, data=data,
                              in_port=ofp.OFPP_CONTROLLER,
                              actions=[parser.OFPActionOutput(out_port)])
    out.xid = 0
    out.serialize()
    return bytes(out.buf)


XID_OFFSET = 4  # ofp_header: version, type, length (2), xid (4), network byte order


def packet_outs(template: bytes, first_xid: int, count: int) -> bytes:
    """``count`` copies of a serialised message, numbered with xids first_xid, first_xid+1, ...
    (wrapping at 2**32 like os-ken's Datapath.set_xid)."""
    size = len(template)
    buf = bytearray(template * count)
    for i in range(count):
        struct.pack_into("!I", buf, i * size + XID_OFFSET, (first_xid + i) & 0xFFFFFFFF)
    return bytes(buf)


def _send_fixed(tester_sw, template: bytes, count: int) -> None:
    """Send ``count`` copies of the fixed PACKET_OUT in one write, numbered like send_msg."""
    from os_ken.tests.switch import tester as tool
    dp = tester_sw.dp
    if isinstance(dp, tool.DummyDatapath):
        raise tool.TestError(tool.STATE_DISCONNECTED)
    first = (dp.xid + 1) & 0xFFFFFFFF
    dp.xid = (dp.xid + count) & 0xFFFFFFFF
    dp.send(packet_outs(template, first, count))


def paced_send_packet_thread(self, arg):
    """Replacement of ``OfTester._send_packet_thread`` (one greenthread for the whole case,
    registered by the tool's ``_continuous_packet_send`` and killed by its ``_test_execute``
    like the original chain of tick threads)."""
    from os_ken.lib import hub
    from os_ken.tests.switch import tester as tool

    if self.ingress_event is None or self.ingress_event._cond:
        return
    pktps = arg["packet_counter_inc"] / tool.CONTINUOUS_THREAD_INTVL
    dots_every = max(1, round(arg["dot_span"] * tool.CONTINUOUS_THREAD_INTVL / SENDER_TICK_S))
    max_burst = max_burst_for(pktps)
    tool_globals = vars(tool)  # the random packets are eval'd in the tool's namespace
    template = None
    if not arg["randomize"]:
        dp = self.tester_sw.dp
        if not isinstance(dp, tool.DummyDatapath):
            template = packet_out_template(dp, self.tester_sw.tester_send_port,
                                           arg["packet_binary"])
    start = last = time.monotonic()
    sent, max_gap = 0, 0.0
    try:
        while self.ingress_event is not None and not self.ingress_event._cond:
            if not arg["thread_counter"] % dots_every:
                sys.stdout.write(".")
                sys.stdout.flush()
            arg["thread_counter"] += 1
            now = time.monotonic()
            max_gap = max(max_gap, now - last)
            last = now
            due = packets_due(pktps, start, now, sent, max_burst)
            if template is not None:  # fixed packets: one write for the tick
                try:
                    if due:
                        _send_fixed(self.tester_sw, template, due)
                except Exception as err:  # the tool's error path
                    self.thread_msg = err
                    self.ingress_event.set()
                    return
                sent += due
            else:
                for _ in range(due):
                    if arg["randomize"]:
                        msg = eval("/".join(arg["packet_text"]), tool_globals)  # noqa: S307
                        msg.serialize()
                        data = msg.data
                    else:
                        data = arg["packet_binary"]
                    try:
                        self.tester_sw.send_packet_out(data)
                    except Exception as err:  # the tool's error path
                        self.thread_msg = err
                        self.ingress_event.set()
                        return
                    sent += 1
            hub.sleep(SENDER_TICK_S)
    finally:
        self.logger.info("%s", sender_summary(pktps, sent, time.monotonic() - start, max_gap))


def logged_throughput_check(self, throughputs, start, end):
    """The tool's own check, unchanged, after one log line with its measured interval (a long
    interval means the tester switch lagged behind the packet-outs queued to it)."""
    self.logger.info("ofbench-measure: interval %.2f s", end[0] - start[0])
    return self._ofbench_orig_throughput_check(throughputs, start, end)


def patch_tool(paced_sender: bool = True) -> None:
    from os_ken.lib.packet import sctp as _sctp
    if not hasattr(_sctp.sctp, "_ofbench_orig_checksum"):
        _sctp.sctp._ofbench_orig_checksum = _sctp.sctp._checksum
        _sctp.sctp._checksum = sctp_checksum_fixed
    if paced_sender:
        from os_ken.tests.switch import tester as tool
        if not hasattr(tool.OfTester, "_ofbench_orig_send_packet_thread"):
            tool.OfTester._ofbench_orig_send_packet_thread = tool.OfTester._send_packet_thread
            tool.OfTester._send_packet_thread = paced_send_packet_thread
    from os_ken.tests.switch import tester as tool
    if not hasattr(tool.OfTester, "_ofbench_orig_throughput_check"):
        tool.OfTester._ofbench_orig_throughput_check = tool.OfTester._test_throughput_check
        tool.OfTester._test_throughput_check = logged_throughput_check

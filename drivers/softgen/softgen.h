/* softgen: a small DPDK traffic generator driven over a unix control socket.
 *
 * Goals
 * -----
 * - Send paced streams (packets per second, TSC-paced) of packet templates on any DPDK port
 *   (memif, vhost/virtio_user, af_xdp/af_packet, null, ring, PCI: whatever --vdev/-a gives).
 * - Count what was sent, what could not be sent ("unsent": the port refused it or the core
 *   fell behind the schedule) and what came back, per port and per stream, so that the
 *   Python side can compute loss against packets actually sent.  A core that is behind its
 *   schedule catches up in bursts (at most SOFTGEN_BURST per loop); when the schedule ends it
 *   may still catch up for a grace of 10 % of the stream's length (20..200 ms), because on a
 *   shared box a worker preempted just before the end would otherwise count its last few
 *   milliseconds of packets as "unsent"; what is still owed after the grace is unsent.  The
 *   Python side can refuse a result
 *   where rx > tx.
 * - Measure latency of every signed packet whose stream asks for it, into a log-linear
 *   histogram (16 linear buckets per power of two of nanoseconds: <= 6.25 % bucket width).
 * - Run many trials in one process: the supervisor starts softgen once, the Python driver
 *   (drivers/softgen/driver.py) clears, loads streams, starts, waits and reads stats.
 *
 * Packet signature (last SOFTGEN_SIG_LEN bytes of every generated frame, FCS excluded)
 * ----------------------------------------------------------------------------------
 *   offset 0  u32 magic     SOFTGEN_MAGIC, little endian (host order on x86)
 *   offset 4  u16 stream    bit 15 = latency requested, bits 0..14 = stream id
 *   offset 6  u32 seq       per-stream sequence number, starts at 0 on each start
 *   offset 10 u64 tsc       rte_rdtsc() of the TX burst that carried the packet
 * All fields in host byte order (the generator and its receiver are the same host or the
 * same kind of host: rx and tx TSC must be comparable, which holds for one machine with an
 * invariant TSC, and is why latency is only meaningful when one host sends and receives).
 * A 64 B frame (60 B without FCS) with Ethernet+IPv4+UDP headers (42 B) has exactly 18 B of
 * payload, so the signature fits the smallest frame.
 *
 * Control protocol (one request line, one reply line of JSON; see softgen.c:handle_line)
 * ----------------------------------------------------------------------------------
 *   ports                       -> {"ok":true,"ports":[{"id","name","mac","link_up","speed_mbps"}]}
 *   stream id=N port=P pps=R [count=C] [duration_us=D] [lat=0|1] [l3=OFF]
 *          [var=OFF:LEN:COUNT:STEP]...   (at most SOFTGEN_MAX_VARS; LEN in {1,2,4}, big endian)
 *   tpl id=N hex=HEX            append a packet template to stream N (cycled in order)
 *   start | stop | clear | stats | quit
 *   stats -> tsc (when read), tsc_hz; per port tx/rx/unsent/bytes/rx_other; per TX stream offered, tx, unsent, refused,
 *            tx_bytes and tx_window_ns (first to last burst the port accepted: the time a TX
 *            rate is computed over); per RX stream rx, dup, ooo, gaps, latency sums + histogram
 * Errors: {"ok":false,"error":"..."}.  stream/tpl are refused while streams are running.
 *
 * Concurrency
 * -----------
 * One control thread (the main lcore) and one worker lcore.  The worker owns every counter
 * and the running state; the control thread changes them only through a one-slot mailbox
 * (start/stop/clear) that the worker executes at the top of its loop and acknowledges.
 * Stream definitions are written by the control thread only while the worker is stopped
 * (running == 0 acknowledged), and read by the worker only while running.  Counters are
 * read by the control thread without locks: each is a naturally aligned u64 written by one
 * thread, so a reader sees some recent value; final figures are read after stop + drain.
 *
 * Limits
 * ------
 * SOFTGEN_MAX_STREAMS streams, SOFTGEN_MAX_TPLS templates per stream, frames up to
 * SOFTGEN_MAX_FRAME bytes, one RX and one TX queue per port, one worker lcore per process
 * (run several processes for more cores).
 */
#ifndef OFBENCH_SOFTGEN_H
#define OFBENCH_SOFTGEN_H

#include <stdint.h>

#define SOFTGEN_VERSION "0.1.0"
#define SOFTGEN_MAGIC 0x0FBE5167u
#define SOFTGEN_SIG_LEN 18
#define SOFTGEN_LAT_FLAG 0x8000u
#define SOFTGEN_MAX_STREAMS 1024
#define SOFTGEN_MAX_TPLS 4096
#define SOFTGEN_MAX_VARS 4
#define SOFTGEN_MAX_FRAME 9000
#define SOFTGEN_MAX_PORTS 8
#define SOFTGEN_BURST 32
/* Sequence window remembered per RX stream to tell a duplicate from a late packet. */
#define SOFTGEN_SEQ_WINDOW 1024
/* Log-linear histogram: values < 16 ns are exact, then 16 sub-buckets per power of two. */
#define SOFTGEN_HIST_SUB_BITS 4
#define SOFTGEN_HIST_BUCKETS 640

/* Bucket index of a latency in ns; the Python side mirrors this (drivers/trafficgen/latency.py). */
static inline unsigned softgen_hist_index(uint64_t ns)
{
	if (ns < (1u << SOFTGEN_HIST_SUB_BITS))
		return (unsigned)ns;
	unsigned e = 63 - (unsigned)__builtin_clzll(ns); /* >= SUB_BITS */
	unsigned sub = (unsigned)(ns >> (e - SOFTGEN_HIST_SUB_BITS)) & ((1u << SOFTGEN_HIST_SUB_BITS) - 1);
	unsigned idx = (e - SOFTGEN_HIST_SUB_BITS + 1) * (1u << SOFTGEN_HIST_SUB_BITS) + sub;
	return idx < SOFTGEN_HIST_BUCKETS ? idx : SOFTGEN_HIST_BUCKETS - 1;
}

#endif

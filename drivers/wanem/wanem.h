/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wanem: a user-space WAN emulator for kernels without netem/fq.
 *
 * Goals
 *   N independent one-way paths.  Each path receives Ethernet frames on one interface
 *   (AF_PACKET, kernel RX timestamps via SO_TIMESTAMPNS), gives them the behaviour of a link
 *   of rate R and one-way delay T (optionally a random loss), and sends them unchanged on
 *   another interface.  Its own accuracy is measured and reported with every run.
 *
 * Model of one path (a FIFO link followed by a fixed propagation delay)
 *   A frame of L bytes that arrived at time a (kernel timestamp) starts serialising at
 *   s = max(a, link_free); link_free = s + (L + wire_overhead) * 8 / R; it is due at
 *   due = link_free + T (its last bit has crossed the link and the distance).  Frames are
 *   sent in arrival order, so due times of one path never decrease and the queue is a ring
 *   whose head is always the next frame to leave.  A frame is dropped (tail drop) when the
 *   link's backlog (link_free - a) would exceed max_backlog (the link's buffer, in time).
 *
 * Timing
 *   All times are CLOCK_REALTIME nanoseconds, the clock of SO_TIMESTAMPNS.  The single thread
 *   sleeps in ppoll() until spin_ns before the earliest due time and busy-waits only that last
 *   stretch (the box has 2 shared cores: never spin for long), optionally under SCHED_FIFO so
 *   the wake-up is not delayed by other tasks.  Error of a frame = actual send time - due.
 *
 * Concurrency
 *   One thread owns everything: rings, serialisation clocks, statistics.  Rate/delay/loss
 *   changes arrive on the same thread through the control socket and apply to frames that
 *   arrive afterwards (frames already queued keep their due times, as on a real link whose
 *   speed changes under a standing queue).
 *
 * Limits
 *   Frames up to the input interface's MTU + 18 bytes; slots per path fixed at start; rate
 *   accuracy is bounded by the kernel's veth/AF_PACKET cost (measured, reported as
 *   rate_mbps of back-to-back frames).  Byte order: frames are never parsed.
 */
#ifndef OFB_WANEM_H
#define OFB_WANEM_H

#include <stdint.h>

#define WANEM_MAX_PATHS 8
#define WANEM_ERR_HIST_US 20000   /* error histogram: 1 us bins up to 20 ms, then overflow */

/* Schedule one frame on a path's link: returns its due time and updates *link_free_ns.
 * backlogged is set when the frame had to wait for the link (queueing). */
static inline uint64_t
wanem_schedule(uint64_t arrival_ns, uint32_t wire_bytes, double rate_bps, uint64_t delay_ns,
	       uint64_t *link_free_ns, int *backlogged)
{
	uint64_t start = arrival_ns;
	*backlogged = 0;
	if (*link_free_ns > arrival_ns) {
		start = *link_free_ns;
		*backlogged = 1;
	}
	*link_free_ns = start + (uint64_t)((double)wire_bytes * 8.0 * 1e9 / rate_bps);
	return *link_free_ns + delay_ns;
}

#endif /* OFB_WANEM_H */

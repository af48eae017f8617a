/* replay_port.h -- the switch's replay port type (beside vhost_port.c; it was drivers/replay
 * until issue 43): a packet feed that replays a pcap's frames from memory as a DPDK port.
 *
 * Goals: feed a DPDK application (the switch under test, the feed-ceiling tool) at a rate well
 * above what it can forward on one core, so that a benchmark measures the application and not
 * its feed, with the frames (and their order) of a pcap file, cycled.
 *
 * How: every frame of the pcap is loaded once into an mbuf of the feed's own pool (a
 * "template"). The port is a net_ring port (rte_eth_from_rings, public API) whose rx ring holds
 * the templates in pcap order; an rx callback on queue 0 puts each dequeued template back at
 * the ring's tail, so the sequence cycles, and hands the application
 *   - mode "ref" (default): the template itself with its reference count raised by one. No
 *     copy, no allocation: rx costs a ring dequeue/enqueue of pointers and one refcount store
 *     per frame; the application's rte_pktmbuf_free drops the reference (one atomic decrement).
 *     The application must not write into these frames (a switch that rewrites headers would
 *     rewrite the template): use "copy" for rewriting workloads.
 *   - mode "copy": a fresh mbuf of the feed's pool with the frame copied into it (what a NIC's
 *     DMA does; the same work as DPDK's net_pcap infinite_rx, without its per-frame ring ops).
 *   - mode "stream": like copy, but the frames are copied from one packed array read in order
 *     (each frame in a slot of the longest frame rounded up to 64 bytes) instead of from the
 *     templates: the feed then touches no per-frame line at random, as a NIC's rx, whose mbufs
 *     come back hot from the pool's per-lcore cache and whose frames stream in. In ref and copy
 *     mode every distinct frame has its own template (mbuf header and data lines), which adds
 *     two cache lines per frame to the application's working set that a NIC would not.
 * `loops=K` stops after K passes over the pcap (rx then returns 0): a finite, exactly known
 * feed, for checking counters against another generator sending the same frames; `wait_ms=N`
 * hands out nothing for N ms after the port is armed (time to install flows first).
 *
 * Spec: "replay:<pcap path>[,loops=K][,copy=0|1|stream][,wait_ms=N]". Frames longer than the mbuf's data room are
 * refused (clear error naming the file and frame).
 *
 * Concurrency: one rx queue, polled by one lcore (the ring is single-producer/single-consumer,
 * the callback runs on the polling lcore). Tx rings exist (one per queue asked for) so the port
 * can be configured like any other, but nothing drains them: frames sent to a replay port are
 * refused once its tx ring is full (the application counts them as dropped).
 * Limits: at most 1M frames, up to OFB_REPLAY_MAX_PORTS replay ports per process.
 * Byte order: frames are kept as they are on the wire.
 */
#ifndef OFB_REPLAY_H
#define OFB_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OFB_REPLAY_PREFIX "replay:"
#define OFB_REPLAY_MAX_FRAMES (1u << 20)
#define OFB_REPLAY_MAX_PORTS 8

/* Is spec a replay spec ("replay:...")? */
bool ofb_replay_is_spec(const char *spec);

/* Create the replay port of spec (see above) with n_txq tx queues on NUMA socket `socket`.
 * Returns the DPDK port id, or -1 with a message in err. The port still needs the usual
 * rte_eth_dev_configure / queue setup / start; call ofb_replay_arm once it is started. */
int ofb_replay_create(const char *spec, unsigned n_txq, int socket, char *err, size_t errlen);

/* Install the rx callback on a started replay port (created by ofb_replay_create). 0 or -1. */
int ofb_replay_arm(uint16_t port_id);

/* Frames handed out so far and frames in the pcap (0, 0 for an unknown port). */
void ofb_replay_counts(uint16_t port_id, uint64_t *given, uint32_t *n_frames);

#endif

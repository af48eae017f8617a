/* vhost_port.h -- a switch port that drives DPDK's vhost-user library (librte_vhost) directly,
 * the way OVS-DPDK's netdev-dpdk does, instead of through the net_vhost ethdev PMD.
 *
 * Goals: the least work per packet between a guest's virtqueues and the pipeline. The PMD
 * (drivers/net/vhost) wraps every burst with an atomic queue-state handshake, counts every
 * packet again (bytes, size bins, multicast/broadcast: a read of each frame's destination),
 * and frees transmitted mbufs one by one (each free looks up the lcore's mempool cache through
 * a TLS call from the shared library); the switch keeps its own port counters and can free a
 * burst at once. Profiled on the vmwire loop (dut/vmwire/README.md) that wrapper was ~10 % of
 * the switch core; librte_vhost itself (the frame copies into and out of guest memory) stays.
 *
 * Spec: "vhost:<socket path>[,client=0|1]" (--port N=vhost:...). client=1 (default): the
 * guest (QEMU, virtio_user server=1) owns the socket and the switch connects and reconnects
 * after a guest restart (OVS-DPDK's dpdkvhostuserclient); client=0: the switch creates the
 * socket. One queue pair. Offered features: librte_vhost's, less HOST_TSO4/6 (as net_vhost
 * with tso=0, its default): a guest never hands the switch a 64 KiB segment. Offload flags
 * in the library's "legacy" mode (as net_vhost legacy-ol-flags=1, see dut/vmwire/wiring.py):
 * a guest's partial checksum travels as an mbuf tx flag to the receiving guest.
 *
 * Concurrency: the library's event thread (a control thread) calls new_device /
 * destroy_device; workers call ofs_vhost_rx/ofs_vhost_tx. `vid` is the hand-over: new_device
 * disables guest kicks (the worker polls) and publishes the device id with a release store;
 * destroy_device stores -1 and then waits for one QSBR grace period of the switch's workers
 * (ofs_dp.qsbr: each worker reports once per poll loop, so no burst that loaded the old id is
 * still inside the library when the library frees the device). One worker polls the port's
 * rx; tx from several workers is serialised by a spinlock, taken only when the switch has
 * more than one worker. The agent reads the link state (vid >= 0).
 * Limits: OFS_MAX_PORTS vhost ports, one queue pair each, socket paths < 108 bytes.
 */
#ifndef OFB_VHOST_PORT_H
#define OFB_VHOST_PORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <rte_branch_prediction.h>
#include <rte_mbuf.h>
#include <rte_spinlock.h>
#include <rte_vhost.h>

#define OFS_VHOST_PREFIX "vhost:"

/* virtqueue numbers of queue pair 0 as the guest names them: the switch enqueues into the
 * guest's rx ring and dequeues from its tx ring */
#define OFS_VHOST_GUEST_RXQ 0
#define OFS_VHOST_GUEST_TXQ 1

struct ofs_vhost {
	int vid;                 /* device id while a guest is attached, else -1 (atomic) */
	bool tx_shared;          /* more than one worker transmits: take tx_lock */
	bool client;
	rte_spinlock_t tx_lock;
	char path[108];          /* sizeof(sockaddr_un.sun_path) */
};

/* Is spec a vhost spec ("vhost:...")? */
bool ofs_vhost_is_spec(const char *spec);

/* Register and start the vhost-user socket of spec; n_workers sets tx sharing. Returns the
 * port's state (the library may attach a guest from now on) or NULL with a message in err
 * naming the spec. */
struct ofs_vhost *ofs_vhost_open(const char *spec, unsigned n_workers, char *err, size_t errlen);

/* Unregister the socket (the guest is detached first). Call after the workers stopped. */
void ofs_vhost_close(struct ofs_vhost *v);

/* Link state for the agent: a guest is attached. */
static inline bool ofs_vhost_link_up(const struct ofs_vhost *v)
{
	return __atomic_load_n(&v->vid, __ATOMIC_ACQUIRE) >= 0;
}

/* Up to n frames the guest sent, in mbufs of pool (worker only). */
static inline uint16_t ofs_vhost_rx(struct ofs_vhost *v, struct rte_mempool *pool,
				    struct rte_mbuf **pkts, uint16_t n)
{
	int vid = __atomic_load_n(&v->vid, __ATOMIC_ACQUIRE);
	if (unlikely(vid < 0))
		return 0;
	return rte_vhost_dequeue_burst(vid, OFS_VHOST_GUEST_TXQ, pool, pkts, n);
}

/* Copy pkts[0..n) into the guest's rx ring; returns how many went (their mbufs are freed);
 * pkts[sent..n) stay the caller's (worker only). */
static inline uint16_t ofs_vhost_tx(struct ofs_vhost *v, struct rte_mbuf **pkts, uint16_t n)
{
	int vid = __atomic_load_n(&v->vid, __ATOMIC_ACQUIRE);
	if (unlikely(vid < 0))
		return 0;
	if (unlikely(v->tx_shared))
		rte_spinlock_lock(&v->tx_lock);
	uint16_t sent = rte_vhost_enqueue_burst(vid, OFS_VHOST_GUEST_RXQ, pkts, n);
	if (unlikely(v->tx_shared))
		rte_spinlock_unlock(&v->tx_lock);
	rte_pktmbuf_free_bulk(pkts, sent);
	return sent;
}

#endif

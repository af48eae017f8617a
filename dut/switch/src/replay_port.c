/* replay_port.c -- the pcap replay feed, a port type of the switch (see replay_port.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_memcpy.h>
#include <rte_ring.h>
#include "replay_port.h"

enum replay_mode { REPLAY_REF, REPLAY_COPY, REPLAY_STREAM };

struct replay {
	uint16_t port_id;
	uint8_t mode;                /* enum replay_mode */
	uint64_t limit;              /* frames to hand out in all (loops x frames), 0: no limit */
	uint64_t given;              /* frames handed out */
	uint64_t alloc_failed;       /* copy mode: frames skipped for want of an mbuf */
	uint64_t wait_cycles;        /* wait_ms in TSC cycles: nothing handed out before ... */
	uint64_t start_tsc;          /* ... start_tsc (set by ofb_replay_arm) */
	uint32_t n_frames;
	uint32_t next;               /* stream mode: the frame the next rx hands out */
	uint32_t slot;               /* stream mode: bytes per frame in `flat` (64-byte multiple) */
	uint8_t *flat;               /* stream mode: every frame, packed in pcap order */
	uint16_t *flat_len;          /* stream mode: each frame's length */
	struct rte_ring *ring;       /* the templates, in pcap order, cycled */
	struct rte_mempool *pool;    /* templates (+ copies in copy mode) */
} __rte_cache_aligned;

static struct replay replays[OFB_REPLAY_MAX_PORTS];
static unsigned n_replays;

bool ofb_replay_is_spec(const char *spec)
{
	return strncmp(spec, OFB_REPLAY_PREFIX, strlen(OFB_REPLAY_PREFIX)) == 0;
}

static struct replay *replay_of(uint16_t port_id)
{
	for (unsigned i = 0; i < n_replays; i++)
		if (replays[i].port_id == port_id)
			return &replays[i];
	return NULL;
}

/* rx callback: the burst the ring PMD dequeued goes back to the ring's tail at once (the
 * sequence cycles); the application gets references to it (ref) or copies (copy). */
static uint16_t replay_rx(uint16_t port_id, uint16_t queue, struct rte_mbuf *pkts[],
			  uint16_t nb, uint16_t max_pkts, void *arg)
{
	struct replay *r = arg;
	(void)port_id; (void)queue; (void)max_pkts;
	if (nb == 0)
		return 0;
	if (unlikely(r->wait_cycles)) {
		if (rte_rdtsc() < r->start_tsc) {
			rte_ring_sp_enqueue_bulk(r->ring, (void **)pkts, nb, NULL);
			return 0;
		}
		r->wait_cycles = 0;
	}
	/* room is certain: the ring holds every template and these were just taken out */
	rte_ring_sp_enqueue_bulk(r->ring, (void **)pkts, nb, NULL);
	uint16_t give = nb;
	if (r->limit) {
		uint64_t left = r->limit - r->given;
		if (left < give)
			give = (uint16_t)left;
	}
	if (r->mode == REPLAY_REF) {
		for (uint16_t i = 0; i < give; i++)
			rte_mbuf_refcnt_update(pkts[i], 1);
	} else if (give) {
		struct rte_mbuf *fresh[give];
		if (rte_pktmbuf_alloc_bulk(r->pool, fresh, give) != 0) {
			r->alloc_failed += give;
			return 0;
		}
		/* copy: from the template the ring PMD dequeued; stream: from the packed array, in the
		 * same (pcap) order, the templates left unread */
		uint32_t k = r->next;
		for (uint16_t i = 0; i < give; i++) {
			const void *src;
			uint16_t len;
			if (r->mode == REPLAY_STREAM) {
				src = r->flat + (size_t)k * r->slot;
				len = r->flat_len[k];
				if (++k == r->n_frames)
					k = 0;
			} else {
				src = rte_pktmbuf_mtod(pkts[i], const void *);
				len = pkts[i]->data_len;
			}
			rte_memcpy(rte_pktmbuf_mtod(fresh[i], void *), src, len);
			fresh[i]->data_len = len;
			fresh[i]->pkt_len = len;
			fresh[i]->port = r->port_id;
			pkts[i] = fresh[i];
		}
		r->next = k;
	}
	r->given += give;
	return give;
}

static uint32_t rd32(const uint8_t *p, bool swap)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return swap ? __builtin_bswap32(v) : v;
}

/* Load the pcap's frames into template mbufs of r->pool and the ring. 0 or -1 (err set). */
static int load_pcap(struct replay *r, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(err, errlen, "replay: cannot open pcap %s: %s", path, strerror(errno));
		return -1;
	}
	uint8_t gh[24];
	if (fread(gh, 1, sizeof(gh), f) != sizeof(gh)) {
		snprintf(err, errlen, "replay: %s: shorter than a pcap header", path);
		fclose(f);
		return -1;
	}
	uint32_t magic = rd32(gh, false);
	bool swap;
	if (magic == 0xa1b2c3d4u || magic == 0xa1b23c4du)
		swap = false;
	else if (magic == 0xd4c3b2a1u || magic == 0x4d3cb2a1u)
		swap = true;
	else {
		snprintf(err, errlen, "replay: %s: not a pcap file (magic 0x%08x)", path, magic);
		fclose(f);
		return -1;
	}
	uint16_t room = (uint16_t)(rte_pktmbuf_data_room_size(r->pool) - RTE_PKTMBUF_HEADROOM);
	uint8_t rh[16];
	uint32_t n = 0;
	int rc = 0;
	while (fread(rh, 1, sizeof(rh), f) == sizeof(rh)) {
		uint32_t caplen = rd32(rh + 8, swap);
		if (caplen == 0 || caplen > room) {
			snprintf(err, errlen, "replay: %s: frame %u is %u bytes (1..%u supported)",
				 path, n, caplen, room);
			rc = -1;
			break;
		}
		if (n == r->n_frames) {
			snprintf(err, errlen, "replay: %s: more frames than counted", path);
			rc = -1;
			break;
		}
		struct rte_mbuf *m = rte_pktmbuf_alloc(r->pool);
		char *d = m ? rte_pktmbuf_append(m, (uint16_t)caplen) : NULL;
		if (!d || fread(d, 1, caplen, f) != caplen) {
			snprintf(err, errlen, "replay: %s: frame %u: %s", path, n,
				 d ? "truncated" : "out of mbufs");
			rte_pktmbuf_free(m);
			rc = -1;
			break;
		}
		m->port = r->port_id;
		if (rte_ring_sp_enqueue(r->ring, m) != 0) {
			rte_pktmbuf_free(m);
			snprintf(err, errlen, "replay: %s: ring full at frame %u", path, n);
			rc = -1;
			break;
		}
		n++;
	}
	fclose(f);
	if (rc == 0 && n != r->n_frames) {
		snprintf(err, errlen, "replay: %s: read %u of %u frames", path, n, r->n_frames);
		rc = -1;
	}
	return rc;
}

/* Stream mode: copy the loaded templates, in ring (pcap) order, into one packed array, each frame
 * in a slot of the longest frame's length rounded up to a cache line. 0 or -1 (err set). */
static int pack_frames(struct replay *r, int socket, const char *spec, char *err, size_t errlen)
{
	unsigned n = r->n_frames;
	struct rte_mbuf **t = malloc(n * sizeof(*t));
	if (!t || rte_ring_sc_dequeue_bulk(r->ring, (void **)t, n, NULL) != n) {
		free(t);
		snprintf(err, errlen, "replay: %s: cannot read back the %u templates", spec, n);
		return -1;
	}
	uint16_t longest = 0;
	for (unsigned i = 0; i < n; i++)
		longest = RTE_MAX(longest, t[i]->data_len);
	r->slot = RTE_ALIGN_CEIL((uint32_t)longest, RTE_CACHE_LINE_SIZE);
	r->flat = rte_malloc_socket("replay_flat", (size_t)n * r->slot, RTE_CACHE_LINE_SIZE, socket);
	r->flat_len = rte_malloc_socket("replay_flat_len", n * sizeof(uint16_t), 0, socket);
	if (r->flat && r->flat_len)
		for (unsigned i = 0; i < n; i++) {
			r->flat_len[i] = t[i]->data_len;
			memcpy(r->flat + (size_t)i * r->slot, rte_pktmbuf_mtod(t[i], const void *),
			       t[i]->data_len);
		}
	rte_ring_sp_enqueue_bulk(r->ring, (void **)t, n, NULL);
	free(t);
	if (!r->flat || !r->flat_len) {
		snprintf(err, errlen, "replay: %s: no memory to pack %u frames of %u bytes", spec, n,
			 r->slot);
		return -1;
	}
	return 0;
}

/* Frames in a pcap file (-1 when unreadable or malformed, err set). */
static long count_frames(const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(err, errlen, "replay: cannot open pcap %s: %s", path, strerror(errno));
		return -1;
	}
	uint8_t gh[24], rh[16];
	long n = -1;
	if (fread(gh, 1, sizeof(gh), f) == sizeof(gh)) {
		uint32_t magic = rd32(gh, false);
		bool swap = magic == 0xd4c3b2a1u || magic == 0x4d3cb2a1u;
		n = 0;
		while (fread(rh, 1, sizeof(rh), f) == sizeof(rh)) {
			if (fseek(f, rd32(rh + 8, swap), SEEK_CUR) != 0)
				break;
			if (++n > OFB_REPLAY_MAX_FRAMES)
				break;
		}
	}
	fclose(f);
	if (n < 0)
		snprintf(err, errlen, "replay: %s: shorter than a pcap header", path);
	else if (n == 0)
		snprintf(err, errlen, "replay: %s: no frames", path);
	else if (n > OFB_REPLAY_MAX_FRAMES)
		snprintf(err, errlen, "replay: %s: more than %u frames", path, OFB_REPLAY_MAX_FRAMES);
	return n > 0 && n <= OFB_REPLAY_MAX_FRAMES ? n : -1;
}

int ofb_replay_create(const char *spec, unsigned n_txq, int socket, char *err, size_t errlen)
{
	if (!ofb_replay_is_spec(spec)) {
		snprintf(err, errlen, "replay: spec %s does not start with %s", spec, OFB_REPLAY_PREFIX);
		return -1;
	}
	if (n_replays == OFB_REPLAY_MAX_PORTS) {
		snprintf(err, errlen, "replay: at most %u replay ports", OFB_REPLAY_MAX_PORTS);
		return -1;
	}
	if (n_txq < 1 || n_txq > 16) {
		snprintf(err, errlen, "replay: %u tx queues (1..16)", n_txq);
		return -1;
	}
	char buf[1024];
	snprintf(buf, sizeof(buf), "%s", spec + strlen(OFB_REPLAY_PREFIX));
	struct replay *r = &replays[n_replays];
	memset(r, 0, sizeof(*r));
	uint64_t loops = 0;
	char *save = NULL, *path = strtok_r(buf, ",", &save);
	for (char *kv = strtok_r(NULL, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		char *end;
		if (strncmp(kv, "loops=", 6) == 0) {
			loops = strtoull(kv + 6, &end, 10);
			if (*end || loops == 0) {
				snprintf(err, errlen, "replay: %s: loops wants a count >= 1", spec);
				return -1;
			}
		} else if (strncmp(kv, "wait_ms=", 8) == 0) {
			uint64_t ms = strtoull(kv + 8, &end, 10);
			if (*end || ms > 600000) {
				snprintf(err, errlen, "replay: %s: wait_ms wants 0..600000", spec);
				return -1;
			}
			r->wait_cycles = ms * rte_get_tsc_hz() / 1000;
		} else if (strcmp(kv, "copy=1") == 0) {
			r->mode = REPLAY_COPY;
		} else if (strcmp(kv, "copy=stream") == 0) {
			r->mode = REPLAY_STREAM;
		} else if (strcmp(kv, "copy=0") == 0) {
			r->mode = REPLAY_REF;
		} else {
			snprintf(err, errlen, "replay: %s: unknown option %s (loops=K, copy=0|1|stream, "
				 "wait_ms=N)",
				 spec, kv);
			return -1;
		}
	}
	if (!path || !*path) {
		snprintf(err, errlen, "replay: %s: no pcap path", spec);
		return -1;
	}
	long n = count_frames(path, err, errlen);
	if (n < 0)
		return -1;
	r->n_frames = (uint32_t)n;
	r->limit = loops * (uint64_t)n;
	unsigned id = n_replays;
	char name[RTE_MEMPOOL_NAMESIZE];
	snprintf(name, sizeof(name), "replay%u_pool", id);
	/* copies: the application holds at most a few bursts per queue, plus the pool caches */
	unsigned n_mbufs = (unsigned)n + (r->mode != REPLAY_REF ? 16384 : 0) + 1024;
	r->pool = rte_pktmbuf_pool_create(name, n_mbufs, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE, socket);
	snprintf(name, sizeof(name), "replay%u_rx", id);
	r->ring = rte_ring_create(name, (unsigned)n, socket,
				  RING_F_SP_ENQ | RING_F_SC_DEQ | RING_F_EXACT_SZ);
	struct rte_ring *tx[16];
	unsigned q;
	for (q = 0; q < n_txq; q++) {
		snprintf(name, sizeof(name), "replay%u_tx%u", id, q);
		tx[q] = rte_ring_create(name, 1024, socket, RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (!tx[q])
			break;
	}
	if (!r->pool || !r->ring || q < n_txq) {
		snprintf(err, errlen, "replay: %s: no memory for %ld frames (%s)", spec, n,
			 rte_strerror(rte_errno));
		return -1;
	}
	char pname[32];
	snprintf(pname, sizeof(pname), "replay%u", id);  /* the ethdev: net_ring_replayN */
	int port = rte_eth_from_rings(pname, &r->ring, 1, tx, (unsigned)n_txq, socket);
	if (port < 0) {
		snprintf(err, errlen, "replay: %s: cannot create the ring port (%s)", spec,
			 rte_strerror(rte_errno));
		return -1;
	}
	r->port_id = (uint16_t)port;
	if (load_pcap(r, path, err, errlen) != 0)
		return -1;
	if (r->mode == REPLAY_STREAM && pack_frames(r, socket, spec, err, errlen) != 0)
		return -1;
	n_replays++;
	return port;
}

int ofb_replay_arm(uint16_t port_id)
{
	struct replay *r = replay_of(port_id);
	if (!r)
		return -1;
	r->start_tsc = rte_rdtsc() + r->wait_cycles;
	return rte_eth_add_rx_callback(port_id, 0, replay_rx, r) ? 0 : -1;
}

void ofb_replay_counts(uint16_t port_id, uint64_t *given, uint32_t *n_frames)
{
	struct replay *r = replay_of(port_id);
	*given = r ? r->given : 0;
	*n_frames = r ? r->n_frames : 0;
}

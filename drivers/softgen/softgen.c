/* softgen: paced DPDK traffic generator with per-stream sequence and latency accounting.
 * Design, signature layout, control protocol and concurrency rules: softgen.h.
 *
 * Usage: softgen <EAL args> -- --ctl <unix socket path> [--burst N]
 * Every DPDK port the EAL probes (--vdev, -a) becomes a softgen port, numbered in probe order.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_memcpy.h>
#include <rte_mempool.h>
#include <rte_prefetch.h>

#include "softgen.h"

#define NB_MBUF_PER_PORT 8192
#define MBUF_CACHE 256
#define NB_DESC 1024

static volatile bool force_quit;

struct field_var {
	uint16_t off;
	uint8_t len;    /* 1, 2 or 4 bytes, big endian in the frame */
	uint32_t count; /* values cycle base, base+step, ... count of them */
	uint32_t step;
};

struct tpl {
	uint16_t len;
	/* len rounded up to whole 64 B blocks when the mbuf has room for that (data zero-padded to
	 * it): the hot loop then copies fixed blocks instead of calling a variable-size memcpy,
	 * which was ~1/4 of softgen's own per-packet time at 64 B.  0: copy len bytes. */
	uint16_t copy_len;
	uint8_t *data;
};

/* Written by the control thread while stopped; runtime fields owned by the worker. */
struct tx_stream {
	bool defined;
	uint16_t port;
	bool latency;
	int16_t l3_off; /* -1: no IPv4 header checksum to fix after field variation */
	uint64_t pps;
	uint64_t count;        /* 0: unlimited */
	uint64_t duration_tsc; /* 0: unlimited */
	uint8_t nvar;
	struct field_var var[SOFTGEN_MAX_VARS];
	uint32_t ntpl;
	struct tpl *tpl; /* malloc'd array of ntpl */
	/* runtime (worker) */
	bool active;
	uint64_t start_tsc;
	uint64_t end_tsc;   /* when the schedule first said "done" (0: not yet) */
	uint64_t grace_tsc; /* how long after that a preempted core may still catch up */
	double pkts_per_tsc;
	uint64_t offered; /* packets the schedule asked for so far */
	uint64_t tx;      /* packets the port accepted */
	uint64_t unsent;  /* refused by the port or never built because the core fell behind */
	uint64_t refused; /* the part of unsent the port refused (a full ring: backpressure) */
	uint64_t tx_bytes;
	uint64_t first_tx_tsc; /* TSC of the first and the last burst the port accepted packets */
	uint64_t last_tx_tsc;  /* of: the window a TX rate is computed over (0: none yet) */
	uint32_t seq;
	/* Per-packet cursors kept beside seq so the hot loop needs no division:
	 * tpl_next == seq % ntpl, var_idx[v] == seq % var[v].count. */
	uint32_t tpl_next;
	uint32_t var_idx[SOFTGEN_MAX_VARS];
	uint16_t sig_sid; /* the signature's stream field: id | SOFTGEN_LAT_FLAG */
} __rte_cache_aligned;

struct rx_stream {
	uint64_t rx;
	uint64_t rx_bytes;
	uint64_t dup;
	uint64_t ooo;   /* arrived after a later sequence number */
	int64_t gaps;   /* provisional loss seen from sequence jumps, corrected by late arrivals */
	uint32_t next_seq;
	bool seen;
	uint64_t win[SOFTGEN_SEQ_WINDOW / 64];
	uint64_t lat_n, lat_min_ns, lat_max_ns, lat_sum_ns;
	uint64_t hist[SOFTGEN_HIST_BUCKETS];
} __rte_cache_aligned;

struct port_stats {
	uint64_t tx, tx_bytes, unsent, rx, rx_bytes, rx_other;
} __rte_cache_aligned;

enum mbox_cmd { MB_NONE = 0, MB_START, MB_STOP, MB_CLEAR };

/* What the rig did during a trial (issue 44: did the generator or the box stall, not the
 * DUT?), on its own cache line, written by the worker only and reset at each start:
 * - max_gap_tsc: the longest time between two passes of the worker loop (one TSC read per
 *   pass, not per packet).  The worker both sends (TX schedule) and receives, so a gap is how
 *   long neither happened: a preempted worker, an interrupt, a page fault.
 * - rx_full_run[p] / rx_full_run_max[p]: consecutive RX bursts that came back full (the ring
 *   held at least a burst more), and the longest such run of the trial.  burst x (run + 1) is a
 *   lower bound of the RX ring's occupancy high-water mark (memif and virtio_user have no
 *   rte_eth_rx_queue_count in DPDK 22.11, so this proxy is used on every PMD). */
struct rig_state {
	uint64_t last_pass_tsc;
	uint64_t max_gap_tsc;
	uint64_t passes;
	uint32_t rx_full_run[SOFTGEN_MAX_PORTS];
	uint32_t rx_full_run_max[SOFTGEN_MAX_PORTS];
} __rte_cache_aligned;

static struct {
	uint16_t nb_ports;
	unsigned burst;
	uint64_t tsc_hz;
	double ns_per_tsc;
	struct rte_mempool *pool;
	struct tx_stream *tx; /* [SOFTGEN_MAX_STREAMS] */
	struct rx_stream *rx; /* [SOFTGEN_MAX_STREAMS] */
	struct port_stats port[SOFTGEN_MAX_PORTS];
	volatile int running;
	volatile int mbox; /* enum mbox_cmd, written by control, cleared by worker */
	uint64_t trial;    /* incremented on each start */
	/* worker only: ids of the streams still sending in this trial, so the hot loop touches
	 * only those (scanning all SOFTGEN_MAX_STREAMS cache lines per burst cost ~2/3 of TX) */
	uint16_t active_ids[SOFTGEN_MAX_STREAMS];
	unsigned n_active;
	/* rig measurements of the trial (issue 44), worker only, reset at each start: see
	 * struct rig_state */
	struct rig_state rig;
} G;

static void signal_handler(int signum)
{
	if (signum == SIGINT || signum == SIGTERM)
		force_quit = true;
}

/* ---------------------------------------------------------------- worker (fast path) */

static inline void put_be(uint8_t *p, uint8_t len, uint32_t v)
{
	if (len == 1) {
		p[0] = (uint8_t)v;
	} else if (len == 2) {
		p[0] = (uint8_t)(v >> 8);
		p[1] = (uint8_t)v;
	} else {
		p[0] = (uint8_t)(v >> 24);
		p[1] = (uint8_t)(v >> 16);
		p[2] = (uint8_t)(v >> 8);
		p[3] = (uint8_t)v;
	}
}

static inline uint32_t get_be(const uint8_t *p, uint8_t len)
{
	if (len == 1)
		return p[0];
	if (len == 2)
		return ((uint32_t)p[0] << 8) | p[1];
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

/* Writes the next frame of stream s into the fresh mbuf m (data_len 0, one segment, room for
 * the frame: checked when the template was loaded). */
static inline void fill_packet(struct tx_stream *s, struct rte_mbuf *m, uint64_t tsc)
{
	uint32_t seq = s->seq++;
	const struct tpl *t = &s->tpl[s->tpl_next];
	if (++s->tpl_next == s->ntpl)
		s->tpl_next = 0;
	uint8_t *d = rte_pktmbuf_mtod(m, uint8_t *);
	m->data_len = t->len;
	m->pkt_len = t->len;
	if (likely(t->copy_len)) {
		for (unsigned off = 0; off < t->copy_len; off += 64)
			rte_mov64(d + off, t->data + off);
	} else {
		rte_memcpy(d, t->data, t->len);
	}
	for (unsigned v = 0; v < s->nvar; v++) {
		const struct field_var *fv = &s->var[v];
		uint32_t base = get_be(t->data + fv->off, fv->len);
		put_be(d + fv->off, fv->len, base + s->var_idx[v] * fv->step);
		if (++s->var_idx[v] == fv->count)
			s->var_idx[v] = 0;
	}
	if (s->nvar && s->l3_off >= 0) {
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(d + s->l3_off);
		ip->hdr_checksum = 0;
		ip->hdr_checksum = rte_ipv4_cksum(ip);
	}
	uint8_t *sig = d + t->len - SOFTGEN_SIG_LEN;
	uint32_t magic = SOFTGEN_MAGIC;
	memcpy(sig, &magic, 4);
	memcpy(sig + 4, &s->sig_sid, 2);
	memcpy(sig + 6, &seq, 4);
	memcpy(sig + 10, &tsc, 8);
}

/* Sends what the schedule of stream s asks for by `now`; returns false when it has ended. */
static inline bool tx_stream_step(struct tx_stream *s, uint64_t now)
{
	uint64_t elapsed = now - s->start_tsc;
	bool ends = false;
	if (s->duration_tsc && elapsed >= s->duration_tsc) {
		elapsed = s->duration_tsc;
		ends = true;
	}
	uint64_t target = (uint64_t)((double)elapsed * s->pkts_per_tsc);
	if (s->count && target >= s->count) {
		target = s->count;
		ends = true;
	}
	uint64_t due = target - s->offered;
	if (due > G.burst)
		due = G.burst;
	if (due) {
		struct rte_mbuf *pkts[SOFTGEN_BURST * 2];
		if (rte_pktmbuf_alloc_bulk(G.pool, pkts, (unsigned)due) != 0)
			return true; /* pool empty for now (mbufs in flight): retry next loop */
		uint64_t bytes = 0;
		for (unsigned i = 0; i < due; i++) {
			fill_packet(s, pkts[i], now);
			bytes += pkts[i]->pkt_len;
		}
		uint16_t sent = rte_eth_tx_burst(s->port, 0, pkts, (uint16_t)due);
		for (unsigned i = sent; i < due; i++)
			bytes -= pkts[i]->pkt_len;
		if (unlikely(sent < due))
			rte_pktmbuf_free_bulk(&pkts[sent], (unsigned)(due - sent));
		if (likely(sent)) {
			if (unlikely(s->first_tx_tsc == 0))
				s->first_tx_tsc = now;
			s->last_tx_tsc = now;
		}
		s->offered += due;
		s->tx += sent;
		s->tx_bytes += bytes;
		s->unsent += due - sent;
		s->refused += due - sent;
		struct port_stats *ps = &G.port[s->port];
		ps->tx += sent;
		ps->tx_bytes += bytes;
		ps->unsent += due - sent;
	}
	if (ends && s->offered < target) {
		/* The schedule is over but the core is behind it (typically it was preempted on a
		 * shared box just before the end): let it catch up in bursts for a short grace, as it
		 * does mid-trial, before what is still owed counts as unsent. */
		if (s->end_tsc == 0)
			s->end_tsc = now;
		if (now - s->end_tsc < s->grace_tsc)
			return true;
	}
	if (ends) {
		/* The schedule is over: what it asked for and the core did not build is unsent. */
		uint64_t behind = target - s->offered;
		s->unsent += behind;
		G.port[s->port].unsent += behind;
		s->offered = target;
		return false;
	}
	return true;
}

static inline bool win_test_set(struct rx_stream *r, uint32_t seq)
{
	uint32_t b = seq % SOFTGEN_SEQ_WINDOW;
	uint64_t mask = 1ull << (b & 63);
	bool was = r->win[b >> 6] & mask;
	r->win[b >> 6] |= mask;
	return was;
}

static inline void win_clear(struct rx_stream *r, uint32_t seq)
{
	uint32_t b = seq % SOFTGEN_SEQ_WINDOW;
	r->win[b >> 6] &= ~(1ull << (b & 63));
}

static inline void rx_account(struct rx_stream *r, uint32_t seq, uint32_t len)
{
	r->rx++;
	r->rx_bytes += len;
	if (unlikely(!r->seen)) {
		r->seen = true;
		r->next_seq = 0;
	}
	if (likely(seq == r->next_seq)) {
		win_test_set(r, seq);
		r->next_seq = seq + 1;
	} else if ((int32_t)(seq - r->next_seq) > 0) { /* jump ahead: the skipped ones are missing so far */
		uint32_t gap = seq - r->next_seq;
		r->gaps += gap;
		uint32_t nclear = gap < SOFTGEN_SEQ_WINDOW ? gap : SOFTGEN_SEQ_WINDOW;
		for (uint32_t i = 0; i < nclear; i++)
			win_clear(r, seq - 1 - i);
		win_test_set(r, seq);
		r->next_seq = seq + 1;
	} else { /* behind: a late packet or a duplicate */
		uint32_t behind = r->next_seq - seq;
		if (behind > SOFTGEN_SEQ_WINDOW) {
			r->ooo++; /* too old to tell; counted as late, as a reordering */
			r->gaps--;
		} else if (win_test_set(r, seq)) {
			r->dup++;
		} else {
			r->ooo++;
			r->gaps--;
		}
	}
}

static inline void rx_packet(uint16_t port, struct rte_mbuf *m, uint64_t now)
{
	struct port_stats *ps = &G.port[port];
	ps->rx++;
	ps->rx_bytes += m->pkt_len;
	if (unlikely(m->pkt_len < SOFTGEN_SIG_LEN)) {
		ps->rx_other++;
		return;
	}
	uint8_t buf[SOFTGEN_SIG_LEN];
	const uint8_t *sig = rte_pktmbuf_read(m, m->pkt_len - SOFTGEN_SIG_LEN, SOFTGEN_SIG_LEN, buf);
	uint32_t magic;
	memcpy(&magic, sig, 4);
	if (magic != SOFTGEN_MAGIC) {
		ps->rx_other++;
		return;
	}
	uint16_t sid;
	uint32_t seq;
	uint64_t tsc;
	memcpy(&sid, sig + 4, 2);
	memcpy(&seq, sig + 6, 4);
	memcpy(&tsc, sig + 10, 8);
	uint16_t id = sid & (uint16_t)~SOFTGEN_LAT_FLAG;
	if (unlikely(id >= SOFTGEN_MAX_STREAMS)) {
		ps->rx_other++;
		return;
	}
	struct rx_stream *r = &G.rx[id];
	rx_account(r, seq, m->pkt_len);
	if (sid & SOFTGEN_LAT_FLAG) {
		uint64_t ns = now > tsc ? (uint64_t)((double)(now - tsc) * G.ns_per_tsc) : 0;
		if (r->lat_n == 0 || ns < r->lat_min_ns)
			r->lat_min_ns = ns;
		if (ns > r->lat_max_ns)
			r->lat_max_ns = ns;
		r->lat_n++;
		r->lat_sum_ns += ns;
		r->hist[softgen_hist_index(ns)]++;
	}
}

static void __rte_cold worker_do_mbox(void)
{
	int cmd = __atomic_load_n(&G.mbox, __ATOMIC_ACQUIRE);
	if (cmd == MB_NONE)
		return;
	uint64_t now = rte_rdtsc();
	if (cmd == MB_START) {
		G.n_active = 0;
		for (unsigned i = 0; i < SOFTGEN_MAX_STREAMS; i++) {
			struct tx_stream *s = &G.tx[i];
			if (!s->defined || s->ntpl == 0)
				continue;
			s->active = true;
			G.active_ids[G.n_active++] = (uint16_t)i;
			s->start_tsc = now;
			s->end_tsc = 0;
			s->pkts_per_tsc = (double)s->pps / (double)G.tsc_hz;
			/* grace: 10 % of the scheduled length, at least 20 ms, at most 200 ms */
			uint64_t len_tsc = s->duration_tsc;
			if (len_tsc == 0 && s->count)
				len_tsc = (uint64_t)((double)s->count / s->pkts_per_tsc);
			s->grace_tsc = RTE_MIN(RTE_MAX(len_tsc / 10, G.tsc_hz / 50), G.tsc_hz / 5);
			s->offered = s->tx = s->unsent = s->refused = s->tx_bytes = 0;
			s->first_tx_tsc = s->last_tx_tsc = 0;
			s->seq = 0;
			s->tpl_next = 0;
			memset(s->var_idx, 0, sizeof(s->var_idx));
			s->sig_sid = (uint16_t)(i | (s->latency ? SOFTGEN_LAT_FLAG : 0));
			memset(&G.rx[i], 0, sizeof(G.rx[i]));
		}
		G.trial++;
		memset(&G.rig, 0, sizeof(G.rig));
		G.rig.last_pass_tsc = rte_rdtsc();
		__atomic_store_n(&G.running, 1, __ATOMIC_RELEASE);
	} else if (cmd == MB_STOP) {
		/* An explicit stop ends the schedule where it is: nothing more is owed. */
		G.n_active = 0;
		for (unsigned i = 0; i < SOFTGEN_MAX_STREAMS; i++) {
			struct tx_stream *s = &G.tx[i];
			s->active = false;
		}
		__atomic_store_n(&G.running, 0, __ATOMIC_RELEASE);
	} else if (cmd == MB_CLEAR) {
		G.n_active = 0;
		for (unsigned i = 0; i < SOFTGEN_MAX_STREAMS; i++) {
			G.tx[i].active = false;
			G.tx[i].offered = G.tx[i].tx = G.tx[i].unsent = G.tx[i].refused = G.tx[i].tx_bytes = 0;
			G.tx[i].first_tx_tsc = G.tx[i].last_tx_tsc = 0;
		}
		memset(G.rx, 0, sizeof(*G.rx) * SOFTGEN_MAX_STREAMS);
		memset(G.port, 0, sizeof(G.port));
		__atomic_store_n(&G.running, 0, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&G.mbox, MB_NONE, __ATOMIC_RELEASE);
}

static int worker_main(__rte_unused void *arg)
{
	struct rte_mbuf *pkts[SOFTGEN_BURST];
	printf("softgen: worker on lcore %u, %u ports\n", rte_lcore_id(), G.nb_ports);
	fflush(stdout);
	G.rig.last_pass_tsc = rte_rdtsc();
	while (!force_quit) {
		worker_do_mbox();
		/* the rig's gap: one TSC read per pass (the TX schedule reads the same one) */
		uint64_t pass_tsc = rte_rdtsc();
		uint64_t gap = pass_tsc - G.rig.last_pass_tsc;
		G.rig.last_pass_tsc = pass_tsc;
		if (unlikely(gap > G.rig.max_gap_tsc))
			G.rig.max_gap_tsc = gap;
		G.rig.passes++;
		if (G.running) {
			uint64_t now = pass_tsc;
			for (unsigned k = 0; k < G.n_active;) {
				struct tx_stream *s = &G.tx[G.active_ids[k]];
				if (tx_stream_step(s, now)) {
					k++;
				} else {
					s->active = false;
					G.active_ids[k] = G.active_ids[--G.n_active];
				}
			}
			if (G.n_active == 0)
				__atomic_store_n(&G.running, 0, __ATOMIC_RELEASE);
		}
		for (uint16_t p = 0; p < G.nb_ports; p++) {
			uint16_t n = rte_eth_rx_burst(p, 0, pkts, (uint16_t)G.burst);
			if (unlikely(n == G.burst)) {
				if (++G.rig.rx_full_run[p] > G.rig.rx_full_run_max[p])
					G.rig.rx_full_run_max[p] = G.rig.rx_full_run[p];
			} else {
				G.rig.rx_full_run[p] = 0;
			}
			if (!n)
				continue;
			uint64_t now = rte_rdtsc();
			for (uint16_t i = 0; i < n; i++) {
				if (i + 1 < n)
					rte_prefetch0(rte_pktmbuf_mtod(pkts[i + 1], void *));
				rx_packet(p, pkts[i], now);
			}
			rte_pktmbuf_free_bulk(pkts, n);
		}
	}
	return 0;
}

/* ---------------------------------------------------------------- control (cold path) */

struct out {
	char *buf;
	size_t len, cap;
};

static void __rte_cold out_printf(struct out *o, const char *fmt, ...)
{
	va_list ap;
	for (;;) {
		va_start(ap, fmt);
		int n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if (o->len + (size_t)n < o->cap) {
			o->len += (size_t)n;
			return;
		}
		o->cap = (o->cap + (size_t)n) * 2;
		o->buf = realloc(o->buf, o->cap);
		if (!o->buf)
			rte_exit(EXIT_FAILURE, "out of memory\n");
	}
}

static void __rte_cold mbox_send(int cmd)
{
	__atomic_store_n(&G.mbox, cmd, __ATOMIC_RELEASE);
	while (__atomic_load_n(&G.mbox, __ATOMIC_ACQUIRE) != MB_NONE && !force_quit)
		rte_delay_us_sleep(50);
}

static void __rte_cold free_streams(void)
{
	for (unsigned i = 0; i < SOFTGEN_MAX_STREAMS; i++) {
		struct tx_stream *s = &G.tx[i];
		for (unsigned t = 0; t < s->ntpl; t++)
			free(s->tpl[t].data);
		free(s->tpl);
		s->tpl = NULL;
		s->ntpl = 0;
		s->defined = false;
	}
}

/* key=value lookup in a tokenised request; returns NULL when absent */
static const char *arg(char **tok, int ntok, const char *key)
{
	size_t kl = strlen(key);
	for (int i = 1; i < ntok; i++)
		if (strncmp(tok[i], key, kl) == 0 && tok[i][kl] == '=')
			return tok[i] + kl + 1;
	return NULL;
}

static bool parse_u64(const char *s, uint64_t *v)
{
	if (!s || !*s)
		return false;
	char *end;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 10);
	if (errno || *end)
		return false;
	*v = x;
	return true;
}

#define FAIL(...)                                                                  \
	do {                                                                       \
		char m_[256];                                                      \
		snprintf(m_, sizeof(m_), __VA_ARGS__);                             \
		out_printf(o, "{\"ok\":false,\"error\":\"%s\"}", m_);              \
		return;                                                            \
	} while (0)

static void __rte_cold cmd_stream(char **tok, int ntok, struct out *o)
{
	uint64_t id, port, pps, count = 0, dur_us = 0, lat = 0, l3;
	if (!parse_u64(arg(tok, ntok, "id"), &id) || id >= SOFTGEN_MAX_STREAMS)
		FAIL("stream: id missing or >= %d", SOFTGEN_MAX_STREAMS);
	if (!parse_u64(arg(tok, ntok, "port"), &port) || port >= G.nb_ports)
		FAIL("stream %" PRIu64 ": port missing or not one of the %u ports", id, G.nb_ports);
	if (!parse_u64(arg(tok, ntok, "pps"), &pps) || pps == 0)
		FAIL("stream %" PRIu64 ": pps missing or 0", id);
	if (arg(tok, ntok, "count") && !parse_u64(arg(tok, ntok, "count"), &count))
		FAIL("stream %" PRIu64 ": bad count", id);
	if (arg(tok, ntok, "duration_us") && !parse_u64(arg(tok, ntok, "duration_us"), &dur_us))
		FAIL("stream %" PRIu64 ": bad duration_us", id);
	if (arg(tok, ntok, "lat") && !parse_u64(arg(tok, ntok, "lat"), &lat))
		FAIL("stream %" PRIu64 ": bad lat", id);
	struct tx_stream *s = &G.tx[id];
	for (unsigned t = 0; t < s->ntpl; t++)
		free(s->tpl[t].data);
	free(s->tpl);
	memset(s, 0, sizeof(*s));
	s->l3_off = -1;
	if (arg(tok, ntok, "l3")) {
		if (!parse_u64(arg(tok, ntok, "l3"), &l3) || l3 > 256)
			FAIL("stream %" PRIu64 ": bad l3", id);
		s->l3_off = (int16_t)l3;
	}
	for (int i = 1; i < ntok; i++) {
		if (strncmp(tok[i], "var=", 4) != 0)
			continue;
		unsigned off, len, cnt, step;
		if (s->nvar >= SOFTGEN_MAX_VARS)
			FAIL("stream %" PRIu64 ": more than %d var=", id, SOFTGEN_MAX_VARS);
		if (sscanf(tok[i] + 4, "%u:%u:%u:%u", &off, &len, &cnt, &step) != 4 ||
		    (len != 1 && len != 2 && len != 4) || cnt == 0 || off > SOFTGEN_MAX_FRAME)
			FAIL("stream %" PRIu64 ": bad var=%s (want OFF:LEN:COUNT:STEP, LEN 1/2/4)", id, tok[i] + 4);
		s->var[s->nvar++] = (struct field_var){(uint16_t)off, (uint8_t)len, cnt, step};
	}
	s->port = (uint16_t)port;
	s->pps = pps;
	s->count = count;
	s->duration_tsc = dur_us * G.tsc_hz / 1000000;
	s->latency = lat != 0;
	s->defined = true;
	out_printf(o, "{\"ok\":true}");
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static void __rte_cold cmd_tpl(char **tok, int ntok, struct out *o)
{
	uint64_t id;
	if (!parse_u64(arg(tok, ntok, "id"), &id) || id >= SOFTGEN_MAX_STREAMS || !G.tx[id].defined)
		FAIL("tpl: id missing or stream not defined");
	struct tx_stream *s = &G.tx[id];
	const char *hex = arg(tok, ntok, "hex");
	size_t hl = hex ? strlen(hex) : 0;
	if (hl == 0 || hl % 2)
		FAIL("tpl %" PRIu64 ": hex missing or odd length", id);
	size_t len = hl / 2;
	if (len < 14 + SOFTGEN_SIG_LEN || len > SOFTGEN_MAX_FRAME ||
	    len > (size_t)(rte_pktmbuf_data_room_size(G.pool) - RTE_PKTMBUF_HEADROOM))
		FAIL("tpl %" PRIu64 ": %zu bytes, want %d..%u", id, len, 14 + SOFTGEN_SIG_LEN,
		     (unsigned)(rte_pktmbuf_data_room_size(G.pool) - RTE_PKTMBUF_HEADROOM));
	if (s->ntpl >= SOFTGEN_MAX_TPLS)
		FAIL("tpl %" PRIu64 ": more than %d templates", id, SOFTGEN_MAX_TPLS);
	for (unsigned v = 0; v < s->nvar; v++)
		if (s->var[v].off + s->var[v].len > len - SOFTGEN_SIG_LEN)
			FAIL("tpl %" PRIu64 ": var at %u overlaps the signature or the end", id, s->var[v].off);
	if (s->l3_off >= 0 && (size_t)s->l3_off + 20 > len - SOFTGEN_SIG_LEN)
		FAIL("tpl %" PRIu64 ": l3 header beyond the frame", id);
	struct tpl *arr = realloc(s->tpl, sizeof(*arr) * (s->ntpl + 1));
	if (!arr)
		FAIL("out of memory");
	s->tpl = arr;
	size_t room = rte_pktmbuf_data_room_size(G.pool) - RTE_PKTMBUF_HEADROOM;
	size_t padded = RTE_ALIGN_CEIL(len, 64);
	uint8_t *data = calloc(1, padded);
	if (!data)
		FAIL("out of memory");
	for (size_t i = 0; i < len; i++) {
		int h = hexval(hex[2 * i]), l = hexval(hex[2 * i + 1]);
		if (h < 0 || l < 0) {
			free(data);
			FAIL("tpl %" PRIu64 ": not hex at %zu", id, 2 * i);
		}
		data[i] = (uint8_t)(h << 4 | l);
	}
	s->tpl[s->ntpl].len = (uint16_t)len;
	s->tpl[s->ntpl].copy_len = padded <= room ? (uint16_t)padded : 0;
	s->tpl[s->ntpl].data = data;
	s->ntpl++;
	out_printf(o, "{\"ok\":true,\"ntpl\":%u}", s->ntpl);
}

static void __rte_cold cmd_ports(struct out *o)
{
	out_printf(o, "{\"ok\":true,\"ports\":[");
	for (uint16_t p = 0; p < G.nb_ports; p++) {
		char name[RTE_ETH_NAME_MAX_LEN] = "";
		struct rte_ether_addr mac;
		struct rte_eth_link link;
		rte_eth_dev_get_name_by_port(p, name);
		rte_eth_macaddr_get(p, &mac);
		memset(&link, 0, sizeof(link));
		rte_eth_link_get_nowait(p, &link);
		out_printf(o, "%s{\"id\":%u,\"name\":\"%s\",\"mac\":\"%02x:%02x:%02x:%02x:%02x:%02x\","
			      "\"link_up\":%s,\"speed_mbps\":%u}",
			   p ? "," : "", p, name, mac.addr_bytes[0], mac.addr_bytes[1], mac.addr_bytes[2],
			   mac.addr_bytes[3], mac.addr_bytes[4], mac.addr_bytes[5],
			   link.link_status ? "true" : "false",
			   link.link_speed == RTE_ETH_SPEED_NUM_UNKNOWN ? 0 : link.link_speed);
	}
	out_printf(o, "]}");
}

static void __rte_cold cmd_stats(struct out *o)
{
	/* tsc: when these counters were read, so that a client sampling them during a trial gets
	 * rates over exact windows whatever the control socket's delay */
	out_printf(o, "{\"ok\":true,\"version\":\"%s\",\"tsc_hz\":%" PRIu64 ",\"tsc\":%" PRIu64
		      ",\"running\":%s,\"trial\":%" PRIu64 ",\"ports\":[",
		   SOFTGEN_VERSION, G.tsc_hz, rte_rdtsc(), G.running ? "true" : "false", G.trial);
	for (uint16_t p = 0; p < G.nb_ports; p++) {
		const struct port_stats *ps = &G.port[p];
		out_printf(o, "%s{\"id\":%u,\"tx\":%" PRIu64 ",\"tx_bytes\":%" PRIu64 ",\"unsent\":%" PRIu64
			      ",\"rx\":%" PRIu64 ",\"rx_bytes\":%" PRIu64 ",\"rx_other\":%" PRIu64 "}",
			   p ? "," : "", p, ps->tx, ps->tx_bytes, ps->unsent, ps->rx, ps->rx_bytes, ps->rx_other);
	}
	/* the trial's rig measurements (struct rig_state; read while the worker may write them:
	 * naturally aligned words, a recent value) */
	out_printf(o, "],\"rig\":{\"max_gap_ns\":%" PRIu64 ",\"passes\":%" PRIu64 ",\"burst\":%u,"
		      "\"rx_full_run_max\":[",
		   (uint64_t)((double)G.rig.max_gap_tsc * G.ns_per_tsc), G.rig.passes, G.burst);
	for (uint16_t p = 0; p < G.nb_ports; p++)
		out_printf(o, "%s%u", p ? "," : "", G.rig.rx_full_run_max[p]);
	out_printf(o, "]},\"tx_streams\":[");
	bool first = true;
	for (unsigned i = 0; i < SOFTGEN_MAX_STREAMS; i++) {
		const struct tx_stream *s = &G.tx[i];
		if (!s->defined)
			continue;
		/* the TX window: first to last accepted burst (a rate over it does not count start-up
		 * or a catch-up grace as sending time the way duration/count would) */
		uint64_t first_tsc = s->first_tx_tsc, last_tsc = s->last_tx_tsc;
		uint64_t window_ns = last_tsc > first_tsc ? (uint64_t)((double)(last_tsc - first_tsc) * G.ns_per_tsc) : 0;
		out_printf(o, "%s{\"id\":%u,\"port\":%u,\"active\":%s,\"offered\":%" PRIu64 ",\"tx\":%" PRIu64
			      ",\"tx_bytes\":%" PRIu64 ",\"unsent\":%" PRIu64 ",\"refused\":%" PRIu64
			      ",\"tx_window_ns\":%" PRIu64 "}",
			   first ? "" : ",", i, s->port, s->active ? "true" : "false", s->offered, s->tx,
			   s->tx_bytes, s->unsent, s->refused, window_ns);
		first = false;
	}
	out_printf(o, "],\"rx_streams\":[");
	first = true;
	for (unsigned i = 0; i < SOFTGEN_MAX_STREAMS; i++) {
		const struct rx_stream *r = &G.rx[i];
		if (!r->rx)
			continue;
		out_printf(o, "%s{\"id\":%u,\"rx\":%" PRIu64 ",\"rx_bytes\":%" PRIu64 ",\"dup\":%" PRIu64
			      ",\"ooo\":%" PRIu64 ",\"gaps\":%" PRId64 ",\"lat_n\":%" PRIu64 ",\"lat_min_ns\":%" PRIu64
			      ",\"lat_max_ns\":%" PRIu64 ",\"lat_sum_ns\":%" PRIu64 ",\"hist\":[",
			   first ? "" : ",", i, r->rx, r->rx_bytes, r->dup, r->ooo, r->gaps, r->lat_n,
			   r->lat_min_ns, r->lat_max_ns, r->lat_sum_ns);
		bool hf = true;
		for (unsigned b = 0; b < SOFTGEN_HIST_BUCKETS; b++) {
			if (!r->hist[b])
				continue;
			out_printf(o, "%s[%u,%" PRIu64 "]", hf ? "" : ",", b, r->hist[b]);
			hf = false;
		}
		out_printf(o, "]}");
		first = false;
	}
	out_printf(o, "]}");
}

/* Handles one request line; returns false when the client asked softgen to quit. */
static bool __rte_cold handle_line(char *line, struct out *o)
{
	char *tok[64];
	int ntok = 0;
	for (char *save = NULL, *t = strtok_r(line, " \t\r", &save); t && ntok < 64;
	     t = strtok_r(NULL, " \t\r", &save))
		tok[ntok++] = t;
	if (ntok == 0) {
		out_printf(o, "{\"ok\":false,\"error\":\"empty request\"}");
		return true;
	}
	const char *c = tok[0];
	bool running = __atomic_load_n(&G.running, __ATOMIC_ACQUIRE);
	if (!strcmp(c, "ports")) {
		cmd_ports(o);
	} else if (!strcmp(c, "stream") || !strcmp(c, "tpl")) {
		if (running) {
			out_printf(o, "{\"ok\":false,\"error\":\"%s: streams are running, stop first\"}", c);
		} else if (!strcmp(c, "stream")) {
			cmd_stream(tok, ntok, o);
		} else {
			cmd_tpl(tok, ntok, o);
		}
	} else if (!strcmp(c, "start")) {
		mbox_send(MB_STOP);
		mbox_send(MB_START);
		out_printf(o, "{\"ok\":true,\"trial\":%" PRIu64 "}", G.trial);
	} else if (!strcmp(c, "stop")) {
		mbox_send(MB_STOP);
		out_printf(o, "{\"ok\":true}");
	} else if (!strcmp(c, "clear")) {
		mbox_send(MB_CLEAR);
		free_streams();
		out_printf(o, "{\"ok\":true}");
	} else if (!strcmp(c, "stats")) {
		cmd_stats(o);
	} else if (!strcmp(c, "quit")) {
		out_printf(o, "{\"ok\":true}");
		return false;
	} else {
		out_printf(o, "{\"ok\":false,\"error\":\"unknown request '%s'\"}", c);
	}
	return true;
}

static bool __rte_cold write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return false;
		}
		buf += n;
		len -= (size_t)n;
	}
	return true;
}

/* Serves one client at a time until quit or a signal. */
static void __rte_cold control_loop(const char *path)
{
	int lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (lfd < 0 || strlen(path) >= sizeof(sa.sun_path))
		rte_exit(EXIT_FAILURE, "control socket path too long or socket() failed: %s\n", path);
	strcpy(sa.sun_path, path);
	unlink(path);
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 4) < 0)
		rte_exit(EXIT_FAILURE, "cannot listen on %s: %s\n", path, strerror(errno));
	printf("softgen: ready, control socket %s\n", path);
	fflush(stdout);
	size_t cap = 1 << 20;
	char *in = malloc(cap);
	struct out o = {.buf = malloc(1 << 16), .cap = 1 << 16};
	bool quit = false;
	while (!force_quit && !quit) {
		struct pollfd pl = {.fd = lfd, .events = POLLIN};
		if (poll(&pl, 1, 200) <= 0)
			continue;
		int cfd = accept(lfd, NULL, NULL);
		if (cfd < 0)
			continue;
		size_t have = 0;
		while (!force_quit && !quit) {
			struct pollfd pc = {.fd = cfd, .events = POLLIN};
			if (poll(&pc, 1, 200) <= 0)
				continue;
			if (have + 65536 > cap) {
				cap *= 2;
				in = realloc(in, cap);
				if (!in)
					rte_exit(EXIT_FAILURE, "out of memory\n");
			}
			ssize_t n = read(cfd, in + have, cap - have - 1);
			if (n <= 0)
				break;
			have += (size_t)n;
			char *nl;
			while (!quit && (nl = memchr(in, '\n', have)) != NULL) {
				*nl = 0;
				o.len = 0;
				quit = !handle_line(in, &o);
				out_printf(&o, "\n");
				if (!write_all(cfd, o.buf, o.len))
					break;
				size_t used = (size_t)(nl - in) + 1;
				memmove(in, nl + 1, have - used);
				have -= used;
			}
		}
		close(cfd);
	}
	close(lfd);
	unlink(path);
	free(in);
	free(o.buf);
	if (quit)
		force_quit = true;
}

/* ---------------------------------------------------------------- init */

static void port_init(uint16_t port)
{
	struct rte_eth_conf conf;
	struct rte_eth_dev_info info;
	memset(&conf, 0, sizeof(conf));
	int ret = rte_eth_dev_info_get(port, &info);
	if (ret != 0)
		rte_exit(EXIT_FAILURE, "port %u: dev_info: %s\n", port, strerror(-ret));
	if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE)
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE;
	ret = rte_eth_dev_configure(port, 1, 1, &conf);
	if (ret < 0)
		rte_exit(EXIT_FAILURE, "port %u: configure: %s\n", port, strerror(-ret));
	uint16_t nrx = NB_DESC, ntx = NB_DESC;
	rte_eth_dev_adjust_nb_rx_tx_desc(port, &nrx, &ntx);
	ret = rte_eth_rx_queue_setup(port, 0, nrx, rte_eth_dev_socket_id(port), NULL, G.pool);
	if (ret < 0)
		rte_exit(EXIT_FAILURE, "port %u: rx queue: %s\n", port, strerror(-ret));
	struct rte_eth_txconf txc = info.default_txconf;
	txc.offloads = conf.txmode.offloads;
	ret = rte_eth_tx_queue_setup(port, 0, ntx, rte_eth_dev_socket_id(port), &txc);
	if (ret < 0)
		rte_exit(EXIT_FAILURE, "port %u: tx queue: %s\n", port, strerror(-ret));
	ret = rte_eth_dev_start(port);
	if (ret < 0)
		rte_exit(EXIT_FAILURE, "port %u: start: %s\n", port, strerror(-ret));
	rte_eth_promiscuous_enable(port); /* not every PMD has it; a generator does not need it */
}

static void __rte_cold usage(const char *prg)
{
	fprintf(stderr, "usage: %s <EAL args> -- --ctl <unix socket path> [--burst N (1..%d)]\n", prg,
		SOFTGEN_BURST);
}

int main(int argc, char **argv)
{
	int ret = rte_eal_init(argc, argv);
	if (ret < 0)
		rte_exit(EXIT_FAILURE, "invalid EAL arguments\n");
	argc -= ret;
	argv += ret;
	const char *ctl = NULL;
	G.burst = SOFTGEN_BURST;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--ctl") && i + 1 < argc) {
			ctl = argv[++i];
		} else if (!strcmp(argv[i], "--burst") && i + 1 < argc) {
			G.burst = (unsigned)atoi(argv[++i]);
		} else {
			usage(argv[0]);
			rte_exit(EXIT_FAILURE, "unknown argument %s\n", argv[i]);
		}
	}
	if (!ctl || G.burst < 1 || G.burst > SOFTGEN_BURST) {
		usage(argv[0]);
		rte_exit(EXIT_FAILURE, "--ctl is required and --burst must be 1..%d\n", SOFTGEN_BURST);
	}
	signal(SIGINT, signal_handler);
	signal(SIGTERM, signal_handler);

	G.nb_ports = rte_eth_dev_count_avail();
	if (G.nb_ports == 0 || G.nb_ports > SOFTGEN_MAX_PORTS)
		rte_exit(EXIT_FAILURE, "need 1..%d ports, EAL gave %u (use --vdev or -a)\n", SOFTGEN_MAX_PORTS,
			 G.nb_ports);
	unsigned worker = rte_get_next_lcore(-1, 1, 0);
	if (worker >= RTE_MAX_LCORE)
		rte_exit(EXIT_FAILURE, "need 2 lcores (control + worker), e.g. -l 0,1\n");
	G.tsc_hz = rte_get_tsc_hz();
	G.ns_per_tsc = 1e9 / (double)G.tsc_hz;
	G.pool = rte_pktmbuf_pool_create("softgen_pool", NB_MBUF_PER_PORT * G.nb_ports, MBUF_CACHE, 0,
					 RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
	if (!G.pool)
		rte_exit(EXIT_FAILURE, "cannot create mbuf pool: %s\n", rte_strerror(rte_errno));
	G.tx = rte_zmalloc("softgen_tx", sizeof(*G.tx) * SOFTGEN_MAX_STREAMS, RTE_CACHE_LINE_SIZE);
	G.rx = rte_zmalloc("softgen_rx", sizeof(*G.rx) * SOFTGEN_MAX_STREAMS, RTE_CACHE_LINE_SIZE);
	if (!G.tx || !G.rx) {
		/* small EAL memory (-m): fall back to the heap, the worker only needs it to be aligned */
		G.tx = aligned_alloc(RTE_CACHE_LINE_SIZE, sizeof(*G.tx) * SOFTGEN_MAX_STREAMS);
		G.rx = aligned_alloc(RTE_CACHE_LINE_SIZE, sizeof(*G.rx) * SOFTGEN_MAX_STREAMS);
		if (!G.tx || !G.rx)
			rte_exit(EXIT_FAILURE, "cannot allocate stream tables\n");
		memset(G.tx, 0, sizeof(*G.tx) * SOFTGEN_MAX_STREAMS);
		memset(G.rx, 0, sizeof(*G.rx) * SOFTGEN_MAX_STREAMS);
	}
	for (uint16_t p = 0; p < G.nb_ports; p++)
		port_init(p);

	rte_eal_remote_launch(worker_main, NULL, worker);
	control_loop(ctl);
	force_quit = true;
	rte_eal_mp_wait_lcore();
	for (uint16_t p = 0; p < G.nb_ports; p++) {
		rte_eth_dev_stop(p);
		rte_eth_dev_close(p);
	}
	free_streams();
	rte_eal_cleanup();
	printf("softgen: bye\n");
	return 0;
}

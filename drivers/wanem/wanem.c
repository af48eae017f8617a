/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wanem: user-space WAN emulator (see wanem.h for the design).
 *
 * Usage:
 *   wanem --path NAME:IN_IF:OUT_IF:RATE_MBPS:DELAY_MS[:LOSS_PCT] [--path ...]
 *         [--ctl SOCK] [--stats FILE] [--rt-prio N] [--spin-us N] [--slots N]
 *         [--max-backlog-ms N] [--wire-overhead BYTES] [--seed N]
 * Control socket (AF_UNIX datagram; the client binds its own address for the reply):
 *   "stats"                                   -> JSON object
 *   "reset"                                   -> "ok" (zero the statistics)
 *   "set NAME rate_mbps=X delay_ms=Y loss_pct=Z" (any subset) -> "ok" | "error: ..."
 * On SIGINT/SIGTERM it writes the JSON statistics to --stats and exits 0.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <linux/if_packet.h>
#include <linux/net_tstamp.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "wanem.h"

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

struct slot {
	uint64_t due_ns;
	uint64_t arrival_ns;
	uint32_t len;
	uint8_t backlogged;
	uint8_t *data;
};

struct path_stats {
	uint64_t rx_frames, rx_bytes, tx_frames, tx_bytes;
	uint64_t drop_loss, drop_queue, drop_slots, tx_errors;
	uint64_t err_sum_ns, err_max_ns, late_over_hist;
	uint64_t wait_sum_ns;            /* serialisation start - arrival (queueing) */
	uint64_t b2b_bits, b2b_ns;       /* back-to-back frames: achieved link rate */
	uint64_t first_tx_ns, last_tx_ns;
	uint32_t err_hist[WANEM_ERR_HIST_US + 1];
};

struct path {
	char name[32];
	char in_if[IFNAMSIZ], out_if[IFNAMSIZ];
	double rate_bps;
	uint64_t delay_ns;
	double loss;                     /* probability in [0, 1) */
	int rx_fd, tx_fd;
	uint32_t slot_bytes;
	uint32_t nslots, head, count;
	struct slot *ring;
	uint64_t link_free_ns;
	uint64_t prev_tx_ns;
	struct path_stats st;
};

static volatile sig_atomic_t force_quit;
static struct path paths[WANEM_MAX_PATHS];
static int npaths;
static uint64_t spin_ns = 60000;
static uint64_t max_backlog_ns = 500000000ULL;
static uint32_t wire_overhead = 24;
static uint32_t nslots_opt = 32768;
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static void on_signal(int sig) { (void)sig; force_quit = 1; }

static inline uint64_t
now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static inline double
rand01(void)
{
	/* xorshift64*: loss decisions only, not crypto. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (double)((rng_state * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

static void __attribute__((cold, noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "wanem: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(2);
}

static int __attribute__((cold))
open_packet_socket(const char *ifname, int rx, uint32_t *mtu)
{
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK, htons(ETH_P_ALL));
	if (fd < 0)
		die("socket(AF_PACKET) for %s: %s", ifname, strerror(errno));
	unsigned int idx = if_nametoindex(ifname);
	if (idx == 0)
		die("no interface %s in this network namespace", ifname);
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL),
				   .sll_ifindex = (int)idx };
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0)
		die("bind to %s: %s", ifname, strerror(errno));
	int big = 16 << 20;
	if (rx) {
		int one = 1;
		if (setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)) < 0)
			die("SO_TIMESTAMPNS on %s: %s", ifname, strerror(errno));
		setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));
		if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big)) < 0)
			setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
		struct ifreq ifr = {0};
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
		if (ioctl(fd, SIOCGIFMTU, &ifr) < 0)
			die("SIOCGIFMTU %s: %s", ifname, strerror(errno));
		*mtu = (uint32_t)ifr.ifr_mtu;
	} else {
		if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof(big)) < 0)
			setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	}
	return fd;
}

static void __attribute__((cold))
parse_path(const char *spec)
{
	if (npaths >= WANEM_MAX_PATHS)
		die("at most %d paths", WANEM_MAX_PATHS);
	struct path *p = &paths[npaths];
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", spec);
	char *f[6] = {0};
	int n = 0;
	for (char *save = NULL, *t = strtok_r(buf, ":", &save); t && n < 6; t = strtok_r(NULL, ":", &save))
		f[n++] = t;
	if (n < 5)
		die("--path %s: want NAME:IN_IF:OUT_IF:RATE_MBPS:DELAY_MS[:LOSS_PCT]", spec);
	snprintf(p->name, sizeof(p->name), "%s", f[0]);
	snprintf(p->in_if, sizeof(p->in_if), "%s", f[1]);
	snprintf(p->out_if, sizeof(p->out_if), "%s", f[2]);
	p->rate_bps = atof(f[3]) * 1e6;
	p->delay_ns = (uint64_t)(atof(f[4]) * 1e6);
	p->loss = n > 5 ? atof(f[5]) / 100.0 : 0.0;
	if (!(p->rate_bps > 0))
		die("--path %s: rate must be > 0 Mbit/s", spec);
	if (p->loss < 0 || p->loss >= 1)
		die("--path %s: loss must be in [0, 100)", spec);
	npaths++;
}

static void __attribute__((cold))
setup_path(struct path *p)
{
	uint32_t mtu = 1500;
	p->rx_fd = open_packet_socket(p->in_if, 1, &mtu);
	p->tx_fd = open_packet_socket(p->out_if, 0, NULL);
	p->slot_bytes = mtu + 18 + 64;
	p->nslots = nslots_opt;
	p->ring = calloc(p->nslots, sizeof(*p->ring));
	uint8_t *mem = malloc((size_t)p->nslots * p->slot_bytes);
	if (!p->ring || !mem)
		die("out of memory for %u slots of %u bytes", p->nslots, p->slot_bytes);
	for (uint32_t i = 0; i < p->nslots; i++)
		p->ring[i].data = mem + (size_t)i * p->slot_bytes;
}

/* Drain one path's receive socket: timestamp, schedule, enqueue (or drop). */
static void
rx_path(struct path *p)
{
	static uint8_t scratch[65536];
	char cbuf[CMSG_SPACE(sizeof(struct timespec)) + 64];
	for (int burst = 0; burst < 256; burst++) {
		struct slot *s = NULL;
		uint8_t *dst = scratch;
		uint32_t cap = sizeof(scratch);
		if (p->count < p->nslots) {
			s = &p->ring[(p->head + p->count) % p->nslots];
			dst = s->data;
			cap = p->slot_bytes;
		}
		struct iovec iov = { .iov_base = dst, .iov_len = cap };
		struct sockaddr_ll from;
		struct msghdr msg = { .msg_name = &from, .msg_namelen = sizeof(from), .msg_iov = &iov,
				      .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
		ssize_t n = recvmsg(p->rx_fd, &msg, MSG_DONTWAIT);
		if (n < 0)
			return;
		if (from.sll_pkttype == PACKET_OUTGOING)
			continue;
		uint64_t arrival = 0;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
				struct timespec ts;
				memcpy(&ts, CMSG_DATA(c), sizeof(ts));
				arrival = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
			}
		if (arrival == 0)
			arrival = now_ns();
		p->st.rx_frames++;
		p->st.rx_bytes += (uint64_t)n;
		if (s == NULL) {
			p->st.drop_slots++;
			continue;
		}
		if (p->loss > 0 && rand01() < p->loss) {
			p->st.drop_loss++;
			continue;
		}
		if (p->link_free_ns > arrival && p->link_free_ns - arrival > max_backlog_ns) {
			p->st.drop_queue++;
			continue;
		}
		int backlogged;
		uint64_t before = p->link_free_ns > arrival ? p->link_free_ns : arrival;
		s->due_ns = wanem_schedule(arrival, (uint32_t)n + wire_overhead, p->rate_bps, p->delay_ns,
					   &p->link_free_ns, &backlogged);
		p->st.wait_sum_ns += before - arrival;
		s->arrival_ns = arrival;
		s->len = (uint32_t)n;
		s->backlogged = (uint8_t)backlogged;
		p->count++;
	}
}

/* Send every frame of a path whose due time has come. */
static void
tx_path(struct path *p, uint64_t now)
{
	while (p->count > 0) {
		struct slot *s = &p->ring[p->head];
		if (s->due_ns > now)
			return;
		ssize_t n = send(p->tx_fd, s->data, s->len, MSG_DONTWAIT);
		uint64_t t = now_ns();
		now = t;
		if (n < 0) {
			p->st.tx_errors++;
		} else {
			p->st.tx_frames++;
			p->st.tx_bytes += s->len;
			uint64_t err = t - s->due_ns;    /* >= 0: we never send early */
			p->st.err_sum_ns += err;
			if (err > p->st.err_max_ns)
				p->st.err_max_ns = err;
			uint64_t us = err / 1000;
			if (us >= WANEM_ERR_HIST_US) {
				us = WANEM_ERR_HIST_US;
				p->st.late_over_hist++;
			}
			p->st.err_hist[us]++;
			if (s->backlogged && p->prev_tx_ns) {
				p->st.b2b_bits += ((uint64_t)s->len + wire_overhead) * 8;
				p->st.b2b_ns += t - p->prev_tx_ns;
			}
			if (!p->st.first_tx_ns)
				p->st.first_tx_ns = t;
			p->st.last_tx_ns = t;
			p->prev_tx_ns = t;
		}
		p->head = (p->head + 1) % p->nslots;
		p->count--;
	}
}

static double
hist_quantile_us(const struct path_stats *st, double q)
{
	uint64_t total = 0, acc = 0;
	for (int i = 0; i <= WANEM_ERR_HIST_US; i++)
		total += st->err_hist[i];
	if (!total)
		return 0;
	uint64_t want = (uint64_t)(q * (double)total);
	for (int i = 0; i <= WANEM_ERR_HIST_US; i++) {
		acc += st->err_hist[i];
		if (acc > want)
			return i + 0.5;
	}
	return WANEM_ERR_HIST_US;
}

static int
stats_json(char *out, size_t cap)
{
	size_t o = 0;
	o += (size_t)snprintf(out + o, cap - o, "{\"spin_us\": %.1f, \"wire_overhead_bytes\": %u, \"paths\": [",
			      spin_ns / 1e3, wire_overhead);
	for (int i = 0; i < npaths && o < cap; i++) {
		struct path *p = &paths[i];
		struct path_stats *st = &p->st;
		double mean_us = st->tx_frames ? st->err_sum_ns / 1e3 / (double)st->tx_frames : 0;
		double rate = st->b2b_ns ? (double)st->b2b_bits / ((double)st->b2b_ns / 1e9) / 1e6 : 0;
		double span_s = st->last_tx_ns > st->first_tx_ns ? (st->last_tx_ns - st->first_tx_ns) / 1e9 : 0;
		o += (size_t)snprintf(out + o, cap - o,
			"%s{\"name\": \"%s\", \"in_if\": \"%s\", \"out_if\": \"%s\", \"rate_mbps_set\": %.3f, "
			"\"delay_ms_set\": %.3f, \"loss_pct_set\": %.3f, \"rx_frames\": %lu, \"rx_bytes\": %lu, "
			"\"tx_frames\": %lu, \"tx_bytes\": %lu, \"drop_loss\": %lu, \"drop_queue\": %lu, "
			"\"drop_slots\": %lu, \"tx_errors\": %lu, \"queued\": %u, "
			"\"delay_err_mean_us\": %.2f, \"delay_err_p50_us\": %.1f, \"delay_err_p99_us\": %.1f, "
			"\"delay_err_max_us\": %.1f, \"queue_wait_mean_us\": %.1f, \"rate_mbps\": %.3f, "
			"\"avg_tx_mbps\": %.3f}",
			i ? ", " : "", p->name, p->in_if, p->out_if, p->rate_bps / 1e6, p->delay_ns / 1e6,
			p->loss * 100, st->rx_frames, st->rx_bytes, st->tx_frames, st->tx_bytes, st->drop_loss,
			st->drop_queue, st->drop_slots, st->tx_errors, p->count, mean_us,
			hist_quantile_us(st, 0.5), hist_quantile_us(st, 0.99), st->err_max_ns / 1e3,
			st->rx_frames ? st->wait_sum_ns / 1e3 / (double)st->rx_frames : 0, rate,
			span_s > 0 ? st->tx_bytes * 8.0 / span_s / 1e6 : 0);
	}
	if (o < cap)
		o += (size_t)snprintf(out + o, cap - o, "]}\n");
	return (int)(o < cap ? o : cap - 1);
}

static void
handle_ctl(int fd)
{
	char cmd[512], reply[16384];
	struct sockaddr_un from;
	socklen_t flen = sizeof(from);
	ssize_t n = recvfrom(fd, cmd, sizeof(cmd) - 1, MSG_DONTWAIT, (struct sockaddr *)&from, &flen);
	if (n <= 0)
		return;
	cmd[n] = 0;
	cmd[strcspn(cmd, "\r\n")] = 0;
	if (strcmp(cmd, "stats") == 0) {
		stats_json(reply, sizeof(reply));
	} else if (strcmp(cmd, "reset") == 0) {
		for (int i = 0; i < npaths; i++) {
			memset(&paths[i].st, 0, sizeof(paths[i].st));
			paths[i].prev_tx_ns = 0;
		}
		snprintf(reply, sizeof(reply), "ok");
	} else if (strncmp(cmd, "set ", 4) == 0) {
		char *save = NULL, *name = strtok_r(cmd + 4, " ", &save);
		struct path *p = NULL;
		for (int i = 0; name && i < npaths; i++)
			if (strcmp(paths[i].name, name) == 0)
				p = &paths[i];
		snprintf(reply, sizeof(reply), "ok");
		if (!p)
			snprintf(reply, sizeof(reply), "error: no path %s", name ? name : "");
		for (char *kv; p && (kv = strtok_r(NULL, " ", &save));) {
			double v;
			if (sscanf(kv, "rate_mbps=%lf", &v) == 1 && v > 0)
				p->rate_bps = v * 1e6;
			else if (sscanf(kv, "delay_ms=%lf", &v) == 1 && v >= 0)
				p->delay_ns = (uint64_t)(v * 1e6);
			else if (sscanf(kv, "loss_pct=%lf", &v) == 1 && v >= 0 && v < 100)
				p->loss = v / 100.0;
			else {
				snprintf(reply, sizeof(reply), "error: bad setting %s", kv);
				break;
			}
		}
	} else {
		snprintf(reply, sizeof(reply), "error: unknown command (stats|reset|set NAME k=v...)");
	}
	if (flen > sizeof(sa_family_t))
		sendto(fd, reply, strlen(reply), MSG_DONTWAIT, (struct sockaddr *)&from, flen);
}

static int __attribute__((cold))
open_ctl(const char *path)
{
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	if (fd < 0 || strlen(path) >= sizeof(sun.sun_path))
		die("control socket %s: bad path or socket()", path);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0)
		die("bind control socket %s: %s", path, strerror(errno));
	return fd;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"path", required_argument, 0, 'p'}, {"ctl", required_argument, 0, 'c'},
		{"stats", required_argument, 0, 's'}, {"rt-prio", required_argument, 0, 'r'},
		{"spin-us", required_argument, 0, 'w'}, {"slots", required_argument, 0, 'n'},
		{"max-backlog-ms", required_argument, 0, 'b'}, {"wire-overhead", required_argument, 0, 'o'},
		{"seed", required_argument, 0, 'S'}, {0, 0, 0, 0}};
	const char *ctl_path = NULL, *stats_path = NULL;
	int rt_prio = 0, c;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'p': parse_path(optarg); break;
		case 'c': ctl_path = optarg; break;
		case 's': stats_path = optarg; break;
		case 'r': rt_prio = atoi(optarg); break;
		case 'w': spin_ns = (uint64_t)(atof(optarg) * 1e3); break;
		case 'n': nslots_opt = (uint32_t)atoi(optarg); break;
		case 'b': max_backlog_ns = (uint64_t)(atof(optarg) * 1e6); break;
		case 'o': wire_overhead = (uint32_t)atoi(optarg); break;
		case 'S': rng_state = strtoull(optarg, NULL, 0) | 1; break;
		default: die("usage: see the comment at the top of wanem.c");
		}
	}
	if (npaths == 0)
		die("give at least one --path NAME:IN_IF:OUT_IF:RATE_MBPS:DELAY_MS[:LOSS_PCT]");
	if (nslots_opt < 16)
		die("--slots must be >= 16");
	for (int i = 0; i < npaths; i++)
		setup_path(&paths[i]);
	int ctl_fd = ctl_path ? open_ctl(ctl_path) : -1;

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	prctl(PR_SET_TIMERSLACK, 1UL);
	if (rt_prio > 0) {
		struct sched_param sp = { .sched_priority = rt_prio };
		if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0)
			fprintf(stderr, "wanem: SCHED_FIFO %d not granted (%s); running without\n", rt_prio,
				strerror(errno));
	}
	fprintf(stderr, "wanem: ready, %d path(s)\n", npaths);
	fflush(stderr);

	struct pollfd pfd[WANEM_MAX_PATHS + 1];
	for (int i = 0; i < npaths; i++)
		pfd[i] = (struct pollfd){ .fd = paths[i].rx_fd, .events = POLLIN };
	int nfds = npaths;
	if (ctl_fd >= 0)
		pfd[nfds++] = (struct pollfd){ .fd = ctl_fd, .events = POLLIN };

	while (!force_quit) {
		uint64_t now = now_ns();
		uint64_t next_due = UINT64_MAX;
		for (int i = 0; i < npaths; i++) {
			tx_path(&paths[i], now);
			if (paths[i].count && paths[i].ring[paths[i].head].due_ns < next_due)
				next_due = paths[i].ring[paths[i].head].due_ns;
		}
		now = now_ns();
		if (next_due == UINT64_MAX || next_due > now + spin_ns) {
			/* Sleep until new frames arrive or until spin_ns before the next due time. */
			uint64_t wait = next_due == UINT64_MAX ? 100000000ULL : next_due - now - spin_ns;
			struct timespec ts = { .tv_sec = (time_t)(wait / 1000000000ULL),
					       .tv_nsec = (long)(wait % 1000000000ULL) };
			int r = ppoll(pfd, (nfds_t)nfds, &ts, NULL);
			if (r <= 0)
				continue;
		}
		/* Near a deadline: poll the sockets without sleeping (busy-wait of <= spin_ns). */
		for (int i = 0; i < npaths; i++)
			rx_path(&paths[i]);
		if (ctl_fd >= 0)
			handle_ctl(ctl_fd);
	}

	if (stats_path) {
		static char buf[16384];
		int n = stats_json(buf, sizeof(buf));
		FILE *f = fopen(stats_path, "w");
		if (f) {
			fwrite(buf, 1, (size_t)n, f);
			fclose(f);
		}
	}
	if (ctl_path)
		unlink(ctl_path);
	return 0;
}

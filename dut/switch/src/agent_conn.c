/* agent_conn.c -- the agent thread's loop: the controller connection and everything the agent
 * does between messages (ofs_agent_main, started by main.c as a DPDK control thread).
 *
 * Connection: one TCP connection to the controller (--controller), opened with exponential
 * backoff (100 ms doubling to 4 s) and reopened the same way when it closes; each new
 * connection starts a new session (HELLO sent, role back to equal, agent_session.c). Flows,
 * groups and meters are kept across reconnects.
 * Framing: bytes are collected in a 128 KiB receive buffer and cut into messages by the
 * header's length; each message goes to ofs_handle_msg (agent.c). A length below 8 cannot be
 * framed and closes the connection, as does a failed version negotiation.
 * Sleep/wake (see ofswitch.h "The agent does not poll"): poll() on the controller socket,
 * the stats socket and agent_wake_fd, with a timeout to the next 100 ms housekeeping tick
 * (flow expiry, link state). After each batch of messages the flow tables are committed.
 * Stats socket (--stats-sock): a UNIX socket answering one JSON line of counters per
 * connection (launcher and benchmarks read it), answered also while disconnected.
 * Concurrency: the agent thread only; it reads worker counters without locks (64-bit loads).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include "ofswitch.h"
#include "agent.h"

#define OFS_RX_BUF (1u << 17)  /* receive buffer: more than one 64 KiB message */
static volatile int of_connected;

/* Flow expiry and link-state checks run on this tick; between ticks the agent sleeps unless a
 * message or a Packet-In arrives (no fixed-interval polling: see ofswitch.h). */
#define AGENT_TICK_NS 100000000ull
static int connect_controller(const struct ofs_agent_cfg *cfg)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0)
		return -1;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(cfg->port) };
	if (inet_pton(AF_INET, cfg->host, &a.sin_addr) != 1 ||
	    connect(s, (struct sockaddr *)&a, sizeof(a)) != 0) {
		close(s);
		return -1;
	}
	int one = 1;
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return s;
}

static bool send_all(int s, struct obuf *b)
{
	size_t o = 0;
	while (o < b->len) {
		ssize_t n = send(s, b->data + o, b->len - o, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR) continue;
			b->len = 0;
			return false;
		}
		o += (size_t)n;
	}
	b->len = 0;
	return true;
}

static int stats_listen(const struct ofs_agent_cfg *cfg)
{
	if (!cfg->stats_sock)
		return -1;
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	if (s < 0) {
		fprintf(stderr, "ofswitch: stats socket: %s\n", strerror(errno));
		return -1;
	}
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", cfg->stats_sock);
	unlink(a.sun_path);
	if (bind(s, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(s, 4) != 0) {
		fprintf(stderr, "ofswitch: stats socket %s: %s\n", a.sun_path, strerror(errno));
		close(s);
		return -1;
	}
	return s;
}

static void stats_answer(int ls)
{
	int c = accept(ls, NULL, NULL);
	if (c < 0)
		return;
	char buf[8192];
	size_t n = 0;
	uint64_t hits = 0, misses = 0;
	for (unsigned w = 0; w < ofs_dp.n_workers; w++) {
		hits += ofs_dp.workers[w].cache_hits;
		misses += ofs_dp.workers[w].cache_misses;
	}
	uint32_t flows = 0;
	for (int t = 0; t < OFS_N_TABLES; t++)
		flows += ofs_dp.tables[t].n_flows;
	n += (size_t)snprintf(buf + n, sizeof(buf) - n,
		"{\"dpid\": %llu, \"of_connected\": %s, \"flows\": %u, \"cache_hits\": %llu, "
		"\"cache_misses\": %llu, \"ports\": [", (unsigned long long)ofs_dp.dpid,
		of_connected ? "true" : "false", flows, (unsigned long long)hits,
		(unsigned long long)misses);
	for (unsigned i = 0; i < ofs_dp.n_ports; i++) {
		uint64_t rx = 0, tx = 0;
		for (unsigned w = 0; w < ofs_dp.n_workers; w++) {
			rx += ofs_dp.workers[w].port_stats[i].rx_packets;
			tx += ofs_dp.workers[w].port_stats[i].tx_packets;
		}
		n += (size_t)snprintf(buf + n, sizeof(buf) - n,
			"%s{\"port\": %u, \"rx_packets\": %llu, \"tx_packets\": %llu}",
			i ? ", " : "", ofs_dp.ports[i].ofport, (unsigned long long)rx,
			(unsigned long long)tx);
	}
	n += (size_t)snprintf(buf + n, sizeof(buf) - n, "]}\n");
	ssize_t wr = write(c, buf, n);
	(void)wr;
	close(c);
}

/* Poll link state; on a change update the port (workers read link_up) and send PORT_STATUS. */
static void check_links(struct obuf *out)
{
	for (unsigned i = 0; i < ofs_dp.n_ports; i++) {
		struct rte_eth_link link;
		if (rte_eth_link_get_nowait(ofs_dp.ports[i].dpdk_id, &link) != 0)
			continue;
		bool up = link.link_status == RTE_ETH_LINK_UP;
		if (up != ofs_dp.ports[i].link_up) {
			__atomic_store_n(&ofs_dp.ports[i].link_up, up, __ATOMIC_RELEASE);
			ofs_send_port_status(out, i, OFPPR_MODIFY);
		}
	}
}

void *ofs_agent_main(void *arg)
{
	const struct ofs_agent_cfg *cfg = arg;
	struct obuf out;
	ob_init(&out);
	static uint8_t rx[OFS_RX_BUF];  /* one agent thread: static, nothing to allocate */
	size_t rx_len = 0;
	int ls = stats_listen(cfg);
	unsigned backoff_ms = 100;
	int s = -1;
	/* Packet-In doorbell (ofs_wake_agent); non-blocking so a burst of writes never stalls */
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (efd < 0) {
		fprintf(stderr, "ofswitch: eventfd: %s\n", strerror(errno));
		ofs_dp.force_quit = true;
		return NULL;
	}
	ofs_dp.agent_wake_fd = efd;
	uint64_t last_expire = 0;
	while (!ofs_dp.force_quit) {
		if (s < 0) {
			s = connect_controller(cfg);
			if (s < 0) {
				/* keep answering stats while waiting for the controller */
				struct pollfd pf = { .fd = ls, .events = POLLIN };
				if (poll(&pf, ls >= 0 ? 1 : 0, (int)backoff_ms) > 0)
					stats_answer(ls);
				backoff_ms = backoff_ms * 2 > 4000 ? 4000 : backoff_ms * 2;
				continue;
			}
			backoff_ms = 100;
			rx_len = 0;
			ofs_agent_reset_session();
			ofs_send_hello(&out);
			send_all(s, &out);
			of_connected = 1;
			fprintf(stderr, "ofswitch: connected to controller %s:%u\n", cfg->host,
				cfg->port);
		}
		/* Sleep until a message, a Packet-In (the worker writes efd, see ofs_wake_agent) or
		 * the next housekeeping tick. agent_sleeping is stored (a full barrier) before the
		 * ring is checked, so a Packet-In enqueued in between is seen one way or the other. */
		uint64_t now = ofs_now_ns();
		uint64_t next_tick = last_expire + AGENT_TICK_NS;
		int timeout_ms = now >= next_tick ? 0 : (int)((next_tick - now + 999999) / 1000000);
		__atomic_store_n(&ofs_dp.agent_sleeping, 1, __ATOMIC_SEQ_CST);
		if (rte_ring_count(ofs_dp.pin_ring) > 0)
			timeout_ms = 0;
		struct pollfd pf[3] = { { .fd = s, .events = POLLIN }, { .fd = efd, .events = POLLIN },
					{ .fd = ls, .events = POLLIN } };
		int np = poll(pf, ls >= 0 ? 3 : 2, timeout_ms);
		__atomic_store_n(&ofs_dp.agent_sleeping, 0, __ATOMIC_RELAXED);
		if (np > 0 && (pf[1].revents & POLLIN)) {
			uint64_t cnt;
			ssize_t r = read(efd, &cnt, sizeof(cnt));
			(void)r;
		}
		bool close_it = false;
		if (np > 0 && (pf[0].revents & (POLLIN | POLLHUP | POLLERR))) {
			ssize_t n = recv(s, rx + rx_len, OFS_RX_BUF - rx_len, 0);
			if (n <= 0) {
				close_it = true;
			} else {
				rx_len += (size_t)n;
				size_t o = 0;
				while (rx_len - o >= 8) {
					uint16_t ml = rd16(rx + o + 2);
					if (ml < 8) { close_it = true; break; }  /* unframeable */
					if (rx_len - o < ml) break;
					if (ofs_handle_msg(&out, rx + o, ml) < 0) close_it = true;
					o += ml;
					if (close_it) break;
				}
				memmove(rx, rx + o, rx_len - o);
				rx_len -= o;
				ofs_commit();
			}
		}
		if (ls >= 0 && np > 0 && (pf[2].revents & POLLIN))
			stats_answer(ls);
		/* packets for the controller */
		void *pins[64];
		unsigned n = rte_ring_sc_dequeue_burst(ofs_dp.pin_ring, pins, 64, NULL);
		for (unsigned i = 0; i < n; i++) {
			ofs_send_packet_in(&out, pins[i]);
			free(pins[i]);
		}
		now = ofs_now_ns();
		if (now - last_expire >= AGENT_TICK_NS) {
			last_expire = now;
			ofs_expire_flows(&out, now);
			ofs_commit();
			check_links(&out);
		}
		if (out.len && !send_all(s, &out))
			close_it = true;
		if (close_it) {
			if (out.len) send_all(s, &out);
			close(s);
			s = -1;
			of_connected = 0;
			fprintf(stderr, "ofswitch: controller session closed, reconnecting\n");
		}
	}
	if (s >= 0)
		close(s);
	if (ls >= 0) {
		close(ls);
		unlink(cfg->stats_sock);
	}
	ofs_dp.agent_sleeping = 0;
	close(efd);
	ob_free(&out);
	return NULL;
}


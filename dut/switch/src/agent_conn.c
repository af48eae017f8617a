/* agent_conn.c -- the agent thread's loop: the controller connections and everything the agent
 * does between messages (ofs_agent_main, started by main.c as a DPDK control thread).
 *
 * Connections: one TCP connection per --controller (up to OFS_MAX_CONTROLLERS), each opened
 * with exponential backoff (100 ms doubling to 4 s; a connect waits 1 s at most) and reopened
 * the same way when it closes; each connection has its own session (agent_session.c: HELLO,
 * role, SET_ASYNC masks), a new one at every connect. Flows, groups and meters are the
 * switch's: kept across reconnects.
 * Framing: each connection collects bytes in its 128 KiB receive buffer, cut into messages by
 * the header's length; each message goes to ofs_handle_msg (agent.c) in the connection's
 * session. A length below 8 cannot be framed and closes the connection, as does a failed
 * version negotiation.
 * Routing (route()): what the agent writes is split by message type: replies go to the
 * connection that asked, the asynchronous PACKET_IN / PORT_STATUS / FLOW_REMOVED to every
 * connection whose session has done HELLO and wants them (role, SET_ASYNC).
 * Keepalive (--echo-interval-ms, default 5000, 0 off): after that long without a byte from a
 * controller, an ECHO_REQUEST; without a byte for one more interval, the connection is closed
 * (and reopened with backoff). A controller still reading a long reply (the socket taking
 * more of a queue it had refused) counts as alive, and the probe is exempt from the queue
 * limit, so a slow reader of a large answer it asked for is neither probed out nor dropped. Checked on the housekeeping tick (100 ms resolution).
 * Fail mode (OF1.3.5 6.4, --fail-mode): secure (default): with no controller connected the
 * flow tables keep forwarding and what needs a controller (PACKET_IN) is dropped; standalone:
 * while no controller is connected the workers bypass the tables and forward as learning
 * switches (ofs_dp.standalone, datapath.c standalone_forward), the tables kept for when a
 * controller returns.
 * Sleep/wake (see ofswitch.h "The agent does not poll"): poll() on the connections, the stats
 * socket and agent_wake_fd, with a timeout to the next 100 ms housekeeping tick (flow expiry,
 * link state, keepalive) or connection attempt. After each batch of received messages the
 * flow tables are committed.
 * Stats socket (--stats-sock): a UNIX socket answering one JSON line of counters per
 * connection (launcher and benchmarks read it), answered also while disconnected;
 * of_connected is true while at least one controller session is up; each worker's busy and
 * idle TSC cycles (with tsc_hz) tell a benchmark whether the switch or its feed limited.
 * Concurrency: the agent thread only; it reads worker counters without locks (64-bit loads).
 * Sending (issue 37 finding 3): a connected socket is non-blocking; what the agent writes for
 * a connection goes to its output queue (conn.out, out_off bytes of it already sent), sent as
 * far as the socket takes it and resumed when poll() says POLLOUT. A controller that stops
 * reading makes only its own queue grow: past the limit (--ctl-queue-kb, default 4 MiB) that
 * connection is dropped (logged, counted in the stats socket's ctl_dropped_slow) and
 * reconnected with backoff, while the other connections, flow expiry, keepalive and
 * PACKET_IN go on.
 * Framing checks: what a controller sends is cut by the header's length, below 8 closes the
 * connection; what the agent hands to route() must be whole messages (agent_internal.h
 * "Checked invariants"): a length below 8 or past the buffer's end is never walked over.
 * Limits: connect is blocking (1 s timeout); IPv4 controller addresses only.
 */
#include <errno.h>
#include <fcntl.h>
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
#include <sys/time.h>
#include <sys/un.h>
#include "ofswitch.h"
#include "agent.h"
#include "vhost_port.h"

#define OFS_RX_BUF (1u << 17)  /* receive buffer: more than one 64 KiB message */
static volatile int of_connected;
static uint64_t ctl_dropped_slow; /* connections dropped for not reading (stats socket) */

/* Flow expiry and link-state checks run on this tick; between ticks the agent sleeps unless a
 * message or a Packet-In arrives (no fixed-interval polling: see ofswitch.h). */
#define AGENT_TICK_NS 100000000ull
static int connect_controller(const struct ofs_controller_addr *addr)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0)
		return -1;
	/* a connect that gets no answer must not hold the other connections up: 1 s at most
	 * (Linux applies SO_SNDTIMEO to connect), then sends block as usual */
	struct timeval tv = { .tv_sec = 1 }, none = { 0 };
	setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(addr->port) };
	if (inet_pton(AF_INET, addr->host, &a.sin_addr) != 1 ||
	    connect(s, (struct sockaddr *)&a, sizeof(a)) != 0) {
		close(s);
		return -1;
	}
	setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &none, sizeof(none));
	int one = 1;
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* from now on nothing on this socket may block the agent: see "Sending" above */
	int fl = fcntl(s, F_GETFL);
	if (fl < 0 || fcntl(s, F_SETFL, fl | O_NONBLOCK) != 0) {
		close(s);
		return -1;
	}
	return s;
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
	char buf[16384];  /* ports + workers with their rig histograms */
	size_t n = 0;
	uint64_t hits = 0, misses = 0, pc_hits = 0, pc_stores = 0, pc_prog = 0;
	uint64_t pc_sig = 0;
	for (unsigned w = 0; w < ofs_dp.n_workers; w++) {
		hits += ofs_dp.workers[w].cache_hits;
		misses += ofs_dp.workers[w].cache_misses;
		pc_hits += ofs_dp.workers[w].pc_hits;
		pc_stores += ofs_dp.workers[w].pc_stores;
		pc_prog += ofs_dp.workers[w].pc_prog_hits;
		pc_sig += ofs_dp.workers[w].pc_sig_checks;
	}
	uint32_t flows = 0;
	for (int t = 0; t < OFS_N_TABLES; t++)
		flows += ofs_dp.tables[t].n_flows;
	n += (size_t)snprintf(buf + n, sizeof(buf) - n,
		"{\"dpid\": %llu, \"of_connected\": %s, \"flows\": %u, \"cache_hits\": %llu, "
		"\"cache_misses\": %llu, \"pipe_cache_hits\": %llu, \"pipe_cache_stores\": %llu, "
		"\"pipe_cache_prog_hits\": %llu, \"pipe_cache_sig_checks\": %llu, "
		"\"cache_lines\": %u, \"ctl_dropped_slow\": %llu, "
		"\"msgs_dropped_too_long\": %llu, \"ports\": [",
		(unsigned long long)ofs_dp.dpid, of_connected ? "true" : "false", flows,
		(unsigned long long)hits, (unsigned long long)misses,
		(unsigned long long)pc_hits, (unsigned long long)pc_stores,
		(unsigned long long)pc_prog, (unsigned long long)pc_sig,
		ofs_dp.workers[0].cache_mask + 1, (unsigned long long)ctl_dropped_slow,
		(unsigned long long)ofs_msgs_dropped_too_long);
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
	/* each worker's busy and idle TSC cycles (struct ofs_worker): who limited a run */
	n += (size_t)snprintf(buf + n, sizeof(buf) - n, "], \"tsc_hz\": %llu, \"workers\": [",
			      (unsigned long long)rte_get_tsc_hz());
	for (unsigned w = 0; w < ofs_dp.n_workers; w++) {
		const struct ofs_worker *wk = &ofs_dp.workers[w];
		n += (size_t)snprintf(buf + n, sizeof(buf) - n,
			"%s{\"lcore\": %u, \"busy_cycles\": %llu, \"idle_cycles\": %llu, "
			"\"gap_floor_cycles\": %llu, \"gap_hist\": [",
			w ? ", " : "", wk->lcore_id, (unsigned long long)wk->busy_tsc,
			(unsigned long long)wk->idle_tsc, (unsigned long long)wk->gap_floor_tsc);
		/* rig measurements (issue 44, OFS_RIG_BUCKETS in ofswitch.h) */
		for (unsigned b = 0; b < OFS_RIG_BUCKETS; b++)
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%llu", b ? ", " : "",
					      (unsigned long long)wk->gap_hist[b]);
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "], \"backlog_hist\": [");
		for (unsigned b = 0; b < OFS_RIG_BUCKETS; b++)
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%llu", b ? ", " : "",
					      (unsigned long long)wk->backlog_hist[b]);
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "]}");
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
		bool up;
		int k;
		if (ofs_dp.ports[i].vhost)
			up = ofs_vhost_link_up(ofs_dp.ports[i].vhost);
		else if ((k = ofs_kif_link_up(&ofs_dp.ports[i])) >= 0)
			up = k == 1;  /* af_xdp/af_packet: the kernel's state, not the PMD's */
		else if (rte_eth_link_get_nowait(ofs_dp.ports[i].dpdk_id, &link) != 0)
			continue;
		else
			up = link.link_status == RTE_ETH_LINK_UP;
		if (up != ofs_dp.ports[i].link_up) {
			__atomic_store_n(&ofs_dp.ports[i].link_up, up, __ATOMIC_RELEASE);
			ofs_send_port_status(out, i, OFPPR_MODIFY);
		}
	}
}

/* ---- controller connections ------------------------------------------------------------- */
struct conn {
	const struct ofs_controller_addr *addr;
	int fd;                      /* -1: not connected */
	struct ofs_session *sess;    /* while connected */
	struct obuf out;             /* what to send it: its output queue */
	size_t out_off;              /* bytes of out already sent */
	bool over_limit;             /* the queue passed the limit: drop the connection */
	uint8_t rx[OFS_RX_BUF];
	size_t rx_len;
	unsigned backoff_ms;
	uint64_t next_try_ns;        /* when to try connecting again */
	uint64_t last_rx_ns;         /* keepalive: last sign of life (bytes received, or a queue
				      * the socket had refused taken further on POLLOUT) */
	uint64_t echo_sent_ns;
	bool echo_pending;
};
static struct conn conns[OFS_MAX_CONTROLLERS];
static unsigned n_conns;
static size_t out_limit;          /* --ctl-queue-kb in bytes */

/* Send what the socket takes of c's queue now, without blocking. false: the connection
 * failed (reset, closed). */
static bool conn_flush(struct conn *c)
{
	while (c->out_off < c->out.len) {
		ssize_t n = send(c->fd, c->out.data + c->out_off, c->out.len - c->out_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;   /* resumed on POLLOUT */
			return false;
		}
		c->out_off += (size_t)n;
	}
	if (c->out_off == c->out.len) {
		c->out.len = c->out_off = 0;
	} else if (c->out_off >= (1u << 16) && c->out_off >= c->out.len / 2) {
		/* keep the queue from creeping forward: move the unsent bytes to the front */
		memmove(c->out.data, c->out.data + c->out_off, c->out.len - c->out_off);
		c->out.len -= c->out_off;
		c->out_off = 0;
	}
	return true;
}
#define OFS_ECHO_XID 0xec400000u  /* keepalive ECHO_REQUESTs carry this xid */

static void conn_close(struct conn *c, uint64_t now, const char *why)
{
	if (!c->over_limit)
		conn_flush(c);   /* what the socket still takes (a HELLO_FAILED error, ...) */
	close(c->fd);
	c->fd = -1;
	ofs_session_close(c->sess);
	c->sess = NULL;
	c->out.len = c->out_off = 0;
	c->over_limit = false;
	c->next_try_ns = now;  /* the first retry at once, then with backoff */
	fprintf(stderr, "ofswitch: controller %s:%u: %s, reconnecting\n", c->addr->host,
		c->addr->port, why);
}

/* A new connection on fd (non-blocking): a fresh session, our HELLO queued and sent. */
static void conn_attach(struct conn *c, int fd, uint64_t now)
{
	c->sess = ofs_session_open();  /* never NULL: a session per connection and one spare */
	c->fd = fd;
	c->backoff_ms = 100;
	c->rx_len = 0;
	c->last_rx_ns = now;
	c->echo_pending = false;
	c->out.len = c->out_off = 0;
	c->over_limit = false;
	ofs_send_hello(&c->out);
	conn_flush(c);
}

static void conn_try(struct conn *c, uint64_t now)
{
	if (now < c->next_try_ns)
		return;
	int fd = connect_controller(c->addr);
	if (fd < 0) {
		c->next_try_ns = now + c->backoff_ms * 1000000ull;
		c->backoff_ms = c->backoff_ms * 2 > 4000 ? 4000 : c->backoff_ms * 2;
		return;
	}
	conn_attach(c, fd, now);
	fprintf(stderr, "ofswitch: connected to controller %s:%u\n", c->addr->host, c->addr->port);
}

/* Queue n bytes for c, unless its queue would pass the limit: then c is marked to be dropped
 * (the agent loop closes it) and nothing more is queued for it. ``exempt``: the reply to a
 * request of a controller that had read everything sent to it before (route()): queued whole,
 * whatever its size (a FLOW stats reply of 100k flows is ~10 MB), so the limit stops a
 * controller that does not read, never one that asked for a large answer. */
static void conn_queue(struct conn *c, const uint8_t *m, size_t n, bool exempt)
{
	if (c->over_limit)
		return;
	if (!exempt && c->out.len - c->out_off + n > out_limit) {
		c->over_limit = true;
		return;
	}
	memcpy(ob_put(&c->out, n), m, n);
}

/* Hand what the agent wrote to the connections: replies to origin (NULL: there are none),
 * asynchronous messages to every connection whose session wants them (ofs_session_wants).
 * b must hold whole messages (ofs_msg_begin/ofs_msg_end); a length below 8 or past the end
 * would be an agent bug: it is reported (the sanitizer build aborts) and the rest of b is
 * dropped, never walked over. */
static void route(struct obuf *b, struct conn *origin)
{
	/* the origin has read all it was sent: this request's replies are queued whole (one
	 * request's answer past the limit at most; the next request of a controller that has not
	 * read it is held to the limit) */
	bool drained = origin != NULL && origin->out_off == origin->out.len;
	for (size_t o = 0; o < b->len;) {
		const uint8_t *m = b->data + o;
		uint16_t ml = b->len - o >= OFP_HDR_LEN ? rd16(m + 2) : 0;
		if (ml < OFP_HDR_LEN || ml > b->len - o) {
			ofs_invariant_failed("agent output not framed: rest dropped",
					     b->len - o >= 2 ? m[1] : 0xff, b->len - o);
			break;
		}
		bool async = m[1] == OFPT_PACKET_IN || m[1] == OFPT_PORT_STATUS ||
			     m[1] == OFPT_FLOW_REMOVED;
		for (unsigned i = 0; i < n_conns; i++) {
			struct conn *c = &conns[i];
			if (c->fd < 0)
				continue;
			if (async ? ofs_session_ready(c->sess) && ofs_session_wants(c->sess, m)
				  : c == origin)
				conn_queue(c, m, ml, !async && drained);
		}
		o += ml;
	}
	b->len = 0;
}

/* Frame and handle what arrived on c. false: the connection must be closed. */
static bool conn_receive(struct conn *c, struct obuf *tmp, uint64_t now)
{
	ssize_t n = recv(c->fd, c->rx + c->rx_len, OFS_RX_BUF - c->rx_len, 0);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return true;   /* non-blocking: nothing after all */
	if (n <= 0)
		return false;
	c->last_rx_ns = now;
	c->echo_pending = false;
	c->rx_len += (size_t)n;
	size_t o = 0;
	bool ok = true;
	ofs_session_use(c->sess);
	while (ok && c->rx_len - o >= OFP_HDR_LEN) {
		uint16_t ml = rd16(c->rx + o + 2);
		if (ml < OFP_HDR_LEN) {  /* unframeable */
			fprintf(stderr, "ofswitch: controller %s:%u: message length %u below 8\n",
				c->addr->host, c->addr->port, ml);
			ok = false;
			break;
		}
		if (c->rx_len - o < ml)
			break;
		if (ofs_handle_msg(tmp, c->rx + o, ml) < 0)
			ok = false;
		o += ml;
		/* each message's replies to the queues at once: a controller past its limit is
		 * not answered further (its queue, not the agent's memory, bounds what it asks) */
		route(tmp, c);
		if (c->over_limit)
			break;
	}
	memmove(c->rx, c->rx + o, c->rx_len - o);
	c->rx_len -= o;
	ofs_commit();
	route(tmp, c);
	return ok;
}

/* Keepalive (--echo-interval-ms): an ECHO_REQUEST after an interval of silence, the
 * connection closed after one more interval without any answer. */
static void conn_keepalive(struct conn *c, uint64_t now, uint64_t interval_ns)
{
	if (!interval_ns || c->fd < 0)
		return;
	if (c->echo_pending && now - c->echo_sent_ns >= interval_ns) {
		conn_close(c, now, "no answer to the keepalive ECHO_REQUEST");
		return;
	}
	if (!c->echo_pending && now - c->last_rx_ns >= interval_ns) {
		uint8_t h[OFP_HDR_LEN] = { OFP13_VERSION, OFPT_ECHO_REQUEST };
		wr16(h + 2, OFP_HDR_LEN);
		wr32(h + 4, OFS_ECHO_XID);
		/* exempt from the queue limit: one 8-byte probe per interval (echo_pending), and a
		 * controller still reading a large reply it asked for (queued whole, route()) must
		 * not be dropped as "not reading" for it; one that never answers is closed above */
		conn_queue(c, h, sizeof(h), true);
		c->echo_pending = true;
		c->echo_sent_ns = now;
	}
}

/* After routing: drop the connections whose queue passed the limit, send what the others
 * have queued. Returns how many sessions are up (HELLO done). */
static unsigned conns_send(uint64_t now)
{
	unsigned up = 0;
	for (unsigned i = 0; i < n_conns; i++) {
		struct conn *c = &conns[i];
		if (c->fd >= 0 && c->over_limit) {
			ctl_dropped_slow++;
			fprintf(stderr, "ofswitch: controller %s:%u: not reading, %zu bytes queued "
				"(limit %zu): dropped\n", c->addr->host, c->addr->port,
				c->out.len - c->out_off, out_limit);
			conn_close(c, now, "output queue over its limit");
		}
		if (c->fd >= 0 && c->out_off < c->out.len && !conn_flush(c))
			conn_close(c, now, "send failed");
		up += c->fd >= 0 && ofs_session_ready(c->sess);
	}
	return up;
}

void *ofs_agent_main(void *arg)
{
	const struct ofs_agent_cfg *cfg = arg;
	struct obuf tmp;             /* what the agent writes, before route() */
	ob_init(&tmp);
	int ls = stats_listen(cfg);
	/* Packet-In doorbell (ofs_wake_agent); non-blocking so a burst of writes never stalls */
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (efd < 0) {
		fprintf(stderr, "ofswitch: eventfd: %s\n", strerror(errno));
		ofs_dp.force_quit = true;
		return NULL;
	}
	ofs_dp.agent_wake_fd = efd;
	n_conns = cfg->n_ctl;
	out_limit = cfg->ctl_queue_bytes ? cfg->ctl_queue_bytes : OFS_CTL_QUEUE_DEFAULT;
	for (unsigned i = 0; i < n_conns; i++) {
		conns[i] = (struct conn){ .addr = &cfg->ctl[i], .fd = -1, .backoff_ms = 100 };
		ob_init(&conns[i].out);
	}
	const uint64_t echo_ns = cfg->echo_interval_ms * 1000000ull;
	bool standalone = false;
	uint64_t last_expire = 0;
	while (!ofs_dp.force_quit) {
		uint64_t now = ofs_now_ns();
		for (unsigned i = 0; i < n_conns; i++)
			if (conns[i].fd < 0)
				conn_try(&conns[i], now);
		/* Sleep until a message, a Packet-In (the worker writes efd, see ofs_wake_agent), the
		 * next housekeeping tick or the next connection attempt. agent_sleeping is stored (a
		 * full barrier) before the ring is checked, so a Packet-In enqueued in between is
		 * seen one way or the other. */
		now = ofs_now_ns();
		uint64_t wake = last_expire + AGENT_TICK_NS;
		for (unsigned i = 0; i < n_conns; i++)
			if (conns[i].fd < 0 && conns[i].next_try_ns < wake)
				wake = conns[i].next_try_ns;
		int timeout_ms = now >= wake ? 0 : (int)((wake - now + 999999) / 1000000);
		__atomic_store_n(&ofs_dp.agent_sleeping, 1, __ATOMIC_SEQ_CST);
		if (rte_ring_count(ofs_dp.pin_ring) > 0)
			timeout_ms = 0;
		struct pollfd pf[OFS_MAX_CONTROLLERS + 2];
		pf[0] = (struct pollfd){ .fd = efd, .events = POLLIN };
		pf[1] = (struct pollfd){ .fd = ls, .events = POLLIN };  /* fd -1: ignored */
		for (unsigned i = 0; i < n_conns; i++)
			pf[2 + i] = (struct pollfd){ .fd = conns[i].fd, .events = POLLIN |
				(conns[i].out_off < conns[i].out.len ? POLLOUT : 0) };
		int np = poll(pf, 2 + n_conns, timeout_ms);
		__atomic_store_n(&ofs_dp.agent_sleeping, 0, __ATOMIC_RELAXED);
		now = ofs_now_ns();
		if (np > 0 && (pf[0].revents & POLLIN)) {
			uint64_t cnt;
			ssize_t r = read(efd, &cnt, sizeof(cnt));
			(void)r;
		}
		for (unsigned i = 0; np > 0 && i < n_conns; i++) {
			struct conn *c = &conns[i];
			if (c->fd >= 0 && (pf[2 + i].revents & POLLOUT)) {
				size_t queued = c->out.len - c->out_off;
				if (!conn_flush(c)) {
					conn_close(c, now, "send failed");
				} else if (c->out.len - c->out_off < queued) {
					/* the socket took more of a queue it had refused: the
					 * controller is reading (a sign of life, as a byte from it) */
					c->last_rx_ns = now;
					c->echo_pending = false;
				}
			}
			if (c->fd >= 0 && (pf[2 + i].revents & (POLLIN | POLLHUP | POLLERR)) &&
			    !conn_receive(c, &tmp, now))
				conn_close(c, now, "session closed");
		}
		if (ls >= 0 && np > 0 && (pf[1].revents & POLLIN))
			stats_answer(ls);
		/* packets for the controllers (dropped when none wants them) */
		void *pins[64];
		unsigned n = rte_ring_sc_dequeue_burst(ofs_dp.pin_ring, pins, 64, NULL);
		for (unsigned i = 0; i < n; i++) {
			ofs_send_packet_in(&tmp, pins[i]);
			free(pins[i]);
		}
		if (now - last_expire >= AGENT_TICK_NS) {
			last_expire = now;
			ofs_expire_flows(&tmp, now);
			ofs_commit();
			check_links(&tmp);
			for (unsigned i = 0; i < n_conns; i++)
				conn_keepalive(&conns[i], now, echo_ns);
		}
		route(&tmp, NULL);
		unsigned up = conns_send(now);
		of_connected = up > 0;
		/* fail mode (OF1.3.5 6.4): standalone forwards on its own while no controller is
		 * connected; secure keeps the flow tables working and drops what needs one */
		if (cfg->fail_standalone && standalone != (up == 0)) {
			standalone = up == 0;
			__atomic_store_n(&ofs_dp.standalone, standalone, __ATOMIC_RELEASE);
			fprintf(stderr, "ofswitch: %s standalone mode\n",
				standalone ? "no controller: entering" : "controller back: leaving");
		}
	}
	for (unsigned i = 0; i < n_conns; i++) {
		if (conns[i].fd >= 0)
			close(conns[i].fd);
		ob_free(&conns[i].out);
	}
	if (ls >= 0) {
		close(ls);
		unlink(cfg->stats_sock);
	}
	ofs_dp.agent_sleeping = 0;
	close(efd);
	ob_free(&tmp);
	return NULL;
}

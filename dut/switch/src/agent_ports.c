/* agent_ports.c -- ports and tables as the controller configures and sees them: PORT_MOD,
 * TABLE_MOD, QUEUE_GET_CONFIG, PORT_STATUS and the ofp_port description (OpenFlow 1.3.5
 * 7.2.1, 7.3.3, 7.3.5.8).
 *
 * Port config bits (OFPPC_*) set here are read by the workers on every packet (PORT_DOWN,
 * NO_RECV, NO_FWD; NO_PACKET_IN is accepted and kept); a change is reported with PORT_STATUS.
 * Tables have no configuration in 1.3: TABLE_MOD only checks its table id and that no bit
 * beyond the deprecated ones is set. No OpenFlow queues exist: QUEUE_GET_CONFIG answers an
 * empty list for OFPP_ANY or a real port, BAD_PORT otherwise.
 * Concurrency: agent thread only; ports[].config is written here and read by workers (a
 * 32-bit store: workers see the old or the new bits). Byte order: wire order in messages.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include "agent_internal.h"

#define OFS_PORT_SPEED_KBPS 10000000u  /* curr_speed / max_speed reported: 10 Gb/s */

bool ofs_port_is_real(uint32_t port)
{
	return port > 0 && port <= OFPP_MAX && ofs_port_idx(port) >= 0;
}

void ofs_port_stats_sum(int pidx, struct ofs_port_stats *s)
{
	memset(s, 0, sizeof(*s));
	for (unsigned w = 0; w < ofs_dp.n_workers; w++) {
		const struct ofs_port_stats *x = &ofs_dp.workers[w].port_stats[pidx];
		s->rx_packets += x->rx_packets; s->rx_bytes += x->rx_bytes;
		s->tx_packets += x->tx_packets; s->tx_bytes += x->tx_bytes;
		s->tx_dropped += x->tx_dropped; s->rx_dropped += x->rx_dropped;
	}
}

void ofs_put_port(uint8_t *p, const struct ofs_port *pt)
{
	/* ofp_port: port_no 4, pad 4, hw_addr 6, pad 2, name 16, config, state, curr,
	 * advertised, supported, peer, curr_speed, max_speed (4 each) = 64 */
	wr32(p, pt->ofport);
	memcpy(p + 8, pt->mac, 6);
	memcpy(p + 16, pt->name, 15);
	wr32(p + 32, pt->config);
	wr32(p + 36, pt->link_up ? OFPPS_LIVE : OFPPS_LINK_DOWN);
	wr32(p + 40, OFPPF_10GB_FD | OFPPF_COPPER);
	wr32(p + 52, OFPPF_10GB_FD | OFPPF_COPPER);
	wr32(p + 56, OFS_PORT_SPEED_KBPS);
	wr32(p + 60, OFS_PORT_SPEED_KBPS);
}

void ofs_send_port_status(struct obuf *out, unsigned pidx, uint8_t reason)
{
	/* ofp_port_status: header, reason 1, pad 7, ofp_port 64 */
	size_t at = ofs_msg_begin(out, OFPT_PORT_STATUS, 0);
	uint8_t *p = ob_put(out, 72);
	p[0] = reason;
	ofs_put_port(p + 8, &ofs_dp.ports[pidx]);
	ofs_msg_end(out, at);
}

int ofs_on_port_mod(struct obuf *out, const uint8_t *msg, size_t len)
{
	/* ofp_port_mod: header, port_no 4, pad 4, hw_addr 6, pad 2, config, mask, advertise, pad */
	int pi = ofs_port_idx(rd32(msg + 8));
	if (pi < 0) {
		ofs_send_error(out, msg, len, OFS_ERR(OFPET_PORT_MOD_FAILED, OFPPMFC_BAD_PORT));
		return 0;
	}
	if (memcmp(msg + 16, ofs_dp.ports[pi].mac, 6) != 0) {
		ofs_send_error(out, msg, len, OFS_ERR(OFPET_PORT_MOD_FAILED, OFPPMFC_BAD_HW_ADDR));
		return 0;
	}
	uint32_t cfg = rd32(msg + 24), mask = rd32(msg + 28), adv = rd32(msg + 32);
	if ((cfg | mask) & ~OFPPC_ALL) {
		ofs_send_error(out, msg, len, OFS_ERR(OFPET_PORT_MOD_FAILED, OFPPMFC_BAD_CONFIG));
		return 0;
	}
	if (adv & ~OFPPF_ALL) {
		ofs_send_error(out, msg, len, OFS_ERR(OFPET_PORT_MOD_FAILED, OFPPMFC_BAD_ADVERTISE));
		return 0;
	}
	uint32_t old = ofs_dp.ports[pi].config;
	ofs_dp.ports[pi].config = (old & ~mask) | (cfg & mask);
	if (ofs_dp.ports[pi].config != old)
		ofs_send_port_status(out, (unsigned)pi, OFPPR_MODIFY);
	return 0;
}

int ofs_on_table_mod(struct obuf *out, const uint8_t *msg, size_t len)
{
	/* ofp_table_mod: header, table_id 1, pad 3, config 4 */
	if (msg[8] >= OFS_N_TABLES && msg[8] != OFPTT_ALL)
		ofs_send_error(out, msg, len, OFS_ERR(OFPET_TABLE_MOD_FAILED, OFPTMFC_BAD_TABLE));
	else if (rd32(msg + 12) & ~OFPTC_DEPRECATED_MASK)
		ofs_send_error(out, msg, len, OFS_ERR(OFPET_TABLE_MOD_FAILED, OFPTMFC_BAD_CONFIG));
	return 0;
}

int ofs_on_queue_get_config(struct obuf *out, const uint8_t *msg, size_t len)
{
	/* ofp_queue_get_config_request: header, port 4, pad 4. No queues are configured: an
	 * empty list for any/a real port, BAD_PORT otherwise. */
	uint32_t port = rd32(msg + 8);
	if (port != OFPP_ANY && !ofs_port_is_real(port)) {
		ofs_send_error(out, msg, len, OFS_ERR(OFPET_QUEUE_OP_FAILED, OFPQOFC_BAD_PORT));
		return 0;
	}
	uint8_t b[8] = {0};
	memcpy(b, msg + 8, 4);
	ofs_msg_simple(out, OFPT_QUEUE_GET_CONFIG_REPLY, rd32(msg + 4), b, sizeof(b));
	return 0;
}

/* ---- kernel-backed ports -------------------------------------------------------------------
 * DPDK 22.11's af_xdp PMD sets its link up at start and its link_update does nothing (af_packet
 * likewise): a veth whose peer went down stayed "up" (suites/interop finding 1). For these
 * ports the agent's tick (check_links, every 100 ms, never per packet) asks the kernel:
 * SIOCGIFFLAGS in the switch's own network namespace (/sys/class/net may show another one). */
void ofs_port_set_kif(struct ofs_port *p, const char *driver, const char *devargs)
{
	p->kif[0] = 0;
	if (!driver || !devargs ||
	    (strcmp(driver, "net_af_xdp") != 0 && strcmp(driver, "net_af_packet") != 0))
		return;
	for (const char *a = devargs; *a; ) {
		size_t n = strcspn(a, ",");
		if (n > 6 && n - 6 < sizeof(p->kif) && strncmp(a, "iface=", 6) == 0) {
			memcpy(p->kif, a + 6, n - 6);
			p->kif[n - 6] = 0;
			return;
		}
		a += n + (a[n] == ',');
	}
}

int ofs_kif_link_up(const struct ofs_port *p)
{
	static int fd = -1;
	if (!p->kif[0])
		return -1;
	if (fd < 0 && (fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
		return -1;
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, p->kif, sizeof(p->kif) < IFNAMSIZ ? sizeof(p->kif) : IFNAMSIZ);
	ifr.ifr_name[IFNAMSIZ - 1] = 0;
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) != 0)
		return errno == ENODEV ? 0 : -1;  /* the interface is gone: its link is down */
	return (ifr.ifr_flags & IFF_UP) && (ifr.ifr_flags & IFF_RUNNING) ? 1 : 0;
}

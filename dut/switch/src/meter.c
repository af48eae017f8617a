/* meter.c -- OpenFlow meters on the datapath (datapath_internal.h): each band a token bucket
 * (kb/s or packets/s, burst = its depth), filled by the time since the meter's last packet; the
 * band of the highest rate that the packet exceeds applies: DROP, or DSCP_REMARK (the AF drop
 * precedence raised by prec_level). A meter's spinlock is taken only by packets that hit it. */
#include <rte_common.h>
#include "datapath_internal.h"

/* Returns false when the packet is dropped. */
bool ofs_dp_meter_apply(struct pkt_ctx *c, uint32_t meter_id)
{
	struct ofs_meter *m = ofs_meter_find(meter_id);
	if (!m)
		return false;
	uint32_t len = plen(c);
	uint64_t now = ofs_now_ns();
	int hit = -1;
	rte_spinlock_lock(&m->lock);
	double dt = m->last_ns ? (double)(now - m->last_ns) * 1e-9 : 0;
	m->last_ns = now;
	m->packets++;
	m->bytes += len;
	for (int i = 0; i < m->n_bands; i++) {
		struct ofs_band *b = &m->bands[i];
		double add = (m->flags & OFPMF_PKTPS) ? b->rate * dt : b->rate * 1000.0 / 8 * dt;
		b->tokens = RTE_MIN(b->depth, b->tokens + add);
		double cost = (m->flags & OFPMF_PKTPS) ? 1.0 : len;
		if (b->tokens >= cost)
			b->tokens -= cost;
		else if (hit < 0 || b->rate > m->bands[hit].rate)
			hit = i;
	}
	if (hit >= 0) {
		m->bands[hit].packets++;
		m->bands[hit].bytes += len;
	}
	rte_spinlock_unlock(&m->lock);
	if (hit < 0)
		return true;
	struct ofs_band *b = &m->bands[hit];
	if (b->type == OFPMBT_DSCP_REMARK) {
		ensure_parsed(c);
		int l3 = c->lay.l3_ofs;
		uint16_t et = ntohs(c->key.eth_type);
		uint8_t *p = pdata(c);
		if (l3 >= 0 && (et == OFS_ETH_P_IPV4 || et == OFS_ETH_P_IPV6)) {
			flush_pending(c);
			uint8_t dscp = c->key.ip_dscp;
			/* raise the AF drop precedence (bits 1-2 of the DSCP) by prec_level */
			uint8_t prec = ((dscp >> 1) & 3) + b->prec_level;
			if (prec > 3) prec = 3;
			dscp = (uint8_t)((dscp & ~0x6) | prec << 1);
			if (et == OFS_ETH_P_IPV4) p[l3 + 1] = (uint8_t)(dscp << 2) | (p[l3 + 1] & 3);
			else wr32(p + l3, (rd32(p + l3) & ~(0xfcu << 20)) | (uint32_t)dscp << 22);
			c->csum_dirty = true;
			reparse(c);
		}
		return true;
	}
	return false;
}

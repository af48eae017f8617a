/* agent_error.c -- the one place that builds OFPT_ERROR (OpenFlow 1.3.5 7.4.4).
 *
 * An error carries the type and code (an OFS_ERR() value, type << 16 | code) and, as data, at
 * least the first 64 bytes of the refused message (the spec's minimum), or a text for
 * HELLO_FAILED. The xid is the refused message's, so the controller can match them.
 * Concurrency: agent thread only. Byte order: written in wire order.
 */
#include <string.h>
#include "agent_internal.h"

#define OFS_ERROR_DATA_MAX 64u  /* bytes of the refused message echoed back */

void ofs_send_error_data(struct obuf *out, uint32_t xid, uint32_t err, const void *data,
			 size_t n)
{
	/* ofp_error_msg: header, type 2, code 2, data */
	size_t at = ofs_msg_begin(out, OFPT_ERROR, xid);
	uint8_t *p = ob_put(out, 4);
	wr16(p, (uint16_t)(err >> 16));
	wr16(p + 2, (uint16_t)err);
	if (n)
		memcpy(ob_put(out, n), data, n);
	ofs_msg_end(out, at);
}

void ofs_send_error(struct obuf *out, const uint8_t *msg, size_t len, uint32_t err)
{
	ofs_send_error_data(out, len >= OFP_HDR_LEN ? rd32(msg + 4) : 0, err, msg,
			    len < OFS_ERROR_DATA_MAX ? len : OFS_ERROR_DATA_MAX);
}

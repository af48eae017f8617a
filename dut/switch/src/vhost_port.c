/* vhost_port.c -- vhost-user ports on librte_vhost directly (design: vhost_port.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/virtio_net.h>
#include <rte_malloc.h>
#include <rte_rcu_qsbr.h>
#include "ofswitch.h"
#include "vhost_port.h"

static struct ofs_vhost *registered[OFS_MAX_PORTS];
static unsigned n_registered;

bool ofs_vhost_is_spec(const char *spec)
{
	return strncmp(spec, OFS_VHOST_PREFIX, strlen(OFS_VHOST_PREFIX)) == 0;
}

/* The port whose socket the library's device vid belongs to (event thread). */
static struct ofs_vhost *by_vid(int vid)
{
	char path[sizeof(((struct ofs_vhost *)0)->path)];
	if (rte_vhost_get_ifname(vid, path, sizeof(path)) != 0)
		return NULL;
	unsigned n = __atomic_load_n(&n_registered, __ATOMIC_ACQUIRE);
	for (unsigned i = 0; i < n; i++)
		if (strcmp(registered[i]->path, path) == 0)
			return registered[i];
	return NULL;
}

static int on_new_device(int vid)
{
	struct ofs_vhost *v = by_vid(vid);
	if (!v)
		return -1;
	/* The worker polls: the guest need not kick (an eventfd write, a syscall per burst). */
	for (uint16_t q = 0; q < rte_vhost_get_vring_num(vid); q++)
		rte_vhost_enable_guest_notification(vid, q, 0);
	uint64_t features = 0;
	rte_vhost_get_negotiated_features(vid, &features);
	fprintf(stderr, "ofswitch: vhost %s: guest attached (vid %d, %u vrings, features 0x%llx)\n",
		v->path, vid, (unsigned)rte_vhost_get_vring_num(vid), (unsigned long long)features);
	__atomic_store_n(&v->vid, vid, __ATOMIC_RELEASE);
	return 0;
}

static void on_destroy_device(int vid)
{
	struct ofs_vhost *v = by_vid(vid);
	if (!v || __atomic_load_n(&v->vid, __ATOMIC_ACQUIRE) != vid)
		return;
	__atomic_store_n(&v->vid, -1, __ATOMIC_RELEASE);
	/* No worker may still be inside rte_vhost_*_burst with vid when we return: the library
	 * frees the device next. Workers report a quiescent state once per poll loop. */
	if (ofs_dp.qsbr)
		rte_rcu_qsbr_synchronize(ofs_dp.qsbr, RTE_QSBR_THRID_INVALID);
}

static const struct rte_vhost_device_ops ops = {
	.new_device = on_new_device,
	.destroy_device = on_destroy_device,
};

/* "vhost:<path>[,client=0|1]" -> v; 0 or -1 with err */
static int parse_spec(const char *spec, struct ofs_vhost *v, char *err, size_t errlen)
{
	const char *s = spec + strlen(OFS_VHOST_PREFIX);
	const char *comma = strchr(s, ',');
	size_t plen = comma ? (size_t)(comma - s) : strlen(s);
	if (plen == 0) {
		snprintf(err, errlen, "'%s': no socket path after '%s'", spec, OFS_VHOST_PREFIX);
		return -1;
	}
	if (plen >= sizeof(v->path)) {
		snprintf(err, errlen, "'%s': socket path longer than %zu bytes", spec,
			 sizeof(v->path) - 1);
		return -1;
	}
	memcpy(v->path, s, plen);
	v->path[plen] = 0;
	v->client = true;
	while (comma) {
		const char *kv = comma + 1;
		comma = strchr(kv, ',');
		size_t len = comma ? (size_t)(comma - kv) : strlen(kv);
		if (len == 8 && (strncmp(kv, "client=0", 8) == 0 || strncmp(kv, "client=1", 8) == 0)) {
			v->client = kv[7] == '1';
		} else {
			snprintf(err, errlen, "'%s': unknown option '%.*s' (known: client=0|1)", spec,
				 (int)len, kv);
			return -1;
		}
	}
	return 0;
}

struct ofs_vhost *ofs_vhost_open(const char *spec, unsigned n_workers, char *err, size_t errlen)
{
	if (n_registered == OFS_MAX_PORTS) {
		snprintf(err, errlen, "'%s': more than %d vhost ports", spec, OFS_MAX_PORTS);
		return NULL;
	}
	struct ofs_vhost *v = rte_zmalloc("ofs_vhost", sizeof(*v), RTE_CACHE_LINE_SIZE);
	if (!v) {
		snprintf(err, errlen, "'%s': out of memory", spec);
		return NULL;
	}
	if (parse_spec(spec, v, err, errlen) != 0)
		goto fail;
	v->vid = -1;
	v->tx_shared = n_workers > 1;
	rte_spinlock_init(&v->tx_lock);
	for (unsigned i = 0; i < n_registered; i++)
		if (strcmp(registered[i]->path, v->path) == 0) {
			snprintf(err, errlen, "'%s': socket %s given twice", spec, v->path);
			goto fail;
		}
	/* published before the library can call back (driver_start) */
	registered[n_registered] = v;
	__atomic_store_n(&n_registered, n_registered + 1, __ATOMIC_RELEASE);
	uint64_t flags = v->client ? RTE_VHOST_USER_CLIENT : 0;
	const char *step = "register";
	if (rte_vhost_driver_register(v->path, flags) != 0)
		goto fail_unpublish;
	step = "feature setup";
	if (rte_vhost_driver_disable_features(v->path, (1ULL << VIRTIO_NET_F_HOST_TSO4) |
					      (1ULL << VIRTIO_NET_F_HOST_TSO6)) != 0)
		goto fail_unregister;
	step = "callback setup";
	if (rte_vhost_driver_callback_register(v->path, &ops) != 0)
		goto fail_unregister;
	step = "start";
	if (rte_vhost_driver_start(v->path) != 0)
		goto fail_unregister;
	return v;
fail_unregister:
	rte_vhost_driver_unregister(v->path);
fail_unpublish:
	snprintf(err, errlen, "'%s': vhost-user socket %s: %s failed (see the VHOST_CONFIG "
		 "messages above)", spec, v->path, step);
	__atomic_store_n(&n_registered, n_registered - 1, __ATOMIC_RELEASE);
	registered[n_registered] = NULL;
fail:
	rte_free(v);
	return NULL;
}

void ofs_vhost_close(struct ofs_vhost *v)
{
	if (!v)
		return;
	/* detaches the guest first (on_destroy_device), then removes the socket */
	rte_vhost_driver_unregister(v->path);
}

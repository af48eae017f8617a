/*
 * libofb_trex_bind: TRex v3.08's listeners on one address instead of every address.
 *
 * TRex binds its JSON-RPC server and its publisher to every address: the endpoint is
 * "tcp://" + "*:<port>"
 * (src/rpc-server/trex_rpc_req_resp_server.cpp, src/publisher/trex_publisher.cpp: the
 * address is written into the source).  ofbench's rule is that a service binds loopback or the
 * lab address it serves, so the server runs with this library in LD_PRELOAD: its zmq_bind()
 * rewrites that wildcard TCP endpoint to "tcp://<OFB_TREX_BIND_ADDR>:<port>"
 * and hands every call on to libzmq's own zmq_bind().  Any other endpoint passes unchanged.
 *
 * OFB_TREX_BIND_ADDR unset or empty: the call is refused (EINVAL) rather than left to bind
 * every address, so a server started without the address fails to start, loudly, instead of
 * listening on the lab's other networks.  An address that does not fit is refused the same way.
 * drivers/trex/server.py (server_env) sets both variables; TRex itself is not rebuilt.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*zmq_bind_fn)(void *, const char *);

int zmq_bind(void *socket, const char *endpoint)
{
    static zmq_bind_fn real;
    static const char wild[] = "tcp://*:";
    char buf[160];

    if (real == NULL) {
        real = (zmq_bind_fn)dlsym(RTLD_NEXT, "zmq_bind");
        if (real == NULL) {
            fprintf(stderr, "libofb_trex_bind: libzmq's zmq_bind not found: %s\n", dlerror());
            errno = ENOSYS;
            return -1;
        }
    }
    if (endpoint == NULL || strncmp(endpoint, wild, sizeof(wild) - 1) != 0)
        return real(socket, endpoint);

    const char *addr = getenv("OFB_TREX_BIND_ADDR");
    const char *port = endpoint + sizeof(wild) - 1;
    int n = (addr && *addr) ? snprintf(buf, sizeof(buf),
                                       strchr(addr, ':') ? "tcp://[%s]:%s" : "tcp://%s:%s",
                                       addr, port)
                            : -1;
    if (n < 0 || (size_t)n >= sizeof(buf)) {
        fprintf(stderr, "libofb_trex_bind: refusing to bind %s to every address "
                "(OFB_TREX_BIND_ADDR %s)\n", endpoint, (addr && *addr) ? "too long" : "unset");
        errno = EINVAL;
        return -1;
    }
    fprintf(stderr, "libofb_trex_bind: %s -> %s\n", endpoint, buf);
    return real(socket, buf);
}

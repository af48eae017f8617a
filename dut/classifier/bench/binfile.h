/* Reader for the binary rule/key files that traces/rulesets.py writes for the bench tools.
 *
 * Layout: 4-byte magic ("OFBR" rules, "OFBK" keys), uint32 key_len, uint32 count (host byte
 * order), then count records: a rule is uint32 priority + value[key_len] + mask[key_len], a key
 * is key[key_len]. Bench tools only: a bad file ends the process with a message naming it. */
#ifndef OFB_CLS_BINFILE_H
#define OFB_CLS_BINFILE_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline void *ofb_read_binfile(const char *prog, const char *path, const char *magic,
                                     uint32_t *kl, uint32_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
        exit(2);
    }
    char m[4];
    uint32_t h[2];
    if (fread(m, 1, 4, f) != 4 || memcmp(m, magic, 4) || fread(h, 4, 2, f) != 2) {
        fprintf(stderr, "%s: %s: bad header (want %.4s)\n", prog, path, magic);
        exit(2);
    }
    *kl = h[0];
    *n = h[1];
    size_t rec = !strcmp(magic, "OFBR") ? 4 + 2 * (size_t)h[0] : h[0];
    uint8_t *d = malloc(rec * h[1] + 1);
    if (!d || fread(d, rec, h[1], f) != h[1]) {
        fprintf(stderr, "%s: %s: short file\n", prog, path);
        exit(2);
    }
    fclose(f);
    return d;
}

#endif

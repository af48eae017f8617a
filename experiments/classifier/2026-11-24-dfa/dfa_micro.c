#include "dfa.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static uint8_t *rd(const char *p, uint32_t *kl, uint32_t *n, size_t rec_extra) {
    FILE *f = fopen(p, "rb"); char mg[4]; fread(mg,1,4,f); fread(kl,4,1,f); fread(n,4,1,f);
    size_t sz = (size_t)*n * (rec_extra + (rec_extra ? 2 : 1) * *kl); uint8_t *b = malloc(sz); fread(b,1,sz,f); fclose(f); return b; }
static uint32_t *pr; static int cmp(const void *a, const void *b){ uint32_t x=*(uint32_t*)a,y=*(uint32_t*)b; if(pr[x]!=pr[y]) return pr[x]>pr[y]?-1:1; return x<y?-1:1; }
int main(int argc, char **argv) {
    uint32_t kl, n, kl2, nk; uint8_t *r = rd(argv[1], &kl, &n, 4), *k = rd(argv[2], &kl2, &nk, 0);
    uint32_t nwk = (kl + 7) / 8; pr = malloc(4*n); uint32_t *ord = malloc(4*n);
    for (uint32_t i=0;i<n;i++){ memcpy(&pr[i], r + (size_t)i*(4+2*kl), 4); ord[i]=i; }
    qsort(ord, n, 4, cmp);
    uint64_t *rw = calloc((size_t)n*2*nwk, 8);
    for (uint32_t i=0;i<n;i++){ uint8_t *p = r + (size_t)ord[i]*(4+2*kl)+4; uint8_t *v=(uint8_t*)(rw+(size_t)i*2*nwk), *m=(uint8_t*)(rw+(size_t)i*2*nwk+nwk);
        for(uint32_t d=0;d<kl;d++){ m[d]=p[kl+d]; v[d]=p[d]&p[kl+d]; } }
    char err[256]; int over;
    struct ofb_bdfa *t = ofb_bdfa_build(kl, nwk, rw, n, OFB_BDFA_SIMD, 0, &over, err, sizeof err);
    if (!t) { printf("%s\n", err); return 1; }
    const uint8_t **kp = malloc(sizeof(void*)*nk); for (uint32_t i=0;i<nk;i++) kp[i]=k+(size_t)i*kl;
    uint32_t out[64]; unsigned long sink=0; struct timespec a,b; double best=0;
    for (int rep=0; rep<5; rep++) {
      clock_gettime(CLOCK_THREAD_CPUTIME_ID,&a);
      for (int it=0; it<4; it++) for (uint32_t i=0;i<nk;i+=32){ ofb_bdfa_lookup_batch(t, kp+i, nk-i<32?nk-i:32, out); sink+=out[0]; }
      clock_gettime(CLOCK_THREAD_CPUTIME_ID,&b);
      double s=(b.tv_sec-a.tv_sec)+(b.tv_nsec-a.tv_nsec)*1e-9; double ml=4.0*nk/s/1e6; if(ml>best)best=ml; }
    printf("raw dfa batch: best %.2f Mlps (%zu B, %u groups) sink %lu\n", best, ofb_bdfa_bytes(t), ofb_bdfa_groups(t), sink&1);
    return 0; }

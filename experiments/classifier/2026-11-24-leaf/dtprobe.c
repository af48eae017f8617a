#include <stdio.h>
struct ofb_dtree; void ofb_dtree_print_stats(const struct ofb_dtree *t, FILE *f);
#include "dtree.h"
#include "bench/binfile.h"
#include <time.h>
static double now_s(void){struct timespec t;clock_gettime(CLOCK_THREAD_CPUTIME_ID,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int argc,char**argv){
  uint32_t kl,n,kl2,nk; uint8_t*d=ofb_read_binfile("p",argv[1],"OFBR",&kl,&n); uint8_t*k=ofb_read_binfile("p",argv[2],"OFBK",&kl2,&nk);
  uint32_t nwk=(kl+7)/8; size_t rec=4+2*kl;
  uint64_t*w=calloc((size_t)n*2*nwk,8); struct ofb_dtree_rule*r=calloc(n,sizeof*r);
  for(uint32_t i=0;i<n;i++){uint8_t*p=d+rec*i; memcpy(&r[i].prio,p,4); memcpy(w+(size_t)i*2*nwk,p+4,kl); memcpy(w+(size_t)i*2*nwk+nwk,p+4+kl,kl);
    r[i].value=w+(size_t)i*2*nwk; r[i].mask=r[i].value+nwk; r[i].id=i+1; r[i].handle=i+1; r[i].add_v=0; r[i].del_v=UINT64_MAX;}
  char err[256]=""; double t0=now_s(); struct ofb_dtree*t=ofb_dtree_build(kl,r,n,getenv("DTS")?1:0,err,sizeof err); double bt=now_s()-t0;
  if(!t){printf("fail %s\n",err);return 1;}
  printf("build %.3f s trees %u entries %lu (%.2f/rule) bytes %.1f/rule\n",bt,ofb_dtree_trees(t),(unsigned long)ofb_dtree_entries(t),(double)ofb_dtree_entries(t)/n,(double)ofb_dtree_bytes(t)/n);
  /* check 2000 keys vs brute force */
  uint32_t bad=0; for(uint32_t i=0;i<nk && i<300;i++){ const uint8_t*key=k+(size_t)i*kl; uint64_t kw[16]={0}; memcpy(kw,key,kl);
    uint32_t bp=0,bid=0; for(uint32_t j=0;j<n;j++){ int ok=1; for(uint32_t q=0;q<nwk;q++) if((kw[q]&r[j].mask[q])!=(r[j].value[q]&r[j].mask[q])){ok=0;break;}
      if(ok && (!bid || r[j].prio>bp || (r[j].prio==bp && r[j].id<bid))){bp=r[j].prio;bid=r[j].id;}}
    uint32_t rk=ofb_dtree_lookup(t,key,5); uint32_t p=0,id=0; uint64_t h=0; if(rk!=DT_NONE) ofb_dtree_rank_info(t,rk,&p,&id,&h);
    const uint8_t*kp[1]={key}; uint32_t rb; ofb_dtree_lookup_batch(t,kp,1,5,&rb);
    if(id!=bid || rb!=rk) bad++; }
  printf("mismatch %u\n",bad);
  uint64_t sink=0; double el; size_t done=0; t0=now_s();
  do{ for(uint32_t i=0;i<nk;i++) sink+=ofb_dtree_lookup(t,k+(size_t)i*kl,5); done+=nk; el=now_s()-t0;}while(el<0.5);
  printf("single %.2f Mlps\n",done/el/1e6);
  /* HOT=N: only the first N keys, repeated (their paths and leaves stay in cache: the compute cost) */
  uint32_t hot=getenv("HOT")?(uint32_t)atoi(getenv("HOT")):0;
  const uint8_t**kp=malloc(sizeof(void*)*nk); for(uint32_t i=0;i<nk;i++)kp[i]=k+(size_t)(hot?i%hot:i)*kl; uint32_t*ro=malloc(4*nk);
  done=0;t0=now_s(); do{ for(uint32_t i=0;i<nk;i+=32) ofb_dtree_lookup_batch(t,kp+i,nk-i<32?nk-i:32,5,ro+i); done+=nk; el=now_s()-t0;}while(el<0.5);
  printf("batch %.2f Mlps sink %lu\n",done/el/1e6,(unsigned long)(sink&1));
}

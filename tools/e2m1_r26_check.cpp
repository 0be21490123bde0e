// Host model of Mxfp4Wide::encode (kernels-src/cuda/quant/per_token_cast_fp4_26.cu; docs/perf-notes/perf26-fp4.md):
// every finite bf16 x with |x| · inv ≤ 6, in chunk positions 0 and 7 (all 8 for one pattern in 8; the others random such values), × every inverse 2^k,
// k ∈ [-125, 126] (the fast path's range), against spec/quant.md §1.3's table on fl32(x · inv), the packed nibbles
// compared. bf16 fma modelled exactly (the product is exact in double; the sum in [128, 256) rounds to an integer, RNE).
// g++ -O2 -o /tmp/c tools/e2m1_r26_check.cpp && /tmp/c   (~10 s; prints "bad 0")
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <cmath>
#include <random>
static float u2f(uint32_t u){float f;memcpy(&f,&u,4);return f;}
static uint32_t f2u(float f){uint32_t u;memcpy(&u,&f,4);return u;}
static uint32_t ref(float v){ float a=fabsf(v); uint32_t s=(f2u(v)>>31)<<3; uint32_t c;
  if(a<=0.25f)c=0;else if(a<0.75f)c=1;else if(a<=1.25f)c=2;else if(a<1.75f)c=3;else if(a<=2.5f)c=4;else if(a<3.5f)c=5;else if(a<=5.f)c=6;else c=7; return s|c;}
static uint32_t prmt(uint32_t a,uint32_t b,uint32_t sel){uint64_t x=((uint64_t)b<<32)|a;uint32_t d=0;for(int i=0;i<4;i++){uint32_t n=(sel>>(4*i))&15;uint32_t by=(x>>(8*(n&7)))&255;if(n&8)by=(by&128)?255:0;d|=by<<(8*i);}return d;}
static double bf(uint32_t h){return (double)u2f(h<<16);}
// bf16 fma with exact product, result in [128,256): rne to integer, returned as bf16 pattern
static uint32_t fma16(uint32_t a,uint32_t c,uint32_t m){ double r=bf(a)*bf(c)+bf(m); double q=nearbyint(r); // rne (default mode)
  if(!(q>=128&&q<256)){printf("range %g\n",r);} return f2u((float)q)>>16; }
static uint32_t fma2(uint32_t a,uint32_t c,uint32_t m){return fma16(a&0xffff,c&0xffff,m&0xffff)|fma16(a>>16,c>>16,m>>16)<<16;}
static uint32_t min2(uint32_t a,uint32_t b){uint32_t lo=std::min(a&0xffff,b&0xffff),hi=std::min(a>>16,b>>16);return lo|hi<<16;}
static uint32_t enc(const uint32_t x[4],uint32_t c2,uint32_t c1,uint32_t ch){const uint32_t kM=0x43004300u;uint32_t m[4];
  for(int j=0;j<4;j++){uint32_t a=x[j]&0x7fff7fffu;m[j]=min2(min2(fma2(a,c2,kM),fma2(a,c1,kM+0x20002u)),fma2(a,ch,kM+0x40004u));}
  uint32_t q01=prmt(m[0],m[1],0x6420)|(prmt(x[0],x[1],0xfdb9)&0x08080808u);uint32_t q23=prmt(m[2],m[3],0x6420)|(prmt(x[2],x[3],0xfdb9)&0x08080808u);
  return prmt(q01,q23,0x6420)|(prmt(q01,q23,0x7531)<<4);}
int main(){ long bad=0,n=0; std::mt19937 rng(26);
 for(int k=-125;k<=126;k++){ uint32_t ib=(uint32_t)(127+k)<<23; float inv=u2f(ib); uint32_t c1=prmt(ib,0,0x3232),c2=c1+0x00800080u,ch=c1-0x00800080u;
  // all bf16 with |x|·inv ≤ 6, finite, in every element position (others 0 / random valid)
  for(uint32_t h=0;h<0x10000;h++){ if(((h>>7)&0xff)==0xff) continue; double a=fabs(bf(h))*ldexp(1.0,k); if(a>6) continue;
    for(int pos=0;pos<8;pos+=((h&7)==0?1:7)){ uint32_t x[4]={0,0,0,0}; uint32_t e[8]; for(int i=0;i<8;i++){ uint32_t r; do{ r=rng()&0xffff;}while(((r>>7)&0xff)==0xff||fabs(bf(r))*ldexp(1.0,k)>6); e[i]=r;} e[pos]=h;
      for(int j=0;j<4;j++)x[j]=e[2*j]|e[2*j+1]<<16; uint32_t o=enc(x,c2,c1,ch); uint32_t r=0; for(int i=0;i<8;i++) r|=ref(u2f(e[i]<<16)*inv)<<(4*i);
      n++; if(o!=r){ if(bad<5)printf("bad k=%d h=%04x pos=%d o=%08x r=%08x\n",k,h,pos,o,r); bad++; } } } }
 printf("checked %ld chunks, bad %ld\n",n,bad); return bad!=0; }

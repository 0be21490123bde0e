// Host model of Nvfp4Wide::encode (kernels-src/cuda/quant/per_token_cast_fp4_29.cu; docs/perf-notes/perf29-nvfp4.md).
// Part 1: for every positive finite binary32 A = max(amax, clamp) whose e4m3 byte c = e4m3_rn_satfinite(fl(A / 6)) is
// in [0x08, 0x7D] (the fast path's bytes), fl(A · inv) ≤ 6.375 with inv = fl(1 / decode(c)); so every product
// fl(|x| · inv) of the group (|x| ≤ amax ≤ A, the product monotonic) is below 7, the encoder's precondition.
// Part 2: the encoder (binary32 product, three candidate fmas without the clamp on the two magics, min, the
// multiply-add packing, the prmt signs) for every such inverse × every finite bf16 x with fl(|x| · inv) < 7 (a wider set than part 1
// allows), x in each of the 8 chunk positions (the other 7 random such values), against spec/quant.md §1.3's table
// on fl32(x · inv), the packed nibbles compared. Host fmaf is the correctly rounded binary32 fma, as fma.rn.f32.
// g++ -O2 -ffp-contract=off -o /tmp/c tools/e2m1_r29_check.cpp && /tmp/c   (~30 s; prints "bad 0" twice)
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <cmath>
#include <random>
#include <algorithm>
static float u2f(uint32_t u){float f;memcpy(&f,&u,4);return f;}
static uint32_t f2u(float f){uint32_t u;memcpy(&u,&f,4);return u;}
static uint32_t ref(float v){ float a=fabsf(v); uint32_t s=(f2u(v)>>31)<<3; uint32_t c;
  if(a<=0.25f)c=0;else if(a<0.75f)c=1;else if(a<=1.25f)c=2;else if(a<1.75f)c=3;else if(a<=2.5f)c=4;else if(a<3.5f)c=5;else if(a<=5.f)c=6;else c=7; return s|c;}
static uint32_t prmt(uint32_t a,uint32_t b,uint32_t sel){uint64_t x=((uint64_t)b<<32)|a;uint32_t d=0;for(int i=0;i<4;i++){uint32_t n=(sel>>(4*i))&15;uint32_t by=(x>>(8*(n&7)))&255;if(n&8)by=(by&128)?255:0;d|=by<<(8*i);}return d;}
static float dec_e4m3(uint32_t c){int e=(c>>3)&15,m=c&7; return e? ldexpf(1+m/8.f,e-7): ldexpf(m/8.f,-6);}
// spec §1.2 e4m3 RN, saturating to 448, for a non-negative finite v
static uint32_t enc_e4m3(float v){ if(v<0x1p-6f){ return (uint32_t)nearbyint((double)v*512.0);} int e=((f2u(v)>>23)&255)-127; double m=nearbyint((double)v/ldexp(1.0,e)*8.0); if(m==16){m=8;e++;} uint32_t c=(uint32_t)((e+7)<<3)|(uint32_t)(m-8); return c>0x7e?0x7e:c;}
static uint32_t mag(float v,float inv,uint32_t M){ float a=fabsf(v)*inv; uint32_t r0=f2u(fmaf(a,2.0f,u2f(M))),r1=f2u(fmaf(a,1.0f,u2f(M+2))),r2=f2u(fmaf(a,0.5f,u2f(M+4))); return std::min(std::min(r0,r1),r2);}
static uint32_t enc(const uint32_t x[4],float inv){ uint32_t n[4]; for(int j=0;j<4;j++){ uint32_t lo=mag(u2f(x[j]<<16),inv,0x4b000000u),hi=mag(u2f(x[j]&0xffff0000u),inv,0x4b500000u); n[j]=hi*16u+lo;}
  uint32_t codes=((n[3]*256u+n[2])*256u+n[1])*256u+n[0]; uint32_t s1=prmt(x[0],x[1],0x7531),s2=prmt(x[2],x[3],0x7531);
  uint32_t odd=prmt(s1,s2,0x7531),even=prmt(s1,s2,0xeca8); return codes|(odd&0x80808080u)|(even&0x08080808u);}
int main(){
  // part 1
  long n1=0,bad1=0; float worst=0;
  for(uint32_t u=0x3b000000u;u<0x45800000u;u++){ float A=u2f(u); uint32_t c=enc_e4m3(A/6.0f); if(c<0x08||c>0x7d) continue; n1++; float inv=1.0f/dec_e4m3(c); float p=A*inv; worst=std::max(worst,p); if(!(p<=6.375f)) bad1++; }
  // the bytes in [0x08, 0x7D] come only from A inside the scanned range
  if(enc_e4m3(u2f(0x3b000000u)/6.0f)>=0x08||enc_e4m3(u2f(0x45800000u)/6.0f)<=0x7d){printf("part 1 range too narrow\n");return 1;}
  printf("part 1: %ld values of A, max fl(A*inv) %.9g, bad %ld\n",n1,worst,bad1);
  // part 2
  long n=0,bad=0; std::mt19937 rng(29);
  for(uint32_t c=0x08;c<=0x7d;c++){ float inv=1.0f/dec_e4m3(c);
    auto ok=[&](uint32_t h){ return ((h>>7)&0xff)!=0xff && fabsf(u2f(h<<16))*inv<7.0f; };
    for(uint32_t h=0;h<0x10000;h++){ if(!ok(h)) continue;
      for(int pos=0;pos<8;pos++){ uint32_t e[8]; for(int i=0;i<8;i++){ uint32_t r; do{ r=rng()&0xffff;}while(!ok(r)); e[i]=r;} e[pos]=h;
        uint32_t x[4]; for(int j=0;j<4;j++)x[j]=e[2*j]|e[2*j+1]<<16; uint32_t o=enc(x,inv),r=0; for(int i=0;i<8;i++) r|=ref(u2f(e[i]<<16)*inv)<<(4*i);
        n++; if(o!=r){ if(bad<5)printf("bad c=%02x h=%04x pos=%d o=%08x r=%08x\n",c,h,pos,o,r); bad++; } } } }
  printf("part 2: checked %ld chunks, bad %ld\n",n,bad); return (bad|bad1)!=0; }

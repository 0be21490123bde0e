// perf15-ncast (norm_cast_br4x.cu). Exhaustive: for every non-negative non-NaN binary32 a, the fast UE8M0 exponent ((f2u(a) - 0x04600001) >> 23) + 1
// against sf_and_inv's ((f2u(RN(a / 448)) - 1) >> 23) + 1; prints the agreeing range's lower end.
#include <cstdio>
#include <cstdint>
#include <cstring>
static uint32_t f2u(float f){uint32_t u;memcpy(&u,&f,4);return u;}
static float u2f(uint32_t u){float f;memcpy(&f,&u,4);return f;}
int main(){
  uint32_t lastBad=0; bool any=false; uint64_t bad=0;
  for(uint64_t ab=0; ab<=0x7f800000u; ++ab){
    volatile float a=u2f((uint32_t)ab);
    float q=a/448.0f;
    uint32_t ref=((f2u(q)-1u)>>23)+1u;
    uint32_t fast=(((uint32_t)ab-0x04600001u)>>23)+1u;
    if(ref!=fast){lastBad=(uint32_t)ab;any=true;++bad;}
  }
  printf("bad=%llu lastBad=0x%08x (%g)\n",(unsigned long long)bad,lastBad,(double)u2f(lastBad));
  // the fast range used: [0x0C000000 (2^-103), 0x7F800000)
  uint64_t bad2=0;
  for(uint64_t ab=0x0C000000u; ab<0x7f800000u; ++ab){
    volatile float a=u2f((uint32_t)ab); float q=a/448.0f;
    if((((f2u(q)-1u)>>23)+1u)!=((((uint32_t)ab-0x04600001u)>>23)+1u)) ++bad2;
  }
  printf("in [0x0C000000, 0x7F800000): bad=%llu\n",(unsigned long long)bad2);
  return 0;
}

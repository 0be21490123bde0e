// perChannelCastFused of an e4m3 input with [1, 128] fp32 scales, R = 128: round 19's persistent 3-stage ring
// (per_channel_cast_pl19.cuh) with 128 × 512 tiles, i.e. 512 contiguous bytes of each gathered row per tile (branch
// perf20-pcf, docs/perf-notes/perf20-pcf.md). Numerics: per_channel_cast.cu, spec/quant.md §5.1-5.2.
//
// Symbol (the host runs it only for perChannelCastFused of an e4m3 input with numPerChannels 128 and 16-byte
// aligned x and data; perChannelLaunchTuning.pipelinedE4m3 "_pr", the default since round 20)
//   tk_per_channel_cast__e4m3_r128_pr   CTA b walks the contiguous run of tiles [⌊b · tiles / grid⌋,
//                                       ⌊(b + 1) · tiles / grid⌋) (column tiles fastest): consecutive tiles of a
//                                       CTA read adjacent 512-byte segments of the same 128 gathered rows, whose
//                                       posToToken entries it loads once per row block
//
// Launch geometry: block.x = 1024, dynamic shared memory 221,184 B (3 stages × (64 KiB of codes + 2 KiB of
// scales), 16 KiB of partial maxima, 2 KiB of inverses; carveout 100%), 1 CTA per SM, grid.x = min(tiles, SMs)
// with tiles = ceilDiv(T_out, 128) · ceilDiv(H, 512); any grid.x ≥ 1 is correct.
//
// Why: round 19 measured (H200, 2026-12-03) the ring with 128-byte segments per gathered row (`_pl`) at 53.2 /
// 55.4% of copy at 8192 / 16384 × 7168 and with 256-byte segments (`_pw`) at 55.2 / 56.7%: the segment length gained
// more than the latency hiding. This form doubles it again with the same bytes in flight per SM (2 × 64 KiB), one
// CTA walking a row. Round 20 measured it at 57.1 / 60.3% (`_pw` 55.3 / 56.8%); the same tiles in `_pw`'s strided
// order (`_px`, neighbouring CTAs reading a row's neighbouring segments at the same time) lost at 53.6 / 55.1% and
// left the package (docs/perf-notes/perf20-pcf.md); `_pw` was kept for A/B until trim24.
//
// Per tile, the work of each 128-column quarter is `_pw`'s per half (warps 8q … 8q + 7 on quarter q), and so are
// the bytes: the same helpers on the same values, the same dead / zero / bad row handling and report (one reporter
// per row: piece 0 of the tile at column 0); a quarter beyond H (H / 128 not a multiple of 4) reads nothing,
// stores no sf and no data.
#include "per_channel_cast_pl19.cuh"

extern "C" __global__ void __launch_bounds__(tk::PerChannelPipelined<4, true>::kThreads,
                                             tk::PerChannelPipelined<4, true>::kCtasPerSm)
    tk_per_channel_cast__e4m3_r128_pr(const __grid_constant__ PerChannelCastParams p) {
  tk::PerChannelPipelined<4, true>(p).run();
}

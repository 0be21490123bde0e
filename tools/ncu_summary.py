#!/usr/bin/env python3
"""Summarises tools/gpu_run.sh's `ncu` step: python3 tools/ncu_summary.py ncu.csv

The file holds, per case, a line "### case <op> <tokens> <variant>" and Nsight Compute's raw CSV (`--page raw`):
a header row ("ID", ..., "Kernel Name", metric names), a units row, one row per profiled launch. The case's setup
launches come first, so for each kernel name the last launch is the one of the op. Printed per kernel: duration,
DRAM / L2 / L1 / SM throughput (% of peak), achieved and theoretical occupancy, registers, the block limits, issue
activity, the largest warp-stall reasons (cycles per issued instruction) and the busiest SM pipes (fp64, fma, alu,
lsu, ...: what bounds a compute-heavy kernel such as randn), and, when the CSV has them (gpu_run.sh's NCU_METRICS), the
DRAM bytes read / written and the global load / store warp instructions with their sectors (the access width).
"""
import csv
import sys


def pick(row, *names):
    for n in names:
        v = row.get(n)
        if v not in (None, "", "n/a"):
            return v
    return "-"


def num(v):
    try:
        return float(v.replace(",", ""))
    except (AttributeError, ValueError):
        return None


UNITS = {}  # metric name -> unit, from the units row under each header (the last one read)


def cases(path):
    """Yields (case label, [row dicts]) in file order."""
    label, header, rows = None, None, []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("### case"):
                if label is not None:
                    yield label, rows
                label, header, rows = line[len("### case"):].strip(), None, []
                continue
            if not line.startswith('"'):
                continue
            cells = next(csv.reader([line]))
            if cells and cells[0] == "ID":
                header = cells
            elif header is not None and cells and cells[0] == "" and len(cells) == len(header):
                UNITS.update((h, u) for h, u in zip(header, cells) if u)
            elif header is not None and cells and cells[0] != "" and len(cells) == len(header):
                rows.append(dict(zip(header, cells)))
    if label is not None:
        yield label, rows


def base_value(row, name):
    """The metric in base units (a unit such as Mbyte / Ksector scaled back), or None."""
    x = num(row.get(name))
    u = UNITS.get(name, "")
    if x is not None and len(u) > 1 and u[0] in "KMGT" and u[1].islower():
        x *= {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}[u[0]]
    return x


def traffic_line(r):
    """The extra metrics that tools/gpu_run.sh's NCU_METRICS adds (DRAM bytes, global load / store widths)."""
    rd, wr = base_value(r, "dram__bytes_read.sum"), base_value(r, "dram__bytes_write.sum")
    ld, st = base_value(r, "smsp__inst_executed_op_global_ld.sum"), base_value(r, "smsp__inst_executed_op_global_st.sum")
    req = base_value(r, "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum")
    sec = base_value(r, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum")
    sst = base_value(r, "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum")
    if rd is None and ld is None:
        return None
    parts = []
    if rd is not None or wr is not None:
        parts.append("DRAM " + ", ".join(f"{k} {v / 1e6:.1f} MB" for k, v in (("read", rd), ("write", wr)) if v is not None))
    if ld:
        parts.append(f"global ld {ld:.0f} warp insts" + (f", {sec / ld:.1f} sectors each" if sec else "")
                     + (f" ({sec / req:.1f} sectors/request)" if sec and req else ""))
    if st:
        parts.append(f"global st {st:.0f} warp insts" + (f", {sst / st:.1f} sectors each" if sst else ""))
    return "    traffic: " + "; ".join(parts) + " (a 16-byte load by every lane: 16 sectors per warp instruction)"


STALL_PREFIX = "smsp__average_warps_issue_stalled_"
STALL_SUFFIX = "_per_issue_active.ratio"


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    for label, rows in cases(sys.argv[1]):
        print(f"== {label}: {len(rows)} launches profiled")
        last = {}
        for r in rows:
            last[r.get("Kernel Name", "?")] = r
        for name, r in last.items():
            short = name.split("(")[0]
            print(f"  {short}")
            print("    duration {} ns, grid {} x block {}, regs {}, smem/block {} B".format(
                pick(r, "gpu__time_duration.sum"), pick(r, "launch__grid_size"), pick(r, "launch__block_size"),
                pick(r, "launch__registers_per_thread"), pick(r, "launch__shared_mem_per_block_static", "launch__shared_mem_per_block")))
            print("    SM clock {} Hz (ncu locks it to base by default), {} warp instructions, {} on the fp64 pipe".format(
                pick(r, "gpc__cycles_elapsed.avg.per_second", "sm__cycles_elapsed.avg.per_second"),
                pick(r, "smsp__inst_executed.sum", "sm__inst_executed.sum"),
                pick(r, "sm__inst_executed_pipe_fp64.sum", "smsp__inst_executed_pipe_fp64.sum")))
            print("    % of peak: DRAM {}, memory {}, L2 {}, L1 {}, SM {}".format(
                pick(r, "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "dram__throughput.avg.pct_of_peak_sustained_elapsed"),
                pick(r, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"),
                pick(r, "lts__throughput.avg.pct_of_peak_sustained_elapsed"),
                pick(r, "l1tex__throughput.avg.pct_of_peak_sustained_active"),
                pick(r, "sm__throughput.avg.pct_of_peak_sustained_elapsed")))
            t = traffic_line(r)
            if t:
                print(t)
            print("    occupancy achieved {} / theoretical {} %, block limits regs {} smem {} warps {} barriers {}".format(
                pick(r, "sm__warps_active.avg.pct_of_peak_sustained_active"), pick(r, "sm__maximum_warps_per_active_cycle_pct"),
                pick(r, "launch__occupancy_limit_registers"), pick(r, "launch__occupancy_limit_shared_mem"),
                pick(r, "launch__occupancy_limit_warps"), pick(r, "launch__occupancy_limit_barriers")))
            print("    issue: {} % of cycles with an eligible warp, {} warp cycles per issued instruction".format(
                pick(r, "smsp__issue_active.avg.pct_of_peak_sustained_active"),
                pick(r, "smsp__average_warp_latency_per_inst_issued.ratio", "smsp__average_warps_issue_stalled_per_issue_active.ratio")))
            stalls = []
            for k, v in r.items():
                if k.startswith(STALL_PREFIX) and k.endswith(STALL_SUFFIX) and "_not_issued" not in k:
                    x = num(v)
                    if x is not None:
                        stalls.append((x, k[len(STALL_PREFIX):-len(STALL_SUFFIX)]))
            stalls.sort(reverse=True)
            if stalls:
                print("    stalls (cycles per issue): " + ", ".join(f"{n} {x:.2f}" for x, n in stalls[:6]))
            pipes = []  # ComputeWorkloadAnalysis: how busy each SM pipe was (fp64, fma, alu, lsu, ...)
            for k, v in r.items():
                if k.startswith("sm__pipe_") and k.endswith("_cycles_active.avg.pct_of_peak_sustained_active"):
                    x = num(v)
                    if x is not None:
                        pipes.append((x, k[len("sm__pipe_"):-len("_cycles_active.avg.pct_of_peak_sustained_active")]))
                elif k.startswith("sm__inst_executed_pipe_") and k.endswith(".avg.pct_of_peak_sustained_active"):
                    x = num(v)
                    if x is not None:
                        pipes.append((x, "inst " + k[len("sm__inst_executed_pipe_"):-len(".avg.pct_of_peak_sustained_active")]))
            pipes.sort(reverse=True)
            if pipes:
                print("    pipes (% of peak while active): " + ", ".join(f"{n} {x:.1f}" for x, n in pipes[:6]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

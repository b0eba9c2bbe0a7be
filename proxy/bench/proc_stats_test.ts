import assert from "node:assert/strict";

const near = (a: number, b: number) => assert.ok(Math.abs(a - b) < 1e-9, `${a} ≠ ${b}`);
import { backgroundCores, gcMsInTrace, parseMemory, procCounters, procMemory, spread } from "./proc_stats.ts";

Deno.test("parseMemory reads VmRSS, RssAnon, RssFile and VmHWM in MB", () => {
  const m = parseMemory(
    "VmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\nRssAnon:\t   40960 kB\nRssFile:\t   61440 kB\n",
  );
  assert.deepEqual(m, { vmRssMb: 100, rssAnonMb: 40, rssFileMb: 60, vmHwmMb: 200 });
});

Deno.test("procMemory and procCounters read this process", async () => {
  const m = await procMemory(Deno.pid);
  const c = await procCounters(Deno.pid);
  if (!(m.vmRssMb > 0 && m.rssAnonMb > 0 && m.vmHwmMb >= m.vmRssMb)) throw new Error(JSON.stringify(m));
  if (!(c.cpuS >= 0 && c.ctxSwitches > 0)) throw new Error(JSON.stringify(c));
});

Deno.test("gcMsInTrace sums pauses and incremental marking steps", () => {
  const trace = [
    "[1234:0x5580]      105 ms: Scavenge 2.1 (3.0) -> 1.8 (4.0) MB, 0.50 / 0.00 ms  (average mu = 1.000) allocation failure;",
    "some proxy log line",
    "[1234:0x5580]     2203 ms: Mark-Compact 20.1 (25.0) -> 12.0 (24.0) MB, 3.25 / 0.10 ms  (+ 6.5 ms in 12 steps since start of marking, biggest step 1.0 ms, walltime since start of marking 40 ms) (average mu = 0.9) finalize incremental marking;",
    "[1234:0x5580]     2410 ms: Incremental Mark-Compact 140.4 (193.2) -> 128.0 (181.3) MB, pooled: 27.2 MB, 4.25 / 0.00 ms (+ 1.5 ms in 5 steps since start of marking, biggest step 0.9 ms) (average mu = 0.72) finalize incremental marking via stack guard;",
  ].join("\n");
  near(gcMsInTrace(trace), 0.5 + 3.25 + 6.5 + 4.25 + 1.5);
});

Deno.test("backgroundCores subtracts the bench's own jiffies", () => {
  const a = { busy: 1000, total: 4000, ours: 200, cpus: 2 };
  const b = { busy: 1600, total: 4400, ours: 500, cpus: 2 };
  // 200 jiffies per CPU elapsed; 600 busy of which 300 are ours → 1.5 cores busy with others.
  near(backgroundCores(a, b), 1.5);
});

Deno.test("spread gives median and range", () => {
  assert.deepEqual(spread([3, 1, 2]), { median: 2, min: 1, max: 3 });
  assert.deepEqual(spread([4, 1, 2, 3]), { median: 2.5, min: 1, max: 4 });
});

/**
 * Where a running proxy allocates: connects to its V8 inspector (the proxy started with
 * `--inspect=127.0.0.1:<port>`), samples allocations for a while (HeapProfiler sampling, objects
 * later collected included) and prints the share of sampled bytes per allocating function, self
 * and inclusive (project code only for the latter), then one JSON line. memory_probe.ts runs it
 * inside each pod as the proxy's UID (so the pod's iptables rules leave the connection alone) when
 * PROBE_HEAP_SAMPLE is set.
 *
 *   deno run -A proxy/bench/heap_sample.ts <port> <seconds> [top]
 *
 * Function positions are those of the code V8 runs (TypeScript after transpiling), so line numbers
 * can be a few lines off the source.
 */
import { connectInspector } from "./inspector.ts";

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface SampleNode {
  callFrame: CallFrame;
  selfSize: number;
  children: SampleNode[];
}

const [portArg, secsArg, topArg] = Deno.args;
const port = Number(portArg);
const secs = Number(secsArg ?? "5");
const top = Number(topArg ?? "30");
if (!Number.isInteger(port) || port <= 0 || !(secs > 0 && secs <= 120)) {
  console.error("usage: heap_sample.ts <port> <seconds, at most 120> [top]");
  Deno.exit(2);
}

const inspector = await connectInspector(port);
const call = inspector.call;

await call("HeapProfiler.enable");
await call("HeapProfiler.startSampling", {
  samplingInterval: 2048,
  includeObjectsCollectedByMajorGC: true,
  includeObjectsCollectedByMinorGC: true,
});
await new Promise((r) => setTimeout(r, secs * 1000));
const { profile } = await call("HeapProfiler.stopSampling") as { profile: { head: SampleNode } };
inspector.close();

const self = new Map<string, number>();
const inclusive = new Map<string, number>();
let total = 0;
function name(cf: CallFrame): string {
  const url = cf.url.replace(/^file:\/\/.*?\/(proxy|proto)\//, "$1/");
  return `${cf.functionName || "(anonymous)"} ${url}:${cf.lineNumber + 1}`;
}
function walk(n: SampleNode, onStack: Set<string>): number {
  const key = name(n.callFrame);
  self.set(key, (self.get(key) ?? 0) + n.selfSize);
  total += n.selfSize;
  const outer = onStack.has(key);
  onStack.add(key);
  let sum = n.selfSize;
  for (const c of n.children) sum += walk(c, onStack);
  if (!outer) {
    onStack.delete(key);
    inclusive.set(key, (inclusive.get(key) ?? 0) + sum);
  }
  return sum;
}
walk(profile.head, new Set());

const pct = (v: number) => `${(v / Math.max(1, total) * 100).toFixed(1).padStart(5)}%`;
const sorted = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]);
console.log(`sampled ${(total / 1048576).toFixed(1)} MiB in ${secs} s`);
console.log("self:");
for (const [k, v] of sorted(self).slice(0, top)) console.log(`${pct(v)} ${k}`);
console.log("inclusive (proxy code):");
const own = sorted(inclusive).filter(([k]) => / (proxy|proto)\//.test(k));
for (const [k, v] of own.slice(0, top)) console.log(`${pct(v)} ${k}`);
console.log(JSON.stringify({
  sampledBytes: total,
  seconds: secs,
  self: Object.fromEntries(sorted(self).slice(0, top)),
}));

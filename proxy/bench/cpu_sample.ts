/**
 * Where a running proxy spends its CPU: connects to its V8 inspector (the proxy started with
 * `--inspect=127.0.0.1:<port>`), samples its JavaScript stacks for a while (Profiler domain,
 * 200 µs interval) and prints the share of samples per function, self and inclusive (native work
 * such as TLS counts in the JavaScript function that called it; idle time is "(idle)"), then one
 * JSON line. conn_probe.ts runs it inside a pod as the proxy's UID with PROBE_CPU_SAMPLE.
 *
 *   deno run -A proxy/bench/cpu_sample.ts <port> <seconds> [top]
 */
import { connectInspector } from "./inspector.ts";

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  hitCount?: number;
  children?: number[];
}

const [portArg, secsArg, topArg] = Deno.args;
const port = Number(portArg);
const secs = Number(secsArg ?? "5");
const top = Number(topArg ?? "40");
if (!Number.isInteger(port) || port <= 0 || !(secs > 0 && secs <= 120)) {
  console.error("usage: cpu_sample.ts <port> <seconds, at most 120> [top]");
  Deno.exit(2);
}

const inspector = await connectInspector(port);
const call = inspector.call;

await call("Profiler.enable");
await call("Profiler.setSamplingInterval", { interval: 200 });
await call("Profiler.start");
await new Promise((r) => setTimeout(r, secs * 1000));
const { profile } = await call("Profiler.stop") as { profile: { nodes: ProfileNode[] } };
inspector.close();

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map<string, number>();
const inclusive = new Map<string, number>();
let total = 0;
function name(cf: CallFrame): string {
  const url = cf.url.replace(/^file:\/\/.*?\/(proxy|proto)\//, "$1/");
  return `${cf.functionName || "(anonymous)"} ${url}:${cf.lineNumber + 1}`;
}
function walk(n: ProfileNode, onStack: Set<string>): number {
  const key = name(n.callFrame);
  const hits = n.hitCount ?? 0;
  self.set(key, (self.get(key) ?? 0) + hits);
  total += hits;
  const outer = onStack.has(key);
  onStack.add(key);
  let sum = hits;
  for (const c of n.children ?? []) sum += walk(byId.get(c)!, onStack);
  if (!outer) {
    onStack.delete(key);
    inclusive.set(key, (inclusive.get(key) ?? 0) + sum);
  }
  return sum;
}
walk(profile.nodes[0], new Set());

const pct = (v: number) => `${(v / Math.max(1, total) * 100).toFixed(1).padStart(5)}%`;
const sorted = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]);
console.log(`${total} samples in ${secs} s`);
console.log("self:");
for (const [k, v] of sorted(self).slice(0, top)) console.log(`${pct(v)} ${k}`);
console.log("inclusive:");
for (const [k, v] of sorted(inclusive).slice(0, top * 2)) console.log(`${pct(v)} ${k}`);
console.log(
  JSON.stringify({ samples: total, seconds: secs, self: Object.fromEntries(sorted(self).slice(0, top)) }),
);

/**
 * `deno task bench:policy`: the policy controller's cost under churn, measured from outside.
 * Each repetition runs the controller in a process of its own (store, watch hub, gRPC server on
 * 127.0.0.1) and the proxies' WatchPort/Watch streams in `--client-procs` other processes, then a
 * baseline in the same way: bare grpc-js streams fed the same churn as pre-encoded bytes, no index.
 * Figures are the median and [min–max] over `--reps`, with policy/baseline ratios of the medians.
 * One JSON object is the last line.
 *
 *   --apps=100 --pods-per-app=5 --out-per-svc=5 --namespaces=10   (5 policy resources per app;
 *       streams = apps × (3 × pods-per-app + out-per-svc); the goal: --apps=400 --pods-per-app=6
 *       --out-per-svc=7 is 2,000 resources and 10,000 streams)
 *   --changes=200 --interval-ms=25 --reps=3 --client-procs=2
 *   --replicas=N: the controller as N replica processes (replica.ts), each with its own watch fed the
 *       same change at the same moment by the repetition's process (one origin for propagation on
 *       every replica), the client connections spread round-robin over them as a Service spreads
 *       proxies' connections (placement.ts); CPU and heap are then the replicas', summed, and
 *       `per_replica` gives each one's streams, p50/p99, lost streams, CPU per change and heap per
 *       stream. Without it the controller runs in the repetition's process (its CPU then includes
 *       the churn driver and the receipts' bookkeeping).
 *   Bounded: each churn stops after `changes` or 120 s, convergence is awaited at most 30 s.
 */
import { type RepResult, runRep } from "./run.ts";

const arg = (name: string, d: number) => {
  const a = Deno.args.find((x) => x.startsWith(`--${name}=`));
  const v = a ? Number(a.split("=")[1]) : d;
  if (!Number.isFinite(v) || v < 0) throw new Error(`--${name} must be a non-negative number, got ${a}`);
  return v;
};

const options = {
  size: {
    namespaces: arg("namespaces", 10),
    apps: arg("apps", 100),
    podsPerApp: arg("pods-per-app", 5),
    outPerSvc: arg("out-per-svc", 5),
  },
  changes: arg("changes", 200),
  intervalMs: arg("interval-ms", 25),
  clientProcs: Math.max(1, arg("client-procs", 2)),
  churnLimitMs: 120_000,
  replicas: Deno.args.some((a) => a.startsWith("--replicas=")) ? Math.max(1, arg("replicas", 1)) : undefined,
};
const REPS = Math.max(1, arg("reps", 3));

const role = Deno.args.find((x) => x.startsWith("--role="))?.split("=")[1];
if (role === "policy" || role === "baseline") {
  const r = await runRep(role, options);
  console.log(JSON.stringify(r));
  Deno.exit(0);
}

async function rep(mode: "policy" | "baseline"): Promise<RepResult> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--v8-flags=--expose-gc",
      new URL(import.meta.url).pathname,
      `--role=${mode}`,
      ...Deno.args.filter((a) => !a.startsWith("--role=")),
    ],
    stdout: "piped",
    stderr: "inherit",
  }).output();
  const lines = new TextDecoder().decode(out.stdout).trim().split("\n");
  if (!out.success) throw new Error(`${mode} run failed (exit ${out.code}): ${lines.slice(-3).join(" | ")}`);
  return JSON.parse(lines[lines.length - 1]);
}

const runs: { policy: RepResult; baseline: RepResult }[] = [];
for (let i = 0; i < REPS; i++) {
  const policy = await rep("policy");
  const baseline = await rep("baseline");
  runs.push({ policy, baseline });
  console.error(
    `rep ${i + 1}/${REPS}: policy p99 ${policy.p99_ms.toFixed(1)} ms, ${policy.cpu_ms.toFixed(0)} ms CPU; ` +
      `baseline p99 ${baseline.p99_ms.toFixed(1)} ms, ${baseline.cpu_ms.toFixed(0)} ms CPU`,
  );
}

type Stat = { median: number; min: number; max: number };
function stat(xs: number[]): Stat {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  return { median: round(mid), min: round(s[0]), max: round(s[s.length - 1]) };
}
function round(x: number): number {
  return Math.abs(x) >= 100 ? Math.round(x) : Math.round(x * 100) / 100;
}

const METRICS = [
  "p50_ms",
  "p99_ms",
  "max_ms",
  "cpu_us_per_change",
  "cpu_us_per_change_per_stream",
  "heap_bytes_per_stream",
  "rss_bytes_per_stream",
  "heap_bytes_per_resource",
  "rss_bytes_per_resource",
  "lost_streams",
  "resets",
  "updates_received",
  "clock_error_ms",
  "change_rate_per_s",
] as const;
const policy: Record<string, Stat> = {}, baseline: Record<string, Stat> = {};
for (const m of METRICS) {
  policy[m] = stat(runs.map((r) => r.policy[m]));
  // The baseline holds no resources: its per-resource figures are null.
  if (runs.every((r) => r.baseline[m] !== null)) baseline[m] = stat(runs.map((r) => r.baseline[m]));
}
const ratio = (m: string) => round(policy[m].median / baseline[m].median);
const first = runs[0].policy;
const fmt = (s: Stat) => `${s.median} [${s.min}–${s.max}]`;
console.log(
  `policy controller: ${first.streams} streams, ${first.resources} policy resources (${first.objects} objects), ` +
    `${first.changes_sent} changes every ${options.intervalMs} ms, ${first.updates_expected} updates expected, ` +
    `${REPS} reps, ${options.clientProcs} client processes, coalescing window ${first.coalesce_window_ms} ms`,
);
for (const m of METRICS) {
  const b = baseline[m];
  const bare = b ? `   baseline ${fmt(b)}` : "";
  console.log(`  ${m.padEnd(30)} ${fmt(policy[m]).padEnd(28)}${bare}`);
}
const goal = policy.p99_ms.median <= 100 && policy.lost_streams.max === 0 && policy.resets.max === 0;
console.log(JSON.stringify({
  streams: first.streams,
  resources: first.resources,
  changes: first.changes_sent,
  interval_ms: options.intervalMs,
  reps: REPS,
  client_procs: options.clientProcs,
  coalesce_window_ms: first.coalesce_window_ms,
  updates_expected: first.updates_expected,
  propagation_p50_ms: policy.p50_ms,
  propagation_p99_ms: policy.p99_ms,
  propagation_max_ms: policy.max_ms,
  cpu_us_per_change: policy.cpu_us_per_change,
  cpu_us_per_change_per_stream: policy.cpu_us_per_change_per_stream,
  heap_bytes_per_stream: policy.heap_bytes_per_stream,
  rss_bytes_per_stream: policy.rss_bytes_per_stream,
  heap_bytes_per_resource: policy.heap_bytes_per_resource,
  rss_bytes_per_resource: policy.rss_bytes_per_resource,
  lost_streams: policy.lost_streams,
  resets: policy.resets,
  updates_received: policy.updates_received,
  clock_error_ms: policy.clock_error_ms,
  change_rate_per_s: policy.change_rate_per_s,
  baseline: baseline,
  ratios: {
    propagation_p50: ratio("p50_ms"),
    propagation_p99: ratio("p99_ms"),
    cpu_per_change: ratio("cpu_us_per_change"),
    heap_per_stream: ratio("heap_bytes_per_stream"),
    rss_per_stream: ratio("rss_bytes_per_stream"),
  },
  goal_p99_le_100ms_no_loss_no_resets: goal,
  replicas: options.replicas ?? null,
  per_replica: runs[0].policy.replicas?.map((x, i) => ({
    replica: i,
    streams: x.streams,
    propagation_p50_ms: stat(runs.map((r) => r.policy.replicas![i].p50_ms)),
    propagation_p99_ms: stat(runs.map((r) => r.policy.replicas![i].p99_ms)),
    lost_streams: stat(runs.map((r) => r.policy.replicas![i].lost_streams)),
    cpu_us_per_change: stat(runs.map((r) => r.policy.replicas![i].cpu_us_per_change)),
    cpu_us_per_change_per_stream: stat(runs.map((r) => r.policy.replicas![i].cpu_us_per_change_per_stream)),
    heap_bytes_per_stream: stat(runs.map((r) => r.policy.replicas![i].heap_bytes_per_stream)),
    heap_bytes_per_resource: stat(runs.map((r) => r.policy.replicas![i].heap_bytes_per_resource)),
  })) ?? null,
  clock: "client performance.now() mapped to the controller's by min-RTT ping over the pipe",
}));

/**
 * `deno task bench:identity`: certificates signed per second per core (CSR parse + self-signature
 * check + leaf assembly + signature; TokenReview excluded), against a baseline of bare ECDSA
 * sign+verify pairs measured in the same run, then Certify latency over real gRPC on 127.0.0.1
 * with a local (instant) token validator. Per core = per CPU-second of this process, so the
 * figure does not depend on how busy the shared machine is. Then, repeated: Certify p99 of
 * well-behaved proxies with TokenReviews over HTTP to an API-server stand-in, alone and while one
 * client floods junk and foreign tokens from a niced process or from a Worker of this process
 * (certify_scenario.ts). Last line: one JSON object.
 */
import { cpuUsage } from "node:process";
import { createSign, createVerify, generateKeyPairSync } from "node:crypto";
import * as grpc from "@grpc/grpc-js";
import { Registry } from "prom-client";
import { IdentityClient } from "../../../proto/gen/identity.ts";
import { systemClock } from "../../../proto/support/clock.ts";
import { parseCsr, VerifiedCsrCache } from "../csr.ts";
import { serveIdentityGrpc } from "../grpc_server.ts";
import {
  percentile as pct,
  runCertifyScenario,
  type ScenarioOptions,
  type ScenarioResult,
} from "../certify_scenario.ts";
import { CertifyService } from "../service.ts";
import { csrFor, identityOf, makeCa } from "../test_pki.ts";

const FRESH = Number(Deno.env.get("BENCH_CSRS") ?? 1500);
const RPCS = Number(Deno.env.get("BENCH_RPCS") ?? 3000);
const CONCURRENCY = 16;
const FLOOD_ROUNDS = Number(Deno.env.get("BENCH_FLOOD_ROUNDS") ?? 3);

function cpuMs(start: NodeJS.CpuUsage): number {
  const d = cpuUsage(start);
  return (d.user + d.system) / 1000;
}

async function measure(label: string, n: number, op: (i: number) => Promise<unknown> | unknown) {
  const c0 = cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < n; i++) await op(i);
  const wallMs = performance.now() - t0;
  const cpu = cpuMs(c0);
  const perCore = n / (cpu / 1000);
  const wall = n / (wallMs / 1000);
  console.log(
    `${label.padEnd(44)} ${perCore.toFixed(0).padStart(6)}/s per core  ${
      wall.toFixed(0).padStart(6)
    }/s wall  (${n} ops)`,
  );
  return { perCore, wall };
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

const ca = await makeCa();
const lifetime = { lifetimeMs: 86_400_000, clockSkewMs: 20_000 };
const name = identityOf("bench", "bench");
console.log(`preparing ${FRESH} CSRs...`);
const csrs: Uint8Array[] = [];
for (let i = 0; i < FRESH; i++) csrs.push((await csrFor(name)).der);

// Baseline: the two public-key operations every fresh certificate needs, and nothing else.
const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
const sample = new Uint8Array(400);
const sig = createSign("sha256").update(sample).sign(privateKey);
const ecKeys = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, [
  "sign",
]) as CryptoKeyPair;
const baseline = await measure("baseline: ECDSA P-256 verify + sign", FRESH, async () => {
  createVerify("sha256").update(sample).verify(publicKey, sig);
  await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, ecKeys.privateKey, sample);
});
const fresh = await measure("issue: fresh CSR (parse, verify, sign)", FRESH, async (i) => {
  const csr = parseCsr(csrs[i]);
  await ca.issuer.issue(csr, name, Date.now(), lifetime);
});
const cache = new VerifiedCsrCache();
const renewal = await measure("issue: renewal (CSR seen before)", FRESH, async (i) => {
  const csr = parseCsr(csrs[i % 10], cache);
  await ca.issuer.issue(csr, name, Date.now(), lifetime);
});

// Certify over gRPC with a validator that answers at once.
const service = new CertifyService({
  config: { controlPlaneNamespace: "linkerd", trustDomain: "cluster.local", ...lifetime },
  issuer: () => ca.issuer,
  screenToken: () => undefined,
  validateToken: () => Promise.resolve({ namespace: "bench", serviceAccount: "bench" }),
  clock: systemClock,
});
const server = await serveIdentityGrpc({ service, registry: new Registry(), address: "127.0.0.1:0" });
const client = new IdentityClient(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure());
const token = new TextEncoder().encode("bench-token");
const certify = (i: number) =>
  new Promise<void>((resolve, reject) =>
    client.certify(
      { identity: name, token, certificateSigningRequest: csrs[i % csrs.length] },
      (e) => e ? reject(e) : resolve(),
    )
  );
for (let i = 0; i < 50; i++) await certify(i); // warm up the channel
const latencies: number[] = [];
let next = 0;
const c0 = cpuUsage();
const t0 = performance.now();
await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
  while (next < RPCS) {
    const i = next++;
    const begin = performance.now();
    await certify(i);
    latencies.push(performance.now() - begin);
  }
}));
const rpcWall = performance.now() - t0;
const rpcCpu = cpuMs(c0);
client.close();
await server.close(100);
latencies.sort((a, b) => a - b);
const rpcPerS = RPCS / (rpcWall / 1000);
console.log(
  `Certify over gRPC, ${CONCURRENCY} concurrent, fresh CSRs:     ${rpcPerS.toFixed(0)}/s wall, ` +
    `${(RPCS / (rpcCpu / 1000)).toFixed(0)}/s per core (client and server in this process); ` +
    `p50 ${percentile(latencies, 50).toFixed(2)} ms, p99 ${percentile(latencies, 99).toFixed(2)} ms`,
);
console.log(
  `fresh-CSR issuance is ${(fresh.perCore / baseline.perCore).toFixed(2)}x the bare verify+sign baseline`,
);
// Well-behaved proxies' Certify p99 alone and with one flooding client, the flooder either a
// Worker of this process (its client work competes for the same 2 cores at equal priority) or a
// process under `nice -n 19` (standing in for a flooder on another node); the three alternate in
// each round so they see the same machine load. TokenReview settings are the controller's defaults.
const scenario = (floodConcurrency: number, floodIn: "worker" | "niced-process"): ScenarioOptions => ({
  proxies: 8,
  certifiesPerProxy: 25,
  // Each proxy every 400 ms: 20 Certify/s in all, under the 50/s review rate, so the figure shows
  // what the flood costs others rather than the good proxies' own queueing at the rate limit.
  proxyIntervalMs: 400,
  floodConcurrency,
  floodConnections: 8,
  floodIn,
  floodMaxCalls: 1_000_000,
  floodLeadMs: 500,
  reviewLatencyMs: 10,
  validator: {
    rateLimit: { ratePerSecond: 50, burst: 100, maxQueued: 5000 },
    maxQueuedPerClient: 200,
    timeoutMs: 10_000,
  },
});
const share = (r: ScenarioResult) =>
  r.mainThreadCpuShare === undefined ? "?" : `${(r.mainThreadCpuShare * 100).toFixed(0)}%`;
// The server thread's extra CPU under the flood, per flood call: what refusing one costs it.
const perFloodCall = (alone: ScenarioResult, under: ScenarioResult) => {
  if (alone.mainThreadCpuShare === undefined || under.mainThreadCpuShare === undefined) return undefined;
  return ((under.mainThreadCpuShare - alone.mainThreadCpuShare) * 1e6) / floodRate(under);
};
const floodRate = (r: ScenarioResult) => r.flood!.calls / r.floodSeconds;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const range = (xs: number[]) => [Math.min(...xs), Math.max(...xs)].map((x) => Number(x.toFixed(1)));
const kinds = ["alone", "niced", "worker"] as const;
const p99s: Record<(typeof kinds)[number], number[]> = { alone: [], niced: [], worker: [] };
const rates: Record<"niced" | "worker", number[]> = { niced: [], worker: [] };
const perCall: number[] = [];
for (let round = 0; round < FLOOD_ROUNDS; round++) {
  const alone = await runCertifyScenario(scenario(0, "worker"));
  const niced = await runCertifyScenario(scenario(64, "niced-process"));
  const worker = await runCertifyScenario(scenario(64, "worker"));
  for (const r of [alone, niced, worker]) {
    if (r.goodErrors.length > 0) throw new Error(`well-behaved Certify failed: ${r.goodErrors[0]}`);
  }
  p99s.alone.push(pct(alone.goodLatenciesMs, 99));
  p99s.niced.push(pct(niced.goodLatenciesMs, 99));
  p99s.worker.push(pct(worker.goodLatenciesMs, 99));
  rates.niced.push(floodRate(niced));
  rates.worker.push(floodRate(worker));
  for (const r of [niced, worker]) {
    const c = perFloodCall(alone, r);
    if (c !== undefined) perCall.push(c);
  }
  const line = (name: string, r: ScenarioResult) =>
    `${name} p99 ${pct(r.goodLatenciesMs, 99).toFixed(1)} ms` +
    (r.flood ? ` (flood ${floodRate(r).toFixed(0)} calls/s, ${r.apiReviews} TokenReviews)` : "") +
    ` [server loop lag p99 ${r.eventLoopLagP99Ms.toFixed(1)} ms, CPU ${share(r)}]`;
  console.log(
    `round ${round + 1}: well-behaved Certify ${line("alone", alone)}; ${line("niced flooder", niced)}; ` +
      `${line("Worker flooder", worker)}`,
  );
}
const fig = (xs: number[]) => `${median(xs).toFixed(1)} ms [${range(xs).join("-")}]`;
console.log(
  `well-behaved Certify p99, median [range] of ${FLOOD_ROUNDS} rounds (8 proxies x 25 at 20/s in all, ` +
    `TokenReview 10 ms at 50/s): alone ${fig(p99s.alone)}; one client flooding from a niced process ` +
    `(~${median(rates.niced).toFixed(0)} calls/s) ${fig(p99s.niced)}; from a Worker at equal priority ` +
    `(~${median(rates.worker).toFixed(0)} calls/s) ${fig(p99s.worker)}; server CPU per refused flood call ` +
    `~${perCall.length > 0 ? median(perCall).toFixed(0) : "?"} µs`,
);

console.log(JSON.stringify({
  certs_per_s: Math.round(fresh.perCore),
  certs_per_s_wall: Math.round(fresh.wall),
  certs_per_s_renewal: Math.round(renewal.perCore),
  baseline_verify_sign_per_s: Math.round(baseline.perCore),
  ratio_vs_baseline: Number((fresh.perCore / baseline.perCore).toFixed(3)),
  grpc_certify_per_s: Math.round(rpcPerS),
  certify_p50_ms: Number(percentile(latencies, 50).toFixed(3)),
  certify_p99_ms: Number(percentile(latencies, 99).toFixed(3)),
  certify_p99_ms_with_review_median: Number(median(p99s.alone).toFixed(1)),
  certify_p99_ms_with_review_range: range(p99s.alone),
  certify_p99_ms_flooded_median: Number(median(p99s.niced).toFixed(1)),
  certify_p99_ms_flooded_range: range(p99s.niced),
  flood_calls_per_s: Math.round(median(rates.niced)),
  certify_p99_ms_flooded_same_cores_median: Number(median(p99s.worker).toFixed(1)),
  certify_p99_ms_flooded_same_cores_range: range(p99s.worker),
  flood_same_cores_calls_per_s: Math.round(median(rates.worker)),
  server_cpu_us_per_flood_call: perCall.length > 0 ? Math.round(median(perCall)) : null,
  cores: navigator.hardwareConcurrency,
}));

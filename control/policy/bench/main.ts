/**
 * `deno task bench:policy`: 2,000 open policy streams (1,500 WatchPort + 500 Watch) over real
 * grpc-js on 127.0.0.1, 500 policy resources, and a churn of Server and route changes. Reports
 * the change-to-stream latency (from the event entering the store to the client receiving the
 * message) and the memory per stream, against a baseline: the same fan-out of pre-encoded
 * messages over bare grpc-js streams, with no index. One JSON object is the last line.
 *
 *   --changes=200 --interval-ms=25   (bounded: the run stops after all changes or 120 s)
 */
import * as grpc from "@grpc/grpc-js";
import { Registry } from "prom-client";
import { InboundServerPoliciesClient } from "../../../proto/gen/inbound.ts";
import { OutboundPoliciesClient } from "../../../proto/gen/outbound.ts";
import { toTcpAddress } from "../../../proto/ip.ts";
import { defaultPolicyConfig } from "../config.ts";
import { PolicyGrpcServer } from "../grpc_server.ts";
import type { Kind, Obj } from "../resources.ts";
import { FakePolicySource, PolicyStore } from "../store.ts";
import { authorizationPolicy, httpRoute, meshTls, namespace, pod, server, service } from "../testing.ts";

const arg = (name: string, d: number) => {
  const a = Deno.args.find((x) => x.startsWith(`--${name}=`));
  return a ? Number(a.split("=")[1]) : d;
};
const CHANGES = arg("changes", 200);
const INTERVAL = arg("interval-ms", 25);
const NAMESPACES = 10, APPS_PER_NS = 10, PODS_PER_APP = 5, PORTS = 3;
const SERVICES = 100, OUT_STREAMS_PER_SVC = 5;

function p99(xs: number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * 0.99))];
}
const round = (x: number) => Math.round(x * 100) / 100;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
function gc() {
  (globalThis as { gc?: () => void }).gc?.();
}

async function waitFor(cond: () => boolean, what: string, ms = 60_000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** The policy controller under churn. */
async function policyRun() {
  const source = new FakePolicySource();
  const store = new PolicyStore();
  const abort = new AbortController();
  source.start((e) => store.apply(e), abort.signal);
  const emit = (kind: Kind, o: Obj, type: "added" | "modified" = "added") => source.emit(type, kind, o);

  // Workloads: 10 namespaces × 10 apps × 5 pods, 3 ports each; 100 Services.
  let resources = 0;
  for (let n = 0; n < NAMESPACES; n++) {
    const ns = `ns-${n}`;
    emit("Namespace", namespace(ns));
    for (let a = 0; a < APPS_PER_NS; a++) {
      const containers = [{
        name: "app",
        ports: [{ name: "http", containerPort: 8080 }, { name: "grpc", containerPort: 9090 }, {
          name: "admin",
          containerPort: 9990,
        }],
        readinessProbe: { httpGet: { path: "/ready", port: "admin" } },
      }];
      for (let p = 0; p < PODS_PER_APP; p++) {
        emit(
          "Pod",
          pod(ns, `app-${a}-${p}`, { app: `app-${a}` }, { containers, ip: `10.${n}.${a}.${p + 1}` }),
        );
      }
      const svcIndex = n * APPS_PER_NS + a;
      emit(
        "Service",
        service(ns, `svc-${a}`, {
          clusterIP: `10.96.${Math.floor(svcIndex / 250)}.${svcIndex % 250 + 1}`,
          ports: [{ port: 80 }],
        }),
      );
      // 5 policy resources per app: 50 per namespace, 500 in all.
      emit(
        "Server",
        server(ns, `app-${a}-http`, { podSelector: { matchLabels: { app: `app-${a}` } }, port: "http" }),
      );
      emit(
        "MeshTLSAuthentication",
        meshTls(ns, `app-${a}-clients`, {
          identities: [`*.${ns}.serviceaccount.identity.linkerd.cluster.local`],
        }),
      );
      emit(
        "AuthorizationPolicy",
        authorizationPolicy(ns, `app-${a}-authz`, {
          targetRef: { group: "policy.linkerd.io", kind: "Server", name: `app-${a}-http` },
          requiredAuthenticationRefs: [{
            group: "policy.linkerd.io",
            kind: "MeshTLSAuthentication",
            name: `app-${a}-clients`,
          }],
        }),
      );
      emit(
        "HTTPRoute",
        httpRoute(ns, `app-${a}-route`, {
          parentRefs: [{ group: "policy.linkerd.io", kind: "Server", name: `app-${a}-http` }],
          rules: [{ matches: [{ path: { type: "PathPrefix", value: "/api" } }] }],
        }),
      );
      emit(
        "GatewayHTTPRoute",
        httpRoute(ns, `svc-${a}-route`, {
          parentRefs: [{ kind: "Service", name: `svc-${a}`, port: 80 }],
          rules: [{ backendRefs: [{ name: `svc-${a}`, port: 80 }] }],
        }),
      );
      resources += 5;
    }
  }

  const registry = new Registry();
  const srv = new PolicyGrpcServer({
    store,
    config: defaultPolicyConfig(),
    registry,
    streamQueueCapacity: 64,
  });
  const port = await srv.listen("127.0.0.1", 0);
  gc();
  await sleep(200);
  const before = Deno.memoryUsage();

  // Client channels: a few, as many proxies share few connections in this one process.
  const inboundClients = Array.from(
    { length: 8 },
    () => new InboundServerPoliciesClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure()),
  );
  const outboundClients = Array.from(
    { length: 4 },
    () => new OutboundPoliciesClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure()),
  );
  const lastChange = new Map<string, number>(); // group key -> time of the latest change
  const latencies: number[] = [];
  let received = 0;
  const calls: grpc.ClientReadableStream<unknown>[] = [];
  let i = 0;
  for (let n = 0; n < NAMESPACES; n++) {
    for (let a = 0; a < APPS_PER_NS; a++) {
      for (let p = 0; p < PODS_PER_APP; p++) {
        for (const portNum of [8080, 9090, 9990].slice(0, PORTS)) {
          const group = `in:ns-${n}:app-${a}`;
          const c = inboundClients[i++ % inboundClients.length].watchPort({
            workload: `ns-${n}:app-${a}-${p}`,
            port: portNum,
          });
          let first = true;
          c.on("data", () => {
            received++;
            if (first) return void (first = false);
            const t = lastChange.get(group);
            if (t !== undefined) latencies.push(performance.now() - t);
          });
          c.on("error", () => {});
          calls.push(c as grpc.ClientReadableStream<unknown>);
        }
      }
    }
  }
  for (let s = 0; s < SERVICES; s++) {
    const n = Math.floor(s / APPS_PER_NS), a = s % APPS_PER_NS;
    for (let k = 0; k < OUT_STREAMS_PER_SVC; k++) {
      const group = `out:ns-${n}:svc-${a}`;
      const c = outboundClients[(s + k) % outboundClients.length].watch({
        sourceWorkload: `ns-${(n + k) % NAMESPACES}:client-${k}`,
        target: { $case: "addr", value: toTcpAddress(`10.96.${Math.floor(s / 250)}.${s % 250 + 1}`, 80) },
      });
      let first = true;
      c.on("data", () => {
        received++;
        if (first) return void (first = false);
        const t = lastChange.get(group);
        if (t !== undefined) latencies.push(performance.now() - t);
      });
      c.on("error", () => {});
      calls.push(c as grpc.ClientReadableStream<unknown>);
    }
  }
  const streams = calls.length;
  await waitFor(() => received >= streams, "the first message on every stream");
  gc();
  await sleep(200);
  const after = Deno.memoryUsage();

  // Churn: alternate a Server's protocol (15 inbound streams change) and a route's path prefix
  // (5 outbound streams change), each in a different namespace/app.
  const deadline = Date.now() + 120_000;
  let expected = 0;
  for (let c = 0; c < CHANGES && Date.now() < deadline; c++) {
    const n = c % NAMESPACES, a = Math.floor(c / NAMESPACES) % APPS_PER_NS, ns = `ns-${n}`;
    const version = Math.floor(c / (NAMESPACES * APPS_PER_NS));
    if (c % 2 === 0) {
      lastChange.set(`in:${ns}:app-${a}`, performance.now());
      source.emit(
        "modified",
        "Server",
        server(ns, `app-${a}-http`, {
          podSelector: { matchLabels: { app: `app-${a}` } },
          port: "http",
          proxyProtocol: version % 2 === 0 ? "HTTP/1" : "HTTP/2",
        }),
      );
      expected += PODS_PER_APP; // only the http port's streams change
    } else {
      lastChange.set(`out:${ns}:svc-${a}`, performance.now());
      source.emit(
        "modified",
        "GatewayHTTPRoute",
        httpRoute(ns, `svc-${a}-route`, {
          parentRefs: [{ kind: "Service", name: `svc-${a}`, port: 80 }],
          rules: [{
            matches: [{ path: { type: "PathPrefix", value: `/v${c}` } }],
            backendRefs: [{ name: `svc-${a}`, port: 80 }],
          }],
        }),
      );
      expected += OUT_STREAMS_PER_SVC;
    }
    await sleep(INTERVAL);
  }
  await waitFor(() => latencies.length >= expected, `${expected} updates (got ${latencies.length})`, 30_000)
    .catch(() => {});
  const overflow = (await registry.getSingleMetricAsString("policy_updates_queue_overflow_total")).match(
    /\} (\d+)/g,
  );

  for (const c of calls) c.cancel();
  for (const c of [...inboundClients, ...outboundClients]) c.close();
  srv.forceShutdown();
  abort.abort();
  return {
    streams,
    resources,
    topics: srv.hub.stats.topics,
    changes: CHANGES,
    updates: latencies.length,
    expected,
    p50: latencies.length ? [...latencies].sort((x, y) => x - y)[Math.floor(latencies.length / 2)] : NaN,
    p99: p99(latencies),
    heapPerStream: (after.heapUsed - before.heapUsed) / streams,
    rssPerStream: (after.rss - before.rss) / streams,
    overflows: overflow ? overflow.reduce((s, m) => s + Number(m.slice(2)), 0) : 0,
  };
}

/** Baseline: the same number of streams over bare grpc-js, pushing pre-encoded bytes. */
async function baselineRun(streams: number, changes: number, fanout: number) {
  const def: grpc.ServiceDefinition = {
    watch: {
      path: "/bench.Baseline/Watch",
      requestStream: false,
      responseStream: true,
      requestSerialize: (v: Uint8Array) => Buffer.from(v),
      requestDeserialize: (b: Buffer) => b,
      responseSerialize: (v: Uint8Array) => Buffer.from(v.buffer, v.byteOffset, v.byteLength),
      responseDeserialize: (b: Buffer) => b,
    },
  };
  const server = new grpc.Server();
  const writers: grpc.ServerWritableStream<Uint8Array, Uint8Array>[] = [];
  const payload = new Uint8Array(400).fill(7);
  server.addService(def, {
    watch: (call: grpc.ServerWritableStream<Uint8Array, Uint8Array>) => {
      writers.push(call);
      call.write(payload);
    },
  });
  const port = await new Promise<number>((res, rej) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (e, p) => e ? rej(e) : res(p))
  );
  gc();
  await sleep(200);
  const before = Deno.memoryUsage();
  const Client = grpc.makeGenericClientConstructor(def, "Baseline");
  const clients = Array.from(
    { length: 12 },
    () => new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure()),
  );
  let received = 0, last = 0;
  const latencies: number[] = [];
  const calls: grpc.ClientReadableStream<unknown>[] = [];
  for (let i = 0; i < streams; i++) {
    const c =
      (clients[i % clients.length] as unknown as { watch(r: Uint8Array): grpc.ClientReadableStream<unknown> })
        .watch(new Uint8Array());
    let first = true;
    c.on("data", () => {
      received++;
      if (first) return void (first = false);
      latencies.push(performance.now() - last);
    });
    c.on("error", () => {});
    calls.push(c);
  }
  await waitFor(() => received >= streams, "baseline first messages");
  gc();
  await sleep(200);
  const after = Deno.memoryUsage();
  for (let c = 0; c < changes; c++) {
    last = performance.now();
    const start = (c * fanout) % writers.length;
    for (let k = 0; k < fanout; k++) writers[(start + k) % writers.length].write(payload);
    await sleep(INTERVAL);
  }
  await waitFor(() => latencies.length >= changes * fanout, "baseline updates", 30_000).catch(() => {});
  for (const c of calls) c.cancel();
  for (const c of clients) c.close();
  server.forceShutdown();
  return { p99: p99(latencies), heapPerStream: (after.heapUsed - before.heapUsed) / streams };
}

// Re-run under --expose-gc so memory is measured after a full collection.
if (!Deno.args.includes("--child")) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--v8-flags=--expose-gc", new URL(import.meta.url).pathname, "--child", ...Deno.args],
    stdout: "inherit",
    stderr: "inherit",
  }).spawn();
  Deno.exit((await child.status).code);
}

const policy = await policyRun();
const base = await baselineRun(policy.streams, CHANGES, Math.round(policy.expected / CHANGES));
console.log(
  `policy: ${policy.streams} streams on ${policy.topics} topics, ${policy.resources} resources, ` +
    `${policy.updates}/${policy.expected} updates; p50 ${round(policy.p50)} ms, p99 ${
      round(policy.p99)
    } ms ` +
    `(bare grpc-js p99 ${round(base.p99)} ms); heap/stream ${Math.round(policy.heapPerStream)} B ` +
    `(bare ${Math.round(base.heapPerStream)} B); resets ${policy.overflows}`,
);
console.log(JSON.stringify({
  streams: policy.streams,
  resources: policy.resources,
  changes: policy.changes,
  updates_received: policy.updates,
  updates_expected: policy.expected,
  propagation_p50_ms: round(policy.p50),
  propagation_p99_ms: round(policy.p99),
  baseline_p99_ms: round(base.p99),
  propagation_p99_ratio: round(policy.p99 / base.p99),
  bytes_per_stream: Math.round(policy.heapPerStream),
  rss_bytes_per_stream: Math.round(policy.rssPerStream),
  baseline_bytes_per_stream: Math.round(base.heapPerStream),
  bytes_per_stream_ratio: round(policy.heapPerStream / base.heapPerStream),
  queue_overflow_resets: policy.overflows,
  note: "bytes_per_stream: heap growth of server + client side in one process, divided by streams",
}));
Deno.exit(0);

/**
 * `deno task bench:tap` (root): what tap and the access log cost the proxy, in CPU per request.
 *
 * Network-namespace pods with the real proxies (test identities, in-process control plane): a
 * sends open-loop HTTP/1.1 GETs (http_load.ts, BENCH_TAP_RATE/s for BENCH_TAP_SECONDS over 4
 * kept-alive connections) to b, d or e, each serving 1 KiB (Deno.serve). Per round, interleaved:
 *   none    a → b, no tap running;
 *   tap     a → b while a tap client in pod c observes every request on b's proxy (grpc-js over
 *           mesh TLS as the tap identity, limit high enough for all of them);
 *   apache  a → d, whose proxy has LINKERD2_PROXY_ACCESS_LOG=apache and its stderr drained to
 *           /dev/null by this process;
 *   json    a → e, the same with LINKERD2_PROXY_ACCESS_LOG=json.
 * The figure is the server-side proxy's CPU (utime+stime from /proc) per request sent, and the
 * client-side proxy's beside it; BENCH_TAP_ROUNDS rounds (default 5), printed as median and
 * range, with the tap and access-log ratios to `none` taken within each round. The last line is JSON.
 */
import { ProxyEnv } from "../../proto/env.ts";
import { DEFAULT_PROXY_UID } from "../../proto/ports.ts";
import { ObserveRequest } from "../../proto/tap_messages.ts";
import { meshedHttpEndpoint } from "../testing/control_plane.ts";
import { allowAll, detectServer } from "../testing/inbound_servers.ts";
import { MeshFixture, workloadOf } from "../testing/mesh_fixture.ts";
import { identityOf as ID, startProxy } from "../testing/mesh_pods.ts";
import { denoForUid } from "../testing/netns.ts";
import { procCounters, spread } from "./proc_stats.ts";

if (Deno.uid() !== 0) {
  console.error("bench:tap needs root (network namespaces, iptables)");
  Deno.exit(2);
}

const RATE = Number(Deno.env.get("BENCH_TAP_RATE") ?? "1000");
const SECS = Number(Deno.env.get("BENCH_TAP_SECONDS") ?? "5");
const ROUNDS = Number(Deno.env.get("BENCH_TAP_ROUNDS") ?? "5");
const root = new URL("../..", import.meta.url).pathname;
const httpLoad = `${root}proxy/bench/http_load.ts`;
const tapApp = `${root}proxy/testing/tap_app.ts`;
const PORT = 9100;

type Mode = "none" | "tap" | "apache" | "json";
const MODES: Mode[] = ["none", "tap", "apache", "json"];
/** The access-log pods and their formats. */
const LOGGED = [["d", "apache"], ["e", "json"]] as const;
interface Sample {
  serverUs: number;
  clientUs: number;
  p99: number;
  tapped?: number;
}

await MeshFixture.run({
  prefix: "weft-tapbench-",
  caName: "weft-tapbench",
  pods: ["a", "b", "c", "d", "e"],
  certificates: ["a", "b", "d", "e", "weft-tap"],
  logTail: 4000,
}, async (m) => {
  const { cp } = m;
  const B = m.pod("b"), D = m.pod("d"), E = m.pod("e");
  for (const [pod, ip] of [["b", B.ip], ["d", D.ip], ["e", E.ip]]) {
    cp.tables.endpoints.set(`${ip}:${PORT}`, [meshedHttpEndpoint(ip, PORT, ID(pod))]);
    cp.tables.servers.set(`${workloadOf(pod)}|${PORT}`, detectServer("web", [], [allowAll()]));
  }
  await cp.start();
  for (const pod of ["a", "b", "d", "e"]) await m.meshPod(pod);
  for (const pod of ["b", "d", "e"]) {
    await m.startApp(pod, `app-${pod}`, [httpLoad, "h1-server", String(PORT)]);
  }
  const env = {
    [ProxyEnv.tapSvcName]: ID("weft-tap"),
    [ProxyEnv.controlListenAddr]: "0.0.0.0:4190",
    [ProxyEnv.outboundDiscoveryIdleTimeout]: "600s",
  };
  const a = m.startProxy("a", { inboundPorts: String(PORT), env });
  const b = m.startProxy("b", { inboundPorts: String(PORT), env });
  // d and e log every request (apache, json); their stderr (the log) is drained to /dev/null by this process.
  const uidDeno = await denoForUid(DEFAULT_PROXY_UID);
  const [d, e] = LOGGED.map(([pod, format]) =>
    startProxy(m.net, {
      pod,
      localName: ID(pod),
      workload: workloadOf(pod),
      credentialsFile: m.creds[pod],
      trustAnchorsPem: m.ca.certPem,
      workDir: m.work,
      uidDeno,
      inboundPorts: String(PORT),
      env: { ...env, [ProxyEnv.accessLog]: format },
      logFile: "/dev/null",
    })
  );
  try {
    for (const pod of ["a", "b", "d", "e"]) await m.ready(pod);

    const load = async (ip: string) => {
      const r = await m.json<Record<string, number>>(
        "a",
        "load",
        httpLoad,
        "h1",
        `${ip}:${PORT}`,
        String(RATE),
        String(SECS),
        "4",
      );
      return { sent: r.warmup + r.requests, p99: r.p99_ms, errors: r.errors + r.incomplete };
    };
    const measure = async (server: Deno.ChildProcess, ip: string): Promise<Sample> => {
      const [s0, c0] = await Promise.all([procCounters(server.pid), procCounters(a.pid)]);
      const r = await load(ip);
      const [s1, c1] = await Promise.all([procCounters(server.pid), procCounters(a.pid)]);
      if (r.errors > 0) console.error(`warning: ${r.errors} requests to ${ip} failed or did not complete`);
      return {
        serverUs: (s1.cpuS - s0.cpuS) * 1e6 / r.sent,
        clientUs: (c1.cpuS - c0.cpuS) * 1e6 / r.sent,
        p99: r.p99,
      };
    };
    const tapRequest = btoa(String.fromCharCode(
      ...ObserveRequest.encode({
        limit: 100_000,
        match: {
          match: {
            $case: "http",
            value: { match: { $case: "path", value: { match: { $case: "prefix", value: "/" } } } },
          },
        },
        extract: undefined,
      }).finish(),
    ));

    // Warm-up: JIT and connections on every path.
    await load(B.ip);
    await load(D.ip);
    await load(E.ip);

    const samples: Record<Mode, Sample[]> = { none: [], tap: [], apache: [], json: [] };
    for (let round = 0; round < ROUNDS; round++) {
      samples.none.push(await measure(b, B.ip));
      // The tap runs for the load's length plus margin, then its deadline ends it.
      const tap = m.json<{ code: number; details: string; events: unknown[] }>(
        "c",
        "tap",
        tapApp,
        "tap",
        JSON.stringify({
          addr: `${B.ip}:4190`,
          serverId: ID("b"),
          caFile: m.caFile,
          credsFile: m.creds["weft-tap"],
          timeoutMs: (SECS + 6) * 1000,
          request: tapRequest,
        }),
      );
      await new Promise((r) => setTimeout(r, 1500));
      const s = await measure(b, B.ip);
      const t = await tap;
      s.tapped = t.events.length / 3;
      samples.tap.push(s);
      samples.apache.push(await measure(d, D.ip));
      samples.json.push(await measure(e, E.ip));
      console.error(
        `round ${round + 1}: server µs/req none ${samples.none[round].serverUs.toFixed(0)}, tap ${
          s.serverUs.toFixed(0)
        } (${s.tapped} requests tapped), apache ${samples.apache[round].serverUs.toFixed(0)}, json ${
          samples.json[round].serverUs.toFixed(0)
        }`,
      );
    }

    const fmt = (xs: number[], digits = 0) => {
      const s = spread(xs);
      return `${s.median.toFixed(digits)} (${s.min.toFixed(digits)}–${s.max.toFixed(digits)})`;
    };
    const ratio = (mode: Mode) => samples[mode].map((s, i) => s.serverUs / samples.none[i].serverUs);
    const sent = (RATE / 4 > 1000 ? 1000 : Math.ceil(RATE / 4)) + RATE * SECS;
    console.log(
      `\nproxy CPU per request, ${RATE}/s HTTP/1.1 for ${SECS} s (${sent} requests), ${ROUNDS} rounds, median (min–max)\n`,
    );
    console.log("| mode | server proxy µs/req | ÷ none (same round) | client proxy µs/req | p99 ms |");
    console.log("| --- | --- | --- | --- | --- |");
    for (const mode of MODES) {
      const xs = samples[mode];
      console.log(
        `| ${mode} | ${fmt(xs.map((s) => s.serverUs))} | ${mode === "none" ? "1" : fmt(ratio(mode), 2)} | ${
          fmt(xs.map((s) => s.clientUs))
        } | ${fmt(xs.map((s) => s.p99), 1)} |`,
      );
    }
    console.log(`tapped requests per tap round: ${fmt(samples.tap.map((s) => s.tapped ?? 0))}`);
    console.log(JSON.stringify({
      rate: RATE,
      seconds: SECS,
      rounds: ROUNDS,
      none_us: spread(samples.none.map((s) => s.serverUs)),
      tap_us: spread(samples.tap.map((s) => s.serverUs)),
      apache_us: spread(samples.apache.map((s) => s.serverUs)),
      json_us: spread(samples.json.map((s) => s.serverUs)),
      tap_ratio: spread(ratio("tap")),
      apache_ratio: spread(ratio("apache")),
      json_ratio: spread(ratio("json")),
    }));
  } finally {
    for (const p of [a, b, d, e]) {
      try {
        p.kill("SIGTERM");
      } catch { /* already gone */ }
    }
    await uidDeno.remove();
  }
});

/**
 * `deno task bench:dataplane` (L4, first version). Needs root (network namespaces, iptables) and
 * nginx with the stream module (Debian: nginx-light + libnginx-mod-stream) for the reference.
 *
 * Four pods on a bridge inside namespaces this benchmark creates (10.231.0.0/24, nothing in the
 * host namespace): a → b through both weft proxies with mesh mTLS; c → d directly (baseline); and
 * c → nginx(c) → TLS 1.3 mTLS → nginx(d) → d as the reference two-hop TLS proxy pair. Each path
 * is measured in the same run with the same load programs (proxy/bench/load.ts): request/response
 * on kept-alive connections, new connections per second, bulk throughput, and latency at a fixed
 * rate. Prints a summary, then one JSON object as the last line.
 */
import { DEFAULT_PROXY_UID } from "../../proto/ports.ts";
import { createTestCa } from "../testing/certs.ts";
import { meshedEndpoint, TestControlPlane } from "../testing/control_plane.ts";
import { adminGet, applyInit, startProxy, startRelay, waitForLine } from "../testing/mesh_pods.ts";
import { denoForUid, PodNetwork, sh } from "../testing/netns.ts";
import { LinuxOrigDst } from "../transport/orig_dst.ts";
import * as net from "node:net";

const SECS = Number(Deno.env.get("BENCH_SECONDS") ?? "4");
const RATE = Number(Deno.env.get("BENCH_RATE") ?? "400");
const PORT = 9000;
const loadTs = new URL("./load.ts", import.meta.url).pathname;
const deno = Deno.execPath();
const ID = (sa: string) => `${sa}.bench.serviceaccount.identity.linkerd.cluster.local`;

if (Deno.uid() !== 0) {
  console.error("bench:dataplane needs root (network namespaces and iptables)");
  Deno.exit(1);
}
const nginxBin = (await sh("sh", ["-c", "command -v nginx"], false)).stdout.trim();
const streamModule = "/usr/lib/nginx/modules/ngx_stream_module.so";

async function load(net: PodNetwork, pod: string, ...args: string[]): Promise<Record<string, number>> {
  const r = await net.run(pod, [deno, "run", "-A", "--cached-only", loadTs, ...args]);
  const line = r.stdout.trim().split("\n").pop() ?? "";
  try {
    return JSON.parse(line);
  } catch {
    throw new Error(`load ${args.join(" ")} in ${pod}: ${r.stdout} ${r.stderr}`);
  }
}

async function rssMb(pid: number): Promise<number> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  const kb = Number(/^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1] ?? "0");
  return kb / 1024;
}

/**
 * Per-connection cost of finding an accepted socket's fd (the orig-dst work) while `open` other
 * connections stay open and one connection closes and another opens each round, as in a proxy.
 */
async function origDstLookupUs(open: number, rounds = 1000): Promise<number> {
  const od = new LinuxOrigDst();
  const waiting: ((s: net.Socket) => void)[] = [];
  const server = net.createServer((s) => waiting.shift()?.(s));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as net.AddressInfo).port;
  const pair = () =>
    new Promise<[net.Socket, net.Socket]>((resolve) => {
      const c = net.connect(port, "127.0.0.1");
      waiting.push((s) => resolve([c, s]));
    });
  const live: [net.Socket, net.Socket][] = [];
  for (let i = 0; i < open; i++) live.push(await pair());
  for (const [, s] of live) od.track(s);
  let total = 0;
  for (let i = 0; i < rounds; i++) {
    const [c, s] = live.splice((i * 7919) % live.length, 1)[0];
    c.destroy();
    s.destroy();
    await new Promise((r) => setTimeout(r, 0));
    const next = await pair();
    const t0 = performance.now();
    if (od.track(next[1]) === undefined) throw new Error("fd not found");
    total += performance.now() - t0;
    live.push(next);
  }
  for (const [c, s] of live) {
    c.destroy();
    s.destroy();
  }
  server.close();
  od.close();
  return (total * 1000) / rounds;
}

const ca = await createTestCa("weft-bench");
const work = await Deno.makeTempDir({ prefix: "weft-bench-" });
await Deno.chmod(work, 0o755);
const cp = new TestControlPlane(`${work}/dst.sock`, `${work}/policy.sock`);
let pods: PodNetwork | undefined;
let uidDeno: Awaited<ReturnType<typeof denoForUid>> | undefined;
const result: Record<string, number | string> = {};
try {
  pods = await PodNetwork.create(["a", "b", "c", "d"]);
  const [A, B, C, D] = ["a", "b", "c", "d"].map((n) => pods!.pod(n));
  void A;
  void C;
  uidDeno = await denoForUid(DEFAULT_PROXY_UID);
  const write = async (name: string, text: string) => {
    await Deno.writeTextFile(`${work}/${name}`, text);
    await Deno.chmod(`${work}/${name}`, 0o644);
    return `${work}/${name}`;
  };
  const creds: Record<string, string> = {};
  for (const pod of ["a", "b", "c", "d"]) {
    const c = await ca.issue(ID(pod));
    creds[pod] = await write(`${pod}.json`, JSON.stringify(c));
    await write(`${pod}.crt`, c.certChainPem);
    await write(`${pod}.key`, c.keyPem);
  }
  await write("ca.pem", ca.certPem);

  cp.tables.endpoints.set(`${B.ip}:${PORT}`, [meshedEndpoint(B.ip, PORT, ID("b"))]);
  await cp.start();
  for (const pod of ["a", "b"]) {
    await applyInit(pods, pod);
    await startRelay(pods, pod, { dst: cp.dstSocket, policy: cp.policySocket }, `${work}/relay-${pod}.log`);
  }
  for (const pod of ["b", "d"]) {
    pods.spawn(
      pod,
      [deno, "run", "-A", "--cached-only", loadTs, "server", String(PORT)],
      {},
      `${work}/server-${pod}.log`,
    );
    await waitForLine(`${work}/server-${pod}.log.out`, "listening");
  }
  const proxies = ["a", "b"].map((pod) =>
    startProxy(pods!, {
      pod,
      localName: ID(pod),
      workload: `{"ns":"bench","pod":"${pod}"}`,
      credentialsFile: creds[pod],
      trustAnchorsPem: ca.certPem,
      workDir: work,
      uidDeno: uidDeno!,
      inboundPorts: String(PORT),
      env: { LINKERD2_PROXY_LOG: "warn" },
      logFile: `${work}/proxy-${pod}.log`,
    })
  );
  for (const pod of ["a", "b"]) {
    const end = Date.now() + 30_000;
    while ((await adminGet(pods, pod, "/ready")).status !== 200) {
      if (Date.now() > end) {
        throw new Error(`proxy ${pod} not ready:\n${await Deno.readTextFile(`${work}/proxy-${pod}.log`)}`);
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  let reference = false;
  if (nginxBin && await Deno.stat(streamModule).then(() => true, () => false)) {
    const common = `load_module ${streamModule};\nworker_processes 1;\ndaemon off;\nmaster_process off;\n` +
      `events { worker_connections 4096; }\n`;
    await write(
      "nginx-c.conf",
      common +
        `pid ${work}/nginx-c.pid;\nstream { server { listen 127.0.0.1:9001; proxy_pass ${D.ip}:9443; ` +
        `proxy_ssl on; proxy_ssl_protocols TLSv1.3; proxy_ssl_certificate ${work}/c.crt; ` +
        `proxy_ssl_certificate_key ${work}/c.key; proxy_ssl_trusted_certificate ${work}/ca.pem; ` +
        `proxy_ssl_verify on; proxy_ssl_server_name on; proxy_ssl_name ${ID("d")}; } }\n`,
    );
    await write(
      "nginx-d.conf",
      common +
        `pid ${work}/nginx-d.pid;\nstream { server { listen ${D.ip}:9443 ssl; ssl_protocols TLSv1.3; ` +
        `ssl_certificate ${work}/d.crt; ssl_certificate_key ${work}/d.key; ` +
        `ssl_client_certificate ${work}/ca.pem; ssl_verify_client on; proxy_pass 127.0.0.1:${PORT}; } }\n`,
    );
    for (const pod of ["c", "d"]) {
      pods.spawn(
        pod,
        [nginxBin, "-p", work, "-c", `${work}/nginx-${pod}.conf`, "-e", `${work}/nginx-${pod}-error.log`],
        {},
        `${work}/nginx-${pod}.log`,
      );
    }
    await new Promise((r) => setTimeout(r, 500));
    reference = true;
  } else {
    console.error(
      "reference skipped: nginx with the stream module is not installed (nginx-light, libnginx-mod-stream)",
    );
  }

  const paths: [string, string, string][] = [
    ["direct", "c", `${D.ip}:${PORT}`],
    ["mesh", "a", `${B.ip}:${PORT}`],
    ...(reference ? [["reference", "c", "127.0.0.1:9001"] as [string, string, string]] : []),
  ];
  // Warm-up: first connections pay for discovery and TLS session setup.
  for (const [, pod, target] of paths) await load(pods, pod, "rr", target, "4", "1", "64");
  for (const [name, pod, target] of paths) {
    const rr = await load(pods, pod, "rr", target, "16", String(SECS), "64");
    const cps = await load(pods, pod, "connect", target, "8", String(SECS));
    const tput = await load(pods, pod, "stream", target, String(SECS));
    const lat = await load(pods, pod, "latency", target, String(RATE), "8", String(SECS));
    result[`${name}_rps`] = Math.round(rr.rps);
    result[`${name}_cps`] = Math.round(cps.cps);
    result[`${name}_mb_per_s`] = Number(tput.mb_per_s.toFixed(1));
    result[`${name}_p50_ms`] = Number(lat.p50_ms.toFixed(3));
    result[`${name}_p99_ms`] = Number(lat.p99_ms.toFixed(3));
    console.log(
      `${name.padEnd(9)} ${result[`${name}_rps`]} req/s (16 conns), ${result[`${name}_cps`]} conn/s, ` +
        `${result[`${name}_mb_per_s`]} MB/s, p50 ${result[`${name}_p50_ms`]} ms / p99 ${
          result[`${name}_p99_ms`]
        } ms at ${RATE}/s` +
        (rr.errors || cps.errors ? ` (errors: rr ${rr.errors}, connect ${cps.errors})` : ""),
    );
  }
  const n = (k: string) => Number(result[k]);
  result.mesh_ratio = Number((n("mesh_rps") / n("direct_rps")).toFixed(3));
  result.mesh_added_p50_ms = Number((n("mesh_p50_ms") - n("direct_p50_ms")).toFixed(3));
  result.mesh_added_p99_ms = Number((n("mesh_p99_ms") - n("direct_p99_ms")).toFixed(3));
  if (reference) {
    result.reference_ratio = Number((n("reference_rps") / n("direct_rps")).toFixed(3));
    result.reference_added_p50_ms = Number((n("reference_p50_ms") - n("direct_p50_ms")).toFixed(3));
    result.reference_added_p99_ms = Number((n("reference_p99_ms") - n("direct_p99_ms")).toFixed(3));
    result.mesh_vs_reference_rps = Number((n("mesh_rps") / n("reference_rps")).toFixed(3));
  }
  result.proxy_rss_mb = Number(Math.max(...await Promise.all(proxies.map((p) => rssMb(p.pid)))).toFixed(1));
  result.orig_dst_lookup_us_256_conns = Number((await origDstLookupUs(256)).toFixed(1));
  result.seconds_per_measure = SECS;
  result.fixed_rate_per_s = RATE;
} finally {
  cp.stop();
  await pods?.cleanup();
  await uidDeno?.remove();
  await Deno.remove(work, { recursive: true });
}
console.log(JSON.stringify(result));

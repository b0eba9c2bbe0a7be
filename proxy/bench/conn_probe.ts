/**
 * `deno run -A proxy/bench/conn_probe.ts` (root): what a new meshed connection costs. Two
 * network-namespace pods a → b with the real proxies (test identity, fake control plane), an echo
 * server (opaque TCP, port 9000, opaque transport between the proxies) and a Deno.serve HTTP/1.1
 * server (port 9100, HTTP/2 between the proxies) in b. For each port, per round: a paced run, one
 * connection at a time (first-byte p50/p99 of a new connection when the proxies are idle), then a
 * burst of new connections at a fixed concurrency (connections/s, first-byte percentiles, each
 * proxy's CPU µs per connection from /proc/<pid>/stat). Every connection sends one request and
 * reads the whole answer before closing (conn_client.ts).
 *
 * Settings: PROBE_CONNS (burst size, default 2000), PROBE_CONC (8), PROBE_PACED (paced
 * connections, 100, at PROBE_PACED_RATE 50/s), PROBE_ROUNDS (3), PROBE_MAX_SECS (per run, 30).
 * Profiling, which slows the proxy it watches, so not with the figures you compare:
 * PROBE_PERF=a|b starts that pod's proxy with `--perf-basic-prof` and records
 * `perf record -F 1999 -g` during the first tcp burst (report printed, perf.data kept with
 * PROBE_KEEP_WORK); PROBE_STRACE=a|b counts that proxy's syscalls (`strace -f -c`) during it;
 * PROBE_PROF=a|b starts that proxy with V8's `--prof` (the log's path is printed; read it with
 * `node --prof-process`); PROBE_CPU_SAMPLE=a|b samples that proxy's JavaScript stacks through its
 * inspector for up to 10 s of the first burst (cpu_sample.ts). PROBE_KINDS=tcp or h1 runs one port
 * only.
 * Prints one line per run and, last, one JSON object with the medians and ranges.
 */
import { DEFAULT_PROXY_UID } from "../../proto/ports.ts";
import { createTestCa } from "../testing/certs.ts";
import { meshedEndpoint, meshedHttpEndpoint, TestControlPlane } from "../testing/control_plane.ts";
import { adminGet, applyInit, startProxy, startRelay, waitForLine } from "../testing/mesh_pods.ts";
import { denoForUid, PodNetwork, sh } from "../testing/netns.ts";
import { cpuSeconds } from "./http_bench.ts";

const CONNS = Number(Deno.env.get("PROBE_CONNS") ?? "2000");
const CONC = Number(Deno.env.get("PROBE_CONC") ?? "8");
const PACED = Number(Deno.env.get("PROBE_PACED") ?? "100");
const PACED_RATE = Number(Deno.env.get("PROBE_PACED_RATE") ?? "50");
const ROUNDS = Number(Deno.env.get("PROBE_ROUNDS") ?? "3");
const MAX_SECS = Number(Deno.env.get("PROBE_MAX_SECS") ?? "30");
const PERF = Deno.env.get("PROBE_PERF");
const STRACE = Deno.env.get("PROBE_STRACE");
const PROF = Deno.env.get("PROBE_PROF");
const CPU_SAMPLE = Deno.env.get("PROBE_CPU_SAMPLE");
const INSPECT_PORT = 9229;
const KINDS = (Deno.env.get("PROBE_KINDS") ?? "tcp,h1").split(",");
const TCP_PORT = 9000;
const H1_PORT = 9100;
const here = (f: string) => new URL(`./${f}`, import.meta.url).pathname;
const deno = Deno.execPath();
const ID = (sa: string) => `${sa}.probe.serviceaccount.identity.linkerd.cluster.local`;

interface ClientResult {
  connections: number;
  errors: number;
  firstError?: string;
  cps: number;
  p50_ms: number;
  p99_ms: number;
}

interface Row {
  kind: "tcp" | "h1";
  paced: ClientResult;
  burst: ClientResult;
  /** CPU µs per connection of the burst, proxy a then proxy b. */
  usPerConn: number[];
}

function median(xs: number[]): { median: number; min: number; max: number } {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  return { median: m, min: s[0], max: s[s.length - 1] };
}

const ca = await createTestCa("weft-conn-probe");
const work = await Deno.makeTempDir({ prefix: "weft-connprobe-" });
await Deno.chmod(work, 0o755);
const cp = new TestControlPlane(`${work}/dst.sock`, `${work}/policy.sock`);
let pods: PodNetwork | undefined;
let uidDeno: Awaited<ReturnType<typeof denoForUid>> | undefined;
try {
  pods = await PodNetwork.create(["a", "b"]);
  const B = pods.pod("b");
  // The proxy runs as its own UID: its V8 log goes to a directory it may write.
  const profDir = PROF ? await Deno.makeTempDir({ prefix: "weft-connprof-" }) : "";
  if (PROF) await Deno.chmod(profDir, 0o1777);
  // The client opens thousands of connections; without reuse its TIME_WAIT ports slow later connects.
  await pods.run("a", ["sysctl", "-q", "-w", "net.ipv4.tcp_tw_reuse=1"], true);
  uidDeno = await denoForUid(DEFAULT_PROXY_UID);
  const creds: Record<string, string> = {};
  for (const pod of ["a", "b"]) {
    creds[pod] = `${work}/${pod}.json`;
    await Deno.writeTextFile(creds[pod], JSON.stringify(await ca.issue(ID(pod))));
    await Deno.chmod(creds[pod], 0o644);
  }
  cp.tables.endpoints.set(`${B.ip}:${TCP_PORT}`, [meshedEndpoint(B.ip, TCP_PORT, ID("b"))]);
  cp.tables.endpoints.set(`${B.ip}:${H1_PORT}`, [meshedHttpEndpoint(B.ip, H1_PORT, ID("b"))]);
  await cp.start();
  for (const pod of ["a", "b"]) {
    await applyInit(pods, pod);
    await startRelay(pods, pod, { dst: cp.dstSocket, policy: cp.policySocket }, `${work}/relay-${pod}.log`);
  }
  pods.spawn(
    "b",
    [deno, "run", "-A", "--cached-only", here("load.ts"), "server", String(TCP_PORT)],
    {},
    `${work}/echo.log`,
  );
  pods.spawn(
    "b",
    [deno, "run", "-A", "--cached-only", here("http_load.ts"), "h1-server", String(H1_PORT)],
    {},
    `${work}/h1-server.log`,
  );
  await waitForLine(`${work}/echo.log.out`, "listening");
  await waitForLine(`${work}/h1-server.log.out`, "listening");

  const proxies = ["a", "b"].map((pod) =>
    startProxy(pods!, {
      pod,
      localName: ID(pod),
      workload: `{"ns":"probe","pod":"${pod}"}`,
      credentialsFile: creds[pod],
      trustAnchorsPem: ca.certPem,
      workDir: work,
      uidDeno: uidDeno!,
      inboundPorts: `${TCP_PORT},${H1_PORT}`,
      env: { LINKERD2_PROXY_LOG: "warn" },
      logFile: `${work}/proxy-${pod}.log`,
      inspectPort: CPU_SAMPLE === pod ? INSPECT_PORT : undefined,
      v8Flags: [
        ...(PERF === pod ? ["--perf-basic-prof"] : []),
        ...(PROF === pod ? ["--prof", "--no-logfile-per-isolate", `--logfile=${profDir}/v8-${pod}.log`] : []),
      ],
    })
  );
  for (const pod of ["a", "b"]) {
    const end = Date.now() + 30_000;
    while ((await adminGet(pods, pod, "/ready")).status !== 200) {
      if (Date.now() > end) {
        throw new Error(`proxy ${pod} not ready: ${await Deno.readTextFile(`${work}/proxy-${pod}.log`)}`);
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  // `ip netns exec` and setpriv exec in place: the child's pid is the proxy's.
  const proxyPids = proxies.map((p) => p.pid);

  const client = async (kind: string, port: number, n: number, extra: string[]): Promise<ClientResult> => {
    const r = await pods!.run("a", [
      deno,
      "run",
      "-A",
      "--cached-only",
      here("conn_client.ts"),
      kind,
      `${B.ip}:${port}`,
      String(n),
      String(CONC),
      String(MAX_SECS),
      ...extra,
    ]);
    const line = r.stdout.trim().split("\n").pop() ?? "";
    try {
      return JSON.parse(line) as ClientResult;
    } catch {
      throw new Error(`conn_client ${kind} printed no result: ${r.stdout}${r.stderr}`);
    }
  };

  const rows: Row[] = [];
  let profiled = false;
  const kinds = ([["tcp", TCP_PORT], ["h1", H1_PORT]] as const).filter(([k]) => KINDS.includes(k));
  for (const [kind, port] of kinds) {
    // Warm-up: discovery watches, the HTTP/2 connection between the proxies, the JIT.
    await client(kind, port, 200, []);
  }
  for (let round = 0; round < ROUNDS; round++) {
    for (const [kind, port] of kinds) {
      const paced = await client(kind, port, PACED, [String(PACED_RATE)]);
      let tool: Deno.ChildProcess | undefined;
      let sampling: Promise<{ stdout: string; stderr: string }> | undefined;
      if (!profiled && kind === KINDS[0] && CPU_SAMPLE) {
        // As the proxy's UID: the pod's redirect rules leave that UID's connections alone.
        sampling = pods.run(CPU_SAMPLE, [
          "setpriv",
          `--reuid=${DEFAULT_PROXY_UID}`,
          `--regid=${DEFAULT_PROXY_UID}`,
          "--clear-groups",
          "env",
          `HOME=${uidDeno.denoDir}`,
          `DENO_DIR=${uidDeno.denoDir}`,
          uidDeno.deno,
          "run",
          "-A",
          "--cached-only",
          here("cpu_sample.ts"),
          String(INSPECT_PORT),
          String(Math.min(10, MAX_SECS)),
        ]);
      }
      if (!profiled && kind === KINDS[0] && (PERF || STRACE)) {
        const pid = proxyPids[PERF === "b" || STRACE === "b" ? 1 : 0];
        tool = new Deno.Command(PERF ? "perf" : "strace", {
          args: PERF
            ? ["record", "-F", "1999", "-g", "-o", `${work}/perf.data`, "-p", String(pid)]
            : ["-f", "-c", "-o", `${work}/strace.txt`, "-p", String(pid)],
          stdout: "null",
          stderr: "piped",
        }).spawn();
        await new Promise((r) => setTimeout(r, 1000));
      }
      const cpu0 = await Promise.all(proxyPids.map(cpuSeconds));
      const burst = await client(kind, port, CONNS, []);
      const cpu1 = await Promise.all(proxyPids.map(cpuSeconds));
      if (sampling) {
        profiled = true;
        const r = await sampling;
        console.log(
          `CPU sample (proxy ${CPU_SAMPLE}, during a burst of ${burst.connections}):\n${r.stdout}${r.stderr}`,
        );
      }
      if (tool) {
        profiled = true;
        tool.kill("SIGINT");
        await tool.output();
        if (PERF) {
          const rep = await sh("perf", [
            "report",
            "-i",
            `${work}/perf.data`,
            "--no-children",
            "--sort",
            "dso,sym",
            "--stdio",
            "-g",
            "none",
            "--percent-limit",
            "0.4",
          ], false);
          console.log(`perf (proxy ${PERF}, ${burst.connections} connections):\n${rep.stdout}`);
        } else {
          console.log(
            `strace (proxy ${STRACE}, ${burst.connections} connections):\n${await Deno.readTextFile(
              `${work}/strace.txt`,
            )}`,
          );
        }
      }
      const usPerConn = cpu1.map((c, i) =>
        Math.round(((c - cpu0[i]) * 1e6) / Math.max(1, burst.connections))
      );
      rows.push({ kind, paced, burst, usPerConn });
      console.log(
        `round ${round + 1} ${
          kind.padEnd(3)
        } paced ${PACED_RATE}/s first byte p50 ${paced.p50_ms} p99 ${paced.p99_ms} ms` +
          ` | burst ×${CONC}: ${burst.cps} conn/s, first byte p50 ${burst.p50_ms} p99 ${burst.p99_ms} ms,` +
          ` CPU µs/conn a ${usPerConn[0]} b ${usPerConn[1]}` +
          (paced.errors + burst.errors
            ? ` | errors ${paced.errors + burst.errors}: ${paced.firstError ?? burst.firstError}`
            : ""),
      );
    }
  }
  const summary: Record<string, unknown> = {};
  for (const kind of ["tcp", "h1"] as const) {
    const rs = rows.filter((r) => r.kind === kind);
    const put = (k: string, xs: number[]) => {
      const m = median(xs);
      summary[`${kind}_${k}`] = `${m.median} (${m.min}–${m.max})`;
    };
    put("paced_first_byte_p50_ms", rs.map((r) => r.paced.p50_ms));
    put("paced_first_byte_p99_ms", rs.map((r) => r.paced.p99_ms));
    put("cps", rs.map((r) => r.burst.cps));
    put("burst_first_byte_p50_ms", rs.map((r) => r.burst.p50_ms));
    put("cpu_us_per_conn_a", rs.map((r) => r.usPerConn[0]));
    put("cpu_us_per_conn_b", rs.map((r) => r.usPerConn[1]));
    summary[`${kind}_errors`] = rs.reduce((t, r) => t + r.paced.errors + r.burst.errors, 0);
  }
  const load = (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ");
  summary.loadavg_after = load;
  console.log(JSON.stringify(summary));
  if (PROF) console.log(`V8 tick log of proxy ${PROF}: ${profDir}/v8-${PROF}.log (node --prof-process)`);
  for (const p of proxies) {
    try {
      p.kill("SIGKILL");
    } catch { /* already gone */ }
    await p.status;
  }
} finally {
  cp.stop();
  await pods?.cleanup();
  await uidDeno?.remove();
  if (!Deno.env.get("PROBE_KEEP_WORK")) await Deno.remove(work, { recursive: true });
  else console.error(`work directory kept: ${work}`);
}

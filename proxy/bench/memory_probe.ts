/**
 * `deno run -A proxy/bench/memory_probe.ts [variant...]` (root): where the proxy's memory goes, per
 * runtime-flag variant. Two network-namespace pods a → b (mesh mTLS, HTTP/1.1 kept alive, Deno.serve
 * backend in b), the real proxies with the test identity; for each variant the proxies are started
 * afresh and measured idle, after a fixed-rate run (CPU per request from /proc/<pid>/stat) and after
 * a faster run: VmRSS, RssAnon, RssFile and VmHWM of each proxy.
 *
 * A variant is `name=v8flag,v8flag;ENV=value;...` (either part may be empty), e.g.
 * `semi1=--max-semi-space-size=1` or `arena2=;MALLOC_ARENA_MAX=2`. Without arguments a default
 * list runs. Rates: PROBE_RATE (default 1000/s) for PROBE_SECS (default 10), then PROBE_BURST_RATE
 * (default 3000/s) for the same time, over 16 connections. Prints one line per variant and a JSON
 * object per variant as the last lines.
 *
 * Allocation per request: a variant with `--trace-gc-nvp` also reports the young-generation bytes
 * each proxy allocated per request over the two runs (scavenges × new-space capacity, from the
 * proxy's GC trace): a figure the machine's load does not blur, unlike CPU time. With
 * PROBE_H2_HINT=0 the endpoint lacks the `h2` hint, so the proxies talk HTTP/1.1 to each other. With
 * PROBE_HEAP_SAMPLE=<seconds> each proxy is started with its inspector on 127.0.0.1:9229 in its pod
 * and heap_sample.ts samples its allocations during the first run (printed per proxy).
 */
import { DEFAULT_PROXY_UID } from "../../proto/ports.ts";
import { createTestCa } from "../testing/certs.ts";
import { meshedHttpEndpoint, TestControlPlane } from "../testing/control_plane.ts";
import { adminGet, applyInit, startProxy, startRelay, waitForLine } from "../testing/mesh_pods.ts";
import { denoForUid, PodNetwork } from "../testing/netns.ts";
import { cpuSeconds } from "./http_bench.ts";

const RATE = Number(Deno.env.get("PROBE_RATE") ?? "1000");
const BURST = Number(Deno.env.get("PROBE_BURST_RATE") ?? "3000");
const SECS = Number(Deno.env.get("PROBE_SECS") ?? "10");
const CONNS = 16;
const HEAP_SAMPLE_SECS = Number(Deno.env.get("PROBE_HEAP_SAMPLE") ?? "0");
// PROBE_H2_HINT=0: the endpoint has no `h2` hint, so HTTP/1 stays HTTP/1 between the proxies.
const H2_HINT = Deno.env.get("PROBE_H2_HINT") !== "0";
const INSPECT_PORT = 9229;
const heapSampleTs = new URL("./heap_sample.ts", import.meta.url).pathname;
const H1_PORT = 9100;
const httpLoadTs = new URL("./http_load.ts", import.meta.url).pathname;
const deno = Deno.execPath();
const ID = (sa: string) => `${sa}.probe.serviceaccount.identity.linkerd.cluster.local`;

const DEFAULT_VARIANTS = [
  "none=",
  "semi1=--max-semi-space-size=1",
  "semi2=--max-semi-space-size=2",
  "semi4=--max-semi-space-size=4",
  "old64=--max-old-space-size=64",
  "stgc=--single-threaded-gc",
  "st=--single-threaded",
  "lite=--lite-mode",
  "size=--optimize-for-size",
  "arena2=;MALLOC_ARENA_MAX=2",
];

interface Variant {
  name: string;
  v8: string[];
  env: Record<string, string>;
}

function parseVariant(s: string): Variant {
  const i = s.indexOf("=");
  if (i < 1) throw new Error(`variant ${s}: want name=v8flags;ENV=value`);
  const [flags, ...envs] = s.slice(i + 1).split(";");
  const env: Record<string, string> = {};
  for (const e of envs) {
    const j = e.indexOf("=");
    if (j < 1) throw new Error(`variant ${s}: environment entry ${e} is not NAME=value`);
    env[e.slice(0, j)] = e.slice(j + 1);
  }
  return { name: s.slice(0, i), v8: flags.split(",").filter((f) => f !== ""), env };
}

/**
 * Young-generation bytes allocated so far, from a `--trace-gc-nvp` log: each scavenge empties a
 * new space of `new_space_capacity` bytes, so their sum approximates what was allocated.
 */
async function youngBytes(logFile: string): Promise<number> {
  let text: string;
  try {
    text = await Deno.readTextFile(logFile);
  } catch {
    return 0;
  }
  let bytes = 0;
  for (const m of text.matchAll(/GC: (\{.*\})$/gm)) {
    try {
      const g = JSON.parse(m[1]) as { gc: string; new_space_capacity: number };
      if (g.gc === "s") bytes += g.new_space_capacity;
    } catch {
      // A line cut by a concurrent write; the next read sees it whole.
    }
  }
  return bytes;
}

/** VmRSS, RssAnon, RssFile and VmHWM in MiB. */
async function memory(pid: number): Promise<Record<string, number>> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  const mib = (k: string) =>
    Number(((Number(new RegExp(`^${k}:\\s+(\\d+) kB$`, "m").exec(status)?.[1] ?? "0")) / 1024).toFixed(1));
  return { rss: mib("VmRSS"), anon: mib("RssAnon"), file: mib("RssFile"), hwm: mib("VmHWM") };
}

const variants = (Deno.args.length ? Deno.args : DEFAULT_VARIANTS).map(parseVariant);
const ca = await createTestCa("weft-probe");
const work = await Deno.makeTempDir({ prefix: "weft-memprobe-" });
await Deno.chmod(work, 0o755);
const cp = new TestControlPlane(`${work}/dst.sock`, `${work}/policy.sock`);
let pods: PodNetwork | undefined;
let uidDeno: Awaited<ReturnType<typeof denoForUid>> | undefined;
const results: Record<string, unknown>[] = [];
try {
  pods = await PodNetwork.create(["a", "b"]);
  const B = pods.pod("b");
  uidDeno = await denoForUid(DEFAULT_PROXY_UID);
  const creds: Record<string, string> = {};
  for (const pod of ["a", "b"]) {
    creds[pod] = `${work}/${pod}.json`;
    await Deno.writeTextFile(creds[pod], JSON.stringify(await ca.issue(ID(pod))));
    await Deno.chmod(creds[pod], 0o644);
  }
  cp.tables.endpoints.set(`${B.ip}:${H1_PORT}`, [meshedHttpEndpoint(B.ip, H1_PORT, ID("b"), H2_HINT)]);
  await cp.start();
  for (const pod of ["a", "b"]) {
    await applyInit(pods, pod);
    await startRelay(pods, pod, { dst: cp.dstSocket, policy: cp.policySocket }, `${work}/relay-${pod}.log`);
  }
  pods.spawn(
    "b",
    [deno, "run", "-A", "--cached-only", httpLoadTs, "h1-server", String(H1_PORT)],
    {},
    `${work}/h1-server.log`,
  );
  await waitForLine(`${work}/h1-server.log.out`, "listening");

  const h1 = async (rate: number) => {
    const r = await pods!.run("a", [
      deno,
      "run",
      "-A",
      "--cached-only",
      httpLoadTs,
      "h1",
      `${B.ip}:${H1_PORT}`,
      String(rate),
      String(SECS),
      String(CONNS),
    ]);
    const s = JSON.parse(r.stdout.trim().split("\n").pop() ?? "{}");
    return { ok: Number(s.completed ?? 0), failed: Number(s.errors ?? -1), p99: s.p99_ms };
  };

  for (const v of variants) {
    const proxies = ["a", "b"].map((pod) =>
      startProxy(pods!, {
        pod,
        localName: ID(pod),
        workload: `{"ns":"probe","pod":"${pod}"}`,
        credentialsFile: creds[pod],
        trustAnchorsPem: ca.certPem,
        workDir: work,
        uidDeno: uidDeno!,
        inboundPorts: String(H1_PORT),
        env: { LINKERD2_PROXY_LOG: "warn", ...v.env },
        logFile: `${work}/proxy-${v.name}-${pod}.log`,
        v8Flags: v.v8,
        inspectPort: HEAP_SAMPLE_SECS > 0 ? INSPECT_PORT : undefined,
      })
    );
    for (const pod of ["a", "b"]) {
      const end = Date.now() + 30_000;
      while ((await adminGet(pods, pod, "/ready")).status !== 200) {
        if (Date.now() > end) throw new Error(`proxy ${pod} (${v.name}) not ready`);
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    await new Promise((r) => setTimeout(r, 2000));
    const pids = proxies.map((p) => p.pid);
    const idle = await Promise.all(pids.map(memory));
    const gcLogs = ["a", "b"].map((pod) => `${work}/proxy-${v.name}-${pod}.log.out`);
    const traced = v.v8.includes("--trace-gc-nvp");
    const young0 = traced ? await Promise.all(gcLogs.map(youngBytes)) : [];
    const cpu0 = await Promise.all(pids.map(cpuSeconds));
    const sampling = HEAP_SAMPLE_SECS > 0
      ? ["a", "b"].map((pod) =>
        pods!.run(pod, [
          "setpriv",
          `--reuid=${DEFAULT_PROXY_UID}`,
          `--regid=${DEFAULT_PROXY_UID}`,
          "--clear-groups",
          "env",
          `HOME=${uidDeno!.denoDir}`,
          `DENO_DIR=${uidDeno!.denoDir}`,
          uidDeno!.deno,
          "run",
          "-A",
          "--cached-only",
          heapSampleTs,
          String(INSPECT_PORT),
          String(Math.min(HEAP_SAMPLE_SECS, SECS)),
        ])
      )
      : [];
    const steady = await h1(RATE);
    const cpu1 = await Promise.all(pids.map(cpuSeconds));
    const afterSteady = await Promise.all(pids.map(memory));
    const burst = await h1(BURST);
    const afterBurst = await Promise.all(pids.map(memory));
    const young1 = traced ? await Promise.all(gcLogs.map(youngBytes)) : [];
    const allocKiBPerReq = young1.map((y, i) =>
      Number(((y - young0[i]) / 1024 / Math.max(1, steady.ok + burst.ok)).toFixed(1))
    );
    for (const [i, p] of (await Promise.all(sampling)).entries()) {
      console.log(`heap sample, proxy ${["a", "b"][i]}:\n${p.stdout}${p.stderr}`);
    }
    const usPerReq = cpu1.map((c, i) => Number((((c - cpu0[i]) * 1e6) / Math.max(1, steady.ok)).toFixed(0)));
    const row = {
      variant: v.name,
      v8: v.v8,
      env: v.env,
      idle,
      afterSteady,
      afterBurst,
      usPerReq,
      allocKiBPerReq,
      steady,
      burst,
    };
    results.push(row);
    const m = (xs: Record<string, number>[]) =>
      xs.map((x) => `${x.rss}/${x.anon}/${x.file}/${x.hwm}`).join(" ");
    console.log(
      `${v.name.padEnd(8)} idle ${m(idle)} | after ${RATE}/s ${m(afterSteady)} | after ${BURST}/s ${
        m(afterBurst)
      } | CPU µs/req ${usPerReq.join(" ")}${
        traced ? ` | young KiB/req ${allocKiBPerReq.join(" ")}` : ""
      } | ok ${steady.ok}+${burst.ok} p99 ${steady.p99}/${burst.p99} ms`,
    );
    for (const p of proxies) {
      try {
        p.kill("SIGKILL");
      } catch { /* already gone */ }
      await p.status;
    }
  }
  console.log("(memory columns: VmRSS/RssAnon/RssFile/VmHWM MiB, proxy a then proxy b)");
  for (const r of results) console.log(JSON.stringify(r));
} finally {
  cp.stop();
  await pods?.cleanup();
  await uidDeno?.remove();
  if (!Deno.env.get("PROBE_KEEP_WORK")) await Deno.remove(work, { recursive: true });
  else console.error(`work directory kept: ${work}`);
}

/**
 * `deno task bench:metrics-store [--minutes 3] [--interval 10]`: the embedded Prometheus' footprint on the
 * cluster in KUBECONFIG, meant to run with the demo deployed (`deno task demo`). Samples the kubelet's summary
 * API (through the API server's node proxy) for the weft-prometheus pod's containers — Prometheus, the discovery
 * sidecar, its proxy — every interval, and prints per container the mean CPU over the window (from the
 * cumulative CPU counter), the mean and peak RSS and working set; then what Prometheus holds (head series,
 * targets, samples per scrape) from its own API. Read-only: nothing is changed on the cluster.
 */
import { CONTROL_PLANE_NS, type Json, kjson, kubectl } from "../e2e/lib/kube.ts";
import { sleep } from "../e2e/lib/wait.ts";

const PROM = `/api/v1/namespaces/${CONTROL_PLANE_NS}/services/http:weft-prometheus:9090/proxy`;

interface Sample {
  t: number;
  cpuNs: number;
  rss: number;
  ws: number;
}

function parseArgs(argv: string[]): { minutes: number; intervalS: number } {
  const out = { minutes: 3, intervalS: 10 };
  for (let i = 0; i < argv.length; i++) {
    const v = Number(argv[i + 1]);
    if (argv[i] === "--minutes" && v > 0 && v <= 60) out.minutes = v, i++;
    else if (argv[i] === "--interval" && v >= 1 && v <= 60) out.intervalS = v, i++;
    else throw new Error(`unexpected argument ${argv[i]} (--minutes 1..60, --interval 1..60)`);
  }
  return out;
}

async function raw(path: string): Promise<Json> {
  const r = await kubectl(["get", "--raw", path]);
  if (r.code !== 0) throw new Error(`GET ${path}: ${(r.stderr || r.stdout).trim()}`);
  return JSON.parse(r.stdout);
}

async function promValue(q: string): Promise<number> {
  const d = await raw(`${PROM}/api/v1/query?query=${encodeURIComponent(q)}`);
  const r = d.data.result as { value: [number, string] }[];
  return r.length ? Number(r[0].value[1]) : NaN;
}

/** The weft-prometheus pod's containers from the kubelet of the node it runs on. */
async function sampleOnce(node: string, pod: string): Promise<Map<string, Sample>> {
  const summary = await raw(`/api/v1/nodes/${node}/proxy/stats/summary`);
  const p = (summary.pods as Json[]).find((x) =>
    x.podRef.namespace === CONTROL_PLANE_NS && x.podRef.name === pod
  );
  if (!p) {
    throw new Error(`pod ${pod} not in the kubelet summary of ${node} (replaced by a deploy meanwhile?)`);
  }
  const out = new Map<string, Sample>();
  for (const c of p.containers as Json[]) {
    out.set(c.name, {
      t: Date.parse(c.cpu.time),
      cpuNs: c.cpu.usageCoreNanoSeconds,
      rss: c.memory.rssBytes ?? 0,
      ws: c.memory.workingSetBytes ?? 0,
    });
  }
  return out;
}

const mb = (b: number) => (b / 2 ** 20).toFixed(1);

async function main() {
  const { minutes, intervalS } = parseArgs(Deno.args);
  const pods = await kjson([
    "get",
    "pods",
    "-n",
    CONTROL_PLANE_NS,
    "-l",
    "linkerd.io/control-plane-component=prometheus",
    "-o",
    "json",
  ]);
  const pod = (pods.items as Json[]).find((p) => p.status?.phase === "Running");
  if (!pod) {
    throw new Error(
      `no running weft-prometheus pod in ${CONTROL_PLANE_NS}: deploy without --prometheus=none`,
    );
  }
  const all = await kjson(["get", "pods", "-A", "-l", "linkerd.io/control-plane-ns", "-o", "json"]);
  const meshed = (all.items as Json[]).filter((p) => p.status?.phase === "Running").length;
  console.log(
    `sampling ${pod.metadata.name} on ${pod.spec.nodeName} every ${intervalS}s for ${minutes} min ` +
      `(${meshed} meshed pods running)`,
  );
  const series = new Map<string, Sample[]>();
  const end = Date.now() + minutes * 60_000;
  while (Date.now() <= end) {
    for (const [name, s] of await sampleOnce(pod.spec.nodeName, pod.metadata.name)) {
      const list = series.get(name) ?? [];
      if (!list.length || list.at(-1)!.t !== s.t) list.push(s);
      series.set(name, list);
    }
    await sleep(intervalS * 1000);
  }
  console.log("\ncontainer        CPU mean   RSS mean   RSS peak   working set peak   samples");
  for (const [name, list] of series) {
    const first = list[0], last = list.at(-1)!;
    const seconds = (last.t - first.t) / 1000;
    const milli = seconds > 0 ? (last.cpuNs - first.cpuNs) / 1e6 / seconds : NaN;
    const rssMean = list.reduce((n, s) => n + s.rss, 0) / list.length;
    console.log(
      `${name.padEnd(16)} ${milli.toFixed(1).padStart(5)} m  ${mb(rssMean).padStart(6)} MB  ${
        mb(Math.max(...list.map((s) => s.rss))).padStart(6)
      } MB  ${mb(Math.max(...list.map((s) => s.ws))).padStart(12)} MB   ${list.length}`,
    );
  }
  const head = await promValue("prometheus_tsdb_head_series");
  const targets = await promValue('count(up{job=~"linkerd-.*"})');
  const samples = await promValue('sum(scrape_samples_scraped{job=~"linkerd-.*"})');
  const retention = (await raw(`${PROM}/api/v1/status/flags`)).data["storage.tsdb.retention.time"];
  console.log(
    `\nPrometheus: ${head} head series, ${targets} mesh targets, ${samples} samples per 10 s scrape round, ` +
      `retention ${retention}`,
  );
}

if (import.meta.main) await main();

// Cluster e2e (issue 19), OPT-IN: runs only with WEFT_HA_TESTS=1, because it REDEPLOYS THE CONTROL PLANE in HA
// mode (`deploy --ha`) and back (`deploy` without it) on the cluster it is given. Hold /tmp/weft/cluster.lock.
//
// With the demo's HTTP/1, gRPC and TCP load running in a namespace of its own:
// 1. `deploy --ha` (one node here: preferred anti-affinity), 3 ready replicas of destination (+ policy, same
//    pod), identity and the proxy injector; each leader Lease has exactly one holder, a ready pod of its
//    component, and the replicas' weft_leader{lease} gauges (read through the API server's pod proxy on each
//    controller's admin port) sum to 1 with the 1 on the holder. Control-plane memory/CPU from the kubelet's
//    summary API, idle and with the demo.
// 2. Four faults, each a SIGKILL of a container through the runtime (crictl stop -t 0: no SIGTERM, so a leader
//    cannot release its Lease — a crash), the pod then force-deleted unless said otherwise: a destination replica
//    (not the policy leader), a policy replica (its policy container only; the pod stays and the container
//    restarts), the identity leader (holder of weft-identity-trust-roots), the policy status leader (holder of
//    weft-policy-status). After each: zero failed demo requests; the failover time — from the kill until each
//    demo proxy watch that was cut has its first message on a new stream, read from the proxies' own debug log
//    (`discovery disconnected|connected`, the test namespace runs its proxies at weft=debug) — printed per kill
//    and p50/max over the kills, with the server side (summed open Destination+policy streams back to the
//    pre-kill count, which includes the replacement pod's own proxy); the Leases each held by one live pod with
//    the gauges agreeing, a killed leader's Lease taken by another pod (its acquireTime printed); a restarted
//    demo pod gets a certificate and is served under its inbound policy; a new HTTPRoute gets its status. The
//    demo's logs are saved to a file after a fault with failed requests or a watch slower than 5 s to reconnect.
// 3. Upgrade under the load: the image deploy built is tagged localhost/weft:ha-upgrade in every node's
//    containerd (a new image reference, the same build) and `deploy --ha --no-image-load --image=<it>` rolls
//    the control plane onto it; every control-plane Deployment rolled out, every pod and template on the new
//    image, zero failed demo requests, one leader per Lease, and the version-skew check a warning (not a
//    failure) naming the demo's proxies, none of the control plane's. The rollout time is printed.
// 4. Data-plane roll under the load: `weft restart-proxies -l 'app in (<the demo's servers>)' --batch=2`
//    (the load clients hold the counts, so they stay); zero failed demo requests, the restarted pods' proxies
//    on the new image and no longer skewed, the load clients still skewed.
// 5. `deploy` without --ha, 1 ready replica each; the test's namespace is deleted; the extra tag removed.
import assert from "node:assert/strict";
import { LeaderLeases } from "../../proto/control_plane.ts";
import { Ports } from "../../proto/ports.ts";
import { exec } from "../lib/exec.ts";
import { BIN_CACHE, CONTAINERD_SOCKET } from "../cluster/config.ts";
import { nodeSocket } from "../cluster/worker.ts";
import { checkVersionSkew, skewedProxies } from "../../manifests/check/version_skew.ts";
import { Kube } from "../../manifests/kube.ts";
import { delta, fmtCounts, type LoadCounts, loadCounts, startDemoLoad } from "./lib/demo_load.ts";
import {
  apply,
  CONTROL_PLANE_NS,
  inNamespace,
  isReady,
  type Json,
  kc,
  kjson,
  KUBECONFIG,
  kubectl,
  pods,
  requireMesh,
  rolloutStatus,
  waitForReadyPods,
  WEFT_IMAGE,
} from "./lib/kube.ts";
import { waitForMetric } from "./lib/mesh.ts";
import { parseMetrics, scrape, sum } from "./lib/prom.ts";
import { sleep, waitFor, waitForValue } from "./lib/wait.ts";

const ENABLED = Deno.env.get("WEFT_HA_TESTS") === "1";
if (!ENABLED) {
  console.log(
    "ha_failover_test.ts skipped: set WEFT_HA_TESTS=1 to run it (it redeploys the control plane with --ha and " +
      "back, under /tmp/weft/cluster.lock)",
  );
}

const ROOT = new URL("../../", import.meta.url).pathname;
const opts = { sanitizeOps: false, sanitizeResources: false };
const RATE = 10;
const LOAD_DURATION_S = 3600;
const HA_REPLICAS = 3;
/** A fault after which some proxy watch took longer than this to reconnect gets its logs saved. */
const SLOW_RECONNECT_S = 5;
const COMPONENTS = ["destination", "identity", "proxy-injector"] as const;
type Component = typeof COMPONENTS[number];
const selectorOf = (c: Component) => `linkerd.io/control-plane-component=${c}`;
const LEASES: { lease: string; component: Component; port: number }[] = [
  { lease: LeaderLeases.policyStatus, component: "destination", port: Ports.policyAdmin },
  { lease: LeaderLeases.identityTrustRoots, component: "identity", port: Ports.identityAdmin },
  { lease: LeaderLeases.injectorTrustRootsCopier, component: "proxy-injector", port: Ports.injectorAdmin },
];

/** `deno task deploy [--ha] [extra…]`, echoed; fails the test on a non-zero exit. */
async function deploy(ha: boolean, extra: string[] = []): Promise<number> {
  const flags = [...(ha ? ["--ha"] : []), ...extra];
  console.log(`$ deno task deploy ${flags.join(" ")}`);
  const { code, seconds } = await runEchoed(`${ROOT}manifests/main.ts`, ["deploy", ...flags]);
  assert.equal(code, 0, `deploy ${flags.join(" ")} failed`);
  return seconds;
}

/** Runs a project entry point with the test's KUBECONFIG, its output echoed; exit code and seconds. */
async function runEchoed(main: string, args: string[]): Promise<{ code: number; seconds: number }> {
  const t0 = Date.now();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", main, ...args],
    env: { KUBECONFIG },
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(20 * 60_000),
  }).spawn();
  const [status] = await Promise.all([child.status, pump(child.stdout), pump(child.stderr)]);
  return { code: status.code, seconds: (Date.now() - t0) / 1000 };
}

/** A child's output on the test's, indented. */
async function pump(s: ReadableStream<Uint8Array>) {
  for await (const chunk of s.pipeThrough(new TextDecoderStream())) {
    await Deno.stdout.write(new TextEncoder().encode(chunk.replace(/^(?=.)/gm, "  | ")));
  }
}

async function waitForReplicas(n: number): Promise<void> {
  for (const c of COMPONENTS) await waitForReadyPods(CONTROL_PLANE_NS, selectorOf(c), n, 300_000);
}

/** A controller's metrics through the API server's pod proxy. */
async function podProxyMetrics(pod: string, port: number) {
  const r = await kubectl([
    "get",
    "--raw",
    `/api/v1/namespaces/${CONTROL_PLANE_NS}/pods/${pod}:${port}/proxy/metrics`,
  ], {
    timeoutMs: 10_000,
  });
  if (r.code !== 0) throw new Error(`metrics of ${pod}:${port}: ${r.stderr.trim()}`);
  return parseMetrics(r.stdout);
}

async function leaseHolder(lease: string): Promise<string> {
  const l = await kjson(["-n", CONTROL_PLANE_NS, "get", "lease", lease]);
  return l.spec?.holderIdentity ?? "";
}

/**
 * Each Lease held by one ready pod of its component, the replicas' weft_leader gauges summing to 1 with the 1 on
 * that pod. Returns the holders by Lease.
 */
async function checkLeaders(timeoutMs = 60_000): Promise<Record<string, string>> {
  const holders: Record<string, string> = {};
  for (const { lease, component, port } of LEASES) {
    let seen = "";
    await waitFor(`one leader of ${lease}`, async () => {
      const ready = (await pods(CONTROL_PLANE_NS, selectorOf(component))).filter(isReady);
      const holder = await leaseHolder(lease);
      const gauges: Record<string, number> = {};
      for (const p of ready) {
        gauges[p.metadata.name] = sum(await podProxyMetrics(p.metadata.name, port), "weft_leader", { lease });
      }
      const total = Object.values(gauges).reduce((a, b) => a + b, 0);
      seen = `holder ${holder || "(none)"}, weft_leader ${JSON.stringify(gauges)}`;
      if (!ready.some((p) => p.metadata.name === holder) || total !== 1 || gauges[holder] !== 1) return false;
      holders[lease] = holder;
      return true;
    }, { timeoutMs, intervalMs: 1_000, describe: () => seen });
    console.log(`${lease}: ${seen}`);
  }
  return holders;
}

interface Streams {
  destination: number;
  policy: number;
  /** By pod: Destination + policy streams. */
  byPod: Record<string, number>;
}

/** Open streams over the running destination pods: Destination (9996) and policy (9990), summed and by pod. */
async function openStreams(): Promise<Streams> {
  const out: Streams = { destination: 0, policy: 0, byPod: {} };
  for (const p of await pods(CONTROL_PLANE_NS, selectorOf("destination"))) {
    if (!p.status?.podIP || p.metadata.deletionTimestamp) continue;
    const d = await scrape(p.status.podIP, Ports.destinationAdmin, 2000)
      .then((m) => sum(m, "destination_streams_open"), () => 0);
    const pol = await scrape(p.status.podIP, Ports.policyAdmin, 2000)
      .then((m) => sum(m, "policy_watch_streams"), () => 0);
    out.destination += d;
    out.policy += pol;
    out.byPod[p.metadata.name] = d + pol;
  }
  return out;
}

/** The local cluster's crictl (tests/cluster builds it into BIN_CACHE/crictl-<version>/). */
async function crictlPath(): Promise<string> {
  for await (const e of Deno.readDir(BIN_CACHE)) {
    if (e.isDirectory && e.name.startsWith("crictl-")) return `${BIN_CACHE}/${e.name}/crictl`;
  }
  throw new Error(`no crictl under ${BIN_CACHE}: the faults need the local cluster's runtime`);
}

/**
 * SIGKILL of containers through the runtime (crictl stop with timeout 0 sends no SIGTERM first), so the process
 * cannot release a Lease or close its streams cleanly; then the pod is force-deleted unless `keepPod`.
 */
async function crash(pod: Json, containers: string[], keepPod = false): Promise<number> {
  const ids = containers.map((name) => {
    const s = (pod.status?.containerStatuses ?? []).find((c: Json) => c.name === name);
    if (!s?.containerID) throw new Error(`${pod.metadata.name} has no running ${name}`);
    return String(s.containerID).replace(/^containerd:\/\//, "");
  });
  const t0 = Date.now();
  // The runtime of the node the pod runs on (worker nodes have their own containerd).
  const socket = nodeSocket(pod.spec.nodeName, CONTAINERD_SOCKET);
  const r = await exec(await crictlPath(), ["-r", `unix://${socket}`, "stop", "-t", "0", ...ids], {
    signal: AbortSignal.timeout(30_000),
  });
  if (r.code !== 0) throw new Error(`crictl stop ${ids.join(" ")}: ${r.stderr.trim()}`);
  if (!keepPod) {
    await kc([
      "-n",
      CONTROL_PLANE_NS,
      "delete",
      "pod",
      pod.metadata.name,
      "--grace-period=0",
      "--force",
      "--wait=false",
    ]);
  }
  return t0;
}

/**
 * Seconds from `t0` until the summed open streams are back to `before` (the proxies moved their streams), or
 * undefined after 120 s.
 */
async function streamsBack(before: Streams, t0: number): Promise<number | undefined> {
  let last = before;
  try {
    await waitFor(`open streams back to ${before.destination}/${before.policy}`, async () => {
      last = await openStreams();
      return last.destination >= before.destination && last.policy >= before.policy;
    }, { timeoutMs: 120_000, intervalMs: 250, describe: () => JSON.stringify(last) });
  } catch (e) {
    console.log((e as Error).message);
    return undefined;
  }
  return (Date.now() - t0) / 1000;
}

/** The demo's proxies log their discovery streams at debug (`discovery disconnected|connected <watch>`). */
const DEMO_PROXY_LOG_LEVEL = "warn,linkerd=info,weft=debug";

interface Reconnects {
  /** Disconnects of watches after the kill (a watch reconnecting to a dying replica counts again). */
  disconnected: number;
  /** Seconds from the kill to the watch's next `connected` line (its first message on the new stream). */
  fromKill: number[];
  /** Watches whose last line was `disconnected` when the logs were read. */
  pending: string[];
}

/**
 * From the demo proxies' own logs since the kill: each watch that disconnected, and when it connected again. The
 * proxy logs `connected` on the first message of a stream, so this is the time until the proxy had its
 * discovery or policy data back from a live replica.
 */
async function proxyReconnects(ns: string, t0: number): Promise<Reconnects> {
  const out: Reconnects = { disconnected: 0, fromKill: [], pending: [] };
  const since = new Date(t0 - 1000).toISOString();
  for (const p of await pods(ns, "app.kubernetes.io/part-of=weft-demo")) {
    const r = await kubectl([
      "-n",
      ns,
      "logs",
      p.metadata.name,
      "-c",
      "linkerd-proxy",
      `--since-time=${since}`,
    ], {
      timeoutMs: 15_000,
    });
    // Destination and profile watches of one path log the same key: a queue per key pairs them in order.
    const open = new Map<string, number[]>();
    const last = new Map<string, string>();
    for (const line of r.stdout.split("\n")) {
      const m = line.match(/^(\S+) DEBUG proxy: discovery (disconnected|connected) (\S+?):?(?: |$)/);
      if (!m) continue;
      const at = Date.parse(m[1]);
      if (at < t0) continue;
      const key = `${p.metadata.name} ${m[3]}`;
      const q = open.get(key) ?? [];
      last.set(key, m[2]);
      if (m[2] === "disconnected") {
        out.disconnected++;
        open.set(key, [...q, at]);
      } else if (q.length > 0) {
        out.fromKill.push((at - t0) / 1000);
        q.shift();
      }
    }
    // A failed retry logs another `disconnected`: what counts is whether the watch's last word is `connected`.
    for (const [k, ev] of last) if (ev === "disconnected") out.pending.push(k);
  }
  return out;
}

/**
 * After a fault with failed requests or a slow reconnect: every demo pod's logs (load clients: which request failed and how;
 * proxies: what they saw) since just before the kill, into a file named in the output (the namespace goes).
 */
async function saveEvidence(ns: string, fault: number | string, t0: number): Promise<void> {
  const since = new Date(t0 - 5000).toISOString();
  let text = `fault ${fault}, kill at ${new Date(t0).toISOString()}\n`;
  for (const p of await pods(ns, "app.kubernetes.io/part-of=weft-demo")) {
    const containers = [...(p.spec.initContainers ?? []), ...p.spec.containers].map((c: Json) => c.name)
      .filter((c: string) => c !== "linkerd-init");
    for (const c of containers) {
      const r = await kubectl(["-n", ns, "logs", p.metadata.name, "-c", c, `--since-time=${since}`], {
        timeoutMs: 15_000,
      });
      text += `=== ${p.metadata.name} ${c}\n${r.stdout}${r.stderr}`;
    }
  }
  const file = await Deno.makeTempFile({
    prefix: `weft-ha-${typeof fault === "number" ? `fault${fault}` : fault}-`,
    suffix: ".log",
  });
  await Deno.writeTextFile(file, text);
  console.log(`fault ${fault}: the demo's logs since the kill are in ${file}`);
}

/** A demo web pod restarted: the new one's proxy gets a certificate and serves requests under its policy. */
async function restartDemoPod(ns: string): Promise<string> {
  const before = await pods(ns, "app=web");
  const victim = before[0];
  await kc(["-n", ns, "delete", "pod", victim.metadata.name, "--wait=false"]);
  const fresh = await waitForValue("a new ready web pod", async () => {
    const now = (await pods(ns, "app=web")).filter(isReady);
    return now.find((p) => !before.some((b: Json) => b.metadata.uid === p.metadata.uid));
  }, { timeoutMs: 120_000 });
  const ip = fresh.status.podIP;
  await waitForMetric(ip, "identity_cert_refresh_total", { result: "success" }, 1);
  // An inbound request authorized: the proxy has its inbound policy and its certificate (the clients are meshed).
  await waitForMetric(ip, "inbound_http_authz_allow_total", {}, 1, 60_000);
  return fresh.metadata.name;
}

/** A new HTTPRoute on web gets Accepted status from the policy leader; returns the seconds it took. */
async function routeStatus(ns: string, name: string): Promise<number> {
  const t0 = Date.now();
  await apply(
    ns,
    JSON.stringify({
      apiVersion: "gateway.networking.k8s.io/v1",
      kind: "HTTPRoute",
      metadata: { name },
      spec: {
        parentRefs: [{ group: "core", kind: "Service", name: "web", port: 8080 }],
        rules: [{ backendRefs: [{ name: "web", port: 8080 }] }],
      },
    }),
  );
  await waitFor(`status of HTTPRoute ${name}`, async () => {
    const r = await kjson(["-n", ns, "get", "httproutes.gateway.networking.k8s.io", name]);
    return (r.status?.parents ?? []).some((p: Json) =>
      (p.conditions ?? []).some((c: Json) => c.type === "Accepted" && c.status === "True")
    );
  }, { timeoutMs: 60_000, intervalMs: 250 });
  const s = (Date.now() - t0) / 1000;
  await kc(["-n", ns, "delete", "httproutes.gateway.networking.k8s.io", name]);
  return s;
}

interface Usage {
  memoryMiB: Record<string, number>;
  cpuMillicores: Record<string, number>;
}

/** The control plane's working set and CPU per component (sum over replicas), mean of `samples` 10 s apart. */
async function controlPlaneUsage(samples = 3): Promise<Usage> {
  // Every node's kubelet: with several nodes the replicas are spread over them.
  const nodes = ((await kjson(["get", "nodes"])).items as Json[]).map((n) => n.metadata.name as string);
  const mem: Record<string, number> = {}, cpu: Record<string, number> = {};
  for (let i = 0; i < samples; i++) {
    if (i > 0) await sleep(10_000);
    const summaries = await Promise.all(
      nodes.map(async (node) =>
        JSON.parse(await kc(["get", "--raw", `/api/v1/nodes/${node}/proxy/stats/summary`]))
      ),
    );
    const s = { pods: summaries.flatMap((x) => x.pods ?? []) };
    const byName = new Map(
      ((await pods(CONTROL_PLANE_NS, "linkerd.io/control-plane-component")) as Json[]).map((p) => [
        p.metadata.name,
        p.metadata.labels["linkerd.io/control-plane-component"] as string,
      ]),
    );
    for (const p of s.pods as Json[]) {
      const comp = byName.get(p.podRef.name);
      if (p.podRef.namespace !== CONTROL_PLANE_NS || !comp) continue;
      for (const c of p.containers ?? []) {
        mem[comp] = (mem[comp] ?? 0) + (c.memory?.workingSetBytes ?? 0) / 2 ** 20 / samples;
        cpu[comp] = (cpu[comp] ?? 0) + (c.cpu?.usageNanoCores ?? 0) / 1e6 / samples;
      }
    }
  }
  const round = (o: Record<string, number>) =>
    Object.fromEntries(Object.entries(o).map(([k, v]) => [k, Math.round(v * 10) / 10]));
  return { memoryMiB: round(mem), cpuMillicores: round(cpu) };
}

function fmtUsage(u: Usage): string {
  const total = (o: Record<string, number>) => Object.values(o).reduce((a, b) => a + b, 0).toFixed(1);
  return Object.keys(u.memoryMiB).sort().map((k) => `${k} ${u.memoryMiB[k]} MiB ${u.cpuMillicores[k]}m`)
    .join(", ") + `; total ${total(u.memoryMiB)} MiB ${total(u.cpuMillicores)}m`;
}

/** The control plane's upgrade image: the image deploy built, tagged under a second name on every node. */
const UPGRADE_IMAGE = "localhost/weft:ha-upgrade";
/** The demo's server workloads (the load clients are not restarted: they hold the request counts). */
const DEMO_SERVERS = ["api", "grpc", "tcp", "web"];

async function ctr(socket: string, args: string[]): Promise<string> {
  const r = await exec("ctr", ["-a", socket, "-n", "k8s.io", ...args], {
    signal: AbortSignal.timeout(60_000),
  });
  if (r.code !== 0) throw new Error(`ctr -a ${socket} ${args.join(" ")}: ${r.stderr.trim()}`);
  return r.stdout;
}

/** Every node's containerd socket, by node name (workers have their own runtime, tests/cluster/worker.ts). */
async function nodeSockets(): Promise<Record<string, string>> {
  const nodes: string[] = (await kjson(["get", "nodes"])).items.map((n: Json) => n.metadata.name);
  return Object.fromEntries(nodes.map((n) => [n, nodeSocket(n, CONTAINERD_SOCKET)]));
}

/** The manifest digest of `ref` in a node's containerd, or undefined. */
async function imageDigest(socket: string, ref: string): Promise<string | undefined> {
  for (const line of (await ctr(socket, ["images", "ls"])).split("\n")) {
    const cols = line.split(/\s+/);
    if (cols[0] === ref) return cols.find((c) => c.startsWith("sha256:"));
  }
  return undefined;
}

/**
 * Tags the image deploy loaded (localhost/weft:dev) as UPGRADE_IMAGE in every node's containerd: a new image
 * reference for `deploy --image=`, so every control-plane pod template changes and every pod is replaced, the
 * same way a release with a new tag would roll. The content is the same build (no second build is made here).
 */
async function tagUpgradeImage(): Promise<string> {
  const sockets = await nodeSockets();
  const digests: Record<string, string | undefined> = {};
  for (const [node, socket] of Object.entries(sockets)) digests[node] = await imageDigest(socket, WEFT_IMAGE);
  const builds = new Set(Object.values(digests));
  if (builds.has(undefined) || builds.size !== 1) {
    throw new Error(`every node needs the same ${WEFT_IMAGE}: ${JSON.stringify(digests)}`);
  }
  for (const socket of Object.values(sockets)) {
    await ctr(socket, ["images", "tag", "--force", WEFT_IMAGE, UPGRADE_IMAGE]);
  }
  console.log(
    `${UPGRADE_IMAGE}: tagged from ${WEFT_IMAGE} ${[...builds][0]} on ${Object.keys(sockets).join(", ")}`,
  );
  return [...builds][0]!;
}

/** Removes UPGRADE_IMAGE from the nodes unless a pod still names it (that pod would not restart). */
async function untagUpgradeImage(): Promise<void> {
  const users = ((await kjson(["get", "pods", "-A"])).items as Json[]).filter((p) =>
    [...(p.spec.initContainers ?? []), ...p.spec.containers].some((c: Json) => c.image === UPGRADE_IMAGE)
  ).map((p) => `${p.metadata.namespace}/${p.metadata.name}`);
  if (users.length) {
    console.log(`${UPGRADE_IMAGE} kept on the nodes: still used by ${users.join(", ")}`);
    return;
  }
  for (const socket of Object.values(await nodeSockets())) await ctr(socket, ["images", "rm", UPGRADE_IMAGE]);
}

/** The weft images (name:tag) a pod or pod template runs, init containers included. */
const weftImages = (spec: Json): string[] =>
  [...new Set([...(spec.initContainers ?? []), ...spec.containers].map((c: Json) => c.image as string))]
    .filter((i) => i.startsWith("localhost/weft:"));

/**
 * Waits until every control-plane pod, terminating ones included, runs only `image` as its weft image, with
 * every Deployment's template naming it; returns when the last new pod became Ready (ms since epoch).
 */
async function controlPlaneOn(image: string): Promise<number> {
  const deployments = (await kjson(["-n", CONTROL_PLANE_NS, "get", "deployments"])).items as Json[];
  for (const d of deployments) {
    assert.deepEqual(weftImages(d.spec.template.spec), [image], `template of ${d.metadata.name}`);
  }
  let last = "";
  let readyAt = 0;
  await waitFor(`every control-plane pod on ${image}`, async () => {
    const all = await pods(CONTROL_PLANE_NS, "linkerd.io/control-plane-component");
    const old = all.filter((p) => weftImages(p.spec).some((i) => i !== image));
    last = old.map((p) => `${p.metadata.name} ${weftImages(p.spec).join(",")}`).join("; ");
    if (old.length > 0 || !all.every(isReady)) return false;
    readyAt = Math.max(
      ...all.map((p) =>
        Date.parse(p.status.conditions.find((c: Json) => c.type === "Ready").lastTransitionTime)
      ),
    );
    return true;
  }, { timeoutMs: 180_000, intervalMs: 1_000, describe: () => `still on another image: ${last}` });
  return readyAt;
}

/** The version-skew check as `check` runs it, and the meshed pods it finds skewed. */
async function versionSkew(): Promise<{ outcome: string; detail: string; skewed: string[] }> {
  const kube = Kube.fromFile(KUBECONFIG);
  const r = await checkVersionSkew({ kube, thresholdMs: 0, now: Date.now() });
  const meshed = await kube.list<Json>("/api/v1/pods", {
    labelSelector: `linkerd.io/control-plane-ns=${CONTROL_PLANE_NS}`,
  });
  return { outcome: r.outcome, detail: r.detail, skewed: skewedProxies(meshed).skewed.map((s) => s.pod) };
}

/** `deno task weft <args>`, echoed; returns its exit code and seconds. */
function weft(args: string[]): Promise<{ code: number; seconds: number }> {
  console.log(`$ deno task weft ${args.map((a) => (/[ ()]/.test(a) ? `'${a}'` : a)).join(" ")}`);
  return runEchoed(`${ROOT}cli/main.ts`, args);
}

interface Fault {
  name: string;
  /** Picks the pod and kills it; returns the kill time and the killed pod's name. */
  kill: (holders: Record<string, string>) => Promise<{ t0: number; pod: string }>;
  /** The Lease whose holder was killed: it must move to another pod. */
  leaderOf?: string;
  /** It kills a destination or policy server: the proxies' streams there must move (failover timed). */
  streams: boolean;
}

async function readyPod(component: Component, not: string[]): Promise<Json> {
  const p = (await pods(CONTROL_PLANE_NS, selectorOf(component))).find((p) =>
    isReady(p) && !not.includes(p.metadata.name)
  );
  if (!p) throw new Error(`no ready ${component} pod outside ${not.join(", ")}`);
  return p;
}

const FAULTS: Fault[] = [
  {
    name: "destination replica (not the policy leader): destination and policy SIGKILLed, pod deleted",
    streams: true,
    kill: async (h) => {
      const p = await readyPod("destination", [h[LeaderLeases.policyStatus]]);
      return { t0: await crash(p, ["destination", "policy"]), pod: p.metadata.name };
    },
  },
  {
    name:
      "policy replica (not the leader): its policy container SIGKILLed, the pod kept (container restarts)",
    streams: true,
    kill: async (h) => {
      const p = await readyPod("destination", [h[LeaderLeases.policyStatus]]);
      return { t0: await crash(p, ["policy"], true), pod: p.metadata.name };
    },
  },
  {
    name: "identity leader (weft-identity-trust-roots): identity SIGKILLed, pod deleted",
    leaderOf: LeaderLeases.identityTrustRoots,
    streams: false,
    kill: async (h) => {
      const name = h[LeaderLeases.identityTrustRoots];
      const p = await kjson(["-n", CONTROL_PLANE_NS, "get", "pod", name]);
      return { t0: await crash(p, ["identity"]), pod: name };
    },
  },
  {
    name: "policy status leader (weft-policy-status): destination and policy SIGKILLed, pod deleted",
    leaderOf: LeaderLeases.policyStatus,
    streams: true,
    kill: async (h) => {
      const name = h[LeaderLeases.policyStatus];
      const p = await kjson(["-n", CONTROL_PLANE_NS, "get", "pod", name]);
      return { t0: await crash(p, ["destination", "policy"]), pod: name };
    },
  },
];

/** The nodes each HA component's running pods are on. */
async function replicaNodes(): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const c of COMPONENTS) {
    const pods = (await kjson(["-n", CONTROL_PLANE_NS, "get", "pods", "-l", selectorOf(c)]))
      .items as Json[];
    out[c] = pods.filter((p) => p.status?.phase === "Running" && !p.metadata.deletionTimestamp)
      .map((p) => p.spec.nodeName as string).sort();
  }
  return out;
}

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)];
}

Deno.test({
  name:
    "e2e (WEFT_HA_TESTS=1): HA control plane, replicas and leaders killed under demo load: no failed request",
  ignore: !ENABLED,
  ...opts,
  fn: async () => {
    await requireMesh();
    const results: Json[] = [];
    const failures: string[] = [];
    try {
      const haDeploy = await deploy(true);
      await waitForReplicas(HA_REPLICAS);
      console.log(
        `deploy --ha: ${haDeploy.toFixed(0)} s; ${HA_REPLICAS} ready replicas of ${COMPONENTS.join(", ")}`,
      );
      // With 3 or more schedulable nodes the anti-affinity is required: each component's replicas on distinct nodes.
      const nodes = ((await kjson(["get", "nodes"])).items as Json[])
        .filter((n) =>
          !n.spec.unschedulable &&
          n.status.conditions.some((c: Json) => c.type === "Ready" && c.status === "True")
        );
      const placement = await replicaNodes();
      console.log(
        `replicas on ${nodes.length} node(s): ${
          Object.entries(placement).map(([c, ns]) => `${c} ${ns.join(" ")}`).join("; ")
        }`,
      );
      if (nodes.length >= HA_REPLICAS) {
        for (const [c, ns] of Object.entries(placement)) {
          assert.equal(new Set(ns).size, ns.length, `${c}: replicas share a node (${ns.join(", ")})`);
        }
      }
      let holders = await checkLeaders();
      await sleep(30_000); // past the start-up work, so "idle" is idle
      const idle = await controlPlaneUsage();
      console.log(`HA control plane, idle: ${fmtUsage(idle)}`);

      await inNamespace("e2e-ha", {
        inject: true,
        annotations: { "config.linkerd.io/proxy-log-level": DEMO_PROXY_LOG_LEVEL },
      }, async (ns) => {
        const loadPods = await startDemoLoad(ns, RATE, LOAD_DURATION_S);
        const loaded = await controlPlaneUsage();
        console.log(`HA control plane, with the demo (${RATE} rps per client): ${fmtUsage(loaded)}`);
        results.push({ usage: { idle, loaded } });

        for (const [i, fault] of FAULTS.entries()) {
          console.log(`--- fault ${i + 1}: ${fault.name}`);
          const load0: LoadCounts = await loadCounts(loadPods);
          const streams0 = await openStreams();
          const renewed0: Record<string, string> = {};
          if (fault.leaderOf) {
            renewed0[fault.leaderOf] =
              (await kjson(["-n", CONTROL_PLANE_NS, "get", "lease", fault.leaderOf])).spec.renewTime;
          }
          const { t0, pod } = await fault.kill(holders);
          const failover = fault.streams ? await streamsBack(streams0, t0) : undefined;
          if (fault.streams && failover === undefined) {
            failures.push(`fault ${i + 1}: streams not back in 120 s`);
          }
          let takeover: number | undefined, acquiredAfterKill: number | undefined;
          if (fault.leaderOf) {
            const lease = fault.leaderOf;
            await waitFor(`${lease} to move off ${pod}`, async () => {
              const h = await leaseHolder(lease);
              return h !== "" && h !== pod;
            }, { timeoutMs: 60_000, intervalMs: 200 });
            takeover = (Date.now() - t0) / 1000;
            // The new holder's own acquireTime (MicroTime), so the polling above does not add to the figure.
            const l = await kjson(["-n", CONTROL_PLANE_NS, "get", "lease", lease]);
            acquiredAfterKill = (Date.parse(l.spec.acquireTime) - t0) / 1000;
            console.log(
              `${lease}: ${pod} last renewed ${
                ((t0 - Date.parse(renewed0[lease])) / 1000).toFixed(2)
              } s before the kill; ${l.spec.holderIdentity} acquired it ${
                acquiredAfterKill.toFixed(2)
              } s after ` +
                `(seen by polling after ${
                  takeover.toFixed(2)
                } s), leaseTransitions ${l.spec.leaseTransitions}`,
            );
          }
          holders = await checkLeaders();
          if (fault.leaderOf) assert.notEqual(holders[fault.leaderOf], pod);
          // Read before a demo pod is restarted below (its log goes with it).
          const rc = await proxyReconnects(ns, t0);
          if (rc.pending.length > 0) {
            failures.push(`fault ${i + 1}: watches not reconnected: ${rc.pending.join(", ")}`);
          }
          const rcMax = rc.fromKill.length ? Math.max(...rc.fromKill) : undefined;
          const newPod = await restartDemoPod(ns);
          const status = await routeStatus(ns, `ha-fault-${i + 1}`);
          await waitForReplicas(HA_REPLICAS);
          holders = await checkLeaders();
          const d = delta(load0, await loadCounts(loadPods));
          const failed = Object.values(d).reduce((n, v) => n + v.failure, 0);
          console.log(
            `fault ${i + 1} (${pod}: ${streams0.byPod[pod] ?? 0} of the ${
              streams0.destination + streams0.policy
            } Destination+policy streams): ` +
              (failover !== undefined ? `server-side stream count back in ${failover.toFixed(2)} s; ` : "") +
              `demo proxies: ${rc.disconnected} watches disconnected, reconnected ${
                rcMax !== undefined
                  ? `p50 ${quantile(rc.fromKill, 0.5).toFixed(2)} s max ${rcMax.toFixed(2)} s`
                  : "-"
              } after the kill` +
              (acquiredAfterKill !== undefined
                ? `; ${fault.leaderOf} acquired by another pod ${
                  acquiredAfterKill.toFixed(2)
                } s after the kill`
                : "") +
              `; new demo pod ${newPod} certified and served; route status in ${status.toFixed(2)} s; ` +
              `requests: ${fmtCounts(d)}`,
          );
          results.push({
            fault: fault.name,
            pod,
            streamsOnPod: streams0.byPod[pod] ?? 0,
            streams0,
            failover,
            proxyWatchesDisconnected: rc.disconnected,
            proxyReconnectS: rc.fromKill,
            proxyReconnectMaxS: rcMax,
            leaseAcquiredAfterKillS: acquiredAfterKill,
            takeover,
            routeStatus: status,
            requests: d,
          });
          if (failed > 0) failures.push(`fault ${i + 1} (${fault.name}): ${failed} failed: ${fmtCounts(d)}`);
          if (failed > 0 || (rcMax ?? 0) > SLOW_RECONNECT_S) await saveEvidence(ns, i + 1, t0);
          for (const [k, v] of Object.entries(d)) assert.ok(v.success > 0, `${k} carried no request`);
        }
        const fmt = (xs: number[]) =>
          xs.length
            ? `p50 ${quantile(xs, 0.5).toFixed(2)} s, p99 ${quantile(xs, 0.99).toFixed(2)} s, max ${
              Math.max(...xs).toFixed(2)
            } s`
            : "none";
        const server = results.filter((r) => r.failover !== undefined).map((r) => r.failover as number);
        const perKill = results.filter((r) => r.proxyReconnectMaxS !== undefined)
          .map((r) => r.proxyReconnectMaxS as number);
        const all = results.flatMap((r) => (r.proxyReconnectS ?? []) as number[]);
        console.log(`failover over the kills: server-side stream counts back ${fmt(server)}`);
        console.log(`failover over the kills: demo proxies' last watch reconnected ${fmt(perKill)}`);
        console.log(`failover, every demo proxy watch that was cut (${all.length}): ${fmt(all)}`);

        // 3. The control plane upgraded onto a new image under the load: every pod replaced, no failed request.
        console.log(`--- upgrade: deploy --ha --image=${UPGRADE_IMAGE} under the demo load`);
        await tagUpgradeImage();
        const upLoad0 = await loadCounts(loadPods);
        const upT0 = Date.now();
        const upDeploy = await deploy(true, [
          "--no-image-load",
          `--image=${UPGRADE_IMAGE}`,
          "--image-pull-policy=Never",
        ]);
        const cpDeployments: string[] = (await kjson(["-n", CONTROL_PLANE_NS, "get", "deployments"])).items
          .map((d: Json) => d.metadata.name);
        for (const d of cpDeployments) await rolloutStatus(CONTROL_PLANE_NS, `deployment/${d}`, 300_000);
        const upReady = await controlPlaneOn(UPGRADE_IMAGE);
        await waitForReplicas(HA_REPLICAS);
        const upRolled = (Date.now() - upT0) / 1000;
        holders = await checkLeaders();
        const upD = delta(upLoad0, await loadCounts(loadPods));
        const upFailed = Object.values(upD).reduce((n, v) => n + v.failure, 0);
        const upSkew = await versionSkew();
        console.log(
          `upgrade: deploy ${upDeploy.toFixed(1)} s; the last new control-plane pod Ready ${
            ((upReady - upT0) / 1000).toFixed(1)
          } s after the deploy began; all ${cpDeployments.length} Deployments (${
            cpDeployments.join(", ")
          }) rolled out and every pod on ${UPGRADE_IMAGE} ${upRolled.toFixed(1)} s after; requests: ${
            fmtCounts(upD)
          }`,
        );
        console.log(`upgrade: version skew ${upSkew.outcome}: ${upSkew.detail}`);
        results.push({
          upgrade: {
            deployS: upDeploy,
            lastPodReadyS: (upReady - upT0) / 1000,
            rolledS: upRolled,
            requests: upD,
          },
        });
        if (upFailed > 0) {
          failures.push(`upgrade: ${upFailed} failed: ${fmtCounts(upD)}`);
          await saveEvidence(ns, "upgrade", upT0);
        }
        for (const [k, v] of Object.entries(upD)) {
          assert.ok(v.success > 0, `upgrade: ${k} carried no request`);
        }
        // The demo's proxies are from before the upgrade: a warning naming them, not a failure; the control
        // plane's own proxies are on the new image.
        assert.equal(upSkew.outcome, "warn", `version skew after the upgrade: ${upSkew.detail}`);
        const demoPods = (await pods(ns, "app.kubernetes.io/part-of=weft-demo")).filter(isReady)
          .map((p: Json) => `${ns}/${p.metadata.name}`);
        for (const p of demoPods) assert.ok(upSkew.skewed.includes(p), `${p} not reported as skewed`);
        assert.deepEqual(upSkew.skewed.filter((p) => p.startsWith(`${CONTROL_PLANE_NS}/`)), []);

        // 4. The data plane rolled in batches of 2 with `weft restart-proxies`: no failed request.
        console.log(`--- data plane: weft restart-proxies, the demo's servers in batches of 2`);
        const rsLoad0 = await loadCounts(loadPods);
        const rs = await weft([
          "restart-proxies",
          "-n",
          ns,
          "-l",
          `app in (${DEMO_SERVERS.join(",")})`,
          "--batch=2",
          "--timeout=5m",
        ]);
        assert.equal(rs.code, 0, "weft restart-proxies failed");
        const rsD = delta(rsLoad0, await loadCounts(loadPods));
        const rsFailed = Object.values(rsD).reduce((n, v) => n + v.failure, 0);
        const rsSkew = await versionSkew();
        console.log(
          `restart-proxies: ${DEMO_SERVERS.length} workloads in 2 batches, ${
            rs.seconds.toFixed(1)
          } s; requests: ${fmtCounts(rsD)}; version skew ${rsSkew.outcome}: ${rsSkew.detail}`,
        );
        results.push({ restartProxies: { seconds: rs.seconds, requests: rsD } });
        if (rsFailed > 0) {
          failures.push(`restart-proxies: ${rsFailed} failed: ${fmtCounts(rsD)}`);
          await saveEvidence(ns, "restart", Date.now() - rs.seconds * 1000);
        }
        for (const [k, v] of Object.entries(rsD)) {
          assert.ok(v.success > 0, `restart: ${k} carried no request`);
        }
        // The restarted servers now run the control plane's proxy; the load clients, not restarted, still do not.
        const after = (await pods(ns, "app.kubernetes.io/part-of=weft-demo")).filter(isReady);
        for (const p of after) {
          const name = `${ns}/${p.metadata.name}`;
          const server = DEMO_SERVERS.includes(p.metadata.labels.app);
          assert.equal(rsSkew.skewed.includes(name), !server, `${name} skewed after the restart`);
          const proxy = [...(p.spec.initContainers ?? []), ...p.spec.containers].find((c: Json) =>
            c.name === "linkerd-proxy"
          );
          if (server) assert.equal(proxy?.image, UPGRADE_IMAGE, `${name}: proxy image`);
        }

        console.log(JSON.stringify(results));
        assert.deepEqual(failures, [], "failed demo requests during the faults, the upgrade or the restart");
      });
    } finally {
      // Back to the normal deployment whatever happened: a CI run uses the cluster next.
      const back = await deploy(false);
      await waitForReplicas(1);
      console.log(`deploy (no --ha): ${back.toFixed(0)} s; 1 ready replica each`);
      await untagUpgradeImage();
    }
  },
});

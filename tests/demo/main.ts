/**
 * `deno task demo`: deploys the three demo services of manifests/examples/demo (HTTP/1 web → api, gRPC, raw TCP,
 * each driven by a load client at a fixed modest rate), waits for them, lets traffic run, and prints per service
 * the request rate, success rate and p50/p99 latency from the proxies' metrics, and the mTLS identities seen.
 * Exits non-zero when a service shows no successful traffic. The demo is left running unless --delete.
 *
 *   --namespace NAME   default weft-demo
 *   --no-inject        deploy without the inject annotation (the demo unmeshed: client-side figures only)
 *   --window S         seconds of traffic measured (default 20), after --warmup S (default 5)
 *   --apps tree|image  where the pods get the demo app code: `image` runs /app/tests/demo/apps from the weft
 *                      image; `tree` mounts this checkout's tests/demo/apps from a ConfigMap. Default: image
 *                      when the image has them, else tree.
 *   --delete           delete the namespace afterwards
 */
import { parseAllDocuments } from "yaml";
import { formatWorkloadIdentity } from "../../proto/identity_name.ts";
import { Ports } from "../../proto/ports.ts";
import {
  apply,
  CONTROL_PLANE_NS,
  type Json,
  kc,
  kjson,
  kubectl,
  requireMesh,
  rolloutStatus,
} from "../e2e/lib/kube.ts";
import { parseMetrics, scrape } from "../e2e/lib/prom.ts";
import { sleep, waitFor } from "../e2e/lib/wait.ts";
import { formatReport, type PodScrape, serviceReport, type ServiceSpec } from "./report.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const MANIFESTS = `${ROOT}manifests/examples/demo`;
const APPS_DIR = `${ROOT}tests/demo/apps`;
const APPS_IN_IMAGE = "/app/tests/demo/apps";
const PROXY_ADMIN_PORT = Ports.proxyAdmin;
const LOAD_METRICS_PORT = 9990;
const TRUST_DOMAIN = Deno.env.get("WEFT_TRUST_DOMAIN") ?? "cluster.local";

interface Args {
  namespace: string;
  inject: boolean;
  windowS: number;
  warmupS: number;
  apps: "tree" | "image" | "auto";
  delete: boolean;
}

function parseArgs(argv: string[]): Args {
  const a: Args = {
    namespace: "weft-demo",
    inject: true,
    windowS: 20,
    warmupS: 5,
    apps: "auto",
    delete: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const v = () => {
      const x = argv[++i];
      if (x === undefined) throw new Error(`${argv[i - 1]} needs a value`);
      return x;
    };
    switch (argv[i]) {
      case "--namespace":
        a.namespace = v();
        break;
      case "--no-inject":
        a.inject = false;
        break;
      case "--window":
        a.windowS = Number(v());
        break;
      case "--warmup":
        a.warmupS = Number(v());
        break;
      case "--apps": {
        const x = v();
        if (x !== "tree" && x !== "image") throw new Error(`--apps must be tree or image, got "${x}"`);
        a.apps = x;
        break;
      }
      case "--delete":
        a.delete = true;
        break;
      default:
        throw new Error(`unknown argument "${argv[i]}" (see the header of tests/demo/main.ts)`);
    }
  }
  if (!(a.windowS >= 5 && a.windowS <= 600)) {
    throw new Error(`--window must be 5..600 seconds, got ${a.windowS}`);
  }
  return a;
}

const log = (s: string) => console.log(`[demo] ${s}`);

async function readDocs(file: string): Promise<Json[]> {
  return parseAllDocuments(await Deno.readTextFile(`${MANIFESTS}/${file}`)).map((d) => d.toJSON()).filter((
    d,
  ) => d);
}

/** Runs a short unmeshed pod to see whether the weft image carries the demo apps. */
async function imageHasApps(ns: string): Promise<boolean> {
  const name = `demo-probe-${crypto.randomUUID().slice(0, 6)}`;
  await apply(
    ns,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name, annotations: { "linkerd.io/inject": "disabled" } },
      spec: {
        restartPolicy: "Never",
        containers: [{
          name: "probe",
          image: "localhost/weft:dev",
          imagePullPolicy: "Never",
          command: ["deno", "eval", `Deno.statSync(${JSON.stringify(`${APPS_IN_IMAGE}/load.ts`)})`],
        }],
      },
    }),
  );
  let phase = "";
  try {
    await waitFor("the image probe pod to finish", async () => {
      phase = (await kjson(["-n", ns, "get", "pod", name])).status?.phase ?? "";
      return phase === "Succeeded" || phase === "Failed";
    }, { timeoutMs: 60_000 });
  } finally {
    await kubectl(["-n", ns, "delete", "pod", name, "--wait=false"]);
  }
  return phase === "Succeeded";
}

/** The ConfigMap of this checkout's demo app files, and the Deployment change that mounts it over the image's. */
async function appsConfigMap(): Promise<Json> {
  const data: Record<string, string> = {};
  for await (const e of Deno.readDir(APPS_DIR)) {
    if (e.isFile && e.name.endsWith(".ts") && !e.name.endsWith("_test.ts")) {
      data[e.name] = await Deno.readTextFile(`${APPS_DIR}/${e.name}`);
    }
  }
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "demo-apps" }, data };
}

function mountApps(doc: Json): void {
  if (doc.kind !== "Deployment") return;
  const spec = doc.spec.template.spec;
  spec.volumes = [...(spec.volumes ?? []), { name: "demo-apps", configMap: { name: "demo-apps" } }];
  for (const c of spec.containers) {
    c.volumeMounts = [...(c.volumeMounts ?? []), {
      name: "demo-apps",
      mountPath: APPS_IN_IMAGE,
      readOnly: true,
    }];
  }
}

async function sha(s: string): Promise<string> {
  const d = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(s));
  return Array.from(new Uint8Array(d).slice(0, 8), (b) => b.toString(16).padStart(2, "0")).join("");
}

async function scrapePod(p: Json): Promise<PodScrape> {
  const ip = p.status?.podIP;
  const out: PodScrape = { pod: p.metadata.name };
  if (!ip) {
    out.proxyError = "no pod IP";
    return out;
  }
  const meshed = [...(p.spec.initContainers ?? []), ...p.spec.containers].some((c: Json) =>
    c.name === "linkerd-proxy"
  );
  if (meshed) {
    try {
      out.proxy = await scrape(ip, PROXY_ADMIN_PORT);
    } catch (e) {
      out.proxyError = `scrape ${ip}:${PROXY_ADMIN_PORT} failed: ${(e as Error).message}`;
    }
  } else out.proxyError = "the pod has no linkerd-proxy container";
  if (p.metadata.labels?.["demo.weft.io/role"] === "load") {
    try {
      const res = await fetch(`http://${ip}:${LOAD_METRICS_PORT}/metrics`, {
        signal: AbortSignal.timeout(5000),
      });
      out.app = parseMetrics(await res.text());
    } catch (e) {
      log(`could not read the load client metrics of ${p.metadata.name}: ${(e as Error).message}`);
    }
  }
  return out;
}

async function scrapeAll(list: Json[]): Promise<Map<string, PodScrape>> {
  const m = new Map<string, PodScrape>();
  for (const s of await Promise.all(list.map(scrapePod))) m.set(s.pod, s);
  return m;
}

async function main(): Promise<number> {
  const args = parseArgs(Deno.args);
  const ns = args.namespace;
  if (args.inject) {
    const deployments = await requireMesh();
    log(`mesh: ${deployments.length} deployments available in ${CONTROL_PLANE_NS}`);
  }
  const [nsDoc] = await readDocs("namespace.yaml");
  nsDoc.metadata.name = ns;
  if (!args.inject) delete nsDoc.metadata.annotations["linkerd.io/inject"];
  await kc(["apply", "-f", "-"], { stdin: JSON.stringify(nsDoc) });
  await waitFor(
    `ServiceAccount default in ${ns}`,
    async () => (await kubectl(["-n", ns, "get", "serviceaccount", "default"])).code === 0,
    { timeoutMs: 30_000 },
  );
  log(`namespace ${ns}${args.inject ? " (linkerd.io/inject: enabled)" : " (not meshed)"}`);

  let apps = args.apps;
  if (apps === "auto") {
    apps = (await imageHasApps(ns)) ? "image" : "tree";
    if (apps === "tree") {
      log(
        `the weft image has no ${APPS_IN_IMAGE}: mounting this checkout's tests/demo/apps from a ConfigMap`,
      );
    }
  }
  const docs = [
    ...(await readDocs("http.yaml")),
    ...(await readDocs("grpc.yaml")),
    ...(await readDocs("tcp.yaml")),
  ];
  if (apps === "tree") {
    const cm = await appsConfigMap();
    await apply(ns, JSON.stringify(cm));
    const hash = await sha(JSON.stringify(cm.data));
    for (const d of docs) {
      mountApps(d);
      // A changed ConfigMap must roll the pods: its content hash goes into the pod template.
      if (d.kind === "Deployment") {
        d.spec.template.metadata.annotations = {
          ...d.spec.template.metadata.annotations,
          "demo.weft.io/apps-sha": hash,
        };
      }
    }
  }
  await apply(ns, JSON.stringify({ apiVersion: "v1", kind: "List", items: docs }));
  const deployments = docs.filter((d) => d.kind === "Deployment").map((d) => d.metadata.name as string);
  log(`applied ${docs.length} objects; waiting for ${deployments.join(", ")}`);
  const t0 = Date.now();
  await Promise.all(deployments.map((d) => rolloutStatus(ns, `deployment/${d}`, 240_000)));
  log(`all rolled out in ${((Date.now() - t0) / 1000).toFixed(1)} s; warming up ${args.warmupS} s`);
  await sleep(args.warmupS * 1000);

  const podList = (await kjson(["-n", ns, "get", "pods", "-l", "app.kubernetes.io/part-of=weft-demo"])).items
    .filter((p: Json) => p.status?.phase === "Running" && !p.metadata.deletionTimestamp);
  const before = await scrapeAll(podList);
  const started = Date.now();
  log(`measuring ${args.windowS} s of traffic over ${podList.length} pods`);
  await sleep(args.windowS * 1000);
  const after = await scrapeAll(podList);
  const windowS = Math.round((Date.now() - started) / 100) / 10;

  const id = (sa: string) =>
    formatWorkloadIdentity({
      serviceAccount: sa,
      namespace: ns,
      controlPlaneNamespace: CONTROL_PLANE_NS,
      trustDomain: TRUST_DOMAIN,
    });
  const services: ServiceSpec[] = [
    {
      name: "web",
      protocol: "HTTP/1",
      app: "web",
      port: 8080,
      callerApp: "web-load",
      callerIsLoadClient: true,
    },
    {
      name: "api",
      protocol: "HTTP/1",
      app: "api",
      port: 8080,
      callerApp: "web",
      callerIsLoadClient: false,
      impliedBy: "web",
    },
    {
      name: "grpc",
      protocol: "gRPC",
      app: "grpc",
      port: 50051,
      callerApp: "grpc-load",
      callerIsLoadClient: true,
    },
    { name: "tcp", protocol: "TCP", app: "tcp", port: 7000, callerApp: "tcp-load", callerIsLoadClient: true },
  ].map((s) => ({
    ...s,
    protocol: s.protocol as ServiceSpec["protocol"],
    callerIdentity: id(s.callerApp),
    serverIdentity: id(s.app),
  }));
  const podsOf = (app: string) =>
    podList.filter((p: Json) => p.metadata.labels?.app === app).map((p: Json) => p.metadata.name as string);

  console.log("");
  const reports = services.map((s) =>
    serviceReport(
      s,
      before,
      after,
      podsOf(s.app),
      podsOf(s.callerApp),
      windowS,
      podsOf(`${s.impliedBy}-load`),
    )
  );
  for (const r of reports) for (const line of formatReport(r)) console.log(line);
  console.log("");
  const failed = reports.filter((r) => !r.ok);
  // For a failed service, its caller's proxy usually says why (discovery, TLS, policy): show its last lines.
  for (const r of failed) {
    const caller = podsOf(services.find((s) => s.name === r.name)!.callerApp)[0];
    if (!caller || !args.inject) continue;
    const l = await kubectl(["-n", ns, "logs", caller, "-c", "linkerd-proxy", "--tail=3"], {
      timeoutMs: 15_000,
    });
    log(`${r.name}: last lines of ${caller}'s proxy:\n${(l.stdout || l.stderr).trimEnd()}`);
  }
  log(
    failed.length === 0
      ? "every service carried successful traffic"
      : `no successful traffic: ${failed.map((r) => r.name).join(", ")}`,
  );
  if (args.delete) {
    await kubectl(["delete", "namespace", ns, "--wait=false"]);
    log(`namespace ${ns} deleted`);
  } else log(`the demo keeps running in namespace ${ns} (kubectl delete namespace ${ns} removes it)`);
  console.log(JSON.stringify({ namespace: ns, meshed: args.inject, windowS, services: reports }));
  return failed.length === 0 ? 0 : 1;
}

if (import.meta.main) {
  try {
    Deno.exit(await main());
  } catch (e) {
    console.error(`[demo] failed: ${(e as Error).message}`);
    Deno.exit(1);
  }
}

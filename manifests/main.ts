/**
 * `deno run -A manifests/main.ts <deploy|undeploy|check|render> [flags]` (deno tasks `deploy`,
 * `undeploy`, `mesh:check`). The only module here that reads the environment and arguments.
 */
import { stringify } from "yaml";
import { PROMETHEUS_IMAGE, WEFT_IMAGE } from "../images/build.ts";
import { parseDurationMs } from "../proto/go_duration.ts";
import {
  createIdentity,
  createWebhookCa,
  type IdentityMaterial,
  issueServingCert,
  serviceDnsNames,
} from "./certs.ts";
import { runChecks } from "./check.ts";
import { checkOutcome, formatResult } from "./check/result.ts";
import { CONTROL_PLANE_DIR, deploy } from "./deploy.ts";
import { type Manifest } from "./kinds.ts";
import { Kube } from "./kube.ts";
import { Progress } from "./progress.ts";
import {
  CLUSTER_DOMAIN,
  identityObjects,
  loadDir,
  NAMESPACE,
  type PullPolicy,
  renderControlPlane,
  TRUST_DOMAIN,
  WEBHOOK_CERTS,
  webhookObjects,
} from "./render.ts";
import type { TargetFlags } from "./target.ts";
import { undeploy } from "./undeploy.ts";
import { type MetricsStore, parseMetricsStore } from "./metrics/store.ts";
import { renderStore } from "./metrics/render_store.ts";
import { apiServerAuthentication, guardedPortObjects, podNetworks, TAP_PORT } from "./port_policy.ts";
import { applyHa, haPlan } from "./ha.ts";
import { didYouMean, type HaValues, parseValues, ValuesError } from "./ha_values.ts";

/** `render` has no cluster to read podCIDRs from: the local cluster's pod network stands in. */
const RENDER_POD_NETWORK = "10.244.0.0/16";

export const USAGE =
  `usage: deno task deploy | undeploy | mesh:check [flags]   (manifests/main.ts deploy|undeploy|check|render)

deploy     build and load the image, apply CRDs, certificates and the control plane, wait until it is ready
  --kubeconfig=PATH              default: $KUBECONFIG, else ~/.kube/config
  --kind[=CLUSTER]               load the image into a kind cluster (automatic for kind-* kubeconfig clusters)
  --containerd=SOCKET            import the image into this containerd (automatic for the local cluster)
  --no-image-load --image=REF    use an image the nodes pull (with --image-pull-policy=IfNotPresent)
  --image-pull-policy=Never|IfNotPresent|Always
  --trust-anchors=PEM --issuer-cert=PEM --issuer-key=PEM
                                 install this trust anchor bundle and issuer (default: keep what the
                                 cluster has, else create them; a created anchor is saved in --certs-dir)
  --certs-dir=DIR                default: ~/.local/state/weft/<api-server>
  --prometheus=embedded|none     the metrics store: a Prometheus in namespace weft (default), or none
  --prometheus-url=URL           use this Prometheus instead (recorded in ConfigMap weft/weft-metrics)
  --pod-networks=CIDR,...        the pod networks (default: every node's spec.podCIDRs); weft-tap's 8089 and
                                 weft-prometheus' 9090 admit plaintext clients only from outside them
  --api-server-sources=IP,...    addresses inside the pod networks the API server reaches pods from
                                 (default: the first address of each pod network, a bridge CNI's gateway;
                                 empty: none)
  --ha                           high availability: 3 replicas of destination, identity and the injector,
                                 anti-affinity (required with 3+ schedulable nodes), spread, PDBs,
                                 resources (docs/ha.md)
  --values=FILE                  YAML values: ha, replicas, antiAffinity, resources (docs/ha.md)
  --multicluster-gateway-trust   proxies injected from now on let the multicluster gateway (weft-gateway in
                                 weft-multicluster) forward its callers' identities; without it none does
                                 (docs/multicluster.md). Re-deploying without it takes the trust away.
  --timeout=5m
undeploy   delete the webhooks, the namespace, the cluster RBAC and the CRDs deploy installed
  --kubeconfig=PATH --keep-crds --timeout=5m
check      health of the control plane, webhooks, certificates and proxies; exit 1 on a failure
  --kubeconfig=PATH --threshold=1440h   (a webhook certificate expiring within the threshold fails)
  --anchor-threshold=720h --issuer-threshold=168h
                                 (a trust anchor / the identity issuer expiring within it fails)
render     print the rendered control plane and embedded metrics store as YAML (throwaway certificates,
           Secrets redacted)
  --image=REF --image-pull-policy=... --native-sidecar=true|false
  --pod-networks=CIDR,... --api-server-sources=IP,...   (default pod networks here: ${RENDER_POD_NETWORK})
  --ha --values=FILE --nodes=N   as deploy's; N: the schedulable nodes deploy would count (default 1)
  --multicluster-gateway-trust   as deploy's`;

export class UsageError extends Error {
  override name = "UsageError";
}

export interface ParsedArgs {
  command: "deploy" | "undeploy" | "check" | "render";
  kubeconfig: string;
  image: string;
  imagePullPolicy: PullPolicy;
  target: TargetFlags;
  identityFiles?: { anchors: string; issuerCert: string; issuerKey: string };
  certsDir?: string;
  timeoutMs: number;
  thresholdMs: number;
  anchorThresholdMs: number;
  issuerThresholdMs: number;
  keepCrds: boolean;
  nativeSidecars: boolean;
  metrics: MetricsStore;
  podNetworks?: string[];
  apiServerSources?: string[];
  /** --ha (issue 19). */
  ha: boolean;
  /** --values=FILE, read by main(). */
  valuesFile?: string;
  /** render's --nodes: schedulable nodes, which deploy counts itself. */
  nodes: number;
  /** --multicluster-gateway-trust (issue 23). */
  multiclusterGatewayTrust: boolean;
}

const FLAGS: Record<ParsedArgs["command"], string[]> = {
  deploy: [
    "kubeconfig",
    "kind",
    "containerd",
    "no-image-load",
    "image",
    "image-pull-policy",
    "trust-anchors",
    "issuer-cert",
    "issuer-key",
    "certs-dir",
    "timeout",
    "prometheus",
    "prometheus-url",
    "pod-networks",
    "api-server-sources",
    "ha",
    "values",
    "multicluster-gateway-trust",
  ],
  undeploy: ["kubeconfig", "keep-crds", "timeout"],
  check: ["kubeconfig", "threshold", "anchor-threshold", "issuer-threshold"],
  render: [
    "image",
    "image-pull-policy",
    "native-sidecar",
    "pod-networks",
    "api-server-sources",
    "ha",
    "values",
    "nodes",
    "multicluster-gateway-trust",
  ],
};
const BOOLEAN = new Set(["no-image-load", "keep-crds", "kind", "ha", "multicluster-gateway-trust"]);

export function parseArgs(args: string[], env: Record<string, string | undefined>): ParsedArgs {
  const [command, ...rest] = args;
  if (!command || !(command in FLAGS)) {
    throw new UsageError(`unknown command "${command ?? ""}"`);
  }
  const cmd = command as ParsedArgs["command"];
  const f = new Map<string, string | true>();
  for (const a of rest) {
    const m = /^--([a-z-]+)(?:=(.*))?$/s.exec(a);
    if (!m) throw new UsageError(`${cmd}: unexpected argument "${a}" (flags look like --name=value)`);
    if (!FLAGS[cmd].includes(m[1])) {
      throw new UsageError(`${cmd}: unknown flag --${m[1]}${didYouMean(m[1], FLAGS[cmd], "--")}`);
    }
    if (m[2] === undefined && !BOOLEAN.has(m[1])) {
      throw new UsageError(`${cmd}: --${m[1]} needs a value (--${m[1]}=...)`);
    }
    f.set(m[1], m[2] ?? true);
  }
  const str = (k: string) => {
    const v = f.get(k);
    return typeof v === "string" ? v : undefined;
  };
  const bool = (k: string) => {
    const v = f.get(k);
    if (v === undefined) return false;
    if (v === true || v === "true") return true;
    if (v === "false") return false;
    throw new UsageError(`--${k}: "${v}" is not true or false`);
  };
  const noLoad = bool("no-image-load");
  const pull = str("image-pull-policy") ?? (noLoad ? "IfNotPresent" : "Never");
  if (!["Never", "IfNotPresent", "Always"].includes(pull)) {
    throw new UsageError(`--image-pull-policy: "${pull}" is not Never, IfNotPresent or Always`);
  }
  const ids = ["trust-anchors", "issuer-cert", "issuer-key"].map(str);
  if (ids.some((x) => x !== undefined) && ids.some((x) => x === undefined)) {
    throw new UsageError("--trust-anchors, --issuer-cert and --issuer-key go together");
  }
  const kind = f.get("kind");
  const kubeconfig = str("kubeconfig") ?? (env.KUBECONFIG?.split(":")[0] || `${env.HOME ?? ""}/.kube/config`);
  const duration = (k: string, d: string) => {
    try {
      return parseDurationMs(str(k) ?? d, `--${k}`);
    } catch (e) {
      throw new UsageError((e as Error).message);
    }
  };
  const nodes = str("nodes") ?? "1";
  if (!/^\d+$/.test(nodes) || Number(nodes) < 1) {
    throw new UsageError(`--nodes: "${nodes}" is not a whole number of nodes (1 or more)`);
  }
  return {
    command: cmd,
    kubeconfig,
    image: str("image") ?? WEFT_IMAGE,
    imagePullPolicy: pull as PullPolicy,
    target: {
      ...(kind !== undefined ? { kind: kind === true ? true : kind } : {}),
      ...(str("containerd") ? { containerd: str("containerd") } : {}),
      noImageLoad: noLoad,
    },
    identityFiles: ids[0] ? { anchors: ids[0], issuerCert: ids[1]!, issuerKey: ids[2]! } : undefined,
    certsDir: str("certs-dir"),
    timeoutMs: duration("timeout", "5m"),
    thresholdMs: duration("threshold", "1440h"),
    anchorThresholdMs: duration("anchor-threshold", "720h"),
    issuerThresholdMs: duration("issuer-threshold", "168h"),
    keepCrds: bool("keep-crds"),
    nativeSidecars: str("native-sidecar") !== "false",
    metrics: metricsFlags(str("prometheus"), str("prometheus-url")),
    podNetworks: list(str("pod-networks")),
    apiServerSources: list(str("api-server-sources")),
    ha: bool("ha"),
    valuesFile: str("values"),
    nodes: Number(nodes),
    multiclusterGatewayTrust: bool("multicluster-gateway-trust"),
  };
}

/** --values=FILE, read and validated; a missing file or a bad field is a usage error naming it. */
export async function readValues(path: string | undefined): Promise<HaValues | undefined> {
  if (path === undefined) return undefined;
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (e) {
    throw new UsageError(`--values=${path}: ${(e as Error).message}`);
  }
  try {
    return parseValues(text, `--values=${path}`);
  } catch (e) {
    if (e instanceof ValuesError) throw new UsageError(e.message);
    throw e;
  }
}

/** A comma-separated flag value; "" is an empty list (a given, empty flag), absent is undefined. */
function list(v: string | undefined): string[] | undefined {
  return v === undefined ? undefined : v.split(",").map((x) => x.trim()).filter((x) => x !== "");
}

function metricsFlags(prometheus: string | undefined, url: string | undefined): MetricsStore {
  try {
    return parseMetricsStore(prometheus, url);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}

/** ~/.local/state/weft/<host>_<port>: per API server, so two clusters never share an anchor key. */
export function defaultCertsDir(server: string, env: Record<string, string | undefined>): string {
  const u = new URL(server);
  const base = env.XDG_STATE_HOME || `${env.HOME ?? "."}/.local/state`;
  return `${base}/weft/${u.hostname}_${u.port || (u.protocol === "https:" ? "443" : "80")}`;
}

async function readIdentity(files: NonNullable<ParsedArgs["identityFiles"]>): Promise<IdentityMaterial> {
  const read = async (p: string, flag: string) => {
    try {
      return await Deno.readTextFile(p);
    } catch (e) {
      throw new UsageError(`--${flag}=${p}: ${(e as Error).message}`);
    }
  };
  return {
    anchorsPem: await read(files.anchors, "trust-anchors"),
    issuer: {
      certPem: await read(files.issuerCert, "issuer-cert"),
      keyPem: await read(files.issuerKey, "issuer-key"),
    },
  };
}

/** For `render`: the control plane with throwaway certificates, Secrets' data redacted. */
async function render(a: ParsedArgs): Promise<string> {
  const plan = haPlan({ flag: a.ha, values: await readValues(a.valuesFile), nodes: a.nodes });
  const now = Date.now();
  const id = await createIdentity({ namespace: NAMESPACE, trustDomain: TRUST_DOMAIN, now });
  const ca = await createWebhookCa(NAMESPACE, now);
  const serving = Object.fromEntries(
    await Promise.all(WEBHOOK_CERTS.map(async (w) => [
      w.secret,
      await issueServingCert(ca, serviceDnsNames([...w.services], NAMESPACE, CLUSTER_DOMAIN), now),
    ])),
  );
  const docs = await loadDir(CONTROL_PLANE_DIR);
  const params = {
    image: a.image,
    imagePullPolicy: a.imagePullPolicy,
    trustAnchorsPem: id.material.anchorsPem,
    nativeSidecars: a.nativeSidecars,
    webhookCaPem: ca.certPem,
    multiclusterGatewayTrust: a.multiclusterGatewayTrust,
  };
  const nets = podNetworks([], a.podNetworks ?? [RENDER_POD_NETWORK], a.apiServerSources);
  const objects: Manifest[] = [
    ...docs.filter((d) => d.kind === "Namespace"),
    ...identityObjects(id.material),
    ...webhookObjects(ca, serving),
    ...await renderControlPlane(applyHa(docs.filter((d) => d.kind !== "Namespace"), plan), params),
    apiServerAuthentication(NAMESPACE, nets),
    ...guardedPortObjects(NAMESPACE, TAP_PORT),
    // The embedded metrics store, as a default deploy applies it.
    ...(await renderStore({ mode: "embedded" }, { ...params, prometheusImage: PROMETHEUS_IMAGE })).apply,
  ];
  for (const o of objects) {
    if (o.kind === "Secret") {
      o.data = Object.fromEntries(Object.keys(o.data as object).map((k) => [k, "<redacted>"]));
    }
  }
  return objects.map((o) => stringify(o, { lineWidth: 0 })).join("---\n");
}

export async function main(args: string[]): Promise<number> {
  let a: ParsedArgs;
  try {
    a = parseArgs(args, Deno.env.toObject());
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    console.error(`${e.message}\n\n${USAGE}`);
    return 2;
  }
  try {
    if (a.command === "render") {
      console.log(await render(a));
      return 0;
    }
    const kube = Kube.fromFile(a.kubeconfig);
    if (a.command === "check") {
      const results = await runChecks({
        kube,
        thresholdMs: a.thresholdMs,
        anchorThresholdMs: a.anchorThresholdMs,
        issuerThresholdMs: a.issuerThresholdMs,
        onResult: (r) => console.log(formatResult(r)),
      });
      const outcome = checkOutcome(results);
      console.log(outcome.line);
      return outcome.code;
    }
    const progress = new Progress();
    if (a.command === "undeploy") {
      progress.note(`weft undeploy from ${kube.server} (context ${kube.context})`);
      await undeploy({ kube, keepCrds: a.keepCrds, timeoutMs: a.timeoutMs, progress });
      return 0;
    }
    progress.note(`weft deploy to ${kube.server} (context ${kube.context})`);
    await deploy({
      kube,
      image: a.image,
      imagePullPolicy: a.imagePullPolicy,
      target: a.target,
      given: a.identityFiles ? await readIdentity(a.identityFiles) : undefined,
      certsDir: a.certsDir ?? defaultCertsDir(kube.server, Deno.env.toObject()),
      timeoutMs: a.timeoutMs,
      progress,
      metrics: a.metrics,
      podNetworks: a.podNetworks,
      apiServerSources: a.apiServerSources,
      ha: a.ha,
      values: await readValues(a.valuesFile),
      multiclusterGatewayTrust: a.multiclusterGatewayTrust,
    });
    return 0;
  } catch (e) {
    console.error(`\n${a.command}: ${(e as Error).message}`);
    return e instanceof UsageError ? 2 : 1;
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));

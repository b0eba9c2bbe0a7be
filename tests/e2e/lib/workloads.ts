/**
 * The cluster tests' workloads: Deployments and Jobs of the weft image running tests/e2e/apps/e2e_app.ts through
 * `deno eval` (so nothing has to be added to the image), each with its own ServiceAccount so every workload has
 * its own mesh identity, and helpers to drive the app's control port from the host.
 */
import { formatWorkloadIdentity } from "../../../proto/identity_name.ts";
import { Ports } from "../../../proto/ports.ts";
import { CONTROL_PLANE_NS, type Json, WEFT_IMAGE } from "./kube.ts";

export const APP_PORT = 8080;
export const CONTROL_PORT = 8081;
/** The proxy's admin port (metrics, /ready), as the injector configures it. */
export const PROXY_ADMIN_PORT = Ports.proxyAdmin;
export const PROXY_CONTAINER = "linkerd-proxy";
export const INIT_CONTAINER = "linkerd-init";
export const TRUST_DOMAIN = Deno.env.get("WEFT_TRUST_DOMAIN") ?? "cluster.local";

const APP_SOURCE = await Deno.readTextFile(new URL("../apps/e2e_app.ts", import.meta.url));

/** The mesh identity of ServiceAccount `sa` in `ns`. */
export function identityOf(sa: string, ns: string): string {
  return formatWorkloadIdentity({
    serviceAccount: sa,
    namespace: ns,
    controlPlaneNamespace: CONTROL_PLANE_NS,
    trustDomain: TRUST_DOMAIN,
  });
}

export interface AppOptions {
  name: string;
  replicas?: number;
  /** Defaults to `name`. */
  serviceAccount?: string;
  podAnnotations?: Record<string, string>;
  /** Also create a Service `name` on APP_PORT (port 80 → 8080). */
  service?: boolean;
  /** Extra environment for the app (e.g. LOOPBACK_PORT). */
  env?: Record<string, string>;
}

function appContainer(extraEnv: Record<string, string> = {}): Json {
  return {
    name: "app",
    image: WEFT_IMAGE,
    imagePullPolicy: "Never",
    command: ["deno", "eval", "--ext=ts", APP_SOURCE],
    env: [
      { name: "APP_PORT", value: String(APP_PORT) },
      { name: "CONTROL_PORT", value: String(CONTROL_PORT) },
      { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
      ...Object.entries(extraEnv).map(([name, value]) => ({ name, value })),
    ],
    ports: [{ name: "http", containerPort: APP_PORT }, { name: "control", containerPort: CONTROL_PORT }],
    readinessProbe: { httpGet: { path: "/healthz", port: CONTROL_PORT }, periodSeconds: 1 },
    resources: { requests: { cpu: "10m", memory: "32Mi" }, limits: { memory: "256Mi" } },
  };
}

/** ServiceAccount + Deployment (+ Service) of the e2e app, as one kubectl `List`. */
export function appManifest(o: AppOptions): string {
  const sa = o.serviceAccount ?? o.name;
  const items: Json[] = [
    { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: sa } },
    {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: o.name },
      spec: {
        replicas: o.replicas ?? 1,
        selector: { matchLabels: { app: o.name } },
        template: {
          metadata: { labels: { app: o.name }, annotations: o.podAnnotations ?? {} },
          spec: {
            serviceAccountName: sa,
            terminationGracePeriodSeconds: 10,
            containers: [appContainer(o.env)],
          },
        },
      },
    },
  ];
  if (o.service) {
    items.push({
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: o.name },
      spec: { selector: { app: o.name }, ports: [{ name: "http", port: 80, targetPort: APP_PORT }] },
    });
  }
  return JSON.stringify({ apiVersion: "v1", kind: "List", items });
}

/**
 * A Job whose one pod makes a single request to `target` (host:port) and exits 0 only on a 200. One attempt, no
 * retry: if the app started before its proxy could forward, the request fails and so does the Job.
 */
export function oneShotJobManifest(name: string, target: string): string {
  const code = `
const [hostname, port] = ${JSON.stringify(target)}.split(":");
try {
  const res = await fetch("http://" + hostname + ":" + port + "/", { signal: AbortSignal.timeout(10000) });
  const body = await res.text();
  console.log("status", res.status, body.trim());
  Deno.exit(res.status === 200 ? 0 : 1);
} catch (e) {
  console.log("request failed:", e.message);
  Deno.exit(2);
}`;
  return JSON.stringify({
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: { name },
    spec: {
      backoffLimit: 0,
      activeDeadlineSeconds: 180,
      template: {
        metadata: { labels: { job: name } },
        spec: {
          restartPolicy: "Never",
          containers: [{
            name: "once",
            image: WEFT_IMAGE,
            imagePullPolicy: "Never",
            command: ["deno", "eval", code],
            resources: { requests: { cpu: "10m", memory: "32Mi" }, limits: { memory: "256Mi" } },
          }],
        },
      },
    },
  });
}

export interface Answer {
  ok: boolean;
  status?: number;
  pod?: string;
  error?: string;
  ms: number;
}

async function control(podIp: string, path: string, timeoutMs = 30_000): Promise<Json> {
  const res = await fetch(`http://${podIp}:${CONTROL_PORT}${path}`, {
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`GET ${podIp}:${CONTROL_PORT}${path}: ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

/**
 * Has the app in pod `fromIp` make `n` requests to `target` (host:port), each on a new connection,
 * `intervalMs` apart.
 */
export async function fetchFrom(
  fromIp: string,
  target: string,
  n = 1,
  timeoutMs = 3000,
  intervalMs = 0,
  request: { method?: string; path?: string } = {},
): Promise<Answer[]> {
  const q = new URLSearchParams({
    target,
    n: String(n),
    timeout_ms: String(timeoutMs),
    interval_ms: String(intervalMs),
    method: request.method ?? "GET",
    path: request.path ?? "/",
  });
  return (await control(fromIp, `/fetch?${q}`, n * (timeoutMs + intervalMs) + 10_000)).results;
}

export interface SessionStats {
  target: string;
  ok: number;
  failed: number;
  reconnects: number;
  errors: string[];
  pods: Record<string, number>;
}

/** Starts one long-lived keep-alive connection from pod `fromIp` to `target`, one request per interval. */
export async function startSession(fromIp: string, target: string, intervalMs = 200): Promise<void> {
  await control(fromIp, `/session/start?${new URLSearchParams({ target, interval_ms: String(intervalMs) })}`);
}

export async function sessionStats(fromIp: string): Promise<SessionStats> {
  return await control(fromIp, "/session/stats");
}

export async function stopSession(fromIp: string): Promise<SessionStats> {
  return await control(fromIp, "/session/stop");
}

export interface FloodReport {
  sent: number;
  /** Outcomes by `grpc-status N`, `timeout` or `error: ...`. */
  statuses: Record<string, number>;
}

/** Has the app in pod `fromIp` send hostile Identity.Certify calls to `target` for `seconds`. */
export async function certifyFloodFrom(
  fromIp: string,
  target: string,
  seconds: number,
  concurrency: number,
): Promise<FloodReport> {
  const q = new URLSearchParams({ target, seconds: String(seconds), concurrency: String(concurrency) });
  return await control(fromIp, `/certify-flood?${q}`, seconds * 1000 + 30_000);
}

/** Counts answers by pod name (failures under "error: ..."). */
export function byPod(answers: Answer[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const a of answers) {
    const k = a.ok ? a.pod ?? "(no pod header)" : `error: ${a.error ?? `status ${a.status}`}`;
    out[k] = (out[k] ?? 0) + 1;
  }
  return out;
}

/**
 * Instant queries against a Prometheus HTTP API (`/api/v1/query`), reached either directly by URL or
 * through the Kubernetes API server's service proxy to the embedded `weft-prometheus` (so the CLI needs
 * only a kubeconfig, as `linkerd viz` does). Which one: `--prometheus-url`, else the URL recorded in
 * ConfigMap `weft-metrics` (key `prometheusUrl`) by deploy, else the embedded one.
 */
import type { Kube } from "../manifests/kube.ts";
import { readMetricsConfigMap } from "../manifests/metrics/store.ts";

export const CONTROL_PLANE_NS = "weft";
export const PROMETHEUS_SERVICE = "weft-prometheus";
export const PROMETHEUS_PORT = 9090;
export const METRICS_CONFIGMAP = "weft-metrics";

export interface PromSample {
  metric: Record<string, string>;
  value: number;
}

/** One series of a range answer: its labels and its [unix seconds, value] points, as Prometheus sent them. */
export interface PromRangeSeries {
  metric: Record<string, string>;
  values: [number, number][];
}

/** The evaluation grid of a range query, in unix seconds. */
export interface PromRange {
  start: number;
  end: number;
  step: number;
}

export interface Prometheus {
  /** Where the queries go, for messages. */
  readonly where: string;
  query(promql: string, signal: AbortSignal): Promise<PromSample[]>;
  /** `/api/v1/query_range` (the dashboard's charts); optional so the CLI's test doubles need not have it. */
  queryRange?(promql: string, range: PromRange, signal: AbortSignal): Promise<PromRangeSeries[]>;
}

export class PrometheusError extends Error {
  override name = "PrometheusError";
}

/** Prometheus' JSON envelope with status "success", or a PrometheusError saying what came instead. */
function successBody<R>(
  status: number,
  text: string,
  promql: string,
  where: string,
): { data?: { resultType?: string; result?: R[] } } {
  let body: {
    status?: string;
    error?: string;
    errorType?: string;
    data?: { resultType?: string; result?: R[] };
  };
  try {
    body = JSON.parse(text);
  } catch {
    throw new PrometheusError(
      `${where} answered HTTP ${status} with something that is not Prometheus JSON: ${text.slice(0, 200)}`,
    );
  }
  if (body.status !== "success") {
    throw new PrometheusError(
      `${where} refused the query (HTTP ${status}, ${body.errorType ?? "error"}: ${
        body.error ?? "?"
      }): ${promql}`,
    );
  }
  return body;
}

/** The samples of an instant-vector answer; anything else (an error, a scalar, HTML) throws saying what. */
export function parseQueryResponse(
  status: number,
  text: string,
  promql: string,
  where: string,
): PromSample[] {
  const body = successBody<{ metric?: Record<string, string>; value?: [number, string] }>(
    status,
    text,
    promql,
    where,
  );
  if (body.data?.resultType !== "vector" || !Array.isArray(body.data.result)) {
    throw new PrometheusError(
      `${where}: expected an instant vector, got ${body.data?.resultType}: ${promql}`,
    );
  }
  return body.data.result.map((r) => ({ metric: r.metric ?? {}, value: sampleValue(r.value?.[1]) }));
}

/** The series of a range-matrix answer; anything else throws saying what, as parseQueryResponse. */
export function parseRangeResponse(
  status: number,
  text: string,
  promql: string,
  where: string,
): PromRangeSeries[] {
  const body = successBody<{ metric?: Record<string, string>; values?: [number, string][] }>(
    status,
    text,
    promql,
    where,
  );
  if (body.data?.resultType !== "matrix" || !Array.isArray(body.data.result)) {
    throw new PrometheusError(`${where}: expected a range matrix, got ${body.data?.resultType}: ${promql}`);
  }
  return body.data.result.map((r) => ({
    metric: r.metric ?? {},
    values: (r.values ?? []).map(([t, v]) => [Number(t), sampleValue(v)] as [number, number]),
  }));
}

function rangeParams(promql: string, r: PromRange): Record<string, string> {
  return { query: promql, start: String(r.start), end: String(r.end), step: String(r.step) };
}

/** Prometheus writes values as Go formats them: `+Inf`/`-Inf` (which Number() does not read), `NaN`, decimals. */
function sampleValue(v: string | undefined): number {
  if (v === "+Inf") return Infinity;
  if (v === "-Inf") return -Infinity;
  return Number(v);
}

function abortable<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/** A Prometheus reached by URL (an external one, or a test's on loopback). */
export class UrlPrometheus implements Prometheus {
  readonly where: string;
  constructor(readonly url: string, readonly timeoutMs = 30_000) {
    this.where = `Prometheus at ${url}`;
  }

  async query(promql: string, signal: AbortSignal): Promise<PromSample[]> {
    const text = await this.#get("/api/v1/query", { query: promql }, signal);
    return parseQueryResponse(text.status, text.body, promql, this.where);
  }

  async queryRange(promql: string, range: PromRange, signal: AbortSignal): Promise<PromRangeSeries[]> {
    const text = await this.#get("/api/v1/query_range", rangeParams(promql, range), signal);
    return parseRangeResponse(text.status, text.body, promql, this.where);
  }

  async #get(
    path: string,
    params: Record<string, string>,
    signal: AbortSignal,
  ): Promise<{ status: number; body: string }> {
    const u = new URL(this.url.replace(/\/$/, "") + path);
    for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
    let res: Response;
    try {
      res = await fetch(u, { signal: AbortSignal.any([signal, AbortSignal.timeout(this.timeoutMs)]) });
    } catch (e) {
      if (signal.aborted) throw e;
      throw new PrometheusError(`${this.where} cannot be reached: ${(e as Error).message}`);
    }
    return { status: res.status, body: await res.text() };
  }
}

/** The embedded Prometheus through the API server's service proxy. */
export class KubePrometheus implements Prometheus {
  readonly where: string;
  readonly #path: string;
  constructor(readonly kube: Kube, namespace = CONTROL_PLANE_NS) {
    this.#path =
      `/api/v1/namespaces/${namespace}/services/http:${PROMETHEUS_SERVICE}:${PROMETHEUS_PORT}/proxy/api/v1/query`;
    this.where = `Prometheus ${namespace}/${PROMETHEUS_SERVICE} (through ${kube.server})`;
  }

  async query(promql: string, signal: AbortSignal): Promise<PromSample[]> {
    let r;
    try {
      r = await abortable(this.kube.request("GET", this.#path, { query: { query: promql } }), signal);
    } catch (e) {
      if (signal.aborted) throw e;
      throw new PrometheusError(`${this.where} cannot be reached: ${(e as Error).message}`);
    }
    if (r.status === 503 || r.status === 502) {
      throw new PrometheusError(`${this.where} is not answering (HTTP ${r.status}): is its pod ready?`);
    }
    return parseQueryResponse(r.status, r.text, promql, this.where);
  }

  async queryRange(promql: string, range: PromRange, signal: AbortSignal): Promise<PromRangeSeries[]> {
    let r;
    try {
      r = await abortable(
        this.kube.request("GET", `${this.#path}_range`, { query: rangeParams(promql, range) }),
        signal,
      );
    } catch (e) {
      if (signal.aborted) throw e;
      throw new PrometheusError(`${this.where} cannot be reached: ${(e as Error).message}`);
    }
    if (r.status === 503 || r.status === 502) {
      throw new PrometheusError(`${this.where} is not answering (HTTP ${r.status}): is its pod ready?`);
    }
    return parseRangeResponse(r.status, r.text, promql, this.where);
  }
}

/**
 * Picks the Prometheus to ask, checking that it exists before any query: `--prometheus-url`, else what
 * deploy recorded in ConfigMap weft-metrics (embedded → through the API service proxy; external → its
 * URL; none → an error saying so), else the embedded Service if it is there.
 */
export async function connectPrometheus(kube: Kube, flagUrl: string | undefined): Promise<Prometheus> {
  if (flagUrl) return new UrlPrometheus(checkUrl(flagUrl, "--prometheus-url"));
  const cm = await kube.get<{ data?: Record<string, string> }>(
    `/api/v1/namespaces/${CONTROL_PLANE_NS}/configmaps/${METRICS_CONFIGMAP}`,
  );
  const store = readMetricsConfigMap(cm?.data);
  if (store?.mode === "external") {
    return new UrlPrometheus(
      checkUrl(store.url, `ConfigMap ${CONTROL_PLANE_NS}/${METRICS_CONFIGMAP} prometheusUrl`),
    );
  }
  if (store?.mode === "none") {
    throw new PrometheusError(
      `no metrics store: the mesh was deployed with --prometheus=none (ConfigMap ${CONTROL_PLANE_NS}/` +
        `${METRICS_CONFIGMAP}); pass --prometheus-url or redeploy with the embedded one`,
    );
  }
  const svc = await kube.get(`/api/v1/namespaces/${CONTROL_PLANE_NS}/services/${PROMETHEUS_SERVICE}`);
  if (!svc) {
    throw new PrometheusError(
      `no metrics store: Service ${CONTROL_PLANE_NS}/${PROMETHEUS_SERVICE} does not exist and no ` +
        `external URL is recorded in ConfigMap ${CONTROL_PLANE_NS}/${METRICS_CONFIGMAP}; deploy the mesh with ` +
        `its Prometheus (deno task deploy) or pass --prometheus-url`,
    );
  }
  return new KubePrometheus(kube);
}

function checkUrl(text: string, what: string): string {
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    throw new PrometheusError(`${what}: "${text}" is not a URL`);
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") {
    throw new PrometheusError(`${what}: "${text}" is not an http(s) URL`);
  }
  return text;
}

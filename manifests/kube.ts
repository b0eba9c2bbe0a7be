/**
 * The few API calls deploy, undeploy and check make: server-side apply, get, delete, list, dry-run
 * create and the pod proxy. Authentication and the API server come from any kubeconfig through
 * `@kubernetes/client-node`; requests are plain HTTPS so the apply content type and query
 * parameters are exactly what the API server documents.
 */
import { KubeConfig } from "@kubernetes/client-node";
import * as http from "node:http";
import * as https from "node:https";
import { describe, type Manifest, objectPath } from "./kinds.ts";

export const FIELD_MANAGER = "weft-deploy";

export class KubeError extends Error {
  override name = "KubeError";
  constructor(readonly status: number, message: string, readonly reason?: string) {
    super(message);
  }
}

export interface Response {
  status: number;
  text: string;
}

export type ApplyResult = "created" | "configured" | "unchanged";

export class Kube {
  readonly server: string;
  readonly context: string;

  constructor(readonly kc: KubeConfig, readonly timeoutMs = 30_000) {
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error("the kubeconfig has no current cluster");
    this.server = cluster.server.replace(/\/$/, "");
    this.context = kc.getCurrentContext();
  }

  /** From a kubeconfig file (KUBECONFIG is read by main.ts, never here). */
  static fromFile(path: string): Kube {
    const kc = new KubeConfig();
    try {
      kc.loadFromFile(path);
    } catch (e) {
      throw new Error(`cannot load kubeconfig ${path}: ${(e as Error).message}`);
    }
    return new Kube(kc);
  }

  async request(
    method: string,
    path: string,
    opts: { body?: string; contentType?: string; query?: Record<string, string>; accept?: string } = {},
  ): Promise<Response> {
    const url = new URL(this.server + path);
    for (const [k, v] of Object.entries(opts.query ?? {})) url.searchParams.set(k, v);
    const headers: Record<string, string> = { Accept: opts.accept ?? "application/json" };
    if (opts.body !== undefined) {
      headers["Content-Type"] = opts.contentType ?? "application/json";
      headers["Content-Length"] = String(new TextEncoder().encode(opts.body).length);
    }
    const ro: https.RequestOptions = { method, headers };
    await this.kc.applyToHTTPSOptions(ro);
    const mod = url.protocol === "https:" ? https : http;
    return await new Promise<Response>((resolve, reject) => {
      const req = mod.request(url, ro, (res) => {
        res.setEncoding("utf8");
        let text = "";
        res.on("data", (c: string) => text += c);
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
        res.on("error", reject);
      });
      req.setTimeout(this.timeoutMs, () => req.destroy(new Error(`no answer in ${this.timeoutMs}ms`)));
      req.on("error", (e) => reject(new Error(`${method} ${url.pathname} on ${this.server}: ${e.message}`)));
      if (opts.body !== undefined) req.write(opts.body);
      req.end();
    });
  }

  /** Parses a 2xx answer, else throws a KubeError with the API server's message. */
  async json<T = unknown>(
    method: string,
    path: string,
    opts: Parameters<Kube["request"]>[2] = {},
  ): Promise<T> {
    const r = await this.request(method, path, opts);
    if (r.status >= 200 && r.status < 300) return (r.text ? JSON.parse(r.text) : {}) as T;
    throw statusError(r, `${method} ${path}`);
  }

  /** The object, or undefined when it does not exist. */
  async get<T = Manifest>(path: string): Promise<T | undefined> {
    const r = await this.request("GET", path);
    if (r.status === 404) return undefined;
    if (r.status !== 200) throw statusError(r, `GET ${path}`);
    return JSON.parse(r.text) as T;
  }

  /**
   * Server-side apply, forcing ownership of the fields we set. The answer is compared with the
   * object before, status and bookkeeping aside: a controller may write the status between the two
   * requests, so the resourceVersion alone would report changes deploy did not make.
   */
  async apply(m: Manifest): Promise<{ result: ApplyResult; object: Manifest; changed: string[] }> {
    const path = objectPath(m);
    const before = await this.get<Manifest>(path);
    const object = await this.json<Manifest>("PATCH", path, {
      body: JSON.stringify(m),
      contentType: "application/apply-patch+yaml",
      query: { fieldManager: FIELD_MANAGER, force: "true" },
    }).catch((e) => {
      throw new KubeError((e as KubeError).status ?? 0, `apply ${describe(m)}: ${(e as Error).message}`);
    });
    const changed = before ? changedPaths(strip(before), strip(object)) : [];
    const result: ApplyResult = !before ? "created" : changed.length === 0 ? "unchanged" : "configured";
    return { result, object, changed };
  }

  /** Deletes; true when something was deleted, false when it was already gone. */
  async delete(path: string): Promise<boolean> {
    const r = await this.request("DELETE", path, {
      body: JSON.stringify({ kind: "DeleteOptions", apiVersion: "v1", propagationPolicy: "Background" }),
    });
    if (r.status === 404) return false;
    if (r.status >= 200 && r.status < 300) return true;
    throw statusError(r, `DELETE ${path}`);
  }

  async list<T = Manifest>(path: string, query: Record<string, string> = {}): Promise<T[]> {
    const out: T[] = [];
    let cont: string | undefined;
    do {
      const page = await this.json<{ items?: T[]; metadata?: { continue?: string } }>("GET", path, {
        query: { limit: "500", ...query, ...(cont ? { continue: cont } : {}) },
      });
      out.push(...(page.items ?? []));
      cont = page.metadata?.continue || undefined;
    } while (cont);
    return out;
  }

  /** `kubectl create --dry-run=server`: admission runs (webhooks included), nothing is stored. */
  async dryRunCreate(collection: string, body: unknown): Promise<Response> {
    return await this.request("POST", collection, {
      body: JSON.stringify(body),
      query: { dryRun: "All", fieldManager: FIELD_MANAGER },
    });
  }

  /** GET through the API server's proxy to a pod's port (works where pod IPs are not routable). */
  async podProxy(namespace: string, pod: string, port: number, path: string): Promise<Response> {
    return await this.request("GET", `/api/v1/namespaces/${namespace}/pods/${pod}:${port}/proxy${path}`, {
      accept: "*/*",
    });
  }

  async version(): Promise<{ major?: string; minor?: string; gitVersion?: string }> {
    return await this.json("GET", "/version");
  }
}

/** The object without status and bookkeeping metadata (which controllers write at any time). */
type Meta = Record<string, unknown> & { annotations?: Record<string, string> };

function strip(o: Manifest): unknown {
  const { status: _s, metadata, ...rest } = o as Manifest & { status?: unknown };
  const { resourceVersion: _r, managedFields: _m, generation: _g, ...meta } = metadata as Meta;
  // The Deployment controller's rollout counter, written after each template change.
  const { "deployment.kubernetes.io/revision": _rev, ...annotations } = meta.annotations ?? {};
  return { ...rest, metadata: { ...meta, annotations } };
}

/** Whether two versions of an object differ only in status and bookkeeping metadata. */
export function sameContent(a: Manifest, b: Manifest): boolean {
  return canonical(strip(a)) === canonical(strip(b));
}

/** JSON paths where two values differ (at most `limit`), for saying what an apply changed. */
export function changedPaths(a: unknown, b: unknown, path = "", limit = 5, out: string[] = []): string[] {
  if (out.length >= limit || canonical(a) === canonical(b)) return out;
  const isObj = (v: unknown) => v !== null && typeof v === "object";
  if (isObj(a) && isObj(b) && Array.isArray(a) === Array.isArray(b)) {
    const ao = a as Record<string, unknown>, bo = b as Record<string, unknown>;
    for (const k of new Set([...Object.keys(ao), ...Object.keys(bo)])) {
      changedPaths(ao[k], bo[k], Array.isArray(a) ? `${path}[${k}]` : `${path}.${k}`, limit, out);
    }
    return out;
  }
  out.push(path || ".");
  return out;
}

function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (v && typeof v === "object") {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o).sort().map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`).join(",")}}`;
  }
  return JSON.stringify(v);
}

export function statusError(r: Response, what: string): KubeError {
  let message = r.text.slice(0, 500);
  let reason: string | undefined;
  try {
    const s = JSON.parse(r.text) as { message?: string; reason?: string };
    if (s.message) message = s.message;
    reason = s.reason;
  } catch {
    // Not a Status object; keep the text.
  }
  return new KubeError(r.status, `${what}: HTTP ${r.status}: ${message}`, reason);
}

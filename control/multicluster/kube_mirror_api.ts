/** `MirrorApi` on the API server: plain REST calls, so conflicts and absences are status codes. */
import type { KubeConfig } from "@kubernetes/client-node";
import type * as https from "node:https";
import { apiMessage, kubeRequest } from "../k8s/raw_request.ts";
import type { KubeObject } from "../k8s/mod.ts";
import type { MirrorApi, ObjectApi, UpdateResult } from "./mirror_api.ts";
import type { Endpoints, Service } from "./mirror_objects.ts";

const FIELD_MANAGER = "weft-service-mirror";
const TIMEOUT_MS = 30_000;

class KubeObjectApi<T extends KubeObject> implements ObjectApi<T> {
  constructor(readonly kc: KubeConfig, readonly plural: string) {}

  #path(ns: string, name?: string): string {
    return `/api/v1/namespaces/${encodeURIComponent(ns)}/${this.plural}${
      name ? `/${encodeURIComponent(name)}` : ""
    }`;
  }

  async #call(method: string, path: string, body?: unknown) {
    return await kubeRequest(this.kc, {
      method,
      path,
      body: body === undefined ? undefined : JSON.stringify(body),
      contentType: body === undefined ? undefined : "application/json",
      fieldManager: FIELD_MANAGER,
      timeoutMs: TIMEOUT_MS,
    });
  }

  #fail(what: string, r: { status: number; text: string }): never {
    throw new Error(`${what} ${this.plural}: HTTP ${r.status}: ${apiMessage(r.text)}`);
  }

  async get(ns: string, name: string): Promise<T | undefined> {
    const r = await this.#call("GET", this.#path(ns, name));
    if (r.status === 404) return undefined;
    if (r.status !== 200) this.#fail(`get ${ns}/${name}`, r);
    return JSON.parse(r.text) as T;
  }

  async create(obj: T): Promise<"created" | "exists"> {
    const ns = obj.metadata.namespace ?? "";
    const r = await this.#call("POST", this.#path(ns), obj);
    if (r.status === 409) return "exists";
    if (r.status !== 201 && r.status !== 200) this.#fail(`create ${ns}/${obj.metadata.name}`, r);
    return "created";
  }

  async update(obj: T): Promise<UpdateResult> {
    const ns = obj.metadata.namespace ?? "";
    const r = await this.#call("PUT", this.#path(ns, obj.metadata.name), obj);
    if (r.status === 409) return "conflict";
    if (r.status === 404) return "gone";
    if (r.status !== 200) this.#fail(`update ${ns}/${obj.metadata.name}`, r);
    return "ok";
  }

  async delete(ns: string, name: string): Promise<void> {
    const r = await this.#call("DELETE", this.#path(ns, name));
    if (r.status !== 200 && r.status !== 202 && r.status !== 404) this.#fail(`delete ${ns}/${name}`, r);
  }

  async deleteAt(ns: string, name: string, resourceVersion: string): Promise<UpdateResult> {
    const r = await deleteWithBody(this.kc, this.#path(ns, name), {
      apiVersion: "v1",
      kind: "DeleteOptions",
      preconditions: { resourceVersion },
    });
    if (r.status === 409) return "conflict";
    if (r.status === 404) return "gone";
    if (r.status !== 200 && r.status !== 202) this.#fail(`delete ${ns}/${name}`, r);
    return "ok";
  }

  async list(labelSelector: string): Promise<T[]> {
    const items: T[] = [];
    let cont: string | undefined;
    do {
      const q = new URLSearchParams({ labelSelector, limit: "500" });
      if (cont) q.set("continue", cont);
      const r = await this.#call("GET", `/api/v1/${this.plural}?${q}`);
      if (r.status !== 200) this.#fail("list", r);
      const page = JSON.parse(r.text) as { items?: T[]; metadata?: { continue?: string } };
      items.push(...(page.items ?? []));
      cont = page.metadata?.continue || undefined;
    } while (cont);
    return items;
  }
}

/**
 * A DELETE with a DeleteOptions body (preconditions cannot be query parameters). Deno's node:http
 * drops the body of a DELETE, so this one request goes through fetch with the kubeconfig's TLS
 * material and headers.
 */
async function deleteWithBody(
  kc: KubeConfig,
  path: string,
  body: unknown,
): Promise<{ status: number; text: string }> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error("kubeconfig has no current cluster");
  const opts: https.RequestOptions = { headers: {} };
  await kc.applyToHTTPSOptions(opts);
  const pem = (v: unknown) => v === undefined || v === null ? undefined : String(v);
  const ca = pem(opts.ca);
  const client = Deno.createHttpClient({
    caCerts: ca ? [ca] : undefined,
    cert: pem(opts.cert),
    key: pem(opts.key),
  });
  try {
    const res = await fetch(`${cluster.server.replace(/\/$/, "")}${path}`, {
      method: "DELETE",
      client,
      headers: { ...(opts.headers as Record<string, string>), "Content-Type": "application/json" },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    return { status: res.status, text: await res.text() };
  } finally {
    client.close();
  }
}

export function kubeMirrorApi(kc: KubeConfig): MirrorApi {
  return {
    services: new KubeObjectApi<Service>(kc, "services"),
    endpoints: new KubeObjectApi<Endpoints>(kc, "endpoints"),
  };
}

/**
 * One request to the API server with the kubeconfig's credentials, for the small writers that need
 * a status code and a precondition (409, 404) rather than the client library's typed calls.
 */
import type { KubeConfig } from "@kubernetes/client-node";
import * as http from "node:http";
import * as https from "node:https";

export interface RawRequest {
  method: string;
  /** API path, e.g. `/api/v1/namespaces/ns/configmaps/name`. */
  path: string;
  body?: string;
  contentType?: string;
  /** Sent as `?fieldManager=` on requests with a body. */
  fieldManager: string;
  signal?: AbortSignal;
  /** Destroys a request the server has not answered within this time. */
  timeoutMs?: number;
}

export async function kubeRequest(kc: KubeConfig, r: RawRequest): Promise<{ status: number; text: string }> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error("kubeconfig has no current cluster");
  const url = new URL(`${cluster.server.replace(/\/$/, "")}${r.path}`);
  if (r.body !== undefined) url.searchParams.set("fieldManager", r.fieldManager);
  const opts: https.RequestOptions = {
    method: r.method,
    headers: { Accept: "application/json", ...(r.contentType ? { "Content-Type": r.contentType } : {}) },
  };
  await kc.applyToHTTPSOptions(opts);
  r.signal?.throwIfAborted();
  const mod = url.protocol === "https:" ? https : http;
  return await new Promise((resolve, reject) => {
    const req = mod.request(url, { ...opts, signal: r.signal }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c) => text += c);
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
      res.on("error", reject);
    });
    const ms = r.timeoutMs;
    if (ms !== undefined) req.setTimeout(ms, () => req.destroy(new Error(`no answer in ${ms}ms`)));
    req.on("error", reject);
    req.end(r.body);
  });
}

/** The `message` of an API Status body, else the start of the body. */
export function apiMessage(text: string): string {
  try {
    return (JSON.parse(text) as { message?: string }).message ?? text.slice(0, 300);
  } catch {
    return text.slice(0, 300);
  }
}

/**
 * The trust-roots ConfigMap over the API server: a GET, and a JSON merge patch of `data` keys with the
 * read resourceVersion as precondition, under identity's own field manager. A merge patch names only
 * the keys identity writes, so it never takes ownership of `ca-bundle.crt`, and deploy's server-side
 * apply (which owns only that key) never removes identity's keys.
 */
import type { KubeConfig } from "@kubernetes/client-node";
import * as http from "node:http";
import * as https from "node:https";
import type { TrustRootsClient } from "./trust_roots_publisher.ts";

export const IDENTITY_FIELD_MANAGER = "weft-identity";

export class KubeTrustRootsClient implements TrustRootsClient {
  readonly #path: string;

  constructor(
    private readonly kc: KubeConfig,
    namespace: string,
    name: string,
    private readonly timeoutMs = 10_000,
  ) {
    this.#path = `/api/v1/namespaces/${namespace}/configmaps/${name}`;
  }

  async get(): Promise<{ data: Record<string, string>; resourceVersion?: string } | undefined> {
    const r = await this.#request("GET");
    if (r.status === 404) return undefined;
    if (r.status !== 200) throw new Error(`GET ${this.#path}: HTTP ${r.status}: ${message(r.text)}`);
    const cm = JSON.parse(r.text) as {
      data?: Record<string, string>;
      metadata?: { resourceVersion?: string };
    };
    return { data: cm.data ?? {}, resourceVersion: cm.metadata?.resourceVersion };
  }

  async patch(data: Record<string, string>, resourceVersion?: string): Promise<void> {
    const body = JSON.stringify({ ...(resourceVersion ? { metadata: { resourceVersion } } : {}), data });
    const r = await this.#request("PATCH", body);
    if (r.status >= 300) throw new Error(`PATCH ${this.#path}: HTTP ${r.status}: ${message(r.text)}`);
  }

  async #request(method: string, body?: string): Promise<{ status: number; text: string }> {
    const cluster = this.kc.getCurrentCluster();
    if (!cluster) throw new Error("kubeconfig has no current cluster");
    const url = new URL(`${cluster.server.replace(/\/$/, "")}${this.#path}`);
    if (body !== undefined) url.searchParams.set("fieldManager", IDENTITY_FIELD_MANAGER);
    const opts: https.RequestOptions = {
      method,
      headers: {
        Accept: "application/json",
        ...(body !== undefined ? { "Content-Type": "application/merge-patch+json" } : {}),
      },
    };
    await this.kc.applyToHTTPSOptions(opts);
    const mod = url.protocol === "https:" ? https : http;
    return await new Promise((resolve, reject) => {
      const req = mod.request(url, opts, (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c) => text += c);
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
        res.on("error", reject);
      });
      req.setTimeout(this.timeoutMs, () => req.destroy(new Error(`no answer in ${this.timeoutMs}ms`)));
      req.on("error", reject);
      req.end(body);
    });
  }
}

function message(text: string): string {
  try {
    return (JSON.parse(text) as { message?: string }).message ?? text.slice(0, 300);
  } catch {
    return text.slice(0, 300);
  }
}

/**
 * The trust-roots ConfigMap over the API server: a GET, and a JSON merge patch of `data` keys with the
 * read resourceVersion as precondition, under identity's own field manager. A merge patch names only
 * the keys identity writes, so it never takes ownership of `ca-bundle.crt`, and deploy's server-side
 * apply (which owns only that key) never removes identity's keys.
 */
import type { KubeConfig } from "@kubernetes/client-node";
import { apiMessage, kubeRequest } from "../k8s/raw_request.ts";
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
    if (r.status !== 200) throw new Error(`GET ${this.#path}: HTTP ${r.status}: ${apiMessage(r.text)}`);
    const cm = JSON.parse(r.text) as {
      data?: Record<string, string>;
      metadata?: { resourceVersion?: string };
    };
    return { data: cm.data ?? {}, resourceVersion: cm.metadata?.resourceVersion };
  }

  async patch(data: Record<string, string>, resourceVersion?: string): Promise<void> {
    const body = JSON.stringify({ ...(resourceVersion ? { metadata: { resourceVersion } } : {}), data });
    const r = await this.#request("PATCH", body);
    if (r.status >= 300) throw new Error(`PATCH ${this.#path}: HTTP ${r.status}: ${apiMessage(r.text)}`);
  }

  #request(method: string, body?: string) {
    return kubeRequest(this.kc, {
      method,
      path: this.#path,
      fieldManager: IDENTITY_FIELD_MANAGER,
      timeoutMs: this.timeoutMs,
      ...(body !== undefined ? { body, contentType: "application/merge-patch+json" } : {}),
    });
  }
}

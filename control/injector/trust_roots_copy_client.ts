/**
 * The API calls of the trust-roots copier: read the source ConfigMap, list the copies (by name,
 * across namespaces, so RBAC can name the one ConfigMap), create one, merge-patch one's data.
 * Plain HTTP through the kubeconfig's credentials, with the injector's own field manager.
 */
import type { KubeConfig } from "@kubernetes/client-node";
import { apiMessage, kubeRequest } from "../k8s/raw_request.ts";
import {
  TRUST_ROOTS_CONFIGMAP,
  TRUST_ROOTS_COPY_CONFIGMAP,
  TRUST_ROOTS_COPY_LABEL,
} from "../../proto/trust_roots.ts";
import type { TrustRootsCopyApi } from "./trust_roots_copy.ts";

export const INJECTOR_FIELD_MANAGER = "weft-proxy-injector";

/** On each copy: the source it was copied from (`<namespace>/<name>`). */
export const COPIED_FROM_ANNOTATION = "weft.io/copied-from";

interface ConfigMap {
  metadata?: { namespace?: string; annotations?: Record<string, string> };
  data?: Record<string, string>;
}

export class KubeTrustRootsCopyApi implements TrustRootsCopyApi {
  constructor(
    private readonly kc: KubeConfig,
    private readonly controlPlaneNamespace: string,
    private readonly timeoutMs = 10_000,
  ) {}

  async readSource(): Promise<Record<string, string> | undefined> {
    const path = `/api/v1/namespaces/${this.controlPlaneNamespace}/configmaps/${TRUST_ROOTS_CONFIGMAP}`;
    const r = await this.#request("GET", path);
    if (r.status === 404) return undefined;
    if (r.status !== 200) throw new Error(`GET ${path}: HTTP ${r.status}: ${apiMessage(r.text)}`);
    return (JSON.parse(r.text) as ConfigMap).data ?? {};
  }

  async listCopies(): Promise<{ namespace: string; data: Record<string, string> }[]> {
    const path = `/api/v1/configmaps?fieldSelector=metadata.name%3D${TRUST_ROOTS_COPY_CONFIGMAP}`;
    const r = await this.#request("GET", path);
    if (r.status !== 200) throw new Error(`GET ${path}: HTTP ${r.status}: ${apiMessage(r.text)}`);
    const list = JSON.parse(r.text) as { items?: ConfigMap[] };
    // Only the copies of this control plane's source: another control plane's (a second mesh, a test's) are
    // its own to keep, and syncing both would have them overwrite each other's copies in turn.
    const mine = `${this.controlPlaneNamespace}/${TRUST_ROOTS_CONFIGMAP}`;
    return (list.items ?? [])
      .filter((cm) => (cm.metadata?.annotations?.[COPIED_FROM_ANNOTATION] ?? mine) === mine)
      .map((cm) => ({ namespace: cm.metadata?.namespace ?? "", data: cm.data ?? {} }));
  }

  async create(namespace: string, data: Record<string, string>): Promise<"created" | "exists"> {
    const path = `/api/v1/namespaces/${namespace}/configmaps`;
    const body = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: {
        name: TRUST_ROOTS_COPY_CONFIGMAP,
        namespace,
        labels: { [TRUST_ROOTS_COPY_LABEL]: "true" },
        annotations: {
          [COPIED_FROM_ANNOTATION]: `${this.controlPlaneNamespace}/${TRUST_ROOTS_CONFIGMAP}`,
        },
      },
      data,
    };
    const r = await this.#request("POST", path, JSON.stringify(body), "application/json");
    if (r.status === 409) return "exists";
    if (r.status >= 300) throw new Error(`POST ${path}: HTTP ${r.status}: ${apiMessage(r.text)}`);
    return "created";
  }

  async patch(namespace: string, data: Record<string, string | null>): Promise<void> {
    const path = `/api/v1/namespaces/${namespace}/configmaps/${TRUST_ROOTS_COPY_CONFIGMAP}`;
    const r = await this.#request("PATCH", path, JSON.stringify({ data }), "application/merge-patch+json");
    // Deleted since it was listed (its namespace is going away): nothing left to keep equal.
    if (r.status === 404) return;
    if (r.status >= 300) throw new Error(`PATCH ${path}: HTTP ${r.status}: ${apiMessage(r.text)}`);
  }

  #request(method: string, path: string, body?: string, contentType?: string) {
    return kubeRequest(this.kc, {
      method,
      path,
      body,
      contentType,
      fieldManager: INJECTOR_FIELD_MANAGER,
      timeoutMs: this.timeoutMs,
    });
  }
}

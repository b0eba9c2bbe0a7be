/**
 * `RotationCluster` over the API server: the trust-roots ConfigMap and the issuer Secret (read, and written
 * with a JSON merge patch carrying the resourceVersion read, so a concurrent change is a conflict, not lost),
 * and the views of every running meshed pod's proxy and of the identity controller, read from their admin
 * `/metrics` through the API server's pod proxy (so it works wherever the kubeconfig does).
 */
import { PROXY_CONTAINER } from "../../control/injector/decision.ts";
import { Ports } from "../../proto/ports.ts";
import type { Pair } from "../certs.ts";
import { type Obj, podContainers, secretPair } from "../check/objects.ts";
import { type Kube, KubeError } from "../kube.ts";
import { ISSUER_SECRET, NAMESPACE, TRUST_ROOTS_CONFIGMAP } from "../render.ts";
import { identityView, proxyView, type View } from "./observe.ts";
import { ConflictError, type IssuerSecret, type RotationCluster, type TrustRoots } from "./steps.ts";

export const FIELD_MANAGER = "weft-rotate";
const PARALLEL = 6;

function b64(s: string): string {
  const bytes = new TextEncoder().encode(s);
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin);
}

/** Who else manages an issuer Secret, from cert-manager's annotations. */
export function managedBy(s: Obj): string | undefined {
  const a = s?.metadata?.annotations ?? {};
  const cert = a["cert-manager.io/certificate-name"];
  return cert ? `cert-manager Certificate ${s.metadata.namespace}/${cert}` : undefined;
}

async function pool<T, R>(items: T[], n: number, fn: (t: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  }));
  return out;
}

export class KubeRotationCluster implements RotationCluster {
  readonly trustRootsName: string;
  readonly issuerSecretName: string;
  readonly #cmPath: string;
  readonly #secretPath: string;

  constructor(readonly kube: Kube, readonly namespace = NAMESPACE) {
    this.trustRootsName = `${namespace}/${TRUST_ROOTS_CONFIGMAP}`;
    this.issuerSecretName = `${namespace}/${ISSUER_SECRET}`;
    this.#cmPath = `/api/v1/namespaces/${namespace}/configmaps/${TRUST_ROOTS_CONFIGMAP}`;
    this.#secretPath = `/api/v1/namespaces/${namespace}/secrets/${ISSUER_SECRET}`;
  }

  async readTrustRoots(): Promise<TrustRoots | undefined> {
    const cm = await this.kube.get<Obj>(this.#cmPath);
    return cm ? { data: cm.data ?? {}, version: cm.metadata.resourceVersion } : undefined;
  }

  async #patch(path: string, body: unknown): Promise<void> {
    try {
      await this.kube.json("PATCH", path, {
        body: JSON.stringify(body),
        contentType: "application/merge-patch+json",
        query: { fieldManager: FIELD_MANAGER },
      });
    } catch (e) {
      if (e instanceof KubeError && e.status === 409) throw new ConflictError(e.message);
      throw e;
    }
  }

  async writeTrustRoots(data: Record<string, string>, version: string): Promise<void> {
    await this.#patch(this.#cmPath, { metadata: { resourceVersion: version }, data });
  }

  async readIssuer(): Promise<IssuerSecret | undefined> {
    const s = await this.kube.get<Obj>(this.#secretPath);
    if (!s) return undefined;
    const linkerd = secretPair(s, "crt.pem", "key.pem");
    const tls = secretPair(s, "tls.crt", "tls.key");
    const pair = linkerd ?? tls;
    if (!pair) return undefined;
    const by = managedBy(s);
    return {
      pair,
      format: linkerd ? "crt.pem" : "tls.crt",
      version: s.metadata.resourceVersion,
      ...(by ? { managedBy: by } : {}),
    };
  }

  async writeIssuer(pair: Pair, format: IssuerSecret["format"], version: string): Promise<void> {
    const [crt, key] = format === "crt.pem" ? ["crt.pem", "key.pem"] : ["tls.crt", "tls.key"];
    await this.#patch(this.#secretPath, {
      metadata: { resourceVersion: version },
      data: { [crt]: b64(pair.certPem), [key]: b64(pair.keyPem) },
    });
  }

  async views(): Promise<View[]> {
    const meshed = (await this.kube.list<Obj>("/api/v1/pods", {
      labelSelector: `linkerd.io/control-plane-ns=${this.namespace}`,
    })).filter((p) =>
      p.status?.phase === "Running" && !p.metadata.deletionTimestamp &&
      podContainers(p).spec.some((c: Obj) => c.name === PROXY_CONTAINER)
    );
    const identity = meshed.filter((p) =>
      p.metadata.namespace === this.namespace &&
      p.metadata.labels?.["linkerd.io/control-plane-component"] === "identity"
    );
    const jobs: { pod: Obj; kind: View["kind"] }[] = [
      ...meshed.map((pod) => ({ pod, kind: "proxy" as const })),
      ...identity.map((pod) => ({ pod, kind: "identity" as const })),
    ];
    return await pool(jobs, PARALLEL, async ({ pod, kind }) => {
      const ns = pod.metadata.namespace, name = pod.metadata.name;
      const label = `${ns}/${name}${kind === "identity" ? " (identity)" : ""}`;
      const port = kind === "identity" ? Ports.identityAdmin : Ports.proxyAdmin;
      try {
        const r = await this.kube.podProxy(ns, name, port, "/metrics");
        if (r.status !== 200) return { name: label, kind, error: `/metrics on :${port}: HTTP ${r.status}` };
        return kind === "identity" ? identityView(label, r.text) : proxyView(label, r.text);
      } catch (e) {
        return { name: label, kind, error: `/metrics on :${port}: ${(e as Error).message}` };
      }
    });
  }
}

/**
 * `RotationCluster` over the API server: the trust-roots ConfigMap and the issuer Secret (read, and written
 * with a JSON merge patch carrying the resourceVersion read, so a concurrent change is a conflict, not lost),
 * and the views of every running meshed pod's proxy and of the identity controller, read from their admin
 * `/metrics` through the API server's pod proxy (`readRotationState`, which mesh:check prints too).
 */
import type { Pair } from "../certs.ts";
import { type Obj, secretPair } from "../check/objects.ts";
import { readRotationState } from "../check/rotation_state.ts";
import { type Kube, KubeError } from "../kube.ts";
import { ISSUER_SECRET, NAMESPACE, TRUST_ROOTS_CONFIGMAP } from "../render.ts";
import { type View, viewOf } from "./observe.ts";
import { ConflictError, type IssuerSecret, type RotationCluster, type TrustRoots } from "./steps.ts";

export const FIELD_MANAGER = "weft-rotate";

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
    return (await readRotationState(this.kube)).pods.map(viewOf);
  }
}

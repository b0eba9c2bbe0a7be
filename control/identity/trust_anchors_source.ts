/**
 * The trust anchors, live: the trust-roots ConfigMap watched through the shared informer (one object,
 * selected by name). Every change to `ca-bundle.crt` is parsed; a bundle that does not parse (or is
 * empty, or the ConfigMap was deleted) is reported and the anchors in use stay. Every change to the
 * ConfigMap at all is also passed on (the trust-roots publisher reconciles its keys on it).
 */
import { type EventSource, Informer, type KubeObject } from "../k8s/mod.ts";
import { IssuerError, TrustAnchors } from "./issuer.ts";

export interface ConfigMapObject extends KubeObject {
  data?: Record<string, string>;
}

/** The anchors of `key` in `cm`; throws an IssuerError naming what is wrong. */
export function anchorsFromConfigMap(cm: ConfigMapObject, key: string): TrustAnchors {
  const what = `configmap ${cm.metadata.namespace}/${cm.metadata.name} key ${key}`;
  const pem = cm.data?.[key];
  if (!pem?.trim()) throw new IssuerError(`${what} is empty or missing`);
  try {
    return TrustAnchors.parse(pem);
  } catch (e) {
    throw new IssuerError(`${what}: ${(e as Error).message}`);
  }
}

export interface AnchorsHandlers {
  /** A bundle that parsed and differs from the previous one. */
  onAnchors(anchors: TrustAnchors, origin: string): void;
  /** A bundle refused (the previous stays). */
  onError(message: string): void;
  /** Any add or update of the ConfigMap. */
  onConfigMap?(cm: ConfigMapObject): void;
}

export class ConfigMapAnchorsSource {
  constructor(
    private readonly source: EventSource<ConfigMapObject>,
    readonly namespace: string,
    readonly name: string,
    readonly key: string,
    private readonly log: (line: string) => void = () => {},
  ) {}

  run(h: AnchorsHandlers, signal: AbortSignal): Promise<void> {
    const informer = new Informer<ConfigMapObject>({
      name: "identity_trust_roots_configmap",
      source: this.source,
      log: this.log,
    });
    let last: string | undefined;
    const deliver = (cm: ConfigMapObject) => {
      if (cm.metadata.name !== this.name || cm.metadata.namespace !== this.namespace) return;
      h.onConfigMap?.(cm);
      const pem = cm.data?.[this.key];
      if (pem === last) return;
      try {
        const anchors = anchorsFromConfigMap(cm, this.key);
        last = pem;
        h.onAnchors(
          anchors,
          `configmap ${this.namespace}/${this.name}@${cm.metadata.resourceVersion ?? "?"}`,
        );
      } catch (e) {
        h.onError(`${(e as Error).message}; keeping the current trust anchors`);
      }
    };
    informer.onAdd(deliver);
    informer.onUpdate((_old, cm) => deliver(cm));
    informer.onDelete(() =>
      h.onError(`configmap ${this.namespace}/${this.name} was deleted; keeping the current trust anchors`)
    );
    return informer.start(signal);
  }
}

/**
 * Where issuer material comes from: the `linkerd-identity-issuer` Secret, watched through the
 * shared informer (a single object, selected by name), or a directory such as the Secret's
 * volume mount. Either way, every change is handed to `onMaterial`, which must not block.
 */
import { type EventSource, Informer, type KubeObject } from "../k8s/mod.ts";
import type { IssuerMaterial } from "./issuer.ts";

export interface SecretObject extends KubeObject {
  type?: string;
  /** base64 values, as the API returns them. */
  data?: Record<string, string>;
}

/** The key pairs accepted for the issuer certificate and key, in order of preference. */
const KEY_PAIRS: [string, string][] = [["tls.crt", "tls.key"], ["crt.pem", "key.pem"]];

export class IssuerSourceError extends Error {
  override name = "IssuerSourceError";
}

/** Picks the issuer certificate and key out of a Secret's (decoded) data. */
export function materialFromData(
  data: Record<string, string | undefined>,
  origin: string,
): IssuerMaterial {
  for (const [crt, key] of KEY_PAIRS) {
    const certPem = data[crt];
    const keyPem = data[key];
    // cert-manager also writes the CA that signed the issuer as `ca.crt`.
    const caPem = data["ca.crt"];
    if (certPem && keyPem) return { certPem, keyPem, origin, ...(caPem ? { caPem } : {}) };
    if (certPem || keyPem) {
      throw new IssuerSourceError(`${origin}: has "${certPem ? crt : key}" but not "${certPem ? key : crt}"`);
    }
  }
  throw new IssuerSourceError(
    `${origin}: has none of the keys ${KEY_PAIRS.map((p) => p.join("+")).join(" or ")} ` +
      `(keys present: ${Object.keys(data).join(", ") || "none"})`,
  );
}

function decodeSecret(secret: SecretObject): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(secret.data ?? {})) out[k] = new TextDecoder().decode(base64Decode(v));
  return out;
}

function base64Decode(s: string): Uint8Array {
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

export interface IssuerSource {
  /** Delivers material until `signal` aborts; `onError` gets unusable updates (the source keeps going). */
  run(
    onMaterial: (m: IssuerMaterial) => void,
    onError: (message: string) => void,
    signal: AbortSignal,
  ): Promise<void>;
}

/** Watches one Secret through an informer over `source` (a KubeApiSource with a name selector). */
export class SecretIssuerSource implements IssuerSource {
  constructor(
    private readonly source: EventSource<SecretObject>,
    readonly namespace: string,
    readonly name: string,
    private readonly log: (line: string) => void = () => {},
  ) {}

  run(
    onMaterial: (m: IssuerMaterial) => void,
    onError: (message: string) => void,
    signal: AbortSignal,
  ): Promise<void> {
    const informer = new Informer<SecretObject>({
      name: "identity_issuer_secret",
      source: this.source,
      log: this.log,
    });
    const deliver = (s: SecretObject) => {
      if (s.metadata.name !== this.name || s.metadata.namespace !== this.namespace) return;
      const origin = `secret ${this.namespace}/${this.name}@${s.metadata.resourceVersion ?? "?"}`;
      try {
        onMaterial(materialFromData(decodeSecret(s), origin));
      } catch (e) {
        onError((e as Error).message);
      }
    };
    informer.onAdd(deliver);
    informer.onUpdate((_old, s) => deliver(s));
    informer.onDelete(() =>
      onError(`secret ${this.namespace}/${this.name} was deleted; keeping the current issuer`)
    );
    return informer.start(signal);
  }
}

/**
 * Reads the issuer from a directory (a mounted Secret: the kubelet swaps a `..data` symlink, so
 * the whole directory is watched and re-read on any change).
 */
export class DirectoryIssuerSource implements IssuerSource {
  constructor(readonly dir: string, private readonly debounceMs = 200) {}

  async #read(): Promise<IssuerMaterial> {
    const data: Record<string, string | undefined> = {};
    for (const pair of [...KEY_PAIRS, ["ca.crt"]]) {
      for (const name of pair) {
        data[name] = await Deno.readTextFile(`${this.dir}/${name}`).catch(() => undefined);
      }
    }
    const present = Object.fromEntries(Object.entries(data).filter(([, v]) => v !== undefined));
    return materialFromData(present, `directory ${this.dir}`);
  }

  async run(
    onMaterial: (m: IssuerMaterial) => void,
    onError: (message: string) => void,
    signal: AbortSignal,
  ): Promise<void> {
    let last = "";
    const load = async () => {
      try {
        const m = await this.#read();
        const key = m.certPem + "\0" + m.keyPem;
        if (key === last) return;
        last = key;
        onMaterial(m);
      } catch (e) {
        onError((e as Error).message);
      }
    };
    await load();
    if (signal.aborted) return;
    const watcher = Deno.watchFs(this.dir, { recursive: true });
    signal.addEventListener("abort", () => watcher.close(), { once: true });
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      for await (const _ of watcher) {
        // Writers replace files in several steps; read once they are done.
        clearTimeout(timer);
        timer = setTimeout(load, this.debounceMs);
      }
    } catch (e) {
      if (!signal.aborted) throw e;
    } finally {
      clearTimeout(timer);
    }
  }
}

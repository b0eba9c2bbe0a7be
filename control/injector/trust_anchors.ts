/**
 * The trust anchors every injected proxy gets (LINKERD2_PROXY_IDENTITY_TRUST_ANCHORS), read from
 * a file (the trust-roots ConfigMap mounted as a volume). The file is re-read while the injector
 * runs, so pods created after an anchor rotation get the new bundle without an injector restart;
 * pods already running keep what they were injected with, as in Linkerd.
 */
import { X509Certificate } from "node:crypto";

export class TrustAnchorsError extends Error {
  override name = "TrustAnchorsError";
}

export interface TrustAnchors {
  pem: string;
  certs: { subject: string; notAfter: Date }[];
}

const BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

/** Parses a PEM bundle; throws TrustAnchorsError naming `origin` when it holds no usable certificate. */
export function parseTrustAnchors(pem: string, origin: string): TrustAnchors {
  const blocks = pem.match(BLOCK) ?? [];
  if (blocks.length === 0) throw new TrustAnchorsError(`${origin} holds no PEM CERTIFICATE block`);
  const certs = blocks.map((b, i) => {
    try {
      const c = new X509Certificate(b);
      return { subject: c.subject.replaceAll("\n", ", "), notAfter: new Date(c.validTo) };
    } catch (e) {
      throw new TrustAnchorsError(`${origin}: certificate #${i + 1} does not parse: ${(e as Error).message}`);
    }
  });
  return { pem: pem.endsWith("\n") ? pem : `${pem}\n`, certs };
}

export async function readTrustAnchors(file: string): Promise<TrustAnchors> {
  let text: string;
  try {
    text = await Deno.readTextFile(file);
  } catch (e) {
    throw new TrustAnchorsError(`cannot read trust anchors ${file}: ${(e as Error).message}`);
  }
  return parseTrustAnchors(text, file);
}

/**
 * Polls `file` and calls `onChange` with a new valid bundle. A bundle that does not parse keeps
 * the current one and is reported once through `log`.
 */
export function watchTrustAnchors(opts: {
  file: string;
  current: TrustAnchors;
  intervalMs: number;
  onChange: (a: TrustAnchors) => void;
  log: (m: string) => void;
  signal: AbortSignal;
}): void {
  let current = opts.current.pem;
  let lastError = "";
  let busy = false;
  const timer = setInterval(async () => {
    if (busy) return;
    busy = true;
    try {
      const next = await readTrustAnchors(opts.file);
      lastError = "";
      if (next.pem === current) return;
      current = next.pem;
      opts.log(`trust anchors changed: ${describe(next)}`);
      opts.onChange(next);
    } catch (e) {
      const m = (e as Error).message;
      if (m !== lastError) opts.log(`${m}; keeping the current trust anchors`);
      lastError = m;
    } finally {
      busy = false;
    }
  }, opts.intervalMs);
  opts.signal.addEventListener("abort", () => clearInterval(timer), { once: true });
}

export function describe(a: TrustAnchors): string {
  return a.certs.map((c) => `"${c.subject}" until ${c.notAfter.toISOString()}`).join(", ");
}

/**
 * HTTPS server for admission webhooks. The serving certificate is re-read when its files change
 * and swapped into the running server, so a rotated certificate never needs a restart and no
 * request is dropped. Bodies are size-limited; malformed JSON gets a 400 naming the problem.
 *
 * Change detection compares the files' contents, not their mtimes: a Secret mounted as a volume
 * is updated by the kubelet swapping a `..data` symlink to a new directory, and the new files may
 * carry any timestamp. A new pair is validated (certificate parses, key matches it) before it is
 * used, because `setSecureContext` accepts anything and a bad pair would only fail handshakes.
 */
import { createPrivateKey, X509Certificate } from "node:crypto";
import https from "node:https";
import type { IncomingMessage, ServerResponse } from "node:http";
import { Counter, Gauge, type Registry } from "prom-client";

export type JsonHandler = (path: string, body: unknown) => Promise<{ status: number; body: unknown }>;

export interface WebhookServerOptions {
  hostname: string;
  port: number;
  certFile: string;
  keyFile: string;
  handler: JsonHandler;
  signal: AbortSignal;
  /** How often to look for a new certificate. */
  reloadIntervalMs?: number;
  maxBodyBytes?: number;
  /** A request (headers and body) must arrive within this long. */
  requestTimeoutMs?: number;
  /** How long an idle keep-alive connection stays open; default 120 s. */
  keepAliveTimeoutMs?: number;
  log?: (msg: string) => void;
  /**
   * When given: `webhook_http_responses_total{path,code}` (paths outside `paths` count as
   * "other") and `webhook_serving_certificate_expiration_timestamp_seconds`.
   */
  registry?: Registry;
  paths?: string[];
}

export interface WebhookServer {
  port: number;
  /** Number of times a changed certificate was loaded. */
  reloads(): number;
  /** Looks at the certificate files now; true when a new pair was loaded. */
  checkCertificate(): Promise<boolean>;
  /** notAfter of the certificate being served. */
  certificateExpiry(): Date;
  closed: Promise<void>;
}

export class CertificateError extends Error {
  override name = "CertificateError";
}

interface Pair {
  cert: string;
  key: string;
  notAfter: Date;
}

/** Reads and checks a certificate/key pair; throws CertificateError naming the file at fault. */
export async function loadCertificatePair(certFile: string, keyFile: string): Promise<Pair> {
  const read = (f: string) =>
    Deno.readTextFile(f).catch((e) => {
      throw new CertificateError(`cannot read ${f}: ${(e as Error).message}`);
    });
  const [cert, key] = await Promise.all([read(certFile), read(keyFile)]);
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(cert);
  } catch (e) {
    throw new CertificateError(`${certFile} does not hold a PEM certificate: ${(e as Error).message}`);
  }
  let matches: boolean;
  try {
    matches = leaf.checkPrivateKey(createPrivateKey(key));
  } catch (e) {
    throw new CertificateError(`${keyFile} does not hold a PEM private key: ${(e as Error).message}`);
  }
  if (!matches) {
    throw new CertificateError(`${keyFile} is not the private key of the certificate in ${certFile}`);
  }
  return { cert, key, notAfter: new Date(leaf.validTo) };
}

export async function serveWebhook(opts: WebhookServerOptions): Promise<WebhookServer> {
  const maxBody = opts.maxBodyBytes ?? 4 * 1024 * 1024;
  const log = opts.log ?? (() => {});
  const knownPaths = new Set(opts.paths ?? []);
  let current = await loadCertificatePair(opts.certFile, opts.keyFile);
  const responses = opts.registry
    ? new Counter({
      name: "webhook_http_responses_total",
      help: "HTTP responses of the admission webhook server, by path and status code.",
      labelNames: ["path", "code"],
      registers: [opts.registry],
    })
    : undefined;
  if (opts.registry) {
    new Gauge({
      name: "webhook_serving_certificate_expiration_timestamp_seconds",
      help: "notAfter of the webhook's serving certificate, in seconds since the epoch.",
      registers: [opts.registry],
      collect() {
        this.set(current.notAfter.getTime() / 1000);
      },
    });
  }

  const server = https.createServer({ cert: current.cert, key: current.key }, (req, res) => {
    handle(req, res).catch((e) => {
      log(`webhook: ${req.url}: ${e instanceof Error ? e.message : e}`);
      if (!res.headersSent) send(req, res, 500, { error: "internal error" });
    });
  });
  // Slow clients must not hold connections forever (the API server sends small bodies quickly).
  server.requestTimeout = opts.requestTimeoutMs ?? 30_000;
  server.headersTimeout = Math.min(server.requestTimeout, 10_000);
  // The API server keeps idle webhook connections for 90 s and does not retry a POST that meets a
  // connection closing under it (it reports "EOF"). Node's default of 5 s made the server the side
  // that closes, racing each reuse; outliving the client's idle timeout leaves closing to the client.
  server.keepAliveTimeout = opts.keepAliveTimeoutMs ?? 120_000;

  function send(req: IncomingMessage, res: ServerResponse, status: number, body: unknown, close = false) {
    const path = new URL(req.url ?? "/", "https://webhook").pathname;
    responses?.inc({ path: knownPaths.has(path) ? path : "other", code: String(status) });
    const text = JSON.stringify(body);
    const headers: Record<string, string | number> = {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(text),
    };
    if (close) headers.connection = "close";
    res.writeHead(status, headers);
    res.end(text);
  }

  function tooLarge(req: IncomingMessage, res: ServerResponse) {
    // The rest of the body is never read: answer, then drop the connection.
    res.once("finish", () => req.destroy());
    send(req, res, 413, { error: `request body exceeds ${maxBody} bytes` }, true);
  }

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const path = new URL(req.url ?? "/", "https://webhook").pathname;
    if (req.method === "GET" && (path === "/live" || path === "/ready")) {
      return send(req, res, 200, { ok: true });
    }
    if (req.method !== "POST") {
      return send(req, res, 405, { error: `method ${req.method} not allowed; use POST` });
    }
    const declared = Number(req.headers["content-length"] ?? "0");
    if (declared > maxBody) return tooLarge(req, res);
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > maxBody) return tooLarge(req, res);
      chunks.push(chunk as Buffer);
    }
    if (size === 0) return send(req, res, 400, { error: "request body is empty; want an AdmissionReview" });
    let body: unknown;
    try {
      body = JSON.parse(Buffer.concat(chunks, size).toString("utf8"));
    } catch (e) {
      return send(req, res, 400, { error: `request body is not JSON: ${(e as Error).message}` });
    }
    const out = await opts.handler(path, body);
    send(req, res, out.status, out.body);
  }

  let reloads = 0;
  let checking: Promise<boolean> | undefined;
  let lastError = "";
  const check = (): Promise<boolean> => {
    checking ??= (async () => {
      try {
        const next = await loadCertificatePair(opts.certFile, opts.keyFile);
        lastError = "";
        if (next.cert === current.cert && next.key === current.key) return false;
        server.setSecureContext({ cert: next.cert, key: next.key });
        current = next;
        reloads++;
        log(`webhook: serving certificate reloaded (valid until ${next.notAfter.toISOString()})`);
        return true;
      } catch (e) {
        // A half-updated pair or a bad file keeps the current certificate in use; said once per cause.
        const message = (e as Error).message;
        if (message !== lastError) {
          log(`webhook: certificate reload failed, keeping the current one: ${message}`);
        }
        lastError = message;
        return false;
      } finally {
        checking = undefined;
      }
    })();
    return checking;
  };
  const timer = setInterval(() => void check(), opts.reloadIntervalMs ?? 5000);

  let port: number;
  try {
    port = await new Promise<number>((resolve, reject) => {
      server.once("error", reject);
      server.listen(opts.port, opts.hostname, () => resolve((server.address() as { port: number }).port));
    });
  } catch (e) {
    clearInterval(timer);
    throw e;
  }
  const closed = new Promise<void>((resolve) => {
    const stop = () => {
      clearInterval(timer);
      server.close(() => resolve());
      server.closeAllConnections?.();
    };
    if (opts.signal.aborted) stop();
    else opts.signal.addEventListener("abort", stop, { once: true });
  });
  return {
    port,
    reloads: () => reloads,
    checkCertificate: check,
    certificateExpiry: () => current.notAfter,
    closed,
  };
}

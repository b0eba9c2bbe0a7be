/**
 * HTTPS server for admission webhooks. The serving certificate is re-read when its files change
 * and swapped into the running server, so a rotated certificate never needs a restart and no
 * request is dropped. Bodies are size-limited; malformed JSON gets a 400 naming the problem.
 */
import https from "node:https";
import type { IncomingMessage, ServerResponse } from "node:http";

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
  log?: (msg: string) => void;
}

export interface WebhookServer {
  port: number;
  /** Number of times a changed certificate was loaded. */
  reloads(): number;
  closed: Promise<void>;
}

async function readPair(certFile: string, keyFile: string) {
  const [cert, key] = await Promise.all([Deno.readTextFile(certFile), Deno.readTextFile(keyFile)]);
  return { cert, key };
}

async function stamp(certFile: string, keyFile: string): Promise<string> {
  const [a, b] = await Promise.all([Deno.stat(certFile), Deno.stat(keyFile)]);
  return `${a.mtime?.getTime()}:${a.size}:${b.mtime?.getTime()}:${b.size}`;
}

export async function serveWebhook(opts: WebhookServerOptions): Promise<WebhookServer> {
  const maxBody = opts.maxBodyBytes ?? 4 * 1024 * 1024;
  const log = opts.log ?? (() => {});
  let current = await stamp(opts.certFile, opts.keyFile);
  const server = https.createServer(await readPair(opts.certFile, opts.keyFile), (req, res) => {
    handle(req, res).catch((e) => {
      log(`webhook: ${req.url}: ${e instanceof Error ? e.message : e}`);
      if (!res.headersSent) send(res, 500, { error: "internal error" });
    });
  });

  function send(res: ServerResponse, status: number, body: unknown) {
    const text = JSON.stringify(body);
    res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
    res.end(text);
  }

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const path = new URL(req.url ?? "/", "https://webhook").pathname;
    if (req.method === "GET" && (path === "/live" || path === "/ready")) return send(res, 200, { ok: true });
    if (req.method !== "POST") return send(res, 405, { error: `method ${req.method} not allowed; use POST` });
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > maxBody) {
        send(res, 413, { error: `request body exceeds ${maxBody} bytes` });
        req.destroy();
        return;
      }
      chunks.push(chunk as Buffer);
    }
    let body: unknown;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch (e) {
      return send(res, 400, { error: `request body is not JSON: ${(e as Error).message}` });
    }
    const out = await opts.handler(path, body);
    send(res, out.status, out.body);
  }

  let reloads = 0;
  const timer = setInterval(async () => {
    try {
      const next = await stamp(opts.certFile, opts.keyFile);
      if (next === current) return;
      server.setSecureContext(await readPair(opts.certFile, opts.keyFile));
      current = next;
      reloads++;
      log("webhook: serving certificate reloaded");
    } catch (e) {
      // A half-written pair or a bad key keeps the old certificate in use.
      log(`webhook: certificate reload failed, keeping the current one: ${(e as Error).message}`);
    }
  }, opts.reloadIntervalMs ?? 5000);

  const port = await new Promise<number>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, opts.hostname, () => resolve((server.address() as { port: number }).port));
  });
  const closed = new Promise<void>((resolve) => {
    const stop = () => {
      clearInterval(timer);
      server.close(() => resolve());
      server.closeAllConnections?.();
    };
    if (opts.signal.aborted) stop();
    else opts.signal.addEventListener("abort", stop, { once: true });
  });
  return { port, reloads: () => reloads, closed };
}

/**
 * The HTTPS server of the validating webhooks: one path per handler (`/policy`, and later
 * `/serviceprofile`), AdmissionReview in and out. A handler that throws denies only that
 * request, with the error as the message; the server keeps serving.
 */
import { type AdmissionHandler, parseReview, reviewResponse } from "./admission.ts";

export interface WebhookServerOptions {
  hostname: string;
  port: number;
  /** PEM certificate chain and key the API server verifies (caBundle of the webhook configuration). */
  cert: string;
  key: string;
  handlers: Record<string, AdmissionHandler>;
  signal: AbortSignal;
  onListen?: (addr: Deno.NetAddr) => void;
  log?: (message: string) => void;
}

export function serveWebhook(opts: WebhookServerOptions): Deno.HttpServer<Deno.NetAddr> {
  const log = opts.log ?? ((m: string) => console.error(`validator: ${m}`));
  return Deno.serve({
    hostname: opts.hostname,
    port: opts.port,
    cert: opts.cert,
    key: opts.key,
    signal: opts.signal,
    onListen: (addr) => opts.onListen?.(addr),
  }, async (req) => {
    const path = new URL(req.url).pathname;
    const handler = opts.handlers[path];
    if (!handler) return new Response(`no admission handler at ${path}\n`, { status: 404 });
    if (req.method !== "POST") return new Response("use POST\n", { status: 405 });
    let review;
    try {
      review = parseReview(await req.json());
    } catch (e) {
      return new Response(`bad AdmissionReview: ${(e as Error).message}\n`, { status: 400 });
    }
    let decision;
    try {
      decision = await handler(review.request);
    } catch (e) {
      log(`${path}: handler failed for ${review.request.uid}: ${(e as Error).message}`);
      decision = { problems: [`validation failed: ${(e as Error).message}`] };
    }
    return Response.json(reviewResponse(review.request, decision));
  });
}

/**
 * The HTTPS server of the validating webhooks: one path per handler (`/policy`,
 * `/serviceprofile`), AdmissionReview in and out, on control/webhook's server (certificate
 * reloaded in place, body limits). A malformed review gets a 400 naming the problem; a handler
 * that throws denies only that request, with the error as the message; the server keeps serving.
 */
import { Counter, type Registry } from "prom-client";
import type { JsonHandler } from "../webhook/https_server.ts";
import { serveWebhook, type WebhookServer } from "../webhook/https_server.ts";
import { type AdmissionDecision, type AdmissionHandler, parseReview, reviewResponse } from "./admission.ts";

export interface ValidatorServerOptions {
  hostname: string;
  port: number;
  /** PEM files of the serving certificate (the caBundle of the webhook configurations verifies it). */
  certFile: string;
  keyFile: string;
  handlers: Record<string, AdmissionHandler>;
  signal: AbortSignal;
  registry?: Registry;
  reloadIntervalMs?: number;
  maxBodyBytes?: number;
  log?: (message: string) => void;
}

/** Routes AdmissionReviews to the handler of their path. */
export function admissionRouter(
  handlers: Record<string, AdmissionHandler>,
  opts: { log: (m: string) => void; registry?: Registry },
): JsonHandler {
  const decisions = opts.registry
    ? new Counter({
      name: "validator_admission_responses_total",
      help: "Admission reviews answered by the validating webhooks, by path and whether they were allowed.",
      labelNames: ["path", "allowed"],
      registers: [opts.registry],
    })
    : undefined;
  return async (path, body) => {
    const handler = Object.hasOwn(handlers, path) ? handlers[path] : undefined;
    if (!handler) {
      return {
        status: 404,
        body: { error: `no admission handler at ${path}; have ${Object.keys(handlers).join(", ")}` },
      };
    }
    let review;
    try {
      review = parseReview(body);
    } catch (e) {
      return { status: 400, body: { error: `bad AdmissionReview: ${(e as Error).message}` } };
    }
    let decision: AdmissionDecision;
    try {
      decision = await handler(review.request);
    } catch (e) {
      opts.log(`${path}: handler failed for ${review.request.uid}: ${(e as Error).message}`);
      decision = { problems: [`validation failed: ${(e as Error).message}`] };
    }
    decisions?.inc({ path, allowed: String(decision.problems.length === 0) });
    return { status: 200, body: reviewResponse(review.request, decision) };
  };
}

export function serveValidator(opts: ValidatorServerOptions): Promise<WebhookServer> {
  const log = opts.log ?? ((m: string) => console.error(`validator: ${m}`));
  return serveWebhook({
    hostname: opts.hostname,
    port: opts.port,
    certFile: opts.certFile,
    keyFile: opts.keyFile,
    signal: opts.signal,
    registry: opts.registry,
    paths: Object.keys(opts.handlers),
    reloadIntervalMs: opts.reloadIntervalMs,
    maxBodyBytes: opts.maxBodyBytes,
    log,
    handler: admissionRouter(opts.handlers, { log, registry: opts.registry }),
  });
}

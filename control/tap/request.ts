/**
 * The tap API's request (the JSON body a CLI POSTs) and the ObserveRequest each target proxy gets.
 * Pure: validation names the field that is wrong, so the HTTP layer can answer 400 with it.
 */
import { toHttpMethod } from "../../proto/http_method.ts";
import type { ObserveRequest, TapMatch } from "../../proto/tap_api.ts";

export type ResourceKind = "deployment" | "statefulset" | "daemonset" | "job" | "pod" | "namespace";

export interface ResourceRef {
  namespace: string;
  kind: ResourceKind;
  /** Empty for a namespace (the namespace itself). */
  name: string;
}

export interface TapRequest {
  target: ResourceRef;
  /** Only requests to this resource (outbound events whose destination labels name it). */
  to?: ResourceRef;
  pathPrefix?: string;
  method?: string;
  authority?: string;
  /** Requests per second admitted across all target pods (Linkerd's default 100). */
  maxRps: number;
  /** Requests to report before the tap ends; undefined: until the client leaves. */
  limit?: number;
}

export const DEFAULT_MAX_RPS = 100;
/** Far above any sensible tap; a larger value is a typo or an attempt to pin the proxies. */
export const MAX_RPS_CEILING = 10_000;
export const LIMIT_CEILING = 1_000_000;

export class TapRequestError extends Error {
  override name = "TapRequestError";
}

const KIND_ALIASES: Record<string, ResourceKind> = {
  deploy: "deployment",
  deployment: "deployment",
  deployments: "deployment",
  sts: "statefulset",
  statefulset: "statefulset",
  statefulsets: "statefulset",
  ds: "daemonset",
  daemonset: "daemonset",
  daemonsets: "daemonset",
  job: "job",
  jobs: "job",
  po: "pod",
  pod: "pod",
  pods: "pod",
  ns: "namespace",
  namespace: "namespace",
  namespaces: "namespace",
};

/** A Kubernetes object name (RFC 1123 subdomain, which covers namespaces and Deployments too). */
const NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

/** The resources a tap takes, as the messages list them. */
export const RESOURCE_USAGE = "deploy/NAME, sts/NAME, ds/NAME, job/NAME, pod/NAME or ns/NAME";

/**
 * `deploy/web`, `sts/db`, `ds/agent`, `job/migrate`, `pod/web-1`, `ns/emojivoto` (or `ns` alone with
 * `namespace`) → a reference.
 */
export function parseResource(text: string, namespace: string, field: string): ResourceRef {
  const [kindText, name, extra] = text.split("/");
  const kind = KIND_ALIASES[kindText?.toLowerCase() ?? ""];
  if (!kind || extra !== undefined) {
    throw new TapRequestError(
      `${field}: "${text}" is not a resource; use ${RESOURCE_USAGE}`,
    );
  }
  if (kind === "namespace") {
    const ns = name ?? namespace;
    checkName(ns, `${field} namespace`);
    return { namespace: ns, kind, name: "" };
  }
  if (name === undefined || name === "") {
    throw new TapRequestError(`${field}: "${text}" names no ${kind}; use ${kindText}/NAME`);
  }
  checkName(name, `${field} name`);
  checkName(namespace, `${field} namespace`);
  return { namespace, kind, name };
}

function checkName(name: string, field: string): void {
  if (!NAME.test(name)) throw new TapRequestError(`${field}: "${name}" is not a Kubernetes name`);
}

function optionalString(body: Record<string, unknown>, key: string, max = 1024): string | undefined {
  const v = body[key];
  if (v === undefined || v === null || v === "") return undefined;
  if (typeof v !== "string") throw new TapRequestError(`${key}: must be a string, got ${typeof v}`);
  if (v.length > max) throw new TapRequestError(`${key}: longer than ${max} characters`);
  return v;
}

function optionalPositive(body: Record<string, unknown>, key: string, ceiling: number): number | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !Number.isFinite(v) || v <= 0) {
    throw new TapRequestError(`${key}: must be a positive number, got ${JSON.stringify(v)}`);
  }
  if (v > ceiling) throw new TapRequestError(`${key}: ${v} is above the ceiling ${ceiling}`);
  return v;
}

/**
 * The request body: `{"namespace": "ns", "resource": "deploy/web", "toNamespace"?: "ns2", "to"?: "deploy/api",
 * "path"?: "/prefix", "method"?: "GET", "authority"?: "api:8080", "maxRps"?: 100, "limit"?: 10}`.
 */
export function parseTapRequest(body: unknown): TapRequest {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new TapRequestError("the body must be a JSON object");
  }
  const b = body as Record<string, unknown>;
  const known = new Set([
    "namespace",
    "resource",
    "to",
    "toNamespace",
    "path",
    "method",
    "authority",
    "maxRps",
    "limit",
  ]);
  for (const k of Object.keys(b)) {
    if (!known.has(k)) throw new TapRequestError(`${k}: unknown field (known: ${[...known].join(", ")})`);
  }
  const namespace = optionalString(b, "namespace", 253) ?? "default";
  const resource = optionalString(b, "resource", 300);
  if (!resource) throw new TapRequestError("resource: required, e.g. deploy/web");
  const target = parseResource(resource, namespace, "resource");
  const toText = optionalString(b, "to", 300);
  const to = toText
    ? parseResource(toText, optionalString(b, "toNamespace", 253) ?? namespace, "to")
    : undefined;
  const pathPrefix = optionalString(b, "path");
  if (pathPrefix !== undefined && !pathPrefix.startsWith("/")) {
    throw new TapRequestError(`path: "${pathPrefix}" must start with /`);
  }
  const method = optionalString(b, "method", 32);
  if (method !== undefined && !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(method)) {
    throw new TapRequestError(`method: "${method}" is not an HTTP method token`);
  }
  const authority = optionalString(b, "authority", 255);
  const maxRps = optionalPositive(b, "maxRps", MAX_RPS_CEILING) ?? DEFAULT_MAX_RPS;
  const limit = optionalPositive(b, "limit", LIMIT_CEILING);
  if (limit !== undefined && !Number.isInteger(limit)) {
    throw new TapRequestError(`limit: must be a whole number, got ${limit}`);
  }
  return {
    target,
    ...(to ? { to } : {}),
    ...(pathPrefix !== undefined ? { pathPrefix } : {}),
    ...(method !== undefined ? { method: method.toUpperCase() } : {}),
    ...(authority !== undefined ? { authority } : {}),
    maxRps,
    ...(limit !== undefined ? { limit } : {}),
  };
}

/**
 * The destination labels a proxy puts on an endpoint of this resource (Linkerd's label names, from
 * Destination's owner labels: a Job's is `k8s_job`, and a Job a CronJob created is labelled by the CronJob).
 */
function destinationLabels(to: ResourceRef): [string, string][] {
  const labels: [string, string][] = [["namespace", to.namespace]];
  if (to.kind !== "namespace") labels.push([to.kind === "job" ? "k8s_job" : to.kind, to.name]);
  return labels;
}

/** What each target proxy is asked for: every filter must hold (an empty `all` matches everything). */
export function observeRequest(req: TapRequest, perPodLimit: number): ObserveRequest {
  const matches: TapMatch[] = [];
  if (req.to) {
    for (const [key, value] of destinationLabels(req.to)) {
      matches.push({ match: { $case: "destinationLabel", value: { key, value } } });
    }
  }
  if (req.pathPrefix !== undefined) {
    matches.push({
      match: {
        $case: "http",
        value: { match: { $case: "path", value: { match: { $case: "prefix", value: req.pathPrefix } } } },
      },
    });
  }
  if (req.method !== undefined) {
    matches.push({
      match: { $case: "http", value: { match: { $case: "method", value: toHttpMethod(req.method) } } },
    });
  }
  if (req.authority !== undefined) {
    matches.push({
      match: {
        $case: "http",
        value: { match: { $case: "authority", value: { match: { $case: "exact", value: req.authority } } } },
      },
    });
  }
  return { limit: perPodLimit, match: { match: { $case: "all", value: { matches } } }, extract: undefined };
}

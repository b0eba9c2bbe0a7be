/**
 * Admission checks of `linkerd.io/v1alpha2 ServiceProfile`: the full schema (types, required
 * fields, unknown fields refused at every level, the recursive request and response matches that
 * the CRD's openAPI schema cannot express), compiled path regexes, retry budget ranges, durations,
 * dstOverrides authorities and weights, opaque ports, and the name form. Every problem starts with
 * the field path (`spec.routes[2].condition.pathRegex: ...`).
 *
 * Anything admitted is also run through the destination service's translation, so a profile that
 * passes here is one the destination can serve.
 */
import { anchorProfilePathRegex, rustRegexProblem } from "../../proto/rust_regex.ts";
import { parseQuantity, profileDuration, translateProfile } from "../destination/profile_translate.ts";
import type { ServiceProfile } from "../destination/k8s_types.ts";
import type { AdmissionDecision, AdmissionHandler, AdmissionRequest } from "./admission.ts";

export interface ServiceProfileValidatorOptions {
  clusterDomain: string;
}

type Obj = Record<string, unknown>;

const MAX_DEPTH = 32;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const HTTP_TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const KNOWN_METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"];

class Checker {
  readonly problems: string[] = [];
  readonly warnings: string[] = [];

  problem(path: string, message: string): void {
    this.problems.push(`${path || "object"}: ${message}`);
  }

  /** An object with only `allowed` keys; reports and returns undefined otherwise. */
  object(value: unknown, path: string, allowed: readonly string[]): Obj | undefined {
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      this.problem(path, `must be an object, got ${kindOf(value)}`);
      return undefined;
    }
    for (const k of Object.keys(value)) {
      if (!allowed.includes(k)) {
        this.problem(join(path, k), `unknown field; want one of ${allowed.join(", ")}`);
      }
    }
    return value as Obj;
  }

  list(value: unknown, path: string): unknown[] | undefined {
    if (!Array.isArray(value)) {
      this.problem(path, `must be a list, got ${kindOf(value)}`);
      return undefined;
    }
    return value;
  }

  bool(value: unknown, path: string): void {
    if (value !== undefined && typeof value !== "boolean") {
      this.problem(path, `must be true or false, got ${kindOf(value)}`);
    }
  }

  /** A Go duration the destination can translate; `positive` refuses zero. */
  duration(value: unknown, path: string): void {
    if (typeof value !== "string") {
      return this.problem(path, `must be a duration string such as "500ms", got ${kindOf(value)}`);
    }
    try {
      const d = profileDuration(value, path);
      if (d.seconds === 0n && d.nanos === 0) this.problem(path, `"${value}" must be greater than 0`);
    } catch (e) {
      this.problems.push((e as Error).message); // names the path already
    }
  }
}

function join(path: string, key: string): string {
  return path === "" ? key : `${path}.${key}`;
}

function kindOf(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "a list";
  if (typeof v === "object") return "an object";
  return `${typeof v} ${JSON.stringify(v)}`;
}

/**
 * Rust regex syntax, as the proxy evaluates it (the same dialect as the policy validator's route regexes),
 * checked in the anchored form the proxy compiles, so a pattern admitted here is one the proxy can use.
 */
function regexProblem(pattern: string): string | undefined {
  return rustRegexProblem(pattern) ?? rustRegexProblem(anchorProfilePathRegex(pattern));
}

function requestMatch(c: Checker, value: unknown, path: string, depth: number): void {
  const m = c.object(value, path, ["all", "any", "not", "pathRegex", "method"]);
  if (!m) return;
  if (depth > MAX_DEPTH) return c.problem(path, `matches are nested deeper than ${MAX_DEPTH} levels`);
  const set = ["all", "any", "not", "pathRegex", "method"].filter((k) => m[k] !== undefined);
  if (set.length === 0) {
    c.problem(path, "a request match must set at least one of all, any, not, pathRegex, method");
  }
  for (const k of ["all", "any"] as const) {
    if (m[k] === undefined) continue;
    const items = c.list(m[k], join(path, k));
    items?.forEach((x, i) => requestMatch(c, x, `${join(path, k)}[${i}]`, depth + 1));
  }
  if (m.not !== undefined) requestMatch(c, m.not, join(path, "not"), depth + 1);
  if (m.pathRegex !== undefined) {
    const p = join(path, "pathRegex");
    if (typeof m.pathRegex !== "string" || m.pathRegex === "") {
      c.problem(p, `must be a non-empty regular expression string, got ${kindOf(m.pathRegex)}`);
    } else {
      const why = regexProblem(m.pathRegex);
      if (why) c.problem(p, `invalid regular expression ${JSON.stringify(m.pathRegex)}: ${why}`);
    }
  }
  if (m.method !== undefined) {
    const p = join(path, "method");
    if (typeof m.method !== "string" || !HTTP_TOKEN.test(m.method)) {
      c.problem(p, `${kindOf(m.method)} is not an HTTP method such as GET or POST`);
    } else if (m.method !== m.method.toUpperCase() && KNOWN_METHODS.includes(m.method.toUpperCase())) {
      c.warnings.push(
        `${p}: "${m.method}" matches only requests whose method is exactly "${m.method}" (methods are case-sensitive); ` +
          `did you mean "${m.method.toUpperCase()}"?`,
      );
    }
  }
}

function statusCode(c: Checker, v: unknown, path: string): number | undefined {
  if (v === undefined || v === 0) return undefined; // 0 means unset, as Linkerd reads it
  if (typeof v !== "number" || !Number.isInteger(v) || v < 100 || v > 599) {
    c.problem(path, `${kindOf(v)} is not an HTTP status code in 100..599`);
    return undefined;
  }
  return v;
}

function responseMatch(c: Checker, value: unknown, path: string, depth: number): void {
  const m = c.object(value, path, ["all", "any", "not", "status"]);
  if (!m) return;
  if (depth > MAX_DEPTH) return c.problem(path, `matches are nested deeper than ${MAX_DEPTH} levels`);
  const set = ["all", "any", "not", "status"].filter((k) => m[k] !== undefined);
  if (set.length === 0) c.problem(path, "a response match must set at least one of all, any, not, status");
  for (const k of ["all", "any"] as const) {
    if (m[k] === undefined) continue;
    c.list(m[k], join(path, k))?.forEach((x, i) => responseMatch(c, x, `${join(path, k)}[${i}]`, depth + 1));
  }
  if (m.not !== undefined) responseMatch(c, m.not, join(path, "not"), depth + 1);
  if (m.status !== undefined) {
    const sp = join(path, "status");
    const s = c.object(m.status, sp, ["min", "max"]);
    if (!s) return;
    const min = statusCode(c, s.min, join(sp, "min"));
    const max = statusCode(c, s.max, join(sp, "max"));
    if (s.min === undefined && s.max === undefined) c.problem(sp, "set min, max or both");
    if (min !== undefined && max !== undefined && min > max) {
      c.problem(sp, `min ${min} is greater than max ${max}`);
    }
  }
}

function route(c: Checker, value: unknown, path: string): string | undefined {
  const r = c.object(value, path, ["name", "condition", "responseClasses", "isRetryable", "timeout"]);
  if (!r) return undefined;
  if (r.name === undefined) c.problem(join(path, "name"), "required");
  else if (typeof r.name !== "string" || r.name === "") {
    c.problem(join(path, "name"), `must be a non-empty string, got ${kindOf(r.name)}`);
  }
  if (r.condition === undefined) c.problem(join(path, "condition"), "required");
  else requestMatch(c, r.condition, join(path, "condition"), 0);
  if (r.responseClasses !== undefined) {
    c.list(r.responseClasses, join(path, "responseClasses"))?.forEach((rc, i) => {
      const rp = `${join(path, "responseClasses")}[${i}]`;
      const o = c.object(rc, rp, ["condition", "isFailure"]);
      if (!o) return;
      if (o.condition === undefined) c.problem(join(rp, "condition"), "required");
      else responseMatch(c, o.condition, join(rp, "condition"), 0);
      c.bool(o.isFailure, join(rp, "isFailure"));
    });
  }
  c.bool(r.isRetryable, join(path, "isRetryable"));
  if (r.timeout !== undefined) c.duration(r.timeout, join(path, "timeout"));
  return typeof r.name === "string" ? r.name : undefined;
}

function retryBudget(c: Checker, value: unknown, path: string): void {
  const b = c.object(value, path, ["retryRatio", "minRetriesPerSecond", "ttl"]);
  if (!b) return;
  for (const k of ["retryRatio", "minRetriesPerSecond", "ttl"]) {
    if (b[k] === undefined) c.problem(join(path, k), "required");
  }
  if (b.retryRatio !== undefined) {
    if (typeof b.retryRatio !== "number" || !Number.isFinite(b.retryRatio) || b.retryRatio < 0) {
      c.problem(join(path, "retryRatio"), `${kindOf(b.retryRatio)} is not a number >= 0`);
    }
  }
  if (b.minRetriesPerSecond !== undefined) {
    const v = b.minRetriesPerSecond;
    if (typeof v !== "number" || !Number.isInteger(v) || v < 0 || v > 0xffffffff) {
      c.problem(join(path, "minRetriesPerSecond"), `${kindOf(v)} is not an integer in 0..4294967295`);
    }
  }
  if (b.ttl !== undefined) c.duration(b.ttl, join(path, "ttl"));
}

function isIp(host: string): boolean {
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(host)) return host.split(".").every((o) => Number(o) <= 255);
  return /^\[[0-9a-fA-F:.]+\]$/.test(host);
}

function isDnsName(name: string): boolean {
  return name.length <= 253 && name.split(".").every((l) => l.length <= 63 && DNS_LABEL.test(l));
}

function dstOverrides(c: Checker, value: unknown, path: string): void {
  const list = c.list(value, path);
  if (!list) return;
  let total = 0;
  let allValid = true;
  list.forEach((d, i) => {
    const p = `${path}[${i}]`;
    const o = c.object(d, p, ["authority", "weight"]);
    if (!o) return void (allValid = false);
    if (o.authority === undefined) c.problem(join(p, "authority"), "required");
    else if (typeof o.authority !== "string") {
      c.problem(join(p, "authority"), `must be a string, got ${kindOf(o.authority)}`);
    } else {
      const m = /^(.*?)(?::(\d{1,5}))?$/.exec(o.authority)!;
      const host = m[1], port = m[2];
      if (
        !(isIp(host) || isDnsName(host)) || (port !== undefined && (Number(port) < 1 || Number(port) > 65535))
      ) {
        c.problem(
          join(p, "authority"),
          `"${o.authority}" is not <host>[:<port>], e.g. web-v2.shop.svc.cluster.local:8080`,
        );
      }
    }
    if (o.weight === undefined) {
      c.problem(join(p, "weight"), "required");
      return void (allValid = false);
    }
    let w: number | undefined;
    if (typeof o.weight === "number" || typeof o.weight === "string") {
      try {
        w = parseQuantity(o.weight);
      } catch {
        w = undefined;
      }
    }
    if (w === undefined || !Number.isFinite(w) || w < 0) {
      c.problem(
        join(p, "weight"),
        `${kindOf(o.weight)} is not a weight >= 0 (a number or a quantity such as "500m")`,
      );
      allValid = false;
    } else total += w;
  });
  if (allValid && list.length > 0 && total === 0) {
    c.problem(path, "every weight is 0, so no request could be routed");
  }
}

function opaquePorts(c: Checker, value: unknown, path: string): void {
  const portText = (v: unknown): boolean => {
    const s = typeof v === "number" ? String(v) : typeof v === "string" ? v.trim() : "";
    const m = /^(\d{1,5})(?:-(\d{1,5}))?$/.exec(s);
    if (!m) return false;
    const lo = Number(m[1]), hi = Number(m[2] ?? m[1]);
    return lo >= 1 && hi <= 65535 && lo <= hi;
  };
  if (Array.isArray(value)) {
    value.forEach((v, i) => {
      if (!portText(v)) c.problem(`${path}[${i}]`, `${kindOf(v)} is not a port or a range such as 8000-8080`);
    });
  } else if (typeof value === "object" && value !== null) {
    // Linkerd's own form: a map from port number to true.
    for (const [k, v] of Object.entries(value)) {
      if (!/^\d{1,5}$/.test(k) || !portText(k)) c.problem(join(path, k), `"${k}" is not a port in 1..65535`);
      else if (typeof v !== "boolean") c.problem(join(path, k), `must be true or false, got ${kindOf(v)}`);
    }
  } else c.problem(path, `must be a list of ports, got ${kindOf(value)}`);
}

// Linkerd's validator asks only that the name be a DNS-1123 subdomain; a name that is not
// <service>.<namespace>.svc.<domain> is admitted and simply never looked up.
function nameProblems(c: Checker, name: unknown, _clusterDomain: string): void {
  const path = "metadata.name";
  if (name === undefined || name === "") return c.problem(path, "required");
  if (typeof name !== "string") return c.problem(path, `must be a string, got ${kindOf(name)}`);
  if (!isDnsName(name)) {
    c.problem(
      path,
      `"${name}" is not a DNS subdomain (lowercase labels of letters, digits and '-', up to 253 characters)`,
    );
  }
}

/** Problems (and warnings) of a ServiceProfile object, each naming its field. */
export function serviceProfileProblems(
  obj: unknown,
  opts: ServiceProfileValidatorOptions,
): { problems: string[]; warnings: string[] } {
  const c = new Checker();
  const top = c.object(obj, "", ["apiVersion", "kind", "metadata", "spec"]);
  if (!top) return c;
  const meta = (typeof top.metadata === "object" && top.metadata !== null ? top.metadata : {}) as Obj;
  nameProblems(c, meta.name, opts.clusterDomain);
  if (top.spec === undefined) {
    c.problem("spec", "required");
    return c;
  }
  const spec = c.object(top.spec, "spec", ["routes", "retryBudget", "dstOverrides", "opaquePorts"]);
  if (!spec) return c;
  if (spec.routes !== undefined) {
    const seen = new Map<string, number>();
    c.list(spec.routes, "spec.routes")?.forEach((r, i) => {
      const name = route(c, r, `spec.routes[${i}]`);
      if (name === undefined) return;
      if (seen.has(name)) {
        c.warnings.push(
          `spec.routes[${i}].name: "${name}" is also the name of spec.routes[${seen.get(name)}]`,
        );
      } else seen.set(name, i);
    });
  }
  if (spec.retryBudget !== undefined) retryBudget(c, spec.retryBudget, "spec.retryBudget");
  if (spec.dstOverrides !== undefined) dstOverrides(c, spec.dstOverrides, "spec.dstOverrides");
  if (spec.opaquePorts !== undefined) opaquePorts(c, spec.opaquePorts, "spec.opaquePorts");
  if (c.problems.length === 0) {
    // Guard: what passes here must translate; a gap between the two is reported, not admitted.
    const translation: string[] = [];
    translateProfile(obj as ServiceProfile, String(meta.name), translation);
    for (const t of translation) c.problem("spec", `the destination service cannot use this profile: ${t}`);
  }
  return c;
}

export function serviceProfileAdmissionHandler(opts: ServiceProfileValidatorOptions): AdmissionHandler {
  return (req: AdmissionRequest): AdmissionDecision => {
    if (req.operation === "DELETE" || req.operation === "CONNECT") return { problems: [] };
    if (req.kind.group !== "linkerd.io" || req.kind.kind !== "ServiceProfile") {
      return { problems: [`kind: ${req.kind.group}/${req.kind.kind} is not a linkerd.io ServiceProfile`] };
    }
    const { problems, warnings } = serviceProfileProblems(req.object, opts);
    return warnings.length > 0 ? { problems, warnings } : { problems };
  };
}

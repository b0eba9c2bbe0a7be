/**
 * Admission of policy.linkerd.io HTTPLocalRateLimitPolicy, with Linkerd's rules: the target is a
 * Server; every limit is a whole number of requests per second in 1..2^32-1 (Linkerd reads it as a
 * u32 and refuses 0); no identity or override limit is above the total; override clients are
 * ServiceAccounts. Each problem starts with the field it is about.
 */
import { canonicalKind, isServerRef, isServiceAccountRef } from "../policy/ref_kind.ts";
import type { HttpLocalRateLimitPolicySpec, Obj, RateLimitLimit } from "../policy/resources.ts";

const MAX_RPS = 0xffff_ffff;

function rpsProblem(v: unknown, field: string): string | undefined {
  if (v === undefined) return `${field}: required`;
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0 || v > MAX_RPS) {
    return `${field}: ${JSON.stringify(v)} is not a whole number in 1..${MAX_RPS}`;
  }
  return v === 0 ? `${field}: must be greater than 0` : undefined;
}

function limitProblem(l: RateLimitLimit | undefined, field: string): string | undefined {
  if (l === undefined) return undefined;
  if (l === null || typeof l !== "object") return `${field}: must be an object with requestsPerSecond`;
  return rpsProblem(l.requestsPerSecond, `${field}.requestsPerSecond`);
}

export function rateLimitPolicyProblems(p: Obj<HttpLocalRateLimitPolicySpec>): string[] {
  const out: string[] = [];
  const spec = p.spec ?? {};
  const t = spec.targetRef;
  if (!t) out.push("spec.targetRef: required");
  else {
    if (!isServerRef(t)) {
      out.push(
        `spec.targetRef.kind: ${JSON.stringify(canonicalKind(t))} is not a Server (group policy.linkerd.io)`,
      );
    }
    if (!t.name) out.push("spec.targetRef.name: required");
  }
  const total = limitProblem(spec.total, "spec.total");
  if (total) out.push(total);
  const identity = limitProblem(spec.identity, "spec.identity");
  if (identity) out.push(identity);
  const cap = total === undefined ? spec.total?.requestsPerSecond : undefined;
  if (cap !== undefined && identity === undefined && spec.identity !== undefined) {
    if ((spec.identity.requestsPerSecond ?? 0) > cap) {
      out.push(
        `spec.identity.requestsPerSecond: ${spec.identity.requestsPerSecond} is above ` +
          `spec.total.requestsPerSecond (${cap})`,
      );
    }
  }
  if (spec.overrides !== undefined && !Array.isArray(spec.overrides)) {
    out.push("spec.overrides: must be a list");
  }
  (Array.isArray(spec.overrides) ? spec.overrides : []).forEach((o, i) => {
    const f = `spec.overrides[${i}]`;
    const rps = rpsProblem(o?.requestsPerSecond, `${f}.requestsPerSecond`);
    if (rps) out.push(rps);
    else if (cap !== undefined && (o.requestsPerSecond ?? 0) > cap) {
      out.push(
        `${f}.requestsPerSecond: ${o.requestsPerSecond} is above spec.total.requestsPerSecond (${cap})`,
      );
    }
    if (!Array.isArray(o?.clientRefs)) {
      out.push(`${f}.clientRefs: required (the ServiceAccounts the override applies to)`);
      return;
    }
    o.clientRefs.forEach((r, j) => {
      if (!isServiceAccountRef(r)) {
        out.push(`${f}.clientRefs[${j}].kind: ${JSON.stringify(canonicalKind(r))} is not a ServiceAccount`);
      }
      if (!r?.name) out.push(`${f}.clientRefs[${j}].name: required`);
    });
  });
  return out;
}

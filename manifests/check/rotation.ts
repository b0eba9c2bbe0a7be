/**
 * The `rotation` checks of `mesh:check` (issue 21): the anchors' and the issuer's expiry against their
 * own thresholds (fail under), then one line per meshed pod: which anchors its proxy trusts and which
 * issuer signed its leaf, `!` when it is behind the ConfigMap (mid-rotation, or stuck) or could not
 * be read.
 */
import { formatDuration } from "../../proto/go_duration.ts";
import type { CheckContext, CheckResult } from "./result.ts";
import { result } from "./result.ts";
import {
  type NamedCert,
  type PodRotationState,
  readRotationState,
  type RotationState,
} from "./rotation_state.ts";

const GROUP = "rotation";
const DAY = 86_400_000;

/** mesh:check's defaults (manifests/main.ts): 720h for anchors (rotated by hand: weeks of notice), 168h for
 * the issuer (renewed by deploy 90 days ahead, or by cert-manager). */
export interface RotationThresholds {
  anchorMs: number;
  issuerMs: number;
}

function left(c: NamedCert, now: number): string {
  const ms = (c.notAfter?.getTime() ?? now) - now;
  if (ms < 0) return `EXPIRED ${c.notAfter!.toISOString()}`;
  const days = Math.floor(ms / DAY);
  return `expires ${c.notAfter!.toISOString().slice(0, 10)} (in ${
    days >= 2 ? `${days}d` : formatDuration(Math.max(1000, Math.floor(ms / 1000) * 1000))
  })`;
}

function name(c: NamedCert): string {
  return `${c.fingerprint.slice(0, 12)} "${c.subject}"`;
}

function expiring(c: NamedCert, now: number, thresholdMs: number): boolean {
  return (c.notAfter?.getTime() ?? 0) - now < thresholdMs;
}

export function podLine(p: PodRotationState): CheckResult {
  const what = `${p.kind === "identity" ? "identity" : "pod"} ${p.namespace}/${p.name}`;
  const trusts = p.anchors ? `trusts ${p.anchors.map(name).join(", ")}` : "";
  const issuer = p.issuer ? `${p.kind === "proxy" ? "leaf from" : "signs with"} ${name(p.issuer)}` : "";
  const facts = [trusts, issuer].filter((x) => x).join("; ");
  if (p.status === "current") return result(GROUP, what, "ok", facts);
  return result(
    GROUP,
    what,
    "warn",
    `${p.status.toUpperCase()}: ${p.reasons.join("; ")}${facts ? ` (${facts})` : ""}`,
  );
}

/** The check lines for `state`. Pure. */
export function rotationResults(state: RotationState, t: RotationThresholds): CheckResult[] {
  const { now } = state;
  const out: CheckResult[] = [];
  const soon = state.anchors.filter((a) => expiring(a, now, t.anchorMs));
  out.push(result(
    GROUP,
    "trust anchors",
    state.anchors.length === 0 || soon.length ? "fail" : "ok",
    state.anchors.length === 0
      ? "none readable in the trust-roots ConfigMap"
      : `${state.anchors.map((a) => `${name(a)} ${left(a, now)}`).join("; ")}` +
        (soon.length
          ? `: ${soon.length} within --anchor-threshold=${
            formatDuration(t.anchorMs)
          }, rotate (docs/identity.md)`
          : ""),
  ));
  const current = state.publishedIssuers[0] ?? state.secretIssuer;
  const issuerProblems = [...state.problems];
  if (current && expiring(current, now, t.issuerMs)) {
    issuerProblems.push(`expires within --issuer-threshold=${formatDuration(t.issuerMs)}`);
  }
  out.push(result(
    GROUP,
    "issuer",
    !current || issuerProblems.length ? "fail" : "ok",
    (current ? `current ${name(current)} ${left(current, now)}` : "no issuer readable") +
      (state.publishedIssuers.length > 1
        ? `; also live: ${state.publishedIssuers.slice(1).map(name).join(", ")}`
        : "") +
      (state.renewBefore ? `; leaves from before ${state.renewBefore.toISOString()} renew early` : "") +
      (issuerProblems.length ? `: ${issuerProblems.join("; ")}` : ""),
  ));
  for (const p of state.pods) out.push(podLine(p));
  const behind = state.pods.filter((p) => p.status !== "current");
  out.push(result(
    GROUP,
    "summary",
    behind.length ? "warn" : "ok",
    behind.length
      ? `${behind.length} of ${state.pods.length} behind or unknown: ${
        behind.map((p) => `${p.namespace}/${p.name}`).join(", ")
      }`
      : `${state.pods.length} proxies and controllers trust exactly ca-bundle.crt and use the current issuer`,
  ));
  return out;
}

export async function checkRotation(ctx: CheckContext, t: RotationThresholds): Promise<CheckResult[]> {
  return rotationResults(await readRotationState(ctx.kube, { now: ctx.now }), t);
}

/** What one health check of `deno task mesh:check` reports, and how it is printed. */
import type { Kube } from "../kube.ts";

export type Outcome = "ok" | "warn" | "fail";
export interface CheckResult {
  group: string;
  name: string;
  outcome: Outcome;
  detail: string;
}

/** What every check reads: the cluster, the certificate threshold and one `now` for the whole run. */
export interface CheckContext {
  kube: Kube;
  /** Webhook certificates (and the identity ones when the two below are unset). */
  thresholdMs: number;
  /** Trust anchors and the identity issuer (issue 21: an issuer rotated by cert-manager lives days). */
  anchorThresholdMs?: number;
  issuerThresholdMs?: number;
  now: number;
}

const MARK: Record<Outcome, string> = { ok: "✓", warn: "!", fail: "✗" };
export function formatResult(r: CheckResult): string {
  return `${MARK[r.outcome]} ${r.group.padEnd(13)} ${r.name}: ${r.detail}`;
}

export function result(group: string, name: string, outcome: Outcome, detail: string): CheckResult {
  return { group, name, outcome, detail };
}

/** Runs one check; an error it throws (API unreachable, forbidden, …) is that check's failure. */
export async function guarded(
  group: string,
  name: string,
  check: () => Promise<CheckResult>,
): Promise<CheckResult> {
  try {
    return await check();
  } catch (e) {
    return result(group, name, "fail", (e as Error).message);
  }
}

/**
 * mesh:check's last line and exit code: 1 when any check failed, whatever its group (a warning alone exits 0,
 * as Linkerd's warnings do).
 */
export function checkOutcome(results: CheckResult[]): { code: number; line: string } {
  const failed = results.filter((r) => r.outcome === "fail").length;
  const warned = results.filter((r) => r.outcome === "warn").length;
  return failed ? { code: 1, line: `mesh:check: ${failed} of ${results.length} checks failed` } : {
    code: 0,
    line: `mesh:check: all ${results.length} checks passed${warned ? ` (${warned} warnings)` : ""}`,
  };
}

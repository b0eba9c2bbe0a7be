/**
 * Pods stuck in Terminating: deleted, past their grace period (plus some slack for the kubelet to report), and
 * still in the API. Pure, for `cluster:status` and `mesh:check`: neither should stay silent about them (issue
 * 16, where a hidden network-namespace mount kept pods Terminating for ever).
 */

// deno-lint-ignore no-explicit-any
type Obj = any;

export interface StuckPod {
  namespace: string;
  name: string;
  uid: string;
  /** Grace period the deletion asked for. */
  graceSeconds: number;
  /** Seconds since the grace period ran out (deletionTimestamp is the deletion time plus the grace period). */
  overdueSeconds: number;
  /** Latest Warning event about the pod, else what its status still claims, else that nothing says why. */
  reason: string;
}

/** Slack after the grace period before a pod counts as stuck: the kubelet's status sync and the final delete. */
export const STUCK_SLACK_MS = 15_000;

export function stuckTerminating(
  pods: Obj[],
  events: Obj[],
  nowMs: number,
  slackMs = STUCK_SLACK_MS,
): StuckPod[] {
  const stuck: StuckPod[] = [];
  for (const p of pods) {
    const ts = p?.metadata?.deletionTimestamp;
    if (typeof ts !== "string") continue;
    const due = Date.parse(ts);
    if (!Number.isFinite(due) || nowMs - due <= slackMs) continue;
    stuck.push({
      namespace: p.metadata.namespace ?? "",
      name: p.metadata.name ?? "",
      uid: p.metadata.uid ?? "",
      // The kubelet's final delete sets deletionGracePeriodSeconds to 0; the pod's own period is then the one meant.
      graceSeconds: Number(
        p.metadata.deletionGracePeriodSeconds || p.spec?.terminationGracePeriodSeconds || 0,
      ),
      overdueSeconds: Math.floor((nowMs - due) / 1000),
      reason: reasonFor(p, events),
    });
  }
  return stuck.sort((a, b) => b.overdueSeconds - a.overdueSeconds);
}

function reasonFor(p: Obj, events: Obj[]): string {
  const mine = events.filter((e) =>
    e?.type === "Warning" && e.involvedObject?.kind === "Pod" &&
    (e.involvedObject.uid ? e.involvedObject.uid === p.metadata.uid : (
      e.involvedObject.name === p.metadata.name && e.involvedObject.namespace === p.metadata.namespace
    ))
  );
  const time = (e: Obj) => Date.parse(e.lastTimestamp ?? e.eventTime ?? e.firstTimestamp ?? "") || 0;
  const last = mine.sort((a, b) => time(b) - time(a))[0];
  if (last) {
    const count = (last.count ?? 1) > 1 ? ` (×${last.count})` : "";
    return `event ${last.reason}${count}: ${oneLine(last.message ?? "")}`;
  }
  const finalizers: string[] = p.metadata.finalizers ?? [];
  if (finalizers.length) {
    return `held by finalizer(s) ${finalizers.join(", ")} (whatever owns them has not removed them)`;
  }
  const statuses = [...(p.status?.initContainerStatuses ?? []), ...(p.status?.containerStatuses ?? [])];
  const running = statuses.filter((c: Obj) => c.state?.running).map((c: Obj) => c.name);
  if (running.length) {
    return `status never updated after the deletion: containers still reported running (${
      running.join(", ")
    })`;
  }
  return "no kubelet event and no container running: the kubelet has not confirmed the pod's removal";
}

function oneLine(s: string, max = 300): string {
  const t = s.replace(/\s+/g, " ").trim();
  return t.length > max ? t.slice(0, max - 1) + "…" : t;
}

export function formatStuck(s: StuckPod): string {
  return `${s.namespace}/${s.name} Terminating ${s.overdueSeconds}s past its ${s.graceSeconds}s grace period: ${s.reason}`;
}

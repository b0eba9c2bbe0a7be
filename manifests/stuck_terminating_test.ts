import assert from "node:assert/strict";
import { formatStuck, stuckTerminating } from "./stuck_terminating.ts";

const NOW = Date.parse("2026-12-03T18:00:00Z");
const iso = (offsetS: number) => new Date(NOW + offsetS * 1000).toISOString();

function pod(name: string, deletionOffsetS?: number, running: string[] = []) {
  return {
    metadata: {
      namespace: "demo",
      name,
      uid: `uid-${name}`,
      ...(deletionOffsetS === undefined
        ? {}
        : { deletionTimestamp: iso(deletionOffsetS), deletionGracePeriodSeconds: 30 }),
    },
    status: {
      containerStatuses: running.map((n) => ({ name: n, state: { running: { startedAt: iso(-600) } } })),
    },
  };
}

Deno.test("stuck terminating: only pods past grace period plus slack are reported, longest first", () => {
  const pods = [
    pod("alive"),
    pod("within-grace", +10), // deletionTimestamp still ahead
    pod("just-past", -5), // past, but within the 15 s slack
    pod("stuck", -120, ["app", "linkerd-proxy"]),
    pod("older", -1800),
  ];
  const stuck = stuckTerminating(pods, [], NOW);
  assert.deepEqual(stuck.map((s) => s.name), ["older", "stuck"]);
  assert.equal(stuck[1].overdueSeconds, 120);
  assert.equal(stuck[1].graceSeconds, 30);
  assert.match(stuck[1].reason, /containers still reported running \(app, linkerd-proxy\)/);
  assert.match(stuck[0].reason, /no kubelet event/);
});

Deno.test("stuck terminating: the latest Warning event about the pod is the reason", () => {
  const ev = (uid: string, type: string, reason: string, message: string, at: number, count = 1) => ({
    type,
    reason,
    message,
    count,
    lastTimestamp: iso(at),
    involvedObject: { kind: "Pod", namespace: "demo", name: "stuck", uid },
  });
  const events = [
    ev("uid-stuck", "Normal", "Killing", "Stopping container app", -150),
    ev("uid-stuck", "Warning", "FailedKillPod", "old", -140),
    ev(
      "uid-stuck",
      "Warning",
      "FailedKillPod",
      'error killing pod: failed to "KillPodSandbox": remove netns: unlinkat /var/run/netns/cni-1: device or resource busy',
      -10,
      7,
    ),
    ev("uid-other-pod-same-name", "Warning", "Unrelated", "a previous pod of that name", -1),
  ];
  const [s] = stuckTerminating([pod("stuck", -120, ["app"])], events, NOW);
  assert.match(s.reason, /^event FailedKillPod \(×7\): .*device or resource busy$/);
  assert.equal(
    formatStuck(s).split(":")[0],
    "demo/stuck Terminating 120s past its 30s grace period",
  );
});

Deno.test("stuck terminating: finalizers are named; malformed objects are skipped, not thrown on", () => {
  const held = pod("held", -60);
  Object.assign(held.metadata, { finalizers: ["example.com/hold"], deletionGracePeriodSeconds: 0 });
  Object.assign(held, { spec: { terminationGracePeriodSeconds: 5 } });
  const [h] = stuckTerminating([held], [], NOW);
  assert.equal(
    h.graceSeconds,
    5,
    "the pod's own period once the kubelet's final delete zeroed the deletion's",
  );
  assert.match(h.reason, /held by finalizer\(s\) example.com\/hold/);
  const odd = [{}, { metadata: { deletionTimestamp: "not a date" } }, null];
  assert.deepEqual(stuckTerminating(odd, [{}, null], NOW), []);
});

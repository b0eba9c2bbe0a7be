import assert from "node:assert/strict";
import { UsageError } from "./context.ts";
import { DEFAULT_DASHBOARD_PORT, parsePort, pickDashboardPod } from "./dashboard.ts";

Deno.test("weft dashboard --port: Linkerd's 50750 by default, 0 for any, refuses what is not a port", () => {
  assert.equal(parsePort(undefined), DEFAULT_DASHBOARD_PORT);
  assert.equal(parsePort("0"), 0);
  assert.equal(parsePort("8084"), 8084);
  for (const bad of ["-1", "65536", "80a", ""]) assert.throws(() => parsePort(bad), UsageError, bad);
});

Deno.test("weft dashboard forwards to the newest Ready pod, never one that is terminating", () => {
  const pod = (name: string, created: string, ready: boolean, deleting = false) => ({
    metadata: { name, creationTimestamp: created, ...(deleting ? { deletionTimestamp: created } : {}) },
    status: { conditions: [{ type: "Ready", status: ready ? "True" : "False" }] },
  });
  assert.equal(
    pickDashboardPod([
      pod("old", "2026-01-01T00:00:00Z", true),
      pod("new", "2026-01-02T00:00:00Z", true),
      pod("newest-unready", "2026-01-03T00:00:00Z", false),
      pod("going", "2026-01-04T00:00:00Z", true, true),
    ]),
    "new",
  );
  assert.equal(pickDashboardPod([]), undefined);
});

import assert from "node:assert/strict";
import { daysLeft, meshingByNamespace, SKIPPED_CHECKS } from "./health.ts";

const pod = (ns: string, name: string, meshed: boolean, phase = "Running") => ({
  metadata: { namespace: ns, name },
  spec: { containers: [{ name: "app" }, ...(meshed ? [{ name: "linkerd-proxy" }] : [])] },
  status: { phase },
});

Deno.test("meshed vs unmeshed pods per namespace, finished pods not counted, injection shown", () => {
  const nss = [
    { metadata: { name: "b", annotations: { "linkerd.io/inject": "enabled" } } },
    { metadata: { name: "a" } },
    { metadata: { name: "empty" } },
  ];
  const pods = [
    pod("b", "1", true),
    pod("b", "2", false),
    pod("b", "3", true, "Succeeded"),
    pod("a", "1", false),
    pod("a", "2", false, "Failed"),
  ];
  assert.deepEqual(meshingByNamespace(nss, pods), [
    { name: "a", injected: false, meshed: 0, unmeshed: 1 },
    { name: "b", injected: true, meshed: 1, unmeshed: 1 },
    { name: "empty", injected: false, meshed: 0, unmeshed: 0 },
  ]);
});

Deno.test("days left: tenths, negative once expired", () => {
  const now = Date.UTC(2026, 0, 1);
  assert.equal(daysLeft(new Date(now + 36 * 3_600_000), now), 1.5);
  assert.equal(daysLeft(new Date(now - 12 * 3_600_000), now), -0.5);
});

Deno.test("every check left out says why", () => {
  for (const s of SKIPPED_CHECKS) assert.ok(s.why.length > 20 && s.group && s.name, JSON.stringify(s));
});

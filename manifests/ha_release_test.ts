import assert from "node:assert/strict";
import { shrinkFirst } from "./ha_release.ts";
import type { Manifest } from "./kinds.ts";

const required = {
  podAntiAffinity: {
    requiredDuringSchedulingIgnoredDuringExecution: [{
      labelSelector: { matchLabels: { "linkerd.io/control-plane-component": "identity" } },
      topologyKey: "kubernetes.io/hostname",
    }],
  },
};
const dep = (name: string, replicas: number, affinity?: unknown) =>
  ({
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name },
    spec: { replicas, template: { spec: affinity ? { affinity } : {} } },
  }) as unknown as Manifest;

Deno.test("leaving HA: only Deployments whose live pods require a node each, going to fewer replicas, shrink first", () => {
  const live = new Map<string, unknown>([
    ["weft-identity", dep("weft-identity", 3, required)],
    [
      "weft-destination",
      dep("weft-destination", 3, {
        podAntiAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{}] },
      }),
    ],
    ["weft-proxy-injector", dep("weft-proxy-injector", 3, required)],
    ["weft-tap", dep("weft-tap", 1)],
  ]);
  const rendered = [
    dep("weft-identity", 1),
    dep("weft-destination", 1),
    dep("weft-proxy-injector", 3, required), // still HA: rolls one pod at a time (maxSurge 0)
    dep("weft-tap", 1),
    dep("weft-dashboard", 1), // not deployed yet
  ];
  assert.deepEqual([...shrinkFirst(rendered, live)], [["weft-identity", 1]]);
});

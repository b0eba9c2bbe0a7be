import assert from "node:assert/strict";
import type { WeightedAddr } from "../../proto/gen_messages/destination.ts";
import { toTcpAddress } from "../../proto/ip.ts";
import { reduceDestination } from "./clients.ts";

function addr(ip: string, labels: Record<string, string>): WeightedAddr {
  return { addr: toTcpAddress(ip, 8080), weight: 1, metricLabels: labels } as WeightedAddr;
}

Deno.test("reduceDestination: set-level metric labels reach every endpoint, the address's own win", () => {
  const s = reduceDestination(undefined, {
    update: {
      $case: "add",
      value: {
        addrs: [
          addr("10.244.0.5", { pod: "web-1", namespace: "override" }),
          addr("10.244.0.6", { pod: "web-2" }),
        ],
        metricLabels: { namespace: "demo", service: "web" },
      },
    },
  });
  assert.deepEqual(s.endpoints.get("10.244.0.5:8080")?.metricLabels, {
    namespace: "override",
    service: "web",
    pod: "web-1",
  });
  assert.deepEqual(s.endpoints.get("10.244.0.6:8080")?.metricLabels, {
    namespace: "demo",
    service: "web",
    pod: "web-2",
  });
});

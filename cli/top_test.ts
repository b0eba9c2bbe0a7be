import assert from "node:assert/strict";
import { findKind } from "./kinds.ts";
import { foldTop, pause, renderTop, topQueries } from "./top.ts";

const D = findKind("deploy");

Deno.test("top: the clients' outbound responses, grouped by source and destination", () => {
  const q = topQueries(D, "demo", "30s");
  assert.equal(
    q.responses,
    'sum(increase(response_total{direction="outbound", deployment!="", namespace="demo"}[30s])) by ' +
      "(namespace, deployment, dst_namespace, dst_deployment, dst_service, classification)",
  );
});

Deno.test("top: heaviest first; a destination without a workload is named by its Service", () => {
  const m = (src: string, dst: Record<string, string>, extra: Record<string, string> = {}) => ({
    namespace: "demo",
    deployment: src,
    dst_namespace: "demo",
    ...dst,
    ...extra,
  });
  const rows = foldTop(D, {
    responses: [
      {
        metric: m("web", { dst_deployment: "api", dst_service: "api" }, { classification: "success" }),
        value: 300,
      },
      {
        metric: m("grpc-load", { dst_deployment: "grpc", dst_service: "grpc" }, {
          classification: "success",
        }),
        value: 600,
      },
      {
        metric: m("grpc-load", { dst_deployment: "grpc", dst_service: "grpc" }, {
          classification: "failure",
        }),
        value: 0,
      },
      { metric: m("web", { dst_service: "ext" }, { classification: "failure" }), value: 30 },
    ],
    p50: [{ metric: m("web", { dst_deployment: "api", dst_service: "api" }), value: 3 }],
    p99: [],
  }, 30);
  assert.deepEqual(rows.map((r) => [r.source, r.destination, r.rps, r.success]), [
    ["grpc-load", "grpc", 20, 1],
    ["web", "api", 10, 1],
    ["web", "svc/ext", 1, 0],
  ]);
  assert.match(renderTop(rows, false, false), /^grpc-load\s+grpc\s+20\.0rps\s+100\.00%/m);
});

Deno.test("top: the pause between refreshes ends at once on abort", async () => {
  const ac = new AbortController();
  const t = performance.now();
  const p = pause(10_000, ac.signal);
  ac.abort();
  assert.equal(await p, false);
  // Well under the 10 s pause (loose: shared machines).
  assert.ok(performance.now() - t < 5000);
  assert.equal(await pause(5, new AbortController().signal), true);
});

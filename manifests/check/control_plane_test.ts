import assert from "node:assert/strict";
import { certExpiryFromMetrics, livePods } from "./control_plane.ts";

Deno.test("the proxy's certificate expiry is read from its metrics", () => {
  const text =
    "# HELP identity_cert_expiration_timestamp_seconds x\n# TYPE identity_cert_expiration_timestamp_seconds gauge\n" +
    'identity_cert_expiration_timestamp_seconds 1764781000\nidentity_cert_refresh_total{result="success"} 1\n';
  assert.equal(certExpiryFromMetrics(text), 1764781000);
  assert.equal(certExpiryFromMetrics("identity_cert_expiration_timestamp_seconds 0\n"), undefined);
  assert.equal(certExpiryFromMetrics("tcp_open_total 3\n"), undefined);
});

Deno.test("finished and deleting control-plane pods are not checked", () => {
  const pods = [
    { metadata: { name: "running" }, status: { phase: "Running" } },
    { metadata: { name: "job" }, status: { phase: "Succeeded" } },
    { metadata: { name: "going", deletionTimestamp: "2026-01-01T00:00:00Z" }, status: { phase: "Running" } },
    { metadata: { name: "pending" }, status: { phase: "Pending" } },
  ];
  assert.deepEqual(livePods(pods).map((p) => p.metadata.name), ["running", "pending"]);
});

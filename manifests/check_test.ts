import assert from "node:assert/strict";
import { certExpiryFromMetrics, deniedBy, formatResult } from "./check.ts";

Deno.test("the proxy's certificate expiry is read from its metrics", () => {
  const text =
    "# HELP identity_cert_expiration_timestamp_seconds x\n# TYPE identity_cert_expiration_timestamp_seconds gauge\n" +
    'identity_cert_expiration_timestamp_seconds 1764781000\nidentity_cert_refresh_total{result="success"} 1\n';
  assert.equal(certExpiryFromMetrics(text), 1764781000);
  assert.equal(certExpiryFromMetrics("identity_cert_expiration_timestamp_seconds 0\n"), undefined);
  assert.equal(certExpiryFromMetrics("tcp_open_total 3\n"), undefined);
});

Deno.test("a refusal is attributed to the webhook that made it, not to schema validation", () => {
  assert.equal(
    deniedBy('admission webhook "weft-sp-validator.weft.io" denied the request: ServiceProfile x is invalid'),
    "weft-sp-validator.weft.io",
  );
  assert.equal(deniedBy('ServiceProfile.linkerd.io "x" is invalid: spec.routes: Required value'), undefined);
  assert.equal(
    deniedBy('failed calling webhook "weft-sp-validator.weft.io": connection refused'),
    undefined,
  );
});

Deno.test("result lines carry the outcome mark", () => {
  assert.equal(
    formatResult({ group: "cluster", name: "CRDs", outcome: "fail", detail: "x" }),
    "✗ cluster       CRDs: x",
  );
  assert.match(
    formatResult({ group: "data plane", name: "p", outcome: "warn", detail: "y" }),
    /^! data plane/,
  );
});

import assert from "node:assert/strict";
import { bucketDelta, buckets, parseMetrics, quantile, sum } from "./prom.ts";

const TEXT = `# HELP tcp_open_total Total count of opened connections
# TYPE tcp_open_total counter
tcp_open_total{direction="inbound",peer="src",tls="true",client_id="a.ns.serviceaccount.identity.weft.cluster.local"} 3
tcp_open_total{direction="inbound",peer="src",tls="false",client_id=""} 2
tcp_open_total{direction="outbound",peer="dst",tls="true",server_id="b"} 5
lat_bucket{le="10"} 5
lat_bucket{le="20"} 15
lat_bucket{le="+Inf"} 20
weird{v="a\\"b,c"} 1.5e3
bare 7
`;

Deno.test("parseMetrics reads labels, escapes, exponents and bare samples", () => {
  const s = parseMetrics(TEXT);
  assert.equal(s.length, 8);
  assert.equal(s[0].labels.client_id, "a.ns.serviceaccount.identity.weft.cluster.local");
  assert.deepEqual(s.find((x) => x.name === "weird")!.labels, { v: 'a"b,c' });
  assert.equal(s.find((x) => x.name === "weird")!.value, 1500);
  assert.equal(s.find((x) => x.name === "bare")!.value, 7);
});

Deno.test("parseMetrics names a line that is not a sample", () => {
  assert.throws(() => parseMetrics("this is not prometheus\n"), /not a Prometheus sample line/);
});

Deno.test("sum filters by exact labels and predicates", () => {
  const s = parseMetrics(TEXT);
  assert.equal(sum(s, "tcp_open_total", { direction: "inbound" }), 5);
  assert.equal(sum(s, "tcp_open_total", { direction: "inbound", tls: "true" }), 3);
  assert.equal(sum(s, "tcp_open_total", { server_id: (v) => v !== undefined }), 5);
});

Deno.test("quantile interpolates inside the bucket and caps at the last finite bound", () => {
  const b = buckets(parseMetrics(TEXT), "lat");
  assert.equal(quantile(0.5, b), 10 + 10 * ((10 - 5) / 10)); // rank 10 of 20 lies half-way through (10,20]
  assert.equal(quantile(0.25, b), 10); // rank 5: the first bucket's bound
  assert.equal(quantile(0.99, b), 20); // in +Inf: the largest finite bound
  assert.equal(quantile(0.5, new Map([[10, 0], [Infinity, 0]])), undefined);
});

Deno.test("bucketDelta subtracts an earlier scrape", () => {
  const before = new Map([[10, 5], [Infinity, 5]]);
  const after = new Map([[10, 6], [Infinity, 9]]);
  assert.deepEqual([...bucketDelta(after, before)], [[10, 1], [Infinity, 4]]);
});

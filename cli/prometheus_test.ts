import assert from "node:assert/strict";
import { parseQueryResponse, PrometheusError, UrlPrometheus } from "./prometheus.ts";

Deno.test("prometheus: an instant vector becomes samples; NaN and +Inf values kept as numbers", () => {
  const body = JSON.stringify({
    status: "success",
    data: {
      resultType: "vector",
      result: [{ metric: { pod: "a" }, value: [1, "2.5"] }, { metric: {}, value: [1, "NaN"] }, {
        metric: { pod: "b" },
        value: [1, "+Inf"],
      }],
    },
  });
  const s = parseQueryResponse(200, body, "q", "P");
  assert.deepEqual(s[0], { metric: { pod: "a" }, value: 2.5 });
  assert.ok(Number.isNaN(s[1].value));
  assert.equal(s[2].value, Infinity);
});

Deno.test("prometheus: refusals, wrong result types and non-JSON answers say what and where", () => {
  const refused = JSON.stringify({ status: "error", errorType: "bad_data", error: "parse error at char 5" });
  assert.throws(
    () => parseQueryResponse(400, refused, "sum(", "P"),
    /P refused the query \(HTTP 400, bad_data: parse error at char 5\): sum\(/,
  );
  const matrix = JSON.stringify({ status: "success", data: { resultType: "matrix", result: [] } });
  assert.throws(
    () => parseQueryResponse(200, matrix, "x[1m]", "P"),
    /expected an instant vector, got matrix/,
  );
  assert.throws(() => parseQueryResponse(503, "<html>no</html>", "q", "P"), PrometheusError);
});

Deno.test("prometheus: an address nobody answers on is an error naming it", async () => {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = l.addr.port;
  l.close();
  const p = new UrlPrometheus(`http://127.0.0.1:${port}`, 2000);
  await assert.rejects(
    p.query("up", new AbortController().signal),
    /Prometheus at http:\/\/127\.0\.0\.1:\d+ cannot be reached/,
  );
});

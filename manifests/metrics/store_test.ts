import { deepStrictEqual as assertEquals, throws } from "node:assert/strict";
import { metricsConfigMap, parseMetricsStore, readMetricsConfigMap } from "./store.ts";

Deno.test("metrics store flags: embedded by default, none, or the user's URL", () => {
  assertEquals(parseMetricsStore(undefined, undefined), { mode: "embedded" });
  assertEquals(parseMetricsStore("none", undefined), { mode: "none" });
  assertEquals(parseMetricsStore(undefined, "http://prom.monitoring:9090/"), {
    mode: "external",
    url: "http://prom.monitoring:9090",
  });
});

Deno.test("metrics store flags: bad values are refused with what is wrong", () => {
  throws(() => parseMetricsStore("grafana", undefined), /--prometheus=grafana: expected embedded or none/);
  throws(() => parseMetricsStore("none", "http://x:9090"), /cannot go with --prometheus=none/);
  throws(() => parseMetricsStore(undefined, "prom:9090"), /only http and https/);
  throws(() => parseMetricsStore(undefined, "not a url"), /not a URL/);
});

Deno.test("ConfigMap weft-metrics round-trips what a CLI needs", () => {
  for (
    const s of [{ mode: "embedded" as const }, { mode: "none" as const }, {
      mode: "external" as const,
      url: "https://p:9090",
    }]
  ) {
    const cm = metricsConfigMap(s);
    assertEquals(readMetricsConfigMap(cm.data as Record<string, string>), s);
  }
  const embedded = metricsConfigMap({ mode: "embedded" }).data as Record<string, string>;
  assertEquals(embedded.apiProxyPath, "/api/v1/namespaces/weft/services/http:weft-prometheus:9090/proxy");
  assertEquals(embedded.prometheusUrl, "http://weft-prometheus.weft.svc.cluster.local:9090");
});

import { equal, match } from "node:assert/strict";
import { type ActiveTarget, judgeTargets } from "./metrics_store.ts";

const t = (job: string, health: ActiveTarget["health"], pod?: string, lastError?: string): ActiveTarget => ({
  labels: { job, ...(pod ? { pod } : {}) },
  scrapeUrl: `http://10.0.0.1:4191/metrics`,
  health,
  lastError,
});

Deno.test("metrics store check: every target up passes, with counts per job", () => {
  const j = judgeTargets([
    t("linkerd-proxy", "up", "a"),
    t("linkerd-proxy", "up", "b"),
    t("prometheus", "up"),
  ]);
  equal(j.outcome, "ok");
  equal(j.detail, "every target up: linkerd-proxy 2/2, prometheus 1/1");
});

Deno.test("metrics store check: a down target fails and is named with its error", () => {
  const j = judgeTargets([
    t("linkerd-proxy", "up", "a"),
    t("linkerd-proxy", "down", "b", "connection refused"),
  ]);
  equal(j.outcome, "fail");
  match(j.detail, /1 target\(s\) down: b \(http:\/\/10\.0\.0\.1:4191\/metrics\): connection refused/);
});

Deno.test("metrics store check: not yet scraped warns; no proxy target at all fails", () => {
  equal(judgeTargets([t("linkerd-proxy", "unknown", "a")]).outcome, "warn");
  equal(judgeTargets([t("prometheus", "up")]).outcome, "fail");
});

Deno.test("metrics store check: a down target whose pod is deleted or terminating warns; others still fail", () => {
  const pod = (name: string, health: ActiveTarget["health"]): ActiveTarget => ({
    labels: { job: "linkerd-proxy", namespace: "ns", pod: name },
    scrapeUrl: `http://10.0.0.2:4191/metrics`,
    health,
    lastError: "connection refused",
  });
  const leaving = new Set(["ns/old"]);
  const j = judgeTargets([pod("a", "up"), pod("old", "down")], leaving);
  equal(j.outcome, "warn");
  match(j.detail, /1 target\(s\) of deleted or terminating pods not dropped yet/);
  equal(judgeTargets([pod("a", "up"), pod("old", "down"), pod("b", "down")], leaving).outcome, "fail");
  equal(judgeTargets([pod("a", "up"), pod("old", "down")]).outcome, "fail");
});

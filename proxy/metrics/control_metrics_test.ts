/** The control-plane client families keep their series while idle (the identity client calls once a day). */
import assert from "node:assert/strict";
import { HeaderList } from "../http/message.ts";
import { ControlMetrics } from "./control_metrics.ts";
import { DEFAULT_RETAIN_IDLE_MS } from "./http_families.ts";
import { Registry } from "./registry.ts";

const IDENTITY = {
  addr: "weft-identity-headless.weft.svc.cluster.local.:8080",
  serverId: "weft-identity.weft.serviceaccount.identity.weft.cluster.local",
};

async function responses(registry: Registry): Promise<string[]> {
  return (await registry.metrics()).split("\n").filter((l) => l.startsWith("control_response_total{"));
}

function certifyOk(m: ControlMetrics): void {
  const rec = m.handle(IDENTITY).start(true);
  rec.head(200, new HeaderList(["content-type", "application/grpc"]));
  rec.end(new HeaderList(["grpc-status", "0"]));
}

Deno.test("control metrics: an idle controller's series stay exported, and a later success adds no failure", async () => {
  const clock = { t: 1000 };
  const registry = new Registry();
  const m = new ControlMetrics(registry, () => clock.t);
  // Start-up: identity not up yet, two Certify calls fail before one succeeds.
  for (let i = 0; i < 2; i++) m.handle(IDENTITY).start(true).fail(new Error("connect ECONNREFUSED"));
  certifyOk(m);
  const atStart = await responses(registry);
  assert.equal(atStart.length, 2, atStart.join("\n"));
  assert.ok(
    atStart.some((l) => l.includes('classification="failure"') && l.endsWith(" 2")),
    atStart.join("\n"),
  );

  // A day without a Certify: far past the retention the data-path families use.
  clock.t += 24 * 3600_000 + DEFAULT_RETAIN_IDLE_MS;
  assert.deepEqual(await responses(registry), atStart, "the idle series are still exported, unchanged");

  // The daily renewal: the success count moves, the failure series does not (no reappearing series).
  certifyOk(m);
  const after = await responses(registry);
  assert.deepEqual(
    after.filter((l) => l.includes('classification="failure"')),
    atStart.filter((l) => l.includes('classification="failure"')),
  );
  assert.ok(after.some((l) => l.includes('classification="success"') && l.endsWith(" 2")), after.join("\n"));
});

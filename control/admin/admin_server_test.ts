import assert from "node:assert/strict";
import { Counter, Registry } from "prom-client";
import { serveAdmin } from "./admin_server.ts";

Deno.test("admin server reports liveness, pending readiness checks and metrics", async () => {
  const registry = new Registry();
  const c = new Counter({ name: "weft_test_things_total", help: "things", registers: [registry] });
  c.inc(3);
  let synced = false;
  const ac = new AbortController();
  const admin = serveAdmin({
    hostname: "127.0.0.1",
    port: 0,
    registry,
    readiness: [{ name: "informers", check: () => synced ? undefined : "services not synced" }],
    signal: ac.signal,
  });
  const base = `http://127.0.0.1:${admin.addr.port}`;
  try {
    assert.equal(await (await fetch(`${base}/live`)).text(), "live\n");
    const notReady = await fetch(`${base}/ready`);
    assert.equal(notReady.status, 503);
    assert.match(await notReady.text(), /informers: services not synced/);
    synced = true;
    const ready = await fetch(`${base}/ready`);
    assert.equal(ready.status, 200);
    await ready.body?.cancel();
    const metrics = await (await fetch(`${base}/metrics`)).text();
    assert.match(metrics, /^weft_test_things_total 3$/m);
    const missing = await fetch(`${base}/nope`);
    assert.equal(missing.status, 404);
    await missing.body?.cancel();
  } finally {
    ac.abort();
    await admin.finished;
  }
});

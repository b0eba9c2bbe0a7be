// The tap API over a real HTTP server on loopback, with proxies faked at the Observe seam.
import assert from "node:assert/strict";
import type { TapLine } from "./event_json.ts";
import { TAP_PATH, tapApi } from "./server.ts";
import { fakeObserve, ONE_MESHED_POD, requestEvents } from "./testing.ts";

const pods = ONE_MESHED_POD;

async function withServer(
  observe: ReturnType<typeof fakeObserve>,
  fn: (url: string, api: ReturnType<typeof tapApi>) => Promise<void>,
  opts: { maxSessions?: number; ready?: boolean; heartbeatMs?: number; meshedClients?: string[] } = {},
) {
  const api = tapApi({
    pods: () => pods,
    notReady: () => opts.ready === false ? "pod cache not synced" : undefined,
    controlPlaneNamespace: "weft",
    observe,
    maxSessions: opts.maxSessions,
    heartbeatMs: opts.heartbeatMs,
    meshedClients: opts.meshedClients,
    log: () => {},
  });
  const ac = new AbortController();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, signal: ac.signal, onListen: () => {} },
    api.handler,
  );
  try {
    await fn(`http://127.0.0.1:${server.addr.port}`, api);
  } finally {
    ac.abort();
    await server.finished;
  }
}

const post = (url: string, body: unknown, signal?: AbortSignal) =>
  fetch(`${url}${TAP_PATH}`, {
    method: "POST",
    body: typeof body === "string" ? body : JSON.stringify(body),
    signal,
  });

Deno.test("bad requests get a 4xx naming what is wrong, meshed callers a 403; the server keeps serving", async () => {
  await withServer(fakeObserve({}), async (url) => {
    const cases: [unknown, number, RegExp][] = [
      ["{not json", 400, /bad tap request: the body is not JSON/],
      [{ namespace: "a", resource: "svc/web" }, 400, /resource: "svc\/web" is not a resource/],
      [{ namespace: "a", resource: "deploy/web", limit: 0 }, 400, /limit: must be a positive number/],
      [{ namespace: "a", resource: "deploy/nope" }, 404, /no pods found for deployment a\/nope/],
      ["x".repeat(20_000), 400, /body larger than 16384 bytes/],
    ];
    for (const [body, status, re] of cases) {
      const r = await post(url, body);
      assert.equal(r.status, status, String(body).slice(0, 40));
      assert.match(await r.text(), re);
    }
    // A body streamed without a length is cut off at the cap.
    const endless = new ReadableStream<Uint8Array>({
      pull: (c) => c.enqueue(new Uint8Array(4096).fill(32)),
    });
    const chunked = await fetch(`${url}${TAP_PATH}`, { method: "POST", body: endless });
    assert.equal(chunked.status, 400);
    assert.match(await chunked.text(), /body larger than 16384 bytes/);
    const meshed = await fetch(`${url}${TAP_PATH}`, {
      method: "POST",
      headers: { "l5d-client-id": "x.a.serviceaccount.identity.weft.cluster.local" },
      body: JSON.stringify({ namespace: "a", resource: "deploy/web" }),
    });
    assert.equal(meshed.status, 403);
    assert.match(await meshed.text(), /service proxy only, not x\.a\.serviceaccount/);
    const get = await fetch(`${url}${TAP_PATH}`);
    assert.equal(get.status, 405);
    await get.body?.cancel();
    const other = await fetch(`${url}/nope`, { method: "POST" });
    assert.equal(other.status, 404);
    assert.match(await other.text(), /the tap API is POST \/apis\/tap/);
  });
});

Deno.test("a meshed caller is admitted only with an identity named in meshedClients, exactly", async () => {
  const dashboard = "weft-dashboard.weft.serviceaccount.identity.weft.cluster.local";
  const observe = fakeObserve({ "web-1-a": requestEvents({ stream: 1 }) });
  await withServer(observe, async (url) => {
    const as = (id: string) =>
      fetch(`${url}${TAP_PATH}`, {
        method: "POST",
        headers: { "l5d-client-id": id },
        body: JSON.stringify({ namespace: "a", resource: "deploy/web", limit: 1 }),
      });
    const ok = await as(dashboard);
    assert.equal(ok.status, 200);
    assert.match(await ok.text(), /"end"/);
    for (
      const id of [`x.${dashboard}`, dashboard.replace("weft-dashboard", "weft-dashboardx"), "weft-dashboard"]
    ) {
      const r = await as(id);
      assert.equal(r.status, 403, id);
      assert.match(await r.text(), /service proxy only/);
    }
  }, { meshedClients: [dashboard] });
});

Deno.test("a tap streams NDJSON lines and ends at its limit", async () => {
  const observe = fakeObserve({
    "web-1-a": [...requestEvents({ stream: 1 }), ...requestEvents({ stream: 2 })],
  });
  await withServer(observe, async (url, api) => {
    const r = await post(url, { namespace: "a", resource: "deploy/web", limit: 2 });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get("content-type"), "application/x-ndjson");
    const lines = (await r.text()).trim().split("\n").map((l) => JSON.parse(l) as TapLine);
    assert.equal(lines.filter((l) => "event" in l).length, 6);
    assert.deepEqual(lines.at(-1), { end: { reason: "limit", requests: 2, dropped: 0 } });
    assert.equal(api.active(), 0);
  });
});

Deno.test("the reader disconnecting cancels the pods' streams and frees the session; at most maxSessions at once", async () => {
  const observe = fakeObserve({ "web-1-a": requestEvents({ stream: 1 }) });
  await withServer(observe, async (url, api) => {
    const reader = new AbortController();
    const r = await post(url, { namespace: "a", resource: "deploy/web" }, reader.signal);
    const rd = r.body!.getReader();
    const first = await rd.read();
    assert.match(new TextDecoder().decode(first.value), /"kind":"request"/);
    const busy = await post(url, { namespace: "a", resource: "deploy/web" });
    assert.equal(busy.status, 429);
    await busy.body?.cancel();
    reader.abort();
    await rd.cancel().catch(() => {});
    for (let i = 0; i < 100 && (api.active() > 0 || !observe.aborted.has("web-1-a")); i++) {
      await new Promise((res) => setTimeout(res, 20));
    }
    assert.equal(api.active(), 0);
    assert.ok(observe.aborted.has("web-1-a"));
  }, { maxSessions: 1 });
});

Deno.test("a tap that matches nothing writes an empty line after each quiet heartbeat", async () => {
  await withServer(fakeObserve({}), async (url) => {
    const reader = new AbortController();
    const r = await post(url, { namespace: "a", resource: "deploy/web" }, reader.signal);
    const rd = r.body!.getReader();
    const t0 = Date.now();
    const first = await rd.read();
    assert.equal(new TextDecoder().decode(first.value), "\n");
    assert.ok(Date.now() - t0 >= 40, "not before the heartbeat interval");
    reader.abort();
    await rd.cancel().catch(() => {});
  }, { heartbeatMs: 50 });
});

Deno.test("503 until the pod cache has synced", async () => {
  await withServer(fakeObserve({}), async (url) => {
    const r = await post(url, { namespace: "a", resource: "deploy/web" });
    assert.equal(r.status, 503);
    assert.match(await r.text(), /pod cache not synced/);
  }, { ready: false });
});

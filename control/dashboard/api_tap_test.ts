// /api/tap/rows over real HTTP: the browser → the dashboard's route → `weft tap`'s client (cli/tap.ts) → a
// loopback stand-in for the API server's service proxy → the tap component's real HTTP API, with the proxies
// faked at its Observe seam.
import { KubeConfig } from "@kubernetes/client-node";
import assert from "node:assert/strict";
import { streamTap, tapProxyPath } from "../../cli/tap.ts";
import { Kube } from "../../manifests/kube.ts";
import { TAP_PATH, tapApi } from "../tap/server.ts";
import { fakeObserve, ONE_MESHED_POD, requestEvents } from "../tap/testing.ts";
import { tapRowsRoute } from "./api_tap.ts";
import { ApiError } from "./server.ts";

const pods = ONE_MESHED_POD;

async function withChain(
  observe: ReturnType<typeof fakeObserve>,
  fn: (dashboard: string, tap: ReturnType<typeof tapApi>) => Promise<void>,
) {
  const tap = tapApi({
    pods: () => pods,
    notReady: () => undefined,
    controlPlaneNamespace: "weft",
    observe,
    heartbeatMs: 100,
    log: () => {},
  });
  const ac = new AbortController();
  // The API server's service proxy, as far as the tap needs it: the proxied path, passed on.
  const apiServer = Deno.serve(
    { hostname: "127.0.0.1", port: 0, signal: ac.signal, onListen: () => {} },
    (req) => {
      const u = new URL(req.url);
      if (u.pathname !== tapProxyPath()) return new Response("not proxied here\n", { status: 404 });
      return tap.handler(new Request(new URL(TAP_PATH, u), req));
    },
  );
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "c", server: `http://127.0.0.1:${apiServer.addr.port}`, skipTLSVerify: true }],
    users: [{ name: "u" }],
    contexts: [{ name: "x", cluster: "c", user: "u" }],
    currentContext: "x",
  });
  const kube = new Kube(kc);
  const route = tapRowsRoute({
    open: (body, onLine, signal) => streamTap(kube, body, onLine, signal),
    log: () => {},
    heartbeatMs: 100,
  });
  const dashboard = Deno.serve(
    { hostname: "127.0.0.1", port: 0, signal: ac.signal, onListen: () => {} },
    async (req) => {
      try {
        return await route(new URL(req.url).searchParams, req.signal);
      } catch (e) {
        if (e instanceof ApiError) return new Response(e.message, { status: e.status });
        throw e;
      }
    },
  );
  try {
    await fn(`http://127.0.0.1:${dashboard.addr.port}`, tap);
  } finally {
    ac.abort();
    await Promise.all([apiServer.finished, dashboard.finished]);
  }
}

async function until(what: string, ok: () => boolean, ms = 3000) {
  const t0 = Date.now();
  while (!ok()) {
    if (Date.now() - t0 > ms) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

Deno.test("/api/tap/rows: rows from the tap, and the viewer leaving ends the upstream tap", async () => {
  const observe = fakeObserve({
    "web-1-a": [...requestEvents({ stream: 1, status: 200 }), ...requestEvents({ stream: 2, status: 503 })],
  });
  await withChain(observe, async (url, tap) => {
    const viewer = new AbortController();
    const r = await fetch(`${url}/api/tap/rows?ns=a&resource=deploy/web&status=5xx`, {
      signal: viewer.signal,
    });
    assert.equal(r.status, 200);
    assert.match(r.headers.get("content-type") ?? "", /application\/x-ndjson/);
    const rd = r.body!.getReader();
    let text = "";
    const ended = () => text.split("\n").some((l) => l.includes('"done":true') && l.includes('"status":503'));
    while (!ended()) {
      const { value, done } = await rd.read();
      assert.ok(!done, `the stream ended early: ${text}`);
      text += new TextDecoder().decode(value);
    }
    const rows = text.split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l).row);
    // The 200 was left out by the status filter; the 503 came at its response and again at its end.
    assert.deepEqual(rows.map((x) => [x.status, x.done]), [[503, false], [503, true]]);
    assert.equal(rows[0].path, "/hello");
    assert.equal(rows[0].method, "GET");
    assert.equal(tap.active(), 1, "the upstream tap is running");
    viewer.abort();
    await rd.cancel().catch(() => {});
    await until("the tap component ended the tap", () => tap.active() === 0);
    await until("the proxies' streams were cancelled", () => observe.aborted.has("web-1-a"));
  });
});

Deno.test("/api/tap/rows: the duration bound ends the stream and the upstream tap", async () => {
  const observe = fakeObserve({});
  await withChain(observe, async (url, tap) => {
    const t0 = Date.now();
    const r = await fetch(`${url}/api/tap/rows?ns=a&resource=deploy/web&duration=1`);
    const lines = (await r.text()).split("\n").filter((l) => l.trim());
    const took = Date.now() - t0;
    // At least the bound, and it did end (loose upper bound: shared machines).
    assert.ok(took >= 1000 && took < 10_000, `${took} ms`);
    assert.deepEqual(JSON.parse(lines.at(-1)!).end, { reason: "duration", rows: 0, dropped: 0 });
    await until("the tap component ended the tap", () => tap.active() === 0);
    assert.ok(observe.aborted.has("web-1-a"));
  });
});

Deno.test("/api/tap/rows: a bad query is a 400 naming it; a refused tap ends with the API's reason", async () => {
  await withChain(fakeObserve({}), async (url, tap) => {
    const bad = await fetch(`${url}/api/tap/rows?ns=a&resource=deploy/web&limit=99999`);
    assert.equal(bad.status, 400);
    assert.match(await bad.text(), /limit: 99999 is above the maximum 10000/);
    const none = await fetch(`${url}/api/tap/rows?ns=a&resource=deploy/nope`);
    const end = JSON.parse((await none.text()).trim().split("\n").at(-1)!).end;
    assert.equal(end.reason, "refused");
    assert.equal(end.status, 404);
    assert.match(end.message, /no pods found for deployment a\/nope/);
    assert.equal(tap.active(), 0);
  });
});

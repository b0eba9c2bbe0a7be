import assert from "node:assert/strict";
import { loadAssets } from "./assets.ts";
import {
  ApiError,
  dashboardHandler,
  DEFAULT_ENFORCED_HOST,
  hostOf,
  isPagePath,
  jsonResponse,
} from "./server.ts";

const assets = await loadAssets();
const seen: string[] = [];
const handler = dashboardHandler({
  assets,
  enforcedHost: DEFAULT_ENFORCED_HOST,
  log: () => {},
  api: {
    echo: (p) => {
      seen.push(p.toString());
      return Promise.resolve(jsonResponse({ q: p.get("q") }));
    },
    bad: () => Promise.reject(new ApiError(400, "ns: bad")),
    broken: () => Promise.reject(new Error("Prometheus is down")),
  },
});

function req(path: string, init: RequestInit & { host?: string } = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.set("host", init.host ?? "localhost:50750");
  return handler(new Request(`http://localhost:50750${path}`, { ...init, headers }));
}

function assertSecure(r: Response, what: string) {
  const csp = r.headers.get("content-security-policy") ?? "";
  assert.match(csp, /default-src 'self'/, what);
  assert.match(csp, /script-src 'self'(;|$)/, `${what}: no inline script`);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|\*/, what);
  assert.match(csp, /frame-ancestors 'none'/, what);
  assert.equal(r.headers.get("x-frame-options"), "DENY", what);
  assert.equal(r.headers.get("x-content-type-options"), "nosniff", what);
}

Deno.test("the shell is served at every page path (deep links), with the security headers", async () => {
  for (
    const p of [
      "/",
      "/overview",
      "/workloads?ns=weft-demo",
      "/topology?ns=weft-demo",
      "/tap?ns=weft-demo&resource=deploy/web",
      "/namespaces/weft-demo/deployments/web",
      "/namespaces/weft-demo/services/api",
      "/namespaces/weft-demo/httproutes/api-route",
      "/namespaces/weft-demo/serviceprofiles/api.weft-demo.svc.cluster.local",
    ]
  ) {
    const r = await req(p);
    assert.equal(r.status, 200, p);
    assert.match(r.headers.get("content-type")!, /^text\/html/, p);
    const body = await r.text();
    assert.match(body, /<script type="module" src="\/assets\/app.js">/, p);
    assert.doesNotMatch(
      body,
      /<script>|<script type="module">\s*\S|style=/,
      `${p}: no inline script or style`,
    );
    assertSecure(r, p);
  }
});

Deno.test("assets come from memory with their types; nothing outside the assets directory is reachable", async () => {
  const js = await req("/assets/app.js");
  assert.equal(js.status, 200);
  assert.match(js.headers.get("content-type")!, /^text\/javascript/);
  await js.body?.cancel();
  const css = await req("/assets/style.css");
  assert.match(css.headers.get("content-type")!, /^text\/css/);
  await css.body?.cancel();
  for (
    const p of [
      "/assets/../server.ts",
      "/assets/%2e%2e/server.ts",
      "/assets/..%2fserver.ts",
      "/assets/%2e%2e%2f%2e%2e%2fdeno.json",
      "/assets//etc/passwd",
      "/assets/server.ts",
      "/assets/",
    ]
  ) {
    const r = await req(p);
    assert.equal(r.status, 404, p);
    assertSecure(r, p);
    await r.body?.cancel();
  }
});

Deno.test("attack: a viewer cannot write — every method but GET is 405 and reaches no API", async () => {
  seen.length = 0;
  for (const method of ["POST", "PUT", "PATCH", "DELETE", "OPTIONS"]) {
    for (const p of ["/api/echo?q=1", "/overview", "/assets/app.js"]) {
      const r = await req(p, { method, body: method === "OPTIONS" ? undefined : "{}" });
      assert.equal(r.status, 405, `${method} ${p}`);
      assert.equal(r.headers.get("allow"), "GET");
      assertSecure(r, `${method} ${p}`);
      await r.body?.cancel();
    }
  }
  assert.deepEqual(seen, [], "no API route ran");
});

Deno.test("attack: a Host that is not the dashboard's (DNS rebinding onto a port-forward) is 421", async () => {
  seen.length = 0;
  for (
    const host of [
      "evil.example",
      "evil.example:50750",
      "127.0.0.1.evil.example",
      "localhost.evil.example",
      "",
    ]
  ) {
    const r = await req("/api/echo?q=x", { host });
    assert.equal(r.status, 421, JSON.stringify(host));
    await r.body?.cancel();
  }
  assert.deepEqual(seen, []);
  for (
    const host of ["localhost", "127.0.0.1:8084", "[::1]:50750", "weft-dashboard.weft.svc.cluster.local:8084"]
  ) {
    const r = await req("/api/echo?q=x", { host });
    assert.equal(r.status, 200, host);
    await r.body?.cancel();
  }
});

Deno.test("unknown paths are 404; API errors are JSON with their status and message", async () => {
  for (
    const p of [
      "/nope",
      "/overview/x",
      "/namespaces/weft-demo/deployments",
      "/namespaces/BAD/deployments/web",
      "/api/",
    ]
  ) {
    const r = await req(p);
    assert.equal(r.status, 404, p);
    await r.body?.cancel();
  }
  const unknown = await req("/api/nope");
  assert.equal(unknown.status, 404);
  assert.match(await unknown.text(), /no API \/api\/nope \(there are: bad, broken, echo\)/);
  const bad = await req("/api/bad");
  assert.equal(bad.status, 400);
  assert.deepEqual(await bad.json(), { error: "ns: bad" });
  const broken = await req("/api/broken");
  assert.equal(broken.status, 502);
  assert.deepEqual(await broken.json(), { error: "Prometheus is down" });
  const ok = await req("/api/echo?q=%3Cscript%3E");
  assert.match(ok.headers.get("content-type")!, /^application\/json/);
  assert.deepEqual(await ok.json(), { q: "<script>" });
  assertSecure(ok, "api");
});

Deno.test("hostOf and isPagePath", () => {
  assert.equal(hostOf("LOCALHOST:80"), "localhost");
  assert.equal(hostOf("[::1]:8084"), "[::1]");
  assert.equal(hostOf("a:b:c"), undefined);
  assert.equal(hostOf(null), undefined);
  assert.ok(isPagePath("/namespaces/a/pods/b-1"));
  assert.ok(!isPagePath("/namespaces/a/secrets/b"));
});

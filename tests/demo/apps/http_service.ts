/**
 * The demo's HTTP/1 services, one file for both roles:
 *   ROLE=api  answers `GET /item?n=N` with a small JSON body naming the pod;
 *   ROLE=web  answers `GET /?n=N` by calling the api (UPSTREAM) once and wrapping its answer; an upstream failure
 *             becomes a 502, so a broken hop shows up as failed requests at the web service too.
 * Both answer `/healthz` (readiness) without calling anything. Env: PORT (8080), POD_NAME, UPSTREAM (web only),
 * UPSTREAM_TIMEOUT_MS (2000). Runs inside the weft image: `deno run -A --cached-only tests/demo/apps/http_service.ts`.
 */
import { onTerm } from "./shutdown.ts";

const role = Deno.env.get("ROLE") ?? "api";
const port = Number(Deno.env.get("PORT") ?? "8080");
const pod = Deno.env.get("POD_NAME") ?? Deno.hostname();
const upstream = Deno.env.get("UPSTREAM") ?? "";
const upstreamTimeoutMs = Number(Deno.env.get("UPSTREAM_TIMEOUT_MS") ?? "2000");
if (role !== "api" && role !== "web") throw new Error(`ROLE must be "api" or "web", got "${role}"`);
if (role === "web" && !upstream) throw new Error("ROLE=web needs UPSTREAM, e.g. http://api:8080");

const headers = { "content-type": "application/json", "x-pod-name": pod };

async function web(n: string): Promise<Response> {
  try {
    const res = await fetch(`${upstream}/item?n=${encodeURIComponent(n)}`, {
      signal: AbortSignal.timeout(upstreamTimeoutMs),
    });
    const body = await res.text();
    if (!res.ok) {
      return Response.json({ pod, error: `api answered ${res.status}`, body }, { status: 502, headers });
    }
    return new Response(JSON.stringify({ pod, api: JSON.parse(body) }), { headers });
  } catch (e) {
    return Response.json({ pod, error: `api unreachable: ${(e as Error).message}` }, {
      status: 502,
      headers,
    });
  }
}

const stop = new AbortController();
const server = Deno.serve(
  {
    port,
    hostname: "0.0.0.0",
    signal: stop.signal,
    onListen: () => console.log(`demo http ${role} ${pod} on :${port}`),
  },
  (req) => {
    const url = new URL(req.url);
    if (url.pathname === "/healthz") return new Response("ok\n");
    const n = url.searchParams.get("n") ?? "0";
    if (role === "api") {
      if (url.pathname !== "/item") return new Response("not found\n", { status: 404 });
      return new Response(JSON.stringify({ pod, n, item: `item-${n}` }), { headers });
    }
    if (url.pathname !== "/") return new Response("not found\n", { status: 404 });
    return web(n);
  },
);
onTerm(() => {
  stop.abort();
  return server.finished;
});
await server.finished;

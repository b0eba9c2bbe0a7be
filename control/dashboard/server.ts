/**
 * The dashboard's HTTP handler: GET only. It serves
 *
 *   /assets/<file>          the page code and styles, loaded into memory at start (assets.ts)
 *   /, /overview, …         the single-page shell (index.html) at every page path, so deep links load
 *   /api/<name>?…           JSON (or NDJSON for the tap) from the API routes (api.ts)
 *
 * Anything else is 404, any other method 405, a Host header that is not an allowed one 421 (a page on another
 * site that rebinds its DNS name to 127.0.0.1 must not read the mesh through a viewer's port-forward). Every
 * answer carries a strict Content-Security-Policy (no inline script or style, nothing from another origin).
 */
import type { Assets } from "./assets.ts";

/** An API endpoint: the query string in, a Response out; `signal` ends when the viewer goes away. */
export type ApiRoute = (params: URLSearchParams, signal: AbortSignal) => Promise<Response>;

export interface DashboardOptions {
  assets: Assets;
  api: Record<string, ApiRoute>;
  /** The Host header (port removed) must match this. */
  enforcedHost: RegExp;
  log: (line: string) => void;
}

/** Linkerd's web default for `-enforced-host`, with weft's names: loopback and the in-cluster Service. */
export const DEFAULT_ENFORCED_HOST =
  /^(localhost|127\.0\.0\.1|\[::1\]|weft-dashboard|weft-dashboard\.weft|weft-dashboard\.weft\.svc|weft-dashboard\.weft\.svc\.cluster\.local)$/;

export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "Content-Security-Policy": [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "font-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join("; "),
  "X-Frame-Options": "DENY",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
  "Cross-Origin-Opener-Policy": "same-origin",
  "Cross-Origin-Resource-Policy": "same-origin",
};

/**
 * Page paths the shell answers: the router in assets/app.js reads the same shapes. A page path with
 * anything else after it is 404 here, so a mistyped link says so instead of rendering an empty page.
 */
const PAGE_PATHS: readonly RegExp[] = [
  /^\/$/,
  /^\/overview$/,
  /^\/workloads$/,
  /^\/topology$/,
  /^\/tap$/,
  /^\/namespaces\/[a-z0-9]([-a-z0-9]*[a-z0-9])?\/(deployments|statefulsets|daemonsets|services|pods)\/[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/,
  /^\/namespaces\/[a-z0-9]([-a-z0-9]*[a-z0-9])?\/(httproutes|grpcroutes|serviceprofiles)\/[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/,
];

export function isPagePath(path: string): boolean {
  return PAGE_PATHS.some((r) => r.test(path));
}

function withHeaders(res: Response): Response {
  for (const [k, v] of Object.entries(SECURITY_HEADERS)) res.headers.set(k, v);
  return res;
}

export function textResponse(status: number, text: string, extra: Record<string, string> = {}): Response {
  return new Response(text + "\n", {
    status,
    headers: { "Content-Type": "text/plain; charset=utf-8", "Cache-Control": "no-store", ...extra },
  });
}

/** The Host header without its port; undefined when it is missing or malformed. */
export function hostOf(header: string | null): string | undefined {
  if (!header) return undefined;
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:\[\]]+)(?::\d{1,5})?$/.exec(header);
  return m ? m[1].toLowerCase() : undefined;
}

export function dashboardHandler(o: DashboardOptions): (req: Request) => Promise<Response> {
  return async (req) => withHeaders(await route(o, req));
}

async function route(o: DashboardOptions, req: Request): Promise<Response> {
  const host = hostOf(req.headers.get("host"));
  if (!host || !o.enforcedHost.test(host)) {
    return textResponse(
      421,
      `host ${JSON.stringify(req.headers.get("host") ?? "")} is not one the dashboard answers to ` +
        `(see --enforced-host)`,
    );
  }
  if (req.method !== "GET") {
    return textResponse(405, `${req.method}: the dashboard is read-only, it answers GET only`, {
      Allow: "GET",
    });
  }
  let url: URL;
  try {
    url = new URL(req.url);
  } catch {
    return textResponse(400, "bad request URL");
  }
  const path = url.pathname;
  if (path.startsWith("/assets/")) {
    const a = o.assets.get(path.slice("/assets/".length));
    if (!a) return textResponse(404, `no asset ${path}`);
    return new Response(a.body, {
      headers: { "Content-Type": a.contentType, "Cache-Control": "no-cache", ETag: a.etag },
    });
  }
  if (path.startsWith("/api/")) {
    const api = o.api[path.slice("/api/".length)];
    if (!api) return textResponse(404, `no API ${path} (there are: ${Object.keys(o.api).sort().join(", ")})`);
    try {
      return await api(url.searchParams, req.signal);
    } catch (e) {
      if (e instanceof ApiError) return jsonError(e.status, e.message);
      o.log(`${path}: ${(e as Error).message}`);
      return jsonError(502, (e as Error).message);
    }
  }
  if (isPagePath(path)) {
    const shell = o.assets.get("index.html");
    if (!shell) return textResponse(500, "index.html is missing from the assets");
    return new Response(shell.body, {
      headers: { "Content-Type": shell.contentType, "Cache-Control": "no-cache" },
    });
  }
  return textResponse(404, `not found: ${path}`);
}

/** A bad query parameter or a missing object: its status and a message naming what is wrong. */
export class ApiError extends Error {
  override name = "ApiError";
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

export function jsonResponse(value: unknown, status = 200): Response {
  return new Response(JSON.stringify(value), {
    status,
    headers: { "Content-Type": "application/json; charset=utf-8", "Cache-Control": "no-store" },
  });
}

export function jsonError(status: number, message: string): Response {
  return jsonResponse({ error: message }, status);
}

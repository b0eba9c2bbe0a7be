/**
 * Route filters, compiled once: request/response header modifiers, request redirects (answered
 * by the proxy with a 3xx and `Location`), and failure injection (a ratio of requests answered
 * with a configured HTTP status, or gRPC status for GRPCRoutes). A filter kind the proxy does not
 * know answers 500 (gRPC INTERNAL), as Linkerd's proxy does, rather than silently forwarding.
 */
import { type Layer, passThrough } from "../http/layer.ts";
import type { HttpFailureInjector, RequestRedirect } from "../../proto/gen_messages/http_route.ts";
import type { GrpcFailureInjector } from "../../proto/gen_messages/grpc_route.ts";
import type { Headers as ProtoHeaders } from "../../proto/gen_messages/http_types.ts";
// The outbound filter kinds are a superset of the inbound ones, so one compiler serves both.
import type { GrpcRoute_Filter, HttpRoute_Filter } from "../../proto/gen_messages/outbound.ts";
import type { Rng } from "../core/rng.ts";
import {
  grpcErrorResponse,
  HeaderList,
  type HttpRequest,
  type HttpResponse,
  textResponse,
} from "../http/message.ts";
import { headerValue, type Matcher } from "./http_match.ts";
import { RouteConfigError } from "./meta.ts";

/** Add / set / remove headers (Gateway API HTTPHeaderFilter), in Linkerd's order: add, set, remove. */
export class HeaderModifier {
  constructor(
    readonly add: readonly [string, string][],
    readonly set: readonly [string, string][],
    readonly remove: readonly string[],
  ) {}

  apply(h: HeaderList): void {
    for (const [n, v] of this.add) h.append(n, v);
    for (const [n, v] of this.set) h.set(n, v);
    for (const n of this.remove) h.delete(n);
  }
}

function pairs(h: ProtoHeaders | undefined, what: string): [string, string][] {
  return (h?.headers ?? []).map((x) => {
    const n = x.name.toLowerCase();
    if (!n || !/^[!#$%&'*+.^_`|~0-9a-z-]+$/.test(n)) {
      throw new RouteConfigError(`${what}: invalid header name ${JSON.stringify(x.name)}`);
    }
    return [n, headerValue(x.value)];
  });
}

export function compileHeaderModifier(
  m: { add?: ProtoHeaders; set?: ProtoHeaders; remove: string[] },
  what: string,
): HeaderModifier {
  return new HeaderModifier(pairs(m.add, what), pairs(m.set, what), m.remove.map((n) => n.toLowerCase()));
}

/** A Bernoulli trial numerator/denominator (missing ratio: always). */
export class Ratio {
  readonly p: number;

  constructor(numerator: number, denominator: number, what: string) {
    if (denominator === 0 || numerator > denominator) {
      throw new RouteConfigError(`${what}: invalid ratio ${numerator}/${denominator}`);
    }
    this.p = numerator / denominator;
  }

  sample(rng: Rng): boolean {
    return this.p >= 1 || (this.p > 0 && rng() < this.p);
  }
}

export class HttpFailure {
  readonly ratio: Ratio;
  readonly status: number;
  readonly message: string;

  constructor(f: HttpFailureInjector, what: string) {
    if (!(f.status >= 100 && f.status <= 599)) {
      throw new RouteConfigError(`${what}: failure injector status ${f.status} is not an HTTP status`);
    }
    this.status = f.status;
    this.message = f.message;
    this.ratio = f.ratio ? new Ratio(f.ratio.numerator, f.ratio.denominator, what) : new Ratio(1, 1, what);
  }

  apply(rng: Rng): HttpResponse | undefined {
    return this.ratio.sample(rng) ? textResponse(this.status, this.message) : undefined;
  }
}

export class GrpcFailure {
  readonly ratio: Ratio;
  readonly code: number;
  readonly message: string;

  constructor(f: GrpcFailureInjector, what: string) {
    if (f.code > 16) {
      throw new RouteConfigError(`${what}: failure injector gRPC code ${f.code} is not a gRPC status`);
    }
    this.code = f.code;
    this.message = f.message;
    this.ratio = f.ratio ? new Ratio(f.ratio.numerator, f.ratio.denominator, what) : new Ratio(1, 1, what);
  }

  apply(rng: Rng): HttpResponse | undefined {
    return this.ratio.sample(rng) ? grpcErrorResponse(this.code, this.message) : undefined;
  }
}

/** Splits `host[:port]` / `[v6][:port]`; port is undefined when absent. */
export function splitAuthority(a: string): { host: string; port: number | undefined } {
  if (a.charCodeAt(0) === 91) {
    const close = a.indexOf("]");
    if (close > 0 && a.charCodeAt(close + 1) === 58) {
      return { host: a.slice(0, close + 1), port: Number(a.slice(close + 2)) };
    }
    return { host: a, port: undefined };
  }
  const colon = a.lastIndexOf(":");
  if (colon < 0 || a.indexOf(":") !== colon) return { host: a, port: undefined };
  const port = Number(a.slice(colon + 1));
  return Number.isInteger(port) ? { host: a.slice(0, colon), port } : { host: a, port: undefined };
}

function portIfNotDefault(scheme: string, port: number): number | undefined {
  if (scheme === "http" && port === 80) return undefined;
  if (scheme === "https" && port === 443) return undefined;
  return port;
}

/** Gateway API HTTPRequestRedirectFilter, with Linkerd's authority and path rules. */
export class Redirect {
  readonly scheme: string | undefined;
  /** "exact" host:port, "host" (keep the request's port), "port" (keep the request's host). */
  readonly authority:
    | { kind: "exact"; value: string }
    | { kind: "host"; host: string }
    | { kind: "port"; port: number }
    | undefined;
  readonly path: { kind: "full"; value: string } | { kind: "prefix"; value: string } | undefined;
  readonly status: number;

  constructor(r: RequestRedirect, what: string) {
    const s = r.scheme?.type;
    this.scheme = s === undefined
      ? undefined
      : s.$case === "registered"
      ? (s.value === 1 ? "https" : "http")
      : s.value.toLowerCase();
    if (r.port > 65535) throw new RouteConfigError(`${what}: redirect port ${r.port} is out of range`);
    if (!r.host) this.authority = r.port ? { kind: "port", port: r.port } : undefined;
    else if (r.port) this.authority = { kind: "exact", value: `${r.host}:${r.port}` };
    else this.authority = { kind: "host", host: r.host };
    const p = r.path?.replace;
    if (p?.$case === "full") {
      if (!p.value.startsWith("/")) {
        throw new RouteConfigError(`${what}: redirect path ${p.value} is not absolute`);
      }
      this.path = { kind: "full", value: p.value };
    } else if (p?.$case === "prefix") {
      this.path = { kind: "prefix", value: p.value };
    } else {
      this.path = undefined;
    }
    if (r.status !== 0 && !(r.status >= 300 && r.status <= 399)) {
      throw new RouteConfigError(`${what}: redirect status ${r.status} is not a 3xx status`);
    }
    this.status = r.status || 301;
  }

  /**
   * The location for `req`, or undefined when it is the request's own URL (no redirect), or an
   * Error when the redirect cannot apply (no authority; prefix rewrite without a prefix match).
   */
  location(req: HttpRequest, matcher: Matcher): string | undefined | Error {
    const origScheme = req.scheme ?? "http";
    const scheme = this.scheme ?? origScheme;
    let authority: string;
    const a = this.authority;
    if (a === undefined) {
      authority = req.authority;
    } else if (a.kind === "exact") {
      authority = a.value;
    } else if (a.kind === "host") {
      const orig = splitAuthority(req.authority);
      const p = orig.port === undefined ? undefined : portIfNotDefault(scheme, orig.port);
      authority = p === undefined ? a.host : `${a.host}:${p}`;
    } else {
      const orig = splitAuthority(req.authority);
      const p = portIfNotDefault(scheme, a.port);
      if (p !== undefined && p !== orig.port) authority = `${orig.host}:${p}`;
      else if (p === undefined && orig.port !== undefined) authority = orig.host;
      else authority = req.authority;
    }
    if (!authority) return new Error("redirect: the request has no authority to redirect to");
    let path: string;
    const pm = this.path;
    if (pm === undefined) {
      path = req.path;
    } else if (pm.kind === "full") {
      path = pm.value;
    } else {
      const q = req.path.indexOf("?");
      const reqPath = q < 0 ? req.path : req.path.slice(0, q);
      const n = matcher.prefixLength;
      if (n < 0 || n > reqPath.length) {
        return new Error("redirect: a path prefix can only be replaced when a path prefix matched");
      }
      const rest = reqPath.slice(n);
      path = pm.value + (rest.length > 0 && rest.charCodeAt(0) !== 47 ? "/" : "") + rest +
        (q < 0 ? "" : req.path.slice(q));
    }
    const location = `${scheme}://${authority}${path}`;
    return location === `${origScheme}://${req.authority}${req.path}` ? undefined : location;
  }
}

export type RequestFilter =
  | { kind: "headers"; modifier: HeaderModifier }
  | { kind: "redirect"; redirect: Redirect }
  | { kind: "fail"; failure: HttpFailure | GrpcFailure }
  | { kind: "invalid"; message: string };

/** A route rule's (or backend's) filters, applied in order. */
export class RouteFilters {
  readonly #request: RequestFilter[];
  readonly #response: HeaderModifier[];
  readonly #grpc: boolean;

  constructor(request: RequestFilter[], response: HeaderModifier[], grpc: boolean) {
    this.#request = request;
    this.#response = response;
    this.#grpc = grpc;
  }

  get empty(): boolean {
    return this.#request.length === 0 && this.#response.length === 0;
  }

  /** The response-header modifiers as a layer (nothing at all when there are none). */
  responseLayer(): Layer {
    if (this.#response.length === 0) return passThrough;
    return (inner) => (req, signal) =>
      inner(req, signal).then((res) => {
        this.applyResponse(res);
        return res;
      });
  }

  /**
   * Applies the request-side filters to `req` (header changes in place). Returns the response to
   * answer with instead of forwarding (redirect, injected failure, invalid filter), or undefined.
   */
  applyRequest(req: HttpRequest, matcher: Matcher, rng: Rng): HttpResponse | undefined {
    for (const f of this.#request) {
      switch (f.kind) {
        case "headers":
          f.modifier.apply(req.headers);
          break;
        case "fail": {
          const r = f.failure.apply(rng);
          if (r) return r;
          break;
        }
        case "redirect": {
          const loc = f.redirect.location(req, matcher);
          if (loc === undefined) break;
          if (loc instanceof Error) return this.#internal(loc.message);
          return textResponse(f.redirect.status, "", new HeaderList(["location", loc]));
        }
        case "invalid":
          return this.#internal(f.message);
      }
    }
    return undefined;
  }

  /** Applies response header modifiers to a response from the backend. */
  applyResponse(res: HttpResponse): void {
    for (const m of this.#response) m.apply(res.headers);
  }

  #internal(message: string): HttpResponse {
    return this.#grpc ? grpcErrorResponse(13, message) : textResponse(500, message);
  }
}

export const NO_FILTERS = new RouteFilters([], [], false);

/** Compiles an HTTPRoute rule's filters (outbound and inbound policy share these kinds). */
export function compileHttpFilters(fs: HttpRoute_Filter[], what: string): RouteFilters {
  const req: RequestFilter[] = [];
  const res: HeaderModifier[] = [];
  fs.forEach((f, i) => {
    const w = `${what} filter ${i}`;
    const k = f.kind;
    switch (k?.$case) {
      case "requestHeaderModifier":
        req.push({ kind: "headers", modifier: compileHeaderModifier(k.value, w) });
        break;
      case "responseHeaderModifier":
        res.push(compileHeaderModifier(k.value, w));
        break;
      case "redirect":
        req.push({ kind: "redirect", redirect: new Redirect(k.value, w) });
        break;
      case "failureInjector":
        req.push({ kind: "fail", failure: new HttpFailure(k.value, w) });
        break;
      default:
        req.push({ kind: "invalid", message: `${w}: unknown filter kind` });
    }
  });
  return new RouteFilters(req, res, false);
}

/** Compiles a GRPCRoute rule's filters. */
export function compileGrpcFilters(fs: GrpcRoute_Filter[], what: string): RouteFilters {
  const req: RequestFilter[] = [];
  fs.forEach((f, i) => {
    const w = `${what} filter ${i}`;
    const k = f.kind;
    if (k?.$case === "requestHeaderModifier") {
      req.push({ kind: "headers", modifier: compileHeaderModifier(k.value, w) });
    } else if (k?.$case === "failureInjector") {
      req.push({ kind: "fail", failure: new GrpcFailure(k.value, w) });
    } else {
      req.push({ kind: "invalid", message: `${w}: unknown filter kind` });
    }
  });
  return new RouteFilters(req, [], true);
}

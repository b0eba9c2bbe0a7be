/**
 * The parts of a request that route matching reads, computed once per request into a reused
 * object (routing is synchronous), so matching a table costs a few slices, not a parse per rule.
 */
import type { HeaderList, HttpRequest } from "../http/message.ts";

export class RequestParts {
  method = "";
  /** Path without the query. */
  path = "";
  /** Length of `path` once trailing slashes are trimmed (prefix matches compare segments). */
  trimmedPathLength = 0;
  /** Text after "?", or undefined. */
  query: string | undefined = undefined;
  /** Lower-cased host of the authority, without port. */
  host = "";
  headers!: HeaderList;
  #pairs: string[] | undefined = undefined;
  #grpcParsed = false;
  #grpcService: string | undefined = undefined;
  #grpcMethod: string | undefined = undefined;

  reset(req: HttpRequest): this {
    this.method = req.method;
    this.headers = req.headers;
    const full = req.path;
    const q = full.indexOf("?");
    if (q < 0) {
      this.path = full;
      this.query = undefined;
    } else {
      this.path = full.slice(0, q);
      this.query = full.slice(q + 1);
    }
    let end = this.path.length;
    while (end > 0 && this.path.charCodeAt(end - 1) === 47) end--;
    this.trimmedPathLength = end;
    this.host = hostOf(req.authority);
    this.#pairs = undefined;
    this.#grpcParsed = false;
    return this;
  }

  /** Query parameters decoded as application/x-www-form-urlencoded: [name0, value0, ...]. */
  get queryPairs(): string[] {
    if (this.#pairs === undefined) this.#pairs = this.query === undefined ? [] : parseQuery(this.query);
    return this.#pairs;
  }

  /** gRPC `/service/method` parts; undefined when the path is not of that form. */
  get grpcService(): string | undefined {
    if (!this.#grpcParsed) this.#parseGrpc();
    return this.#grpcService;
  }

  get grpcMethod(): string | undefined {
    if (!this.#grpcParsed) this.#parseGrpc();
    return this.#grpcMethod;
  }

  #parseGrpc(): void {
    this.#grpcParsed = true;
    this.#grpcService = this.#grpcMethod = undefined;
    const p = this.path;
    if (p.charCodeAt(0) !== 47) return;
    const s = p.indexOf("/", 1);
    if (s < 0) return;
    const e = p.indexOf("/", s + 1);
    this.#grpcService = p.slice(1, s);
    this.#grpcMethod = p.slice(s + 1, e < 0 ? p.length : e);
  }
}

/** The host of an authority (`host`, `host:port`, `[v6]:port`), lower-cased. */
export function hostOf(authority: string): string {
  let h = authority;
  if (h.charCodeAt(0) === 91) {
    const close = h.indexOf("]");
    h = close < 0 ? h : h.slice(1, close);
  } else {
    const colon = h.lastIndexOf(":");
    if (colon >= 0 && h.indexOf(":") === colon) h = h.slice(0, colon);
  }
  return h.toLowerCase();
}

function decode(s: string): string {
  const plus = s.includes("+") ? s.replaceAll("+", " ") : s;
  if (!plus.includes("%")) return plus;
  try {
    return decodeURIComponent(plus);
  } catch {
    return plus;
  }
}

function parseQuery(q: string): string[] {
  const out: string[] = [];
  for (const part of q.split("&")) {
    if (part.length === 0) continue;
    const eq = part.indexOf("=");
    if (eq < 0) out.push(decode(part), "");
    else out.push(decode(part.slice(0, eq)), decode(part.slice(eq + 1)));
  }
  return out;
}

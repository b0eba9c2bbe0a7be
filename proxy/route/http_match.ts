/**
 * HTTPRoute matching with Gateway API precedence, as Linkerd's proxy ranks matches
 * (`linkerd/http/route`): a route's hostnames first (exact beats wildcard, longer beats shorter),
 * then within the matching rules the best match by path (longer match wins; at equal length
 * exact > regex > prefix), then method, then number of header matches, then number of query
 * matches; ties go to the earlier route/rule/match (the control plane orders them by age).
 *
 * Each matcher yields a numeric score (-1 = no match) so ranking is one comparison per candidate.
 * Regexes are Rust regex syntax (proto/rust_regex.ts) and must match the whole value (path, header,
 * query) the way Linkerd checks it: the leftmost-first match spans the value.
 */
import type { HostMatch, HttpRouteMatch } from "../../proto/gen_messages/http_route.ts";
import { WholeValueRegex } from "../../proto/rust_regex.ts";
import { httpMethodName } from "./method.ts";
import { RouteConfigError } from "./meta.ts";
import type { RequestParts } from "./request_parts.ts";

/** Bits of a rule score below the host score (see `combine`). */
const RULE_SPACE = 2 ** 40;
const MAX_LEN = 2 ** 20 - 1;

export const PATH_EXACT = 2;
export const PATH_REGEX = 1;
export const PATH_PREFIX = 0;

export interface Matcher {
  /** -1 when the request does not match, else a rank (higher wins). */
  score(p: RequestParts): number;
  /** Length of the matched path prefix for prefix matches (redirect prefix rewrites), else -1. */
  readonly prefixLength: number;
}

/** Route score = host score above rule score. */
export function combine(hostScore: number, ruleScore: number): number {
  return hostScore * RULE_SPACE + ruleScore;
}

function ruleScore(
  pathLen: number,
  pathKind: number,
  method: boolean,
  headers: number,
  query: number,
): number {
  const path = Math.min(pathLen, MAX_LEN) * 4 + pathKind;
  return ((path * 2 + (method ? 1 : 0)) * 64 + Math.min(headers, 63)) * 64 + Math.min(query, 63);
}

/** Score of a rule without matches (Gateway API: a prefix match on "/"). */
export const DEFAULT_RULE_SCORE = ruleScore(1, PATH_PREFIX, false, 0, 0);

export const MATCH_ALL: Matcher = { score: () => DEFAULT_RULE_SCORE, prefixLength: 1 };

/**
 * The literal text every match of `source` starts with ("" when unknown), to skip the regex for
 * paths that cannot match. Conservative: no alternation, stops at the first metacharacter, and
 * drops a final character that a quantifier may repeat zero times.
 */
export function literalPrefix(source: string): string {
  if (source.includes("|")) return "";
  let i = 0;
  while (i < source.length && !"\\^$.|?*+()[]{}".includes(source[i])) i++;
  if (i < source.length && "?*{".includes(source[i]) && i > 0) i--;
  return source.slice(0, i);
}

/** A Rust-syntax regex tested against whole values, with an error naming the field. */
export function fullRegex(source: string, what: string): WholeValueRegex {
  try {
    return new WholeValueRegex(source);
  } catch (e) {
    throw new RouteConfigError(`${what}: invalid regex ${JSON.stringify(source)}: ${(e as Error).message}`);
  }
}

const latin1 = new TextDecoder("latin1");

/** Header-value bytes from the policy as a string the way HeaderList holds values (one char per byte). */
export function headerValue(bytes: Uint8Array): string {
  return latin1.decode(bytes);
}

export type HeaderTest = { name: string; exact: string | undefined; regex: WholeValueRegex | undefined };

export function compileHeaderMatch(
  h: { name: string; value?: { $case: "exact"; value: Uint8Array } | { $case: "regex"; value: string } },
  what: string,
): HeaderTest {
  const name = h.name.toLowerCase();
  if (!name) throw new RouteConfigError(`${what}: header match without a name`);
  const v = h.value;
  if (!v) throw new RouteConfigError(`${what}: header match on ${name} has no value`);
  return v.$case === "exact"
    ? { name, exact: headerValue(v.value), regex: undefined }
    : { name, exact: undefined, regex: fullRegex(v.value, `${what} header ${name}`) };
}

/** Header values a regex is tried on: Linkerd's proxy skips values that are not visible ASCII (or tab). */
const VISIBLE_ASCII = /^[\t\x20-\x7e]*$/;

/** True when some value of the header satisfies the test. */
export function headerMatches(t: HeaderTest, p: RequestParts): boolean {
  const raw = p.headers.raw;
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i] !== t.name) continue;
    const v = raw[i + 1];
    if (t.exact !== undefined ? v === t.exact : VISIBLE_ASCII.test(v) && t.regex!.test(v)) return true;
  }
  return false;
}

type QueryTest = { name: string; exact: string | undefined; regex: WholeValueRegex | undefined };

class HttpMatcher implements Matcher {
  readonly prefixLength: number;
  /** The prefix without trailing slashes ("/" stays "/"). */
  readonly #prefix: string;

  constructor(
    readonly method: string | undefined,
    readonly pathKind: number,
    readonly pathValue: string | undefined,
    readonly pathRegex: WholeValueRegex | undefined,
    readonly headers: HeaderTest[],
    readonly query: QueryTest[],
    /** Literal start of the path regex, checked before running it. */
    readonly regexLiteral = "",
  ) {
    this.prefixLength = pathKind === PATH_PREFIX ? (pathValue === undefined ? 1 : prefixLen(pathValue)) : -1;
    this.#prefix = pathKind === PATH_PREFIX && pathValue !== undefined && pathValue !== "/"
      ? pathValue.slice(0, this.prefixLength)
      : "/";
  }

  score(p: RequestParts): number {
    if (this.method !== undefined && p.method !== this.method) return -1;
    let len: number;
    if (this.pathValue === undefined && this.pathRegex === undefined) {
      len = 1;
    } else if (this.pathKind === PATH_EXACT) {
      if (p.path !== this.pathValue) return -1;
      len = p.path.length;
    } else if (this.pathKind === PATH_REGEX) {
      if (!p.path.startsWith(this.regexLiteral) || !this.pathRegex!.test(p.path)) return -1;
      len = p.path.length;
    } else {
      len = prefixMatch(this.#prefix, p);
      if (len < 0) return -1;
    }
    for (const h of this.headers) if (!headerMatches(h, p)) return -1;
    if (this.query.length > 0) {
      const pairs = p.queryPairs;
      for (const q of this.query) if (!queryMatches(q, pairs)) return -1;
    }
    return ruleScore(len, this.pathKind, this.method !== undefined, this.headers.length, this.query.length);
  }
}

function prefixLen(prefix: string): number {
  if (prefix === "/") return 1;
  let end = prefix.length;
  while (end > 0 && prefix.charCodeAt(end - 1) === 47) end--;
  return end;
}

/**
 * Segment-wise prefix match (trailing slashes ignored on both sides); the matched length or -1.
 * `prefix` is already trimmed of trailing slashes.
 */
function prefixMatch(prefix: string, p: RequestParts): number {
  if (prefix === "/") return 1;
  const n = prefix.length;
  if (n > p.trimmedPathLength) return -1;
  if (!p.path.startsWith(prefix)) return -1;
  if (n < p.trimmedPathLength && p.path.charCodeAt(n) !== 47) return -1;
  return n;
}

function queryMatches(q: QueryTest, pairs: string[]): boolean {
  for (let i = 0; i < pairs.length; i += 2) {
    if (pairs[i] !== q.name) continue;
    const v = pairs[i + 1];
    if (q.exact !== undefined ? v === q.exact : q.regex!.test(v)) return true;
  }
  return false;
}

export function compileHttpMatch(m: HttpRouteMatch, what: string): Matcher {
  let kind = PATH_PREFIX;
  let value: string | undefined;
  let regex: WholeValueRegex | undefined;
  let literal = "";
  const path = m.path?.kind;
  if (m.path && !path) throw new RouteConfigError(`${what}: path match has no kind`);
  if (path?.$case === "exact") {
    kind = PATH_EXACT;
    value = path.value;
  } else if (path?.$case === "prefix") {
    value = path.value;
  } else if (path?.$case === "regex") {
    kind = PATH_REGEX;
    regex = fullRegex(path.value, `${what} path`);
    literal = literalPrefix(path.value);
  }
  const headers = m.headers.map((h) => compileHeaderMatch(h, what));
  const query = m.queryParams.map((q): QueryTest => {
    if (!q.name) throw new RouteConfigError(`${what}: query parameter match without a name`);
    const v = q.value;
    if (!v) throw new RouteConfigError(`${what}: query parameter match on ${q.name} has no value`);
    return v.$case === "exact"
      ? { name: q.name, exact: v.value, regex: undefined }
      : { name: q.name, exact: undefined, regex: fullRegex(v.value, `${what} query ${q.name}`) };
  });
  const method = m.method ? httpMethodName(m.method, what) : undefined;
  return new HttpMatcher(method, kind, value, regex, headers, query, literal);
}

/** Hostname match of a route; `score` -1 = no match, else exact > wildcard, longer > shorter. */
export class HostMatcher {
  constructor(readonly exact: boolean, readonly value: string, readonly stripDot: boolean) {}

  score(host: string): number {
    let h = host;
    if (this.stripDot && h.charCodeAt(h.length - 1) === 46) h = h.slice(0, -1);
    if (this.exact) return h === this.value ? 1024 + Math.min(this.value.length, 1023) : -1;
    return h.length > this.value.length && h.endsWith(this.value)
      ? 1 + Math.min(this.value.length, 1022)
      : -1;
  }
}

export function compileHostMatch(h: HostMatch, what: string): HostMatcher {
  const m = h.match;
  if (!m) throw new RouteConfigError(`${what}: host match has no value`);
  if (m.$case === "exact") {
    const v = m.value.toLowerCase();
    return new HostMatcher(true, v, !v.endsWith("."));
  }
  const labels = m.value.reverseLabels;
  // reverse_labels ["com", "example"] is "*.example.com"; a leading "" means a trailing dot.
  const tail = "." + labels.slice().reverse().join(".").toLowerCase();
  return new HostMatcher(false, tail, labels[0] !== "");
}

/** Best host score of a route: 0 without hostnames (matches any), -1 when none matches. */
export function hostScore(hosts: HostMatcher[], host: string): number {
  if (hosts.length === 0) return 0;
  let best = -1;
  for (const h of hosts) {
    const s = h.score(host);
    if (s > best) best = s;
  }
  return best;
}

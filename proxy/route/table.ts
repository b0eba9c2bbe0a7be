/**
 * A compiled route table: routes (with hostnames) of rules (with matchers) of policies `P`.
 * `find(req)` returns a hit object built at compile time for the winning (rule, matcher), so a
 * lookup allocates nothing beyond the request's path/host slices.
 */
import type { HttpRequest } from "../http/message.ts";
import { combine, type HostMatcher, hostScore, type Matcher } from "./http_match.ts";
import { RequestParts } from "./request_parts.ts";

export interface RouteHit<P> {
  readonly policy: P;
  /** The matcher that won (for redirect prefix rewrites: `matcher.prefixLength`). */
  readonly matcher: Matcher;
}

export interface TableRoute<P> {
  hosts: HostMatcher[];
  rules: { matchers: Matcher[]; policy: P }[];
}

interface CompiledRule<P> {
  matchers: Matcher[];
  hits: RouteHit<P>[];
}

export class RouteTable<P> {
  readonly #routes: { hosts: HostMatcher[]; rules: CompiledRule<P>[] }[];
  readonly #parts = new RequestParts();

  /** `matchAll` is what an empty match list means (HTTP: prefix "/", gRPC: any call). */
  constructor(routes: TableRoute<P>[], matchAll: Matcher) {
    this.#routes = routes.map((r) => ({
      hosts: r.hosts,
      rules: r.rules.map((rule) => {
        const matchers = rule.matchers.length > 0 ? rule.matchers : [matchAll];
        return { matchers, hits: matchers.map((matcher) => ({ policy: rule.policy, matcher })) };
      }),
    }));
  }

  get size(): number {
    return this.#routes.length;
  }

  /** The best route for the request per Gateway API precedence, or undefined. */
  find(req: HttpRequest): RouteHit<P> | undefined {
    const p = this.#parts.reset(req);
    let best: RouteHit<P> | undefined;
    let bestScore = -1;
    for (const r of this.#routes) {
      const hs = hostScore(r.hosts, p.host);
      if (hs < 0) continue;
      for (const rule of r.rules) {
        const ms = rule.matchers;
        for (let i = 0; i < ms.length; i++) {
          const s = ms[i].score(p);
          if (s < 0) continue;
          const total = combine(hs, s);
          if (total > bestScore) {
            bestScore = total;
            best = rule.hits[i];
          }
        }
      }
    }
    return best;
  }
}

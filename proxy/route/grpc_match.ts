/**
 * GRPCRoute matching as Linkerd ranks it: only POST requests; `rpc.service` and `rpc.method`
 * compare exactly with the `/service/method` path (empty = any), and the score prefers more
 * characters of service, then of method, then more header matches.
 */
import type { GrpcRouteMatch } from "../../proto/gen_messages/grpc_route.ts";
import { compileHeaderMatch, headerMatches, type HeaderTest, type Matcher } from "./http_match.ts";
import type { RequestParts } from "./request_parts.ts";

const MAX = 4095;

class GrpcMatcher implements Matcher {
  readonly prefixLength = -1;

  constructor(
    readonly service: string | undefined,
    readonly method: string | undefined,
    readonly headers: HeaderTest[],
  ) {}

  score(p: RequestParts): number {
    if (p.method !== "POST") return -1;
    const service = p.grpcService;
    const method = p.grpcMethod;
    if (service === undefined || method === undefined) return -1;
    if (this.service !== undefined && service !== this.service) return -1;
    if (this.method !== undefined && method !== this.method) return -1;
    for (const h of this.headers) if (!headerMatches(h, p)) return -1;
    const s = this.service === undefined ? 0 : Math.min(this.service.length, MAX);
    const m = this.method === undefined ? 0 : Math.min(this.method.length, MAX);
    return ((s * 4096 + m) * 64) + Math.min(this.headers.length, 63);
  }
}

export function compileGrpcMatch(m: GrpcRouteMatch, what: string): Matcher {
  return new GrpcMatcher(
    m.rpc?.service || undefined,
    m.rpc?.method || undefined,
    m.headers.map((h) => compileHeaderMatch(h, what)),
  );
}

/** A gRPC rule without matches matches every gRPC call (any POST /service/method). */
export const GRPC_MATCH_ALL: Matcher = new GrpcMatcher(undefined, undefined, []);

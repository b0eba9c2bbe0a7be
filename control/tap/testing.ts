/** Tap events as a proxy sends them, for the unit tests of the session, the server and the CLI's printer. */
import { toTcpAddress } from "../../proto/ip.ts";
import { HttpMethod_Registered, TapDirection, type TapEvent } from "../../proto/tap_api.ts";
import type { Observe } from "./session.ts";
import type { PodLike } from "./targets.ts";

const dur = (us: number) => ({ seconds: BigInt(Math.floor(us / 1e6)), nanos: (us % 1e6) * 1000 });

export interface FakeRequest {
  stream: number;
  inbound?: boolean;
  status?: number;
  grpcStatus?: number;
  path?: string;
}

/** req / rsp / end of one request, as the proxy of the server (inbound) or of the client (outbound) reports it. */
export function requestEvents(r: FakeRequest): TapEvent[] {
  const id = { base: 7, stream: BigInt(r.stream) };
  const outbound = r.inbound === false;
  const labels = (l: Record<string, string>) => ({ labels: l });
  const meta = {
    source: toTcpAddress("10.0.0.1", 40000 + r.stream),
    destination: toTcpAddress("10.0.0.2", 8080),
    sourceMeta: labels(
      outbound
        ? { tls: "loopback" }
        : { tls: "true", client_id: "client.a.serviceaccount.identity.weft.cluster.local" },
    ),
    destinationMeta: labels(
      outbound
        ? {
          tls: "true",
          server_id: "server.a.serviceaccount.identity.weft.cluster.local",
          deployment: "server",
        }
        : { tls: "loopback" },
    ),
    proxyDirection: r.inbound === false ? TapDirection.OUTBOUND : TapDirection.INBOUND,
    routeMeta: undefined,
  };
  return [
    {
      ...meta,
      event: {
        $case: "http",
        value: {
          event: {
            $case: "requestInit",
            value: {
              id,
              method: { type: { $case: "registered", value: HttpMethod_Registered.GET } },
              scheme: { type: { $case: "registered", value: 0 } },
              authority: "server.a:8080",
              path: r.path ?? "/hello",
              headers: undefined,
            },
          },
        },
      },
    },
    {
      ...meta,
      event: {
        $case: "http",
        value: {
          event: {
            $case: "responseInit",
            value: { id, sinceRequestInit: dur(1500), httpStatus: r.status ?? 200, headers: undefined },
          },
        },
      },
    },
    {
      ...meta,
      event: {
        $case: "http",
        value: {
          event: {
            $case: "responseEnd",
            value: {
              id,
              sinceRequestInit: dur(1800),
              sinceResponseInit: dur(300),
              responseBytes: 12n,
              eos: r.grpcStatus !== undefined
                ? { end: { $case: "grpcStatusCode", value: r.grpcStatus } }
                : undefined,
              trailers: undefined,
            },
          },
        },
      },
    },
  ];
}

/**
 * An Observe whose pods each emit the given events (then stay open until aborted, as a proxy does
 * with no more traffic, unless `end` is set); records what each pod was asked and whether it was aborted.
 */
export function fakeObserve(
  events: Record<string, TapEvent[]>,
  opts: { end?: boolean; fail?: Record<string, string> } = {},
): Observe & { asked: Map<string, unknown>; aborted: Set<string> } {
  const asked = new Map<string, unknown>();
  const aborted = new Set<string>();
  const f = async function* (t: { name: string }, req: unknown, signal: AbortSignal) {
    asked.set(t.name, req);
    signal.addEventListener("abort", () => aborted.add(t.name), { once: true });
    if (opts.fail?.[t.name]) throw new Error(opts.fail[t.name]);
    for (const e of events[t.name] ?? []) {
      await new Promise((r) => setTimeout(r, 1));
      if (signal.aborted) return;
      yield e;
    }
    if (opts.end) return;
    await new Promise<void>((r) => signal.addEventListener("abort", () => r(), { once: true }));
  } as unknown as Observe & { asked: Map<string, unknown>; aborted: Set<string> };
  f.asked = asked;
  f.aborted = aborted;
  return f;
}

/** One running, meshed pod of deployment `a/web` (ReplicaSet web-1), as the pod informer holds it. */
export const ONE_MESHED_POD: PodLike[] = [{
  metadata: {
    name: "web-1-a",
    namespace: "a",
    labels: { "pod-template-hash": "1", "linkerd.io/control-plane-ns": "weft" },
    ownerReferences: [{ kind: "ReplicaSet", name: "web-1", controller: true }],
  },
  status: { phase: "Running", podIP: "10.0.0.9" },
}];

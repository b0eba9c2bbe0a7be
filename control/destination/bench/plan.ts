/**
 * What the benchmark's controller and client processes agree on: which stream watches which
 * service, the address of each endpoint and generation, and the messages they exchange (one JSON
 * object per line on the child's stdin and stdout).
 */

/** Services are packed into two octets and generations into the rest: the scheme's limits. */
export const MAX_SERVICES = 1024;
export const MAX_ENDPOINTS_PER_SERVICE = 254;
/** Generations are told apart modulo this; the controller keeps one change per service in flight. */
export const GEN_MODULO = 50;

export interface ClientPlan {
  /** One port per controller replica: each connection dials one of them (placeStream). */
  ports: number[];
  services: number;
  perService: number;
  /** Client processes, and which one this is: stream k belongs to placeStream(k).proc. */
  procs: number;
  index: number;
  /** HTTP/2 connections this process spreads its streams over. */
  channels: number;
}

export type ToClient =
  | { type: "init"; plan: ClientPlan }
  | { type: "open"; streams: number }
  | { type: "ping"; id: number }
  | { type: "verify"; gens: number[] }
  | { type: "close" };

export type FromClient =
  /** perReplica: this process's streams on each replica. */
  | { type: "opened"; streams: number; perReplica: number[] }
  | { type: "pong"; id: number; t: number }
  /**
   * [service, generation modulo GEN_MODULO, time the last of this process's streams of the service
   * on that replica got it, replica].
   */
  | { type: "got"; items: [number, number, number, number][] }
  | {
    type: "verified";
    streams: number;
    converged: number;
    /** Streams not holding the final endpoint set, by the replica serving them. */
    lostPerReplica: number[];
    resets: number;
    errors: string[];
    /** CPU µs this process used since the last ping (the churn and its drain). */
    cpuUs: number;
  }
  | { type: "error"; message: string };

/** The service stream k watches. */
export const serviceOf = (k: number, services: number) => k % services;

/**
 * Where stream k lives: on connection g (numbered over all client processes: process
 * floor(g / channels), its connection g % channels), and each connection dials one replica,
 * round-robin over the connections, as a Kubernetes Service spreads proxies' connections (one
 * replica per connection, every stream of the connection on it). The connection is a fixed hash
 * of k, so a service's streams (k ≡ s mod services) do not all land on one connection or replica,
 * as streams of one service come from many proxies. Except the first services × replicas streams:
 * round m of them goes to replica m, so that each replica has one stream of every service before
 * the rest open (the bench measures the index's memory there, per-stream memory after).
 */
export function placeStream(
  k: number,
  procs: number,
  channels: number,
  replicas: number,
  services: number,
): { proc: number; channel: number; replica: number } {
  const conns = procs * channels;
  let g = mix(k) % conns;
  if (k < services * replicas) {
    // Among the connections dialling replica m (g ≡ m mod replicas), one by the hash.
    const m = Math.floor(k / services);
    g = m + replicas * (mix(k) % (Math.floor((conns - 1 - m) / replicas) + 1));
  }
  const proc = Math.floor(g / channels);
  const channel = g % channels;
  return { proc, channel, replica: replicaOfConnection(proc, channel, channels, replicas) };
}

/** A fixed 32-bit integer hash (lowbias32), as an unsigned number. */
function mix(k: number): number {
  let x = k >>> 0;
  x ^= x >>> 16;
  x = Math.imul(x, 0x7feb352d);
  x ^= x >>> 15;
  x = Math.imul(x, 0x846ca68b);
  x ^= x >>> 16;
  return x >>> 0;
}

/** The replica connection `channel` of client process `proc` dials. */
export function replicaOfConnection(
  proc: number,
  channel: number,
  channels: number,
  replicas: number,
): number {
  return (proc * channels + channel) % replicas;
}

/** The address of endpoint i of service s; endpoint 0 moves with the service's generation. */
export function endpointIp(s: number, i: number, gen: number): string {
  const g = i === 0 ? gen % GEN_MODULO : 0;
  return `10.${g * 4 + (s >> 8)}.${s & 255}.${i + 1}`;
}

/** The generation (modulo GEN_MODULO) an endpoint-0 address carries, or undefined for others. */
export function generationOf(ip: string): number | undefined {
  const o = ip.split(".");
  if (o.length !== 4 || o[3] !== "1") return undefined;
  return Number(o[1]) >> 2;
}

export function expectedIps(s: number, perService: number, gen: number): Set<string> {
  const out = new Set<string>();
  for (let i = 0; i < perService; i++) out.add(endpointIp(s, i, gen));
  return out;
}

/** Current wall time in ms with sub-ms precision; offsets between processes are calibrated. */
export const now = () => performance.timeOrigin + performance.now();

/** JSON lines from a byte stream (a child's stdout, or stdin in the child). */
export async function* jsonLines<T>(stream: ReadableStream<Uint8Array>): AsyncGenerator<T> {
  const dec = new TextDecoder();
  let buf = "";
  for await (const chunk of stream) {
    buf += dec.decode(chunk, { stream: true });
    let nl;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line.trim()) yield JSON.parse(line) as T;
    }
  }
}

/** Messages to a controller replica process (replica.ts). */
export type ToReplica =
  | { type: "load"; services: number; perService: number }
  | { type: "heap" }
  | { type: "churn" }
  /** Apply generation `gen` of service `s`'s EndpointSlice to this replica's watch. */
  | { type: "apply"; s: number; gen: number }
  | { type: "stop" }
  | { type: "close" };

export type FromReplica =
  /** Heap after GC before and after the cluster state was loaded (the caches). */
  /** sourceBytes: the fake API server's own heap for the same objects (not the controller's). */
  | { type: "loaded"; port: number; heapEmpty: number; heapLoaded: number; sourceBytes: number }
  | { type: "heap"; heap: number; rss: number }
  | { type: "churning" }
  /** CPU µs since "churn", and the 5 ms timer's lateness p99 (event-loop lag). */
  | { type: "stopped"; cpuUs: number; loopLagP99: number }
  | { type: "error"; message: string };

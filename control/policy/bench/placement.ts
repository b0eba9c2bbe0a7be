/**
 * Where the benchmark's streams go: each client process spreads its streams over its connections
 * (one per STREAMS_PER_CONNECTION, round-robin), and with several controller replicas each
 * connection dials one replica, round-robin over all client connections in order, as a Kubernetes
 * Service spreads proxies' connections (a stream lives on its connection's replica).
 */

export const STREAMS_PER_CONNECTION = 250;

/** Connections a client process opens for `streams` streams. */
export const connectionsFor = (streams: number) => Math.max(1, Math.ceil(streams / STREAMS_PER_CONNECTION));

/** The replica connection `connection` (numbered over all client processes) dials. */
export const replicaOfConnection = (connection: number, replicas: number) => connection % replicas;

/**
 * For client processes holding `counts[k]` streams each: the number of the first connection of
 * each process, and the replica of each process's j-th stream.
 */
export function placement(
  counts: number[],
  replicas: number,
): { firstConnection: number[]; replicaOf: number[][] } {
  const firstConnection: number[] = [];
  let next = 0;
  const replicaOf = counts.map((n, k) => {
    firstConnection[k] = next;
    const conns = connectionsFor(n);
    next += conns;
    return Array.from(
      { length: n },
      (_, j) => replicaOfConnection(firstConnection[k] + (j % conns), replicas),
    );
  });
  return { firstConnection, replicaOf };
}

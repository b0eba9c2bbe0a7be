/**
 * A gRPC session with the destination pod's controllers, as a proxy in that pod would hold it:
 * the proxy's own channel and client (plaintext h2c to a loopback controller), reached through a
 * port-forward into the destination pod so the pod's proxy is not in the way.
 */
import type { KubeConfig } from "@kubernetes/client-node";
import { controlChannel } from "../../proxy/discovery/control_client.ts";
import { CertStore } from "../../proxy/core/cert_store.ts";
import type { GrpcClient, Method } from "../../proxy/grpc/client.ts";
import { type GrpcStatus, Status, statusName } from "../../proxy/grpc/status.ts";
import { withPortForward } from "./port_forward.ts";
import { type KubeReader, labelSelector, pickReadyPod } from "./resource.ts";

export const DESTINATION_COMPONENT = "destination";

/** The ready destination pod of the control plane in `controlPlaneNs`. */
export async function destinationPod(k: KubeReader, controlPlaneNs: string): Promise<string> {
  const pods = await k.pods(
    controlPlaneNs,
    labelSelector({ "linkerd.io/control-plane-component": DESTINATION_COMPONENT }),
  );
  return pickReadyPod(pods, `the control plane's destination in "${controlPlaneNs}"`).metadata!.name!;
}

export interface ControllerTarget {
  kc: KubeConfig;
  namespace: string;
  pod: string;
  port: number;
}

/** Runs `f` with a client of the controller on `port` of the destination pod. */
export async function withController<T>(t: ControllerTarget, f: (c: GrpcClient) => Promise<T>): Promise<T> {
  return await withPortForward(t.kc, { namespace: t.namespace, pod: t.pod, port: t.port }, async (local) => {
    const { channel, client } = controlChannel(
      { addr: { host: "127.0.0.1", port: local }, name: undefined, plaintext: true },
      new CertStore(),
      // One attempt per call: a CLI reports the failure instead of retrying as a proxy would.
      { minMs: 1000, maxMs: 1000, jitter: 0 },
    );
    try {
      return await f(client);
    } finally {
      await channel.close();
    }
  });
}

export interface Snapshot<Res> {
  /** Every message received before the stream settled. */
  messages: Res[];
  /** Set when the server ended the stream. */
  status?: GrpcStatus;
}

export interface SnapshotOptions {
  /** Quiet time after the last message before the answer is taken as complete. */
  settleMs: number;
  /** Bound on the whole call. */
  timeoutMs: number;
  signal?: AbortSignal;
}

/**
 * Opens a watch as the proxy does and returns what it received once the stream settles: the
 * first message and any that follow it within `settleMs` (Destination.Get may split a set).
 * A stream that ends with an error status, or sends nothing before the timeout, is an error.
 */
export async function snapshot<Req, Res>(
  client: GrpcClient,
  m: Method<Req, Res>,
  req: Req,
  o: SnapshotOptions,
): Promise<Snapshot<Res>> {
  const messages: Res[] = [];
  const stop = new AbortController();
  let settle: ReturnType<typeof setTimeout> | undefined;
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    stop.abort();
  }, o.timeoutMs);
  const signal = o.signal ? AbortSignal.any([o.signal, stop.signal]) : stop.signal;
  try {
    const status = await client.serverStream(m, req, (msg) => {
      messages.push(msg);
      clearTimeout(settle);
      settle = setTimeout(() => stop.abort(), o.settleMs);
    }, { signal });
    if (status.code === Status.CANCELLED && stop.signal.aborted) {
      if (messages.length > 0) return { messages };
      if (timedOut) throw new Error(`${m.path}: no answer within ${o.timeoutMs} ms`);
    }
    if (status.code !== Status.OK) {
      throw new Error(`${m.path} failed: ${statusName(status.code)}: ${status.details}`);
    }
    return { messages, status };
  } finally {
    clearTimeout(timer);
    clearTimeout(settle);
  }
}

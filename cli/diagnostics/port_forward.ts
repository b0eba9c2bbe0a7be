/**
 * A local TCP port that reaches a port inside a pod through the API server's port-forward
 * (the route Linkerd's CLI takes: it lands on the pod's loopback, so neither the pod's proxy nor
 * the network between nodes is in the way, and the admin server treats the caller as local).
 * Each accepted connection opens its own port-forward stream (WebSocket, v4.channel.k8s.io).
 */
import * as net from "node:net";
import { Writable } from "node:stream";
import { type KubeConfig, PortForward } from "@kubernetes/client-node";

export interface Forward {
  /** The local port on 127.0.0.1. */
  readonly port: number;
  /** What the API server or kubelet reported for failed streams (empty when all went well). */
  readonly errors: readonly string[];
  close(): Promise<void>;
}

interface Closable {
  close(): void;
  on?(event: "close", f: () => void): void;
}

export interface ForwardTarget {
  namespace: string;
  pod: string;
  port: number;
  /** The local port to listen on (default: one the kernel picks). */
  localPort?: number;
}

export async function portForward(kc: KubeConfig, t: ForwardTarget): Promise<Forward> {
  const pf = new PortForward(kc);
  const errors: string[] = [];
  const open = new Set<Closable>();
  const sockets = new Set<net.Socket>();
  const where = `${t.namespace}/${t.pod}:${t.port}`;
  const server = net.createServer((sock) => {
    sockets.add(sock);
    sock.on("close", () => sockets.delete(sock));
    sock.on("error", () => sock.destroy());
    // The kubelet reports a refused or failed dial on the error stream, as text.
    const err = new Writable({
      write(chunk, _enc, done) {
        // The stream's first frame is only its port number (stripped to nothing).
        const text = String(chunk).trim();
        if (text) {
          errors.push(`port-forward to ${where}: ${text}`);
          sock.destroy();
        }
        done();
      },
    });
    pf.portForward(t.namespace, t.pod, [t.port], sock, err, sock).then((ws) => {
      const c = (typeof ws === "function" ? ws() : ws) as Closable | null;
      if (!c) return;
      open.add(c);
      c.on?.("close", () => {
        open.delete(c);
        sock.destroy();
      });
      if (sock.destroyed) c.close();
    }, (e) => {
      errors.push(`port-forward to ${where}: ${(e as Error)?.message ?? e}`);
      sock.destroy();
    });
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.once("error", reject);
    server.listen(t.localPort ?? 0, "127.0.0.1", () => resolve((server.address() as net.AddressInfo).port));
  });
  return {
    port,
    errors,
    close: () =>
      new Promise<void>((resolve) => {
        for (const c of open) c.close();
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Runs `f` with a forward open, closing it afterwards; a failure names what the forward reported. */
export async function withPortForward<T>(
  kc: KubeConfig,
  t: ForwardTarget,
  f: (port: number) => Promise<T>,
): Promise<T> {
  const fwd = await portForward(kc, t);
  try {
    return await f(fwd.port);
  } catch (e) {
    if (fwd.errors.length === 0) throw e;
    throw new Error(`${(e as Error)?.message ?? e} (${[...new Set(fwd.errors)].join("; ")})`);
  } finally {
    await fwd.close();
  }
}

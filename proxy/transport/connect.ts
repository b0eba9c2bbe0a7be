/** Plain TCP connect with a timeout. */
import * as net from "node:net";

export class ConnectError extends Error {
  override name = "ConnectError";
  constructor(message: string, readonly code: string | undefined) {
    super(message);
  }
}

export function connectTcp(host: string, port: number, timeoutMs: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ host, port, noDelay: true, allowHalfOpen: true });
    const timer = setTimeout(() => {
      s.destroy();
      reject(new ConnectError(`connect to ${host}:${port} timed out after ${timeoutMs}ms`, "ETIMEDOUT"));
    }, timeoutMs);
    s.once("connect", () => {
      clearTimeout(timer);
      s.removeAllListeners("error");
      resolve(s);
    });
    s.once("error", (e: Error & { code?: string }) => {
      clearTimeout(timer);
      reject(new ConnectError(`connect to ${host}:${port} failed: ${e.message}`, e.code));
    });
  });
}

/** Plain TCP connect with a timeout. */
import * as net from "node:net";

export class ConnectError extends Error {
  override name = "ConnectError";
  constructor(message: string, readonly code: string | undefined) {
    super(message);
  }
}

// A timer firing this far past its deadline means the event loop was stalled (sync work, GC, a loaded
// host). In Deno, expired timers run before the I/O completions that piled up meanwhile, so a connect
// that finished during the stall is still queued behind the timer: it must not count as timed out.
const STALL_MS = 10;

export function connectTcp(host: string, port: number, timeoutMs: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ host, port, noDelay: true, allowHalfOpen: true });
    const deadline = performance.now() + timeoutMs;
    let graced = false;
    const expire = () => {
      const late = performance.now() - deadline;
      if (!graced && late > STALL_MS) {
        // One grace so queued completions get delivered (setImmediate is not enough: it runs before
        // I/O is polled). A longer stall leaves more backlog to drain, so the grace is a quarter of
        // the lateness; at most half the timeout, so an unanswered SYN still fails soon after.
        graced = true;
        timer = setTimeout(expire, Math.min(Math.max(late / 4, 5), timeoutMs / 2));
        return;
      }
      s.destroy();
      reject(new ConnectError(`connect to ${host}:${port} timed out after ${timeoutMs}ms`, "ETIMEDOUT"));
    };
    let timer = setTimeout(expire, timeoutMs);
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

/** Waiting on a promise that cannot itself be cancelled (a TLS connect, the first certificate). */

/** `p`, or `signal`'s reason once it aborts; a value that arrives after that is disposed of. */
export function untilAborted<T>(p: Promise<T>, signal: AbortSignal, dispose?: (v: T) => void): Promise<T> {
  if (signal.aborted) {
    p.then((v) => dispose?.(v), () => {});
    return Promise.reject(signal.reason);
  }
  return new Promise((resolve, reject) => {
    let done = false;
    const onAbort = () => {
      done = true;
      reject(signal.reason);
    };
    signal.addEventListener("abort", onAbort, { once: true });
    p.then((v) => {
      signal.removeEventListener("abort", onAbort);
      if (done) dispose?.(v);
      else resolve(v);
    }, (e) => {
      signal.removeEventListener("abort", onAbort);
      if (!done) reject(e);
    });
  });
}

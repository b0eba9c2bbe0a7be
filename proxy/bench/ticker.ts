/**
 * Worker for the open-loop load generator: wakes at each request's scheduled time and tells the
 * main thread how many requests are due. `Atomics.wait` sleeps with sub-millisecond precision
 * without spinning (setTimeout on the main thread is ~1 ms late at the median, which would hide
 * the differences the benchmark measures). Message in: {start, rate, count} (start on the
 * performance.timeOrigin + now() time line); messages out: the number of requests due so far.
 */
/// <reference lib="deno.worker" />

self.onmessage = (e: MessageEvent<{ start: number; rate: number; count: number }>) => {
  const { start, rate, count } = e.data;
  const cell = new Int32Array(new SharedArrayBuffer(4));
  const interval = 1000 / rate;
  let due = 0;
  while (due < count) {
    const now = performance.timeOrigin + performance.now();
    const wait = start + due * interval - now;
    if (wait > 0.02) Atomics.wait(cell, 0, 0, wait);
    const t = performance.timeOrigin + performance.now();
    let k = due;
    while (k < count && start + k * interval <= t) k++;
    if (k > due) {
      due = k;
      self.postMessage(due);
    }
  }
  self.close();
};

/**
 * Runs `flood` in a Worker, so the flooder's own client work does not share the event loop of the
 * identity server under test (as a real flooding pod would not). Protocol: post FloodOptions to
 * start; the worker answers "started" once its calls go out; post "stop" to end; the worker
 * answers with the FloodResult.
 */
/// <reference lib="deno.worker" />
import { flood, type FloodOptions } from "./certify_flood.ts";

const stop = new AbortController();
self.onmessage = async (e: MessageEvent<FloodOptions | "stop">) => {
  if (e.data === "stop") {
    stop.abort();
    return;
  }
  const result = await flood(e.data, stop.signal, () => self.postMessage("started"));
  self.postMessage(result);
};

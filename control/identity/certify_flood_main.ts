/**
 * Runs `flood` as its own process (the bench starts it under `nice`, standing in for a flooder on
 * another node whose CPU is not the controller's):
 *
 *   deno run -A control/identity/certify_flood_main.ts '{"port":N,"concurrency":64,"connections":8,"maxCalls":N}'
 *
 * Prints `started` once its calls go out, stops when stdin closes, then prints the FloodResult as
 * one JSON line.
 */
import { flood, type FloodOptions } from "./certify_flood.ts";

const opts = JSON.parse(Deno.args[0] ?? "") as FloodOptions;
const stop = new AbortController();
const enc = new TextEncoder();
(async () => {
  for await (const _ of Deno.stdin.readable) { /* wait for the parent to close stdin */ }
  stop.abort();
})();
const result = await flood(opts, stop.signal, () => Deno.stdout.writeSync(enc.encode("started\n")));
Deno.stdout.writeSync(enc.encode(JSON.stringify(result) + "\n"));
Deno.exit(0);

/**
 * What loading the proxy's module graph costs: imports proxy/run.ts and the identity client
 * (proxy/identity/mod.ts), what proxy/main.ts loads before it reads the environment, and prints this
 * process's anonymous memory and the V8 heap used. Run it several times (a fresh process each) and
 * take the median:
 *
 *   for i in 1 2 3; do deno run -A --v8-flags=--expose-gc proxy/bench/import_memory.ts; done
 */
await import("../run.ts");
await import("../identity/mod.ts");
// Settle what start-up allocated so heapUsed is the live graph, not garbage.
(globalThis as { gc?: () => void }).gc?.();
const status = await Deno.readTextFile("/proc/self/status");
const kib = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN);
const mib = (n: number) => (n / 1024).toFixed(1);
console.log(
  `RssAnon ${mib(kib("RssAnon"))} MiB  VmRSS ${mib(kib("VmRSS"))} MiB  heapUsed ${
    mib(Deno.memoryUsage().heapUsed / 1024)
  } MiB`,
);

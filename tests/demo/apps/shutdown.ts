/**
 * SIGTERM handling shared by the demo apps: keep serving for DRAIN_MS (default 3000) first — the pod's
 * endpoint leaves the clients' load balancers only after the EndpointSlice update has reached the
 * control plane and every client proxy, and a server that stops accepting at once refuses what they
 * still send it (a rolling restart then fails requests: issue 19's data-plane roll saw it) — then stop
 * accepting, let in-flight work finish, and exit even if something hangs, so a rollout never waits out
 * the whole termination grace period (the demo's is 10 s: drain 3 s + at most 5 s).
 */
export function onTerm(stop: () => void | Promise<void>, graceMs = 5000): void {
  const drainMs = Number(Deno.env.get("DRAIN_MS") ?? "3000");
  const handler = () => {
    console.log(`SIGTERM: serving ${drainMs} ms more, then draining`);
    setTimeout(() => {
      setTimeout(() => Deno.exit(0), graceMs);
      Promise.resolve(stop()).finally(() => Deno.exit(0));
    }, drainMs);
  };
  Deno.addSignalListener("SIGTERM", handler);
}

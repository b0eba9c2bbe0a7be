/**
 * SIGTERM handling shared by the demo apps: stop accepting, let in-flight work finish, and exit even if
 * something hangs, so a rollout never waits out the whole termination grace period.
 */
export function onTerm(stop: () => void | Promise<void>, graceMs = 5000): void {
  const handler = () => {
    console.log("SIGTERM: draining");
    setTimeout(() => Deno.exit(0), graceMs);
    Promise.resolve(stop()).finally(() => Deno.exit(0));
  };
  Deno.addSignalListener("SIGTERM", handler);
}

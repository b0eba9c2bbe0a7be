/**
 * Entry point of every control-plane container: `deno run -A control/main.ts <component>`.
 * Each component's own `main.ts` reads its environment, builds a resolved config and runs.
 */
const COMPONENTS = [
  "destination",
  "policy",
  "identity",
  "injector",
  "validator",
  "scrape_targets",
  "tap",
  "dashboard",
  "service_mirror",
] as const;
/** Components whose code lives in a directory of another name. */
const DIRS: Readonly<Record<string, string>> = { service_mirror: "multicluster" };

const component = Deno.args[0];
if (!component || !(COMPONENTS as readonly string[]).includes(component)) {
  console.error(
    `usage: control/main.ts <${COMPONENTS.join("|")}> [flags]; got ${JSON.stringify(component ?? "")}`,
  );
  Deno.exit(2);
}
const mod = await import(`./${DIRS[component] ?? component}/main.ts`);
await mod.main(Deno.args.slice(1));

/**
 * `weft check | deploy | undeploy | inject`: the existing tools (manifests/main.ts and the injector's
 * offline CLI) reached from the one `weft` command; their flags and output are unchanged.
 */
import { runCli as runInject } from "../control/injector/cli.ts";
import { CLI_USAGE as INJECT_USAGE } from "../control/injector/flags.ts";
import { main as manifestsMain, USAGE as MANIFESTS_USAGE } from "../manifests/main.ts";
import type { CliContext, Command } from "./context.ts";

const wantsHelp = (args: string[]) => args.includes("--help") || args.includes("-h");

/** The tools' own usage text for `--help`, which their parsers would refuse as an unknown flag. */
function withHelp(usage: string, run: (args: string[], ctx: CliContext) => Promise<number>) {
  return async (args: string[], ctx: CliContext) => {
    if (!wantsHelp(args)) return await run(args, ctx);
    await ctx.out(usage + "\n");
    return 0;
  };
}

export const lifecycleCommands: readonly Command[] = [
  {
    name: "check",
    aliases: ["mesh:check"],
    summary: "health of the control plane, webhooks, certificates and proxies (deno task mesh:check)",
    run: withHelp(MANIFESTS_USAGE, (args) => manifestsMain(["check", ...args])),
  },
  {
    name: "deploy",
    summary: "build and load the image, install or upgrade the control plane (deno task deploy)",
    run: withHelp(MANIFESTS_USAGE, (args) => manifestsMain(["deploy", ...args])),
  },
  {
    name: "undeploy",
    summary: "remove the control plane, webhooks, cluster RBAC and CRDs (deno task undeploy)",
    run: withHelp(MANIFESTS_USAGE, (args) => manifestsMain(["undeploy", ...args])),
  },
  {
    name: "render",
    summary: "print the rendered control plane as YAML (Secrets redacted)",
    run: withHelp(MANIFESTS_USAGE, (args) => manifestsMain(["render", ...args])),
  },
  {
    name: "inject",
    summary: "inject the proxy into Kubernetes YAML offline: weft inject FILE|- (deno task inject)",
    run: withHelp(INJECT_USAGE, (args, ctx) =>
      runInject(args, ctx.env, {
        readInput: (path) => path === "-" ? ctx.readStdin() : ctx.readFile(path),
        stdout: (t) => ctx.out(t),
        stderr: (l) => ctx.err(l),
      })),
  },
];
